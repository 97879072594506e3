//! Exports are correct by test: every JSON/YAML export parses and holds the keys its tool
//! reads, every flag and argument name is one the tool really has (lists below, each with its
//! source), and each export kind has a golden file.
//!
//! Golden files live in `tests/data/golden/`, named `<fixture>__<export file name>`. When an
//! export changes on purpose (or the estimator changes a planned figure), regenerate them with
//!
//! ```sh
//! UPDATE_GOLDEN=1 cargo test --test export
//! ```
//!
//! and review the diff.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use vram_doctor::export::{
    ExportKind, Os, accelerate_fsdp, deepspeed, kinds_for_os, planned, render_for,
};
use vram_doctor::memory::WorkloadFile;
use vram_doctor::memory::any::AnyWorkload;
use vram_doctor::plan::{PlanResult, plan_any};
use vram_doctor::resolve::resolve_any;

// ---- The tools' real names ----

/// llama-server flags, from llama.cpp `tools/server/README.md` (and `common/arg.cpp`).
const LLAMA_SERVER_FLAGS: &[&str] = &[
    "-m",
    "--model",
    "-ngl",
    "--n-gpu-layers",
    "--gpu-layers",
    "-c",
    "--ctx-size",
    "-np",
    "--parallel",
    "-fa",
    "--flash-attn",
    "-ctk",
    "--cache-type-k",
    "-ctv",
    "--cache-type-v",
    "-b",
    "--batch-size",
    "-ub",
    "--ubatch-size",
    "-ncmoe",
    "--n-cpu-moe",
    "-cmoe",
    "--cpu-moe",
    "-nkvo",
    "--no-kv-offload",
    "--host",
    "--port",
];

/// `vllm serve` engine arguments, from vLLM docs "Engine Arguments" / `vllm serve --help`.
const VLLM_FLAGS: &[&str] = &[
    "--dtype",
    "--quantization",
    "-q",
    "--max-model-len",
    "--max-num-seqs",
    "--gpu-memory-utilization",
    "--kv-cache-dtype",
    "--tensor-parallel-size",
    "-tp",
    "--tokenizer",
    "--enforce-eager",
];

/// ComfyUI launch flags, from ComfyUI `comfy/cli_args.py`.
const COMFYUI_FLAGS: &[&str] = &[
    "--lowvram",
    "--novram",
    "--highvram",
    "--gpu-only",
    "--cpu",
    "--reserve-vram",
    "--vram-headroom",
    "--enable-dynamic-vram",
    "--disable-dynamic-vram",
    "--fp16-vae",
    "--fp32-vae",
    "--bf16-vae",
    "--cpu-vae",
    "--fp8_e4m3fn-unet",
    "--fp8_e5m2-unet",
    "--fp16-unet",
    "--bf16-unet",
    "--fp8_e4m3fn-text-enc",
    "--fp8_e5m2-text-enc",
    "--fp16-text-enc",
    "--fp32-text-enc",
    "--disable-smart-memory",
    "--use-pytorch-cross-attention",
];

/// `transformers.TrainingArguments` fields, from transformers `src/transformers/training_args.py`.
const TRAINING_ARGUMENTS: &[&str] = &[
    "output_dir",
    "per_device_train_batch_size",
    "per_device_eval_batch_size",
    "gradient_accumulation_steps",
    "bf16",
    "fp16",
    "tf32",
    "gradient_checkpointing",
    "gradient_checkpointing_kwargs",
    "optim",
    "optim_args",
    "use_liger_kernel",
    "deepspeed",
    "fsdp",
    "fsdp_config",
    "learning_rate",
    "num_train_epochs",
    "max_steps",
    "logging_steps",
    "save_strategy",
];

/// `OptimizerNames` values, from transformers `src/transformers/training_args.py`.
const OPTIM_NAMES: &[&str] = &[
    "adamw_torch",
    "adamw_torch_fused",
    "adamw_bnb_8bit",
    "adamw_8bit",
    "paged_adamw_8bit",
    "paged_adamw_32bit",
    "adafactor",
    "sgd",
    "adagrad",
    "lion_8bit",
    "lion_32bit",
    "paged_lion_8bit",
    "paged_lion_32bit",
];

/// Keyword arguments of `LoraConfig` (peft `tuners/lora/config.py`), `BitsAndBytesConfig`
/// (transformers `utils/quantization_config.py`), `from_pretrained` (transformers
/// `modeling_utils.py`), `prepare_model_for_kbit_training` (peft `utils/other.py`),
/// `PipelineQuantizationConfig` and `enable_layerwise_casting` (diffusers
/// `quantizers/pipe_quant_config.py`, `models/modeling_utils.py`) and the pipeline call.
const PYTHON_KWARGS: &[&str] = &[
    "r",
    "lora_alpha",
    "lora_dropout",
    "target_modules",
    "task_type",
    "bias",
    "load_in_8bit",
    "load_in_4bit",
    "bnb_4bit_quant_type",
    "bnb_4bit_use_double_quant",
    "bnb_4bit_compute_dtype",
    "bnb_4bit_quant_storage",
    "torch_dtype",
    "dtype",
    "quantization_config",
    "attn_implementation",
    "device_map",
    "use_gradient_checkpointing",
    "quant_backend",
    "quant_kwargs",
    "components_to_quantize",
    "storage_dtype",
    "compute_dtype",
    "prompt",
    "width",
    "height",
    "num_frames",
    "num_images_per_prompt",
    "num_videos_per_prompt",
];

/// Methods the diffusers export calls on the pipeline and its VAE (diffusers docs "Reduce
/// memory usage": model/sequential offload, VAE tiling and slicing, layerwise casting).
const DIFFUSERS_CALLS: &[&str] = &[
    "from_pretrained",
    "enable_layerwise_casting",
    "enable_model_cpu_offload",
    "enable_sequential_cpu_offload",
    "enable_tiling",
    "enable_slicing",
    "to",
];

/// Runner options a Modelfile may set, from ollama `docs/modelfile.md` and `docs/api.md`
/// ("options": num_ctx, num_batch, num_gpu, …).
const OLLAMA_PARAMETERS: &[&str] = &[
    "num_ctx",
    "num_batch",
    "num_gpu",
    "main_gpu",
    "num_thread",
    "num_predict",
    "temperature",
    "top_k",
    "top_p",
    "stop",
];

/// DeepSpeed config keys, from the DeepSpeed docs "DeepSpeed Configuration JSON".
const DEEPSPEED_TOP: &[&str] = &[
    "train_batch_size",
    "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps",
    "gradient_clipping",
    "optimizer",
    "scheduler",
    "fp16",
    "bf16",
    "zero_optimization",
    "zero_force_ds_cpu_optimizer",
    "activation_checkpointing",
];
const DEEPSPEED_ZERO: &[&str] = &[
    "stage",
    "overlap_comm",
    "contiguous_gradients",
    "reduce_bucket_size",
    "offload_optimizer",
    "offload_param",
    "stage3_gather_16bit_weights_on_model_save",
];

