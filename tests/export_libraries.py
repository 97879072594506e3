"""Feeds VRAM Doctor's training exports to the real libraries' own parsers and validators and
prints what the parsed objects say, one JSON line per case, for tests/export_libraries.rs to
compare with the plan.

    python tests/export_libraries.py MANIFEST.json

MANIFEST is a list of cases: {"id", "dir" (the exports, under their default file names),
"gpus" (the GPU count the plan is for), "bf16_gpu" (whether the planned card has bf16), "arch" (layers, hidden, heads, kv_heads, head_dim,
intermediate, vocab, tied_embeddings)}. Each export goes through the code path the user's run
takes:

- train_flags.sh: the words after the script name, through
  `HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses(args)` (transformers
  `hf_argparser.py`); an unknown flag raises there.
- training_args.py: executed as it is (it imports TrainingArguments itself).
- ds_config.json: as `TrainingArguments(deepspeed=...)` reads it (`HfTrainerDeepSpeedConfig`
  `.trainer_config_process`, which fills the "auto" values and refuses values that disagree
  with the arguments; transformers `integrations/deepspeed.py`), then the filled dict through
  `deepspeed.runtime.config.DeepSpeedConfig`, the class `deepspeed.initialize` builds.
- accelerate_fsdp.yaml: `accelerate launch --config_file` as accelerate runs it
  (`launch_command_parser`, `_validate_launch_command`, which loads the file with
  `load_config_from_file`, and `prepare_multi_gpu_env`, which turns it into the FSDP_*
  environment), then `FullyShardedDataParallelPlugin()` reading that environment in the
  training process (accelerate `utils/dataclasses.py`).
- peft_config.py: executed as it is, after training_args.py as a training script runs them
  (so a ZeRO-3 config is live when the model loads, as transformers needs), with one
  stand-in: `from_pretrained` records its arguments and returns the model built from its config on the meta device (two layers, the
  plan's shapes; no download, no memory) marked as a bitsandbytes load marks it, after
  passing the device map through from_pretrained's own `check_and_set_device_map`. So
  `BitsAndBytesConfig`, `prepare_model_for_kbit_training`, `LoraConfig` and `get_peft_model`
  all run for real; quantizing the weights needs CUDA kernels and is not done, the config
  object is checked instead.

What a CPU-only, single process cannot provide stands in for the planned machine, and nothing
else is patched: the launcher's world size (`TrainingArguments.world_size` and DeepSpeed's
`dist.get_world_size()` are the plan's GPU count, what `deepspeed --num_gpus N` / `accelerate
launch` make them), the card's bf16 support (`is_torch_bf16_gpu_available`, which
`TrainingArguments(bf16=True)` asks) and a current CUDA device for FSDP's
`sync_module_states`.
"""

import contextlib
import io
import json
import os
import shlex
import sys
import traceback
import warnings
from unittest import mock


def quiet():
    for key, value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"),
                       ("TRANSFORMERS_VERBOSITY", "error"), ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
                       ("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1"), ("TOKENIZERS_PARALLELISM", "false"),
                       ("DS_ACCELERATOR", "cpu")):
        os.environ.setdefault(key, value)


def script_args(text):
    """The arguments after the script (`train.py`) of a shell command export."""
    body = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
    # A backslash-newline continues the line (POSIX shell, "Escape Character").
    words = shlex.split(body.replace("\\\n", " "))
    scripts = [i for i, w in enumerate(words) if w.endswith(".py")]
    if len(scripts) != 1:
        raise ValueError(f"expected one script in the command, found {len(scripts)}: {words}")
    return words[:scripts[0]], words[scripts[0] + 1:]


@contextlib.contextmanager
def on_the_planned_gpus(case):
    """The launcher's world size and the planned GPU's bf16 support, for a block (see the
    module doc): `TrainingArguments(bf16=True)` asks `is_torch_bf16_gpu_available()`
    (transformers `training_args.py`), which is false on a machine without a GPU."""
    import transformers.training_args as ta
    with mock.patch.object(ta.TrainingArguments, "world_size", new=property(lambda self: case["gpus"])), \
            mock.patch.object(ta, "is_torch_bf16_gpu_available", return_value=case["bf16_gpu"]):
        yield


