//! vLLM.
//!
//! - [`memory`]: the engine's up-front reservation (`--gpu-memory-utilization`), the profile
//!   run's activations, the non-torch memory and the KV cache pool made of the rest.
//! - [`speed`]: its decode efficiency.
//! - [`export`]: `vllm serve` flags.
//!
//! Its terms in shared formulas: its KV cache types (`types::dtype::kv_types_of`), and the
//! weight formats the strategy search offers it (`plan::strategy`).

pub mod export;
pub mod memory;
pub mod speed;
