//! Which weights sit on the GPU during each stage, as ComfyUI and diffusers place them, and the
//! resulting breakdown at the peak stage.
//!
//! ComfyUI (comfy/model_management.py): models stay loaded after use while everything fits
//! ("smart memory"); when the next model needs room, the others are unloaded; if the denoiser
//! itself does not fit next to its working memory, it is "loaded partially" and the rest of its
//! weights are streamed from system RAM every step. It keeps `--reserve-vram` free (default
//! 400 MB on Linux, 600 MB on Windows) and wants `minimum_inference_memory()` = 0.8 GiB free for
//! the run itself. diffusers keeps every component on the GPU unless `enable_model_cpu_offload`
//! (one whole model at a time) or `enable_sequential_cpu_offload` (one submodule at a time).

use super::parts::{TAESD_PARAMS, denoiser_bytes, text_encoder_bytes};
use super::stages::{decode_bytes, denoise_bytes, encode_bytes};
use super::{CpuOffload, DiffusionWorkload, VramMode};
use crate::memory::breakdown::{Breakdown, Layer};
use crate::memory::overhead;
use crate::types::dtype::WeightFormat;
use crate::types::options::Engine;
use crate::units::{GIB, MIB, human};
use serde::{Deserialize, Serialize};

/// ComfyUI's default `--reserve-vram` on Windows (600 MB; 400 MB on Linux), comfy/model_management.py.
pub const COMFY_RESERVE_WINDOWS: u64 = 600 * 1024 * 1024;
pub const COMFY_RESERVE_LINUX: u64 = 400 * 1024 * 1024;
/// ComfyUI `minimum_inference_memory()`: 0.8 GiB beyond the reserve.
pub const COMFY_MIN_INFERENCE: f64 = 0.8 * GIB;

/// ComfyUI's own estimate of a VAE decode, used to pick how many images it decodes at once:
/// 2178 × latent height × latent width × 64 × dtype size (comfy/sd.py `memory_used_decode`).
fn comfy_decode_estimate(w: &DiffusionWorkload, vae_fp32: bool) -> f64 {
    let latent = (f64::from(w.run.width) / 8.0) * (f64::from(w.run.height) / 8.0);
    2178.0 * latent * 64.0 * if vae_fp32 { 4.0 } else { 2.0 }
}

/// Reserved-minus-allocated growth per stage: the VAE decode allocates large tensors of many
/// shapes, and diffusers' Flux runs show reserved peaks ~4.5 GiB over the loaded weights for a
/// 2.5 GiB decode (diffusers quantization blog, every backend) — about 1.7× [derived];
/// the transformer stages reuse same-sized blocks.
const FRAGMENTATION: [f64; 3] = [0.1, 0.1, 0.7];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Encode,
    Denoise,
    Decode,
}

