//! llama.cpp (and the programs that run it: ollama, LM Studio).
//!
//! - [`memory`]: where `-ngl`, `--n-cpu-moe` and `--no-kv-offload` put the layers, experts and
//!   caches (GPU or system RAM), the compute buffers of both sides, the ggml context, and the
//!   per-device breakdown llama.cpp prints.
//! - [`export`]: llama-server flags; [`export::ollama`] and [`export::lm_studio`] the same
//!   plan for ollama and LM Studio.
//! - [`speed`]: the fixed time per layer of a decode step and what its quantized matmuls (MMQ)
//!   reach of the int8 rate.
//!
//! Its terms in shared formulas: the sliding-window cache's extra ubatch
//! (`memory::kv_cache::tokens_per_layer`), the recurrent state in f32
//! (`memory::kv_cache::state_bytes`), the token embedding kept in system RAM
//! (`memory::weights::gguf_bytes`); the bandwidth shares of its decode in `speed::llm`, and the
//! `--fit` split the planner chooses in `plan::options`.

pub mod export;
pub mod memory;
pub mod speed;
