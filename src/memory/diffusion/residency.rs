//! Which weights sit on the GPU during each stage, as ComfyUI and diffusers place them, and the
//! resulting breakdown at the peak stage.
//!
//! ComfyUI has two modes (`engines::comfyui::memory`, which places the pipeline in each): with
//! dynamic VRAM only the running model's weights are wanted
//! on the card, as much of them as fits beside the stage's working memory, and the rest is read
//! from system RAM as each layer runs; idle models stay cached only until something needs the
//! room (comfy/model_management.py `free_memory`: "don't actually unload dynamic models for the
//! sake of other dynamic models as that works on-demand"). With classic loading
//! (comfy/model_management.py `load_models_gpu`) models stay loaded after use while everything
//! fits ("smart memory"); when the next model needs room, the others are unloaded; if the
//! denoiser itself does not fit next to `minimum_inference_memory()` = 0.8 GiB plus the reserve,
//! it is "loaded partially" and the rest of its weights are streamed from system RAM every step.
//! diffusers keeps every component on the GPU unless `enable_model_cpu_offload` (one whole model
//! at a time) or `enable_sequential_cpu_offload` (one submodule at a time): its placement is
//! `engines::diffusers::memory`.

use super::DiffusionWorkload;
use super::parts::{TAESD_PARAMS, denoiser_bytes, text_encoder_bytes};
use super::stages::{decode_bytes, denoise_bytes, encode_bytes};
use crate::engines::comfyui::memory::{self as comfyui, MemoryMode};
use crate::engines::diffusers::memory as diffusers;
use crate::memory::breakdown::{Breakdown, ComponentId, Layer};
use crate::memory::overhead;
use crate::types::message::Message;
use crate::types::options::Engine;
use crate::units::MIB;
use serde::{Deserialize, Serialize};

/// The allocator cache that cannot be given back at the peak: 1% of the weights and 5% of the
/// activations [derived: `estimate`'s hard share of the reserved-minus-allocated growth].
pub const HARD_WEIGHTS: f64 = 0.01;
pub const HARD_ACTIVATIONS: f64 = 0.05;

/// Reserved-minus-allocated growth per stage: the VAE decode allocates large tensors of many
/// shapes, and diffusers' Flux runs show reserved peaks ~4.5 GiB over the loaded weights for a
/// 2.5 GiB decode (diffusers quantization blog, every backend) — about 1.7× [derived];
/// the transformer stages reuse same-sized blocks.
const FRAGMENTATION: [f64; 3] = [0.1, 0.1, 0.7];

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Encode,
    #[default]
    Denoise,
    Decode,
}

impl Stage {
    pub const ALL: [Stage; 3] = [Stage::Encode, Stage::Denoise, Stage::Decode];

    /// What the pipeline does in the stage, for people.
    pub fn label(self) -> &'static str {
        match self {
            Stage::Encode => "text encoding",
            Stage::Denoise => "denoising",
            Stage::Decode => "VAE decode",
        }
    }
}

/// What one stage holds on the GPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StageUse {
    pub text_encoders: f64,
    pub denoiser: f64,
    pub adapters: f64,
    pub vae: f64,
    pub activations: f64,
}

impl StageUse {
    pub fn weights(&self) -> f64 {
        self.text_encoders + self.denoiser + self.adapters + self.vae
    }
    pub fn total(&self) -> f64 {
        self.weights() + self.activations
    }
}

/// The engine's placement of the pipeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// Encode, denoise, decode.
    pub stages: [StageUse; 3],
    pub peak: Stage,
    /// Denoiser weights read from system RAM every step (partial load, `--novram`,
    /// sequential offload).
    pub streamed_bytes: f64,
    /// ComfyUI would log "loaded partially" (classic loading).
    pub partially_loaded: bool,
    /// Text-encoder weights read from system RAM while the prompt is encoded (dynamic VRAM).
    pub encoders_streamed_bytes: f64,
    /// Images the VAE decodes at once.
    pub decode_images: f64,
    /// The VAE runs in fp32.
    pub vae_fp32: bool,
    /// All weights of the pipeline, wherever they sit.
    pub all_weights: f64,
}

impl Placement {
    pub fn peak_use(&self) -> StageUse {
        self.stages[self.peak as usize]
    }
}

