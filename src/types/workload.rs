//! The workload: the planner's whole input. Its file form (`WorkloadFile`) is the TOML contract
//! of `DESIGN.md`; `Workload` is the checked, resolved form every estimator takes.

use super::arch::ModelArch;
use super::dtype::{KvDtype, WeightFormat};
use super::error::TextFileError;
use super::gpu::Vendor;
use super::options::*;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `[gpu]` as written in a workload file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSection {
    pub preset: Option<String>,
    pub vram_gib: Option<f64>,
    pub count: Option<u32>,
    /// System RAM of the machine planned for, GiB (the command line fills in this machine's).
    pub host_ram_gib: Option<f64>,
    /// Its bandwidth, GB/s; or `host` names a preset from `presets/hosts.toml`.
    pub host_ram_gbps: Option<f64>,
    pub host: Option<String>,
}

/// The kind of workload a set of fields is about, when they tell: the doctor's "open in
/// planner" fields often name no task (`run.weights = "nf4"`), and the planner must not apply
/// them to whatever kind happens to be shown (issue 22: an LLM fix rewrote a Flux workload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldsKind {
    /// A training knob (optimizer, checkpointing, ZeRO …).
    Training,
    /// An LLM field or engine, inference or training.
    Llm,
    Diffusion,
    Game,
}

/// What `fields` (`"run.seq" = "8192"` …) say about the kind of workload: `run.task` itself
/// when given, else the kind whose own fields they set (training before LLM), else the family
/// of `run.engine`; `None` when they fit any kind.
pub fn fields_kind(fields: &std::collections::BTreeMap<String, String>) -> Option<FieldsKind> {
    if let Some(t) = fields.get("run.task").and_then(|t| t.parse::<Task>().ok()) {
        return Some(match t {
            Task::Training => FieldsKind::Training,
            Task::Diffusion => FieldsKind::Diffusion,
            Task::Game => FieldsKind::Game,
            _ => FieldsKind::Llm,
        });
    }
    let has = |kind: FieldsKind| {
        fields
            .keys()
            .filter_map(|k| k.strip_prefix("run."))
            .any(|k| {
                RUN_FIELDS
                    .iter()
                    .any(|f| f.name == k && f.kind == Some(kind))
            })
    };
    let engine = fields
        .get("run.engine")
        .and_then(|e| e.parse::<Engine>().ok());
    if has(FieldsKind::Training) {
        Some(FieldsKind::Training)
    } else if has(FieldsKind::Diffusion)
        || matches!(engine, Some(Engine::ComfyUi | Engine::Diffusers))
    {
        Some(FieldsKind::Diffusion)
    } else if has(FieldsKind::Game) {
        Some(FieldsKind::Game)
    } else if has(FieldsKind::Llm) || engine.is_some() {
        Some(FieldsKind::Llm)
    } else {
        None
    }
}

/// `[model]` as written in a workload file: a preset, a file, or the architecture itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    pub preset: Option<String>,
    pub hf_config: Option<PathBuf>,
    pub file: Option<PathBuf>,
    pub params: Option<f64>,
    pub layers: Option<u32>,
    pub hidden: Option<u32>,
    pub heads: Option<u32>,
    pub kv_heads: Option<u32>,
    pub head_dim: Option<u32>,
    pub intermediate: Option<u32>,
    pub vocab: Option<u32>,
    pub tied_embeddings: Option<bool>,
    pub max_context: Option<u32>,
    pub sliding_window: Option<u32>,
    /// `gated` (SwiGLU, 3 matrices) or `plain` (GeLU, 2 matrices).
    pub mlp: Option<super::arch::Mlp>,
    /// The Hugging Face `model_type` (`llama`, `gpt2`, `falcon` …): the names of its modules,
    /// which `run.lora_targets` matches (presets/lora_modules.toml).
    pub model_type: Option<String>,
}

/// One `[run]` field of the workload file (`run_fields.rs` declares them all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunField {
    /// Its name in the file (`run.NAME`).
    pub name: &'static str,
    /// The kind of workload only it belongs to; `None` for a field every kind has.
    pub kind: Option<FieldsKind>,
}

