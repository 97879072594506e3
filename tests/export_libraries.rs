//! The training exports as the real libraries read them (issue 14): for a grid of training
//! workloads every training export is rendered, and `tests/export_libraries.py` feeds each to
//! the library's own parser or validator (transformers' `HfArgumentParser` and
//! `TrainingArguments`, DeepSpeed's `DeepSpeedConfig` after the Trainer's own processing,
//! accelerate's launcher and `FullyShardedDataParallelPlugin`, peft's `LoraConfig` and
//! `get_peft_model`, transformers' `BitsAndBytesConfig`). The checker reports what the parsed
//! objects say; this test compares that with what the plan meant.
//!
//! The libraries come from CI's calibration venv (`.ci/run` installs
//! tests/calibration/requirements-dry-run.txt, DeepSpeed without its ops, and sets
//! `VRAM_DOCTOR_CALIBRATION_PYTHON`). Without them the test says so, and fails under CI=true.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use vram_doctor::export::{ExportKind, Os, kinds_for_os, planned, render_for};
use vram_doctor::memory::WorkloadFile;
use vram_doctor::memory::any::AnyWorkload;
use vram_doctor::plan::plan_any;
use vram_doctor::resolve::resolve_any;
use vram_doctor::types::dtype::WeightFormat;
use vram_doctor::types::options::{
    Checkpointing, LoraTargets, Loss, Method, Offload, Optimizer, OptimizerStep, Precision,
};
use vram_doctor::types::workload::Workload;

