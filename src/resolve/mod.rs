//! The resolution step: a workload file (with the command line's flags already written into
//! it) plus the built-in and user presets -> plain, checked data (`types::Workload`,
//! `DiffusionWorkload`, `GameWorkload`). It sits above `catalog`, `import` and `memory`:
//! presets are looked up and model files read here, once, and the estimators below take the
//! result as plain data.

pub mod diffusion;
mod error;
pub mod game;

pub use error::ResolveError;

use crate::catalog::Catalog;
use crate::import::ImportError;
use crate::memory::any::AnyWorkload;
use crate::memory::diffusion::DiffusionCatalog;
use crate::memory::game::GameCatalog;
use crate::types::arch::ModelArch;
use crate::types::dtype::{KvDtype, WeightFormat};
use crate::types::error::BadField;
use crate::types::gpu::{Gpu, Vendor};
use crate::types::message::Message;
use crate::types::options::*;
use crate::types::workload::{
    FileWeights, GpuSection, GpuSpeed, GpuTarget, LoadedModel, ModelSection, Run, RunSection,
    Workload, WorkloadFile,
};
use std::path::Path;

/// Loads a model from a file (`hf_config`/`file`); `crate::import::load_model` is the one the
/// command line and GUI use.
pub type ModelLoader = fn(&Path) -> Result<LoadedModel, ImportError>;

/// Resolves a workload file by its `run.task`: LLM tasks through `WorkloadFile::resolve`,
/// diffusion and game through their catalogs.
pub fn resolve_any(
    file: &WorkloadFile,
    base: &Path,
    loader: Option<ModelLoader>,
) -> Result<AnyWorkload, ResolveError> {
    // Diffusion and game plans are built from their catalogs' presets; a model file given with
    // them would be silently ignored, so it is refused instead.
    if let Some(task @ (Task::Diffusion | Task::Game)) = file.run.task {
        let given = [
            ("model.file", &file.model.file),
            ("model.hf_config", &file.model.hf_config),
        ];
        if let Some((field, Some(path))) = given.into_iter().find(|(_, p)| p.is_some()) {
            return Err(Message::new("resolve.model_file_unread")
                .text("field", field)
                .text("path", path.display().to_string())
                .text("task", task.to_string())
                .into());
        }
    }
    match file.run.task {
        Some(Task::Diffusion) => Ok(AnyWorkload::Diffusion(diffusion::resolve(
            file,
            file.gpu.resolve()?,
        )?)),
        Some(Task::Game) => Ok(AnyWorkload::Game(game::resolve(file, file.gpu.resolve()?)?)),
        _ => file
            .resolve(base, loader)
            .map(AnyWorkload::Llm)
            .map_err(|e| with_task_hint(e, file)),
    }
}

/// An LLM error about a model preset that is a diffusion model or a game says which task to set.
fn with_task_hint(e: ResolveError, file: &WorkloadFile) -> ResolveError {
    let Some(p) = file.model.preset.as_deref() else {
        return e;
    };
    let task = if DiffusionCatalog::get().model(p).is_ok() {
        Task::Diffusion
    } else if GameCatalog::get().game(p).is_ok() {
        Task::Game
    } else {
        return e;
    };
    ResolveError::OtherTask {
        error: Box::new(e),
        preset: p.to_string(),
        task,
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
            host: crate::catalog::hosts::assumed(),
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
                pcie_gbs: crate::types::gpu::pcie_gbs(g.pcie_gen, g.pcie_lanes),
                tensor: g.tensor_rates(),
            },
            host: crate::catalog::hosts::assumed(),
        }
    }
}

/// An integer field in `min..=max`, `default` when absent.
fn int_in(field: &str, v: Option<i64>, default: u32, min: i64, max: i64) -> Result<u32, BadField> {
    match v {
        None => Ok(default),
        Some(x) if (min..=max).contains(&x) => Ok(x as u32),
        Some(x) => Err(BadField::range(field, x, min, max)),
    }
}