def training_facts(a):
    return {
        "per_device_train_batch_size": a.per_device_train_batch_size,
        "gradient_accumulation_steps": a.gradient_accumulation_steps,
        "bf16": bool(a.bf16), "fp16": bool(a.fp16),
        "gradient_checkpointing": bool(a.gradient_checkpointing),
        "gradient_checkpointing_kwargs": a.gradient_checkpointing_kwargs,
        "optim": str(getattr(a.optim, "value", a.optim)),
        "use_liger_kernel": bool(a.use_liger_kernel),
        "torch_compile": bool(a.torch_compile),
        "deepspeed": a.deepspeed,
    }


def parse_flags(case, extra=()):
    """The CLI export's flags (and `extra`) through HfArgumentParser; also the launcher words."""
    from transformers import HfArgumentParser, TrainingArguments
    with open("train_flags.sh", encoding="utf-8") as f:
        launcher, words = script_args(f.read())
    with on_the_planned_gpus(case):
        (parsed,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses(words + list(extra))
    return launcher, parsed


def check_cli(case):
    launcher, parsed = parse_flags(case)
    out = training_facts(parsed)
    out["launcher"] = launcher[0] if launcher else None
    out["launcher_gpus"] = launcher_gpus(launcher)
    # The optimizer the Trainer builds for `optim` (transformers `Trainer.get_optimizer_cls_and_kwargs`).
    from transformers import Trainer
    cls, kwargs = Trainer.get_optimizer_cls_and_kwargs(parsed)
    out["optimizer_class"] = f"{cls.__module__}.{cls.__qualname__}"
    out["optimizer_kwargs"] = {k: v for k, v in kwargs.items() if k in ("optim_bits", "is_paged", "fused")}
    return out, parsed


def exec_file(path, ns):
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), ns)


def launcher_gpus(launcher):
    """The processes the launcher words start, read by the launcher's own parser: DeepSpeed's
    (`deepspeed/launcher/runner.py`) or torchrun's (`torch/distributed/run.py`)."""
    program, args = launcher[0], launcher[1:] + ["train.py"]
    if program == "deepspeed":
        from deepspeed.launcher.runner import parse_args
        return parse_args(args).num_gpus
    if program == "torchrun":
        from torch.distributed.run import get_args_parser
        return int(get_args_parser().parse_args(args).nproc_per_node)
    if program in ("python", "python3") and not launcher[1:]:
        return 1
    raise ValueError(f"unknown launcher {launcher}")


def check_python(case):
    ns = {}
    with on_the_planned_gpus(case):
        exec_file("training_args.py", ns)
    return training_facts(ns["training_args"])


def check_deepspeed(case, args):
    """`args`: the TrainingArguments parsed from the CLI export. Where they do not name
    ds_config.json (a plan without ZeRO), the same flags with `--deepspeed ds_config.json`."""
    import deepspeed.runtime.config as dsc
    if not args.deepspeed:
        _, args = parse_flags(case, ["--deepspeed", "ds_config.json"])
    hf = getattr(args, "hf_deepspeed_config", None)
    if hf is None:
        raise ValueError("TrainingArguments did not load the DeepSpeed config")
    filled = hf.config
    autos = [k for k, v in flatten(filled) if v == "auto"]
    with mock.patch.object(dsc.dist, "get_rank", return_value=0), \
            mock.patch.object(dsc.dist, "get_world_size", return_value=case["gpus"]):
        c = dsc.DeepSpeedConfig(filled)
    z = c.zero_config
    device = lambda o: None if o is None else str(getattr(o.device, "value", o.device))
    return {
        "stage": int(c.zero_optimization_stage),
        "offload_optimizer": device(z.offload_optimizer),
        "offload_param": device(z.offload_param),
        "bf16": bool(c.bfloat16_config.enabled), "fp16": bool(c.float16_config.enabled),
        "train_batch_size": c.train_batch_size,
        "train_micro_batch_size_per_gpu": c.train_micro_batch_size_per_gpu,
        "gradient_accumulation_steps": c.gradient_accumulation_steps,
        "optimizer": c.optimizer_name,
        "zero_force_ds_cpu_optimizer": bool(c.zero_force_ds_cpu_optimizer),
        "gather_16bit_weights_on_model_save": bool(z.gather_16bit_weights_on_model_save),
        "autos_left_after_trainer": autos,
    }


