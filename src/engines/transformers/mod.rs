//! transformers (and AutoAWQ, which loads and runs through it) at inference.
//!
//! - [`memory`]: the KV cache, the prefill's activations and logits, AutoAWQ's rolling cache and
//!   fused QKV copy, PyTorch's allocator slack and context.
//! - [`speed`]: its decode efficiency.
//! - [`export`]: the `from_pretrained` call (and the quantization config) that loads the plan;
//!   `export::peft` builds on it.
//!
//! Its terms in shared formulas: the KV heads it allocates (`memory::kv_cache`,
//! `transformers_kv_heads`). Training with transformers
//! (Trainer, PEFT, DeepSpeed, accelerate) is `memory::training` and its exports in `export`.

pub mod export;
pub mod memory;
pub mod speed;
