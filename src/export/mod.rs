//! Exports: a plan turned into the exact settings of the tool the user runs (DeepSpeed,
//! Hugging Face Trainer, accelerate, PEFT, torchtune, Unsloth, llama.cpp, ollama, LM Studio, vLLM,
//! transformers, ComfyUI, diffusers), allocator advice, and a Markdown/JSON report of the plan.
//!
//! Every export is rendered from the *planned* workload: the workload with the plan's strategies
//! applied (`planned`), so what the user pastes is what the planner checked. Which exports
//! apply to which task and engine is decided in one place, `kinds_for_os`. An engine's own
//! launch files sit with its other rules (`engines::<engine>::export`); this module renders them.

pub mod accelerate_fsdp;
pub mod allocator;
pub mod deepspeed;
pub mod hf_training;
pub mod peft;
pub mod report;
pub mod torchtune;
pub mod unsloth;
pub mod workload_file;

use crate::catalog::Catalog;
use crate::engines::comfyui::export as comfyui;
use crate::engines::diffusers::export as diffusers;
use crate::engines::llama_cpp::export::{self as llama_cpp, lm_studio, ollama};
use crate::engines::transformers::export as transformers;
use crate::engines::vllm::export as vllm;
use crate::memory::any::AnyWorkload;
use crate::memory::diffusion::DiffusionWorkload;
use crate::plan::{PlanResult, Strategy};
use crate::types::dtype::WeightFormat;
use crate::types::options::{Engine, Task, choice};
use crate::types::workload::{Run, Workload};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

choice!(
    /// What an export produces; the names are what `--export` accepts.
    ExportKind, "--export" {
        DeepSpeed = "deepspeed" | "ds" | "ds_config",
        HfTraining = "hf-training" | "trainingarguments" | "training-args",
        HfTrainingCli = "hf-training-cli" | "training-args-cli",
        AccelerateFsdp = "accelerate-fsdp" | "fsdp" | "accelerate",
        Peft = "peft" | "lora" | "loraconfig",
        Torchtune = "torchtune" | "tune",
        Unsloth = "unsloth",
        LlamaCpp = "llama.cpp" | "llama-server" | "llamacpp" | "llama-cpp",
        Ollama = "ollama" | "modelfile",
        LmStudio = "lm-studio" | "lmstudio" | "lms",
        Vllm = "vllm",
        Transformers = "transformers",
        ComfyUi = "comfyui",
        Diffusers = "diffusers",
        Allocator = "allocator" | "pytorch-alloc-conf",
        Report = "report" | "report-md" | "markdown",
        ReportJson = "report-json" | "json-report",
    }
);

impl ExportKind {
    /// The file name an export is saved under by default (`--out DIR`, the GUI's save dialog).
    pub fn file_name(self) -> &'static str {
        match self {
            ExportKind::DeepSpeed => "ds_config.json",
            ExportKind::HfTraining => "training_args.py",
            ExportKind::HfTrainingCli => "train_flags.sh",
            ExportKind::AccelerateFsdp => "accelerate_fsdp.yaml",
            ExportKind::Peft => "peft_config.py",
            ExportKind::Torchtune => "torchtune.yaml",
            ExportKind::Unsloth => "unsloth_model.py",
            ExportKind::LlamaCpp => "llama-server.sh",
            ExportKind::Ollama => "Modelfile",
            ExportKind::LmStudio => "lmstudio-load.ts",
            ExportKind::Vllm => "vllm-serve.sh",
            ExportKind::Transformers => "load_model.py",
            ExportKind::ComfyUi => "comfyui.sh",
            ExportKind::Diffusers => "pipeline.py",
            ExportKind::Allocator => "alloc_conf.sh",
            ExportKind::Report => "plan-report.md",
            ExportKind::ReportJson => "plan-report.json",
        }
    }

    /// The language tag of a Markdown code fence holding this export.
    pub fn fence(self) -> &'static str {
        match self {
            ExportKind::DeepSpeed | ExportKind::ReportJson => "json",
            ExportKind::HfTraining
            | ExportKind::Peft
            | ExportKind::Unsloth
            | ExportKind::Transformers
            | ExportKind::Diffusers => "python",
            ExportKind::AccelerateFsdp | ExportKind::Torchtune => "yaml",
            ExportKind::Report => "markdown",
            ExportKind::Ollama => "text",
            ExportKind::LmStudio => "typescript",
            _ => "sh",
        }
    }
}

/// The operating system an export is meant for: some advice does not exist on Windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    Windows,
}