/// Weights and activations of every part, before placement (bytes).
pub struct Sizes {
    /// Each text encoder's weights, in the model's order.
    pub te: Vec<f64>,
    pub denoiser: f64,
    /// LoRAs, ControlNets and the IP-Adapter.
    pub adapters: f64,
    pub vae: f64,
    /// The VAE runs in fp32.
    pub vae_fp32: bool,
    /// The activations of each stage: encode, denoise, decode.
    pub act: [f64; 3],
}

fn sizes(w: &DiffusionWorkload, decode_images: f64) -> Sizes {
    let r = &w.run;
    let e = r.engine;
    let te = w
        .text_encoders
        .iter()
        .enumerate()
        .map(|(i, p)| {
            text_encoder_bytes(
                p,
                r.text_encoder_weights.get(i).copied().unwrap_or(r.weights),
                e,
            )
        })
        .collect();
    let act16 = w.act_bytes();
    // LoRA files are 16-bit; ControlNet and IP-Adapter run in the pipeline's compute dtype.
    let adapters = f64::from(r.loras) * f64::from(r.lora_rank) * w.model.lora_mib_per_rank * MIB
        + f64::from(r.controlnets) * w.model.controlnet_params * act16
        + if r.ip_adapter {
            w.model.ip_adapter_params * act16
        } else {
            0.0
        };
    let vae_fp32 = vae_in_fp32(w);
    let vae = if r.tiny_vae {
        TAESD_PARAMS * 2.0
    } else {
        w.vae.params * if vae_fp32 { 4.0 } else { 2.0 }
    };
    Sizes {
        te,
        denoiser: denoiser_bytes(&w.model, r.weights, e),
        adapters,
        vae,
        vae_fp32,
        act: [
            encode_bytes(w),
            denoise_bytes(w),
            decode_bytes(w, decode_images, vae_fp32),
        ],
    }
}

/// The VAE's working dtype, as each engine picks it.
fn vae_in_fp32(w: &DiffusionWorkload) -> bool {
    match w.run.engine {
        Engine::Diffusers => diffusers::vae_in_fp32(w),
        _ => comfyui::vae_in_fp32(w),
    }
}

/// What each stage holds: with `all_resident` every model stays on the GPU through all three
/// stages, else each stage holds only its own model; `denoiser_on_gpu` is the denoiser's share
/// resident on the card.
pub fn stage_uses(
    s: &Sizes,
    te_on_gpu: bool,
    all_resident: bool,
    denoiser_on_gpu: f64,
) -> [StageUse; 3] {
    let te_total: f64 = if te_on_gpu { s.te.iter().sum() } else { 0.0 };
    if all_resident {
        let base = StageUse {
            text_encoders: te_total,
            denoiser: denoiser_on_gpu,
            adapters: s.adapters,
            vae: s.vae,
            activations: 0.0,
        };
        return [0, 1, 2].map(|i| StageUse {
            activations: s.act[i],
            ..base
        });
    }
    [
        StageUse {
            text_encoders: te_total,
            activations: s.act[0],
            ..Default::default()
        },
        StageUse {
            denoiser: denoiser_on_gpu,
            adapters: s.adapters,
            activations: s.act[1],
            ..Default::default()
        },
        StageUse {
            vae: s.vae,
            activations: s.act[2],
            ..Default::default()
        },
    ]
}

/// Places the pipeline on the GPU the way its engine would.
pub fn place(w: &DiffusionWorkload) -> Placement {
    let r = &w.run;
    let capacity = w.gpu.vram_bytes as f64;
    let memory = w.comfy_memory();
    let comfy = memory.is_some();
    let dynamic = memory
        .as_ref()
        .is_some_and(|m| m.mode == MemoryMode::Dynamic);
    // What torch reports free once the CUDA context exists (ComfyUI `get_free_memory`), less
    // what ComfyUI keeps free.
    let free = capacity
        - overhead::TORCH_CONTEXT_BYTES
        - r.other_processes_bytes as f64
        - memory
            .as_ref()
            .map_or(0.0, |m| (m.reserve_bytes + m.headroom_bytes) as f64);
    // How many images the VAE decodes at once.
    let decode_images = if r.vae_tiling || r.vae_slicing {
        1.0
    } else if comfy {
        comfyui::decode_images(w, free, &sizes(w, 1.0))
    } else {
        // diffusers decodes the whole batch in one call.
        f64::from(r.batch)
    };
    let mut s = sizes(w, decode_images);
    let all_weights = s.te.iter().sum::<f64>() + s.denoiser + s.adapters + s.vae;
    let (stages, streamed, encoders_streamed, partially_loaded) = if dynamic {
        let (st, d, t) = comfyui::place_dynamic(&mut s, r, capacity, free);
        (st, d, t, false)
    } else if comfy {
        let (st, d, partial) = comfyui::place_classic(&mut s, r, free);
        (st, d, 0.0, partial)
    } else {
        let (st, d) = diffusers::place(&s, r);
        (st, d, 0.0, false)
    };
    let peak = Stage::ALL
        .into_iter()
        .max_by(|a, b| {
            stages[*a as usize]
                .total()
                .total_cmp(&stages[*b as usize].total())
        })
        .unwrap_or(Stage::Denoise);
    Placement {
        stages,
        peak,
        streamed_bytes: streamed,
        partially_loaded,
        encoders_streamed_bytes: encoders_streamed,
        decode_images,
        vae_fp32: s.vae_fp32,
        all_weights,
    }
}