/// accelerate config keys for FSDP, from accelerate `commands/config/config_args.py` and
/// `utils/dataclasses.py` (`FullyShardedDataParallelPlugin`).
const ACCELERATE_KEYS: &[&str] = &[
    "compute_environment",
    "debug",
    "distributed_type",
    "downcast_bf16",
    "fsdp_config",
    "machine_rank",
    "main_training_function",
    "mixed_precision",
    "num_machines",
    "num_processes",
    "rdzv_backend",
    "same_network",
    "use_cpu",
];
const FSDP_KEYS: &[&str] = &[
    "fsdp_activation_checkpointing",
    "fsdp_auto_wrap_policy",
    "fsdp_backward_prefetch",
    "fsdp_cpu_ram_efficient_loading",
    "fsdp_forward_prefetch",
    "fsdp_offload_params",
    "fsdp_sharding_strategy",
    "fsdp_state_dict_type",
    "fsdp_sync_module_states",
    "fsdp_use_orig_params",
];

// ---- Fixtures ----

/// Named workloads covering every task and engine; the plan of each changes something.
const FIXTURES: &[(&str, &str)] = &[
    (
        "train-1gpu",
        "[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\n",
    ),
    (
        "train-4gpu",
        "[gpu]\nvram_gib = 24\ncount = 4\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nbatch = 8\nseq = 4096\n",
    ),
    (
        "train-lora-fp16",
        "[gpu]\nvram_gib = 40\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nmethod = \"lora\"\nprecision = \"fp16-mixed\"\noptimizer = \"adamw-8bit\"\nlora_targets = \"qv\"\n",
    ),
    (
        "train-qlora",
        "[gpu]\nvram_gib = 12\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nmethod = \"qlora\"\nlora_targets = \"attention\"\n",
    ),
    // A 70B LoRA sharded over two 24 GiB cards does not fit without CPU offload (FSDP2
    // CPUOffloadPolicy / ZeRO-3 offload_param), which a 512 GiB host holds.
    (
        "train-lora-fsdp-offload",
        "[gpu]\nvram_gib = 24\ncount = 2\nhost_ram_gib = 512\n[model]\npreset = \"llama-3.1-70b\"\n[run]\ntask = \"training\"\nmethod = \"lora\"\nseq = 2048\ncheckpointing = \"full\"\nzero_stage = 3\nloss = \"chunked\"\n",
    ),
    (
        "llamacpp",
        "[gpu]\nvram_gib = 12\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nweights = \"q4_k_m\"\nseq = 32768\nbatch = 2\n",
    ),
    // Issue 17's example on a DDR5 host: its q8_0-KV split already clears 5 tokens/s (on the
    // default DDR4-3200 host the plan needs a q4_0 KV cache too).
    (
        "llamacpp-split",
        "[gpu]\npreset = \"rtx-4060\"\nhost = \"ddr5-6000-2ch\"\nhost_ram_gib = 32\n[model]\npreset = \"qwen2.5-14b\"\n[run]\nengine = \"llama-cpp\"\nweights = \"q4_k_m\"\nseq = 16384\n",
    ),
    (
        "llamacpp-moe",
        "[gpu]\npreset = \"rtx-4060\"\nhost_ram_gib = 64\n[model]\npreset = \"qwen3-30b-a3b\"\n[run]\nengine = \"llama-cpp\"\nweights = \"q4_k_m\"\nseq = 16384\n",
    ),
    (
        "vllm",
        "[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nengine = \"vllm\"\nseq = 32768\nbatch = 32\n",
    ),
    (
        "transformers",
        "[gpu]\nvram_gib = 12\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nengine = \"transformers\"\nseq = 8192\n",
    ),
    (
        "comfyui",
        "[gpu]\nvram_gib = 8\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\n",
    ),
    (
        "diffusers",
        "[gpu]\nvram_gib = 8\n[model]\npreset = \"sdxl\"\n[run]\ntask = \"diffusion\"\nengine = \"diffusers\"\nbatch = 4\n",
    ),
    (
        "game",
        "[gpu]\nvram_gib = 8\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"game\"\nresolution = \"2560x1440\"\ntexture_quality = \"ultra\"\n",
    ),
];

fn load(text: &str) -> (AnyWorkload, PlanResult) {
    let f = WorkloadFile::parse(text, "fixture.toml").expect("fixture parses");
    let w = resolve_any(&f, Path::new("."), None).expect("fixture resolves");
    let r = plan_any(&w);
    (w, r)
}

fn fixture(name: &str) -> (AnyWorkload, PlanResult) {
    let text = FIXTURES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .expect("known fixture");
    load(text)
}

fn render(kind: ExportKind, w: &AnyWorkload, r: &PlanResult) -> String {
    render_for(kind, w, r, Os::Linux).unwrap_or_else(|e| panic!("{kind}: {e}"))
}

/// Every applicable export of every fixture, rendered.
fn all_exports() -> Vec<(String, ExportKind, String)> {
    let mut out = Vec::new();
    for (name, text) in FIXTURES {
        let (w, r) = load(text);
        for k in kinds_for_os(&w, &r, Os::Linux) {
            out.push((name.to_string(), k, render(k, &w, &r)));
        }
    }
    out
}

// ---- Small parsers for what the exports hold ----

/// The flags of a command export: the first word of every line after the command's first
/// line, up to the line-continuation backslash.
fn command_flags(text: &str) -> Vec<String> {
    let mut lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let _program = lines.next().expect("a command line");
    lines
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// `name=` keyword arguments in Python code (identifiers directly followed by `=`, not `==`).
fn python_kwargs(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let t = line.trim_start();
        if let Some((name, rest)) = t.split_once('=')
            && !rest.starts_with('=')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && line.starts_with("    ")
        {
            out.insert(name.to_string());
        }
        // Keyword arguments inside one-line calls: `f(a=1, b=2)`.
        if let Some(open) = t.find('(') {
            for part in t[open + 1..].split([',', '(']) {
                if let Some((name, rest)) = part.trim().split_once('=')
                    && !rest.starts_with('=')
                    && !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    out.insert(name.to_string());
                }
            }
        }
    }
    out
}

/// Checks brackets balance in Python code (outside strings), a cheap syntax check that needs
/// no Python.
fn brackets_balance(text: &str) -> bool {
    let mut stack = Vec::new();
    let mut in_str = false;
    for line in text.lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        for c in line.chars() {
            match c {
                '"' => in_str = !in_str,
                '(' | '[' | '{' if !in_str => stack.push(c),
                ')' | ']' | '}' if !in_str => {
                    let open = stack.pop();
                    let ok = matches!(
                        (open, c),
                        (Some('('), ')') | (Some('['), ']') | (Some('{'), '}')
                    );
                    if !ok {
                        return false;
                    }
                }
                _ => {}
            }
        }
        if in_str {
            return false;
        }
    }
    stack.is_empty()
}

