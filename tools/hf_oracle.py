#!/usr/bin/env python3
"""The transformers oracle (issue 15): exact parameter counts and KV-cache bytes per token, from
transformers itself, for every decoder and encoder model type it ships and for the real configs
kept in tests/data/configs/.

Each model is built on the meta device (no weights, no memory, no download): parameters are
counted from `model.parameters()` (tied matrices once), experts from the parameters under an
`experts` module, and the cache layout from one forward pass of 3 tokens on the meta device into
`DynamicCache(config=...)` (transformers' own cache classes: full, sliding-window, linear-attention
layers). The rows are committed as data (tests/data/oracle/) so `cargo test` needs no Python;
tests/hf_oracle.rs checks `vram-doctor inspect` against them, and, where a Python with
transformers is given, regenerates a sample and diffs it.

Usage:
  python tools/hf_oracle.py defaults  > tests/data/oracle/transformers-defaults.jsonl
  python tools/hf_oracle.py configs   > tests/data/oracle/transformers-configs.jsonl
  python tools/hf_oracle.py defaults --only llama,qwen3_moe   (a sample)
"""

import argparse
import contextlib
import inspect
import io
import json
import os
import signal
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKENS = 3


def kinds():
    """model_type -> (kind, class name): decoders first, then encoders, then vision-language."""
    from transformers.models.auto import modeling_auto as ma

    out = {t: ("decoder", cls) for t, cls in ma.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.items()}
    # An encoder's type (BERT, XLM-R) is also in the causal-LM table (BertLMHeadModel, its
    # decoder variant); people download it as an encoder, so its masked-LM class is used.
    for t, cls in ma.MODEL_FOR_MASKED_LM_MAPPING_NAMES.items():
        if t not in out or is_encoder_only(t):
            out[t] = ("encoder", cls)
    for t, cls in ma.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.items():
        # A composite type (Llama 4, Qwen3.5) maps to a ForCausalLM that takes only its
        # text_config; its own config builds the whole image-text model.
        if t not in out or (out[t][1] != cls and has_text_config(t)):
            out[t] = ("vlm", cls)
    return out


def has_text_config(model_type):
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return "text_config" in getattr(CONFIG_MAPPING[model_type], "sub_configs", {})


