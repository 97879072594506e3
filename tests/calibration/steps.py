"""Builds a workload's model with random weights and runs its step under a memory meter.

The same code runs on a GPU (the measurement) and, at reduced size, on the CPU (the dry run);
every step checks shapes and bookkeeping against plan.py, so a dry run that passes has exercised
the code the GPU run uses. What the CPU cannot do (bitsandbytes kernels) is swapped for the
nearest thing it can, and the swap is listed in the result's `substitutions`.
"""

import contextlib
import importlib.util
import json
import math
import os
import shutil
import threading
import time
import hashlib

import torch

import plan
from workload import LlmModel

TORCH_DTYPE = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


class CheckFailed(AssertionError):
    pass


def check(cond, name, detail, checks):
    if not cond:
        raise CheckFailed(f"{name}: {detail}")
    checks.append(name)


# ---- Memory meter ---------------------------------------------------------------------------

class NvmlSampler:
    """Polls NVML every 5 ms for this process's GPU memory and keeps the maximum since reset().
    Where the container hides our pid from NVML, falls back to the device's used memory minus
    what was used before this process touched CUDA (the result says which)."""

    def __init__(self):
        import pynvml
        self.nv = pynvml
        pynvml.nvmlInit()
        first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(int(first) if first.isdigit() else 0)
        self.baseline = pynvml.nvmlDeviceGetMemoryInfo(self.handle).used
        self.pid = os.getpid()
        self.method = None
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def read(self):
        try:
            procs = self.nv.nvmlDeviceGetComputeRunningProcesses(self.handle)
        except self.nv.NVMLError:
            procs = []
        mine = [p.usedGpuMemory for p in procs if p.pid == self.pid and p.usedGpuMemory]
        if mine:
            self.method = "nvml process (pid match)"
            return mine[0]
        self.method = "nvml device used minus baseline (pid not visible)"
        return max(0, self.nv.nvmlDeviceGetMemoryInfo(self.handle).used - self.baseline)

    def _loop(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self.read())

    def reset(self):
        self.peak = self.read()

    def stop(self):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.read())


def _rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Meter:
    """Per-phase peaks. On CUDA: torch's allocator statistics and the NVML sampler, reset at
    each measured phase. On the CPU: the bytes of the tensors the step keeps (`static`) and RSS."""

    def __init__(self, device):
        self.device = device
        self.phases = {}
        # CPU only: returns the bytes of the tensors the step keeps (set once the model exists)
        self.live = None
        self.noted = 0
        self.nvml = None
        if device == "cuda":
            try:
                self.nvml = NvmlSampler()
            except Exception as e:  # no NVML: process metric missing, the rest still measured
                self.nvml_error = f"{type(e).__name__}: {e}"
            torch.cuda.init()

    def note(self, nbytes):
        """CPU only: bytes live at a moment inside the phase that its end no longer sees."""
        self.noted = max(self.noted, nbytes)

    @contextlib.contextmanager
    def phase(self, name, measured=True):
        self.noted = 0
        if self.device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            if self.nvml:
                self.nvml.reset()
        yield
        if not measured:
            if self.device == "cuda":
                torch.cuda.synchronize()
            return
        if self.device == "cuda":
            torch.cuda.synchronize()
            p = {"max_allocated": torch.cuda.max_memory_allocated(), "max_reserved": torch.cuda.max_memory_reserved()}
            if self.nvml:
                self.nvml.peak = max(self.nvml.peak, self.nvml.read())
                p["process"] = self.nvml.peak
        else:
            live = max(self.noted, self.live() if self.live else 0)
            p = {"max_allocated": live, "max_reserved": live, "process": _rss_bytes()}
        self.phases[name] = p

    def summary(self):
        out = {}
        for key in ("max_allocated", "max_reserved", "process"):
            vals = [p[key] for p in self.phases.values() if p.get(key) is not None]
            out[key] = max(vals) if vals else None
        out["phases_gib"] = {n: {k: plan.gib(v) for k, v in p.items()} for n, p in self.phases.items()}
        if self.nvml:
            self.nvml.stop()
            out["extras"] = {"nvml_method": self.nvml.method}
        elif self.device == "cuda":
            out["extras"] = {"nvml_method": f"unavailable ({getattr(self, 'nvml_error', '')})"}
        return out


