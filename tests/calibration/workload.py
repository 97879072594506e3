"""Workload files in the planner's own TOML format (DESIGN.md "Workload file"), resolved by the
planner itself: `vram-doctor plan --workload FILE --print-resolved` (src/resolve/) checks the file
(unknown sections and keys, choices, ranges, the model's context) and fills in every default and
preset. Nothing of that is repeated here; this module adds only what the harness needs on top:
which resolved workloads a single-GPU PyTorch process can run, and the transformers / diffusers
config it builds for each (from the config files in the repository, never downloaded).

Only the standard library is used here, so grid files are checked even where torch is absent.
The binary is passed in (`--vram-doctor`, or `VRAM_DOCTOR_BIN`): `cargo build --release` makes it.
"""

import json
import os
import subprocess
import tomllib
from dataclasses import MISSING, dataclass, field, fields

# What this harness can run: a subset of the planner's choices, each a real PyTorch code path.
# Weight formats the harness builds; 8/4-bit go through bitsandbytes as transformers loads them.
HARNESS_WEIGHTS = {"fp32", "fp16", "bf16", "int8", "nf4"}
QUANTIZED = {"int8", "nf4"}
HARNESS_OPTIMIZERS = {"adamw", "adamw-8bit", "sgd", "adafactor"}
LLM_FAMILIES = {"llama", "qwen2", "mistral"}
# What fake_train.py builds besides (the real transformers classes; plan.py's Llama-shaped
# parameter count is not used there): sandwich norms, soft-capping, fused projections, MoE.
SIMULATED_FAMILIES = LLM_FAMILIES | {"qwen3", "gemma2", "gemma3_text", "phi3", "mixtral", "qwen2_moe"}
MAX_FILE_BYTES = 1 << 20  # for the config.json files the harness reads itself
RESOLVE_TIMEOUT_S = 60

# Resolved fields whose other values the harness has no code path for (it measures one GPU, no
# offload; a diffusers pipeline with every component resident, CFG, one image, a full VAE decode).
HARNESS_FIXED = {
    "llm": {"zero_stage": 0, "offload": "none"},
    "diffusion": {"frames": 1, "cfg": True, "vae_slicing": False, "vae_decode": True, "tiny_vae": False,
                  "cpu_offload": "none", "text_encoder_on_cpu": False, "loras": 0, "controlnets": 0,
                  "ip_adapter": False},
}
# The planner's architecture fields (src/types `ModelArch`) and the transformers config keys.
ARCH_TO_HF = {
    "layers": "num_hidden_layers", "hidden": "hidden_size", "heads": "num_attention_heads",
    "kv_heads": "num_key_value_heads", "head_dim": "head_dim", "intermediate": "intermediate_size",
    "vocab": "vocab_size", "tied_embeddings": "tie_word_embeddings", "max_context": "max_position_embeddings",
}


class WorkloadError(ValueError):
    """A workload file the harness cannot run; the message names the file and the field."""


@dataclass
class LlmModel:
    """An LLM to build: a transformers config (as a plain dict) plus where it came from."""
    name: str
    model_type: str
    config: dict
    published_params: int | None = None


@dataclass
class DiffusionModel:
    """A diffusers pipeline to build: one config dict per component, by component name."""
    name: str
    components: dict
    published_params: dict = field(default_factory=dict)


@dataclass
class Run:
    """The resolved run fields the harness reads, each named as in `plan --print-resolved`'s `run`
    and filled from it: no list of the planner's fields is kept here (src/types/run_fields.rs
    declares them), a field the harness builds a code path for is one line below, and the fields
    the resolved run of a task does not have (the other task's) are None."""
    task: str
    weights: str
    batch: int
    engine: str
    attention: str
    seq: int | None = None
    method: str | None = None
    precision: str | None = None
    optimizer: str | None = None
    optimizer_step: str | None = None
    optimizer_in_bwd: bool | None = None
    activation_offload: bool | None = None
    paged_optimizer: bool | None = None
    packing: bool | None = None
    avg_seq: int | None = None
    torch_compile: bool | None = None
    checkpointing: str | None = None
    lora_rank: int | None = None
    lora_targets: str | None = None
    grad_accum: int | None = None
    width: int | None = None
    height: int | None = None
    vae_tiling: bool | None = None


@dataclass
class Workload:
    path: str
    stem: str
    model: object
    run: Run
    resolved_run: dict = field(default_factory=dict)  # the planner's whole resolved `run`


def _fail(origin, msg):
    raise WorkloadError(f"{origin}: {msg}")


