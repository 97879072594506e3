//! A game workload file -> `GameWorkload`: the catalog title looked up (when `model.preset`
//! names one) and the `[run]` game fields checked and defaulted, so `memory::game` estimates
//! from plain data.

use super::ResolveError;
use crate::memory::game::{GameCatalog, GameRun, GameWorkload};
use crate::types::error::BadField;
use crate::types::workload::{GpuTarget, WorkloadFile};
use crate::units::gib_to_bytes;

/// Resolves `[run]` game fields; `[model] preset` names a catalog title (optional).
pub fn resolve(file: &WorkloadFile, gpu: GpuTarget) -> Result<GameWorkload, ResolveError> {
    let game = match &file.model.preset {
        Some(p) => Some(GameCatalog::get().game(p)?.clone()),
        None => None,
    };
    let r = &file.run;
    let d = GameRun::default();
    let other = r.other_processes_gib.unwrap_or(0.0);
    if !(other.is_finite() && (0.0..=4096.0).contains(&other)) {
        return Err(BadField::range("run.other_processes_gib", other, 0, 4096).into());
    }
    let run = GameRun {
        resolution: match &r.resolution {
            Some(s) => s.parse().map_err(|e| format!("run.resolution: {e}"))?,
            None => d.resolution,
        },
        texture_quality: match &r.texture_quality {
            Some(s) => s.parse()?,
            None => d.texture_quality,
        },
        ray_tracing: r.ray_tracing.unwrap_or(false),
        frame_generation: r.frame_generation.unwrap_or(false),
        upscaler: match &r.upscaler {
            Some(s) => s.parse()?,
            None => d.upscaler,
        },
        other_processes_bytes: gib_to_bytes(other),
    };
    Ok(GameWorkload { gpu, game, run })
}