def flatten(d, prefix=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from flatten(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def check_fsdp(case):
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import FullyShardedDataParallelPlugin
    from accelerate.utils.launch import prepare_multi_gpu_env
    args = launch_command_parser().parse_args(["--config_file", "accelerate_fsdp.yaml", "train.py"])
    args, _, _ = _validate_launch_command(args)
    env = prepare_multi_gpu_env(args)
    fsdp_env = {k: v for k, v in env.items() if k.startswith(("FSDP_", "ACCELERATE_"))}
    # `sync_module_states` asks for the current CUDA device (accelerate `utils/dataclasses.py`
    # `FullyShardedDataParallelPlugin.__post_init__`): device 0 stands in for it.
    import accelerate.utils.dataclasses as acd
    with mock.patch.dict(os.environ, fsdp_env), \
            mock.patch.object(acd, "is_cuda_available", return_value=True), \
            mock.patch("torch.cuda.current_device", return_value=0):
        plugin = FullyShardedDataParallelPlugin()
    offload = plugin.cpu_offload
    return {
        "distributed_type": str(getattr(args, "distributed_type", "")),
        "use_fsdp": bool(args.use_fsdp),
        "num_processes": args.num_processes,
        "mixed_precision": env.get("ACCELERATE_MIXED_PRECISION"),
        "fsdp_version": plugin.fsdp_version,
        "sharding_strategy": getattr(plugin.sharding_strategy, "name", str(plugin.sharding_strategy)),
        "reshard_after_forward": str(plugin.reshard_after_forward),
        "offload_params": bool(getattr(offload, "offload_params", False)),
        "activation_checkpointing": bool(plugin.activation_checkpointing),
        "auto_wrap_policy": getattr(plugin.auto_wrap_policy, "__name__", str(plugin.auto_wrap_policy)),
    }


def meta_model(arch, record):
    """The stand-in for `AutoModelFor*.from_pretrained`: records the call and builds the model
    from a Llama-shaped config of the plan's shapes on the meta device."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    def from_pretrained(repo, *args, **kwargs):
        from transformers.integrations import is_deepspeed_zero3_enabled
        from transformers.modeling_utils import check_and_set_device_map
        q = kwargs.get("quantization_config")
        record.append({"repo": repo, "args": list(args), "kwargs": sorted(kwargs),
                       "zero3": is_deepspeed_zero3_enabled(),
                       "dtype": str(kwargs.get("dtype", kwargs.get("torch_dtype"))),
                       # What from_pretrained makes of the device map (and refuses: a map under
                       # ZeRO-3), transformers `integrations/accelerate.py`.
                       "device_map": check_and_set_device_map(kwargs.get("device_map")),
                       "attn_implementation": kwargs.get("attn_implementation"),
                       "quantization_config": kwargs.get("quantization_config")})
        cfg = LlamaConfig(hidden_size=arch["hidden"], num_hidden_layers=2,
                          num_attention_heads=arch["heads"], num_key_value_heads=arch["kv_heads"],
                          head_dim=arch["head_dim"], intermediate_size=arch["intermediate"],
                          vocab_size=arch["vocab"], tie_word_embeddings=arch["tied_embeddings"])
        # The stand-in is built outside ZeRO-3 (which would partition it with DeepSpeed's
        # zero.Init); only its module names and shapes matter.
        import transformers.modeling_utils as mu
        with torch.device("meta"), mock.patch.object(mu, "is_deepspeed_zero3_enabled", return_value=False):
            m = AutoModelForCausalLM.from_config(cfg)
        # What a bitsandbytes load marks the model with (transformers
        # `quantizers/quantizer_bnb_4bit.py`), which prepare_model_for_kbit_training reads.
        if q is not None:
            m.is_loaded_in_4bit = bool(q.load_in_4bit)
            m.is_loaded_in_8bit = bool(q.load_in_8bit)
            m.is_quantized = True
        return m
    return from_pretrained


def check_peft(case):
    import transformers
    import peft
    loads, preps = [], []
    real_prep = peft.prepare_model_for_kbit_training

    def prep(model, *args, **kwargs):
        preps.append({"args": list(args), "kwargs": kwargs})
        return real_prep(model, *args, **kwargs)
    ns = {}
    stub = meta_model(case["arch"], loads)
    # The training script's order: the TrainingArguments first (a ZeRO-3 config then shards
    # the load and refuses a device map), then the model as the PEFT export loads it, in the
    # process of rank 1 where there are several (LOCAL_RANK, as the launcher sets it; not
    # while the arguments are made, which would start torch.distributed).
    rank = {"LOCAL_RANK": "1"} if case["gpus"] > 1 else {}
    with mock.patch.object(transformers.AutoModelForCausalLM, "from_pretrained", new=stub), \
            mock.patch.object(peft, "prepare_model_for_kbit_training", new=prep), \
            on_the_planned_gpus(case), \
            contextlib.redirect_stdout(io.StringIO()) as printed:
        exec_file("training_args.py", ns)
        with mock.patch.dict(os.environ, rank):
            exec_file("peft_config.py", ns)
    if len(loads) != 1:
        raise ValueError(f"expected one from_pretrained call, got {len(loads)}")
    load = loads[0]
    model = ns["model"]
    lc = ns["lora_config"]
    if not isinstance(lc, peft.LoraConfig):
        raise ValueError(f"lora_config is a {type(lc).__name__}")
    wrapped = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules()
                      if isinstance(m, peft.tuners.lora.LoraLayer)})
    q = load.pop("quantization_config")
    bnb = None
    if q is not None:
        if not isinstance(q, transformers.BitsAndBytesConfig):
            raise ValueError(f"quantization_config is a {type(q).__name__}")
        bnb = {"load_in_4bit": q.load_in_4bit, "load_in_8bit": q.load_in_8bit,
               "quant_type": q.bnb_4bit_quant_type, "double_quant": q.bnb_4bit_use_double_quant,
               "compute_dtype": str(q.bnb_4bit_compute_dtype),
               "quant_storage": str(q.bnb_4bit_quant_storage)}
    targets = lc.target_modules
    return {
        "r": lc.r, "lora_alpha": lc.lora_alpha, "task_type": str(getattr(lc.task_type, "value", lc.task_type)),
        "target_modules": sorted(targets) if isinstance(targets, (set, list)) else targets,
        "wrapped": wrapped,
        "trainable": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "printed": printed.getvalue().strip(),
        "load": load, "bnb": bnb,
        "prepare_for_kbit": preps,
        "gradient_checkpointing": bool(getattr(model, "is_gradient_checkpointing", False)),
    }


def run_case(case):
    """Every export of one case; an export that a library refuses is an error of that step."""
    out = {"id": case["id"], "errors": {}, "warnings": {}}
    holder = {"cli": None}
    old = os.getcwd()
    os.chdir(case["dir"])
    try:
        for name in ("cli", "python", "deepspeed", "fsdp", "peft"):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                step(name, case, out, holder)
            said = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
            if said:
                out["warnings"][name] = said
    finally:
        os.chdir(old)
    return out


def step(name, case, out, holder):
    """One export through its library; `holder` keeps the CLI's TrainingArguments for the
    DeepSpeed step. A refusal (argparse exits on a flag it does not know) is the step's error."""
    try:
        if name == "cli":
            out[name], holder["cli"] = check_cli(case)
        elif name == "python":
            out[name] = check_python(case)
        elif name == "deepspeed":
            out[name] = check_deepspeed(case, holder["cli"]) if os.path.exists("ds_config.json") else None
        elif name == "fsdp":
            out[name] = check_fsdp(case)
        elif os.path.exists("peft_config.py"):
            out[name] = check_peft(case)
    except (Exception, SystemExit) as e:
        out["errors"][name] = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}"


def versions():
    from importlib.metadata import version
    return {p: version(p) for p in ("transformers", "peft", "deepspeed", "accelerate", "bitsandbytes", "torch")}


def main(argv):
    quiet()
    with open(argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    # Library chatter (DeepSpeed's accelerator warning, deprecation notices) goes to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        print(json.dumps({"versions": versions()}), file=sys.__stdout__, flush=True)
        for case in cases:
            print(json.dumps(run_case(case), default=str), file=sys.__stdout__, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
