//! Diffusion speed: seconds per denoising step and per image.
//!
//! A step is compute-bound: the denoiser's FLOPs at the run's size (`presets/diffusion.toml`
//! `denoise_gflops`, `attention_gflops`, counted by `tools/diffusion_flops.py` from each
//! release's config: the part in self-attention grows with the square of the image tokens, the
//! rest linearly), times the samples of the step (the batch, doubled by classifier-free
//! guidance), over the card's dense 16-bit tensor rate at [`DENOISE_EFFICIENCY`]. Weights that
//! do not stay on the GPU (ComfyUI's partial load, `--novram`, diffusers' sequential offload;
//! `memory::diffusion::residency::place`) are copied over PCIe every step and add their copy
//! time. An image adds its VAE decode (the decoder's FLOPs per megapixel at the same
//! efficiency) and, with diffusers' model offload, one load of every model per call.
//! Text encoding is left out: it runs once per prompt and ComfyUI caches its result.

use super::Speed;
use crate::memory::diffusion::residency::place;
use crate::memory::diffusion::{CpuOffload, DiffusionWorkload, ModelKind};
use crate::types::dtype::WeightFormat;

/// Share of the card's dense fp16/bf16 tensor rate (fp32 accumulate, `fp16_tflops` of
/// `presets/gpus.toml`) a PyTorch denoiser step reaches: the median of what the in-sample rows
/// of `tests/data/speed-diffusion.jsonl` imply (RTX 3060 and 4060 Ti running SDXL in ComfyUI,
/// 73% and 63%; RTX 4090 running Flux-dev, 77%). The held-out RTX 6000 Ada rows come out
/// within 3-12% once that card's preset carries its fp32-accumulate rate (182.1, the L40
/// datasheet's for the same AD102 configuration) rather than 364.2, which assumed full-rate
/// fp32 accumulation (`presets/gpus.toml`).
pub const DENOISE_EFFICIENCY: f64 = 0.73;

/// Slowdown of a step whose weights are stored quantized and dequantized for every matmul (the
/// matmuls run in 16-bit): city96/ComfyUI-GGUF's README notes GGUF runs slower than fp8, about
/// 10% at 6-8 bits and 20% below in its users' reports; bitsandbytes NF4 likewise; the
/// diffusers quantization blog measured bitsandbytes 8-bit Flux at 27 s against 12 s in bf16
/// (LLM.int8's outlier decomposition). fp8 weights are cast to 16-bit per layer, a cost only on
/// cards without fp8 units (5%) [derived].
pub fn dequant_slowdown(weights: WeightFormat, fp8_card: bool) -> f64 {
    match weights {
        WeightFormat::Int8 => 27.0 / 12.0,
        WeightFormat::Fp8 if !fp8_card => 1.05,
        f if f.is_gguf() && f.quality_loss() <= 1 => 1.1,
        f if f.is_gguf() || f == WeightFormat::Nf4 => 1.2,
        _ => 1.0,
    }
}

/// Slowdown of a tiled VAE decode over a whole one: the tiles' overlaps are decoded twice
/// (ComfyUI `VAEDecodeTiled`: 64 px overlap on 512 px tiles, about 5% more pixels) [derived].
pub const TILED_DECODE_SLOWDOWN: f64 = 1.05;

/// The time of one run, in parts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Compute of one step (all samples of the batch), seconds.
    pub compute_s: f64,
    /// Weights copied over PCIe in one step, seconds.
    pub stream_s: f64,
    /// VAE decode of the whole batch, seconds.
    pub decode_s: f64,
    /// Weights loaded once per call (diffusers model offload), seconds.
    pub load_s: f64,
}

impl Timing {
    pub fn step_s(&self) -> f64 {
        self.compute_s + self.stream_s
    }
}

/// Latent frames of the model's native video (1 for images).
fn native_latent_frames(w: &DiffusionWorkload) -> f64 {
    let t = w.vae.temporal_compression;
    if w.model.kind == ModelKind::Video && t > 0 {
        f64::from((w.model.native_frames.max(1) - 1) / t + 1)
    } else {
        1.0
    }
}

/// FLOPs of one step for the whole batch, or why they are not known.
pub fn step_flops(w: &DiffusionWorkload) -> Result<f64, String> {
    let m = &w.model;
    if m.denoise_gflops <= 0.0 {
        return Err(format!(
            "no FLOPs figure for {} (presets/diffusion.toml denoise_gflops)",
            m.id
        ));
    }
    let native = f64::from(m.native_width) * f64::from(m.native_height) * native_latent_frames(w);
    let s = f64::from(w.run.width) * f64::from(w.run.height) * w.latent_frames() / native;
    let attention = m.attention_gflops.clamp(0.0, m.denoise_gflops);
    let per_sample = ((m.denoise_gflops - attention) * s + attention * s * s) * 1e9;
    Ok(per_sample * samples(w) * controlnet_factor(w))
}