impl Stage {
    pub const ALL: [Stage; 3] = [Stage::Encode, Stage::Denoise, Stage::Decode];
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
    /// ComfyUI would log "loaded partially".
    pub partially_loaded: bool,
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

/// Weights and activations of every part, before placement.
struct Sizes {
    te: Vec<f64>,
    denoiser: f64,
    adapters: f64,
    vae: f64,
    vae_fp32: bool,
    act: [f64; 3],
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

/// The VAE's working dtype. ComfyUI: bf16 where the GPU has it, else fp32 (`working_dtypes =
/// [bfloat16, float32]`, comfy/sd.py). diffusers: the pipeline dtype, except that SDXL-family
/// pipelines upcast an fp16 VAE to fp32 (`force_upcast`, `upcast_vae`).
fn vae_in_fp32(w: &DiffusionWorkload) -> bool {
    match w.run.engine {
        Engine::Diffusers => {
            w.run.weights == WeightFormat::Fp32
                || (w.run.weights == WeightFormat::Fp16
                    && w.model.vae_force_upcast
                    && !w.run.tiny_vae)
        }
        _ => !w.gpu.bf16 && !w.run.tiny_vae,
    }
}

fn stage_uses(
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
    let comfy = r.engine != Engine::Diffusers;
    // What torch reports free once the CUDA context exists (ComfyUI `get_free_memory`).
    let free = capacity
        - overhead::TORCH_CONTEXT_BYTES
        - r.other_processes_bytes as f64
        - if comfy {
            r.reserve_vram_bytes as f64
        } else {
            0.0
        };
    // How many images the VAE decodes at once.
    let probe = sizes(w, 1.0);
    let batch = f64::from(r.batch);
    let decode_images = if r.vae_tiling || r.vae_slicing {
        1.0
    } else if comfy {
        // ComfyUI splits the batch so that its decode estimate fits in free memory.
        let est = comfy_decode_estimate(w, probe.vae_fp32);
        ((free - probe.vae) / est).floor().clamp(1.0, batch)
    } else {
        batch
    };
    let mut s = sizes(w, decode_images);
    let te_max = s.te.iter().cloned().fold(0.0, f64::max);
    let all_weights = s.te.iter().sum::<f64>() + s.denoiser + s.adapters + s.vae;
    let mut streamed = 0.0;
    let mut partially_loaded = false;
    let stages = if comfy {
        let te_on_gpu = match r.vram_mode {
            VramMode::GpuOnly => true,
            VramMode::Low | VramMode::No => false,
            _ => !r.text_encoder_on_cpu,
        };
        let te_total: f64 = if te_on_gpu { s.te.iter().sum() } else { 0.0 };
        // ComfyUI runs cond and uncond as one batch only when that fits (comfy/samplers.py
        // `calc_cond_batch` checks free memory); otherwise one after the other.
        if r.cfg && s.denoiser + s.adapters + s.act[1] + COMFY_MIN_INFERENCE > free {
            s.act[1] /= 2.0;
        }
        let act_max = s.act.iter().cloned().fold(0.0, f64::max);
        let everything = te_total + s.denoiser + s.adapters + s.vae + act_max + COMFY_MIN_INFERENCE;
        let keep_all = matches!(r.vram_mode, VramMode::High | VramMode::GpuOnly)
            || (r.vram_mode == VramMode::Normal && everything <= free);
        let room = free - s.act[1] - s.adapters - COMFY_MIN_INFERENCE;
        let on_gpu = if r.vram_mode == VramMode::No {
            0.0
        } else if keep_all || s.denoiser <= room {
            s.denoiser
        } else {
            room.max(0.0)
        };
        if on_gpu < s.denoiser {
            streamed = s.denoiser - on_gpu;
            partially_loaded = r.vram_mode != VramMode::No;
        }
        let mut st = stage_uses(&s, te_on_gpu, keep_all, on_gpu);
        // Text encoders are model patchers too: loaded partially when they do not fit.
        let te_room = (free - s.act[0] - COMFY_MIN_INFERENCE).max(0.0);
        if !keep_all && st[0].text_encoders > te_room {
            st[0].text_encoders = te_room;
            partially_loaded = true;
        }
        st
    } else {
        let te_on_gpu = !r.text_encoder_on_cpu;
        match r.cpu_offload {
            CpuOffload::None => stage_uses(&s, te_on_gpu, true, s.denoiser),
            CpuOffload::Model => {
                let mut st = stage_uses(&s, te_on_gpu, false, s.denoiser);
                // One text encoder on the GPU at a time.
                st[0].text_encoders = if te_on_gpu { te_max } else { 0.0 };
                st
            }
            CpuOffload::Sequential => {
                // One submodule's weights at a time: about 1% of the largest model.
                streamed = s.denoiser;
                let layer = 0.01 * s.denoiser.max(te_max);
                [0, 1, 2].map(|i| StageUse {
                    denoiser: layer,
                    activations: s.act[i],
                    ..Default::default()
                })
            }
        }
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
        "weights",
        "Diffusion model weights",
        at.denoiser,
        Layer::Tensor,
    );
    b.add(
        "text_encoders",
        "Text encoders",
        at.text_encoders,
        Layer::Tensor,
    );
    b.add("vae_weights", "VAE weights", at.vae, Layer::Tensor);
    b.add(
        "adapters",
        "LoRA / ControlNet / IP-Adapter",
        at.adapters,
        Layer::Tensor,
    );
    let (id, label) = match p.peak {
        Stage::Encode => ("activations", "Prompt encoding"),
        Stage::Denoise => ("activations", "Denoising activations"),
        Stage::Decode => ("vae_decode", "VAE decode"),
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
    let hard = 0.01 * at.weights() + 0.05 * at.activations;
    let comfy_reserve = if w.run.engine == Engine::Diffusers {
        0
    } else {
        w.run.reserve_vram_bytes
    };
    let external = (w.run.other_processes_bytes + comfy_reserve) as f64;
    let spare = w.gpu.vram_bytes as f64
        - external
        - overhead::TORCH_CONTEXT_BYTES
        - b.peak.tensors_bytes as f64;
    b.add(
        "allocator_overhead",
        "Allocator cache",
        hard.max(soft.min(spare)),
        Layer::Allocator,
    );
    b.add(
        "cuda_context",
        "CUDA context",
        overhead::TORCH_CONTEXT_BYTES,
        Layer::Process,
    );
    let r = &w.run;
    if r.engine != Engine::Diffusers {
        b.add(
            "reserved_vram",
            "Kept free by ComfyUI (--reserve-vram)",
            r.reserve_vram_bytes as f64,
            Layer::External,
        );
    }
    b.add(
        "other_processes",
        "Other programs on the GPU",
        r.other_processes_bytes as f64,
        Layer::External,
    );
    if p.partially_loaded && p.streamed_bytes <= 0.0 {
        // Only the text encoders did not fit next to the encode (`place`).
        b.warn("ComfyUI will load the text encoders partially ('loaded partially'): part of their weights is read from system RAM while the prompt is encoded — it runs, but the encode is slow");
    } else if p.partially_loaded {
        // The streamed weights are the denoiser's, whatever stage peaks: its whole size is what
        // the denoising stage holds plus what it streams (not the peak stage's share, which is
        // nothing when the decode peaks after the denoiser was unloaded).
        let denoiser = p.stages[Stage::Denoise as usize].denoiser + p.streamed_bytes;
        b.warn(format!(
            "ComfyUI will load the model partially ('loaded partially'): {} of {} streamed from system RAM every step — it runs, but slowly",
            human(p.streamed_bytes as u64),
            human(denoiser as u64)
        ));
    }
    if r.engine == Engine::Diffusers && r.cpu_offload == CpuOffload::Sequential {
        b.warn("sequential CPU offload streams every layer's weights each step: lowest memory, several times slower");
    }
    if p.vae_fp32 && r.engine == Engine::Diffusers && r.weights == WeightFormat::Fp16 {
        b.warn("diffusers upcasts this VAE to fp32 for decoding (force_upcast); an fp16-fix VAE avoids it");
    }
    if r.engine != Engine::Diffusers && !r.vae_tiling && p.peak == Stage::Decode && !b.fits() {
        b.warn("ComfyUI retries an out-of-memory VAE decode with tiled decoding ('retrying with tiled VAE decoding'): slower, but it completes");
    }
    if r.attention == crate::types::options::Attention::Eager
        && p.stages[1].activations > 0.5 * w.gpu.vram_bytes as f64
    {
        b.warn("naive attention stores the full score matrix; SDPA/xformers attention removes it");
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::diffusion::{Bus, DiffusionWorkload};
    use crate::types::workload::GpuTarget;

    fn gpu(gib: f64) -> GpuTarget {
        GpuTarget::with_capacity(crate::units::gib_to_bytes(gib), 1)
    }

    fn wl(model: &str, gib: f64, engine: Engine) -> DiffusionWorkload {
        let mut w = DiffusionWorkload::for_preset(gpu(gib), Bus::default(), model).unwrap();
        w.run.engine = engine;
        w
    }

    #[test]
    fn diffusers_keeps_everything_and_peaks_at_the_decode() {
        let w = wl("sdxl", 80.0, Engine::Diffusers);
        let b = estimate(&w);
        // bf16 weights 3.4688 B params × 2 = 6.46 GiB + 2.5 GiB decode (reference row gt083: 8.961).
        let t = b.peak.tensors_bytes as f64 / GIB;
        assert!((t - 8.96).abs() < 0.05, "{t}");
        assert!(b.get("vae_decode") > 0 && b.get("activations") == 0);
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
        let w = wl("flux-dev", 12.0, Engine::ComfyUi);
        let p = place(&w);
        assert!(
            p.partially_loaded,
            "Flux bf16 (22 GiB) cannot sit whole on 12 GiB"
        );
        let b = estimate(&w);
        assert!(b.fits(), "partially loaded still runs: {:?}", b.components);
        assert!(b.warnings.iter().any(|m| m.contains("loaded partially")));
        // On a 48 GiB card everything stays loaded.
        let p = place(&wl("flux-dev", 48.0, Engine::ComfyUi));
        assert!(!p.partially_loaded && p.stages[1].text_encoders > 0.0);
    }

    /// The partial-load note names the denoiser's whole size even when the VAE decode (after
    /// the denoiser was unloaded) is the peak stage: SDXL 1536² batch 2 on an 8 GiB card.
    #[test]
    fn the_streamed_share_is_of_the_whole_denoiser_whatever_stage_peaks() {
        let mut w = wl("sdxl", 8.0, Engine::ComfyUi);
        (w.run.width, w.run.height, w.run.batch) = (1536, 1536, 2);
        let p = place(&w);
        assert_eq!(p.peak, Stage::Decode);
        assert!(p.streamed_bytes > 0.0);
        let whole = denoiser_bytes(&w.model, w.run.weights, w.run.engine);
        let b = estimate(&w);
        let note = b
            .warnings
            .iter()
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
        let mut w = wl("sdxl", 8.0, Engine::ComfyUi);
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
        let mut w = wl("sd15", 8.0, Engine::ComfyUi);
        w.run.other_processes_bytes = 1 << 30;
        let b = estimate(&w);
        assert_eq!(b.get("reserved_vram"), COMFY_RESERVE_WINDOWS);
        assert_eq!(
            b.required_bytes(),
            b.peak.process_bytes + COMFY_RESERVE_WINDOWS + (1 << 30)
        );
    }
}