impl WorkloadFile {
    /// Resolves presets and defaults into a checked workload. `base` is the directory relative
    /// paths in the file are taken from; `loader` imports model files.
    pub fn resolve(
        &self,
        base: &Path,
        loader: Option<ModelLoader>,
    ) -> Result<Workload, ResolveError> {
        let gpu = self.gpu.resolve()?;
        let loaded = self.model.resolve(base, loader)?;
        let declared = loaded.format.or(loaded.weights.map(|f| f.format));
        let mut run = self.run.resolve_with(&loaded.arch, declared)?;
        // A float32 checkpoint loads as the engine's default dtype makes it. vLLM's dtype "auto"
        // downcasts it to the card's first supported dtype (vllm/config/model.py
        // `_resolve_auto_dtype`, "Downcast for float32 models"; vllm/platforms/cuda.py
        // `CudaPlatformBase.supported_dtypes`: bf16 from compute capability 8.0, else fp16);
        // transformers' `from_pretrained` keeps float32 (modeling_utils.py: its dtype defaults to
        // "auto", which `_get_dtype` reads from the config).
        let vllm_auto = self.run.weights.is_none()
            && declared == Some(WeightFormat::Fp32)
            && run.engine == Engine::Vllm;
        if vllm_auto {
            run.weights = if gpu.bf16 {
                WeightFormat::Bf16
            } else {
                WeightFormat::Fp16
            };
        }
        let mut model_notes = loaded.notes;
        let mut file_weights = loaded.weights;
        if file_weights.is_none()
            && let Some((w, note)) = self.model.published_weights(&loaded.arch, run.weights)
        {
            file_weights = Some(w);
            model_notes.push(note);
        }
        if let Some(f) = declared {
            let id = if self.run.weights.is_some() && f != run.weights {
                "resolve.weights.asked"
            } else if vllm_auto {
                "resolve.weights.vllm_auto"
            } else if self.run.weights.is_none() && run.weights == f {
                if f == WeightFormat::Fp32 && run.engine == Engine::Transformers {
                    "resolve.weights.transformers_fp32"
                } else {
                    "resolve.weights.files"
                }
            } else {
                "resolve.weights.other"
            };
            model_notes.push(
                Message::new(id)
                    .text("planned", run.weights.to_string())
                    .text("files", f.to_string()),
            );
            // GGUF conversions of MXFP4 experts keep them in MXFP4 whatever the file type
            // (`memory::weights::gguf_keeping_mxfp4_experts`; unsloth's gpt-oss-120b F16 file
            // holds 60.87 GiB, not the 218 GiB of 2 bytes a parameter): the file's bytes are
            // those experts at 17 bytes per 32 weights and the rest by the file type's rule.
            if f == WeightFormat::Mxfp4
                && let WeightFormat::Gguf(t) = run.weights
                && file_weights.is_none()
            {
                let b = crate::memory::weights::gguf_keeping_mxfp4_experts(
                    &loaded.arch,
                    t,
                    Engine::LlamaCpp,
                );
                file_weights = Some(FileWeights {
                    format: run.weights,
                    total_bytes: b.gpu + b.host,
                    host_bytes: b.host,
                });
                model_notes.push(
                    Message::new("resolve.weights.gguf_of_mxfp4")
                        .text("planned", run.weights.to_string()),
                );
            }
        }
        Ok(Workload {
            gpu,
            model_name: loaded.name,
            model: loaded.arch,
            run,
            file_weights,
            model_notes,
        })
    }
}

