//! Where diffusers puts a pipeline's weights, stage by stage (the engine's branch of
//! `memory::diffusion::residency::place`): every component on the GPU (`pipe.to("cuda")`)
//! unless `enable_model_cpu_offload` (one whole model at a time) or
//! `enable_sequential_cpu_offload` (one submodule at a time); the VAE's dtype; and the notes it
//! adds to the breakdown.

use crate::memory::breakdown::Breakdown;
use crate::memory::diffusion::residency::{Placement, Sizes, StageUse, stage_uses};
use crate::memory::diffusion::{CpuOffload, DiffusionRun, DiffusionWorkload};
use crate::types::dtype::WeightFormat;
use crate::types::message::Message;

/// The VAE's working dtype: the pipeline dtype, except that SDXL-family pipelines upcast an fp16
/// VAE to fp32 (`force_upcast`, `upcast_vae`).
pub fn vae_in_fp32(w: &DiffusionWorkload) -> bool {
    w.run.weights == WeightFormat::Fp32
        || (w.run.weights == WeightFormat::Fp16 && w.model.vae_force_upcast && !w.run.tiny_vae)
}

/// The stages as diffusers holds them, and the denoiser bytes streamed (sequential offload).
pub fn place(s: &Sizes, r: &DiffusionRun) -> ([StageUse; 3], f64) {
    let te_on_gpu = !r.text_encoder_on_cpu;
    let te_max = s.te.iter().cloned().fold(0.0, f64::max);
    match r.cpu_offload {
        CpuOffload::None => (stage_uses(s, te_on_gpu, true, s.denoiser), 0.0),
        CpuOffload::Model => {
            let mut st = stage_uses(s, te_on_gpu, false, s.denoiser);
            // One text encoder on the GPU at a time.
            st[0].text_encoders = if te_on_gpu { te_max } else { 0.0 };
            (st, 0.0)
        }
        CpuOffload::Sequential => {
            // One submodule's weights at a time: about 1% of the largest model.
            let layer = 0.01 * s.denoiser.max(te_max);
            let st = [0, 1, 2].map(|i| StageUse {
                denoiser: layer,
                activations: s.act[i],
                ..Default::default()
            });
            (st, s.denoiser)
        }
    }
}

/// What diffusers does with the placement, as notes on the breakdown: sequential offload's
/// slowness, and the fp16 VAE it upcasts to fp32.
pub fn warnings(b: &mut Breakdown, p: &Placement, r: &DiffusionRun) {
    if r.cpu_offload == CpuOffload::Sequential {
        b.warn(Message::new("warn.diffusers.sequential_offload"));
    }
    if p.vae_fp32 && r.weights == WeightFormat::Fp16 {
        b.warn(Message::new("warn.diffusers.vae_upcast"));
    }
}