/// The grid: `(name, gpu, model, run lines)`. Each planned run must keep the fields asked for
/// (checked below), so the grid covers what its names say.
const GRID: &[(&str, &str, &str, &str)] = &[
    (
        "full-bf16mixed-adamw",
        "h100-80gb",
        "qwen2.5-0.5b",
        "precision = \"bf16-mixed\"\noptimizer = \"adamw\"\nbatch = 4\nseq = 1024",
    ),
    (
        "full-bf16mixed-adamw-fused",
        "h100-80gb",
        "qwen2.5-0.5b",
        "precision = \"bf16-mixed\"\noptimizer = \"adamw\"\noptimizer_step = \"fused\"\nbatch = 4\nseq = 1024",
    ),
    (
        "full-fp16mixed-sgd-ckpt",
        "v100-32gb",
        "qwen2.5-0.5b",
        "precision = \"fp16-mixed\"\noptimizer = \"sgd\"\ncheckpointing = \"full\"\nbatch = 2\nseq = 1024",
    ),
    (
        "full-bf16pure-adafactor",
        "a100-80gb",
        "qwen2.5-1.5b",
        "precision = \"bf16\"\noptimizer = \"adafactor\"\nbatch = 2\nseq = 1024",
    ),
    (
        "full-fp32-lion-selective",
        "a100-80gb",
        "qwen2.5-0.5b",
        "precision = \"fp32\"\noptimizer = \"lion\"\ncheckpointing = \"selective\"\nbatch = 1\nseq = 512",
    ),
    (
        "full-adamw8bit-accum4",
        "rtx-4090",
        "llama-3.2-1b",
        "optimizer = \"adamw-8bit\"\ncheckpointing = \"full\"\ngrad_accum = 4\nbatch = 2\nseq = 1024",
    ),
    (
        "full-adamw8bit-paged",
        "rtx-4090",
        "llama-3.2-1b",
        "optimizer = \"adamw-8bit\"\npaged_optimizer = true\ncheckpointing = \"full\"\nbatch = 2\nseq = 1024",
    ),
    (
        "lora-compile",
        "rtx-4090",
        "llama-3.2-1b",
        "method = \"lora\"\ntorch_compile = true\nbatch = 2\nseq = 1024",
    ),
    (
        "zero2-8gpu",
        "h100-80gb\ncount = 8",
        "llama-3.1-8b",
        "zero_stage = 2\ncheckpointing = \"full\"\nbatch = 1\nseq = 2048",
    ),
    (
        "zero3-8gpu",
        "h100-80gb\ncount = 8",
        "llama-3.1-8b",
        "zero_stage = 3\ncheckpointing = \"full\"\nbatch = 2\nseq = 2048\ngrad_accum = 2",
    ),
    (
        "zero2-offload-optimizer",
        "a100-40gb\ncount = 4",
        "llama-3.1-8b",
        "zero_stage = 2\noffload = \"optimizer\"\ncheckpointing = \"full\"\nbatch = 1\nseq = 2048",
    ),
    (
        "zero3-offload-all",
        "rtx-4090\ncount = 2",
        "llama-3.1-8b",
        "zero_stage = 3\noffload = \"optimizer+params\"\ncheckpointing = \"full\"\nbatch = 1\nseq = 1024",
    ),
    (
        "offload-optimizer-1gpu",
        "rtx-4090",
        "qwen2.5-1.5b",
        "offload = \"optimizer\"\ncheckpointing = \"full\"\nbatch = 1\nseq = 1024",
    ),
    (
        "lora-all-ckpt",
        "rtx-4090",
        "llama-3.1-8b",
        "method = \"lora\"\nlora_targets = \"all-linear\"\ncheckpointing = \"full\"\nbatch = 1\nseq = 2048",
    ),
    (
        "lora-qv-r64",
        "rtx-4090",
        "qwen2.5-1.5b",
        "method = \"lora\"\nlora_rank = 64\nlora_targets = \"qv\"\nbatch = 2\nseq = 1024",
    ),
    (
        "lora-pattern-qk",
        "rtx-4090",
        "qwen2.5-1.5b",
        "method = \"lora\"\nlora_targets = '.*\\.(q|k)_proj'\nbatch = 1\nseq = 1024",
    ),
    (
        "lora-attention-ddp",
        "rtx-4090\ncount = 4",
        "llama-3.1-8b",
        "method = \"lora\"\nlora_targets = \"attention\"\ncheckpointing = \"full\"\nbatch = 1\nseq = 2048",
    ),
    (
        "lora-zero3-offload-70b",
        "a100-40gb\ncount = 8",
        "llama-3.1-70b",
        "method = \"lora\"\nzero_stage = 3\noffload = \"optimizer+params\"\ncheckpointing = \"full\"\nbatch = 1\nseq = 1024",
    ),
    (
        "qlora-nf4-8bitadam",
        "rtx-4090",
        "llama-3.1-8b",
        "method = \"qlora\"\nweights = \"nf4\"\noptimizer = \"adamw-8bit\"\ncheckpointing = \"full\"\nbatch = 1\nseq = 2048",
    ),
    (
        "qlora-zero3-70b",
        "a100-80gb\ncount = 4",
        "llama-3.1-70b",
        "method = \"qlora\"\nweights = \"nf4\"\nzero_stage = 3\ncheckpointing = \"full\"\nbatch = 1\nseq = 2048",
    ),
    (
        "qlora-fp4-fp16-t4",
        "t4",
        "qwen2.5-1.5b",
        "method = \"qlora\"\nweights = \"fp4\"\nprecision = \"fp16-mixed\"\ncheckpointing = \"full\"\nbatch = 1\nseq = 1024",
    ),
    (
        "qlora-int8-ddp",
        "rtx-4090\ncount = 2",
        "qwen2.5-1.5b",
        "method = \"qlora\"\nweights = \"int8\"\nbatch = 1\nseq = 1024",
    ),
];

