#!/usr/bin/env python3
"""Simulated training measurements: the real transformers/peft/torch training step of a
calibration workload file, run on PyTorch fake tensors (issue 14).

Every tensor is a `FakeTensor` (shape, dtype, strides; no memory), so a 70B step runs on a laptop.
A `TorchDispatchMode` sees every op's outputs; each output's untyped storage is counted once,
rounded up to 512 B (`kMinBlockSize`, c10/cuda/CUDACachingAllocator.cpp `round_size`), and
un-counted when the storage dies (`weakref.finalize`). The running sum is what
`torch.cuda.memory_allocated()` reports; its maximum over the second optimizer step (states
already allocated) is the row's `peak.tensors_bytes`. Method after
/work/shared/research/fake_tensor_memory.md.

Not visible to this counter (documented, not modelled here): memory allocated inside kernels
(cuBLAS workspace; flash-attention backward's fp32 `dq_accum`), bitsandbytes 4-bit weights
(`Params4bit` cannot wrap a FakeTensor), the CUDA context. Workloads that need them (`qlora`)
are refused with exit status 2, never simulated wrongly. bitsandbytes' 8-bit AdamW runs for real
(its state tensors and its update op's fake kernel) when bitsandbytes is importable; without it
`adamw-8bit` rows are refused the same way. Its paged variants (`paged_optimizer`) keep the
states of tensors of at least 1e5 elements in CUDA managed memory, which `memory_allocated()`
does not count: those state buffers are left out of the count (`paged_state_buffers`); the
driver's eviction of managed memory to host RAM is not simulated (it depends on the card).
Attention runs PyTorch's CPU path for scaled_dot_product_attention (fake *cpu* tensors), not
the kernel a GPU would pick (flash or memory-efficient attention, whose saved tensors differ),
so the attention part of a row is approximate: the rest of the step is exact.

Usage:
  fake_train.py WORKLOAD.toml... [--out FILE.jsonl] [--vram-doctor BIN]
                                                        simulate, one JSON row per workload (each
                                                        file resolved by `BIN plan --print-resolved`)
  fake_train.py --self-check                            fake vs real CPU bytes on a tiny Llama
"""
import argparse
import contextlib
import importlib.util
import json
import os
import sys
import weakref

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402

import plan  # noqa: E402
import workload  # noqa: E402

BLOCK = 512  # kMinBlockSize, c10/cuda/CUDACachingAllocator.cpp


def _key(t):
    s = t.untyped_storage()
    return id(s) if not hasattr(s, "_cdata") else s._cdata


