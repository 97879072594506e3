//! Bytes of the model weights in each storage format, split into what sits on the GPU.
//!
//! Quantizers leave some tensors in 16-bit and add scales; each rule below names the code it
//! comes from. Norm weights and biases are folded into the block parameters (well under 0.1%).

use crate::types::arch::ModelArch;
use crate::types::dtype::{GgmlType, GgufFileType, WeightFormat, more_bits_fraction};
use crate::types::options::Engine;
use crate::types::workload::Workload;

/// Weight bytes, whole model (not yet split across GPUs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightBytes {
    /// Bytes resident on the GPU(s).
    pub gpu: f64,
    /// Bytes kept in host memory by the engine (llama.cpp's token embedding).
    pub host: f64,
}

/// 16-bit embedding + head that every 8/4-bit quantizer for transformers skips:
/// bitsandbytes skips `lm_head` (transformers `get_keys_to_not_convert`) and never touches
/// `nn.Embedding`; GPTQ/AWQ quantize only the decoder's `nn.Linear` layers.
fn sixteen_bit_ends(a: &ModelArch) -> f64 {
    2.0 * (a.embedding_params() + a.lm_head_params())
}

/// Bytes per block parameter, plus the scales each scheme stores alongside.
fn block_bytes_per_param(f: WeightFormat, a: &ModelArch) -> f64 {
    let h = f64::from(a.hidden.max(1));
    match f {
        WeightFormat::Fp32 => 4.0,
        WeightFormat::Fp16 | WeightFormat::Bf16 => 2.0,
        // fp8 e4m3 with one fp32 scale per tensor (vLLM `Fp8LinearMethod`): 1 byte.
        WeightFormat::Fp8 => 1.0,
        // LLM.int8: int8 weights + one fp32 scale per output row (bitsandbytes `Int8Params.SCB`);
        // rows ≈ params / in_features.
        WeightFormat::Int8 => 1.0 + 4.0 / h,
        // NF4/FP4: 4-bit codes + per-64 absmax; with double quantization (QLoRA paper §3, the
        // QLoRA recipe default) the absmax is 8-bit with an fp32 scale per 256 blocks:
        // 0.5 + 1/64 + 4/(64·256) bytes.
        WeightFormat::Nf4 | WeightFormat::Fp4 => 0.5 + 1.0 / 64.0 + 4.0 / (64.0 * 256.0),
        // GPTQ (AutoGPTQ/optimum packing): 4-bit qweight, fp16 scales and 4-bit qzeros per
        // group of 128 input rows, int32 g_idx per input row.
        WeightFormat::Gptq4 => 0.5 + 2.0 / 128.0 + 0.5 / 128.0 + 4.0 / h,
        WeightFormat::Gptq8 => 1.0 + 2.0 / 128.0 + 1.0 / 128.0 + 4.0 / h,
        // AWQ (AutoAWQ GEMM/GEMV packing): 4-bit qweight, fp16 scales and 4-bit zeros per 128.
        WeightFormat::Awq4 => 0.5 + 2.0 / 128.0 + 0.5 / 128.0,
        // MXFP4 (OCP Microscaling spec v1.0: blocks of 32 E2M1 values with one E8M0 scale;
        // transformers `integrations/mxfp4.py` stores them as `*_blocks` and `*_scales` U8):
        // 17 bytes per 32 weights.
        WeightFormat::Mxfp4 => MXFP4_BYTES,
        // compressed-tensors W4A16 (`pack-quantized`, llm-compressor's default scheme):
        // 4-bit codes and a 16-bit scale per 128 inputs, symmetric (no zero points).
        WeightFormat::W4a16 => 0.5 + 2.0 / 128.0,
        // compressed-tensors W8A8 (`int-quantized`): int8 codes and a 16-bit scale per output
        // row; rows ≈ params / in_features.
        WeightFormat::W8a8 => 1.0 + 2.0 / h,
        // NVFP4 (ModelOpt export, compressed-tensors `nvfp4-pack-quantized`): two E2M1 codes
        // per byte and one E4M3 scale per 16.
        WeightFormat::Nvfp4 => 0.5 + 1.0 / 16.0,
        WeightFormat::Gguf(t) => t.mix().base.bytes_per_weight(),
    }
}