/// A YAML block-mapping reader for the subset the accelerate and torchtune configs use (nested
/// mappings of scalars, flow sequences of scalars, `#` comments); double-quoted scalars are
/// read as JSON strings.
fn parse_yaml(text: &str) -> Result<Value, String> {
    fn scalar(s: &str) -> Value {
        if s.starts_with('"') {
            return serde_json::from_str(s).unwrap_or(Value::Null);
        }
        if let Some(items) = s.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
            return Value::Array(
                items
                    .split(',')
                    .map(str::trim)
                    .filter(|x| !x.is_empty())
                    .map(scalar)
                    .collect(),
            );
        }
        match s {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            _ => s
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| Value::String(s.to_string())),
        }
    }
    let lines: Vec<(usize, &str)> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .map(|l| (l.len() - l.trim_start().len(), l.trim()))
        .collect();
    fn block(lines: &[(usize, &str)], i: &mut usize, indent: usize) -> Result<Value, String> {
        let mut map = serde_json::Map::new();
        while *i < lines.len() {
            let (ind, l) = lines[*i];
            if ind < indent {
                break;
            }
            if ind > indent {
                return Err(format!("unexpected indent: {l}"));
            }
            let (k, v) = l.split_once(':').ok_or(format!("no ':' in {l}"))?;
            *i += 1;
            let v = v.trim();
            let value = if v.is_empty() {
                block(lines, i, indent + 2)?
            } else {
                scalar(v)
            };
            if map.insert(k.to_string(), value).is_some() {
                return Err(format!("duplicate key {k}"));
            }
        }
        Ok(Value::Object(map))
    }
    let mut i = 0;
    block(&lines, &mut i, 0)
}

// ---- Tests ----

#[test]
fn every_applicable_export_renders_for_every_fixture() {
    let all = all_exports();
    let kinds: BTreeSet<&str> = all.iter().map(|(_, k, _)| k.as_str()).collect();
    for k in ExportKind::ALL {
        assert!(kinds.contains(k.as_str()), "no fixture exercises {k}");
    }
    for (name, k, text) in &all {
        assert!(!text.trim().is_empty(), "{name} {k}: empty");
        assert!(text.ends_with('\n'), "{name} {k}: no final newline");
    }
}

#[test]
fn command_flags_are_the_tools_real_flags() {
    for (name, k, text) in all_exports() {
        let list = match k {
            ExportKind::LlamaCpp => LLAMA_SERVER_FLAGS,
            ExportKind::Vllm => VLLM_FLAGS,
            ExportKind::ComfyUi => COMFYUI_FLAGS,
            ExportKind::HfTrainingCli => {
                for f in command_flags(&text) {
                    let field = f.strip_prefix("--").unwrap_or(&f);
                    assert!(
                        TRAINING_ARGUMENTS.contains(&field),
                        "{name}: {field} is not a TrainingArguments field"
                    );
                }
                continue;
            }
            _ => continue,
        };
        let flags = command_flags(&text);
        assert!(!flags.is_empty(), "{name} {k}: no flags");
        for f in flags {
            assert!(list.contains(&f.as_str()), "{name} {k}: unknown flag {f}");
        }
    }
}

#[test]
fn python_exports_use_real_argument_names_and_balance() {
    for (name, k, text) in all_exports() {
        // Unsloth's names are checked against its source (unsloth_calls_use_unsloth_s_argument_names).
        if k.fence() != "python" || k == ExportKind::Unsloth {
            continue;
        }
        assert!(brackets_balance(&text), "{name} {k}: unbalanced\n{text}");
        for kw in python_kwargs(&text) {
            let ok = if k == ExportKind::HfTraining {
                TRAINING_ARGUMENTS.contains(&kw.as_str())
            } else {
                PYTHON_KWARGS.contains(&kw.as_str())
            };
            assert!(ok, "{name} {k}: unknown keyword {kw}");
        }
        if k == ExportKind::Diffusers {
            for line in text.lines().filter(|l| l.starts_with("pipe.")) {
                let call = line
                    .split('(')
                    .next()
                    .and_then(|c| c.rsplit('.').next())
                    .unwrap_or("");
                assert!(
                    DIFFUSERS_CALLS.contains(&call),
                    "{name}: unknown call {call}"
                );
            }
        }
    }
}

#[test]
fn optim_values_are_transformers_optimizer_names() {
    for (name, k, text) in all_exports() {
        if !matches!(k, ExportKind::HfTraining | ExportKind::HfTrainingCli) {
            continue;
        }
        let value = text
            .lines()
            .find_map(|l| {
                let l = l.trim().trim_end_matches([',', '\\']).trim();
                l.strip_prefix("optim=\"")
                    .map(|v| v.trim_end_matches('"'))
                    .or_else(|| l.strip_prefix("--optim "))
                    .map(str::to_string)
            })
            .unwrap_or_else(|| panic!("{name} {k}: no optim\n{text}"));
        assert!(OPTIM_NAMES.contains(&value.as_str()), "{name}: {value}");
    }
}

#[test]
fn deepspeed_config_parses_and_matches_the_plan() {
    for (name, k, text) in all_exports() {
        if k != ExportKind::DeepSpeed {
            continue;
        }
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let obj = v.as_object().expect("an object");
        for key in obj.keys() {
            assert!(DEEPSPEED_TOP.contains(&key.as_str()), "{name}: {key}");
        }
        let zero = v["zero_optimization"].as_object().expect("zero section");
        for key in zero.keys() {
            assert!(DEEPSPEED_ZERO.contains(&key.as_str()), "{name}: zero {key}");
        }
        for off in ["offload_optimizer", "offload_param"] {
            if let Some(o) = zero.get(off) {
                assert_eq!(o["device"], "cpu", "{name}");
            }
        }
        // DeepSpeed checks train_batch_size = micro × accumulation × GPUs.
        let (w, r) = fixture(&name);
        let AnyWorkload::Llm(p) = planned(&w, &r) else {
            panic!("LLM")
        };
        let micro = v["train_micro_batch_size_per_gpu"].as_u64().unwrap();
        let acc = v["gradient_accumulation_steps"].as_u64().unwrap();
        assert_eq!(micro, u64::from(p.run.batch));
        assert_eq!(acc, u64::from(p.run.grad_accum));
        assert_eq!(
            v["train_batch_size"].as_u64().unwrap(),
            micro * acc * u64::from(p.gpu.count)
        );
        assert_eq!(v, deepspeed::config(&p));
        // Parameter offload exists only at stage 3.
        if zero.contains_key("offload_param") {
            assert_eq!(zero["stage"], 3, "{name}");
        }
    }
}

