//! vLLM's decode rate.

/// Decode efficiency: vLLM uses CUDA graphs and paged attention [derived: vLLM's own benchmarks
/// reach 60-75% of bandwidth at batch 1]; transformers' eager decoding reaches about half of
/// that (`engines::transformers::speed::DECODE_EFFICIENCY`).
pub const DECODE_EFFICIENCY: f64 = 0.65;