def tensor_bytes(tensors):
    """Bytes of distinct storages among `tensors` (tied weights count once)."""
    seen, total = set(), 0
    for t in tensors:
        if t is None or not torch.is_tensor(t):
            continue
        key = (t.untyped_storage().data_ptr(), t.device.type)
        if key in seen:
            continue
        seen.add(key)
        total += t.untyped_storage().nbytes()
    return total


def n_params(module):
    seen, total = set(), 0
    for p in module.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


# ---- Library version differences ------------------------------------------------------------

def _with_dtype(fn, dtype, **kw):
    """transformers 5 calls it `dtype`, 4.x `torch_dtype`."""
    try:
        return fn(dtype=dtype, **kw)
    except TypeError:
        return fn(torch_dtype=dtype, **kw)


@contextlib.contextmanager
def default_dtype(dtype):
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def has_cuda_bnb(device):
    return device == "cuda" and importlib.util.find_spec("bitsandbytes") is not None


# ---- LLMs -----------------------------------------------------------------------------------

def hf_config(model, attention):
    from transformers import AutoConfig
    cfg = AutoConfig.for_model(model.model_type, **model.config)
    cfg.use_cache = True
    cfg.pad_token_id = 0
    return cfg, {"eager": "eager", "sdpa": "sdpa"}[attention]


def llm_meta_params(model):
    """Builds the full-size model on the meta device (no memory) and counts its parameters."""
    from transformers import AutoModelForCausalLM
    cfg, _ = hf_config(model, "sdpa")
    with torch.device("meta"):
        m = AutoModelForCausalLM.from_config(cfg)
    return n_params(m)


def _cached_checkpoint(cfg, attn, workdir, device):
    """Random bf16 weights saved once per architecture, so a quantized load goes through
    `from_pretrained` exactly as a user's does."""
    from transformers import AutoModelForCausalLM
    key = hashlib.sha256(json.dumps(cfg.to_dict(), sort_keys=True, default=str).encode()).hexdigest()[:16]
    path = os.path.join(workdir, f"ckpt-{key}")
    if not os.path.isfile(os.path.join(path, "config.json")):
        with torch.device(device):
            m = _with_dtype(AutoModelForCausalLM.from_config, torch.bfloat16, config=cfg, attn_implementation=attn)
        tmp = path + f".tmp{os.getpid()}"
        m.save_pretrained(tmp)
        del m
        if os.path.isdir(path):
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, path)
        if device == "cuda":
            torch.cuda.empty_cache()
    return path


def build_llm(model, run, device, workdir, meter, res, base_dtype):
    """Loads the model in its weight format; returns it. Quantized weights are saved once as
    random bf16 and reloaded through bitsandbytes (the from_pretrained path)."""
    from transformers import AutoModelForCausalLM
    cfg, attn = hf_config(model, run.attention)
    if run.weights in ("int8", "nf4"):
        with meter.phase("prepare", measured=False):
            path = _cached_checkpoint(cfg, attn, workdir, device)
        kw = {"attn_implementation": attn}
        if has_cuda_bnb(device):
            from transformers import BitsAndBytesConfig
            kw["quantization_config"] = (
                BitsAndBytesConfig(load_in_8bit=True) if run.weights == "int8" else
                BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                   bnb_4bit_compute_dtype=torch.bfloat16))
            kw["device_map"] = {"": 0}
        else:
            res["substitutions"].append(f"weights {run.weights} -> bf16: bitsandbytes needs CUDA")
        with meter.phase("load"):
            m = _with_dtype(AutoModelForCausalLM.from_pretrained, torch.bfloat16, pretrained_model_name_or_path=path, **kw)
            if "device_map" not in kw:
                m = m.to(device)
            meter.live = lambda: tensor_bytes(m.parameters())
        return m
    with meter.phase("load"):
        with torch.device(device):
            m = _with_dtype(AutoModelForCausalLM.from_config, base_dtype, config=cfg, attn_implementation=attn)
        meter.live = lambda: tensor_bytes(m.parameters())
    return m


