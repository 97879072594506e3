//! The workload: the planner's whole input. Its file form (`WorkloadFile`) is the TOML contract
//! of `DESIGN.md`; `Workload` is the checked, resolved form every estimator takes.

use super::arch::ModelArch;
use super::dtype::{KvDtype, WeightFormat};
use super::options::*;
use crate::catalog::{Catalog, Gpu, Vendor};
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

/// `run.*` fields only one kind of workload has (`RunSection`; `run.lora_rank`, `run.batch`,
/// `run.weights` … are shared and tell nothing).
const TRAINING_FIELDS: &[&str] = &[
    "method",
    "precision",
    "optimizer",
    "checkpointing",
    "lora_targets",
    "grad_accum",
    "zero_stage",
    "offload",
    "loss",
];
const LLM_FIELDS: &[&str] = &[
    "seq",
    "prompt",
    "kv_cache",
    "gpu_memory_utilization",
    "ubatch",
    "gpu_layers",
    "cpu_moe_layers",
    "kv_offload",
    "fit_target_mib",
    "objective",
];
const DIFFUSION_FIELDS: &[&str] = &[
    "width",
    "height",
    "vae_tiling",
    "frames",
    "cfg",
    "vae_slicing",
    "vae_decode",
    "tiny_vae",
    "vram_mode",
    "cpu_offload",
    "text_encoder_weights",
    "text_encoder_on_cpu",
    "loras",
    "controlnets",
    "ip_adapter",
    "reserve_vram_gib",
];
const GAME_FIELDS: &[&str] = &[
    "resolution",
    "texture_quality",
    "ray_tracing",
    "frame_generation",
    "upscaler",
];

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
    let has = |list: &[&str]| {
        fields
            .keys()
            .filter_map(|k| k.strip_prefix("run."))
            .any(|k| list.contains(&k))
    };
    let engine = fields
        .get("run.engine")
        .and_then(|e| e.parse::<Engine>().ok());
    if has(TRAINING_FIELDS) {
        Some(FieldsKind::Training)
    } else if has(DIFFUSION_FIELDS) || matches!(engine, Some(Engine::ComfyUi | Engine::Diffusers)) {
        Some(FieldsKind::Diffusion)
    } else if has(GAME_FIELDS) {
        Some(FieldsKind::Game)
    } else if has(LLM_FIELDS) || engine.is_some() {
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
}

