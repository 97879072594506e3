"""Workload files in the planner's own TOML format (DESIGN.md "Workload file"), read the way the
planner reads them: unknown sections or keys are errors, every choice is checked against the list
the planner accepts, and defaults are the planner's (`src/memory/workload.rs`, `Run::default`).

Only the standard library is used here, so grid files are checked even where torch is absent.
"""

import json
import os
import tomllib
from dataclasses import dataclass, field

# Field names of `GpuSection`, `ModelSection` and `RunSection` in src/memory/workload.rs.
GPU_KEYS = {"preset", "vram_gib", "count"}
MODEL_KEYS = {
    "preset", "hf_config", "file", "params", "layers", "hidden", "heads", "kv_heads", "head_dim",
    "intermediate", "vocab", "tied_embeddings", "max_context", "sliding_window",
}
RUN_KEYS = {
    "task", "weights", "batch", "seq", "engine", "kv_cache", "attention", "method", "precision",
    "optimizer", "checkpointing", "lora_rank", "lora_targets", "grad_accum", "zero_stage", "offload",
    "gpu_memory_utilization", "ubatch", "other_processes_gib", "width", "height", "vae_tiling",
    "resolution", "texture_quality", "ray_tracing", "frame_generation",
}

# Spellings the planner accepts (src/memory/options.rs), canonical name first, mapped to canonical.
CHOICES = {
    "task": {"inference": "inference", "training": "training", "finetune": "training",
             "fine-tune": "training", "diffusion": "diffusion", "game": "game"},
    "engine": {"transformers": "transformers", "hf": "transformers", "pytorch": "transformers",
               "torch": "transformers", "vllm": "vllm", "llama.cpp": "llama.cpp", "llamacpp": "llama.cpp",
               "llama-cpp": "llama.cpp", "ollama": "llama.cpp", "autoawq": "autoawq",
               "comfyui": "comfyui", "diffusers": "diffusers"},
    "attention": {"eager": "eager", "sdpa": "sdpa", "flash": "flash", "flash_attention_2": "flash",
                  "fa2": "flash", "flash-attn": "flash"},
    "method": {"full": "full", "lora": "lora", "qlora": "qlora"},
    "precision": {"fp32": "fp32", "fp16-mixed": "fp16-mixed", "fp16": "fp16-mixed",
                  "bf16-mixed": "bf16-mixed", "bf16": "bf16", "bf16-pure": "bf16"},
    "optimizer": {"adamw": "adamw", "adam": "adamw", "adamw-8bit": "adamw-8bit", "adam8bit": "adamw-8bit",
                  "adamw8bit": "adamw-8bit", "paged-adamw-8bit": "adamw-8bit", "sgd": "sgd",
                  "adafactor": "adafactor", "lion": "lion"},
    "checkpointing": {"none": "none", "off": "none", "false": "none", "selective": "selective",
                      "full": "full", "on": "full", "true": "full"},
    "lora_targets": {"all-linear": "all-linear", "all": "all-linear", "attention": "attention",
                     "qkvo": "attention", "q,k,v,o": "attention", "qv": "qv", "q,v": "qv",
                     "q_proj,v_proj": "qv", "default": "qv"},
    "offload": {"none": "none", "optimizer": "optimizer", "optimizer+params": "optimizer+params",
                "params+optimizer": "optimizer+params", "all": "optimizer+params"},
}

# What this harness can run: a subset of the planner's choices, each a real PyTorch code path.
# Weight formats the harness builds; 8/4-bit go through bitsandbytes as transformers loads them.
HARNESS_WEIGHTS = {"fp32", "fp16", "bf16", "int8", "nf4"}
QUANTIZED = {"int8", "nf4"}
HARNESS_OPTIMIZERS = {"adamw", "adamw-8bit", "sgd", "adafactor"}
LLM_FAMILIES = {"llama", "qwen2", "mistral"}
# What fake_train.py builds besides (the real transformers classes; plan.py's Llama-shaped
# parameter count is not used there): sandwich norms, soft-capping, fused projections, MoE.
SIMULATED_FAMILIES = LLM_FAMILIES | {"qwen3", "gemma2", "gemma3_text", "phi3", "mixtral", "qwen2_moe"}
MAX_FILE_BYTES = 1 << 20


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
    task: str = "inference"
    weights: str = "bf16"
    batch: int = 1
    seq: int = 4096
    engine: str = "transformers"
    attention: str = "sdpa"
    method: str = "full"
    precision: str = "bf16-mixed"
    optimizer: str = "adamw"
    checkpointing: str = "none"
    lora_rank: int = 16
    lora_targets: str = "all-linear"
    grad_accum: int = 1
    width: int = 1024
    height: int = 1024
    vae_tiling: bool = False


@dataclass
class Workload:
    path: str
    stem: str
    model: object
    run: Run


def _fail(origin, msg):
    raise WorkloadError(f"{origin}: {msg}")