impl Workload {
    /// The weights of this workload: the exact bytes from the model's files while the run uses
    /// the files' own format, else the formula for the chosen format.
    pub fn weight_bytes(&self) -> WeightBytes {
        match self.file_weights {
            Some(f) if f.format == self.run.weights => match self.run.engine {
                Engine::LlamaCpp => WeightBytes {
                    gpu: f.total_bytes - f.host_bytes,
                    host: f.host_bytes,
                },
                _ => WeightBytes {
                    gpu: f.total_bytes,
                    host: 0.0,
                },
            },
            _ => weight_bytes(&self.model, self.run.weights, self.run.engine),
        }
    }
}

/// Bytes of the output head (`output.weight`; a tied model's copy of `token_embd`) within
/// [`WeightBytes::gpu`] for llama.cpp: the tensor `-ngl` counts as the last layer. Scaled like
/// the rest when the bytes come from the model's files.
pub fn output_head_bytes(w: &Workload) -> f64 {
    let a = &w.model;
    let formula = weight_bytes(a, w.run.weights, w.run.engine);
    let head = match w.run.weights {
        WeightFormat::Gguf(t) => a.embedding_params() * t.mix().output.bytes_per_weight(),
        f if f.is_quantized() => 2.0 * a.embedding_params(),
        f => a.embedding_params() * block_bytes_per_param(f, a),
    };
    let scale = w.weight_bytes().gpu / formula.gpu.max(1.0);
    (head * scale).min(w.weight_bytes().gpu)
}

/// Bytes per weight of an MXFP4 block: 16 bytes of 4-bit values and one scale byte per 32.
const MXFP4_BYTES: f64 = 17.0 / 32.0;

/// Weight bytes of `a` stored as `f` and run by `engine`.
pub fn weight_bytes(a: &ModelArch, f: WeightFormat, engine: Engine) -> WeightBytes {
    match f {
        WeightFormat::Fp32 | WeightFormat::Fp16 | WeightFormat::Bf16 => WeightBytes {
            gpu: a.params * block_bytes_per_param(f, a),
            host: 0.0,
        },
        WeightFormat::Gguf(t) => gguf_bytes(a, t.mix(), engine),
        // gpt-oss quantizes only the routed experts: its `quantization_config`
        // `modules_to_not_convert` keeps attention, router, embeddings and head in bf16.
        WeightFormat::Mxfp4 if a.moe.is_some() => {
            let experts = a.routed_expert_params_per_layer() * a.moe_layers().len() as f64;
            WeightBytes {
                gpu: experts * MXFP4_BYTES + (a.params - experts).max(0.0) * 2.0,
                host: 0.0,
            }
        }
        _ => WeightBytes {
            gpu: a.block_params() * block_bytes_per_param(f, a) + sixteen_bit_ends(a),
            host: 0.0,
        },
    }
}

/// A GGUF file of a model whose routed experts ship in MXFP4 (gpt-oss): llama.cpp's converter
/// keeps them packed (convert_hf_to_gguf.py `GptOssModel.dequant_model` skips an MXFP4
/// checkpoint and its `repack_mxfp4` writes each expert tensor's blocks and scales as one
/// GGML_TYPE_MXFP4 tensor, 17 bytes per 32 weights, whatever `--outtype`), and `llama-quantize`
/// does not re-quantize them (llama-quant.cpp `llama_model_quantize_impl` refuses a quantized
/// input tensor unless `--allow-requantize`; bartowski/openai_gpt-oss-20b-GGUF: "All quants
/// keep the feed forward networks at mxfp4"). Every other tensor follows the file type's rule.
pub fn gguf_keeping_mxfp4_experts(a: &ModelArch, t: GgufFileType, engine: Engine) -> WeightBytes {
    let mix = t.mix();
    let whole = gguf_bytes(a, mix, engine);
    let (experts, downs) = a.routed_expert_params();
    let more = more_bits_fraction(a.layers);
    let down_rate =
        more * mix.ffn_down.0.bytes_per_weight() + (1.0 - more) * mix.ffn_down.1.bytes_per_weight();
    let by_rule = (experts - downs) * mix.base.bytes_per_weight() + downs * down_rate;
    WeightBytes {
        gpu: (whole.gpu - by_rule).max(0.0) + experts * MXFP4_BYTES,
        host: whole.host,
    }
}