/// `[run]` as written in a workload file; every field optional, defaults applied on resolve.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    pub task: Option<Task>,
    /// What the model is trained or run for: `causal-lm` (next-token logits over the
    /// vocabulary, the default) or `classification` (a small head, no vocabulary logits).
    pub objective: Option<Objective>,
    /// Training loss computation: `standard` or `chunked`.
    pub loss: Option<Loss>,
    pub weights: Option<String>,
    pub batch: Option<i64>,
    pub seq: Option<i64>,
    /// Tokens of the prompt processed in one forward pass (prefill); defaults to `seq`.
    pub prompt: Option<i64>,
    pub engine: Option<Engine>,
    pub kv_cache: Option<String>,
    pub attention: Option<Attention>,
    pub method: Option<Method>,
    pub precision: Option<Precision>,
    pub optimizer: Option<Optimizer>,
    pub checkpointing: Option<Checkpointing>,
    pub lora_rank: Option<i64>,
    pub lora_targets: Option<LoraTargets>,
    pub grad_accum: Option<i64>,
    pub zero_stage: Option<i64>,
    pub offload: Option<Offload>,
    /// vLLM `--gpu-memory-utilization` (fraction of total memory it pre-allocates).
    pub gpu_memory_utilization: Option<f64>,
    /// llama.cpp `--ubatch-size`.
    pub ubatch: Option<i64>,
    /// llama.cpp `-ngl` / ollama `num_gpu`: layers on the GPU, the output layer counted as the
    /// last one; absent = let the planner choose, as `--fit` does.
    pub gpu_layers: Option<i64>,
    /// llama.cpp `--n-cpu-moe N`: the experts of the first N layers stay in system RAM.
    pub cpu_moe_layers: Option<i64>,
    /// false = llama.cpp `--no-kv-offload`: the KV cache stays in system RAM.
    pub kv_offload: Option<bool>,
    /// llama.cpp `--fit-target`: MiB `--fit` leaves free on the GPU (default 1024).
    pub fit_target_mib: Option<f64>,
    /// What the recommendation optimises: best quality that fits, or the fastest.
    pub objective_speed: Option<super::options::ObjectiveSpeed>,
    /// Decode speed (tokens/s) above which keeping quality by offloading beats a quality loss.
    pub min_tokens_per_s: Option<f64>,
    /// VRAM already held by other programs (desktop, browser), GiB.
    pub other_processes_gib: Option<f64>,
    // Diffusion and game fields of the contract; read by those estimators.
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub vae_tiling: Option<bool>,
    pub resolution: Option<String>,
    pub texture_quality: Option<String>,
    pub ray_tracing: Option<bool>,
    pub frame_generation: Option<bool>,
    // More diffusion fields (read by memory::diffusion; see its docs for the defaults).
    /// Output frames of a video model.
    pub frames: Option<i64>,
    /// Classifier-free guidance (cond + uncond batch); defaults to the model's usual setting.
    pub cfg: Option<bool>,
    /// diffusers `enable_vae_slicing`: decode the batch one image at a time.
    pub vae_slicing: Option<bool>,
    /// false: stop at the latents (diffusers `output_type="latent"`), no VAE decode.
    pub vae_decode: Option<bool>,
    /// Tiny autoencoder (TAESD) instead of the full VAE.
    pub tiny_vae: Option<bool>,
    /// ComfyUI VRAM mode: normal | lowvram | novram | highvram | gpu-only.
    pub vram_mode: Option<super::diffusion::VramMode>,
    /// diffusers offloading: none | model | sequential.
    pub cpu_offload: Option<super::diffusion::CpuOffload>,
    /// Text-encoder weight format: one for all, or a comma list in the model's encoder order.
    pub text_encoder_weights: Option<String>,
    /// Run the text encoders on the CPU (or use precomputed prompt embeddings).
    pub text_encoder_on_cpu: Option<bool>,
    /// Number of LoRAs loaded (each of `lora_rank`).
    pub loras: Option<i64>,
    pub controlnets: Option<i64>,
    pub ip_adapter: Option<bool>,
    /// ComfyUI `--reserve-vram` in GiB (default 0.6, its Windows default).
    pub reserve_vram_gib: Option<f64>,
    // More game fields (read by memory::game).
    /// Upscaler mode: none | quality | balanced | performance | ultra-performance (DLSS/FSR/XeSS).
    pub upscaler: Option<String>,
}

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
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = crate::input_file::read_text_capped(path, 1 << 20, "a workload file")?;
        Self::parse(&text, &path.display().to_string())
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
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
    #[serde(default)]
    pub host: Host,
}

/// The card's figures for speed estimates (from its preset).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuSpeed {
    /// Peak memory bandwidth, GB/s (0 = unknown).
    pub bandwidth_gbs: f64,
    /// Usable host-to-device bandwidth, GB/s (`diffusion::pcie_gbs`; 0 = none or unknown).
    pub pcie_gbs: f64,
    /// Dense fp16/bf16 tensor TFLOPS with fp32 accumulate.
    pub fp16_tflops: Option<f64>,
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

impl Default for Host {
    fn default() -> Self {
        let p = super::host::default_preset();
        Host {
            ram_bytes: None,
            ram_gbps: p.gbps,
            source: format!("{} (assumed; set gpu.host or gpu.host_ram_gbps)", p.name),
        }
    }
}

