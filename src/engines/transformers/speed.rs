//! transformers' decode rate.

/// Decode efficiency: transformers `generate` runs one Python step per token with many small
/// kernels [derived: HF eager decoding reaches about half of the 60-75% of bandwidth vLLM's own
/// benchmarks reach at batch 1 (`engines::vllm::speed::DECODE_EFFICIENCY`)].
pub const DECODE_EFFICIENCY: f64 = 0.35;