def _round(n):
    return max(BLOCK, (n + BLOCK - 1) // BLOCK * BLOCK) if n else 0


class LiveBytes(TorchDispatchMode):
    """Live storage bytes as the caching allocator would count them (allocated, not reserved).

    Each storage is tagged with the phase that created it (`phase`: forward, logits — the ops from
    the LM head on, backward, step); at the peak the live storages are grouped into the
    components of `COMPONENTS` (see `components`)."""

    def __init__(self):
        super().__init__()
        self.seen = {}  # storage key -> (rounded bytes, creating phase, op)
        self.live = 0
        self.peak = 0
        self.phase = "before"
        self.peak_phase = None
        self.at_peak = None  # {key: (bytes, phase, op)} when the peak was last reached
        self._rising = False
        self.paused = False  # host-side tensors (activation offloading) are not counted
        self.managed = set()  # storages in CUDA managed memory (paged optimizer states)

    def register(self, t, op="input"):
        if not torch.is_tensor(t) or self.paused:
            return
        s = t.untyped_storage()
        key = _key(t)
        if key in self.seen or key in self.managed:
            return
        n = _round(s.nbytes())
        self.seen[key] = (n, self.phase, op)
        self.live += n
        if self.live > self.peak:
            self.peak = self.live
            self.peak_phase = self.phase
            self._rising = True
        weakref.finalize(s, self._free, key, n)

    def _snapshot(self):
        # Called just before the first free after a new peak: the live set is the peak's.
        if self._rising and self.live == self.peak:
            self.at_peak = dict(self.seen)
        self._rising = False

    def _free(self, key, n):
        self._snapshot()
        self.seen.pop(key, None)
        self.live -= n

    def tag(self, t, what):
        """Names what a live storage holds (weights, gradients, optimizer_states)."""
        key = _key(t)
        if key in self.seen:
            n, _tag, op = self.seen[key]
            self.seen[key] = (n, what, op)

    def reset_peak(self):
        self.peak = self.live
        self.at_peak = dict(self.seen)
        self._rising = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            self.register(t, str(func))
        return out


# Components of the peak, in the engine's breakdown terms (src/memory/training.rs): storages
# tagged as what they hold (weights, gradients, optimizer states), the rest by the phase that
# created them: forward (saved activations), logits (the LM head's output and the loss),
# backward (gradients of activations, recomputed layers), step (the optimizer's temporaries).
COMPONENTS = {"weights": "weights", "gradients": "gradients", "optimizer_states": "optimizer_states",
              "forward": "activations", "logits": "logits_loss", "backward": "backward_temporaries",
              "step": "step_temporaries", "before": "inputs", "after": "step_temporaries"}


def components(counter):
    """Bytes live at the peak by component (see COMPONENTS)."""
    counter._snapshot()
    out = dict.fromkeys(COMPONENTS.values(), 0)
    for n, tag, _op in (counter.at_peak or {}).values():
        out[COMPONENTS[tag]] += n
    return out


def largest(counter, k):
    """The k largest (component, creating op, bytes) groups live at the peak, for --top."""
    counter._snapshot()
    groups = {}
    for n, tag, op in (counter.at_peak or {}).values():
        g = groups.setdefault((COMPONENTS[tag], op, n), [0])
        g[0] += 1
    return sorted(((c * n, comp, op, n, c) for (comp, op, n), [c] in groups.items()), reverse=True)[:k]


def unsupported(w):
    """The features this simulator cannot see; a row is refused rather than simulated wrongly."""
    r = w.run
    if r.method == "qlora" or r.weights in ("int8", "nf4"):
        return "bitsandbytes quantized weights (Params4bit cannot wrap a fake tensor)"
    if (r.optimizer == "adamw-8bit" or r.paged_optimizer) and importlib.util.find_spec("bitsandbytes") is None:
        return "bitsandbytes is not installed (8-bit or paged optimizer states)"
    if r.paged_optimizer and r.optimizer not in ("adamw", "adamw-8bit"):
        return f"a paged {r.optimizer} (only bitsandbytes' paged AdamW and AdamW 8-bit are simulated)"
    if r.precision == "fp16-mixed":
        return "fp16 autocast on the CPU device (GradScaler needs CUDA)"
    if r.torch_compile:
        return "torch.compile (AOTAutograd's partitioner decides what is saved; not simulated)"
    if r.packing or (r.avg_seq is not None and r.avg_seq < r.seq and r.batch > 1):
        # The simulated batch is one unpadded sample per row; a packed or padded one has
        # transformers' SDPA mask, whose CUDA kernel (memory-efficient attention, its bias
        # saved per layer) the CPU device does not run.
        return "sequence packing or padded rows (the simulated batch is one unpadded sample per row)"
    return None


# Fused projections (Phi-3's `qkv_proj` and `gate_up_proj`, modeling_phi3.py): the module a
# separate projection's name lives in when the model has no module of that name.
FUSED = {"q_proj": "qkv_proj", "k_proj": "qkv_proj", "v_proj": "qkv_proj",
         "gate_proj": "gate_up_proj", "up_proj": "gate_up_proj"}


def lora_modules(model, targets):
    """PEFT `target_modules` for the workload's `lora_targets` on this model: the separate
    projections' names, or the fused module holding them. `qv` on a fused q/k/v is refused."""
    names = {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    out = []
    for want in plan.lora_module_names(targets):
        got = want if want in names else FUSED.get(want)
        if got not in names:
            continue  # e.g. the MLP of a MoE model: its experts are 3-D parameters, not linears
        if got != want and targets in ("qv", "default"):
            raise ValueError(f"lora_targets = 'qv' on a fused {got}: not expressible")
        if got not in out:
            out.append(got)
    return out


def _build(w, fake):
    from transformers import AutoConfig, AutoModelForCausalLM
    r = w.run
    cfg = AutoConfig.for_model(w.model.model_type, **w.model.config)
    cfg.use_cache = False
    cfg.pad_token_id = 0
    if r.method == "full":
        base = {"bf16": torch.bfloat16}.get(r.precision, torch.float32)
    else:
        base = torch.float32 if r.precision == "fp32" else torch.bfloat16
    old = torch.get_default_dtype()
    torch.set_default_dtype(base)
    try:
        m = AutoModelForCausalLM.from_config(cfg, attn_implementation=r.attention)
    finally:
        torch.set_default_dtype(old)
    if r.method == "lora":
        from peft import LoraConfig, get_peft_model
        lcfg = LoraConfig(r=r.lora_rank, lora_alpha=2 * r.lora_rank, lora_dropout=0.0,
                          target_modules=lora_modules(m, r.lora_targets), task_type="CAUSAL_LM")
        m = get_peft_model(m, lcfg, autocast_adapter_dtype=r.precision != "bf16")
    if r.checkpointing == "full":
        m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    m.train()
    return m


def _optimizer(r, params):
    if r.paged_optimizer:
        # transformers' paged_adamw_32bit / paged_adamw_8bit (trainer_optimizer.py
        # `_get_bitsandbytes_optimizer`: bitsandbytes AdamW with is_paged=True).
        import bitsandbytes as bnb
        return bnb.optim.AdamW(params, lr=1e-5, optim_bits=8 if r.optimizer == "adamw-8bit" else 32,
                               is_paged=True)
    if r.optimizer == "sgd":
        return torch.optim.SGD(params, lr=1e-4, momentum=0.9, foreach=True)
    if r.optimizer == "adafactor":
        from transformers.optimization import Adafactor
        return Adafactor(params, lr=1e-4, scale_parameter=False, relative_step=False, warmup_init=False)
    if r.optimizer == "adamw-8bit":
        import bitsandbytes as bnb
        return bnb.optim.AdamW8bit(params, lr=1e-5)
    # CUDA's default is foreach (torch/optim/optimizer.py _default_to_fused_or_foreach); the CPU's is
    # the loop, so the workload's choice is always passed.
    step = {"foreach": {"foreach": True}, "fused": {"fused": True}, "for-loop": {"foreach": False}}
    return torch.optim.AdamW(params, lr=1e-5, **step[r.optimizer_step])


def paged_state_buffers(opt, counter):
    """bitsandbytes' paged state buffers: `Optimizer8bit.get_state_buffer` makes the states of a
    tensor of at least 1e5 elements with `F.get_paged` (cudaMallocManaged, outside PyTorch's
    allocator) when `is_paged`; on a CPU (fake) tensor it falls back to `torch.zeros_like`, which
    is made here without being counted, and its storage is never counted afterwards."""
    plain = opt.get_state_buffer

    def get_state_buffer(p, dtype=torch.float32):
        if p.numel() < 1e5:
            return plain(p, dtype=dtype)
        counter.paused = True
        try:
            buf = plain(p, dtype=dtype)
        finally:
            counter.paused = False
        counter.managed.add(_key(buf))
        return buf
    opt.get_state_buffer = get_state_buffer


class InBackward:
    """torchtune's `optimizer_in_bwd` (training/memory.py `register_optim_in_bwd_hooks`): one
    optimizer per parameter, stepped and zeroed by the parameter's post-accumulate-grad hook."""

    def __init__(self, r, params, on_grad):
        self.optims = {p: _optimizer(r, [p]) for p in params}

        def hook(p):
            on_grad(p)
            self.optims[p].step()
            self.optims[p].zero_grad(set_to_none=True)
        for p in params:
            p.register_post_accumulate_grad_hook(hook)

    @property
    def state(self):
        return {k: v for o in self.optims.values() for k, v in o.state.items()}

    def step(self):
        pass

    def zero_grad(self, set_to_none=True):
        pass


class OffloadActivations(torch.autograd.graph.saved_tensors_hooks):
    """The memory rule of torchtune's activation offloading with streams (the default;
    training/_activation_offloading.py `OffloadActivations`, `pack_tensor` and
    `unpack_tensor_with_streams`), which TRL's `activation_offloading` copies
    (trl/models/activation_offloading.py) and wraps around the whole training step (SFTTrainer
    `training_step`): every tensor saved for backward of at least `min_offload_size` = 1024 B that
    is not a parameter or buffer is copied to host memory; the device copy stays alive in a forward
    stash until `max_fwd_stash_size` = 5 further tensors are saved (the copy's event is waited on),
    and the stash is emptied after the first backward node. In backward an offloaded tensor is
    brought back (unless still stashed) and kept until the next autograd node's hook. The output
    head runs under `NoOpManager` (`get_act_offloading_ctx_manager`): its saved tensors stay.
    Host copies are not counted (`LiveBytes.paused`)."""

    MIN_BYTES = 1024
    STASH = 5

    def __init__(self, counter, head):
        self.tracker = {}  # id -> (tensor, offloaded)
        self.fwd_stash = {}  # id -> device tensor until its copy is done
        self.bwd_stash = {}  # id -> tensor brought back, until the next node's hook
        self.next_id = 0
        self.node = None
        noop = torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
        head.register_forward_pre_hook(lambda *a: noop.__enter__())
        head.register_forward_hook(lambda *a: noop.__exit__(None, None, None), always_call=True)

        def pack(t):
            self.next_id += 1
            i = self.next_id
            if t.element_size() * t.nelement() < self.MIN_BYTES or isinstance(t, torch.nn.Parameter):
                self.tracker[i] = (t, False)
                return i
            for k in [k for k in self.fwd_stash if k <= i - self.STASH]:
                del self.fwd_stash[k]
            counter.paused = True
            try:
                host = torch.empty_like(t)
            finally:
                counter.paused = False
            self.tracker[i] = (host, True)
            self.fwd_stash[i] = t
            return i

        def unpack(i):
            t, offloaded = self.tracker.pop(i)
            if not offloaded:
                return t
            node = torch._C._current_autograd_node()
            prev = []
            if node is not self.node:
                self.node = node
                prev = list(self.bwd_stash)
            if i in self.fwd_stash:
                t = self.fwd_stash[i]
            else:
                t = t.clone()  # the copy back to the device: counted
                self.bwd_stash[i] = t

            def hook(*_):
                self.fwd_stash.clear()
                for k in prev:
                    self.bwd_stash.pop(k, None)
            node.register_hook(hook)
            return t

        super().__init__(pack, unpack)

    def end_backward(self):
        # torchtune queues `wait_and_del_remaining_references` at the end of autograd.
        self.bwd_stash.clear()
        self.fwd_stash.clear()
        self.node = None


_swap_tensors = torch.utils.swap_tensors


def _swap_fake(t1, t2):
    """nn.Module._apply swaps fake parameters (torch.utils.swap_tensors), which refuses tensors the
    fake-tensor converter holds weak references to; re-pointing the data is equivalent here."""
    from torch._subclasses.fake_tensor import FakeTensor
    if isinstance(t1, FakeTensor) and not t1.grad_fn:
        with torch.no_grad():
            t1.data = t2.data
        return
    _swap_tensors(t1, t2)


def step_peak(w, fake=True, top=0):
    """Peak live bytes of the second training step, what is live then by component, and the
    phase (forward, logits, backward, step) in which the peak was reached."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    r = w.run
    mode = FakeTensorMode(allow_non_fake_inputs=True) if fake else None
    counter = LiveBytes()
    if mode is not None:
        torch.utils.swap_tensors = _swap_fake
        # transformers treats a FakeTensor as graph tracing (utils/import_utils.py is_tracing) and
        # then builds full 4-D masks a real GPU run does not; the simulated batch has no padding.
        import transformers.masking_utils as mu
        mu.is_tracing = lambda tensor=None: False
        # find_packed_sequence_indices reads data (`.all()`); the simulated batch is one unpacked
        # sequence per row, for which it returns None (its B x S temporaries die before the peak).
        mu.find_packed_sequence_indices = lambda position_ids: None
        if r.optimizer == "adamw-8bit":
            # bitsandbytes builds its quantization maps from data (`create_dynamic_map` reads
            # values) when the optimizer is made: made once for real, outside the fake mode.
            import bitsandbytes.functional as bf
            maps = {s: bf.create_dynamic_map(signed=s) for s in (True, False)}
            bf.create_dynamic_map = lambda signed=True, *a, **k: maps[signed].clone()
        mode.__enter__()
    try:
        m = _build(w, fake)
        for t in list(m.parameters()) + list(m.buffers()):
            counter.register(t)
        trainable = [p for p in m.parameters() if p.requires_grad]
        def on_grad(p):
            counter.tag(p.grad, "gradients")
        opt = InBackward(r, trainable, on_grad) if r.optimizer_in_bwd else _optimizer(r, trainable)
        if r.paged_optimizer:
            for o in (opt.optims.values() if r.optimizer_in_bwd else [opt]):
                paged_state_buffers(o, counter)
        ids = torch.randint(0, w.model.config["vocab_size"], (r.batch, r.seq))
        counter.register(ids)
        mixed = r.precision == "bf16-mixed"
        for t in list(m.parameters()) + list(m.buffers()):
            counter.tag(t, "weights")
        if not r.optimizer_in_bwd:
            for p in trainable:
                p.register_post_accumulate_grad_hook(on_grad)
        head = m.get_output_embeddings()

        def logits_phase(_mod, _args):
            counter.phase = "logits"
        head.register_forward_pre_hook(logits_phase)
        offload = OffloadActivations(counter, head) if r.activation_offload else None
        with counter:
            for _step in range(2):
                counter.reset_peak()
                for _micro in range(r.grad_accum):
                    counter.phase = "forward"
                    with offload or contextlib.nullcontext():
                        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mixed):
                            loss = m(input_ids=ids, labels=ids).loss / r.grad_accum
                        counter.phase = "backward"
                        loss.backward()
                        del loss
                    if offload:
                        offload.end_backward()
                counter.phase = "step"
                opt.step()
                for st in opt.state.values():
                    for v in st.values():
                        if torch.is_tensor(v):
                            counter.tag(v, "optimizer_states")
                counter.phase = "after"
                opt.zero_grad(set_to_none=True)
        if top:
            for total, comp, op, n, c in largest(counter, top):
                print(f"  {total / 2**20:10.1f} MiB  {comp:20} {c:4} x {n / 2**20:9.2f} MiB  {op}", file=sys.stderr)
        return counter.peak, components(counter), counter.peak_phase
    finally:
        if mode is not None:
            mode.__exit__(None, None, None)


def _step_mode(r):
    """How the optimizer steps, in a row's `mode` when it is not the default."""
    return (("" if r.optimizer_step == "foreach" else f" step={r.optimizer_step}") + (" in_bwd" if r.optimizer_in_bwd else "")
            + (" activation_offload" if r.activation_offload else "") + (" paged" if r.paged_optimizer else ""))


def row(w, peak, parts, phase):
    """One row in the reference schema (tests/calibration_dry_run.rs SCHEMA) that
    `vram-doctor accuracy --reference` reads as a harness row."""
    r = w.run
    kind = {"full": "llm_training_full", "lora": "llm_training_lora"}[r.method]
    return {"id": "sim-" + w.stem, "source": "tests/calibration/fake_train.py (fake-tensor simulation)",
            "workload": kind, "model": w.model.name, "arch": None, "dtype": r.precision, "quant": None,
            "batch": r.batch, "seq": r.seq, "mode": f"{r.method} {r.optimizer}{_step_mode(r)} checkpointing={r.checkpointing} attention={r.attention}",
            "extras": {"workload_file": os.path.relpath(w.path, REPO), "compare_with": "peak.tensors_bytes",
                       "dry_run": False, "simulated": True, "model_type": w.model.model_type, "tensors_bytes": peak, "peak_phase": phase,
                       "peak_components": parts, "torch": torch.__version__},
            "measured_gib": round(peak / 2**30, 6),
            "metric": "peak allocated bytes of the second step, 512 B blocks, simulated on fake tensors",
            "notes": "Simulated, not measured: kernel workspaces and the CUDA context are not included."}


def self_check():
    """Tiny Llama: the same step on real CPU tensors and on fake tensors must count the same bytes."""
    w = workload.Workload(path=os.path.join(HERE, "selfcheck.toml"), stem="selfcheck",
                          model=workload.LlmModel.__new__(workload.LlmModel),
                          run=workload.Run(task="training", weights="bf16", batch=2, engine="transformers",
                                           attention="sdpa", seq=128, optimizer="adamw", checkpointing="none",
                                           lora_rank=16, lora_targets="all-linear", grad_accum=1))
    w.model.model_type = "llama"
    w.model.config = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                      "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512,
                      "max_position_embeddings": 256}
    ok = True
    for method, prec in (("full", "fp32"), ("full", "bf16-mixed"), ("lora", "bf16-mixed")):
        w.run.method, w.run.precision, w.run.task = method, prec, "training"
        w.run.batch, w.run.seq = 2, 128
        torch.manual_seed(0)
        real = step_peak(w, fake=False)[0]
        sim = step_peak(w, fake=True)[0]
        print(f"{method:5} {prec:11} real {real} B  fake {sim} B  {'same' if real == sim else 'DIFFERENT'}")
        ok &= real == sim
    return ok


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--out")
    ap.add_argument("--self-check", action="store_true")
    ap.add_argument("--vram-doctor", default=os.environ.get("VRAM_DOCTOR_BIN"), metavar="PATH",
                    help="the planner's binary that resolves each workload file (default: $VRAM_DOCTOR_BIN)")
    ap.add_argument("--top", type=int, default=0, help="print the N largest groups of tensors live at the peak")
    a = ap.parse_args(argv)
    if a.self_check:
        return 0 if self_check() else 1
    rows, status = [], 0
    for f in workload.collect(a.files):
        try:
            w = workload.load(f, a.vram_doctor, workload.SIMULATED_FAMILIES,
                              warn=lambda m: print(f"warning: {m}", file=sys.stderr))
        except workload.WorkloadError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if w.run.task != "training":
            continue
        why = unsupported(w)
        if why:
            print(f"{f}: not simulated: {why}", file=sys.stderr)
            status = 2
            continue
        try:
            rows.append(row(w, *step_peak(w, top=a.top)))
        except Exception as e:  # noqa: BLE001 - one workload's failure is reported, the rest run
            print(f"{f}: failed: {type(e).__name__}: {e}", file=sys.stderr)
            status = 1
            continue
        print(json.dumps(rows[-1]), flush=True)
    if a.out:
        tmp = a.out + ".tmp"
        with open(tmp, "w") as fh:
            fh.writelines(json.dumps(x) + "\n" for x in rows)
        os.replace(tmp, a.out)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