def run_llm_inference(model, run, device, workdir, meter, res):
    checks = res["checks"]
    dtype = TORCH_DTYPE.get(run.weights, torch.bfloat16)
    m = build_llm(model, run, device, workdir, meter, res, dtype)
    m.eval()
    check(n_params(m) == plan.llm_params(model.model_type, model.config) or run.weights in ("int8", "nf4") and has_cuda_bnb(device),
          "built parameter count equals the plan", f"{n_params(m)} vs {plan.llm_params(model.model_type, model.config)}", checks)
    if run.weights in plan.DTYPE_BYTES:
        want = plan.llm_params(model.model_type, model.config) * plan.DTYPE_BYTES[run.weights]
        got = tensor_bytes(m.parameters())
        check(got == want, "weight bytes equal params x dtype size", f"{got} vs {want}", checks)
    gen = plan.new_tokens(run)
    prompt = run.seq - gen
    ids = torch.randint(0, model.config["vocab_size"], (run.batch, prompt), device=device)
    with meter.phase("generate"), torch.inference_mode():
        out = m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=gen, min_new_tokens=gen,
                         do_sample=False, pad_token_id=0)
    check(tuple(out.shape) == (run.batch, run.seq), "generate returns prompt + new tokens",
          f"{tuple(out.shape)} vs {(run.batch, run.seq)}", checks)
    res["extras"]["new_tokens"] = gen


def _optimizer(run, params, device, res):
    if run.optimizer == "adamw-8bit":
        if has_cuda_bnb(device):
            import bitsandbytes as bnb
            return bnb.optim.AdamW8bit(params, lr=1e-5)
        res["substitutions"].append("optimizer adamw-8bit -> adamw: bitsandbytes needs CUDA")
        return torch.optim.AdamW(params, lr=1e-5)
    if run.optimizer == "sgd":
        return torch.optim.SGD(params, lr=1e-4, momentum=0.9)
    if run.optimizer == "adafactor":
        from transformers.optimization import Adafactor
        return Adafactor(params, lr=1e-4, scale_parameter=False, relative_step=False, warmup_init=False)
    step = {"foreach": {"foreach": True}, "fused": {"fused": True}, "for-loop": {"foreach": False}}
    return torch.optim.AdamW(params, lr=1e-5, **step[run.optimizer_step])