impl Os {
    pub fn current() -> Os {
        if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }
}

/// The exports that apply to a planned workload on this machine's OS, most specific first.
pub fn kinds_for(w: &AnyWorkload, r: &PlanResult) -> Vec<ExportKind> {
    kinds_for_os(w, r, Os::current())
}

/// Which settings an export writes: the recommended plan's (the default everywhere) or the
/// workload's as it stands, for a user who wants to run what they set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    #[default]
    Plan,
    Current,
}

impl Basis {
    /// The workload an export on this basis is rendered from.
    fn workload(self, w: &AnyWorkload, r: &PlanResult) -> AnyWorkload {
        match self {
            Basis::Plan => planned(w, r),
            Basis::Current => w.clone(),
        }
    }
}

/// Whether the plan changes the workload at all (when not, both bases export the same).
pub fn plan_changes(w: &AnyWorkload, r: &PlanResult) -> bool {
    planned(w, r) != *w
}

/// [`kinds_for`] on `basis`: the exports that apply to the workload it renders.
pub fn kinds_as(w: &AnyWorkload, r: &PlanResult, basis: Basis) -> Vec<ExportKind> {
    kinds_of(&basis.workload(w, r), Os::current())
}

/// [`render`] on `basis`.
pub fn render_as(
    kind: ExportKind,
    w: &AnyWorkload,
    r: &PlanResult,
    basis: Basis,
) -> Result<String, String> {
    render_on(kind, w, r, Os::current(), basis)
}

/// `kinds_for` for a given OS. The plan counts: a plan that switches to LoRA brings the PEFT
/// export in.
pub fn kinds_for_os(w: &AnyWorkload, r: &PlanResult, os: Os) -> Vec<ExportKind> {
    kinds_of(&planned(w, r), os)
}

/// The one place that decides which exports apply to which task, engine and OS.
fn kinds_of(w: &AnyWorkload, os: Os) -> Vec<ExportKind> {
    use ExportKind as K;
    let mut k = Vec::new();
    // The caching-allocator advice is for PyTorch processes on NVIDIA cards under Linux:
    // `expandable_segments` is not supported by the Windows builds (PyTorch CUDA semantics
    // notes), and ComfyUI already switches to cudaMallocAsync itself (its `--cuda-malloc`).
    let torch_on_nvidia_linux = |gpu: &crate::memory::GpuTarget| {
        os == Os::Linux && gpu.vendor == crate::catalog::Vendor::Nvidia
    };
    match w {
        AnyWorkload::Llm(l) if l.run.task == Task::Training => {
            k.extend([
                K::HfTraining,
                K::HfTrainingCli,
                K::DeepSpeed,
                K::AccelerateFsdp,
            ]);
            if l.run.method != crate::memory::Method::Full {
                k.push(K::Peft);
            }
            // Offered where the tool can run the plan (`render_on` says why not otherwise).
            if torchtune::config(l).is_ok() {
                k.push(K::Torchtune);
            }
            if unsloth::render(l).is_ok() {
                k.push(K::Unsloth);
            }
            if torch_on_nvidia_linux(&l.gpu) {
                k.push(K::Allocator);
            }
        }
        AnyWorkload::Llm(l) => match l.run.engine {
            Engine::LlamaCpp => k.extend([K::LlamaCpp, K::Ollama, K::LmStudio]),
            Engine::Vllm => k.push(K::Vllm),
            _ => {
                k.push(K::Transformers);
                if torch_on_nvidia_linux(&l.gpu) {
                    k.push(K::Allocator);
                }
            }
        },
        AnyWorkload::Diffusion(d) => {
            if d.run.engine == Engine::Diffusers {
                k.push(K::Diffusers);
                if torch_on_nvidia_linux(&d.gpu) {
                    k.push(K::Allocator);
                }
            } else {
                k.push(K::ComfyUi);
            }
        }
        AnyWorkload::Game(_) => {}
    }
    k.extend([K::Report, K::ReportJson]);
    k
}

/// Renders one export of a planned workload for this machine's OS; `Err` says why the kind
/// does not apply and which ones do.
pub fn render(kind: ExportKind, w: &AnyWorkload, r: &PlanResult) -> Result<String, String> {
    render_for(kind, w, r, Os::current())
}

/// `render` for a given OS (tests and golden files use Linux on every machine).
pub fn render_for(
    kind: ExportKind,
    w: &AnyWorkload,
    r: &PlanResult,
    os: Os,
) -> Result<String, String> {
    render_on(kind, w, r, os, Basis::Plan)
}