#[test]
fn accelerate_yaml_parses_back_to_the_config() {
    for (name, k, text) in all_exports() {
        if k != ExportKind::AccelerateFsdp {
            continue;
        }
        let v = parse_yaml(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        for key in v.as_object().unwrap().keys() {
            assert!(ACCELERATE_KEYS.contains(&key.as_str()), "{name}: {key}");
        }
        for key in v["fsdp_config"].as_object().unwrap().keys() {
            assert!(FSDP_KEYS.contains(&key.as_str()), "{name}: {key}");
        }
        assert_eq!(v["distributed_type"], "FSDP");
        assert!(matches!(
            v["mixed_precision"].as_str(),
            Some("no" | "fp16" | "bf16")
        ));
        let (w, r) = fixture(&name);
        let AnyWorkload::Llm(p) = planned(&w, &r) else {
            panic!("LLM")
        };
        assert_eq!(v, accelerate_fsdp::config(&p), "{name}");
    }
}

#[test]
fn ollama_modelfile_uses_real_parameters() {
    for (name, k, text) in all_exports() {
        if k != ExportKind::Ollama {
            continue;
        }
        let mut from = 0;
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let mut words = l.split_whitespace();
            match words.next() {
                Some("FROM") => from += 1,
                Some("PARAMETER") => {
                    let p = words.next().unwrap_or("");
                    assert!(OLLAMA_PARAMETERS.contains(&p), "{name}: {p}");
                    assert!(words.next().is_some_and(|v| v.parse::<u64>().is_ok()));
                }
                other => panic!("{name}: unexpected Modelfile line {other:?}"),
            }
        }
        assert_eq!(from, 1, "{name}: one FROM");
    }
}

/// `LLMLoadModelConfig` fields (and `GPUSetting` inside `gpu`), from lmstudio-js
/// `packages/lms-shared-types/src/llm/LLMLoadModelConfig.ts`.
const LM_STUDIO_CONFIG: &[&str] = &[
    "gpu",
    "contextLength",
    "flashAttention",
    "offloadKVCacheToGpu",
    "evalBatchSize",
    "maxParallelPredictions",
    "llamaKCacheQuantizationType",
    "llamaVCacheQuantizationType",
];
const LM_STUDIO_GPU: &[&str] = &["ratio", "numCpuExpertLayersRatio"];

