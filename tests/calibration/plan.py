"""The model-building plan of a workload, in plain Python: what will be built, how many
parameters it has, how the dry run shrinks it, and how long the GPU run should take.

The torch path (steps.py) checks its built modules against these numbers, and the pure-Python dry
run checks the numbers against the published parameter counts, so a wrong config or a wrong
formula fails either way.
"""

import copy
import math
import re

from workload import DiffusionModel, LlmModel

DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}

# Linear layers of a Llama/Qwen2 decoder layer, by the `run.lora_targets` choice (PEFT's names).
LORA_MODULES = {
    "all-linear": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    "attention": ["q_proj", "k_proj", "v_proj", "o_proj"],
    # PEFT's default for llama / qwen2 / mistral (peft/utils/constants.py
    # TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING); `plan --print-resolved` writes the
    # workload files' older `qv` as `default`.
    "default": ["q_proj", "v_proj"],
    "qv": ["q_proj", "v_proj"],
}


def lora_module_names(targets):
    """The module names a resolved `lora_targets` adapts: a named choice above, or a PEFT list
    ("q_proj,k_proj"). A regex is refused: the harness does not match module paths."""
    if targets in LORA_MODULES:
        return LORA_MODULES[targets]
    names = [t.strip() for t in targets.split(",") if t.strip()]
    if not names or any(not re.fullmatch(r"\w+", n) for n in names):
        raise ValueError(f"lora_targets = {targets!r}: the calibration harness takes a named choice or a list of module names")
    return names


def _attn_bias(model_type, cfg):
    # Qwen2 puts a bias on q, k and v (modeling_qwen2.py); Llama/Mistral only with attention_bias.
    return model_type == "qwen2" or bool(cfg.get("attention_bias", False))


def linear_shapes(model_type, cfg):
    """(in, out, has_bias) of each Linear in one decoder layer, by module name."""
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads", heads)
    hd = cfg.get("head_dim") or h // heads
    inter = cfg["intermediate_size"]
    bias = _attn_bias(model_type, cfg)
    mlp_bias = bool(cfg.get("mlp_bias", False))
    return {
        "q_proj": (h, heads * hd, bias), "k_proj": (h, kv * hd, bias), "v_proj": (h, kv * hd, bias),
        "o_proj": (heads * hd, h, False), "gate_proj": (h, inter, mlp_bias),
        "up_proj": (h, inter, mlp_bias), "down_proj": (inter, h, mlp_bias),
    }


def llm_params(model_type, cfg):
    """Exact parameter count of a Llama/Qwen2/Mistral causal LM built from `cfg`: embeddings,
    per layer the seven projections and two RMSNorm weights, the final norm, and an untied LM head
    (modeling_llama.py / modeling_qwen2.py)."""
    h, vocab, layers = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    per_layer = 2 * h
    for fan_in, fan_out, bias in linear_shapes(model_type, cfg).values():
        per_layer += fan_in * fan_out + (fan_out if bias else 0)
    head = 0 if cfg.get("tie_word_embeddings", False) else vocab * h
    return vocab * h + layers * per_layer + h + head


def lora_params(model_type, cfg, targets, rank):
    """LoRA adds A (r x in) and B (out x r) to each targeted Linear of every layer (PEFT)."""
    shapes = linear_shapes(model_type, cfg)
    per_layer = sum(rank * (shapes[m][0] + shapes[m][1]) for m in lora_module_names(targets))
    return cfg["num_hidden_layers"] * per_layer


def llm_arch(model):
    """The reference-data `arch` object of an LLM (same keys as groundtruth-public.jsonl)."""
    c = model.config
    heads = c["num_attention_heads"]
    return {
        "params": llm_params(model.model_type, c), "layers": c["num_hidden_layers"],
        "hidden": c["hidden_size"], "heads": heads, "kv_heads": c.get("num_key_value_heads", heads),
        "head_dim": c.get("head_dim") or c["hidden_size"] // heads, "vocab": c["vocab_size"],
        "intermediate": c["intermediate_size"], "tied_embeddings": bool(c.get("tie_word_embeddings", False)),
    }


