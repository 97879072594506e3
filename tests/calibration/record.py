"""Rows in the reference-data schema (../shared/reference/groundtruth-public.jsonl) and the JSON
Lines writer.

One row per metric: each workload gives three rows, `<id>-alloc`, `<id>-reserved` and
`<id>-process`, because the planner compares like with like (DESIGN.md "Reference data"):
`peak.tensors_bytes` against max_memory_allocated, `peak.reserved_bytes` against
max_memory_reserved, `peak.process_bytes` against what NVML/nvidia-smi shows for the process.
Every row's `extras.metrics_gib` also holds all three, plus the per-phase peaks, so one row is
enough to see the whole measurement.
"""

import datetime
import json
import os
import platform

import plan
from workload import LlmModel

SCHEMA_KEYS = ("id", "source", "workload", "model", "arch", "dtype", "quant", "batch", "seq", "mode",
               "extras", "measured_gib", "metric", "notes")

# (id suffix, key in the measurement, metric text, planner field it is compared with)
GPU_METRICS = (
    ("alloc", "max_allocated", "torch.cuda.max_memory_allocated()/1024^3", "peak.tensors_bytes"),
    ("reserved", "max_reserved", "torch.cuda.max_memory_reserved()/1024^3", "peak.reserved_bytes"),
    ("process", "process", "NVML used GPU memory of this process, peak of 5 ms samples, /1024^3",
     "peak.process_bytes"),
)
# The dry runs measure the CPU, or nothing: the same rows and writer, with metrics that say so.
CPU_METRICS = (
    ("alloc", "max_allocated", "dry-run (CPU): bytes of the parameters, gradients and optimizer states "
     "live after each phase, max /1024^3 (not a GPU measurement)", "none"),
    ("reserved", "max_reserved", "dry-run (CPU): same as alloc (no caching allocator) /1024^3", "none"),
    ("process", "process", "dry-run (CPU): resident set size of the workload's process /1024^3", "none"),
)
PURE_METRICS = tuple(
    (suffix, key, "dry-run (no torch): planned weight bytes of the full-size model /1024^3 (not a measurement)", "none")
    for suffix, key, _, _ in GPU_METRICS
)
METRICS = {"gpu": GPU_METRICS, "torch-cpu": CPU_METRICS, "pure": PURE_METRICS}

SOURCE = "vram-doctor tests/calibration/harness.py (weights random, built from config; no downloads)"


def slug(text):
    out = "".join(c.lower() if c.isalnum() else "-" for c in text)
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")


def base_fields(w):
    """The fields that describe the workload, shared by its rows."""
    r = w.run
    if isinstance(w.model, LlmModel):
        arch, seq = plan.llm_arch(w.model), r.seq
        dtype = r.weights if r.weights in plan.DTYPE_BYTES else "bf16"
    else:
        arch, seq = plan.diffusion_arch(w.model), f"{r.width}x{r.height}"
        dtype = r.weights
    quant = {"int8": "bnb-int8 (LLM.int8)", "nf4": "bnb-nf4 (double quant, bf16 compute)"}.get(r.weights)
    return {
        "workload": plan.workload_kind(r), "model": w.model.name, "arch": arch, "dtype": dtype,
        "quant": quant, "batch": r.batch, "seq": seq, "mode": plan.describe_mode(r),
    }