impl GpuSection {
    /// The card(s) of `[gpu]`: a preset (optionally with its capacity overridden) or a bare
    /// capacity. Shared by every task.
    pub fn resolve(&self) -> Result<GpuTarget, ResolveError> {
        let cat = Catalog::get();
        let count = int_in("gpu.count", self.count.map(i64::from), 1, 1, 1024)?;
        let gpu = match (&self.preset, self.vram_gib) {
            (Some(p), None) => GpuTarget::from_preset(cat.gpu(p)?, count),
            (Some(p), Some(v)) => {
                let mut g = GpuTarget::from_preset(cat.gpu(p)?, count);
                g.vram_bytes = check_vram(v)?;
                g
            }
            (None, Some(v)) => GpuTarget::with_capacity(check_vram(v)?, count),
            (None, None) => return Err(Message::new("resolve.gpu_missing").into()),
        };
        let mut gpu = gpu;
        gpu.host = crate::catalog::hosts::resolve(self)?;
        Ok(gpu)
    }
}

fn check_vram(v: f64) -> Result<u64, BadField> {
    if v.is_finite() && v > 0.0 && v <= 4096.0 {
        Ok(crate::units::gib_to_bytes(v))
    } else {
        Err(BadField::positive_range("gpu.vram_gib", v, 4096))
    }
}

