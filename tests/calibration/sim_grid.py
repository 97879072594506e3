#!/usr/bin/env python3
"""The simulated training grid (issue 14): workload files across model families, precisions,
optimizers, checkpointing, attention, LoRA targets and ranks, batch and sequence length, and
their rows from `fake_train.py` (the real transformers/peft/torch step on fake tensors).

  sim_grid.py --write            (re)writes tests/calibration/simgrid/*.toml from GRID below
  sim_grid.py --run [--jobs N]   simulates every file into tests/data/simulated-train-grid.jsonl
  sim_grid.py --run --missing    simulates only the files that have no row yet (keeps the others)

`--run` needs `VRAM_DOCTOR_BIN` (the `vram-doctor` binary: fake_train.py resolves each file with
`plan --print-resolved`).

Models are the Hugging Face config.json copies of tests/data/configs/, built at full size with
random weights (memory does not depend on the values). The families cover tied embeddings
(Llama 3.2 1B, Qwen2.5 0.5B, Gemma 3 1B) and untied ones (Qwen3 8B, Mistral 7B, Phi-3 mini),
sliding-window attention (Gemma 2/3, Mistral), soft-capped logits (Gemma 2, eager attention only
in transformers), fused projections (Phi-3 `qkv_proj` / `gate_up_proj`) and mixtures of experts
(Mixtral 8x7B top-2; Qwen1.5-MoE with a shared expert). MoE rows use transformers' default
experts implementation (`grouped_mm`, integrations/moe.py), whose buffers do not depend on the
routing; their LoRA rows adapt the attention projections only (the experts are 3-D parameters,
not linears PEFT can target by name).
"""
import argparse
import json
import os
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GRID_DIR = os.path.join(HERE, "simgrid")
OUT = os.path.join(REPO, "tests", "data", "simulated-train-grid.jsonl")

# short name -> (config.json under tests/data/configs, attention transformers supports for it)
MODELS = {
    "llama1b": ("llama-3.2-1b", "sdpa"),
    "qwen05b": ("qwen2.5-0.5b", "sdpa"),
    "gemma3-1b": ("gemma-3-1b-it", "sdpa"),
    "qwen3-8b": ("qwen3-8b", "sdpa"),
    "mistral7b": ("mistral-7b-v0.1", "sdpa"),
    "phi3mini": ("phi-3-mini-4k-instruct", "sdpa"),
    "gemma2-9b": ("gemma-2-9b", "eager"),
    "mixtral": ("mixtral-8x7b-v0.1", "sdpa"),
    "qwen15moe": ("qwen1.5-moe-a2.7b", "sdpa"),
}
SMALL = ("llama1b", "qwen05b", "gemma3-1b")
MOE = ("mixtral", "qwen15moe")


def run_fields(method="full", precision="bf16-mixed", optimizer="adamw", ckpt="none", batch=1,
               seq=1024, rank=16, targets="all-linear", accum=1, attention=None, step="foreach",
               in_bwd=False, act_offload=False, paged=False):
    return dict(method=method, precision=precision, optimizer=optimizer, checkpointing=ckpt,
                batch=batch, seq=seq, lora_rank=rank, lora_targets=targets, grad_accum=accum,
                attention=attention, optimizer_step=step, optimizer_in_bwd=in_bwd,
                activation_offload=act_offload, paged_optimizer=paged)