impl GpuTarget {
    /// A card known only by its capacity (`gpu.vram_gib` without a preset): assumed a current
    /// NVIDIA card with bf16 and without fp8.
    pub fn with_capacity(vram_bytes: u64, count: u32) -> Self {
        GpuTarget {
            name: format!("{:.0} GiB GPU", crate::units::gib(vram_bytes)),
            vram_bytes,
            count,
            vendor: Vendor::Nvidia,
            bf16: true,
            fp8: false,
            speed: GpuSpeed::default(),
            host: Host::default(),
        }
    }

    pub fn from_preset(g: &Gpu, count: u32) -> Self {
        GpuTarget {
            name: g.name.clone(),
            vram_bytes: g.vram_bytes(),
            count,
            vendor: g.vendor,
            bf16: g.bf16,
            fp8: g.fp8,
            speed: GpuSpeed {
                bandwidth_gbs: g.bandwidth_gbs,
                pcie_gbs: super::diffusion::pcie_gbs(g.pcie_gen, g.pcie_lanes),
                fp16_tflops: g.fp16_tflops,
            },
            host: Host::default(),
        }
    }
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
    pub model_notes: Vec<String>,
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
    pub notes: Vec<String>,
}

/// Loads a model from a file (`hf_config`/`file`); `crate::import::load_model` is the one the
/// command line and GUI use.
pub type ModelLoader = fn(&Path) -> Result<LoadedModel, String>;

fn int_in(field: &str, v: Option<i64>, default: u32, min: i64, max: i64) -> Result<u32, String> {
    match v {
        None => Ok(default),
        Some(x) if x >= min && x <= max => Ok(x as u32),
        Some(x) => Err(format!(
            "{field} = {x} is out of range; allowed {min}..={max}"
        )),
    }
}

impl WorkloadFile {
    /// Resolves presets and defaults into a checked workload. `base` is the directory relative
    /// paths in the file are taken from; `loader` imports model files.
    pub fn resolve(&self, base: &Path, loader: Option<ModelLoader>) -> Result<Workload, String> {
        let gpu = self.gpu.resolve()?;
        let loaded = self.model.resolve(base, loader)?;
        let declared = loaded.format.or(loaded.weights.map(|f| f.format));
        let run = self.run.resolve_with(&loaded.arch, declared)?;
        let mut model_notes = loaded.notes;
        if let Some(f) = declared {
            model_notes.push(if self.run.weights.is_some() && f != run.weights {
                format!(
                    "weights planned as {} (run.weights); the model's files hold {f}",
                    run.weights
                )
            } else if self.run.weights.is_none() && run.weights == f {
                format!("weights planned as {f}, the format the model's files hold")
            } else {
                format!(
                    "weights planned as {}; the model's files hold {f}",
                    run.weights
                )
            });
        }
        Ok(Workload {
            gpu,
            model_name: loaded.name,
            model: loaded.arch,
            run,
            file_weights: loaded.weights,
            model_notes,
        })
    }
}

impl GpuSection {
    /// The card(s) of `[gpu]`: a preset (optionally with its capacity overridden) or a bare
    /// capacity. Shared by every task.
    pub fn resolve(&self) -> Result<GpuTarget, String> {
        let cat = Catalog::get();
        let count = int_in("gpu.count", self.count.map(i64::from), 1, 1, 1024)?;
        let gpu =
            match (&self.preset, self.vram_gib) {
                (Some(p), None) => GpuTarget::from_preset(cat.gpu(p)?, count),
                (Some(p), Some(v)) => {
                    let mut g = GpuTarget::from_preset(cat.gpu(p)?, count);
                    g.vram_bytes = check_vram(v)?;
                    g
                }
                (None, Some(v)) => GpuTarget::with_capacity(check_vram(v)?, count),
                (None, None) => return Err(
                    "gpu: give gpu.preset (see `vram-doctor presets list gpus`) or gpu.vram_gib"
                        .into(),
                ),
            };
        let mut gpu = gpu;
        gpu.host = super::host::resolve(self)?;
        Ok(gpu)
    }
}