/// The one renderer: `kind` of the workload `basis` takes, for `os`.
fn render_on(
    kind: ExportKind,
    w: &AnyWorkload,
    r: &PlanResult,
    os: Os,
    basis: Basis,
) -> Result<String, String> {
    let p = basis.workload(w, r);
    let kinds = kinds_of(&p, os);
    // A training export its tool cannot run says why.
    match (kind, &p) {
        (ExportKind::Torchtune, AnyWorkload::Llm(l)) if l.run.task == Task::Training => {
            torchtune::config(l).map_err(|e| format!("export 'torchtune': {e}"))?;
        }
        (ExportKind::Unsloth, AnyWorkload::Llm(l)) if l.run.task == Task::Training => {
            unsloth::render(l).map_err(|e| format!("export 'unsloth': {e}"))?;
        }
        _ => {}
    }
    if !kinds.contains(&kind) {
        return Err(format!(
            "export '{kind}' does not apply to {}; available: {}",
            describe(w),
            kinds
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(match (kind, &p) {
        (ExportKind::Report, _) => report::markdown(w, &p, r, os),
        (ExportKind::ReportJson, _) => report::json(w, &p, r, os),
        (ExportKind::Allocator, _) => allocator::render(&p),
        (ExportKind::DeepSpeed, AnyWorkload::Llm(l)) => deepspeed::render(l),
        (ExportKind::HfTraining, AnyWorkload::Llm(l)) => hf_training::python(l),
        (ExportKind::HfTrainingCli, AnyWorkload::Llm(l)) => hf_training::cli(l),
        (ExportKind::AccelerateFsdp, AnyWorkload::Llm(l)) => accelerate_fsdp::render(l),
        (ExportKind::Peft, AnyWorkload::Llm(l)) => peft::render(l),
        (ExportKind::Torchtune, AnyWorkload::Llm(l)) => torchtune::render(l)?,
        (ExportKind::Unsloth, AnyWorkload::Llm(l)) => unsloth::render(l)?,
        (ExportKind::LlamaCpp, AnyWorkload::Llm(l)) => llama_cpp::render(l),
        (ExportKind::Ollama, AnyWorkload::Llm(l)) => ollama::render(l),
        (ExportKind::LmStudio, AnyWorkload::Llm(l)) => lm_studio::render(l),
        (ExportKind::Vllm, AnyWorkload::Llm(l)) => vllm::render(l),
        (ExportKind::Transformers, AnyWorkload::Llm(l)) => transformers::render(l),
        (ExportKind::ComfyUi, AnyWorkload::Diffusion(d)) => comfyui::render(d),
        (ExportKind::Diffusers, AnyWorkload::Diffusion(d)) => diffusers::render(d),
        // kinds_for_os only lists a kind for the task its renderer takes.
        _ => return Err(format!("export '{kind}' does not apply to {}", describe(w))),
    })
}

/// The engine an engine-specific export configures.
fn engine_of(kind: ExportKind) -> Option<Engine> {
    match kind {
        ExportKind::LlamaCpp | ExportKind::Ollama | ExportKind::LmStudio => Some(Engine::LlamaCpp),
        ExportKind::Vllm => Some(Engine::Vllm),
        ExportKind::Transformers => Some(Engine::Transformers),
        _ => None,
    }
}

/// The nearest weight format `engine` loads, for a run planned with `w` on another engine:
/// llama.cpp reads GGUF (16-bit and MXFP4 as they are, 8-bit as q8_0, fewer bits as q4_k_m,
/// the usual `llama-quantize` choice); vLLM and transformers do not run GGUF K-quants
/// (vLLM's GGUF loader is experimental), so a GGUF file maps to the checkpoint they load at the
/// same bits: 16-bit bf16, 6-8 bits fp8 on cards with fp8 (else GPTQ 8-bit for vLLM,
/// bitsandbytes int8 for transformers), fewer AWQ 4-bit for vLLM or NF4 for transformers.
fn weights_for(engine: Engine, w: WeightFormat, fp8: bool) -> WeightFormat {
    let bits = match w {
        WeightFormat::Fp32 | WeightFormat::Fp16 | WeightFormat::Bf16 => 16.0,
        WeightFormat::Fp8 | WeightFormat::Int8 | WeightFormat::Gptq8 => 8.0,
        WeightFormat::Gguf(t) => 8.0 * t.mix().base.bytes_per_weight(),
        _ => 4.0,
    };
    let pick = |f: &str| f.parse::<WeightFormat>().unwrap_or(w);
    match engine {
        Engine::LlamaCpp if w.is_gguf() || w == WeightFormat::Mxfp4 || bits >= 15.0 => w,
        Engine::LlamaCpp if bits >= 7.5 => pick("q8_0"),
        Engine::LlamaCpp => pick("q4_k_m"),
        _ if !w.is_gguf() => w,
        _ if bits >= 15.0 => WeightFormat::Bf16,
        Engine::Vllm if bits >= 6.0 => pick(if fp8 { "fp8" } else { "gptq-8bit" }),
        Engine::Vllm => pick("awq-4bit"),
        _ if bits >= 6.0 => pick(if fp8 { "fp8" } else { "int8" }),
        _ => pick("nf4"),
    }
}

/// An LLM inference workload moved to the engine `kind` configures, for an export asked of a
/// plan made for another engine: that engine's nearest weight format ([`weights_for`]), a KV
/// cache type it takes (else fp16), llama.cpp's `-ngl`/`--n-cpu-moe` dropped on other engines;
/// with one line saying what changed. `None` when `kind` already applies to the workload or
/// configures no LLM engine; the caller plans the result again.
pub fn retarget(kind: ExportKind, w: &AnyWorkload) -> Option<(AnyWorkload, String)> {
    let AnyWorkload::Llm(l) = w else { return None };
    let engine = engine_of(kind)?;
    if l.run.task == Task::Training || l.run.engine == engine {
        return None;
    }
    let mut x = l.clone();
    let r = &mut x.run;
    r.engine = engine;
    r.weights = weights_for(engine, l.run.weights, l.gpu.fp8);
    if !crate::types::dtype::kv_types_of(engine).is_some_and(|t| t.contains(&r.kv_cache)) {
        r.kv_cache = crate::types::dtype::KvDtype::Fp16;
    }
    if engine != Engine::LlamaCpp {
        r.gpu_layers = None;
        r.cpu_moe_layers = 0;
    }
    let weights = if r.weights == l.run.weights {
        String::new()
    } else {
        format!(", weights {} → {}", l.run.weights, r.weights)
    };
    let note = format!(
        "the plan was made for {}; '--export {kind}' planned it again for {engine}{weights}",
        l.run.engine
    );
    Some((AnyWorkload::Llm(x), note))
}

/// A workload in a few words, for messages.
fn describe(w: &AnyWorkload) -> String {
    match w {
        AnyWorkload::Llm(l) if l.run.task == Task::Training => "LLM training".into(),
        AnyWorkload::Llm(l) => format!("LLM {} with {}", l.run.task, l.run.engine),
        AnyWorkload::Diffusion(d) => format!("diffusion with {}", d.run.engine),
        AnyWorkload::Game(_) => "a game".into(),
    }
}

/// The run with the plan's changes applied in order; a change that no longer applies (or
/// changes nothing) is skipped.
pub fn apply_changes(run: &Run, changes: &[Strategy]) -> Run {
    changes
        .iter()
        .fold(run.clone(), |r, s| s.apply(&r).unwrap_or(r))
}

/// The workload as the plan leaves it: LLM strategies from `Plan.changes`, diffusion ones from
/// the `DiffusionPlan` in `Plan.details`. Games are exported as given (the report lists the
/// setting changes).
pub fn planned(w: &AnyWorkload, r: &PlanResult) -> AnyWorkload {
    match w {
        AnyWorkload::Llm(l) => {
            let mut p = l.clone();
            p.run = apply_changes(&l.run, &r.plan.changes);
            AnyWorkload::Llm(p)
        }
        AnyWorkload::Diffusion(d) => AnyWorkload::Diffusion(planned_diffusion(d, r)),
        AnyWorkload::Game(g) => {
            let mut p = g.clone();
            p.run = crate::plan::game::fitted(g);
            AnyWorkload::Game(p)
        }
    }
}

fn planned_diffusion(d: &DiffusionWorkload, r: &PlanResult) -> DiffusionWorkload {
    let mut p = d.clone();
    for s in r
        .plan
        .details
        .diffusion()
        .map_or(&[][..], |d| &d.strategies)
    {
        s.apply(&mut p);
    }
    p
}

/// The Hugging Face repository of an LLM preset, or a placeholder naming the model.
pub(crate) fn hf_repo(w: &Workload) -> String {
    Catalog::get()
        .models
        .iter()
        .find(|m| m.name == w.model_name)
        .and_then(|m| m.hf_id.clone())
        .unwrap_or_else(|| format!("REPLACE-with-the-repo-of-{}", slug(&w.model_name)))
}

/// A name reduced to characters safe in a path, a shell word and a Python string.
pub(crate) fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    s.split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// One shell command, a flag per line: `(flag, value)` pairs, a `None` value for switches.
pub(crate) fn command_line(program: &str, flags: &[(&str, Option<String>)]) -> String {
    let mut s = program.to_string();
    for (flag, value) in flags {
        s.push_str(" \\\n  ");
        s.push_str(flag);
        if let Some(v) = value {
            s.push(' ');
            s.push_str(v);
        }
    }
    s.push('\n');
    s
}

/// Comment lines (`# …`) for a list of notes.
pub(crate) fn comments(notes: &[String]) -> String {
    notes.iter().map(|n| format!("# {n}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::WorkloadFile;
    use crate::plan::plan_any;
    use crate::resolve::resolve_any;
    use std::path::Path;

    fn load(text: &str) -> (AnyWorkload, PlanResult) {
        let f = WorkloadFile::parse(text, "w.toml").unwrap();
        let w = resolve_any(&f, Path::new("."), None).unwrap();
        let r = plan_any(&w);
        (w, r)
    }

    #[test]
    fn every_kind_name_parses_back() {
        for k in ExportKind::ALL {
            assert_eq!(k.as_str().parse::<ExportKind>().unwrap(), *k);
        }
        let e = "dsconfig".parse::<ExportKind>().unwrap_err().to_string();
        assert!(e.contains("deepspeed") && e.contains("--export"), "{e}");
    }

    #[test]
    fn kinds_follow_task_engine_and_os() {
        let (train, tr) = load(
            "[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nmethod = \"lora\"\n",
        );
        let k = kinds_for_os(&train, &tr, Os::Linux);
        assert!(k.contains(&ExportKind::DeepSpeed) && k.contains(&ExportKind::Peft));
        assert!(k.contains(&ExportKind::Allocator));
        assert!(!kinds_for_os(&train, &tr, Os::Windows).contains(&ExportKind::Allocator));
        let (gguf, gr) = load(
            "[gpu]\nvram_gib = 8\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nweights = \"q4_k_m\"\n",
        );
        let k = kinds_for_os(&gguf, &gr, Os::Linux);
        assert_eq!(k[..2], [ExportKind::LlamaCpp, ExportKind::Ollama]);
        assert!(!k.contains(&ExportKind::DeepSpeed) && !k.contains(&ExportKind::Allocator));
        let (game, r) = load(
            "[gpu]\nvram_gib = 8\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"game\"\n",
        );
        assert_eq!(
            kinds_for_os(&game, &r, Os::Linux),
            [ExportKind::Report, ExportKind::ReportJson]
        );
        let e = render_for(ExportKind::Vllm, &game, &r, Os::Linux).unwrap_err();
        assert!(e.contains("a game") && e.contains("report-json"), "{e}");
    }

    #[test]
    fn planned_applies_the_plans_changes() {
        // Full fine-tuning of an 8B model cannot fit 24 GB as given; the plan changes the run.
        let (w, r) = load(
            "[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nbatch = 8\n",
        );
        assert!(!r.plan.changes.is_empty(), "{:?}", r.plan);
        let (AnyWorkload::Llm(before), AnyWorkload::Llm(after)) = (&w, planned(&w, &r)) else {
            panic!("LLM workload expected")
        };
        assert_ne!(before.run, after.run);
        let again = r
            .plan
            .changes
            .iter()
            .fold(before.run.clone(), |x, s| s.apply(&x).unwrap_or(x));
        assert_eq!(after.run, again);
    }

    #[test]
    fn planned_diffusion_takes_the_strategies_from_details() {
        let (w, r) = load(
            "[gpu]\nvram_gib = 12\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\n",
        );
        let AnyWorkload::Diffusion(after) = planned(&w, &r) else {
            panic!("diffusion expected")
        };
        let AnyWorkload::Diffusion(before) = &w else {
            panic!("diffusion expected")
        };
        assert!(!r.plan.strategies.is_empty());
        assert_ne!(before.run, after.run, "{:?}", r.plan.strategies);
    }

    #[test]
    fn slugs_and_command_lines() {
        assert_eq!(slug("FLUX.1 [dev]"), "FLUX.1-dev");
        let c = command_line("x", &[("-a", Some("1".into())), ("--b", None)]);
        assert_eq!(c, "x \\\n  -a 1 \\\n  --b\n");
    }
}