const TRAINING_EXPORTS: [ExportKind; 5] = [
    ExportKind::HfTraining,
    ExportKind::HfTrainingCli,
    ExportKind::DeepSpeed,
    ExportKind::AccelerateFsdp,
    ExportKind::Peft,
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn workload_text(gpu: &str, model: &str, run: &str) -> String {
    format!(
        "[gpu]\n{}[model]\npreset = \"{model}\"\n[run]\ntask = \"training\"\n{run}\n",
        gpu_lines(gpu)
    )
}

/// `gpu` is a preset id, optionally followed by `\ncount = N`.
fn gpu_lines(gpu: &str) -> String {
    let mut lines = gpu.splitn(2, '\n');
    let id = lines.next().unwrap_or_default();
    let rest = lines.next().map(|l| format!("{l}\n")).unwrap_or_default();
    format!("preset = \"{id}\"\n{rest}")
}

/// The checker's Python: CI's venv (required there), else python3 if it has the libraries.
fn python() -> Option<String> {
    if let Ok(p) = std::env::var("VRAM_DOCTOR_CALIBRATION_PYTHON")
        && !p.is_empty()
    {
        return Some(p);
    }
    let probe = Command::new("python3")
        .args([
            "-c",
            "import transformers, peft, deepspeed, accelerate, bitsandbytes",
        ])
        .env("DS_ACCELERATOR", "cpu")
        .output();
    if probe.is_ok_and(|o| o.status.success()) {
        return Some("python3".into());
    }
    let msg = "transformers, peft, deepspeed, accelerate and bitsandbytes are missing (set \
               VRAM_DOCTOR_CALIBRATION_PYTHON to the venv .ci/run makes); the training \
               exports were not given to the real libraries";
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
    eprintln!("SKIPPED: {msg}");
    None
}

struct Case {
    name: &'static str,
    asked: Workload,
    plan: Workload,
    kinds: Vec<ExportKind>,
}

/// Renders every training export of every grid workload into `dir/<name>/`; returns the
/// cases and the checker's manifest.
fn render_grid(dir: &Path) -> (Vec<Case>, Value) {
    let mut cases = Vec::new();
    let mut manifest = Vec::new();
    for (name, gpu, model, run) in GRID {
        let text = workload_text(gpu, model, run);
        let f = WorkloadFile::parse(&text, name).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        let w = resolve_any(&f, Path::new("."), None).unwrap_or_else(|e| panic!("{name}: {e}"));
        let r = plan_any(&w);
        let (AnyWorkload::Llm(asked), AnyWorkload::Llm(plan)) = (&w, planned(&w, &r)) else {
            panic!("{name}: an LLM workload expected")
        };
        let kinds: Vec<ExportKind> = kinds_for_os(&w, &r, Os::Linux)
            .into_iter()
            .filter(|k| TRAINING_EXPORTS.contains(k))
            .collect();
        let case_dir = dir.join(name);
        std::fs::create_dir_all(&case_dir).expect("case dir");
        for k in &kinds {
            let text = render_for(*k, &w, &r, Os::Linux).unwrap_or_else(|e| panic!("{name}: {e}"));
            std::fs::write(case_dir.join(k.file_name()), text).expect("write export");
        }
        let m = &plan.model;
        manifest.push(json!({
            "id": name,
            "dir": case_dir,
            "gpus": plan.gpu.count,
            "bf16_gpu": plan.gpu.bf16,
            "arch": {
                "layers": m.layers, "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads,
                "head_dim": m.head_dim, "intermediate": m.intermediate, "vocab": m.vocab,
                "tied_embeddings": m.tied_embeddings,
            },
        }));
        cases.push(Case {
            name,
            asked: asked.clone(),
            plan,
            kinds,
        });
    }
    (cases, Value::Array(manifest))
}

/// Runs the checker over the manifest: the libraries' versions and one result per case.
fn check(py: &str, dir: &Path, manifest: &Value) -> (Value, BTreeMap<String, Value>) {
    let path = dir.join("manifest.json");
    std::fs::write(&path, manifest.to_string()).expect("write manifest");
    let o = Command::new(py)
        .arg(root().join("tests/export_libraries.py"))
        .arg(&path)
        .env("DS_ACCELERATOR", "cpu")
        .output()
        .expect("python starts");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "checker failed: {}\n{stderr}", o.status);
    let mut lines = std::str::from_utf8(&o.stdout).expect("utf-8").lines();
    let versions: Value =
        serde_json::from_str(lines.next().expect("versions line")).expect("versions JSON");
    let results = lines
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("result JSON");
            (v["id"].as_str().expect("id").to_string(), v)
        })
        .collect();
    (versions, results)
}