fn check_vram(v: f64) -> Result<u64, String> {
    if v.is_finite() && v > 0.0 && v <= 4096.0 {
        Ok(crate::units::gib_to_bytes(v))
    } else {
        Err(format!(
            "gpu.vram_gib = {v} is out of range; allowed more than 0 and at most 4096"
        ))
    }
}

impl ModelSection {
    fn resolve(&self, base: &Path, loader: Option<ModelLoader>) -> Result<LoadedModel, String> {
        let sources = [
            self.preset.is_some(),
            self.hf_config.is_some(),
            self.file.is_some(),
        ];
        if sources.iter().filter(|s| **s).count() > 1 {
            return Err("model: give only one of model.preset, model.hf_config, model.file".into());
        }
        let mut file_weights = None;
        let (mut format, mut notes) = (None, Vec::new());
        let (name, mut arch) = if let Some(p) = &self.preset {
            let m = Catalog::get().model(p)?;
            (m.name.clone(), m.arch.clone())
        } else if let Some(path) = self.hf_config.as_ref().or(self.file.as_ref()) {
            let load =
                loader.ok_or("model: importing model files is not available in this build")?;
            let m = load(&base.join(path))?;
            file_weights = m.weights;
            format = m.format;
            notes = m.notes;
            (m.name, m.arch)
        } else {
            let need = |f: &str, v: Option<u32>| {
                v.ok_or_else(|| {
                    format!(
                        "model.{f} is missing: give model.preset, a file, or the whole architecture"
                    )
                })
            };
            let heads = need("heads", self.heads)?;
            let hidden = need("hidden", self.hidden)?;
            let arch = ModelArch {
                params: self.params.ok_or(
                    "model.params is missing: give model.preset, a file, or the whole architecture",
                )?,
                layers: need("layers", self.layers)?,
                hidden,
                heads,
                kv_heads: self.kv_heads.unwrap_or(heads),
                head_dim: self
                    .head_dim
                    .unwrap_or(hidden.checked_div(heads).unwrap_or(0)),
                intermediate: self.intermediate.unwrap_or(hidden.saturating_mul(4)),
                vocab: need("vocab", self.vocab)?,
                mlp: Default::default(),
                tied_embeddings: false,
                max_context: None,
                sliding_window: None,
                global_every: None,
                moe: None,
                mla: None,
                transformers_kv_heads: None,
                cache: None,
            };
            ("custom model".to_string(), arch)
        };
        // Explicit fields override a preset or file.
        macro_rules! over { ($($f:ident),*) => { $(if let Some(v) = self.$f { arch.$f = v; })* } }
        over!(
            params,
            layers,
            hidden,
            heads,
            kv_heads,
            head_dim,
            intermediate,
            vocab,
            tied_embeddings
        );
        if self.max_context.is_some() {
            arch.max_context = self.max_context;
        }
        if let Some(m) = self.mlp {
            arch.mlp = m;
        }
        if self.sliding_window.is_some() {
            arch.sliding_window = self.sliding_window;
        }
        arch.validate()?;
        if self.params.is_some() {
            // The byte count no longer describes the model the user asked for.
            file_weights = None;
            format = None;
        }
        Ok(LoadedModel {
            name,
            arch,
            weights: file_weights,
            format,
            notes,
        })
    }
}

impl RunSection {
    pub fn resolve(&self, model: &ModelArch) -> Result<Run, String> {
        self.resolve_with(model, None)
    }