def _choice(origin, key, value):
    allowed = CHOICES[key]
    if not isinstance(value, str) or value.strip().lower() not in allowed:
        names = sorted(set(allowed.values()))
        _fail(origin, f"run.{key} = {value!r} is not allowed; use one of: {', '.join(names)}")
    return allowed[value.strip().lower()]


def _int(origin, key, value, lo, hi):
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        _fail(origin, f"run.{key} = {value!r} is out of range; allowed {lo}..={hi}")
    return value


def parse_file(path):
    """Reads one workload file: TOML, no unknown sections or keys (the planner's rule)."""
    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        _fail(path, f"{size} bytes is too large for a workload file (max 1 MiB)")
    with open(path, "rb") as f:
        try:
            raw = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            _fail(path, f"not valid TOML: {e}")
    for section, keys in (("gpu", GPU_KEYS), ("model", MODEL_KEYS), ("run", RUN_KEYS)):
        table = raw.get(section, {})
        if not isinstance(table, dict):
            _fail(path, f"[{section}] must be a table")
        unknown = sorted(set(table) - keys)
        if unknown:
            _fail(path, f"unknown field {section}.{unknown[0]}")
    extra = sorted(set(raw) - {"gpu", "model", "run"})
    if extra:
        _fail(path, f"unknown section [{extra[0]}]")
    return raw


def resolve_run(origin, table):
    """`[run]` with the planner's defaults, limited to what the harness can execute."""
    r = Run()
    for key in ("task", "engine", "attention", "method", "precision", "optimizer", "checkpointing",
                "lora_targets", "offload"):
        if key in table:
            value = _choice(origin, key, table[key])
            if key != "offload":
                setattr(r, key, value)
    if "seq" not in table and r.task == "training":
        r.seq = 2048  # planner default for training (RunSection::resolve)
    if "weights" in table:
        r.weights = str(table["weights"]).strip().lower()
    elif r.method == "qlora":
        r.weights = "nf4"
    elif r.task == "diffusion":
        r.weights = "fp16"
    if r.task == "diffusion" and "engine" not in table:
        r.engine = "diffusers"
    for key, lo, hi in (("batch", 1, 4096), ("seq", 1, 1_048_576), ("lora_rank", 1, 65536),
                        ("grad_accum", 1, 1024), ("width", 8, 16384), ("height", 8, 16384)):
        if key in table:
            setattr(r, key, _int(origin, key, table[key], lo, hi))
    if "vae_tiling" in table:
        if not isinstance(table["vae_tiling"], bool):
            _fail(origin, f"run.vae_tiling = {table['vae_tiling']!r} must be true or false")
        r.vae_tiling = table["vae_tiling"]
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
        if table.get("zero_stage", 0) != 0 or table.get("offload", "none") != "none":
            _fail(origin, "run.zero_stage/offload: the harness measures one GPU without offload")
        if r.method == "qlora" and r.weights not in QUANTIZED:
            _fail(origin, f"run.method = 'qlora' needs run.weights nf4 or int8, not '{r.weights}'")
        if r.method == "full" and r.weights in QUANTIZED:
            _fail(origin, f"run.weights = '{r.weights}' cannot be fully fine-tuned; use run.method = 'qlora'")
    if r.task == "diffusion" and (r.width % 8 or r.height % 8):
        _fail(origin, f"run.width/height = {r.width}x{r.height} must be multiples of 8 (the VAE's factor)")
    return r


# `[model]` inline architecture field -> transformers config key.
ARCH_TO_HF = {
    "layers": "num_hidden_layers", "hidden": "hidden_size", "heads": "num_attention_heads",
    "kv_heads": "num_key_value_heads", "head_dim": "head_dim", "intermediate": "intermediate_size",
    "vocab": "vocab_size", "tied_embeddings": "tie_word_embeddings", "max_context": "max_position_embeddings",
}


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


def _llm_from_hf_config(origin, path, repo_root, families):
    """A config.json as on Hugging Face. Its model is named after the file; the catalog preset of
    that name, where there is one, gives the published parameter count the plan is checked against."""
    d = _load_json(origin, path)
    cfg = {k: v for k, v in d.items() if not k.startswith("_")}
    for key in ("torch_dtype", "transformers_version"):  # file metadata, not architecture
        cfg.pop(key, None)
    model_type = cfg.pop("model_type", None)
    if model_type not in families:
        _fail(origin, f"{path}: model_type {model_type!r} is not built here; use one of {sorted(families)}")
    name = os.path.splitext(os.path.basename(path))[0]
    preset = _find_preset(repo_root, name)
    published = int(preset["params"]) if preset else None
    return LlmModel(name=name, model_type=model_type, config=cfg, published_params=published)


