#!/usr/bin/env python3
"""The PEFT oracle for `run.lora_targets` (issue 14): PEFT's own trainable-parameter count for a
LoraConfig(target_modules=...) on real configs, the way `vram-doctor` is asked for it.

Each config in tests/data/configs/ is built with transformers on the meta device (no weights, no
memory, no download), `peft.get_peft_model(model, LoraConfig(r=..., target_modules=...))` is
applied, and the row records `get_nb_trainable_parameters()`, the adapted module count, and
which names of a list matched no module (peft/tuners/tuners_utils.py
`check_target_module_exists`: a list entry matches a key equal to it or ending in `.entry`; a
string is `re.fullmatch`ed against the key; "all-linear" is `_maybe_include_all_linear_layers`).
Where PEFT refuses (nothing matched, no default for the model type) the row records its error.

`targets` is written as `vram-doctor plan --lora-targets` takes it: "all-linear", "default"
(target_modules=None: PEFT's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING), a comma list of
names, or a regular expression.

Usage:
  python tools/lora_oracle.py > tests/data/oracle/peft-lora.jsonl
  python tools/lora_oracle.py --only gpt2.json,mixtral-8x7b-v0.1.json   (a sample)
"""

import argparse
import contextlib
import io
import json
import os
import re
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LLAMA = ["all-linear", "default", "q_proj,k_proj,v_proj,o_proj", r".*\.(q|v)_proj",
         "self_attn.o_proj,down_proj", "q_proj,lm_head", r"model\.layers\.(0|1)\.mlp\..*_proj"]
CASES = [
    ("llama-3.1-8b.json", LLAMA + ["q_proj,c_attn", "c_attn"]),
    ("qwen2.5-0.5b.json", ["all-linear", "default", "q_proj,v_proj,gate_proj"]),
    ("mistral-7b-v0.1.json", ["all-linear", "default"]),
    ("gemma-2-9b.json", ["all-linear", "default", "k_proj,o_proj,up_proj"]),
    ("phi-3-mini-4k-instruct.json", ["all-linear", "qkv_proj", "o_proj,gate_up_proj,down_proj", "default"]),
    ("gpt2.json", ["all-linear", "default", "c_attn", "c_attn,c_proj", "c_fc", r".*\.mlp\.c_proj", "q_proj,v_proj"]),
    ("gpt_bigcode-santacoder.json", ["all-linear", "default", "c_attn,c_proj,c_fc"]),
    ("falcon-7b.json", ["all-linear", "default", "query_key_value,dense", "dense_h_to_4h,dense_4h_to_h"]),
    ("falcon-40b.json", ["all-linear", "query_key_value"]),
    ("pythia-160m.json", ["all-linear", "default", "query_key_value,dense,dense_h_to_4h"]),
    ("gpt-neox-20b.json", ["all-linear"]),
    ("mixtral-8x7b-v0.1.json", ["all-linear", "default", "q_proj,k_proj,v_proj,o_proj,w1,w2,w3"]),
    ("qwen1.5-moe-a2.7b.json", ["all-linear", "shared_expert.gate_proj,shared_expert.up_proj,shared_expert.down_proj", "q_proj,v_proj"]),
    ("deepseek-v2-lite.json", ["all-linear", "q_proj,kv_a_proj_with_mqa,kv_b_proj,o_proj", "gate_proj,up_proj,down_proj"]),
    ("deepseek-v3.json", ["all-linear", "q_a_proj,q_b_proj,kv_a_proj_with_mqa,kv_b_proj,o_proj", r".*shared_experts\..*_proj"]),
    ("glm-4.5.json", ["all-linear", "q_proj,k_proj,v_proj,o_proj,shared_experts.down_proj"]),
    ("gpt-oss-20b.json", ["all-linear", "q_proj,k_proj,v_proj,o_proj"]),
]

REGEX_CHARS = set("\\*+?()[]{}|^$")


def peft_value(targets):
    """What LoraConfig(target_modules=...) is given for a `--lora-targets` spelling."""
    if targets == "all-linear":
        return "all-linear"
    if targets == "default":
        return None
    if any(c in REGEX_CHARS for c in targets):
        return targets
    return [t.strip() for t in targets.split(",")]


def build(path):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.from_pretrained(path)
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(cfg)


def expert_names(model):
    """The transformers-4 names PEFT moves onto this model's fused expert parameters."""
    from peft.utils.transformers_weight_conversion import _MODEL_TO_CONVERSION_PATTERN, _MOE_TARGET_MODULE_MAPPING

    base = _MODEL_TO_CONVERSION_PATTERN.get(model.config.model_type)
    return set(_MOE_TARGET_MODULE_MAPPING.get(base, {})) if getattr(model.config, "num_experts", None) or getattr(model.config, "num_local_experts", None) or getattr(model.config, "n_routed_experts", None) else set()


def sorted_sets(message):
    """PEFT names the missing modules as a Python set, whose order changes with the string hash
    seed of each run: written sorted, so a regenerated row compares equal to the committed one."""
    return re.sub(r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", message)


def row(file, targets, r):
    import peft

    path = os.path.join(ROOT, "tests/data/configs", file)
    out = {"file": f"tests/data/configs/{file}", "targets": targets, "r": r}
    value = peft_value(targets)
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        model = build(path)
        try:
            pm = peft.get_peft_model(model, peft.LoraConfig(r=r, lora_alpha=2 * r, target_modules=value))
        except ValueError as e:
            out["peft_error"] = sorted_sets(str(e).splitlines()[0][:200])
            return out
    trainable, _ = pm.get_nb_trainable_parameters()
    keys = [n.removeprefix("base_model.model.") for n, m in pm.named_modules() if hasattr(m, "lora_A") and len(m.lora_A)]
    out["trainable"] = trainable
    out["adapted"] = len(keys)
    if isinstance(value, list):
        moved = expert_names(model)
        out["unmatched"] = [
            t for t in value
            if not any(k == t or k.endswith("." + t) for k in keys)
            and not any(t == o or t.endswith("." + o) for o in moved)
        ]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="comma-separated config file names")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    for file, targets in CASES:
        if only and file not in only:
            continue
        for i, t in enumerate(targets):
            # Two ranks, so that a count proportional to the wrong width cannot pass.
            print(json.dumps(row(file, t, 8 if i % 2 == 0 else 16), sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