impl ModelSection {
    fn resolve(
        &self,
        base: &Path,
        loader: Option<ModelLoader>,
    ) -> Result<LoadedModel, ResolveError> {
        let sources = [
            self.preset.is_some(),
            self.hf_config.is_some(),
            self.file.is_some(),
        ];
        if sources.iter().filter(|s| **s).count() > 1 {
            return Err(Message::new("resolve.model_sources").into());
        }
        let mut file_weights = None;
        let (mut format, mut notes) = (None, Vec::new());
        let (name, mut arch) = if let Some(p) = &self.preset {
            let m = Catalog::get().model(p)?;
            format = m.format;
            (m.name.clone(), m.arch.clone())
        } else if let Some(path) = self.hf_config.as_ref().or(self.file.as_ref()) {
            let load = loader.ok_or_else(|| Message::new("resolve.no_importer"))?;
            let m = load(&base.join(path))?;
            file_weights = m.weights;
            format = m.format;
            notes = m.notes;
            (m.name, m.arch)
        } else {
            let missing = |f: &str| Message::new("resolve.model_field_missing").text("field", f);
            let need = |f: &str, v: Option<u32>| v.ok_or_else(|| missing(f));
            let heads = need("heads", self.heads)?;
            let hidden = need("hidden", self.hidden)?;
            let arch = ModelArch {
                params: self.params.ok_or_else(|| missing("params"))?,
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
                model_type: None,
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
        if self.model_type.is_some() {
            arch.model_type.clone_from(&self.model_type);
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

impl ModelSection {
    /// The preset's published file in `format` (a GGUF quantization), whose size on disk is
    /// the weights' bytes: the GGUF header and metadata it also holds are a few MiB. llama.cpp
    /// keeps the token embedding in host memory; its share is the formula's
    /// (`memory::weights::weight_bytes`). None when the architecture was changed by hand.
    fn published_weights(
        &self,
        arch: &ModelArch,
        format: WeightFormat,
    ) -> Option<(FileWeights, Message)> {
        if self.params.is_some() {
            return None;
        }
        let m = Catalog::get().model(self.preset.as_deref()?).ok()?;
        let f = m.files.iter().find(|f| f.format == format)?;
        let total = f.bytes as f64;
        let host = if format.is_gguf() {
            crate::memory::weights::weight_bytes(arch, format, Engine::LlamaCpp)
                .host
                .min(total)
        } else {
            0.0
        };
        let note = Message::new("resolve.weights.published")
            .bytes("bytes", f.bytes)
            .text("format", format.to_string())
            .text("source", f.source.clone());
        Some((
            FileWeights {
                format,
                total_bytes: total,
                host_bytes: host,
            },
            note,
        ))
    }
}

impl RunSection {
    pub fn resolve(&self, model: &ModelArch) -> Result<Run, BadField> {
        self.resolve_with(model, None)
    }

    /// `file_format` is the format the model's files hold, the default for `run.weights`.
    pub fn resolve_with(
        &self,
        model: &ModelArch,
        file_format: Option<WeightFormat>,
    ) -> Result<Run, BadField> {
        let d = Run::default();
        let task = self.task.unwrap_or(d.task);
        let method = self.method.unwrap_or(d.method);
        let weights = match &self.weights {
            Some(w) => w.parse::<WeightFormat>().map_err(|_| {
                BadField::not_allowed("run.weights", w, crate::types::dtype::WEIGHT_NAMES)
            })?,
            None if method == Method::Qlora => WeightFormat::Nf4,
            None => file_format.unwrap_or(d.weights),
        };
        let kv_cache = match &self.kv_cache {
            Some(k) => k.parse::<KvDtype>().map_err(|_| {
                BadField::not_allowed("run.kv_cache", k, crate::types::dtype::KV_NAMES)
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
            return Err(Message::new("resolve.seq_over_context")
                .int("seq", seq)
                .int("max", max)
                .into());
        }
        let util = self
            .gpu_memory_utilization
            .unwrap_or(d.gpu_memory_utilization);
        if !(util > 0.0 && util <= 1.0) {
            return Err(BadField::positive_range(
                "run.gpu_memory_utilization",
                util,
                1,
            ));
        }
        let other = self.other_processes_gib.unwrap_or(0.0);
        if !(other.is_finite() && (0.0..=4096.0).contains(&other)) {
            return Err(BadField::range("run.other_processes_gib", other, 0, 4096));
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
            return Err(Message::new("resolve.qlora_base")
                .text("weights", weights.to_string())
                .into());
        }
        if task != Task::Training
            && let Some(allowed) = crate::types::dtype::kv_types_of(engine)
            && !allowed.contains(&kv_cache)
        {
            let names: Vec<&str> = crate::types::dtype::KV_NAMES
                .iter()
                .copied()
                .filter(|n| n.parse::<KvDtype>().is_ok_and(|k| allowed.contains(&k)))
                .collect();
            return Err(Message::new("resolve.kv_for_engine")
                .text("kv", self.kv_cache.as_deref().unwrap_or("fp16"))
                .text("engine", engine.to_string())
                .text("allowed", names.join(", "))
                .into());
        }
        if task == Task::Training && method == Method::Full && weights.is_quantized() {
            return Err(Message::new("resolve.full_quantized")
                .text("weights", weights.to_string())
                .into());
        }
        let optimizer_in_bwd = self.optimizer_in_bwd.unwrap_or(d.optimizer_in_bwd);
        if optimizer_in_bwd && self.grad_accum.is_some_and(|g| g > 1) {
            // torchtune's recipes refuse the pair (full_finetune_single_device.py `__init__`:
            // "Gradient accumulation is not supported with optimizer in bwd").
            return Err(Message::new("resolve.bwd_accum").into());
        }
        if optimizer_in_bwd && self.offload.is_some_and(|o| o != Offload::None) {
            return Err(Message::new("resolve.bwd_offload").into());
        }
        let activation_offload = self.activation_offload.unwrap_or(d.activation_offload);
        let checkpointing = self.checkpointing.unwrap_or(d.checkpointing);
        if activation_offload && checkpointing != Checkpointing::Full {
            // torchtune's recipes refuse it (lora_finetune_single_device.py `__init__`:
            // "enable_activation_offloading should only be True when
            // enable_activation_checkpointing is True"); TRL and Unsloth offload the inputs of
            // checkpointed layers too.
            return Err(Message::new("resolve.activation_offload")
                .text("checkpointing", checkpointing.to_string())
                .into());
        }
        let optimizer = self.optimizer.unwrap_or(d.optimizer);
        let paged_optimizer = self.paged_optimizer.unwrap_or(d.paged_optimizer);
        if paged_optimizer && !optimizer.has_paged_variant() {
            return Err(Message::new("resolve.paged_variant")
                .text("optimizer", optimizer.to_string())
                .into());
        }
        if paged_optimizer && self.offload.is_some_and(|o| o != Offload::None) {
            return Err(Message::new("resolve.paged_offload").into());
        }
        let packing = self.packing.unwrap_or(d.packing);
        let objective = self.objective.unwrap_or(d.objective);
        if packing && objective != Objective::CausalLm {
            // TRL packs for language modelling (`SFTTrainer`); a classifier reads one pooled
            // token per row, so several samples in a row would share one label.
            return Err(Message::new("resolve.packing_objective")
                .text("objective", objective.to_string())
                .into());
        }
        let avg_seq = match self.avg_seq {
            None => None,
            Some(a) => Some(int_in("run.avg_seq", Some(a), 0, 1, 10_000_000)?),
        };
        Ok(Run {
            task,
            objective,
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
            optimizer,
            optimizer_step: self.optimizer_step.unwrap_or(d.optimizer_step),
            optimizer_in_bwd,
            activation_offload,
            paged_optimizer,
            packing,
            avg_seq,
            torch_compile: self.torch_compile.unwrap_or(d.torch_compile),
            checkpointing,
            lora_rank: int_in("run.lora_rank", self.lora_rank, d.lora_rank, 1, 65_536)?,
            lora_targets: match &self.lora_targets {
                Some(t) if method != Method::Full => {
                    crate::memory::lora::check(model, t)?;
                    t.clone()
                }
                Some(t) => t.clone(),
                None => d.lora_targets,
            },
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
                    return Err(BadField::range("run.fit_target_mib", m, 0, 1_048_576));
                }
            },
            objective_speed: self.objective_speed.unwrap_or(d.objective_speed),
            min_tokens_per_s: match self.min_tokens_per_s {
                None => d.min_tokens_per_s,
                Some(t) if t.is_finite() && (0.0..=1e6).contains(&t) => t,
                Some(t) => {
                    return Err(BadField::range("run.min_tokens_per_s", t, 0, 1_000_000));
                }
            },
        })
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::ComponentId;

    fn run(text: &str) -> Result<crate::memory::Breakdown, String> {
        let f = WorkloadFile::parse(text, "w.toml")?;
        Ok(crate::memory::any::estimate_any(&resolve_any(
            &f,
            Path::new("."),
            None,
        )?))
    }

    #[test]
    fn dispatches_on_the_task() {
        let d = run("[gpu]\nvram_gib = 12\n[model]\npreset = \"sdxl\"\n[run]\ntask = \"diffusion\"\nwidth = 1024\nheight = 1024\n").unwrap();
        assert!(d.get(ComponentId::TextEncoders) > 0 || d.get(ComponentId::VaeDecode) > 0);
        let g = run("[gpu]\nvram_gib = 8\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"game\"\nresolution = \"2560x1440\"\ntexture_quality = \"ultra\"\n").unwrap();
        assert!(g.get(ComponentId::Textures) > 0 && g.get(ComponentId::RenderTargets) > 0);
        let l = run("[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.1-8b\"\n").unwrap();
        assert!(l.get(ComponentId::KvCache) > 0);
    }

    #[test]
    fn errors_stay_one_line() {
        for t in [
            "[gpu]\nvram_gib = 12\n[model]\npreset = \"sdxl\"\n[run]\ntask = \"game\"\n",
            "[gpu]\nvram_gib = 12\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"diffusion\"\n",
            "[gpu]\nvram_gib = 12\n[run]\ntask = \"game\"\nresolution = \"big\"\n",
            "[model]\npreset = \"sdxl\"\n[run]\ntask = \"diffusion\"\n",
            "[gpu]\nvram_gib = 12\n[model]\npreset = \"sdxl\"\n",
        ] {
            let e = run(t).unwrap_err();
            assert!(!e.contains('\n') && !e.is_empty(), "{e}");
        }
        let e = run("[gpu]\nvram_gib = 12\n[model]\npreset = \"flux-dev\"\n").unwrap_err();
        assert!(e.contains("task = \"diffusion\""), "{e}");
        let e = run("[gpu]\nvram_gib = 12\n[model]\npreset = \"doom-eternal\"\n").unwrap_err();
        assert!(e.contains("--task game"), "{e}");
    }

    fn resolve(text: &str) -> Result<Workload, String> {
        Ok(WorkloadFile::parse(text, "w.toml")?.resolve(Path::new("."), None)?)
    }

    #[test]
    fn a_step_in_backward_refuses_what_it_cannot_do() {
        let base = "[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.2-1b\"\n[run]\ntask = \"training\"\noptimizer_in_bwd = true\n";
        assert!(resolve(base).unwrap().run.optimizer_in_bwd);
        let e = resolve(&format!("{base}grad_accum = 4\n")).unwrap_err();
        assert!(
            e.contains("run.optimizer_in_bwd") && e.contains("run.grad_accum"),
            "{e}"
        );
        let e = resolve(&format!("{base}offload = \"optimizer\"\n")).unwrap_err();
        assert!(
            e.contains("run.optimizer_in_bwd") && e.contains("run.offload"),
            "{e}"
        );
    }

    #[test]
    fn paged_optimizer_needs_a_bitsandbytes_optimizer_on_the_gpu() {
        let base = "[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.2-1b\"\n[run]\ntask = \"training\"\npaged_optimizer = true\n";
        for ok in ["adamw", "adamw-8bit", "lion"] {
            let w = resolve(&format!("{base}optimizer = \"{ok}\"\n")).unwrap();
            assert!(w.run.paged_optimizer, "{ok}");
        }
        for no in ["sgd", "adafactor"] {
            let e = resolve(&format!("{base}optimizer = \"{no}\"\n")).unwrap_err();
            assert!(e.contains("run.paged_optimizer") && e.contains(no), "{e}");
        }
        let e = resolve(&format!("{base}offload = \"optimizer\"\n")).unwrap_err();
        assert!(
            e.contains("run.paged_optimizer") && e.contains("run.offload"),
            "{e}"
        );
        // The paged spelling is no longer read as the unpaged optimizer.
        assert!(
            resolve(&base.replace("paged_optimizer = true", "optimizer = \"paged-adamw-8bit\""))
                .is_err()
        );
    }

    #[test]
    fn packing_is_for_causal_lm_and_samples_are_cut_to_the_sequence() {
        let base = "[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.2-1b\"\n[run]\ntask = \"training\"\nseq = 1024\n";
        let w = resolve(&format!("{base}packing = true\navg_seq = 300\n")).unwrap();
        assert!(w.run.packing && w.run.mean_sample_tokens() == 300);
        // Longer samples are truncated to run.seq.
        let long = resolve(&format!("{base}avg_seq = 5000\n")).unwrap();
        assert_eq!(long.run.mean_sample_tokens(), 1024);
        assert_eq!(resolve(base).unwrap().run.mean_sample_tokens(), 1024);
        let e = resolve(&format!("{base}avg_seq = 0\n")).unwrap_err();
        assert!(e.contains("run.avg_seq"), "{e}");
        let e = resolve(&format!(
            "{base}packing = true\nobjective = \"classification\"\n"
        ))
        .unwrap_err();
        assert!(
            e.contains("run.packing") && e.contains("classification"),
            "{e}"
        );
    }

    #[test]
    fn activation_offload_needs_full_checkpointing() {
        let base = "[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.2-1b\"\n[run]\ntask = \"training\"\nactivation_offload = true\n";
        assert!(
            resolve(&format!("{base}checkpointing = \"full\"\n"))
                .unwrap()
                .run
                .activation_offload
        );
        for ckpt in ["none", "selective"] {
            let e = resolve(&format!("{base}checkpointing = \"{ckpt}\"\n")).unwrap_err();
            assert!(
                e.contains("run.activation_offload") && e.contains("run.checkpointing = 'full'"),
                "{e}"
            );
        }
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