def grid():
    """(name, model, run fields) of every workload."""
    rows = []

    def add(model, **kw):
        f = run_fields(**kw)
        if f["attention"] is None:
            f["attention"] = MODELS[model][1]
        if model in MOE and f["method"] == "lora" and f["lora_targets"] == "all-linear":
            f["lora_targets"] = "attention"
        parts = [model, f["method"]]
        if f["method"] == "lora":
            parts.append(f"r{f['lora_rank']}-{f['lora_targets']}")
        parts += [f["precision"].replace("-", ""), f["optimizer"].replace("-", "")]
        if f["optimizer_step"] != "foreach":
            parts.append(f["optimizer_step"].replace("-", ""))
        if f["optimizer_in_bwd"]:
            parts.append("inbwd")
        if f["activation_offload"]:
            parts.append("actoff")
        if f["paged_optimizer"]:
            parts.append("paged")
        if f["checkpointing"] != "none":
            parts.append("ckpt")
        if f["attention"] != MODELS[model][1]:
            parts.append(f["attention"])
        if f["grad_accum"] > 1:
            parts.append(f"accum{f['grad_accum']}")
        parts.append(f"b{f['batch']}-s{f['seq']}")
        name = "sim-" + "-".join(parts)
        if name not in {r[0] for r in rows}:
            rows.append((name, model, f))

    # Every family: the common recipes.
    for m in MODELS:
        add(m)
        add(m, ckpt="full", batch=2, seq=2048)
        add(m, precision="bf16", seq=2048)
        add(m, optimizer="adamw-8bit", ckpt="full", seq=2048)
        add(m, method="lora", seq=2048)
        add(m, method="lora", ckpt="full", batch=4, seq=2048)
        add(m, method="lora", rank=64, targets="attention", seq=1024, precision="bf16")
    # Small models: sweeps of sequence, batch, attention, optimizer, rank, targets, accumulation.
    for m in SMALL:
        for seq in (512, 4096, 8192):
            add(m, ckpt="full", seq=seq)
            add(m, method="lora", ckpt="full", seq=seq)
        for batch in (4, 8):
            add(m, batch=batch, seq=1024)
            add(m, method="lora", batch=batch, seq=1024)
        if MODELS[m][1] == "sdpa":
            add(m, attention="eager", seq=1024)
            add(m, method="lora", attention="eager", batch=2, seq=1024)
        for opt in ("adafactor", "sgd", "adamw-8bit"):
            add(m, optimizer=opt, batch=2, seq=1024)
        add(m, precision="fp32", batch=2, seq=512)
        add(m, precision="fp32", optimizer="sgd", seq=512)
        add(m, method="lora", rank=8, targets="attention", ckpt="full", batch=2, seq=2048, precision="fp32")
        for rank, targets in ((4, "qv"), (128, "all-linear"), (256, "attention")):
            add(m, method="lora", rank=rank, targets=targets, batch=2, seq=1024)
        add(m, accum=4, batch=2, seq=1024)
        add(m, method="lora", accum=4, batch=2, seq=1024)
        # Checkpointing with a small optimizer state: the end of the forward (autocast's cache
        # of 16-bit weight copies, gradients of earlier micro-batches) can be the peak.
        add(m, ckpt="full", accum=4, optimizer="adafactor", batch=2, seq=1024)
        add(m, ckpt="full", optimizer="sgd", batch=1, seq=2048)
        add(m, ckpt="full", accum=2, optimizer="adamw-8bit", batch=1, seq=1024)
    # How the optimizer steps (issue 14 class 5): torch.optim's foreach / fused / for-loop AdamW,
    # and torchtune's optimizer step in backward, full and LoRA, with and without checkpointing.
    # Short sequences under checkpointing, where the optimizer step is the peak.
    for m in ("llama1b", "qwen3-8b"):
        for step in ("fused", "for-loop"):
            add(m, step=step, ckpt="full", seq=256)
        add(m, in_bwd=True, ckpt="full", seq=256)
        add(m, in_bwd=True, seq=1024)
        add(m, in_bwd=True, optimizer="adamw-8bit", ckpt="full", seq=256)
        add(m, method="lora", in_bwd=True, ckpt="full", seq=1024)
    # Activation offloading (torchtune / TRL, full checkpointing only): LoRA at long sequences,
    # where the layer inputs count, with gradient accumulation; full fine-tuning with the step in
    # backward (otherwise the optimizer step is the peak, which offloading does not change).
    for m in ("llama1b", "qwen3-8b"):
        add(m, act_offload=True, ckpt="full", batch=2, seq=2048)
        add(m, method="lora", act_offload=True, ckpt="full", seq=8192, accum=2)
        add(m, act_offload=True, ckpt="full", seq=2048, in_bwd=True)
        add(m, method="lora", act_offload=True, ckpt="full", batch=2, seq=2048)
    # bitsandbytes' paged optimizers (states of tensors >= 1e5 elements outside the allocator):
    # 8-bit and 32-bit AdamW, full fine-tuning (every matrix paged) and LoRA (rank 16 on Llama
    # 3.2 1B's 2048-wide attention: lora_A 16 x 2048 is under 1e5, the MLP's are not).
    for m in ("llama1b", "qwen3-8b"):
        add(m, optimizer="adamw-8bit", paged=True, ckpt="full", seq=2048)
        add(m, method="lora", paged=True, ckpt="full", batch=2, seq=2048)
    add("llama1b", paged=True, precision="bf16", seq=1024)
    add("llama1b", method="lora", rank=64, targets="attention", paged=True, seq=1024)
    # Larger models at longer sequences and batches.
    for m in ("qwen3-8b", "phi3mini"):
        add(m, ckpt="full", batch=8, seq=4096)
        add(m, method="lora", ckpt="full", batch=1, seq=4096)
    return [r for r in rows if not (r[1] == "phi3mini" and r[2]["lora_targets"] == "qv" and r[2]["method"] == "lora")]