/// Samples one step computes: the batch, doubled by classifier-free guidance.
fn samples(w: &DiffusionWorkload) -> f64 {
    f64::from(w.run.batch) * if w.run.cfg { 2.0 } else { 1.0 }
}

/// A ControlNet is a copy of the denoiser's encoder run at the same size beside it: its FLOPs
/// in proportion to its parameters [derived].
fn controlnet_factor(w: &DiffusionWorkload) -> f64 {
    1.0 + f64::from(w.run.controlnets) * w.model.controlnet_params / w.model.params.max(1.0)
}

/// FLOPs of a step when the preset has no count, for ranking plans only: 2 per parameter per
/// attention token (a UNet's parameters sit mostly at its 4x-downsampled levels, so a quarter
/// of its tokens) [derived].
fn step_flops_from_params(w: &DiffusionWorkload) -> f64 {
    let d = f64::from(w.model.attn_div);
    let mut tokens = (f64::from(w.run.width) / d).ceil()
        * (f64::from(w.run.height) / d).ceil()
        * w.latent_frames();
    if w.model.kind == ModelKind::Unet {
        tokens /= 4.0;
    }
    2.0 * w.model.params
        * (tokens + f64::from(w.model.joint_text_tokens))
        * samples(w)
        * controlnet_factor(w)
}

/// Tensor FLOPs per byte of memory bandwidth of recent cards, for ranking plans on a card whose
/// preset has no FLOPs figure: H100 990 dense bf16 TFLOPS at 3.35 TB/s, RTX 3060 25.6 at 360
/// GB/s; 100 is between them [derived].
const FLOPS_PER_BYTE: f64 = 100.0;

/// The card's 16-bit rate at [`DENOISE_EFFICIENCY`], FLOPs per second, or why it is not known.
/// A denoiser multiplies in 16-bit whatever its weights are stored in: ComfyUI casts fp8,
/// GGUF and NF4 weights to the compute dtype per layer (comfy/ops.py `cast_bias_weight`; fp8
/// matmuls, `fp8_linear`, only with `--fast fp8_matrix_mult`, which is not modelled), and the
/// BFL reference code's "fp8 without quant" rows do the same.
fn rate(w: &DiffusionWorkload) -> Result<f64, String> {
    if w.run.weights == WeightFormat::Fp32 {
        return Err("fp32 compute: the card's preset has a 16-bit rate only".into());
    }
    w.gpu
        .speed
        .tensor
        .fp16_tflops
        .map(|t| t * 1e12 * DENOISE_EFFICIENCY)
        .ok_or_else(|| "the card's preset has no fp16_tflops".into())
}

/// The run's timing, or why it cannot be given.
pub fn timing(w: &DiffusionWorkload) -> Result<Timing, String> {
    Ok(timing_with(w, step_flops(w)?, rate(w)?))
}

/// The run's timing for comparing plans: the figures of [`timing`] where the presets have them,
/// estimates from the parameters and the bandwidth where not (fp32 at half the 16-bit rate).
pub fn timing_for_ranking(w: &DiffusionWorkload) -> Timing {
    let flops = step_flops(w).unwrap_or_else(|_| step_flops_from_params(w));
    let rate = rate(w).unwrap_or_else(|_| {
        let r = w
            .gpu
            .speed
            .tensor
            .fp16_tflops
            .map_or(w.bus.bandwidth_gbs.max(1.0) * 1e9 * FLOPS_PER_BYTE, |t| {
                t * 1e12
            })
            * DENOISE_EFFICIENCY;
        if w.run.weights == WeightFormat::Fp32 {
            r / 2.0
        } else {
            r
        }
    });
    timing_with(w, flops, rate)
}

fn timing_with(w: &DiffusionWorkload, flops: f64, rate: f64) -> Timing {
    let p = place(w);
    let pcie = w.bus.pcie_gbs.max(0.1) * 1e9;
    let r = &w.run;
    let decode_s = if !r.vae_decode || r.tiny_vae {
        0.0
    } else {
        let pixels = w.mpx() * f64::from(r.frames.max(1)) * f64::from(r.batch);
        // An fp32 VAE runs at half the 16-bit rate [derived: GeForce Ampere/Ada fp32 rates are
        // half their fp16 tensor rate with fp32 accumulate, e.g. RTX 4090 82.6 vs 165.2].
        let vae_rate = if p.vae_fp32 { rate / 2.0 } else { rate };
        let tiled = if r.vae_tiling {
            TILED_DECODE_SLOWDOWN
        } else {
            1.0
        };
        w.vae.decode_gflops_per_mpx * 1e9 * pixels / vae_rate * tiled
    };
    let load_s = if r.cpu_offload == CpuOffload::Model {
        p.all_weights / pcie
    } else {
        0.0
    };
    Timing {
        compute_s: flops / rate * dequant_slowdown(r.weights, w.gpu.fp8),
        stream_s: p.streamed_bytes / pcie,
        decode_s,
        load_s,
    }
}

