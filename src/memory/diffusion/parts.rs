//! Weight bytes of each pipeline part in each storage format.
//!
//! Quantizers for diffusion pipelines (bitsandbytes, optimum-quanto, torchao, fp8 checkpoints,
//! GGUF) replace the linear layers; embeddings, norms and (for bitsandbytes) convolutions stay
//! in 16-bit. transformers additionally keeps T5's `wo` projections in fp32 when a model is
//! loaded in fp16 or with bitsandbytes (`T5PreTrainedModel._keep_in_fp32_modules = ["wo"]`).
//! Checked against the diffusers quantization blog's "memory after loading" for Flux.1-dev:
//! bf16 31.447 GiB, bnb 4-bit 12.584 GiB, bnb 8-bit 19.273 GiB (see the tests).

use super::{DiffusionModel, Part};
use crate::types::dtype::WeightFormat;
use crate::types::options::Engine;

/// Storage bytes per quantized parameter, or `None` for formats diffusion tools do not use.
pub fn quantized_bytes_per_param(f: WeightFormat) -> Option<f64> {
    Some(match f {
        WeightFormat::Fp32 => 4.0,
        WeightFormat::Fp16 | WeightFormat::Bf16 => 2.0,
        // fp8 e4m3 with per-tensor scales (ComfyUI fp8 checkpoints, quanto qfloat8, diffusers
        // layerwise casting).
        WeightFormat::Fp8 => 1.0,
        // bitsandbytes LLM.int8: int8 codes + an fp32 scale per output row (negligible here).
        WeightFormat::Int8 => 1.0,
        // bitsandbytes 4-bit as diffusers configures it by default (no double quantization):
        // 4-bit codes + one fp32 absmax per 64 weights (bitsandbytes `quantize_4bit`).
        WeightFormat::Nf4 | WeightFormat::Fp4 => 0.5 + 4.0 / 64.0,
        // GGUF (city96 ComfyUI-GGUF, diffusers GGUFQuantizationConfig): the block type of the
        // file type's base quant, from ggml-common.h.
        WeightFormat::Gguf(t) => t.mix().base.bytes_per_weight(),
        WeightFormat::Gptq4
        | WeightFormat::Gptq8
        | WeightFormat::Awq4
        | WeightFormat::Mxfp4
        | WeightFormat::W4a16
        | WeightFormat::W8a8
        | WeightFormat::Nvfp4 => {
            return None;
        }
    })
}

/// The `run.weights` spellings diffusion runs accept (`WEIGHT_NAMES` less the LLM-only formats),
/// for pickers and help.
pub fn weight_names() -> Vec<&'static str> {
    crate::types::dtype::WEIGHT_NAMES
        .iter()
        .copied()
        .filter(|n| {
            n.parse::<WeightFormat>()
                .ok()
                .and_then(quantized_bytes_per_param)
                .is_some()
        })
        .collect()
}

/// Bytes of `params` parameters of which `unquantized` stay 16-bit and `keep_fp32` may be kept
/// in fp32, stored as `f` and loaded by `engine`.
pub fn weight_bytes(
    params: f64,
    unquantized: f64,
    keep_fp32: f64,
    f: WeightFormat,
    engine: Engine,
) -> f64 {
    let q = quantized_bytes_per_param(f).unwrap_or(2.0);
    // transformers' fp32 keep-list applies to models it loads (diffusers pipelines); ComfyUI
    // loads T5 with its own code and no such exception.
    let keep = if engine == Engine::Diffusers {
        keep_fp32
    } else {
        0.0
    };
    match f {
        WeightFormat::Fp32 => params * 4.0,
        WeightFormat::Bf16 => params * 2.0,
        WeightFormat::Fp16 => (params - keep) * 2.0 + keep * 4.0,
        WeightFormat::Int8 | WeightFormat::Nf4 | WeightFormat::Fp4 => {
            (params - unquantized - keep) * q + unquantized * 2.0 + keep * 4.0
        }
        _ => (params - unquantized) * q + unquantized * 2.0,
    }
}

/// The denoising model's weights.
pub fn denoiser_bytes(m: &DiffusionModel, f: WeightFormat, engine: Engine) -> f64 {
    weight_bytes(m.params, m.params * (1.0 - m.linear_share), 0.0, f, engine)
}

/// A text encoder's weights.
pub fn text_encoder_bytes(p: &Part, f: WeightFormat, engine: Engine) -> f64 {
    weight_bytes(
        p.params,
        p.unquantized_params,
        p.keep_fp32_params,
        f,
        engine,
    )
}

/// Tiny autoencoder (madebyollin/taesd, taesdxl): 2.4 M parameters ("just 10MB" for encoder
/// and decoder, SDXL optimization blog).
pub const TAESD_PARAMS: f64 = 2.45e6;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::diffusion::DiffusionCatalog;
    use crate::units::GIB;

    #[test]
    fn diffusion_weight_names_leave_out_llm_only_formats() {
        let names = weight_names();
        assert!(
            ["bf16", "fp8", "nf4", "q8_0", "q4_k_s"]
                .iter()
                .all(|n| names.contains(n))
        );
        assert!(!names.contains(&"awq-4bit") && !names.contains(&"gptq-4bit"));
    }

    fn flux_loaded(f: WeightFormat) -> f64 {
        let c = DiffusionCatalog::get();
        let m = c.model("flux-dev").unwrap();
        let t5 = c.part("t5-xxl").unwrap();
        let clip = c.part("clip-l").unwrap();
        let vae = c.part("sd3-vae").unwrap();
        let e = Engine::Diffusers;
        (denoiser_bytes(m, f, e)
            + text_encoder_bytes(t5, f, e)
            + clip.params * 2.0
            + vae.params * 2.0)
            / GIB
    }

    #[test]
    fn flux_memory_after_loading_matches_the_quantization_blog() {
        // diffusers "Exploring Quantization Backends" (H100, max_memory_reserved after loading).
        for (f, blog) in [
            (WeightFormat::Bf16, 31.447),
            (WeightFormat::Nf4, 12.584),
            (WeightFormat::Int8, 19.273),
        ] {
            let got = flux_loaded(f);
            assert!(
                (got - blog).abs() / blog < 0.03,
                "{f}: {got:.3} GiB vs {blog}"
            );
        }
    }

    #[test]
    fn t5_fp16_keeps_wo_in_fp32_under_transformers_only() {
        let t5 = DiffusionCatalog::get().part("t5-xxl").unwrap();
        let hf = text_encoder_bytes(t5, WeightFormat::Fp16, Engine::Diffusers);
        let comfy = text_encoder_bytes(t5, WeightFormat::Fp16, Engine::ComfyUi);
        // 4 762 310 656 × 2 + 1 006 632 960 × 2 extra bytes for the fp32 `wo`.
        assert_eq!(comfy, 4_762_310_656.0 * 2.0);
        assert_eq!(hf - comfy, 1_006_632_960.0 * 2.0);
    }

    #[test]
    fn gguf_uses_block_sizes() {
        // Q8_0: 34 bytes per 32 weights; 1-D and embedding tensors stay 16-bit.
        let b = weight_bytes(1000.0, 100.0, 0.0, "q8_0".parse().unwrap(), Engine::ComfyUi);
        assert_eq!(b, 900.0 * 34.0 / 32.0 + 200.0);
        assert!(quantized_bytes_per_param(WeightFormat::Gptq4).is_none());
    }
}
