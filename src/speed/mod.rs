//! Speed: the cost of a plan in the units users think in (tokens per second, seconds per step).
//!
//! Every figure is a roofline: bytes moved over the bandwidth they move at, or FLOPs over the
//! card's peak, each scaled by an efficiency measured on published benchmarks (the constants in
//! `llm.rs` and `diffusion.rs` name their sources; `tests/data/speed-llama-cpp.jsonl` holds the comparison the
//! test `speed_table` checks). A figure that does not apply, or that the inputs cannot give
//! (a card without FLOPs in its preset), is absent, never zero.

pub mod diffusion;
pub mod llm;
pub mod precision;

use serde::{Deserialize, Serialize};

/// DESIGN.md `speed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Speed {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_tokens_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_tokens_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_per_step: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_per_image: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training_tokens_per_s: Option<f64>,
    /// What the figure assumes, one line.
    pub basis: String,
}