    /// `file_format` is the format the model's files hold, the default for `run.weights`.
    pub fn resolve_with(
        &self,
        model: &ModelArch,
        file_format: Option<WeightFormat>,
    ) -> Result<Run, String> {
        let d = Run::default();
        let task = self.task.unwrap_or(d.task);
        let method = self.method.unwrap_or(d.method);
        let weights = match &self.weights {
            Some(w) => w.parse::<WeightFormat>().map_err(|_| {
                format!(
                    "run.weights = '{w}' is not allowed; use one of: {}",
                    super::dtype::WEIGHT_NAMES.join(", ")
                )
            })?,
            None if method == Method::Qlora => WeightFormat::Nf4,
            None => file_format.unwrap_or(d.weights),
        };
        let kv_cache = match &self.kv_cache {
            Some(k) => k.parse::<KvDtype>().map_err(|_| {
                format!(
                    "run.kv_cache = '{k}' is not allowed; use one of: {}",
                    super::dtype::KV_NAMES.join(", ")
                )
            })?,
            None => d.kv_cache,
        };
        let engine = self.engine.unwrap_or(if weights.is_gguf() {
            Engine::LlamaCpp
        } else {
            d.engine
        });
        let default_seq = if task == Task::Training { 2048 } else { d.seq };
        let seq = int_in("run.seq", self.seq, default_seq, 1, 10_000_000)?;
        if let Some(max) = model.max_context
            && seq > max
        {
            return Err(format!(
                "run.seq = {seq} is longer than the model supports (max_context {max}); lower run.seq"
            ));
        }
        let util = self
            .gpu_memory_utilization
            .unwrap_or(d.gpu_memory_utilization);
        if !(util > 0.0 && util <= 1.0) {
            return Err(format!(
                "run.gpu_memory_utilization = {util} is out of range; allowed more than 0 and at most 1"
            ));
        }
        let other = self.other_processes_gib.unwrap_or(0.0);
        if !(other.is_finite() && (0.0..=4096.0).contains(&other)) {
            return Err(format!(
                "run.other_processes_gib = {other} is out of range; allowed 0..=4096"
            ));
        }
        if method == Method::Qlora
            && !matches!(
                weights,
                WeightFormat::Nf4
                    | WeightFormat::Fp4
                    | WeightFormat::Gptq4
                    | WeightFormat::Gptq8
                    | WeightFormat::Awq4
                    | WeightFormat::Int8
            )
        {
            return Err(format!(
                "run.method = 'qlora' needs a quantized base (run.weights nf4, int8, gptq-4bit …), not '{weights}'"
            ));
        }
        if task != Task::Training
            && let Some(allowed) = super::dtype::kv_types_of(engine)
            && !allowed.contains(&kv_cache)
        {
            let names: Vec<&str> = super::dtype::KV_NAMES
                .iter()
                .copied()
                .filter(|n| n.parse::<KvDtype>().is_ok_and(|k| allowed.contains(&k)))
                .collect();
            return Err(format!(
                "run.kv_cache = '{}' is not a KV cache type {engine} has (its exported command could not hold what the plan counts); use one of: {}",
                self.kv_cache.as_deref().unwrap_or("fp16"),
                names.join(", ")
            ));
        }
        if task == Task::Training && method == Method::Full && weights.is_quantized() {
            return Err(format!(
                "run.weights = '{weights}' cannot be fully fine-tuned; use run.method = 'qlora' or 16-bit weights"
            ));
        }
        Ok(Run {
            task,
            objective: self.objective.unwrap_or(d.objective),
            loss: self.loss.unwrap_or(d.loss),
            weights,
            batch: int_in("run.batch", self.batch, d.batch, 1, 1_000_000)?,
            seq,
            prompt: int_in("run.prompt", self.prompt, seq, 1, i64::from(seq))?,
            engine,
            kv_cache,
            attention: self.attention.unwrap_or(d.attention),
            method,
            precision: self.precision.unwrap_or(d.precision),
            optimizer: self.optimizer.unwrap_or(d.optimizer),
            checkpointing: self.checkpointing.unwrap_or(d.checkpointing),
            lora_rank: int_in("run.lora_rank", self.lora_rank, d.lora_rank, 1, 65_536)?,
            lora_targets: self.lora_targets.unwrap_or(d.lora_targets),
            grad_accum: int_in(
                "run.grad_accum",
                self.grad_accum,
                d.grad_accum,
                1,
                1_000_000,
            )?,
            zero_stage: int_in("run.zero_stage", self.zero_stage, d.zero_stage, 0, 3)?,
            offload: self.offload.unwrap_or(d.offload),
            gpu_memory_utilization: util,
            ubatch: int_in("run.ubatch", self.ubatch, d.ubatch, 1, 1_000_000)?,
            other_processes_bytes: crate::units::gib_to_bytes(other),
            gpu_layers: match self.gpu_layers {
                None => None,
                // llama.cpp reads any -ngl above the layer count (999, -1) as "all".
                Some(n) if n < 0 || n > i64::from(model.layers) => Some(model.layers + 1),
                Some(n) => Some(n as u32),
            },
            cpu_moe_layers: int_in("run.cpu_moe_layers", self.cpu_moe_layers, 0, 0, 1_000_000)?
                .min(model.layers),
            kv_offload: self.kv_offload.unwrap_or(true),
            fit_target_bytes: match self.fit_target_mib {
                None => d.fit_target_bytes,
                Some(m) if m.is_finite() && (0.0..=1_048_576.0).contains(&m) => {
                    (m * crate::units::MIB) as u64
                }
                Some(m) => {
                    return Err(format!(
                        "run.fit_target_mib = {m} is out of range; allowed 0..=1048576"
                    ));
                }
            },
            objective_speed: self.objective_speed.unwrap_or(d.objective_speed),
            min_tokens_per_s: match self.min_tokens_per_s {
                None => d.min_tokens_per_s,
                Some(t) if t.is_finite() && (0.0..=1e6).contains(&t) => t,
                Some(t) => {
                    return Err(format!(
                        "run.min_tokens_per_s = {t} is out of range; allowed 0..=1000000"
                    ));
                }
            },
        })
    }
}