/// The optimizer class the Trainer builds for each optimizer (transformers
/// `Trainer.get_optimizer_cls_and_kwargs`): torch's AdamW and SGD, transformers' Adafactor,
/// bitsandbytes' AdamW with 8-bit states and Lion with 32-bit states; a paged plan takes
/// bitsandbytes' AdamW for AdamW too (`_get_bitsandbytes_optimizer`: `is_paged = "paged" in
/// optim_name`, `optim_bits = 8 if "8bit" in optim_name else 32`).
fn optimizer_class(o: Optimizer, step: OptimizerStep, paged: bool) -> (&'static str, Value) {
    let bnb = |class, bits: u32| (class, json!({"optim_bits": bits, "is_paged": paged}));
    match o {
        Optimizer::AdamW if paged => bnb("bitsandbytes.optim.adamw.AdamW", 32),
        // `adamw_torch_fused` passes `fused=True` (`_get_adamw_torch`).
        Optimizer::AdamW if step == OptimizerStep::Fused => {
            ("torch.optim.adamw.AdamW", json!({"fused": true}))
        }
        Optimizer::AdamW => ("torch.optim.adamw.AdamW", json!({})),
        Optimizer::AdamW8bit => bnb("bitsandbytes.optim.adamw.AdamW", 8),
        Optimizer::Sgd => ("torch.optim.sgd.SGD", json!({})),
        Optimizer::Adafactor => ("transformers.optimization.Adafactor", json!({})),
        Optimizer::Lion => bnb("bitsandbytes.optim.lion.Lion", 32),
    }
}

/// Leaf names of the linear layers LoRA wraps on a Llama-shaped model for each choice
/// (peft `"all-linear"` takes every linear layer but the output head, peft
/// `tuners/tuners_utils.py` `_maybe_include_all_linear_layers`).
fn wrapped(t: &LoraTargets) -> Vec<&str> {
    // The cases are Llama/Qwen2 models: the leaf names PEFT wraps for each spelling.
    let mut v = match t {
        LoraTargets::AllLinear => vec![
            "q_proj",
            "k_proj",
            "v_proj",
            "o_proj",
            "gate_proj",
            "up_proj",
            "down_proj",
        ],
        LoraTargets::Attention => vec!["q_proj", "k_proj", "v_proj", "o_proj"],
        LoraTargets::Default => vec!["q_proj", "v_proj"],
        LoraTargets::Names(n) => n.iter().map(String::as_str).collect(),
        LoraTargets::Regex(p) => panic!("give the wrapped names of the pattern case {p} by hand"),
    };
    v.sort_unstable();
    v
}

/// The ZeRO stage the plan runs: its own, raised to what its offload needs (the DeepSpeed
/// export's rule, see src/export/deepspeed.rs).
fn stage(r: &vram_doctor::types::workload::Run) -> u64 {
    u64::from(match r.offload {
        Offload::None => r.zero_stage,
        Offload::Optimizer => r.zero_stage.max(2),
        Offload::OptimizerParams => 3,
    })
}