def diffusion_arch(model):
    """Published component sizes; the torch path re-counts them from the built modules."""
    return {f"{k}_params": v for k, v in sorted(model.published_params.items())}


# ---- Reduced sizes for the dry run ----------------------------------------------------------

def reduce_llm(model):
    """Two layers, four heads of 16, vocabulary 512: same family, GQA ratio (capped at 4), tying."""
    cfg = copy.deepcopy(model.config)
    heads = cfg["num_attention_heads"]
    group = max(1, heads // cfg.get("num_key_value_heads", heads))
    cfg.update({
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": max(1, 4 // group),
        "head_dim": 16, "hidden_size": 64, "intermediate_size": 160, "vocab_size": 512,
        "bos_token_id": 1, "eos_token_id": 2,
    })
    return LlmModel(name=model.name, model_type=model.model_type, config=cfg)


def reduce_diffusion(model):
    """Channels /10 (UNet) and /8 (VAE) with 8 norm groups, text encoders of width 32; the block
    layout, the SDXL added conditioning and the cross-attention wiring are kept."""
    comps = copy.deepcopy(model.components)
    te_width = 32
    cross = 0
    for name in ("text_encoder", "text_encoder_2"):
        if name in comps:
            comps[name]["config"].update({
                "hidden_size": te_width, "intermediate_size": 64, "num_attention_heads": 2,
                "num_hidden_layers": 2, "projection_dim": te_width, "vocab_size": 1000,
            })
            cross += te_width
    u = comps["unet"]["config"]
    u["block_out_channels"] = [c // 10 for c in u["block_out_channels"]]
    u["norm_num_groups"] = 8
    head = u.get("attention_head_dim", 8)
    u["attention_head_dim"] = [2] * len(head) if isinstance(head, list) else 2
    if isinstance(u.get("transformer_layers_per_block"), list):
        u["transformer_layers_per_block"] = [min(2, n) for n in u["transformer_layers_per_block"]]
    u["cross_attention_dim"] = cross
    if u.get("addition_embed_type") == "text_time":
        u["addition_time_embed_dim"] = 8
        # pooled text embedding of text_encoder_2 + six time ids (SDXL's micro-conditioning)
        u["projection_class_embeddings_input_dim"] = te_width + 6 * 8
    v = comps["vae"]["config"]
    v["block_out_channels"] = [c // 8 for c in v["block_out_channels"]]
    v["norm_num_groups"] = 8
    return DiffusionModel(name=model.name, components=comps)


def reduce_run(run):
    r = copy.deepcopy(run)
    r.batch = min(run.batch, 2)
    if r.seq is not None:
        r.seq = min(run.seq, 64)
    if r.width is not None:
        r.width = r.height = 64
    return r


def new_tokens(run):
    """Tokens generated after the prompt; `run.seq` is prompt + generated (DESIGN.md)."""
    return max(1, min(32, run.seq // 8))


def unet_down_factor(model):
    return 2 ** (len(model.components["unet"]["config"]["block_out_channels"]) - 1)


def check_plan(w, reduced):
    """Shape rules the built modules rely on. Returns (problems, names of the checks passed)."""
    problems, passed = [], []

    def rule(ok, name, detail):
        (passed.append(name) if ok else problems.append(f"{name}: {detail}"))

    if isinstance(w.model, LlmModel):
        full, c = w.model.config, reduced.config
        heads = full["num_attention_heads"]
        rule(heads % full.get("num_key_value_heads", heads) == 0, "kv_heads divides heads", full)
        rule(c["num_attention_heads"] % c["num_key_value_heads"] == 0, "reduced kv_heads divides heads", c)
        if w.model.published_params is not None:
            got = llm_params(w.model.model_type, full)
            rule(got == w.model.published_params, "config gives the planner's parameter count",
                 f"{got} vs {w.model.published_params}")
    else:
        for comp in ("unet", "vae"):
            cfg = reduced.components[comp]["config"]
            groups = cfg["norm_num_groups"]
            rule(all(ch % groups == 0 for ch in cfg["block_out_channels"]),
                 f"reduced {comp} channels divisible by norm groups", cfg["block_out_channels"])
        u = w.model.components["unet"]["config"]
        rule(len(u["down_block_types"]) == len(u["block_out_channels"]) == len(u["up_block_types"]),
             "unet block lists agree in length", u["block_out_channels"])
        latent = (w.run.width // 8, w.run.height // 8)
        rule(all(x % unet_down_factor(w.model) == 0 for x in latent), "latent divisible by UNet downsampling", latent)
        missing = set(w.model.components) - set(w.model.published_params)
        rule(not missing, "every component has a published parameter count", sorted(missing))
    return problems, passed


# ---- Coarse GPU-time budget -----------------------------------------------------------------
# Assumed rates for one H200 (device/KINDS.md: ~790 TFLOP/s bf16 matmul peak, 4.3 TB/s copies);
# a third of the peak for whole models, 4 s per workload for the fresh process, CUDA context
# and random init, and 1 GB/s for the save + quantizing reload of a bitsandbytes model.
# Replace these with the wall_s the first GPU run records.
FLOPS_PER_S = 2.5e14
FIXED_S = 4.0
QUANT_BYTES_PER_S = 1e9


def estimate_seconds(w):
    r = w.run
    if isinstance(w.model, LlmModel):
        params = llm_params(w.model.model_type, w.model.config)
        cfg = w.model.config
        attn = 4 * cfg["num_hidden_layers"] * r.seq * r.seq * cfg["hidden_size"] * r.batch
        if r.task == "inference":
            flops = 2 * params * r.batch * r.seq + attn
        else:
            recompute = 8 if r.checkpointing == "full" else 6
            flops = 2 * r.grad_accum * (recompute * params * r.batch * r.seq + 3 * attn)  # two steps
        seconds = FIXED_S + flops / FLOPS_PER_S
        if r.weights in ("int8", "nf4"):
            seconds += 2 * params * 2 / QUANT_BYTES_PER_S
        return seconds
    pixels = r.width * r.height * r.batch
    unet = w.model.published_params.get("unet", 0)
    # ~2 FLOPs per parameter per latent position (convolutions dominate), CFG doubles the batch;
    # VAE decoder: ~1.25 TFLOP per 512x512 image, scaled by pixels.
    flops = 2 * 2 * unet * pixels / 64 + 1.25e12 * pixels / (512 * 512)
    return FIXED_S + flops / FLOPS_PER_S


def describe_mode(run):
    """The reference-data `mode` text: what was run, in the words the public rows use."""
    if run.task == "inference":
        return f"inference (generate {new_tokens(run)} new tokens, {run.attention})"
    if run.task == "training":
        method = {"full": "full fine-tune", "lora": f"LoRA r{run.lora_rank} {run.lora_targets}",
                  "qlora": f"QLoRA r{run.lora_rank} {run.lora_targets} on {run.weights} base"}[run.method]
        ckpt = " + gradient checkpointing" if run.checkpointing == "full" else ""
        accum = f", grad_accum {run.grad_accum}" if run.grad_accum > 1 else ""
        return f"{method} ({run.precision}, {run.optimizer}{ckpt}{accum})"
    tiling = " + VAE tiling" if run.vae_tiling else ""
    return f"one denoising step (CFG) + VAE decode ({run.weights}, {run.attention}{tiling})"


def workload_kind(run):
    if run.task == "inference":
        return "llm_inference"
    if run.task == "training":
        return {"full": "llm_training_full", "lora": "llm_training_lora", "qlora": "llm_training_qlora"}[run.method]
    return "diffusion_inference"


def gib(nbytes):
    return None if nbytes is None else round(nbytes / 2**30, 4)


def is_finite_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

