//! One entry point for every task: an LLM, diffusion or game workload (resolved by `resolve`)
//! estimates into the same `Breakdown`.

use super::diffusion::{self, DiffusionWorkload};
use super::game::{self, GameWorkload};
use crate::types::workload::Workload;
use serde::{Deserialize, Serialize};

/// A resolved workload of any task. Built once per plan and never stored in bulk, so the
/// variants stay unboxed (clippy's size lint does not apply to this use).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "task", rename_all = "snake_case")]
pub enum AnyWorkload {
    Llm(Workload),
    Diffusion(DiffusionWorkload),
    Game(GameWorkload),
}

/// Per-GPU estimate of any workload.
pub fn estimate_any(w: &AnyWorkload) -> super::Breakdown {
    match w {
        AnyWorkload::Llm(w) => super::estimate(w),
        AnyWorkload::Diffusion(w) => diffusion::estimate(w),
        AnyWorkload::Game(w) => game::estimate(w),
    }
}