fn compare(case: &Case, res: &Value, failures: &mut Vec<String>) {
    let name = case.name;
    let r = &case.plan.run;
    let mut eq = |what: &str, got: &Value, want: Value| {
        if *got != want {
            failures.push(format!("{name}: {what} is {got}, the plan means {want}"));
        }
    };
    let (bf16, fp16) = (
        matches!(r.precision, Precision::Bf16Mixed | Precision::Bf16),
        r.precision == Precision::Fp16Mixed,
    );
    let sharded_or_offloaded = stage(r) > 0;
    for form in ["cli", "python"] {
        let a = &res[form];
        eq(
            &format!("{form} per_device_train_batch_size"),
            &a["per_device_train_batch_size"],
            json!(r.batch),
        );
        eq(
            &format!("{form} gradient_accumulation_steps"),
            &a["gradient_accumulation_steps"],
            json!(r.grad_accum),
        );
        eq(&format!("{form} bf16"), &a["bf16"], json!(bf16));
        eq(&format!("{form} fp16"), &a["fp16"], json!(fp16));
        eq(
            &format!("{form} gradient_checkpointing"),
            &a["gradient_checkpointing"],
            json!(r.checkpointing != Checkpointing::None),
        );
        eq(
            &format!("{form} torch_compile"),
            &a["torch_compile"],
            json!(r.torch_compile),
        );
        eq(
            &format!("{form} deepspeed"),
            &a["deepspeed"],
            if sharded_or_offloaded {
                json!("ds_config.json")
            } else {
                Value::Null
            },
        );
    }
    eq(
        "use_liger_kernel",
        &res["cli"]["use_liger_kernel"],
        json!(r.loss == Loss::Chunked),
    );
    eq(
        "processes the launcher starts",
        &res["cli"]["launcher_gpus"],
        json!(case.plan.gpu.count),
    );
    let (class, kwargs) = optimizer_class(r.optimizer, r.optimizer_step, r.paged_optimizer);
    eq(
        "the Trainer's optimizer",
        &res["cli"]["optimizer_class"],
        json!(class),
    );
    eq(
        "the Trainer's optimizer arguments",
        &res["cli"]["optimizer_kwargs"],
        kwargs,
    );
    {
        let d = &res["deepspeed"];
        eq("ZeRO stage", &d["stage"], json!(stage(r)));
        let cpu = |on: bool| if on { json!("cpu") } else { Value::Null };
        eq(
            "offload_optimizer.device",
            &d["offload_optimizer"],
            cpu(r.offload != Offload::None),
        );
        eq(
            "offload_param.device",
            &d["offload_param"],
            cpu(r.offload == Offload::OptimizerParams),
        );
        eq("DeepSpeed bf16", &d["bf16"], json!(bf16));
        eq("DeepSpeed fp16", &d["fp16"], json!(fp16));
        eq(
            "DeepSpeed micro batch",
            &d["train_micro_batch_size_per_gpu"],
            json!(r.batch),
        );
        eq(
            "DeepSpeed train_batch_size",
            &d["train_batch_size"],
            json!(r.batch * r.grad_accum * case.plan.gpu.count),
        );
        eq(
            "DeepSpeed 'auto' values left",
            &d["autos_left_after_trainer"],
            json!([]),
        );
    }
    let f = &res["fsdp"];
    let sharding = match stage(r) {
        0 => "NO_SHARD",
        1 | 2 => "SHARD_GRAD_OP",
        _ => "FULL_SHARD",
    };
    eq(
        "FSDP sharding strategy",
        &f["sharding_strategy"],
        json!(sharding),
    );
    eq(
        "FSDP offload_params",
        &f["offload_params"],
        json!(r.offload != Offload::None),
    );
    eq(
        "FSDP activation checkpointing",
        &f["activation_checkpointing"],
        json!(r.checkpointing != Checkpointing::None),
    );
    eq(
        "accelerate num_processes",
        &f["num_processes"],
        json!(case.plan.gpu.count),
    );
    eq(
        "accelerate mixed_precision",
        &f["mixed_precision"],
        json!(if bf16 {
            "bf16"
        } else if fp16 {
            "fp16"
        } else {
            "no"
        }),
    );
    if r.method == Method::Full {
        return;
    }
    let p = &res["peft"];
    eq("LoRA r", &p["r"], json!(r.lora_rank));
    eq(
        "LoRA modules wrapped",
        &p["wrapped"],
        json!(match &r.lora_targets {
            LoraTargets::Regex(_) => vec!["k_proj", "q_proj"],
            t => wrapped(t),
        }),
    );
    eq("LoRA task_type", &p["task_type"], json!("CAUSAL_LM"));
    let multi = case.plan.gpu.count > 1;
    // A sharded run (ZeRO-3, FSDP FULL_SHARD) places the weights itself and refuses a device
    // map; otherwise, with one process per GPU, each process loads onto its own GPU (LOCAL_RANK,
    // which the checker sets to 1).
    let device_map = if stage(r) == 3 {
        Value::Null
    } else if multi {
        json!({"": 1})
    } else {
        json!({"": 0})
    };
    eq(
        "from_pretrained device_map",
        &p["load"]["device_map"],
        device_map,
    );
    let kw = p["load"]["kwargs"].as_array().cloned().unwrap_or_default();
    // `torch_dtype` is kept only for backward compatibility, `dtype` is the argument
    // (transformers `modeling_utils.py` `from_pretrained`).
    eq(
        "from_pretrained given the deprecated torch_dtype",
        &json!(kw.contains(&json!("torch_dtype"))),
        json!(false),
    );
    if r.method != Method::Qlora {
        eq("quantization config", &p["bnb"], Value::Null);
        return;
    }
    let b = &p["bnb"];
    let compute = if fp16 || !case.plan.gpu.bf16 {
        "torch.float16"
    } else {
        "torch.bfloat16"
    };
    match r.weights {
        WeightFormat::Nf4 | WeightFormat::Fp4 => {
            eq("load_in_4bit", &b["load_in_4bit"], json!(true));
            eq(
                "4-bit quant type",
                &b["quant_type"],
                json!(if r.weights == WeightFormat::Nf4 {
                    "nf4"
                } else {
                    "fp4"
                }),
            );
            eq("4-bit compute dtype", &b["compute_dtype"], json!(compute));
            // FSDP and ZeRO-3 flatten the quantized weights with the others: their storage
            // type must be the others' (peft docs "FSDP + QLoRA", "DeepSpeed + QLoRA":
            // bnb_4bit_quant_storage).
            if stage(r) == 3 {
                eq("4-bit quant storage", &b["quant_storage"], json!(compute));
            }
        }
        WeightFormat::Int8 => eq("load_in_8bit", &b["load_in_8bit"], json!(true)),
        other => eq(
            "QLoRA weights",
            &json!(other.to_string()),
            json!("nf4, fp4 or int8"),
        ),
    }
    let ckpt = r.checkpointing != Checkpointing::None;
    eq(
        "prepare_model_for_kbit_training(use_gradient_checkpointing)",
        &p["prepare_for_kbit"][0]["kwargs"]["use_gradient_checkpointing"],
        json!(ckpt),
    );
    eq(
        "gradient checkpointing on the prepared model",
        &p["gradient_checkpointing"],
        json!(ckpt),
    );
}