def _llm_from_arch(name, arch, published):
    """A Llama-shaped config from the planner's architecture fields (gated MLP, RMSNorm, RoPE)."""
    heads = arch["heads"]
    cfg = {
        "hidden_size": arch["hidden"], "num_hidden_layers": arch["layers"], "num_attention_heads": heads,
        "num_key_value_heads": arch.get("kv_heads", heads),
        "head_dim": arch.get("head_dim", arch["hidden"] // heads),
        "intermediate_size": arch.get("intermediate", 4 * arch["hidden"]), "vocab_size": arch["vocab"],
        "tie_word_embeddings": bool(arch.get("tied_embeddings", False)),
        "max_position_embeddings": arch.get("max_context") or 131072, "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
    }
    return LlmModel(name=name, model_type="llama", config=cfg, published_params=published)


def _find_preset(repo_root, preset_id):
    with open(os.path.join(repo_root, "presets", "models.toml"), "rb") as f:
        presets = tomllib.load(f).get("model", [])
    return next((p for p in presets if p.get("id") == preset_id), None)


def _preset(origin, repo_root, preset_id):
    p = _find_preset(repo_root, preset_id)
    if p is None:
        _fail(origin, f"model.preset = '{preset_id}' is not in presets/models.toml; give model.hf_config or the architecture")
    if p.get("moe") or p.get("mla") or p.get("mlp", "gated") != "gated" or p.get("sliding_window"):
        _fail(origin, f"model.preset = '{preset_id}' is not Llama-shaped; give model.hf_config instead")
    return p


def _diffusion_preset(repo_root, preset_id):
    """A diffusion model of presets/diffusion.toml (by id or alias) with its parts' counts."""
    with open(os.path.join(repo_root, "presets", "diffusion.toml"), "rb") as f:
        cat = tomllib.load(f)
    parts = {p["id"]: p for p in cat.get("part", [])}
    for m in cat.get("model", []):
        if preset_id == m.get("id") or preset_id in m.get("aliases", []):
            counts = {"unet": int(m["params"]), "vae": int(parts[m["vae"]]["params"])}
            for i, te in enumerate(m.get("text_encoders", [])):
                counts["text_encoder" if i == 0 else f"text_encoder_{i + 1}"] = int(parts[te]["params"])
            return m["id"], counts
    return None, {}


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


def resolve_model(origin, table, base_dir, repo_root, task, families=LLM_FAMILIES):
    sources = [k for k in ("preset", "hf_config", "file") if k in table]
    if len(sources) > 1:
        _fail(origin, "model: give only one of model.preset, model.hf_config, model.file")
    overrides = {k: v for k, v in table.items() if k in ARCH_TO_HF}
    if task == "diffusion":
        # The planner's diffusion presets; the harness builds them from configs/diffusion/<id>/.
        if sources != ["preset"]:
            _fail(origin, "model: a diffusion workload names model.preset (see presets/diffusion.toml)")
        preset_id, published = _diffusion_preset(repo_root, table["preset"])
        index = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs", "diffusion", str(preset_id),
                             "model_index.json")
        if preset_id is None or not os.path.isfile(index):
            _fail(origin, f"model.preset = '{table['preset']}' has no diffusers configs under tests/calibration/configs/diffusion/")
        return _diffusion_from_index(origin, index, published)
    if "file" in table:
        _fail(origin, "model.file: weights files are not read here; give model.hf_config or model.preset")
    if "hf_config" in table:
        model = _llm_from_hf_config(origin, os.path.join(base_dir, table["hf_config"]), repo_root, families)
    elif "preset" in table:
        p = _preset(origin, repo_root, table["preset"])
        model = _llm_from_arch(p["id"], p, int(p["params"]))
        if "max_context" in p:
            model.config["max_position_embeddings"] = p["max_context"]
    else:
        missing = [k for k in ("params", "layers", "hidden", "heads", "vocab") if k not in table]
        if missing:
            _fail(origin, f"model.{missing[0]} is missing: give model.preset, model.hf_config, or the whole architecture")
        model = _llm_from_arch("custom", table, int(table["params"]))
    if overrides:
        for k, v in overrides.items():
            model.config[ARCH_TO_HF[k]] = v
        model.published_params = int(table["params"]) if "params" in table else None
    return model


def load(path, repo_root, families=LLM_FAMILIES):
    """Parses, checks and resolves one workload file (an LLM of one of `families`)."""
    raw = parse_file(path)
    run = resolve_run(path, raw.get("run", {}))
    model = resolve_model(path, raw.get("model", {}), os.path.dirname(path), repo_root, run.task, families)
    if isinstance(model, LlmModel):
        max_ctx = model.config.get("max_position_embeddings")
        if max_ctx and run.seq > max_ctx:
            _fail(path, f"run.seq = {run.seq} is longer than the model supports (max_context {max_ctx})")
    stem = os.path.splitext(os.path.basename(path))[0]
    return Workload(path=path, stem=stem, model=model, run=run)


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