/// Seconds per image of a run: its steps, decode and loads over the images of the batch.
pub fn seconds_per_image(t: &Timing, w: &DiffusionWorkload) -> f64 {
    (f64::from(w.run.steps) * t.step_s() + t.decode_s + t.load_s) / f64::from(w.run.batch.max(1))
}

/// DESIGN.md `speed` of a diffusion run.
pub fn speed(w: &DiffusionWorkload) -> Speed {
    let t = match timing(w) {
        Ok(t) => t,
        Err(why) => {
            return Speed {
                basis: format!("diffusion speed unknown: {why}"),
                ..Default::default()
            };
        }
    };
    let mut basis = format!(
        "{:.1} TFLOPs per step ({} sample{} at {}x{}) at {:.0}% of {:.0} fp16 TFLOPS",
        step_flops(w).unwrap_or(0.0) / 1e12,
        w.run.batch * if w.run.cfg { 2 } else { 1 },
        if w.run.batch > 1 || w.run.cfg {
            "s"
        } else {
            ""
        },
        w.run.width,
        w.run.height,
        100.0 * DENOISE_EFFICIENCY,
        w.gpu.speed.tensor.fp16_tflops.unwrap_or(0.0),
    );
    if t.stream_s > 0.0 {
        basis.push_str(&format!(
            " + {:.2} s copying {} of streamed weights over PCIe ({:.0} GB/s) each step",
            t.stream_s,
            crate::units::human(place(w).streamed_bytes as u64),
            w.bus.pcie_gbs
        ));
    }
    basis.push_str(&format!(
        "; {} steps + {:.2} s VAE decode{}",
        w.run.steps,
        t.decode_s,
        if t.load_s > 0.0 {
            format!(" + {:.1} s loading the offloaded models", t.load_s)
        } else {
            String::new()
        }
    ));
    Speed {
        seconds_per_step: Some(t.step_s()),
        seconds_per_image: Some(seconds_per_image(&t, w)),
        basis,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::diffusion::Bus;
    use crate::types::workload::{GpuSpeed, GpuTarget};

    fn wl(model: &str, gpu_gib: f64, tflops: f64) -> DiffusionWorkload {
        let mut g = GpuTarget::with_capacity(crate::units::gib_to_bytes(gpu_gib), 1);
        g.bf16 = true;
        g.fp8 = true;
        g.speed = GpuSpeed {
            bandwidth_gbs: 1000.0,
            pcie_gbs: 16.0,
            tensor: crate::types::gpu::TensorRates {
                fp16_tflops: Some(tflops),
                ..Default::default()
            },
        };
        crate::resolve::diffusion::for_preset(g, Bus::default(), model).unwrap()
    }

    #[test]
    fn a_step_scales_with_tokens_and_their_square() {
        let w = wl("flux-dev", 80.0, 100.0);
        let one = step_flops(&w).unwrap();
        let mut big = w.clone();
        big.run.width *= 2;
        big.run.height *= 2;
        let four = step_flops(&big).unwrap();
        // 4x the tokens: at least 4x the linear part, at most 16x the whole.
        assert!(four > 4.0 * one && four < 16.0 * one, "{one} -> {four}");
        // Guidance doubles the samples.
        let mut cfg = w.clone();
        cfg.run.cfg = true;
        assert!((step_flops(&cfg).unwrap() / one - 2.0).abs() < 1e-9);
    }

    #[test]
    fn streaming_and_slow_cards_cost_time() {
        let fast = speed(&wl("sdxl", 80.0, 165.0));
        let slow = speed(&wl("sdxl", 80.0, 25.6));
        let (f, s) = (
            fast.seconds_per_step.unwrap(),
            slow.seconds_per_step.unwrap(),
        );
        assert!((s / f - 165.0 / 25.6).abs() < 1e-6, "{f} {s}");
        // Flux on a 12 GB card streams part of its weights every step.
        let small = wl("flux-dev", 12.0, 165.0);
        let t = timing(&small).unwrap();
        assert!(t.stream_s > 0.1, "{t:?}");
        let image = speed(&small).seconds_per_image.unwrap();
        assert!(image > 20.0 * t.step_s(), "{image} vs {t:?}");
    }

    #[test]
    fn unknown_inputs_give_no_figure() {
        let mut w = wl("sdxl", 24.0, 100.0);
        w.gpu.speed.tensor.fp16_tflops = None;
        let s = speed(&w);
        assert!(s.seconds_per_step.is_none() && s.basis.contains("fp16_tflops"));
        let mut w = wl("sdxl", 24.0, 100.0);
        w.run.weights = WeightFormat::Fp32;
        assert!(speed(&w).seconds_per_image.is_none());
    }
}