/// `RunSection` and `RUN_FIELDS` from the rows of `run_fields!`.
macro_rules! run_section {
    (@kind any) => { None };
    (@kind training) => { Some(FieldsKind::Training) };
    (@kind llm) => { Some(FieldsKind::Llm) };
    (@kind diffusion) => { Some(FieldsKind::Diffusion) };
    (@kind game) => { Some(FieldsKind::Game) };
    ($($(#[$doc:meta])* $name:ident: $ty:ty, $kind:ident, $style:ident($($arg:tt)*) { $(#[$help:meta])* },)*) => {
        /// `[run]` as written in a workload file; every field optional, defaults applied on
        /// resolve. Its fields are the rows of `run_fields.rs`.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct RunSection {
            $($(#[$doc])* pub $name: Option<$ty>,)*
        }

        /// Every `[run]` field, in the file's order.
        pub const RUN_FIELDS: &[RunField] = &[
            $(RunField { name: stringify!($name), kind: run_section!(@kind $kind) },)*
        ];
    };
}
super::run_fields::run_fields!(run_section);

/// A whole workload file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadFile {
    #[serde(default)]
    pub gpu: GpuSection,
    #[serde(default)]
    pub model: ModelSection,
    #[serde(default)]
    pub run: RunSection,
}

impl WorkloadFile {
    /// Parses TOML text; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, String> {
        crate::toml_file::parse(text, origin)
    }

    /// Reads and parses a workload file, refusing anything that is not a small text file.
    pub fn load(path: &Path) -> Result<Self, TextFileError> {
        let text = crate::input_file::read_text_capped(path, 1 << 20, "a workload file")?;
        Self::parse(&text, &path.display().to_string()).map_err(TextFileError::Malformed)
    }

    /// The file's text. A value TOML cannot hold is an error, never an empty or partial file.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string_pretty(self)
    }

    /// This workload with `fields` set, each named as in the file (`run.batch`, `gpu.vram_gib`)
    /// with its value in words (`"1"`, `"nf4"`, `"true"`). Used by the doctor's "open in
    /// planner" links (`assets/doctor/causes.toml`). A value is taken as a TOML number or boolean
    /// when it reads as one and the field accepts it, and as text otherwise; a field the file
    /// does not have, or a value it cannot take, is an error naming the field, and `self` is
    /// left as it was.
    pub fn with_fields(
        &self,
        fields: &std::collections::BTreeMap<String, String>,
    ) -> Result<WorkloadFile, String> {
        let mut doc = toml::Table::try_from(self).map_err(|e| e.to_string())?;
        for (key, raw) in fields {
            let Some((section, name)) = key.split_once('.') else {
                return Err(format!(
                    "'{key}' is not a workload field (gpu.*, model.*, run.*)"
                ));
            };
            let typed = toml::from_str::<toml::Table>(&format!("v = {raw}"))
                .ok()
                .and_then(|mut t| t.remove("v"));
            let text = toml::Value::String(raw.clone());
            let mut last = String::new();
            let mut accepted = false;
            for value in typed.into_iter().chain([text]) {
                let mut trial = doc.clone();
                let Some(table) = trial
                    .entry(section)
                    .or_insert_with(|| toml::Table::new().into())
                    .as_table_mut()
                else {
                    return Err(format!("'{key}': {section} is not a section"));
                };
                table.insert(name.to_string(), value);
                match trial.clone().try_into::<WorkloadFile>() {
                    Ok(_) => {
                        doc = trial;
                        accepted = true;
                        break;
                    }
                    Err(e) => last = e.message().trim().to_string(),
                }
            }
            if !accepted {
                return Err(format!("{key} = {raw:?}: {last}"));
            }
        }
        doc.try_into().map_err(|e: toml::de::Error| e.to_string())
    }
}

/// The card(s) a workload runs on. All figures of a result are per GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuTarget {
    pub name: String,
    pub vram_bytes: u64,
    pub count: u32,
    pub vendor: Vendor,
    pub bf16: bool,
    pub fp8: bool,
    /// What the speed estimates need; zero or `None` where not known.
    #[serde(default)]
    pub speed: GpuSpeed,
    /// The host the card sits in.
    pub host: Host,
}

