//! Diffusion workloads (ComfyUI and diffusers): text encoders, the denoising model with its
//! add-ons, and the VAE, each with its weights and the activations of its stage, placed on the
//! GPU the way the engine does it (resident, offloaded after use, streamed, or loaded partially).
//!
//! The pipeline runs in three stages — encode the prompt, denoise the latents, decode the image —
//! so the activation peak is the largest stage's, on top of whichever weights the engine keeps
//! on the GPU during that stage.
//!
//! The engines' own rules (ComfyUI's memory modes and where each puts the weights) are in
//! `engines::comfyui::memory`; `residency::place` calls them.

pub mod catalog;
pub mod parts;
pub mod residency;
pub mod stages;

use crate::engines::comfyui::memory::{ComfyMemory, comfy_memory};
use crate::types::dtype::WeightFormat;
use crate::types::options::{Attention, Engine};
pub use crate::types::options::{CpuOffload, DynamicVram, Os, VramMode};
use crate::types::workload::GpuTarget;
pub use catalog::{DiffusionCatalog, DiffusionModel, ModelKind, Part, PartKind};
pub use residency::estimate;
use serde::{Deserialize, Serialize};

/// The knobs of a diffusion run, with defaults applied and ranges checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffusionRun {
    pub width: u32,
    pub height: u32,
    /// Images (or videos) per prompt.
    pub batch: u32,
    /// Output frames (1 for image models).
    pub frames: u32,
    /// Sampling steps (`speed::diffusion` seconds per image).
    pub steps: u32,
    /// Storage format of the denoising model.
    pub weights: WeightFormat,
    /// Storage format of each text encoder, in the model's order.
    pub text_encoder_weights: Vec<WeightFormat>,
    pub engine: Engine,
    pub attention: Attention,
    /// Classifier-free guidance: cond and uncond run as one doubled batch.
    pub cfg: bool,
    pub vae_tiling: bool,
    /// Side of one tile of a tiled decode, pixels (ComfyUI VAEDecodeTiled `tile_size`).
    pub vae_tile: u32,
    pub vae_slicing: bool,
    /// Decode the latents to pixels (false: the run returns latents, e.g. diffusers
    /// `output_type="latent"`).
    pub vae_decode: bool,
    /// Tiny autoencoder (TAESD) instead of the full VAE.
    pub tiny_vae: bool,
    pub vram_mode: VramMode,
    pub cpu_offload: CpuOffload,
    pub text_encoder_on_cpu: bool,
    pub loras: u32,
    pub lora_rank: u32,
    pub controlnets: u32,
    pub ip_adapter: bool,
    /// ComfyUI `--reserve-vram`; `None`: its default for the memory mode and OS
    /// (`engines::comfyui::memory::comfy_memory`).
    pub reserve_vram_bytes: Option<u64>,
    /// ComfyUI `--enable-dynamic-vram` / `--disable-dynamic-vram` / neither.
    pub dynamic_vram: DynamicVram,
    /// ComfyUI `--vram-headroom`.
    pub vram_headroom_bytes: u64,
    /// The PyTorch ComfyUI runs on, (major, minor); `None`: not known (assumed ≥ 2.8).
    pub torch: Option<(u32, u32)>,
    /// The OS ComfyUI runs on.
    pub os: Os,
    pub other_processes_bytes: u64,
}

impl Default for DiffusionRun {
    fn default() -> Self {
        DiffusionRun {
            width: 1024,
            height: 1024,
            batch: 1,
            frames: 1,
            // ComfyUI's KSampler default (nodes.py `KSampler.INPUT_TYPES`: steps 20).
            steps: 20,
            weights: WeightFormat::Bf16,
            text_encoder_weights: Vec::new(),
            engine: Engine::ComfyUi,
            attention: Attention::Sdpa,
            cfg: true,
            vae_tiling: false,
            vae_tile: stages::DEFAULT_TILE_PX,
            vae_slicing: false,
            vae_decode: true,
            tiny_vae: false,
            vram_mode: VramMode::Normal,
            cpu_offload: CpuOffload::None,
            text_encoder_on_cpu: false,
            loras: 0,
            lora_rank: 32,
            controlnets: 0,
            ip_adapter: false,
            reserve_vram_bytes: None,
            dynamic_vram: DynamicVram::Auto,
            vram_headroom_bytes: 0,
            torch: None,
            os: Os::Windows,
            other_processes_bytes: 0,
        }
    }
}

/// The GPU figures the diffusion planner needs beyond capacity: speed of its memory and of
/// the bus weights are streamed over.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bus {
    /// GPU memory bandwidth, GB/s (from the GPU preset).
    pub bandwidth_gbs: f64,
    /// Host-to-device bandwidth, GB/s.
    pub pcie_gbs: f64,
}

impl Default for Bus {
    /// A mid-range PCIe 4.0 x16 card when the preset is unknown.
    fn default() -> Self {
        Bus {
            bandwidth_gbs: 500.0,
            pcie_gbs: crate::types::gpu::pcie_gbs(4, 16),
        }
    }
}

/// A checked diffusion workload: the model, its parts, the card and the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffusionWorkload {
    pub gpu: GpuTarget,
    pub bus: Bus,
    pub model: DiffusionModel,
    pub text_encoders: Vec<Part>,
    pub vae: Part,
    pub run: DiffusionRun,
}

impl DiffusionWorkload {
    /// ComfyUI's memory behaviour for this run (`None` for diffusers, which has neither mode).
    pub fn comfy_memory(&self) -> Option<ComfyMemory> {
        (self.run.engine != Engine::Diffusers).then(|| comfy_memory(&self.run, &self.gpu))
    }

    /// Bytes per activation element: fp32 runs compute in fp32, everything else in 16-bit
    /// (quantized weights are dequantized to bf16/fp16 for the matmuls).
    pub fn act_bytes(&self) -> f64 {
        if self.run.weights == WeightFormat::Fp32 {
            4.0
        } else {
            2.0
        }
    }

    /// Output pixels of one image or frame, in units of 2^20 (a 1024×1024 image is 1.0).
    pub fn mpx(&self) -> f64 {
        f64::from(self.run.width) * f64::from(self.run.height) / f64::from(1u32 << 20)
    }

    /// Latent frames of a video: the VAE's temporal compression with the first frame kept
    /// (`(frames - 1) / t + 1`, ComfyUI comfy/sd.py `VAE.upscale_ratio` of each video VAE);
    /// 1 for images.
    pub fn latent_frames(&self) -> f64 {
        let t = self.vae.temporal_compression;
        if self.model.kind == ModelKind::Video && t > 0 {
            f64::from((self.run.frames.max(1) - 1) / t + 1)
        } else {
            1.0
        }
    }
}