def expected_state_bytes(opt_name, params):
    """Optimizer state the step should leave, per torch/transformers' implementations: AdamW
    exp_avg + exp_avg_sq like the parameter; SGD one momentum buffer; Adafactor (no first moment)
    a row and a column vector for matrices, a full vector otherwise, in fp32."""
    total = 0
    for p in params:
        size = p.element_size()
        if opt_name == "adamw":
            total += 2 * p.numel() * size
        elif opt_name == "sgd":
            total += p.numel() * size
        elif opt_name == "adafactor":
            total += 4 * ((p.shape[-1] + p.numel() // p.shape[-1]) if p.dim() >= 2 else p.numel())
    return total


def state_tensors(opt):
    for state in opt.state.values():
        for v in state.values():
            if torch.is_tensor(v) and v.dim() > 0:
                yield v


def run_llm_training(model, run, device, workdir, meter, res):
    checks = res["checks"]
    mixed = run.precision in ("bf16-mixed", "fp16-mixed")
    if run.method == "full":
        base = {"fp32": torch.float32, "bf16": torch.bfloat16}.get(run.precision, torch.float32)
    else:  # adapters train, the frozen base is kept in the compute precision
        base = {"fp32": torch.float32, "fp16-mixed": torch.float16}.get(run.precision, torch.bfloat16)
    m = build_llm(model, run, device, workdir, meter, res, base)
    m.config.use_cache = False
    ckpt = run.checkpointing == "full"
    with meter.phase("setup", measured=False):
        if run.method in ("lora", "qlora"):
            from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
            if run.method == "qlora":  # the QLoRA recipe; it upcasts the non-quantized weights to fp32
                res["extras"]["kbit_prepared"] = True
                m = prepare_model_for_kbit_training(m, use_gradient_checkpointing=ckpt,
                                                    gradient_checkpointing_kwargs={"use_reentrant": False})
            lcfg = LoraConfig(r=run.lora_rank, lora_alpha=2 * run.lora_rank, lora_dropout=0.0,
                              target_modules=plan.lora_module_names(run.lora_targets), task_type="CAUSAL_LM")
            m = get_peft_model(m, lcfg, autocast_adapter_dtype=run.precision != "bf16")
        if ckpt:
            m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        m.train()
    trainable = [p for p in m.parameters() if p.requires_grad]
    n_train = sum(p.numel() for p in trainable)
    want = (plan.llm_params(model.model_type, model.config) if run.method == "full"
            else plan.lora_params(model.model_type, model.config, run.lora_targets, run.lora_rank))
    check(n_train == want, "trainable parameters equal the plan", f"{n_train} vs {want}", checks)
    if run.optimizer_in_bwd:
        raise RuntimeError("run.optimizer_in_bwd is simulated by fake_train.py, not measured by this harness")
    if run.activation_offload:
        raise RuntimeError("run.activation_offload is simulated by fake_train.py, not measured by this harness")
    if run.paged_optimizer:
        raise RuntimeError("run.paged_optimizer is simulated by fake_train.py, not measured by this harness")
    if run.torch_compile:
        raise RuntimeError("run.torch_compile: this harness measures eager mode")
    if run.packing or (run.avg_seq or run.seq) < run.seq:
        raise RuntimeError("run.packing / run.avg_seq: this harness measures unpadded rows of run.seq tokens, one sample each")
    opt = _optimizer(run, trainable, device, res)
    amp_dtype = torch.float16 if run.precision == "fp16-mixed" else torch.bfloat16
    scaler = torch.amp.GradScaler(device, enabled=run.precision == "fp16-mixed")
    vocab = model.config["vocab_size"]
    ids = torch.randint(0, vocab, (run.batch, run.seq), device=device)
    losses = []
    with meter.phase("train_step"):
        for _step in range(2):  # the second step runs with optimizer states already allocated
            for _micro in range(run.grad_accum):
                with torch.autocast(device_type=device, dtype=amp_dtype, enabled=mixed):
                    loss = m(input_ids=ids, labels=ids).loss / run.grad_accum
                scaler.scale(loss).backward()
                losses.append(float(loss.detach()) * run.grad_accum)
            if _step == 1:
                meter.note(tensor_bytes(list(m.parameters()) + [p.grad for p in trainable] + list(state_tensors(opt))))
                grads = [p.grad for p in trainable]
                check(all(g is not None for g in grads), "every trainable parameter has a gradient", "missing grads", checks)
                frozen_grads = [p for p in m.parameters() if not p.requires_grad and p.grad is not None]
                check(not frozen_grads, "frozen parameters have no gradient", f"{len(frozen_grads)} with grads", checks)
                if run.optimizer in ("adamw", "sgd", "adafactor") and "optimizer" not in " ".join(res["substitutions"]):
                    got = tensor_bytes(list(state_tensors(opt)))
                    exp = expected_state_bytes(run.optimizer, trainable)
                    check(got == exp, "optimizer state bytes equal the plan", f"{got} vs {exp}", checks)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
    ln_v = math.log(vocab)
    check(all(math.isfinite(x) for x in losses), "losses are finite", f"{losses}", checks)
    check(abs(losses[0] - ln_v) < 2.5, "first loss near ln(vocab) for random weights", f"{losses[0]:.3f} vs {ln_v:.3f}", checks)
    res["extras"].update({"losses": [round(x, 4) for x in losses], "trainable_params": n_train,
                          "base_dtype": str(base).replace("torch.", ""), "steps": 2})


# ---- Diffusion ------------------------------------------------------------------------------

def _component(spec, dtype, attention, device):
    cls_name, cfg = spec["class"], dict(spec["config"])
    if spec["library"] == "diffusers":
        import diffusers
        cls = getattr(diffusers, cls_name)
        with torch.device(device), default_dtype(dtype):
            return cls.from_config({k: v for k, v in cfg.items() if not k.startswith("_")})
    import transformers
    cls = getattr(transformers, cls_name)
    cfg.pop("architectures", None)
    config = transformers.CLIPTextConfig(**{k: v for k, v in cfg.items() if k != "model_type"})
    with torch.device(device):
        return _with_dtype(cls._from_config, dtype, config=config, attn_implementation=attention)


def diffusion_meta_params(model):
    with torch.device("meta"):
        return {name: n_params(_component(spec, torch.float32, "sdpa", "meta")) for name, spec in model.components.items()}


def run_diffusion(model, run, device, workdir, meter, res):
    checks = res["checks"]
    dtype = TORCH_DTYPE[run.weights]
    with meter.phase("load"):
        comps = {name: _component(spec, dtype, run.attention, device) for name, spec in model.components.items()}
        meter.live = lambda: tensor_bytes([p for c in comps.values() for p in c.parameters()])
    for c in comps.values():
        c.eval()
        c.requires_grad_(False)
    unet, vae = comps["unet"], comps["vae"]
    if run.attention == "eager":
        from diffusers.models.attention_processor import AttnProcessor
        unet.set_attn_processor(AttnProcessor())
        vae.set_attn_processor(AttnProcessor())
    b2 = 2 * run.batch  # classifier-free guidance: negative and positive prompt in one batch
    te_cfg = model.components["text_encoder"]["config"]
    ids = torch.randint(0, te_cfg["vocab_size"], (b2, te_cfg["max_position_embeddings"]), device=device)
    sdxl = "text_encoder_2" in comps
    with meter.phase("text_encode"), torch.inference_mode():
        out1 = comps["text_encoder"](ids, output_hidden_states=True)
        if sdxl:
            out2 = comps["text_encoder_2"](ids, output_hidden_states=True)
            emb = torch.cat([out1.hidden_states[-2], out2.hidden_states[-2]], dim=-1)
            added = {"text_embeds": out2.text_embeds,
                     "time_ids": torch.tensor([[run.height, run.width, 0, 0, run.height, run.width]] * b2,
                                              device=device, dtype=dtype)}
        else:
            emb, added = out1.last_hidden_state, None
    ucfg = unet.config
    check(emb.shape[-1] == ucfg.cross_attention_dim, "text embedding width equals the UNet's cross-attention",
          f"{emb.shape[-1]} vs {ucfg.cross_attention_dim}", checks)
    lat_shape = (run.batch, ucfg.in_channels, run.height // 8, run.width // 8)
    latents = torch.randn(lat_shape, device=device, dtype=dtype)
    with meter.phase("denoise"), torch.inference_mode():
        inp = torch.cat([latents, latents])
        t = torch.full((b2,), 999, device=device, dtype=torch.long)
        noise = unet(inp, t, encoder_hidden_states=emb, added_cond_kwargs=added).sample
        uncond, cond = noise.chunk(2)
        latents = latents - 0.1 * (uncond + 7.5 * (cond - uncond))
    check(tuple(noise.shape) == (b2,) + lat_shape[1:], "UNet output has the latent shape",
          f"{tuple(noise.shape)}", checks)
    upcast = dtype == torch.float16 and bool(vae.config.get("force_upcast", False))
    with meter.phase("vae_decode"), torch.inference_mode():
        if upcast:  # what StableDiffusionXLPipeline does for an fp16 VAE marked force_upcast
            vae.to(torch.float32)
            latents = latents.float()
        if run.vae_tiling:
            vae.enable_tiling()
        image = vae.decode(latents / vae.config.scaling_factor).sample
    check(tuple(image.shape) == (run.batch, 3, run.height, run.width), "decoded image has the requested size",
          f"{tuple(image.shape)}", checks)
    res["extras"].update({"built_params": {n: n_params(c) for n, c in comps.items()}, "vae_upcast_fp32": upcast})


# ---- One workload ---------------------------------------------------------------------------

def preload(device):
    """Imports the libraries the steps use, in the parent, so forked children share them.
    For a GPU run, peft is left to the children: it imports bitsandbytes, which asks CUDA for
    the device's capability, and a parent that has started CUDA cannot fork working children."""
    import transformers  # noqa: F401
    from transformers import AutoModelForCausalLM, CLIPTextModel  # noqa: F401
    if importlib.util.find_spec("diffusers") is not None:
        from diffusers import AutoencoderKL, UNet2DConditionModel  # noqa: F401
        from diffusers.models.attention_processor import AttnProcessor  # noqa: F401
    if device == "cpu" and importlib.util.find_spec("peft") is not None:
        import peft  # noqa: F401


def full_size_check(model):
    """Builds the full-size model on the meta device (no memory, no CUDA) and compares its
    parameter count with the plan (LLMs) or the published counts (diffusion). Returns the
    name of the check passed, or raises CheckFailed."""
    checks = []
    if isinstance(model, LlmModel):
        got, want = llm_meta_params(model), plan.llm_params(model.model_type, model.config)
        check(got == want, "full-size model built on meta matches the plan", f"{got} vs {want}", checks)
    else:
        got = diffusion_meta_params(model)
        check(got == model.published_params, "full-size components built on meta match published counts",
              f"{got} vs {model.published_params}", checks)
    return checks[0]


def run_one(w, device, workdir, dry_run):
    """Runs one workload; returns the result dict (never raises for a failed workload).
    The dry run shrinks the model and the run (plan.reduce_*) and runs on the CPU."""
    res = {"checks": [], "substitutions": [], "extras": {}}
    model, run = w.model, w.run
    start = time.monotonic()
    try:
        if dry_run:
            model = plan.reduce_llm(model) if isinstance(model, LlmModel) else plan.reduce_diffusion(model)
            run = plan.reduce_run(run)
            res["extras"]["reduced_to"] = {"batch": run.batch, "seq": run.seq, "width": run.width}
        meter = Meter(device)
        if device == "cuda":
            import record
            res["extras"]["env"] = record.environment(torch, "cuda")
        if run.task == "inference":
            run_llm_inference(model, run, device, workdir, meter, res)
        elif run.task == "training":
            run_llm_training(model, run, device, workdir, meter, res)
        else:
            run_diffusion(model, run, device, workdir, meter, res)
        summary = meter.summary()
        res["extras"].update(summary.pop("extras", {}))
        res.update(summary)
        if not dry_run and not isinstance(model, LlmModel):
            built = res["extras"]["built_params"]
            check(built == model.published_params, "built components match published counts", f"{built}", res["checks"])
    except CheckFailed as e:
        res["error"] = f"check failed: {e}"
    except Exception as e:  # an OOM or library error is a result to record, not a crash
        res["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    res["wall_s"] = round(time.monotonic() - start, 2)
    return res