/// The card's figures for speed estimates (from its preset).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuSpeed {
    /// Peak memory bandwidth, GB/s (0 = unknown).
    pub bandwidth_gbs: f64,
    /// Usable host-to-device bandwidth, GB/s (`diffusion::pcie_gbs`; 0 = none or unknown).
    pub pcie_gbs: f64,
    /// Dense tensor rates per precision (`Gpu::tensor_rates`: the data sheet's, scaled down
    /// where a measured matmul rate is lower).
    pub tensor: crate::types::gpu::TensorRates,
}

/// System RAM of the machine planned for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// Total RAM; `None` when not known (then running out of it is not checked).
    pub ram_bytes: Option<u64>,
    /// RAM bandwidth, GB/s.
    pub ram_gbps: f64,
    /// Where the bandwidth comes from, for the speed basis.
    pub source: String,
}

/// The knobs of a run, with defaults applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub task: Task,
    pub objective: Objective,
    pub loss: Loss,
    pub weights: WeightFormat,
    pub batch: u32,
    pub seq: u32,
    pub prompt: u32,
    pub engine: Engine,
    pub kv_cache: KvDtype,
    pub attention: Attention,
    pub method: Method,
    pub precision: Precision,
    pub optimizer: Optimizer,
    pub optimizer_step: OptimizerStep,
    pub optimizer_in_bwd: bool,
    pub activation_offload: bool,
    pub paged_optimizer: bool,
    /// Rows of `seq` tokens holding whole samples back to back (TRL `packing`).
    pub packing: bool,
    /// Mean tokens per sample as the file gives it; `None`: `seq` ([`Run::mean_sample_tokens`]).
    pub avg_seq: Option<u32>,
    pub torch_compile: bool,
    pub checkpointing: Checkpointing,
    pub lora_rank: u32,
    pub lora_targets: LoraTargets,
    pub grad_accum: u32,
    pub zero_stage: u32,
    pub offload: Offload,
    pub gpu_memory_utilization: f64,
    pub ubatch: u32,
    pub other_processes_bytes: u64,
    /// llama.cpp `-ngl`; `None` = every layer (llama.cpp's default) until the planner chooses.
    pub gpu_layers: Option<u32>,
    /// llama.cpp `--n-cpu-moe`.
    pub cpu_moe_layers: u32,
    pub kv_offload: bool,
    pub fit_target_bytes: u64,
    pub objective_speed: ObjectiveSpeed,
    pub min_tokens_per_s: f64,
}

impl Run {
    /// The ZeRO stage the run trains under: its own, raised to what its offload needs.
    /// DeepSpeed offloads optimizer states from stage 1 up and parameters only at stage 3
    /// (deepspeed/runtime/zero/offload_config.py `DeepSpeedZeroOffloadParamConfig`: "valid only
    /// with stage 3"); ZeRO-Offload's paper (arXiv 2101.06840) pairs the CPU step with stage 2,
    /// which also shards the gradients. FSDP's CPU offload (`CPUOffloadPolicy`) offloads the
    /// sharded parameters with their gradients and states, i.e. FULL_SHARD = stage 3.
    pub fn zero_stage_in_effect(&self) -> u32 {
        match self.offload {
            Offload::None => self.zero_stage,
            Offload::Optimizer => self.zero_stage.max(2),
            Offload::OptimizerParams => 3,
        }
    }

    /// Mean tokens per training sample: `avg_seq`, at most `seq` (longer samples are cut to the
    /// sequence length, also when a plan shortens it).
    pub fn mean_sample_tokens(&self) -> u32 {
        self.avg_seq.map_or(self.seq, |a| a.min(self.seq))
    }
}

impl Default for Run {
    fn default() -> Self {
        Run {
            task: Task::Inference,
            objective: Objective::CausalLm,
            loss: Loss::Standard,
            weights: WeightFormat::Bf16,
            batch: 1,
            seq: 4096,
            prompt: 4096,
            engine: Engine::Transformers,
            kv_cache: KvDtype::Fp16,
            attention: Attention::Sdpa,
            method: Method::Full,
            precision: Precision::Bf16Mixed,
            optimizer: Optimizer::AdamW,
            optimizer_step: OptimizerStep::Foreach,
            optimizer_in_bwd: false,
            activation_offload: false,
            paged_optimizer: false,
            packing: false,
            avg_seq: None,
            torch_compile: false,
            checkpointing: Checkpointing::None,
            lora_rank: 16,
            lora_targets: LoraTargets::AllLinear,
            grad_accum: 1,
            zero_stage: 0,
            offload: Offload::None,
            gpu_memory_utilization: 0.9,
            ubatch: 512,
            other_processes_bytes: 0,
            gpu_layers: None,
            cpu_moe_layers: 0,
            kv_offload: true,
            fit_target_bytes: 1024 << 20,
            objective_speed: ObjectiveSpeed::Quality,
            min_tokens_per_s: 5.0,
        }
    }
}

