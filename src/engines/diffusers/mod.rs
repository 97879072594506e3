//! diffusers.
//!
//! - [`memory`]: where a pipeline's weights sit in each stage (all on the GPU, model offload,
//!   sequential offload), the VAE's dtype, and the breakdown's notes that follow from them.
//! - [`export`]: the pipeline code with the plan's memory calls.
//!
//! Its terms in shared formulas: the fp32 keep-list transformers applies to the text encoders it
//! loads (`memory::diffusion::parts::weight_bytes`), the whole batch decoded at once
//! (`memory::diffusion::residency::place`), the strategies the planner offers it (NF4 weights,
//! CPU offload: `plan::diffusion::Strategy::applies`), its offload loads in `speed::diffusion`,
//! and its setting rows in `export::report`. Its `model_index.json` is read in
//! `import::diffusers`.

pub mod export;
pub mod memory;