#[test]
fn training_exports_are_accepted_by_the_real_libraries() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let (cases, manifest) = render_grid(dir.path());
    // The grid is what its names say: the plan kept every field asked for.
    for c in &cases {
        let (a, p) = (&c.asked.run, &c.plan.run);
        assert_eq!(
            (
                a.method,
                a.precision,
                a.optimizer,
                a.optimizer_step,
                a.checkpointing,
                a.zero_stage,
                a.offload,
                a.weights,
                a.batch,
                a.grad_accum
            ),
            (
                p.method,
                p.precision,
                p.optimizer,
                p.optimizer_step,
                p.checkpointing,
                p.zero_stage,
                p.offload,
                p.weights,
                p.batch,
                p.grad_accum
            ),
            "{}: the plan changed the run, so the grid no longer covers it",
            c.name
        );
        let want_peft = a.method != Method::Full;
        assert_eq!(
            c.kinds.contains(&ExportKind::Peft),
            want_peft,
            "{}: {:?}",
            c.name,
            c.kinds
        );
        assert_eq!(
            c.kinds.len(),
            4 + usize::from(want_peft),
            "{}: {:?}",
            c.name,
            c.kinds
        );
    }
    let (versions, results) = check(&py, dir.path(), &manifest);
    eprintln!("libraries: {versions}");
    // Deprecations the libraries print are shown, not failed: the exports target the pinned
    // versions and the ones before them.
    let mut said: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for c in &cases {
        let steps = results.get(c.name).and_then(|r| r["warnings"].as_object());
        for w in steps
            .into_iter()
            .flat_map(|m| m.values())
            .filter_map(Value::as_array)
            .flatten()
        {
            let cases = said
                .entry(w.as_str().unwrap_or_default().to_string())
                .or_default();
            if !cases.contains(&c.name) {
                cases.push(c.name);
            }
        }
    }
    for (w, cases) in &said {
        eprintln!("warning in {} cases: {w}", cases.len());
    }
    let mut failures = Vec::new();
    for c in &cases {
        let res = results
            .get(c.name)
            .unwrap_or_else(|| panic!("{}: no result", c.name));
        if let Some(errors) = res["errors"].as_object() {
            for (step, e) in errors {
                failures.push(format!(
                    "{}: {step} refused: {}",
                    c.name,
                    e.as_str().unwrap_or_default()
                ));
            }
        }
        compare(c, res, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