def resolved(path, binary):
    """The planner's resolution of one workload file (`plan --print-resolved`), or the planner's
    own one-line error for a file it refuses."""
    if not binary:
        _fail(path, "the vram-doctor binary is needed to resolve workloads: pass --vram-doctor PATH or set "
                    "VRAM_DOCTOR_BIN (cargo build --release gives target/release/vram-doctor)")
    try:
        p = subprocess.run([binary, "plan", "--workload", path, "--print-resolved"], capture_output=True,
                           text=True, timeout=RESOLVE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        _fail(path, f"vram-doctor binary {binary} did not run: {e}")
    lines = [ln.strip() for ln in p.stderr.splitlines() if ln.strip()]
    if p.returncode != 0:
        errors = [ln for ln in lines if ln.startswith("error:")] or lines[-1:] or [f"exit status {p.returncode}"]
        msg = errors[0].removeprefix("error:").strip()
        raise WorkloadError(msg if path in msg else f"{path}: {msg}")
    try:
        return json.loads(p.stdout), lines
    except json.JSONDecodeError as e:
        _fail(path, f"{binary} plan --print-resolved printed no JSON: {e}")


def _field(origin, table, key, where):
    if key not in table:
        _fail(origin, f"vram-doctor's resolved {where} has no field {key!r} (a binary older than this harness?)")
    return table[key]


def resolve_run(origin, res):
    """The harness's `Run` from the planner's resolved workload, refused where the harness has no
    code path for a resolved value."""
    kind = _field(origin, res, "task", "workload")
    table = _field(origin, res, "run", "workload")
    if kind not in HARNESS_FIXED:
        _fail(origin, f"a {kind} workload has no calibration step; use an inference, training or diffusion workload")
    if _field(origin, _field(origin, res, "gpu", "workload"), "count", "gpu") != 1:
        _fail(origin, "gpu.count: the harness measures one GPU")
    for key, want in HARNESS_FIXED[kind].items():
        if _field(origin, table, key, "run") != want:
            _fail(origin, f"run.{key} = {table[key]!r}: the harness measures only {want!r}")
    given = {f.name: table[f.name] for f in fields(Run) if f.name in table}
    if kind == "diffusion":
        given["task"] = "diffusion"  # the diffusion run has no task of its own: the workload's kind is it
    for f in fields(Run):
        if f.default is MISSING:
            _field(origin, given, f.name, "run")
    r = Run(**given)
    # What a single-GPU PyTorch process can measure.
    if r.task not in ("inference", "training", "diffusion"):
        _fail(origin, f"run.task = '{r.task}' has no calibration step; use inference, training or diffusion")
    want_engine = "diffusers" if r.task == "diffusion" else "transformers"
    if r.engine != want_engine:
        _fail(origin, f"run.engine = '{r.engine}': the harness measures {want_engine} for task '{r.task}'")
    if r.weights not in HARNESS_WEIGHTS:
        _fail(origin, f"run.weights = '{r.weights}' cannot be built here; use one of: {', '.join(sorted(HARNESS_WEIGHTS))}")
    if r.task == "diffusion" and r.weights in QUANTIZED:
        _fail(origin, f"run.weights = '{r.weights}': diffusion workloads use fp32, fp16 or bf16 here")
    if r.attention == "flash":
        _fail(origin, "run.attention = 'flash' needs the flash-attn package; use eager or sdpa")
    if r.task == "training":
        if r.optimizer not in HARNESS_OPTIMIZERS:
            _fail(origin, f"run.optimizer = '{r.optimizer}' is not built in; use one of: {', '.join(sorted(HARNESS_OPTIMIZERS))}")
        if r.checkpointing == "selective":
            _fail(origin, "run.checkpointing = 'selective' has no transformers switch; use none or full")
        if r.method == "qlora" and r.weights not in QUANTIZED:
            _fail(origin, f"run.method = 'qlora' needs run.weights nf4 or int8, not '{r.weights}'")
        if r.method == "full" and r.weights in QUANTIZED:
            _fail(origin, f"run.weights = '{r.weights}' cannot be fully fine-tuned; use run.method = 'qlora'")
    if r.task == "diffusion" and (r.width % 8 or r.height % 8):
        _fail(origin, f"run.width/height = {r.width}x{r.height} must be multiples of 8 (the VAE's factor)")
    run = dict(table)
    run.setdefault("task", r.task)
    return r, run


def _load_json(origin, path):
    if not os.path.isfile(path):
        _fail(origin, f"model file {path} does not exist")
    if os.path.getsize(path) > MAX_FILE_BYTES:
        _fail(origin, f"{path} is too large for a config file")
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            _fail(origin, f"{path}: not valid JSON: {e}")


def _llm_from_hf_config(origin, path, arch, families):
    """A config.json as on Hugging Face, named after the file. Every architecture field it states
    must be what the planner resolved from it (`arch`), whose parameter count the plan is checked
    against."""
    d = _load_json(origin, path)
    cfg = {k: v for k, v in d.items() if not k.startswith("_")}
    for key in ("torch_dtype", "transformers_version"):  # file metadata, not architecture
        cfg.pop(key, None)
    model_type = cfg.pop("model_type", None)
    if model_type not in families:
        _fail(origin, f"{path}: model_type {model_type!r} is not built here; use one of {sorted(families)}")
    for key, hf in ARCH_TO_HF.items():
        if hf in cfg and cfg[hf] != arch.get(key):
            _fail(origin, f"{path}: {hf} = {cfg[hf]!r} but the planner resolved model.{key} = {arch.get(key)!r}")
    name = os.path.splitext(os.path.basename(path))[0]
    return LlmModel(name=name, model_type=model_type, config=cfg, published_params=int(arch["params"]))


def _llm_from_arch(origin, name, arch):
    """A Llama-shaped config from the planner's resolved architecture (gated MLP, RMSNorm, RoPE)."""
    if arch.get("moe") or arch.get("mla") or arch.get("mlp", "gated") != "gated" or arch.get("sliding_window"):
        _fail(origin, f"model '{name}' is not Llama-shaped; give model.hf_config instead")
    cfg = {
        "hidden_size": arch["hidden"], "num_hidden_layers": arch["layers"], "num_attention_heads": arch["heads"],
        "num_key_value_heads": arch["kv_heads"], "head_dim": arch["head_dim"],
        "intermediate_size": arch["intermediate"], "vocab_size": arch["vocab"],
        "tie_word_embeddings": bool(arch["tied_embeddings"]),
        # transformers needs a length; with no limit in the planner, any length >= seq builds the same
        "max_position_embeddings": arch.get("max_context") or 131072, "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
    }
    return LlmModel(name=name, model_type="llama", config=cfg, published_params=int(arch["params"]))


def _diffusion_from_index(origin, path, published):
    index = _load_json(origin, path)
    base = os.path.dirname(path)
    components = {}
    for comp, spec in index.items():
        if comp.startswith("_"):
            continue
        if not (isinstance(spec, list) and len(spec) == 2):
            _fail(origin, f"{path}: component {comp} must be [library, class]")
        cfg = _load_json(origin, os.path.join(base, comp, "config.json"))
        cfg = {k: v for k, v in cfg.items() if k != "_comment"}
        components[comp] = {"library": spec[0], "class": spec[1], "config": cfg}
    for need in ("unet", "vae", "text_encoder"):
        if need not in components:
            _fail(origin, f"{path}: a diffusion pipeline needs a {need} component")
    name = os.path.basename(base)
    return DiffusionModel(name=name, components=components, published_params=published)


def resolve_model(origin, res, base_dir, families=LLM_FAMILIES):
    """What to build for the planner's resolved model. Only where the model comes from is read from
    the file itself (the config.json to build, or the preset's name for the row)."""
    with open(origin, "rb") as f:
        table = tomllib.load(f).get("model", {})  # the planner has checked the file already
    model = _field(origin, res, "model", "workload")
    if res["task"] == "diffusion":
        # The planner's diffusion preset; the harness builds it from configs/diffusion/<id>/.
        preset_id = _field(origin, model, "id", "model")
        published = {"unet": int(model["params"]), "vae": int(_field(origin, res, "vae", "workload")["params"])}
        for i, te in enumerate(_field(origin, res, "text_encoders", "workload")):
            published["text_encoder" if i == 0 else f"text_encoder_{i + 1}"] = int(te["params"])
        index = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs", "diffusion", preset_id,
                             "model_index.json")
        if not os.path.isfile(index):
            _fail(origin, f"model '{preset_id}' has no diffusers configs under tests/calibration/configs/diffusion/")
        return _diffusion_from_index(origin, index, published)
    if "file" in table:
        _fail(origin, "model.file: weights files are not read here; give model.hf_config or model.preset")
    if "hf_config" in table:
        overrides = sorted(set(table) & set(ARCH_TO_HF))
        if overrides:
            _fail(origin, f"model.{overrides[0]}: the harness builds config.json as it is; put the change in the file")
        return _llm_from_hf_config(origin, os.path.join(base_dir, table["hf_config"]), model, families)
    return _llm_from_arch(origin, table.get("preset", "custom"), model)


def load(path, binary, families=LLM_FAMILIES, warn=None):
    """Resolves one workload file with the planner (`binary`), then checks that the harness can
    build and run it (an LLM of one of `families`). The planner's warnings go to `warn`."""
    res, notes = resolved(path, binary)
    for line in notes:
        if warn:
            warn(line if path in line else f"{path}: {line}")
    run, table = resolve_run(path, res)
    model = resolve_model(path, res, os.path.dirname(path), families)
    stem = os.path.splitext(os.path.basename(path))[0]
    return Workload(path=path, stem=stem, model=model, run=run, resolved_run=table)


def collect(paths):
    """Expands directories into their *.toml files, sorted, so a grid runs in a fixed order."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            files.extend(sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".toml")))
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise WorkloadError(f"{p}: no such file or directory")
    return files