/// A checked workload for an LLM task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub gpu: GpuTarget,
    pub model_name: String,
    pub model: ModelArch,
    pub run: Run,
    /// Exact weight bytes read from the model's files, valid while `run.weights` is the
    /// format the files hold.
    #[serde(default)]
    pub file_weights: Option<FileWeights>,
    /// What the model's files say that the estimate should be read with: parts not counted,
    /// where `run.weights` came from. Shown as warnings of the breakdown.
    #[serde(default)]
    pub model_notes: Vec<crate::types::message::Message>,
}

/// What a model file says about its own weights.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FileWeights {
    pub format: WeightFormat,
    /// Bytes of all weight tensors.
    pub total_bytes: f64,
    /// Bytes llama.cpp keeps in host memory (the token embedding of a GGUF file).
    pub host_bytes: f64,
}

/// A model read from files by an importer.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedModel {
    pub name: String,
    pub arch: ModelArch,
    pub weights: Option<FileWeights>,
    /// The weight format the files declare (config.json `quantization_config`/`torch_dtype`,
    /// safetensors dtypes, the GGUF file type), also when their bytes were not read.
    pub format: Option<WeightFormat>,
    /// Parts of the model the importer did not count, and similar cautions.
    pub notes: Vec<crate::types::message::Message>,
}

#[cfg(test)]
mod tests {

    /// The kinds come from the fields' rows (`run_fields.rs`): one field of each kind tells
    /// its kind, a shared one nothing; `run.steps` is a diffusion field (the hand-written
    /// lists had left it out).
    #[test]
    fn a_field_tells_the_kind_of_its_row() {
        let kind = |k: &str, v: &str| fields_kind(&[(k.to_string(), v.to_string())].into());
        assert_eq!(kind("run.steps", "30"), Some(FieldsKind::Diffusion));
        assert_eq!(kind("run.loss", "chunked"), Some(FieldsKind::Training));
        assert_eq!(kind("run.ubatch", "256"), Some(FieldsKind::Llm));
        assert_eq!(kind("run.ray_tracing", "true"), Some(FieldsKind::Game));
        assert_eq!(kind("run.batch", "1"), None);
    }

    #[test]
    fn fields_are_set_typed_or_as_text_and_bad_ones_are_named() {
        let w = WorkloadFile::parse("[model]\npreset = 'llama-3.1-8b'\n", "t").unwrap();
        let f = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let out = w
            .with_fields(&f(&[
                ("run.batch", "1"),
                ("run.weights", "nf4"),
                ("gpu.vram_gib", "23.65"),
                ("run.vae_tiling", "true"),
                ("run.resolution", "1920x1080"),
            ]))
            .unwrap();
        assert_eq!(out.run.batch, Some(1));
        assert_eq!(out.run.weights.as_deref(), Some("nf4"));
        assert_eq!(out.gpu.vram_gib, Some(23.65));
        assert_eq!(out.run.vae_tiling, Some(true));
        assert_eq!(out.run.resolution.as_deref(), Some("1920x1080"));
        assert_eq!(out.model, w.model);
        // An integer where a float is wanted is fine; text where a number is wanted is not.
        assert_eq!(
            w.with_fields(&f(&[("gpu.vram_gib", "24")]))
                .unwrap()
                .gpu
                .vram_gib,
            Some(24.0)
        );
        let e = w.with_fields(&f(&[("run.batch", "many")])).unwrap_err();
        assert!(e.contains("run.batch"), "{e}");
        let e = w.with_fields(&f(&[("run.nonsense", "1")])).unwrap_err();
        assert!(e.contains("run.nonsense") && e.contains("nonsense"), "{e}");
        assert!(w.with_fields(&f(&[("batch", "1")])).is_err());
    }
    use super::*;
}