/// Per-GPU estimate of a diffusion workload at its peak stage.
pub fn estimate(w: &DiffusionWorkload) -> Breakdown {
    let p = place(w);
    let at = p.peak_use();
    let mut b = Breakdown::new(w.gpu.vram_bytes);
    b.add(
        ComponentId::Weights,
        "Diffusion model weights",
        at.denoiser,
        Layer::Tensor,
    );
    b.add(
        ComponentId::TextEncoders,
        "Text encoders",
        at.text_encoders,
        Layer::Tensor,
    );
    b.add(
        ComponentId::VaeWeights,
        "VAE weights",
        at.vae,
        Layer::Tensor,
    );
    b.add(
        ComponentId::Adapters,
        "LoRA / ControlNet / IP-Adapter",
        at.adapters,
        Layer::Tensor,
    );
    let (id, label) = match p.peak {
        Stage::Encode => (ComponentId::Activations, "Prompt encoding"),
        Stage::Denoise => (ComponentId::Activations, "Denoising activations"),
        Stage::Decode => (ComponentId::VaeDecode, "VAE decode"),
    };
    b.add(id, label, at.activations, Layer::Tensor);
    // Reserved: the largest stage including the cache it leaves fragmented. The caching
    // allocator frees its cache and retries before it reports out-of-memory
    // (c10/cuda/CUDACachingAllocator.cpp), so beyond a small hard share the slack only grows
    // into memory the card has spare.
    let soft = Stage::ALL
        .iter()
        .map(|s| {
            let u = p.stages[*s as usize];
            u.weights() + u.activations * (1.0 + FRAGMENTATION[*s as usize])
        })
        .fold(0.0, f64::max)
        + 0.01 * at.weights()
        - b.peak.tensors_bytes as f64;
    let hard = HARD_WEIGHTS * at.weights() + HARD_ACTIVATIONS * at.activations;
    let memory = w.comfy_memory();
    let kept = memory
        .as_ref()
        .map_or(0, |m| m.reserve_bytes + m.headroom_bytes);
    let external = (w.run.other_processes_bytes + kept) as f64;
    let spare = w.gpu.vram_bytes as f64
        - external
        - overhead::TORCH_CONTEXT_BYTES
        - b.peak.tensors_bytes as f64;
    b.add(
        ComponentId::AllocatorOverhead,
        "Allocator cache",
        hard.max(soft.min(spare)),
        Layer::Allocator,
    );
    b.add(
        ComponentId::CudaContext,
        "CUDA context",
        overhead::TORCH_CONTEXT_BYTES,
        Layer::Process,
    );
    let r = &w.run;
    if let Some(m) = &memory {
        comfyui::kept_free(&mut b, m);
    }
    b.add(
        ComponentId::OtherProcesses,
        "Other programs on the GPU",
        r.other_processes_bytes as f64,
        Layer::External,
    );
    match &memory {
        Some(m) => comfyui::warnings(&mut b, m, &p, r),
        None => diffusers::warnings(&mut b, &p, r),
    }
    if r.attention == crate::types::options::Attention::Eager
        && p.stages[1].activations > 0.5 * w.gpu.vram_bytes as f64
    {
        b.warn(Message::new("warn.attention.naive"));
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::diffusion::{Bus, CpuOffload, DiffusionWorkload, VramMode};
    use crate::types::workload::GpuTarget;
    use crate::units::{GIB, human};

    fn gpu(gib: f64) -> GpuTarget {
        GpuTarget::with_capacity(crate::units::gib_to_bytes(gib), 1)
    }

    fn wl(model: &str, gib: f64, engine: Engine) -> DiffusionWorkload {
        let mut w = crate::resolve::diffusion::for_preset(gpu(gib), Bus::default(), model).unwrap();
        w.run.engine = engine;
        w
    }

    /// ComfyUI with classic loading (`--disable-dynamic-vram`).
    fn classic(model: &str, gib: f64) -> DiffusionWorkload {
        let mut w = wl(model, gib, Engine::ComfyUi);
        w.run.dynamic_vram = crate::types::options::DynamicVram::Off;
        w
    }

    #[test]
    fn diffusers_keeps_everything_and_peaks_at_the_decode() {
        let w = wl("sdxl", 80.0, Engine::Diffusers);
        let b = estimate(&w);
        // bf16 weights 3.4688 B params × 2 = 6.46 GiB + 2.5 GiB decode (reference row gt083: 8.961).
        let t = b.peak.tensors_bytes as f64 / GIB;
        assert!((t - 8.96).abs() < 0.05, "{t}");
        assert!(b.get(ComponentId::VaeDecode) > 0 && b.get(ComponentId::Activations) == 0);
    }

    #[test]
    fn model_offload_holds_one_model_at_a_time() {
        let mut w = wl("sdxl", 80.0, Engine::Diffusers);
        let all = estimate(&w).peak.tensors_bytes;
        w.run.cpu_offload = CpuOffload::Model;
        let p = place(&w);
        assert_eq!(p.stages[2].denoiser, 0.0);
        assert_eq!(p.stages[1].vae, 0.0);
        assert!(estimate(&w).peak.tensors_bytes < all);
        w.run.cpu_offload = CpuOffload::Sequential;
        assert!(place(&w).streamed_bytes > 0.0);
    }

    #[test]
    fn comfyui_loads_flux_partially_on_12_gb() {
        let w = classic("flux-dev", 12.0);
        let p = place(&w);
        assert!(
            p.partially_loaded,
            "Flux bf16 (22 GiB) cannot sit whole on 12 GiB"
        );
        let b = estimate(&w);
        assert!(b.fits(), "partially loaded still runs: {:?}", b.components);
        assert!(
            b.warnings
                .iter()
                .any(|m| m.to_string().contains("loaded partially"))
        );
        // On a 48 GiB card everything stays loaded.
        let p = place(&classic("flux-dev", 48.0));
        assert!(!p.partially_loaded && p.stages[1].text_encoders > 0.0);
    }

    /// The partial-load note names the denoiser's whole size even when the VAE decode (after
    /// the denoiser was unloaded) is the peak stage: SDXL 1536² batch 2 on an 8 GiB card.
    #[test]
    fn the_streamed_share_is_of_the_whole_denoiser_whatever_stage_peaks() {
        let mut w = classic("sdxl", 8.0);
        (w.run.width, w.run.height, w.run.batch) = (1536, 1536, 2);
        let p = place(&w);
        assert_eq!(p.peak, Stage::Decode);
        assert!(p.streamed_bytes > 0.0);
        let whole = denoiser_bytes(&w.model, w.run.weights, w.run.engine);
        let b = estimate(&w);
        let note = b
            .warnings
            .iter()
            .map(ToString::to_string)
            .find(|m| m.contains("loaded partially"))
            .expect("a partial-load note");
        let expect = format!(
            "{} of {} streamed",
            human(p.streamed_bytes as u64),
            human(whole as u64)
        );
        assert!(note.contains(&expect), "{note} / {expect}");
    }

    #[test]
    fn comfyui_vram_modes() {
        let mut w = classic("sdxl", 8.0);
        w.run.vram_mode = VramMode::Low;
        assert_eq!(
            place(&w).stages[0].text_encoders,
            0.0,
            "--lowvram runs text encoders on the CPU"
        );
        w.run.vram_mode = VramMode::No;
        let p = place(&w);
        assert_eq!(p.stages[1].denoiser, 0.0);
        assert!(p.streamed_bytes > 4.0 * GIB);
        w.run.vram_mode = VramMode::High;
        assert!(
            place(&w).stages[1].vae > 0.0,
            "--highvram keeps every model loaded"
        );
    }

    #[test]
    fn comfyui_reserve_and_other_programs_count_against_the_card() {
        let mut w = classic("sd15", 8.0);
        w.run.other_processes_bytes = 1 << 30;
        let b = estimate(&w);
        let reserve = comfyui::RESERVE_WINDOWS;
        assert_eq!(b.get(ComponentId::ReservedVram), reserve);
        assert_eq!(
            b.required_bytes(),
            b.peak.process_bytes + reserve + (1 << 30)
        );
    }

    /// Dynamic VRAM (the default on NVIDIA): Flux bf16 on 12 GiB is never "loaded partially";
    /// as much of its transformer as fits beside the denoise stays resident and the rest
    /// streams (model_patcher.py `ModelPatcherDynamic.load` logs "prepared for dynamic VRAM
    /// loading", never "loaded partially"). comfy-aimdo keeps 256 MiB free (src/plat.h
    /// `VRAM_HEADROOM`) where classic loading keeps 600 MiB + `minimum_inference_memory()`,
    /// so more stays resident.
    #[test]
    fn dynamic_vram_streams_what_does_not_fit_and_keeps_more_resident() {
        let w = wl("flux-dev", 12.0, Engine::ComfyUi);
        assert_eq!(w.comfy_memory().unwrap().mode, MemoryMode::Dynamic);
        let p = place(&w);
        assert!(!p.partially_loaded);
        let whole = denoiser_bytes(&w.model, w.run.weights, w.run.engine);
        let resident = p.stages[1].denoiser;
        assert!(resident > 0.0 && p.streamed_bytes > 0.0);
        assert!((resident + p.streamed_bytes - whole).abs() < 1.0);
        // Only the running model: the text encoders and the VAE are evicted for the denoise.
        assert_eq!((p.stages[1].text_encoders, p.stages[1].vae), (0.0, 0.0));
        let b = estimate(&w);
        assert!(b.fits(), "{:?}", b.components);
        assert!(
            b.warnings
                .iter()
                .any(|m| m.to_string().starts_with("dynamic VRAM:")),
            "{:?}",
            b.warnings
        );
        assert!(
            !b.warnings
                .iter()
                .any(|m| m.to_string().contains("loaded partially"))
        );
        let c = place(&classic("flux-dev", 12.0));
        assert!(
            resident > c.stages[1].denoiser + 0.5 * GIB,
            "dynamic {resident} vs classic {}",
            c.stages[1].denoiser
        );
        // The resident share fills the card: what is left is the headroom and the allocator's
        // hard share, well under the classic 0.8 GiB inference minimum.
        let left = w.gpu.vram_bytes as f64 - b.required_bytes() as f64;
        assert!((0.0..0.1 * GIB).contains(&left), "{left}");
    }

    /// `--vram-headroom 2` (main.py `init_devices((d.index, int(args.vram_headroom * 1024 **
    /// 3)))`, added to every deficit in src/plat.h `budget_deficit`) keeps 2 GiB more free: about
    /// 2 GiB less of the model stays resident.
    #[test]
    fn vram_headroom_takes_from_the_resident_weights() {
        let mut w = wl("flux-dev", 12.0, Engine::ComfyUi);
        let before = place(&w).stages[1].denoiser;
        w.run.vram_headroom_bytes = 2 << 30;
        let after = place(&w).stages[1].denoiser;
        assert!(
            ((before - after) / GIB - 2.0).abs() < 0.05,
            "{before} {after}"
        );
        assert_eq!(estimate(&w).get(ComponentId::VramHeadroom), 2 << 30);
    }

    /// `--lowvram` does nothing with dynamic VRAM (cli_args.py help "Doesn't do anything if
    /// dynamic vram is enabled"): the text encoders stay on the GPU
    /// (model_management.py `text_encoder_device` returns the GPU when aimdo is enabled), where
    /// classic `--lowvram` runs them on the CPU.
    #[test]
    fn lowvram_is_a_no_op_with_dynamic_vram() {
        let mut w = wl("sdxl", 8.0, Engine::ComfyUi);
        w.run.vram_mode = VramMode::Low;
        let p = place(&w);
        assert!(p.stages[0].text_encoders > 0.0);
        assert!(
            estimate(&w)
                .warnings
                .iter()
                .any(|m| m.to_string().contains("--lowvram does nothing"))
        );
        let mut c = classic("sdxl", 8.0);
        c.run.vram_mode = VramMode::Low;
        assert_eq!(place(&c).stages[0].text_encoders, 0.0);
    }

    /// On a card that holds everything, dynamic VRAM evicts nothing: every model stays cached,
    /// as with classic smart memory.
    #[test]
    fn dynamic_vram_keeps_everything_when_it_fits() {
        let p = place(&wl("flux-dev", 48.0, Engine::ComfyUi));
        assert_eq!(p.streamed_bytes, 0.0);
        assert!(p.stages[1].text_encoders > 0.0 && p.stages[1].vae > 0.0);
    }
}