/// The `key: value` pairs of the LM Studio export's `config: { … }` block.
fn lm_studio_config(text: &str) -> Vec<(String, String)> {
    let block = text
        .split_once("config: {\n")
        .and_then(|(_, rest)| rest.split_once("\n  },"))
        .map(|(b, _)| b)
        .expect("a config block");
    block
        .lines()
        .filter_map(|l| l.trim().trim_end_matches(',').split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn lm_studio_load_uses_real_fields_and_carries_the_split() {
    let mut seen_split = false;
    let mut seen_experts = false;
    for (name, k, text) in all_exports() {
        if k != ExportKind::LmStudio {
            continue;
        }
        assert!(brackets_balance(&text), "{name}");
        let cfg = lm_studio_config(&text);
        for (key, value) in &cfg {
            assert!(LM_STUDIO_CONFIG.contains(&key.as_str()), "{name}: {key}");
            if key == "gpu" {
                let inner = value.trim_start_matches("{ ").trim_end_matches(" }");
                for part in inner.split(", ") {
                    let (g, v) = part.split_once(": ").unwrap();
                    assert!(LM_STUDIO_GPU.contains(&g), "{name}: gpu.{g}");
                    // LLMLlamaAccelerationOffloadRatio: 0..=1, "max" or "off".
                    assert!(
                        v == "\"max\""
                            || v == "\"off\""
                            || v.parse::<f64>().is_ok_and(|x| (0.0..=1.0).contains(&x)),
                        "{name}: {part}"
                    );
                }
            }
        }
        let (w, r) = fixture(&name);
        let AnyWorkload::Llm(p) = planned(&w, &r) else {
            panic!("LLM")
        };
        let get = |k: &str| cfg.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        assert_eq!(get("contextLength"), Some(p.run.seq.to_string()), "{name}");
        // The GPU share is the plan's -ngl over every layer, as the llama-server export says.
        let total = p.model.layers + 1;
        let ngl = p.run.gpu_layers.unwrap_or(total).min(total);
        let gpu = get("gpu").unwrap();
        if ngl < total {
            seen_split = true;
            let ratio: f64 = gpu
                .split("ratio: ")
                .nth(1)
                .and_then(|v| v.split([',', ' ']).next())
                .and_then(|v| v.parse().ok())
                .expect("a numeric ratio for a split");
            assert!(
                (ratio * f64::from(total) - f64::from(ngl)).abs() < 0.5,
                "{name}: {ratio} of {total} is not -ngl {ngl}"
            );
            let server = render(ExportKind::LlamaCpp, &w, &r);
            assert!(server.contains(&format!("-ngl {ngl} ")), "{server}");
        } else {
            assert!(gpu.contains("ratio: \"max\""), "{name}: {gpu}");
        }
        if p.run.cpu_moe_layers > 0 {
            seen_experts = true;
            assert!(gpu.contains("numCpuExpertLayersRatio"), "{name}: {gpu}");
        }
    }
    assert!(
        seen_split && seen_experts,
        "fixtures cover a split and CPU experts"
    );
}

#[test]
fn llama_server_context_covers_every_slot() {
    let (w, r) = fixture("llamacpp");
    let AnyWorkload::Llm(p) = planned(&w, &r) else {
        panic!("LLM")
    };
    let text = render(ExportKind::LlamaCpp, &w, &r);
    let value = |flag: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{flag} ")))
            .map(|v| v.trim_end_matches(" \\").to_string())
    };
    let c: u64 = value("-c").unwrap().parse().unwrap();
    let np: u64 = value("-np").unwrap().parse().unwrap();
    assert_eq!(c, np * u64::from(p.run.seq));
    // A quantized V cache needs flash attention in llama.cpp.
    if value("--cache-type-v").is_some_and(|v| v != "f16") {
        assert_eq!(value("-fa").as_deref(), Some("on"));
    }
    let b: u64 = value("-b").unwrap().parse().unwrap();
    let ub: u64 = value("-ub").unwrap().parse().unwrap();
    assert!(b >= ub);
}

#[test]
fn exports_reflect_the_plan_not_the_input() {
    // 1×24 GB full fine-tuning of an 8B model: the plan switches to adapters, so the PEFT
    // export applies although the input said `full`.
    let (w, r) = fixture("train-1gpu");
    let AnyWorkload::Llm(given) = &w else {
        panic!("LLM")
    };
    assert_eq!(given.run.method.as_str(), "full");
    let kinds = kinds_for_os(&w, &r, Os::Linux);
    assert!(
        kinds.contains(&ExportKind::Peft),
        "{:?} {:?}",
        kinds,
        r.plan
    );
    let peft = render(ExportKind::Peft, &w, &r);
    assert!(peft.contains("LoraConfig("));
    // The diffusion plan's changes show in the ComfyUI flags or nodes.
    let (w, r) = fixture("comfyui");
    assert!(!r.plan.strategies.is_empty(), "{:?}", r.plan);
    let AnyWorkload::Diffusion(before) = &w else {
        panic!("diffusion")
    };
    let AnyWorkload::Diffusion(after) = planned(&w, &r) else {
        panic!("diffusion")
    };
    assert_ne!(before.run, after.run);
    let comfy = render(ExportKind::ComfyUi, &w, &r);
    let changed = comfy.contains("--lowvram")
        || comfy.contains("--fp8_e4m3fn")
        || comfy.contains("GGUF")
        || comfy.contains("VAEDecodeTiled")
        || comfy.contains("device cpu");
    assert!(changed, "{comfy}");
}

#[test]
fn qlora_loads_a_4bit_base_and_lora_does_not() {
    let (w, r) = fixture("train-qlora");
    let q = render(ExportKind::Peft, &w, &r);
    assert!(q.contains("load_in_4bit=True") && q.contains("bnb_4bit_quant_type=\"nf4\""));
    assert!(q.contains("prepare_model_for_kbit_training(model"));
    assert!(q.contains("quantization_config=bnb_config"));
    assert!(q.contains("target_modules=[\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\"]"));
    let (w, r) = fixture("train-lora-fp16");
    let l = render(ExportKind::Peft, &w, &r);
    assert!(
        !l.contains("BitsAndBytesConfig") && l.contains("r=16,"),
        "{l}"
    );
    let args = render(ExportKind::HfTraining, &w, &r);
    assert!(
        args.contains("fp16=True") && !args.contains("bf16=True"),
        "{args}"
    );
    assert!(args.contains("optim=\"adamw_bnb_8bit\""), "{args}");
}

#[test]
fn packing_exports_trl_packing_and_torchtune_packed() {
    let base = "[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.2-1b\"\n[run]\ntask = \"training\"\nmethod = \"lora\"\nseq = 2048\nbatch = 2\n";
    let (w, r) = load(&format!("{base}packing = true\n"));
    let args = render(ExportKind::HfTraining, &w, &r);
    assert!(
        args.contains("packing=True, max_length=2048")
            && args.contains("rows of 2048 tokens, 2 per device batch"),
        "{args}"
    );
    // The TrainingArguments themselves have no packing field (the real parser checks them).
    assert!(!args.contains("    packing="), "{args}");
    let tt = render(ExportKind::Torchtune, &w, &r);
    assert!(tt.contains("packed: true"), "{tt}");
    assert!(render(ExportKind::Unsloth, &w, &r).contains("packing=True, max_length=2048"));
    let (w, r) = load(base);
    assert!(render(ExportKind::Torchtune, &w, &r).contains("packed: false"));
    assert!(!render(ExportKind::HfTraining, &w, &r).contains("packing=True"));
}

#[test]
fn torch_compile_exports_the_trainer_switch_and_torchtune_compile() {
    let base = "[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.2-1b\"\n[run]\ntask = \"training\"\nmethod = \"lora\"\nseq = 1024\n";
    let (w, r) = load(&format!("{base}torch_compile = true\n"));
    assert!(render(ExportKind::HfTraining, &w, &r).contains("    torch_compile=True,"));
    assert!(render(ExportKind::HfTrainingCli, &w, &r).contains("--torch_compile"));
    assert!(render(ExportKind::Torchtune, &w, &r).contains("compile: true"));
    let (w, r) = load(base);
    assert!(!render(ExportKind::HfTraining, &w, &r).contains("torch_compile"));
    assert!(render(ExportKind::Torchtune, &w, &r).contains("compile: false"));
}

#[test]
fn a_paged_optimizer_exports_bitsandbytes_paged_names() {
    let base = "[gpu]\nvram_gib = 80\ncount = 2\n[model]\npreset = \"llama-3.2-1b\"\n[run]\ntask = \"training\"\nzero_stage = 2\npaged_optimizer = true\n";
    for (optimizer, name) in [
        ("adamw", "paged_adamw_32bit"),
        ("adamw-8bit", "paged_adamw_8bit"),
        ("lion", "paged_lion_32bit"),
    ] {
        let (w, r) = load(&format!("{base}optimizer = \"{optimizer}\"\n"));
        let args = render(ExportKind::HfTraining, &w, &r);
        assert!(args.contains(&format!("optim=\"{name}\"")), "{args}");
        assert!(
            render(ExportKind::HfTrainingCli, &w, &r).contains(&format!("--optim {name}")),
            "{optimizer}"
        );
        // DeepSpeed takes the Trainer's bitsandbytes optimizer: no optimizer block of its own.
        let ds: serde_json::Value =
            serde_json::from_str(&render(ExportKind::DeepSpeed, &w, &r)).unwrap();
        assert!(ds.get("optimizer").is_none(), "{ds}");
    }
    // Not paged, DeepSpeed builds AdamW itself.
    let (w, r) = load(&base.replace("paged_optimizer = true\n", ""));
    let ds: serde_json::Value =
        serde_json::from_str(&render(ExportKind::DeepSpeed, &w, &r)).unwrap();
    assert_eq!(ds["optimizer"]["type"], "AdamW");
}

#[test]
fn reports_hold_the_verdict_table_and_exports() {
    let (w, r) = fixture("train-4gpu");
    let md = render(ExportKind::Report, &w, &r);
    for c in &r.components {
        assert!(md.contains(&format!("| {} |", c.label)), "{}", c.label);
    }
    for s in &r.plan.strategies {
        assert!(md.contains(s.as_str()), "{s}");
    }
    assert!(md.contains("```json") && md.contains("## Verdict"));
    // The planned column ends in the plan's own peak.
    let process = md
        .lines()
        .find(|l| l.starts_with("| **Peak process**"))
        .expect("a process row");
    assert!(
        process.ends_with(&format!(
            "| {} |",
            vram_doctor::units::human(r.plan.process_bytes)
        )),
        "{process}"
    );
    let j: Value = serde_json::from_str(&render(ExportKind::ReportJson, &w, &r)).unwrap();
    assert_eq!(j["result"]["capacity_bytes"], r.capacity_bytes);
    let names: Vec<&str> = j["exports"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(names.contains(&"deepspeed") && !names.contains(&"report"));
    // A game has no tool config, only the reports.
    let (g, gr) = fixture("game");
    let md = render(ExportKind::Report, &g, &gr);
    assert!(
        md.contains("Cyberpunk") && !md.contains("## Exports"),
        "{md}"
    );
}

#[test]
fn allocator_advice_is_not_offered_on_windows() {
    for (name, _) in FIXTURES {
        let (w, r) = fixture(name);
        assert!(!kinds_for_os(&w, &r, Os::Windows).contains(&ExportKind::Allocator));
        let e = render_for(ExportKind::Allocator, &w, &r, Os::Windows).unwrap_err();
        assert!(e.contains("available"), "{e}");
    }
}

// ---- torchtune and Unsloth, against their source ----

/// What tools/library_keys.py read from torchtune's and Unsloth's source (its header says how).
fn library_keys() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/library-keys.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn names(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("a list: {v}"))
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

/// Optimizer and loss classes the configs may name besides those torchtune's own configs use:
/// torch.optim's (torch/optim/__init__.py: AdamW, SGD, Adafactor), bitsandbytes' (bitsandbytes
/// optim/__init__.py: AdamW8bit, Lion) and torch.nn.CrossEntropyLoss, a plain loss module that
/// the recipes take through their "third party loss functions" path (`_loss_step`).
const TORCHTUNE_EXTRA_COMPONENTS: &[&str] = &[
    "torch.optim.SGD",
    "torch.optim.Adafactor",
    "bitsandbytes.optim.AdamW8bit",
    "bitsandbytes.optim.Lion",
    "torch.nn.CrossEntropyLoss",
];

/// Everything in a torchtune config that torchtune's source does not read: top-level keys its
/// recipe does not read, a builder that does not exist, an argument the builder does not take.
fn torchtune_problems(c: &Value) -> Vec<String> {
    let keys = library_keys();
    let tt = &keys["torchtune"];
    let recipe = if c.get("fsdp_cpu_offload").is_some() {
        "distributed"
    } else {
        "single_device"
    };
    let method = if c["model"].get("lora_rank").is_some() {
        "lora"
    } else {
        "full"
    };
    let recipe = format!("{method}_finetune_{recipe}");
    let read = names(&tt["recipes"][&recipe]);
    let mut out = Vec::new();
    for k in c.as_object().unwrap().keys() {
        if !read.contains(k) {
            out.push(format!("{recipe} reads no key {k}"));
        }
    }
    let mut components: BTreeSet<String> = names(&tt["losses"]);
    components.extend(names(&tt["optimizers"]));
    components.extend(TORCHTUNE_EXTRA_COMPONENTS.iter().map(|s| s.to_string()));
    for section in ["model", "tokenizer", "optimizer", "loss"] {
        let sec = &c[section];
        let comp = sec["_component_"].as_str().unwrap_or_default();
        match tt["builders"].get(comp) {
            Some(b) => {
                let params = names(&b["params"]);
                for k in sec.as_object().unwrap().keys() {
                    if k != "_component_" && !params.contains(k) {
                        out.push(format!("{comp} takes no {k}"));
                    }
                }
            }
            None if section == "model" || section == "tokenizer" => {
                out.push(format!("torchtune has no builder {comp}"))
            }
            None if !components.contains(comp) => out.push(format!("unknown component {comp}")),
            None => {}
        }
    }
    out
}

#[test]
fn torchtune_configs_hold_only_what_torchtune_reads() {
    let mut seen = 0;
    for (name, k, text) in all_exports() {
        if k != ExportKind::Torchtune {
            continue;
        }
        seen += 1;
        let c = parse_yaml(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        assert_eq!(
            torchtune_problems(&c),
            Vec::<String>::new(),
            "{name}\n{text}"
        );
    }
    assert!(seen >= 2, "{seen}");
}

#[test]
fn torchtune_builders_are_torchtune_s_and_build_the_catalog_model() {
    let keys = library_keys();
    let builders = &keys["torchtune"]["builders"];
    let table: toml::Value = toml::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("presets/torchtune.toml"),
        )
        .unwrap(),
    )
    .unwrap();
    let catalog = vram_doctor::catalog::Catalog::get();
    let rows = table["model"].as_array().unwrap();
    assert!(rows.len() >= 20);
    for row in rows {
        let preset = row["preset"].as_str().unwrap();
        let m = catalog
            .models
            .iter()
            .find(|m| m.id == preset)
            .unwrap_or_else(|| panic!("{preset}"));
        let family = &table["family"][row["family"].as_str().unwrap()];
        for role in ["full", "lora"] {
            let b = row[role].as_str().unwrap();
            let found = builders.get(b).unwrap_or_else(|| panic!("no builder {b}"));
            // The sizes the builder passes to its component builder are the catalog model's.
            let a = &m.arch;
            for (key, ours) in [
                ("vocab_size", u64::from(a.vocab)),
                ("num_layers", u64::from(a.layers)),
                ("embed_dim", u64::from(a.hidden)),
                ("num_heads", u64::from(a.heads)),
                ("num_kv_heads", u64::from(a.kv_heads)),
                ("intermediate_dim", u64::from(a.intermediate)),
            ] {
                if let Some(theirs) = found["arch"].get(key) {
                    assert_eq!(theirs.as_u64(), Some(ours), "{b} {key} vs {preset}");
                }
            }
            assert!(
                !found["arch"].as_object().unwrap().is_empty(),
                "{b}: no sizes read"
            );
        }
        let lora = &builders[row["lora"].as_str().unwrap()];
        let params = names(&lora["params"]);
        assert!(params.contains("quantize_base"), "{preset}");
        assert_eq!(
            params.contains("apply_lora_to_output"),
            family["lora_to_output"].as_bool().unwrap(),
            "{preset}"
        );
        let tok = family["tokenizer"].as_str().unwrap();
        assert!(builders.get(tok).is_some(), "no tokenizer builder {tok}");
    }
}

#[test]
fn torchtune_config_carries_the_plan() {
    let (w, r) = fixture("train-lora-fsdp-offload");
    let AnyWorkload::Llm(p) = planned(&w, &r) else {
        panic!("LLM")
    };
    let c = parse_yaml(&render(ExportKind::Torchtune, &w, &r)).unwrap();
    assert_eq!(c["batch_size"], p.run.batch);
    assert_eq!(c["gradient_accumulation_steps"], p.run.grad_accum);
    assert_eq!(c["tokenizer"]["max_seq_len"], p.run.seq);
    assert_eq!(c["enable_activation_checkpointing"], true);
    assert_eq!(c["enable_activation_offloading"], p.run.activation_offload);
    assert_eq!(
        c["fsdp_cpu_offload"],
        p.run.offload != vram_doctor::types::options::Offload::None
    );
    assert_eq!(c["dtype"], "bf16");
    assert_eq!(c["model"]["lora_rank"], p.run.lora_rank);
    // all-linear on Llama: the four attention projections, the MLP, not the head.
    assert_eq!(
        c["model"]["lora_attn_modules"],
        serde_json::json!(["q_proj", "k_proj", "v_proj", "output_proj"])
    );
    assert_eq!(c["model"]["apply_lora_to_mlp"], true);
    assert_eq!(c["model"]["apply_lora_to_output"], false);
    assert_eq!(
        c["loss"]["_component_"],
        "torchtune.modules.loss.LinearCrossEntropyLoss"
    );
}

#[test]
fn torchtune_and_unsloth_refuse_what_they_cannot_run() {
    let plan = |model: &str, extra: &[&str], kind: &str| {
        let mut args = vec![
            "plan",
            "--vram-gib",
            "80",
            "--model",
            model,
            "--task",
            "training",
            "--method",
            "lora",
            "--seq",
            "512",
        ];
        args.extend(extra);
        args.extend(["--export", kind]);
        let out = cli(&args);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for (model, extra, kind, says) in [
        ("gpt2", &[][..], "torchtune", "no model builder for GPT-2"),
        (
            "llama-3.1-8b",
            &["--lora-targets", "q_proj,gate_proj"][..],
            "torchtune",
            "apply_lora_to_mlp",
        ),
        (
            "gemma-2-2b",
            &["--lora-targets", "q_proj,lm_head"][..],
            "torchtune",
            "apply_lora_to_output",
        ),
        (
            "llama-3.1-8b",
            &["--precision", "fp16-mixed"][..],
            "torchtune",
            "fp16",
        ),
        ("llama-3.1-8b", &["--gpus", "2"][..], "unsloth", "one GPU"),
        (
            "llama-3.1-8b",
            &["--lora-targets", r"model\.layers\.0\..*"][..],
            "unsloth",
            "module names",
        ),
    ] {
        let (code, err) = plan(model, extra, kind);
        assert_eq!(code, Some(2), "{model} {extra:?} {kind}: {err}");
        assert!(
            err.contains(kind) && err.contains(says),
            "{model} {extra:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    // What they can run is offered.
    let (w, r) = fixture("train-qlora");
    let kinds = kinds_for_os(&w, &r, Os::Linux);
    assert!(kinds.contains(&ExportKind::Torchtune) && kinds.contains(&ExportKind::Unsloth));
}

#[test]
fn unsloth_calls_use_unsloth_s_argument_names() {
    let keys = library_keys();
    let mut real = names(&keys["unsloth"]["from_pretrained"]);
    real.extend(names(&keys["unsloth"]["get_peft_model"]));
    let mut seen = 0;
    for (name, k, text) in all_exports() {
        if k != ExportKind::Unsloth {
            continue;
        }
        seen += 1;
        assert!(brackets_balance(&text), "{name}");
        for kw in python_kwargs(&text) {
            assert!(real.contains(&kw), "{name}: Unsloth takes no {kw}\n{text}");
        }
        assert!(
            text.contains("FastLanguageModel.from_pretrained("),
            "{name}"
        );
    }
    assert!(seen >= 1);
    let (w, r) = fixture("train-qlora");
    let text = render(ExportKind::Unsloth, &w, &r);
    assert!(text.contains("load_in_4bit=True"), "{text}");
    assert!(
        text.contains("target_modules=[\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\"]"),
        "{text}"
    );
}

/// One golden file per export kind: (fixture, kind).
const GOLDEN: &[(&str, ExportKind)] = &[
    ("train-4gpu", ExportKind::DeepSpeed),
    ("train-1gpu", ExportKind::HfTraining),
    ("train-4gpu", ExportKind::HfTrainingCli),
    ("train-4gpu", ExportKind::AccelerateFsdp),
    ("train-qlora", ExportKind::Peft),
    ("train-lora-fsdp-offload", ExportKind::Torchtune),
    ("train-qlora", ExportKind::Unsloth),
    ("llamacpp", ExportKind::LlamaCpp),
    ("llamacpp", ExportKind::Ollama),
    ("llamacpp-split", ExportKind::LmStudio),
    ("vllm", ExportKind::Vllm),
    ("transformers", ExportKind::Transformers),
    ("comfyui", ExportKind::ComfyUi),
    ("diffusers", ExportKind::Diffusers),
    ("transformers", ExportKind::Allocator),
    ("train-1gpu", ExportKind::Report),
    ("diffusers", ExportKind::ReportJson),
];

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden")
}

#[test]
fn golden_files_match() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let covered: BTreeSet<&str> = GOLDEN.iter().map(|(_, k)| k.as_str()).collect();
    assert_eq!(covered.len(), ExportKind::ALL.len(), "a golden per kind");
    let mut stale = Vec::new();
    for (fx, kind) in GOLDEN {
        let (w, r) = fixture(fx);
        let text = render(*kind, &w, &r);
        let path = golden_dir().join(format!("{fx}__{}", kind.file_name()));
        if update {
            std::fs::create_dir_all(golden_dir()).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
        if want != text {
            stale.push(format!("{}\n--- got:\n{text}", path.display()));
        }
    }
    assert!(
        stale.is_empty(),
        "exports differ from the golden files (UPDATE_GOLDEN=1 cargo test --test export regenerates them):\n{}",
        stale.join("\n")
    );
}

// ---- The command line ----

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(args)
        .output()
        .expect("runs")
}

#[test]
fn cli_writes_exports_atomically_and_rejects_bad_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ds.json");
    let base = [
        "plan",
        "--vram-gib",
        "24",
        "--gpus",
        "4",
        "--model",
        "llama-3.1-8b",
        "--task",
        "training",
    ];
    let mut args = base.to_vec();
    args.extend(["--export", "deepspeed", "--out", file.to_str().unwrap()]);
    let out = cli(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(v["zero_optimization"].is_object());
    // Several kinds go to a directory under their own names; nothing else is left there.
    let sub = dir.path().join("all");
    let mut args = base.to_vec();
    args.extend(["--export", "all", "--out", sub.to_str().unwrap()]);
    assert!(cli(&args).status.success());
    let mut names: Vec<String> = std::fs::read_dir(&sub)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.contains(&"ds_config.json".to_string()), "{names:?}");
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    // A wrong kind, or one that does not apply, is bad input: one line, exit 2.
    for bad in ["dsconfig", "comfyui"] {
        let mut args = base.to_vec();
        args.extend(["--export", bad]);
        let out = cli(&args);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    // Printed to stdout without --out.
    let out = cli(&[
        "plan",
        "--vram-gib",
        "12",
        "--model",
        "llama-3.1-8b",
        "--weights",
        "q4_k_m",
        "--export",
        "llama.cpp",
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("llama-server"));
}

#[test]
fn the_checkers_themselves_catch_mistakes() {
    let py = "x = f(\n    good=1,\n    bad_name=2,\n)\ny = g(a=1, b=\"=\")\nif a == b:\n    pass\n";
    let kw = python_kwargs(py);
    assert!(kw.contains("good") && kw.contains("bad_name") && kw.contains("a") && kw.contains("b"));
    assert!(!kw.contains("x") && !kw.contains("if a "), "{kw:?}");
    assert!(brackets_balance(py));
    assert!(!brackets_balance("f(a=[1, 2)\n"));
    assert_eq!(
        command_flags("# c\nprog \\\n  -a 1 \\\n  --bee\n"),
        ["-a", "--bee"]
    );
    assert!(parse_yaml("a: 1\n b: 2\n").is_err());
    assert!(
        parse_yaml("a:\n  b: \"no\"\nc: true\n")
            .is_ok_and(|v| v["a"]["b"] == "no" && v["c"] == true)
    );
    assert!(
        parse_yaml("a: [q_proj, \"no\"]\nb: null\n")
            .is_ok_and(|v| v["a"] == serde_json::json!(["q_proj", "no"]) && v["b"].is_null())
    );
    // The torchtune checker refuses a key the recipe does not read and an argument the builder
    // does not take.
    let (w, r) = fixture("train-qlora");
    let good = parse_yaml(&render(ExportKind::Torchtune, &w, &r)).unwrap();
    assert_eq!(torchtune_problems(&good), Vec::<String>::new());
    let mut bad = good.clone();
    bad["enable_activation_offload"] = Value::Bool(true);
    bad["model"]["lora_targets"] = Value::Bool(true);
    assert_eq!(
        torchtune_problems(&bad).len(),
        2,
        "{:?}",
        torchtune_problems(&bad)
    );
}

mod any_workload {
    use super::*;
    use proptest::prelude::*;

    const WEIGHTS: &[&str] = &[
        "bf16",
        "fp16",
        "fp8",
        "int8",
        "nf4",
        "awq-4bit",
        "gptq-4bit",
        "q4_k_m",
        "q8_0",
    ];
    const ENGINES: &[&str] = &["transformers", "vllm", "llama.cpp", "autoawq"];
    const OPTIMIZERS: &[&str] = &["adamw", "adamw-8bit", "sgd", "adafactor", "lion"];
    const DIFFUSION: &[&str] = &["sd15", "sdxl", "flux-dev", "sd35-large", "wan21-t2v-1.3b"];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Whatever the workload, every export that applies renders, and the JSON ones parse.
        #[test]
        fn every_applicable_export_renders(
            gib in 4u32..=96,
            gpus in 1u32..=4,
            weights in 0..WEIGHTS.len(),
            engine in 0..ENGINES.len(),
            optimizer in 0..OPTIMIZERS.len(),
            train in any::<bool>(),
            batch in 1u32..=16,
            seq in 9u32..=15,
            diffusion in 0..DIFFUSION.len(),
            comfy in any::<bool>(),
        ) {
            let gpu = format!("[gpu]\nvram_gib = {gib}\ncount = {gpus}\n");
            let llm = if train {
                let (method, w) = if WEIGHTS[weights] == "nf4" { ("qlora", "nf4") } else { ("full", "bf16") };
                format!("{gpu}[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nmethod = \"{method}\"\nweights = \"{w}\"\noptimizer = \"{}\"\nbatch = {batch}\nseq = {}\n", OPTIMIZERS[optimizer], 1u32 << seq)
            } else {
                format!("{gpu}[model]\npreset = \"llama-3.1-8b\"\n[run]\nweights = \"{}\"\nengine = \"{}\"\nbatch = {batch}\nseq = {}\n", WEIGHTS[weights], ENGINES[engine], 1u32 << seq)
            };
            let engine = if comfy { "comfyui" } else { "diffusers" };
            let diff = format!("{gpu}[model]\npreset = \"{}\"\n[run]\ntask = \"diffusion\"\nengine = \"{engine}\"\nbatch = {}\n", DIFFUSION[diffusion], batch.min(4));
            for text in [llm, diff] {
                let (w, r) = load(&text);
                for k in kinds_for_os(&w, &r, Os::Linux) {
                    let out = render_for(k, &w, &r, Os::Linux);
                    prop_assert!(out.is_ok(), "{k}: {out:?}");
                    let out = out.unwrap();
                    if k.fence() == "json" {
                        prop_assert!(serde_json::from_str::<Value>(&out).is_ok(), "{k}");
                    }
                    if k == ExportKind::AccelerateFsdp {
                        prop_assert!(parse_yaml(&out).is_ok(), "{out}");
                    }
                    if k.fence() == "python" {
                        prop_assert!(brackets_balance(&out), "{out}");
                    }
                }
            }
        }
    }
}

/// Issue 17: `--export vllm` (or ollama, llama.cpp) of a plan made for another engine plans the
/// run for that engine, with its nearest weight format, and says so on stderr, and when that
/// engine's plan does not fit, says that too; a training plan still has no inference-engine
/// export.
#[test]
fn an_engine_export_of_another_engines_plan_plans_for_that_engine() {
    let ok = |args: &[&str]| {
        let out = cli(args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {err}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), err)
    };
    let (text, err) = ok(&[
        "plan",
        "--gpu",
        "rtx-4090",
        "--model",
        "llama-3.1-8b",
        "--engine",
        "transformers",
        "--export",
        "vllm",
    ]);
    assert!(text.contains("vllm serve"), "{text}");
    assert!(
        err.contains("made for transformers") && err.contains("again for vllm"),
        "{err}"
    );
    // GGUF weights have no vLLM kernel: the same bits as AWQ.
    let (text, err) = ok(&[
        "plan",
        "--gpu",
        "rtx-4060",
        "--model",
        "qwen2.5-14b",
        "--weights",
        "q4_k_m",
        "--seq",
        "8192",
        "--engine",
        "llama.cpp",
        "--export",
        "vllm",
    ]);
    assert!(err.contains("q4_k_m → awq-4bit"), "{err}");
    assert!(text.contains("a awq-4bit checkpoint"), "{text}");
    // A 14B model in AWQ does not fit vLLM on 8 GB: the settings are still printed, never
    // silently (the llama.cpp plan fitted by splitting, which vLLM cannot do).
    assert!(
        err.contains("'vllm' settings do not fit this card") && err.contains("short"),
        "{err}"
    );
    let (_, err) = ok(&[
        "plan",
        "--gpu",
        "rtx-4090",
        "--model",
        "llama-3.1-8b",
        "--engine",
        "transformers",
        "--export",
        "vllm",
    ]);
    assert!(!err.contains("do not fit"), "{err}");
    // An AWQ plan for transformers exported to ollama: Q4_K_M, split to fit 8 GB.
    let (text, err) = ok(&[
        "plan",
        "--gpu",
        "rtx-4060",
        "--model",
        "qwen2.5-14b",
        "--weights",
        "awq-4bit",
        "--seq",
        "8192",
        "--engine",
        "transformers",
        "--export",
        "ollama",
        "--host-ram-gib",
        "32",
    ]);
    assert!(err.contains("awq-4bit → q4_k_m"), "{err}");
    let ngl: u32 = text
        .lines()
        .find_map(|l| l.strip_prefix("PARAMETER num_gpu "))
        .expect("num_gpu")
        .trim()
        .parse()
        .unwrap();
    assert!(
        ngl > 0 && ngl < 49,
        "a 14B Q4_K_M is split on 8 GB: num_gpu {ngl}"
    );
    // Training has no serving engine to plan for.
    let out = cli(&[
        "plan",
        "--vram-gib",
        "24",
        "--model",
        "llama-3.1-8b",
        "--task",
        "training",
        "--export",
        "vllm",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// The exports read a result's typed parts (`Plan.details`, component ids): its JSON reads
/// back with each kind's details in its own variant and the same component ids.
#[test]
fn every_fixture_result_reads_back_from_its_json() {
    use vram_doctor::plan::Details;
    for (name, text) in FIXTURES {
        let (w, r) = load(text);
        let json = serde_json::to_string(&r).unwrap();
        let back: PlanResult =
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("{name}: {e}"));
        let kind_matches = matches!(
            (&w, &back.plan.details),
            (AnyWorkload::Llm(_), Details::Llm)
                | (AnyWorkload::Diffusion(_), Details::Diffusion(_))
                | (AnyWorkload::Game(_), Details::Game(_))
        );
        assert!(
            kind_matches,
            "{name}: details read back as {:?}",
            back.plan.details
        );
        let ids = |r: &PlanResult| r.components.iter().map(|c| c.id).collect::<Vec<_>>();
        assert_eq!(ids(&back), ids(&r), "{name}");
    }
}
