//! llama.cpp's decode and prefill rates: the fixed time per layer of a decode step and what its
//! quantized matmuls (MMQ) reach of the int8 rate. `speed::llm` reads them; the bandwidth
//! share both sides stream at (`GPU_DECODE_EFFICIENCY`, `HOST_DECODE_EFFICIENCY`) stays
//! there, since training's memory passes use it too.

/// Fixed time per repeating layer and decoded token: one token's layer is a dozen small kernels
/// (norms, rope, attention, the MLP matmuls; ggml-cuda replays them as a CUDA graph, which removes
/// the CPU launch cost but not the GPU's per-kernel start and drain). It is why small models
/// reach a lower share of bandwidth than large ones (sp11, sp14: 3-4B models at 60% on the
/// RTX 2080). Fitted on the same rows as `speed::llm::GPU_DECODE_EFFICIENCY`.
pub const LAYER_OVERHEAD_S: f64 = 45e-6;

/// The same for a MoE layer, which adds the router matmul, softmax/top-k, and the expert
/// matmuls gathered by id (`ggml_mul_mat_id`): fitted on sp08 (Qwen3-30B-A3B Q4_0 on an RTX
/// 4090, 162 tokens/s where its 1.8 GB of active weights would allow 480).
pub const MOE_LAYER_OVERHEAD_S: f64 = 85e-6;

/// Prefill throughput of llama.cpp's quantized matmuls (MMQ) relative to the card's dense int8
/// tensor rate (`int8_tops`; `precision::llm`: MMQ multiplies int8 by int8 on the tensor cores,
/// PR 7676), which they reach only in part: each tile also unpacks the quantized blocks and
/// requantizes the activations to q8_1. Median of the pp rows of
/// `tests/data/speed-llama-cpp.jsonl` (all GeForce cards, whose int8 rate is four times their
/// fp32-accumulate fp16 rate: Q4_0 and IQ4_XS at 0.24, Q4_K_M 0.27, Q6_K and Q2_K 0.18: their
/// blocks take more unpacking).
pub const PREFILL_EFFICIENCY_MMQ: f64 = 0.225;

/// llama.cpp's fixed time per decode step: [`LAYER_OVERHEAD_S`] per dense layer,
/// [`MOE_LAYER_OVERHEAD_S`] per MoE layer.
pub fn layer_overhead(a: &crate::types::arch::ModelArch) -> f64 {
    let moe = a.moe_layers();
    let moe_n = f64::from(moe.end - moe.start);
    (f64::from(a.layers) - moe_n) * LAYER_OVERHEAD_S + moe_n * MOE_LAYER_OVERHEAD_S
}