#[cfg(test)]
mod tests {

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

    fn resolve(text: &str) -> Result<Workload, String> {
        WorkloadFile::parse(text, "w.toml")?.resolve(Path::new("."), None)
    }

    #[test]
    fn contract_example_resolves() {
        let w = resolve(
            "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"inference\"\nweights = \"q4_k_m\"\nbatch = 2\nseq = 8192\n",
        )
        .unwrap();
        assert_eq!(w.gpu.vram_bytes, 24 << 30);
        assert_eq!(
            w.run.engine,
            Engine::LlamaCpp,
            "GGUF weights imply llama.cpp"
        );
        assert_eq!(w.run.batch, 2);
    }

    #[test]
    fn errors_name_the_field() {
        let e =
            resolve("[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nbatch = 0\n")
                .unwrap_err();
        assert!(e.contains("run.batch"), "{e}");
        let e =
            resolve("[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nbach = 2\n")
                .unwrap_err();
        assert!(e.contains("bach") && e.contains("line 6"), "{e}");
        let e = resolve(
            "[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nseq = 200000\n",
        )
        .unwrap_err();
        assert!(e.contains("max_context"), "{e}");
        let e = resolve(
            "[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nengine = \"tgi\"\n",
        )
        .unwrap_err();
        assert!(e.contains("run.engine") && e.contains("vllm"), "{e}");
        let e = resolve("[gpu]\nvram_gib = -3\n[model]\npreset = \"llama-3.1-8b\"\n").unwrap_err();
        assert!(e.contains("gpu.vram_gib"), "{e}");
        let e = resolve("[gpu\n").unwrap_err();
        assert!(e.starts_with("w.toml: line 1"), "{e}");
    }

    #[test]
    fn explicit_architecture_without_preset() {
        let w = resolve("[gpu]\nvram_gib = 8\n[model]\nparams = 1.1e9\nlayers = 22\nhidden = 2048\nheads = 32\nkv_heads = 4\nvocab = 32000\nintermediate = 5632\n").unwrap();
        assert_eq!(w.model.head_dim, 64);
        assert_eq!(w.model.kv_heads, 4);
    }
}