def toml(name, model, f):
    cfg = MODELS[model][0]
    lines = [f"# Simulated grid workload (tests/calibration/sim_grid.py): {name}", "[gpu]",
             'preset = "h100-80gb"   # the simulation does not depend on it', "", "[model]",
             f'hf_config = "../../data/configs/{cfg}.json"', "", "[run]", 'task = "training"',
             'engine = "transformers"', f'method = "{f["method"]}"', f'precision = "{f["precision"]}"',
             f'optimizer = "{f["optimizer"]}"', f'checkpointing = "{f["checkpointing"]}"',
             f'attention = "{f["attention"]}"']
    if f["method"] == "lora":
        lines += [f'lora_rank = {f["lora_rank"]}', f'lora_targets = "{f["lora_targets"]}"']
    lines += [f'batch = {f["batch"]}', f'seq = {f["seq"]}']
    if f["grad_accum"] > 1:
        lines.append(f'grad_accum = {f["grad_accum"]}')
    if f["optimizer_step"] != "foreach":
        lines.append(f'optimizer_step = "{f["optimizer_step"]}"')
    if f["optimizer_in_bwd"]:
        lines.append("optimizer_in_bwd = true")
    if f["activation_offload"]:
        lines.append("activation_offload = true")
    if f["paged_optimizer"]:
        lines.append("paged_optimizer = true")
    return "\n".join(lines) + "\n"


def write():
    os.makedirs(GRID_DIR, exist_ok=True)
    want = {}
    for name, model, f in grid():
        want[name[len("sim-"):] + ".toml"] = toml(name, model, f)
    for old in os.listdir(GRID_DIR):
        if old.endswith(".toml") and old not in want:
            os.remove(os.path.join(GRID_DIR, old))
    for fname, text in want.items():
        with open(os.path.join(GRID_DIR, fname), "w") as fh:
            fh.write(text)
    print(f"{len(want)} workload files in {os.path.relpath(GRID_DIR, REPO)}")


def simulate(paths):
    """Runs fake_train.py once over `paths` (one process: the imports cost more than a step);
    yields (path, row) as each row is printed, (path, None) for a file that gave none."""
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_train.py"), *paths], cwd=REPO,
                         stdout=subprocess.PIPE, text=True)
    by_file = {os.path.relpath(f, REPO): f for f in paths}
    done = set()
    for line in p.stdout:
        if line.startswith("{"):
            row = json.loads(line)
            path = by_file[row["extras"]["workload_file"]]
            done.add(path)
            yield path, row
    p.wait()
    for f in paths:
        if f not in done:
            yield f, None


def _committed():
    """The rows already in OUT, by workload file (absolute path)."""
    if not os.path.isfile(OUT):
        return {}
    with open(OUT) as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return {os.path.join(REPO, r["extras"]["workload_file"]): r for r in rows}


def _write(rows, files):
    tmp = OUT + ".tmp"
    with open(tmp, "w") as fh:
        fh.writelines(json.dumps(rows[p]) + "\n" for p in files if p in rows)
    os.replace(tmp, OUT)


def run(jobs, missing):
    files = sorted(os.path.join(GRID_DIR, f) for f in os.listdir(GRID_DIR) if f.endswith(".toml"))
    rows, failed = (_committed() if missing else {}), 0
    # The small models first: a run cut short has rows of every kind.
    todo = sorted((f for f in files if f not in rows),
                  key=lambda f: (not any(os.path.basename(f).startswith(m + "-") for m in SMALL), f))
    lock = threading.Lock()

    def worker(chunk):
        nonlocal failed
        for path, row in simulate(chunk):
            with lock:
                if row is None:
                    failed += 1
                    print(f"{os.path.basename(path)}: no row (see fake_train.py's message)", file=sys.stderr)
                    continue
                rows[path] = row
                print(f"{row['id']}: {row['measured_gib']:.3f} GiB", file=sys.stderr, flush=True)
                _write(rows, files)  # a run cut short keeps what it simulated (resume with --missing)

    threads = [threading.Thread(target=worker, args=(todo[i::jobs],)) for i in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _write(rows, files)
    print(f"{len(rows)} rows in {os.path.relpath(OUT, REPO)}, {failed} failed", file=sys.stderr)
    return 1 if failed else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--run", action="store_true")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--missing", action="store_true")
    a = ap.parse_args(argv)
    if not (a.write or a.run):
        ap.error("give --write and/or --run")
    if a.write:
        write()
    return run(a.jobs, a.missing) if a.run else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
