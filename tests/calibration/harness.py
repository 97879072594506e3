#!/usr/bin/env python3
"""VRAM Doctor calibration harness: measures the GPU memory of workload files.

    python3 tests/calibration/harness.py tests/calibration/grid --out tests/data/measured-h200.jsonl
    python3 tests/calibration/harness.py --dry-run tests/calibration/grid --out /tmp/dry.jsonl

Each workload file (the planner's TOML format) is built with random weights from its config, its
step is run, and the peaks are written as JSON Lines in the reference-data schema (record.py).
On a GPU each workload runs in a child process forked before CUDA starts, so every measurement
begins from an empty allocator and its own CUDA context. `--dry-run` runs everything on the CPU at
reduced size and checks shapes and bookkeeping; without torch it still checks the grid, the plan,
the rows and the writer (pure-Python mode). The last line of stdout is a JSON summary.
"""

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import plan  # noqa: E402
import record  # noqa: E402
import workload  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
GRID_BUDGET_S = 480  # the whole grid in under 8 minutes on one large GPU (issue 9)
CHILD_TIMEOUT_S = 300


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", help="workload .toml files or directories of them")
    p.add_argument("--out", required=True, help="JSON Lines file to write (written as OUT.partial until done)")
    p.add_argument("--dry-run", action="store_true", help="CPU, reduced sizes, shape and bookkeeping checks")
    p.add_argument("--require-torch", action="store_true", help="fail instead of falling back to pure-Python mode")
    p.add_argument("--gpu-name", default=None, help="short GPU name for row ids (default: from the device)")
    p.add_argument("--workdir", default=None, help="where random checkpoints for quantized loads are cached")
    p.add_argument("--only", default=None, help="run only files whose name contains this text")
    p.add_argument("--start-method", choices=("fork", "spawn"), default="fork",
                   help="how each workload's child starts (spawn: slower, for a parent that started CUDA)")
    p.add_argument("--vram-doctor", default=os.environ.get("VRAM_DOCTOR_BIN"), metavar="PATH",
                   help="the planner's binary that resolves each workload file (default: $VRAM_DOCTOR_BIN)")
    p.add_argument("--deadline-s", type=float, default=None,
                   help="start no workload after this many seconds (the rest get error rows)")
    return p.parse_args(argv)


def torch_available():
    import importlib.util
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))


def pure_result(w, passed):
    """Pure-Python dry run: the plan's numbers stand in for measurements, labelled as such."""
    res = {"checks": passed, "substitutions": ["no torch: planned bytes, nothing built"], "extras": {}}
    if isinstance(w.model, workload.LlmModel):
        params = plan.llm_params(w.model.model_type, w.model.config)
    else:
        params = sum(w.model.published_params.values())
    nbytes = params * plan.DTYPE_BYTES.get(w.run.weights, 2)
    res.update(max_allocated=nbytes, max_reserved=nbytes, process=nbytes, wall_s=0.0)
    return res


def _child(conn, w, workdir, device, dry_run):
    import steps
    try:
        conn.send(steps.run_one(w, device, workdir, dry_run=dry_run))
    finally:
        conn.close()


def run_isolated(w, workdir, device, dry_run, start_method="fork"):
    """One workload in a forked child: a fresh CUDA context, allocator and NVML view on a GPU;
    on the CPU the same path, so the dry run exercises it."""
    ctx = multiprocessing.get_context(start_method)
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, w, workdir, device, dry_run))
    proc.start()
    child.close()
    res = None
    if parent.poll(CHILD_TIMEOUT_S):
        try:
            res = parent.recv()
        except EOFError:
            res = None
    proc.join(10)
    if proc.is_alive():
        proc.kill()
        proc.join()
    if res is None:
        res = {"error": f"child exited with code {proc.exitcode} or ran past {CHILD_TIMEOUT_S} s",
               "checks": [], "substitutions": [], "extras": {}}
    return res