def is_encoder_only(model_type):
    """A type whose default config is neither a decoder nor an encoder-decoder (BERT, RoBERTa)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    try:
        cfg = CONFIG_MAPPING[model_type]()
    except Exception:  # noqa: BLE001
        return False
    return not getattr(cfg, "is_decoder", False) and not getattr(cfg, "is_encoder_decoder", False)


def model_class(name):
    import transformers

    cls = getattr(transformers, name, None)
    if cls is None:
        raise LookupError(f"transformers has no class {name}")
    return cls


def top_k(cfg):
    # A composite model's routing is in its text config (Llama 4, Qwen3-VL-MoE).
    if hasattr(cfg, "get_text_config"):
        cfg = cfg.get_text_config()
    for k in ("num_experts_per_tok", "moe_topk", "top_k", "num_experts_per_token", "moe_k"):
        v = getattr(cfg, k, None)
        if isinstance(v, int) and v > 0:
            return v
    return None


def expert_counts(model, cfg):
    """Total parameters of routed experts and of the ones a token uses."""
    import re

    total = 0
    active = 0.0
    k = None
    for name, p in model.named_parameters():
        m = re.search(r"\.experts\.(\d+\.)?", name)
        if not m or ".shared_expert" in name:
            continue
        if m.group(1) is not None:
            # One module per expert (experts.<i>.w1): the layer's count is the number of indices.
            experts = None
        elif p.dim() == 3:
            experts = p.shape[0]
        else:
            experts = p.shape[0] if p.dim() >= 1 else None
        total += p.numel()
        k = k or top_k(cfg)
        if k is None:
            return total, None
        if experts:
            active += p.numel() * k / experts
        else:
            active = None
            break
    if total and active is not None:
        return total, round(active)
    return total, None


def children_breakdown(model):
    """Parameters under each module two levels down (model.embed_tokens, model.layers, lm_head)."""
    seen = set()
    parts = {}
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        key = ".".join(name.split(".")[:2]) if name.count(".") >= 2 else name.split(".")[0]
        parts[key] = parts.get(key, 0) + p.numel()
    return parts


class Timeout(Exception):
    pass


def alarm(_sig, _frame):
    raise Timeout("timed out")


def cache_layout(model, kind):
    """Elements per token of K and V in each layer, and the fixed state of linear layers."""
    import torch
    from transformers import DynamicCache

    if kind == "encoder":
        return {"kv_elements_per_token": 0, "layers": []}
    cache = DynamicCache(config=model.config)
    ids = torch.zeros((1, TOKENS), dtype=torch.long, device="meta")
    # State-space models (modeling_mamba.py, modeling_mamba2.py) take their cache as `cache`,
    # not `past_key_values`; given the other name they run without one and record no state.
    params = inspect.signature(model.forward).parameters
    key = "past_key_values" if "past_key_values" in params or "cache" not in params else "cache"
    try:
        model(input_ids=ids, use_cache=True, **{key: cache})
    except AttributeError:
        if kind != "vlm":
            raise
        # Llama 4's image-text forward fails after its language model has run (it reads
        # `image_outputs` from a text-only output); the cache is the language model's, so it
        # is filled by that model alone.
        cache = DynamicCache(config=model.config)
        model.get_decoder()(input_ids=ids, past_key_values=cache, use_cache=True)
    layers = []
    kv = 0
    for layer in cache.layers:
        entry = {"class": type(layer).__name__}
        keys = getattr(layer, "keys", None)
        values = getattr(layer, "values", None)
        if isinstance(keys, torch.Tensor) and keys.numel() > 0:
            per = (keys.numel() + values.numel()) // TOKENS
            entry["kv"] = per
            kv += per
        window = getattr(layer, "sliding_window", None)
        if window:
            entry["window"] = int(window)
        state = 0
        for states in ("conv_states", "recurrent_states"):
            for t in (getattr(layer, states, None) or {}).values():
                if isinstance(t, torch.Tensor):
                    state += t.numel()
        if state:
            entry["state"] = state
        layers.append(entry)
    return {"kv_elements_per_token": kv, "layers": layers}


def measure(cfg, kind, cls_name, secs):
    import torch

    cls = model_class(cls_name)
    cfg.architectures = [cls_name]
    with contextlib.suppress(Exception):
        # Dispatch over experts without data-dependent indexing, so the meta forward runs.
        cfg._experts_implementation = "batched_mm"
    row = {"class": cls_name, "kind": kind}
    # Some composite default configs (Llama 4) lack the pad_token_id their model's __init__
    # reads; None is what every text config defaults it to.
    if not hasattr(cfg, "pad_token_id"):
        cfg.pad_token_id = None
    if getattr(cfg, "is_encoder_decoder", False):
        # Encoder-decoder models (T5, BART) are neither: the importer must refuse them.
        row["kind"] = "encoder-decoder"
        return row
    signal.alarm(secs)
    try:
        with torch.device("meta"):
            model = cls._from_config(cfg)
        model.eval()
        row["params"] = sum(p.numel() for p in model.parameters())
        exp_total, active = expert_counts(model, model.config)
        if exp_total:
            row["expert_params"] = exp_total
            if active is not None:
                row["active_params"] = row["params"] - exp_total + active
        row["modules"] = children_breakdown(model)
        try:
            with torch.no_grad():
                c = cache_layout(model, kind)
            row["kv_bytes_per_token_fp16"] = 2 * c["kv_elements_per_token"]
            row["cache_layers"] = c["layers"]
        except Exception as e:  # noqa: BLE001 - the row says what failed
            row["cache_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    finally:
        signal.alarm(0)
    return row


def config_dict(cfg):
    d = json.loads(cfg.to_json_string(use_diff=False))
    d.pop("transformers_version", None)
    return d


def quiet():
    warnings.filterwarnings("ignore")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()


def run_defaults(only, secs):
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    table = kinds()
    for t in sorted(table):
        if only and t not in only:
            continue
        kind, cls_name = table[t]
        row = {"model_type": t, "source": "default config"}
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                cfg = CONFIG_MAPPING[t]()
                row["config"] = config_dict(cfg)
                row.update(measure(cfg, kind, cls_name, secs))
        except Exception as e:  # noqa: BLE001
            row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
        yield row


def config_of_architecture(path):
    """A config whose model_type transformers does not ship but whose `architectures` names a
    class it does, read with that class's config. Kimi K2 is the case: its model_type is
    `kimi_k2` (with remote code) for a `DeepseekV3ForCausalLM`, and its deploy guide (GitHub
    MoonshotAI/Kimi-K2, docs/deploy_guidance.md) says the weights run as `deepseek_v3`."""
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    archs = d.get("architectures") or []
    if not archs:
        raise ValueError(f"{path}: transformers does not know model_type {d.get('model_type')}")
    return model_class(archs[0]).config_class.from_dict(d)


def tie_as_written(cfg, path):
    """A composite config (text_config inside) that does not say `tie_word_embeddings` and was
    written by transformers 4 ties as its text config says: transformers 4 read
    `config.get_text_config(decoder=True).tie_word_embeddings` (modeling_utils.py
    `PreTrainedModel.tie_weights`), and its checkpoints hold the head accordingly. transformers 5
    reads the wrapper's own flag instead, whose class default can differ (Mistral3Config ties,
    MistralConfig does not), but when loading such a checkpoint it does not tie a head stored
    beside the embedding (modeling_utils.py `tie_weights`: "both are present in the checkpoints
    with different values, so we will NOT tie them"). Built from the config alone, the model
    is given the flag the loaded one ends up with (the importer's rule: hf_vision.rs
    `Wrapper::tied`)."""
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    text = cfg.get_text_config(decoder=True)
    if text is cfg or "tie_word_embeddings" in d:
        return
    major = str(d.get("transformers_version", "0")).split(".")[0]
    if major.isdigit() and int(major) >= 5:
        return
    cfg.tie_word_embeddings = bool(text.tie_word_embeddings)


def run_configs(only, secs):
    from transformers import AutoConfig

    table = kinds()
    folder = os.path.join(ROOT, "tests", "data", "configs")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json") or (only and name[:-5] not in only):
            continue
        path = os.path.join(folder, name)
        row = {"file": f"tests/data/configs/{name}"}
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                try:
                    cfg = AutoConfig.from_pretrained(path, trust_remote_code=False)
                except ValueError:
                    cfg = config_of_architecture(path)
                tie_as_written(cfg, path)
                row["model_type"] = cfg.model_type
                kind, default_cls = table.get(cfg.model_type, ("decoder", None))
                archs = [a for a in (cfg.architectures or []) if a]
                cls_name = archs[0] if archs else default_cls
                if kind == "decoder" and default_cls and "ForCausalLM" not in (cls_name or ""):
                    cls_name = default_cls
                row.update(measure(cfg, kind, cls_name, secs))
        except Exception as e:  # noqa: BLE001
            row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
        yield row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["defaults", "configs"])
    ap.add_argument("--only", default="", help="comma-separated model types (or config names)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per model")
    a = ap.parse_args()
    quiet()
    signal.signal(signal.SIGALRM, alarm)
    only = set(filter(None, a.only.split(",")))
    rows = run_defaults(only, a.timeout) if a.what == "defaults" else run_configs(only, a.timeout)
    for row in rows:
        print(json.dumps(row, sort_keys=True), flush=True)


if __name__ == "__main__":
    sys.exit(main())
