//! Activation memory of each pipeline stage: the denoiser's latents and attention, and the VAE
//! decode with and without tiling. Weights are not counted here (see `residency`).

use super::{DiffusionWorkload, ModelKind};
use crate::types::options::Attention;
use crate::units::GIB;

/// Side of one VAE tile: ComfyUI's "VAE Decode (Tiled)" default tile_size 512 (nodes.py
/// `VAEDecodeTiled.INPUT_TYPES`) and diffusers' `tile_sample_min_size` for SD-size VAEs are both
/// 512 pixels.
pub const DEFAULT_TILE_PX: u32 = 512;

/// Pixels of one tile of a tiled decode, in units of 2^20: ComfyUI decodes tiles of
/// `tile_size // compression` latent pixels a side (nodes.py `VAEDecodeTiled.decode`), so
/// `tile_size`² output pixels at a time.
pub fn tile_mpx(w: &DiffusionWorkload) -> f64 {
    f64::from(w.run.vae_tile).powi(2) / f64::from(1u32 << 20)
}

/// TAESD decodes with 64 channels at full resolution against the full VAE's 128–512, so its
/// peak per pixel is taken as a quarter of the full VAE's 16-bit figure [derived from widths].
pub const TINY_VAE_SHARE: f64 = 0.25;

/// Samples the denoiser processes at once: images × 2 with classifier-free guidance.
pub fn samples(w: &DiffusionWorkload) -> f64 {
    f64::from(w.run.batch) * if w.run.cfg { 2.0 } else { 1.0 }
}

/// Attention tokens at the model's highest-resolution attention, including joint text tokens.
pub fn attention_tokens(w: &DiffusionWorkload) -> f64 {
    let d = f64::from(w.model.attn_div);
    let side = |px: u32| (f64::from(px) / d).ceil();
    side(w.run.width) * side(w.run.height) * w.latent_frames()
        + f64::from(w.model.joint_text_tokens)
}

/// The denoising stage's activation peak.
///
/// With SDPA/flash/xformers attention the activations grow linearly with pixels: the preset's
/// per-sample, per-megapixel figure. Naive ("eager") attention materialises the score matrix
/// and its softmax, 2 × heads × n² elements per sample (diffusers `Attention.get_attention_scores`:
/// baddbmm output, then softmax), while about a tenth of the linear activations is live.
/// Checked on SD1.5 fp32 without SDPA: 2 × 2 × 8 × 4096² × 4 B = 2.0 GiB (reference row gt086,
/// 2.14 GiB over the weights).
pub fn denoise_bytes(w: &DiffusionWorkload) -> f64 {
    let ab = w.act_bytes();
    let s = samples(w);
    let linear = s * w.mpx() * w.latent_frames() * w.model.act_gib_per_mpx * GIB * ab / 2.0;
    let naive = if w.run.attention == Attention::Eager {
        let n = attention_tokens(w);
        s * f64::from(w.model.attn_heads) * n * n * ab * 2.0
    } else {
        0.0
    };
    // A ControlNet is a trainable copy of the encoder half of the denoiser (Zhang et al. 2023,
    // arXiv 2302.05543) and runs alongside it: about half the activations again.
    let control = f64::from(w.run.controlnets) * 0.5 * linear;
    linear.max(naive + 0.1 * linear) + control
}

/// Bytes per decoded 2^20 pixels in the VAE's working dtype.
fn vae_gib_per_mpx(w: &DiffusionWorkload, vae_fp32: bool) -> f64 {
    if w.run.tiny_vae {
        TINY_VAE_SHARE * w.vae.gib_per_mpx_16bit
    } else if vae_fp32 {
        w.vae.gib_per_mpx_fp32
    } else {
        w.vae.gib_per_mpx_16bit
    }
}

/// Peak of decoding `images` images (or videos) at once, `vae_fp32` telling the VAE's dtype.
///
/// Untiled, the decode peak grows with pixels (reference rows gt082/gt083/gt087 give 3.90 GiB
/// fp32 and 2.50 GiB 16-bit per 1024² image). Tiled, only one tile is in flight, plus the
/// output being assembled (3 channels fp32). A video VAE decodes `chunk_frames` frames at a
/// time with a causal cache, and holds the whole output video.
pub fn decode_bytes(w: &DiffusionWorkload, images: f64, vae_fp32: bool) -> f64 {
    if !w.run.vae_decode {
        return 0.0;
    }
    let per_mpx = vae_gib_per_mpx(w, vae_fp32) * GIB;
    let mpx = w.mpx();
    let frames = if w.model.kind == ModelKind::Video {
        f64::from(w.run.frames.max(1))
    } else {
        1.0
    };
    let output = images * frames * mpx * f64::from(1u32 << 20) * 3.0 * 4.0;
    let work_mpx = if w.run.vae_tiling {
        mpx.min(tile_mpx(w))
    } else {
        mpx
    };
    if w.model.kind == ModelKind::Video || w.run.vae_tiling {
        per_mpx * work_mpx + output
    } else {
        images * per_mpx * work_mpx
    }
}