def quiet_offline():
    """No downloads, no progress bars: everything is built from the configs in this folder.
    PYTORCH_NVML_BASED_CUDA_CHECK makes torch.cuda.is_available() (which diffusers calls on import)
    ask NVML instead of starting CUDA, so this process can still fork children that use CUDA."""
    for key, value in (("PYTORCH_NVML_BASED_CUDA_CHECK", "1"), ("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
                       ("TRANSFORMERS_VERBOSITY", "error"), ("DIFFUSERS_VERBOSITY", "error"),
                       ("TOKENIZERS_PARALLELISM", "false"), ("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")):
        os.environ.setdefault(key, value)


def main(argv):
    args = parse_args(argv)
    quiet_offline()
    try:
        files = workload.collect(args.paths)
        if args.only:
            files = [f for f in files if args.only in os.path.basename(f)]
        if not files:
            raise workload.WorkloadError("no workload files given")
        loaded = [workload.load(f, args.vram_doctor, warn=lambda m: print(f"warning: {m}", file=sys.stderr))
                  for f in files]
    except (workload.WorkloadError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    problems, plan_checks = [], {}
    for w in loaded:
        reduced = plan.reduce_llm(w.model) if isinstance(w.model, workload.LlmModel) else plan.reduce_diffusion(w.model)
        bad, plan_checks[w.path] = plan.check_plan(w, reduced)
        problems += [f"{w.path}: {p}" for p in bad]
    if problems:
        print("error: " + "\n".join(problems), file=sys.stderr)
        return 1
    estimate = round(sum(plan.estimate_seconds(w) for w in loaded), 1)

    have_torch = torch_available()
    if args.require_torch and not have_torch:
        print("error: --require-torch given but torch/transformers are not importable", file=sys.stderr)
        return 2
    if not args.dry_run and not have_torch:
        print("error: a GPU run needs torch and transformers (see tests/calibration/README.md)", file=sys.stderr)
        return 2
    mode = ("torch-cpu" if have_torch else "pure") if args.dry_run else "gpu"

    torch_mod = None
    if have_torch:
        import torch as torch_mod  # imported before the forks, so children start fast
        import steps
        steps.preload("cpu" if args.dry_run else "cuda")  # imported once, shared by the forked children
    start_method = args.start_method
    if mode == "gpu" and torch_mod.cuda.is_initialized():
        print("warning: CUDA started in the parent; children are spawned (slower)", file=sys.stderr)
        start_method = "spawn"
    # A GPU run reads the GPU from its children: this process never starts CUDA (fork safety).
    env = record.environment(torch_mod, "cpu") if mode != "gpu" else None
    workdir = args.workdir or tempfile.mkdtemp(prefix="vram-doctor-calib-")
    writer = record.JsonlWriter(args.out)
    failed, checks, started = [], 0, time.monotonic()
    full_size = {}  # model name -> the meta-device check, done once per model
    for w in loaded:
        rel = os.path.relpath(w.path, REPO_ROOT)
        if args.deadline_s and time.monotonic() - started > args.deadline_s:
            res = {"error": f"not run: --deadline-s {args.deadline_s} passed", "checks": [], "substitutions": [],
                   "extras": {}}
        elif mode == "pure":
            res = pure_result(w, list(plan_checks[w.path]))
        else:
            if mode == "torch-cpu" and w.model.name not in full_size:
                try:
                    full_size[w.model.name] = [steps.full_size_check(w.model)]
                except steps.CheckFailed as e:
                    print(f"error: {w.path}: {e}", file=sys.stderr)
                    return 1
            res = run_isolated(w, workdir, "cpu" if mode == "torch-cpu" else "cuda", mode == "torch-cpu", start_method)
            res["checks"] = plan_checks[w.path] + full_size.get(w.model.name, []) + res.get("checks", [])
        if mode == "gpu":
            env = res.get("extras", {}).pop("env", None) or env or record.environment(None, "cuda")
        gpu_slug = args.gpu_name or record.slug(env.get("gpu", "cpu")).replace("nvidia-", "")
        if res.get("error"):
            failed.append(f"{w.stem}: {res['error']}")
        checks += len(res.get("checks", []))
        for row in record.rows_for(w, res, env, gpu_slug, mode, rel):
            writer.write(row)
        status = "FAILED " + res["error"] if res.get("error") else f"ok ({len(res.get('checks', []))} checks)"
        print(f"{w.stem}: {status} in {res.get('wall_s')} s", file=sys.stderr, flush=True)
    writer.close()
    summary = {
        "mode": mode, "workloads": len(loaded), "rows": writer.count, "checks": checks, "failed": failed,
        "estimated_gpu_seconds": estimate, "budget_seconds": GRID_BUDGET_S,
        "wall_seconds": round(time.monotonic() - started, 1), "out": args.out,
        "by_kind": {k: sum(1 for w in loaded if plan.workload_kind(w.run) == k)
                    for k in sorted({plan.workload_kind(w.run) for w in loaded})},
    }
    print(json.dumps(summary))
    return 1 if failed and args.dry_run else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