def rows_for(w, result, env, gpu_slug, mode, rel_path):
    """Three rows (one per metric) for a workload that ran, or one error row if it failed."""
    dry_run = mode != "gpu"
    fields = base_fields(w)
    extras = {
        "workload_file": rel_path, "run": w.resolved_run, "env": env, "phases_gib": result.get("phases_gib", {}),
        "metrics_gib": {k: plan.gib(result.get(k)) for k in ("max_allocated", "max_reserved", "process")},
        "metrics_bytes": {k: result.get(k) for k in ("max_allocated", "max_reserved", "process")},
        "wall_s": result.get("wall_s"), "checks": result.get("checks", []),
        "substitutions": result.get("substitutions", []), "dry_run": dry_run,
    }
    extras.update(result.get("extras", {}))
    prefix = "dry" if dry_run else "cal"
    base_id = f"{prefix}-{gpu_slug}-{slug(w.stem)}"
    notes = result.get("notes", "")
    if result.get("error"):
        extras["error"] = result["error"]
        return [dict(id=f"{base_id}-error", source=SOURCE, **fields, extras=extras, measured_gib=None,
                     metric="error: the workload did not complete", notes=notes)]
    rows = []
    for suffix, key, metric, compare in METRICS[mode]:
        row = dict(id=f"{base_id}-{suffix}", source=SOURCE, **fields,
                   extras=dict(extras, compare_with=compare), measured_gib=plan.gib(result.get(key)),
                   metric=metric, notes=notes)
        rows.append({k: row[k] for k in SCHEMA_KEYS})
    return rows


def validate_row(row):
    """Problems with one row against the reference schema; empty when it conforms."""
    problems = []
    if not isinstance(row, dict):
        return ["row is not a JSON object"]
    if tuple(row) != SCHEMA_KEYS:
        problems.append(f"keys {list(row)} differ from {list(SCHEMA_KEYS)}")
    for key in ("id", "source", "workload", "model", "mode", "metric"):
        if not isinstance(row.get(key), str) or not row.get(key):
            problems.append(f"{key} must be a non-empty string")
    if not isinstance(row.get("extras"), dict):
        problems.append("extras must be an object")
    measured = row.get("measured_gib")
    is_error = str(row.get("id", "")).endswith("-error")
    if is_error:
        if measured is not None:
            problems.append("an error row has measured_gib null")
    elif not (plan.is_finite_number(measured) and measured >= 0):
        problems.append(f"measured_gib {measured!r} must be a number >= 0")
    return problems


class JsonlWriter:
    """Appends rows to `<out>.partial` as they come (a run cut short keeps what it measured) and
    renames it to `<out>` when the run ends."""

    def __init__(self, out):
        self.out = out
        self.partial = out + ".partial"
        d = os.path.dirname(os.path.abspath(out))
        os.makedirs(d, exist_ok=True)
        self.f = open(self.partial, "w", encoding="utf-8")
        self.count = 0

    def write(self, row):
        problems = validate_row(row)
        if problems:
            raise ValueError(f"row {row.get('id')}: {'; '.join(problems)}")
        self.f.write(json.dumps(row, sort_keys=False, allow_nan=False) + "\n")
        self.f.flush()
        self.count += 1

    def close(self):
        self.f.close()
        os.replace(self.partial, self.out)


def environment(torch_mod=None, device="cpu"):
    """GPU, driver and library versions; what is missing says so instead of failing."""
    env = {
        "python": platform.python_version(), "platform": platform.platform(terse=True),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": device,
    }
    for name in ("torch", "transformers", "diffusers", "peft", "bitsandbytes", "accelerate"):
        env[name] = _version(name)
    if torch_mod is not None and device == "cuda":
        env["cuda"] = torch_mod.version.cuda
        env["gpu"] = torch_mod.cuda.get_device_name(0)
        env["gpu_total_gib"] = plan.gib(torch_mod.cuda.get_device_properties(0).total_memory)
        env["cudnn"] = torch_mod.backends.cudnn.version()
        env["lazy_loading"] = os.environ.get("CUDA_MODULE_LOADING", "(default)")
        try:
            import pynvml
            pynvml.nvmlInit()
            env["driver"] = _text(pynvml.nvmlSystemGetDriverVersion())
            env["nvml"] = _version("nvidia-ml-py")
        except Exception as e:  # NVML absent: the process metric is then missing, not wrong
            env["driver"] = f"unavailable ({type(e).__name__})"
    return env


def _text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def _version(dist):
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
