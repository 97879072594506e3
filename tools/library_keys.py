#!/usr/bin/env python3
"""The names torchtune's recipes and Unsloth's loaders read, taken from their source with `ast`.

    python3 tools/library_keys.py TORCHTUNE_TREE UNSLOTH_TREE > tests/data/library-keys.json

Each TREE is a checkout (or `git archive` export) of pytorch/torchtune and unslothai/unsloth. The
file it writes is what `tests/export.rs` checks the torchtune and Unsloth exports against, so
that no export names a key the library does not read:

- torchtune `recipes/<recipe>.py`: every top-level config key a recipe reads (`cfg.key`,
  `cfg.get("key", ...)`, `cfg["key"]`);
- torchtune `torchtune/models/*/_model_builders.py`: every model and tokenizer builder (a `def`,
  a `functools.partial` of one, or an alias) with the keyword arguments it takes (a partial's
  are its target's, less those it binds) and the sizes it builds (vocab_size, num_layers, ...);
- the `_component_` paths of the losses and optimizers torchtune's own configs use
  (`recipes/configs/**/*.yaml`);
- Unsloth `FastLanguageModel.from_pretrained` (unsloth/models/loader.py) and
  `FastLlamaModel.get_peft_model` (unsloth/models/llama.py) keyword arguments.
"""

import ast
import json
import pathlib
import re
import subprocess
import sys

RECIPES = [
    "lora_finetune_single_device",
    "lora_finetune_distributed",
    "full_finetune_single_device",
    "full_finetune_distributed",
]


def recipe_keys(path):
    tree = ast.parse(path.read_text())
    keys = set()
    for node in ast.walk(tree):
        # cfg.key
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "cfg":
            if node.attr not in ("get",):
                keys.add(node.attr)
        # cfg.get("key", ...)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "cfg"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            keys.add(node.args[0].value)
        # cfg["key"]
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "cfg"
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            keys.add(node.slice.value)
    return sorted(keys)


def function_params(fn):
    a = fn.args
    return [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]


ARCH_KEYS = ("vocab_size", "num_layers", "num_heads", "num_kv_heads", "embed_dim", "intermediate_dim")


def arch(fn):
    """The integer sizes a builder passes to its component builder (`return llama3_1(...)`)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
            return {
                k.arg: k.value.value
                for k in node.value.keywords
                if k.arg in ARCH_KEYS and isinstance(k.value, ast.Constant) and isinstance(k.value.value, int)
            }
    return {}


def builders(root):
    """{module.builder: {params, arch}} for every builder of torchtune/models/*/_model_builders.py:
    its keyword arguments and the sizes it builds."""
    defs = {}
    pending = []  # (module, name, target, bound keywords)
    for f in sorted((root / "torchtune" / "models").glob("*/_model_builders.py")):
        module = "torchtune.models." + f.parent.name
        tree = ast.parse(f.read_text())
        imported = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                for n in node.names:
                    imported[n.asname or n.name] = node.module.replace("._model_builders", "")
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                defs[f"{module}.{node.name}"] = {"params": function_params(node), "arch": arch(node)}
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                v = node.value
                if isinstance(v, ast.Call) and getattr(v.func, "id", None) == "partial" and v.args:
                    target = v.args[0].id
                    bound = [k.arg for k in v.keywords]
                    pending.append((module, name, imported.get(target, module), target, bound))
                elif isinstance(v, ast.Name):
                    pending.append((module, name, imported.get(v.id, module), v.id, []))
    for module, name, tmod, target, bound in pending:
        t = defs.get(f"{tmod}.{target}")
        if t is not None:
            defs[f"{module}.{name}"] = {"params": [p for p in t["params"] if p not in bound], "arch": t["arch"]}
    return dict(sorted(defs.items()))


def component_paths(root, kind):
    out = set()
    for f in (root / "recipes" / "configs").rglob("*.yaml"):
        text = f.read_text()
        for m in re.finditer(rf"^{kind}:\s*\n\s+_component_:\s*(\S+)", text, re.M):
            out.add(m.group(1))
    return sorted(out)


def method_params(path, cls, method):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    return function_params(item)
    raise SystemExit(f"{cls}.{method} not found in {path}")


def head(tree):
    try:
        return subprocess.run(
            ["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return (tree / "COMMIT").read_text().strip() if (tree / "COMMIT").exists() else "unknown"


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    tt, us = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out = {
        "torchtune": {
            "commit": head(tt),
            "recipes": {r: recipe_keys(tt / "recipes" / f"{r}.py") for r in RECIPES},
            "builders": builders(tt),
            "losses": component_paths(tt, "loss"),
            "optimizers": component_paths(tt, "optimizer"),
        },
        "unsloth": {
            "commit": head(us),
            "from_pretrained": method_params(us / "unsloth/models/loader.py", "FastLanguageModel", "from_pretrained"),
            "get_peft_model": method_params(us / "unsloth/models/llama.py", "FastLlamaModel", "get_peft_model"),
        },
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