/// The prompt-encoding stage: one forward over ≤512 tokens, a few MiB per encoder layer;
/// counted as the final hidden states of cond + uncond prompts in fp32.
pub fn encode_bytes(w: &DiffusionWorkload) -> f64 {
    w.text_encoders
        .iter()
        .map(|t| f64::from(t.tokens) * 4096.0 * 4.0 * 2.0 * f64::from(w.run.batch))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::diffusion::{Bus, DiffusionWorkload};
    use crate::types::dtype::WeightFormat;
    use crate::types::workload::GpuTarget;

    pub(crate) fn gpu(gib: f64) -> GpuTarget {
        GpuTarget::with_capacity(crate::units::gib_to_bytes(gib), 1)
    }

    fn wl(model: &str) -> DiffusionWorkload {
        crate::resolve::diffusion::for_preset(gpu(80.0), Bus::default(), model).unwrap()
    }

    #[test]
    fn naive_attention_is_the_score_matrix_and_its_softmax() {
        let mut w = wl("sd15");
        w.run.weights = WeightFormat::Fp32;
        w.run.attention = Attention::Eager;
        // 512² → 64×64 = 4096 tokens, 8 heads, batch 1 × CFG 2, fp32: 2 × 8 × 4096² × 4 × 2.
        let naive = 2.0 * 8.0 * 4096.0f64.powi(2) * 4.0 * 2.0;
        let linear = 2.0 * 0.25 * 0.95 * GIB * 2.0;
        assert_eq!(attention_tokens(&w), 4096.0);
        assert!((denoise_bytes(&w) - (naive + 0.1 * linear)).abs() < 1.0);
        w.run.attention = Attention::Sdpa;
        assert!((denoise_bytes(&w) - linear).abs() < 1.0);
    }

    #[test]
    fn vae_decode_scales_with_pixels_and_tiling_caps_it() {
        let mut w = wl("sdxl");
        // 1024² in fp32: 3.90 GiB per image; 4 images at once: 15.6 GiB.
        assert!((decode_bytes(&w, 4.0, true) / GIB - 15.6).abs() < 1e-9);
        assert!((decode_bytes(&w, 1.0, false) / GIB - 2.5).abs() < 1e-9);
        w.run.width = 2048;
        w.run.height = 2048;
        let untiled = decode_bytes(&w, 1.0, false);
        w.run.vae_tiling = true;
        let tiled = decode_bytes(&w, 1.0, false);
        // One 512² tile (0.25 × 2.5 GiB) + the 4 Mpx fp32 RGB output (48 MiB).
        assert!((tiled - (0.25 * 2.5 * GIB + 4.0 * 1048576.0 * 12.0)).abs() < 1.0);
        assert!(tiled < untiled / 10.0);
        // The tile is the node's tile_size: 1024² tiles hold four times the 512² working set.
        w.run.vae_tile = 1024;
        let big = decode_bytes(&w, 1.0, false);
        assert!(
            (big - (2.5 * GIB + 4.0 * 1048576.0 * 12.0)).abs() < 1.0,
            "{big}"
        );
        w.run.vae_decode = false;
        assert_eq!(decode_bytes(&w, 1.0, false), 0.0);
    }

    #[test]
    fn video_counts_latent_frames() {
        let mut w = wl("wan21-t2v-1.3b");
        assert_eq!(w.run.frames, 81);
        assert_eq!(w.latent_frames(), 21.0);
        w.run.frames = 1;
        assert_eq!(w.latent_frames(), 1.0);
        // The factor is the VAE's own (data), not a constant: an 8x VAE (LTX-Video, Cosmos)
        // makes 121 frames into 16 latent frames.
        w.vae.temporal_compression = 8;
        w.run.frames = 121;
        assert_eq!(w.latent_frames(), 16.0);
        let h = wl("hunyuan-video");
        assert_eq!((h.run.frames, h.latent_frames()), (129, 33.0));
    }
}