/// A GGUF file's tensors by kind (llama-quant.cpp type rules) and where llama.cpp puts them:
/// `token_embd` always stays in host memory (`llama-model.cpp` loads the input layer on the CPU
/// buffer type), the output head goes to the GPU with a full offload. Checked against the
/// OpenLLaMA-7B buffers in the reference data (F16 12603.02 MiB, Q4_K_M 3820.93 MiB).
fn gguf_bytes(a: &ModelArch, mix: crate::types::dtype::GgufMix, engine: Engine) -> WeightBytes {
    let more = more_bits_fraction(a.layers);
    let v = a.attn_v_params();
    let down = a.ffn_down_params();
    let norms = f64::from(2 * a.layers + 1) * f64::from(a.hidden);
    let rest = (a.block_params() - v - down - norms).max(0.0);
    let blocks = rest * mix.base.bytes_per_weight()
        + v * (more * mix.attn_v.0.bytes_per_weight()
            + (1.0 - more) * mix.attn_v.1.bytes_per_weight())
        + down
            * (more * mix.ffn_down.0.bytes_per_weight()
                + (1.0 - more) * mix.ffn_down.1.bytes_per_weight())
        + norms * GgmlType::F32.bytes_per_weight();
    let embd = a.embedding_params() * mix.base.bytes_per_weight();
    // A tied model has no `output` tensor; llama.cpp duplicates token_embd onto the GPU for it.
    let output = a.embedding_params() * mix.output.bytes_per_weight();
    let gpu = blocks + output;
    match engine {
        Engine::LlamaCpp => WeightBytes { gpu, host: embd },
        _ => WeightBytes {
            gpu: gpu + embd,
            host: 0.0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::arch::{Mlp, ModelArch};
    use crate::types::dtype::GgufFileType;
    use crate::units::MIB;

    /// OpenLLaMA-7B v2 as printed by llama.cpp (6.74 B params, MHA).
    fn open_llama_7b() -> ModelArch {
        ModelArch {
            params: 6_738_415_616.0,
            layers: 32,
            hidden: 4096,
            heads: 32,
            kv_heads: 32,
            head_dim: 128,
            intermediate: 11008,
            vocab: 32000,
            mlp: Mlp::Gated,
            tied_embeddings: false,
            max_context: Some(2048),
            sliding_window: None,
            global_every: None,
            moe: None,
            mla: None,
            transformers_kv_heads: None,
            cache: None,
            model_type: None,
        }
    }

    fn mib(f: WeightFormat) -> f64 {
        weight_bytes(&open_llama_7b(), f, Engine::LlamaCpp).gpu / MIB
    }

    #[test]
    fn gguf_model_buffers_match_llama_cpp_logs() {
        // llama.cpp "VRAM used"/"model buffer size" lines for OpenLLaMA-7B (ggml-org/ci, V100).
        let cases = [
            (GgufFileType::F16, 12603.02),
            (GgufFileType::Q8_0, 6695.83),
            (GgufFileType::Q4_0, 3577.55),
            (GgufFileType::Q4KM, 3820.93),
            (GgufFileType::Q5KM, 4474.93),
        ];
        for (t, logged) in cases {
            let got = mib(WeightFormat::Gguf(t));
            assert!(
                (got - logged).abs() / logged < 0.002,
                "{t:?}: {got:.2} MiB vs {logged}"
            );
        }
    }

    #[test]
    fn sixteen_bit_is_params_times_two() {
        let a = open_llama_7b();
        assert_eq!(
            weight_bytes(&a, WeightFormat::Bf16, Engine::Transformers).gpu,
            a.params * 2.0
        );
        assert_eq!(
            weight_bytes(&a, WeightFormat::Fp32, Engine::Transformers).gpu,
            a.params * 4.0
        );
    }

    #[test]
    fn nf4_keeps_embeddings_16_bit() {
        let a = open_llama_7b();
        let b = weight_bytes(&a, WeightFormat::Nf4, Engine::Transformers).gpu;
        // blocks 6.476e9 × 0.5159 + 2 × 131.07e6 × 2 = 3.341e9 + 0.524e9
        let expect = a.block_params() * (0.5 + 1.0 / 64.0 + 4.0 / 16384.0) + 4.0 * 32000.0 * 4096.0;
        assert!((b - expect).abs() < 1.0);
        assert!(b > a.params * 0.5 && b < a.params * 0.6);
    }
}
