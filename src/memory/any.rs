//! One entry point for every task: a workload file resolves into an LLM, diffusion or game
//! workload, and each estimates into the same `Breakdown`.

use super::diffusion::{self, DiffusionWorkload};
use super::game::{self, GameWorkload};
use super::options::Task;
use super::workload::{ModelLoader, Workload, WorkloadFile};
use serde::{Deserialize, Serialize};
use std::path::Path;

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

/// Resolves a workload file by its `run.task`: LLM tasks through `WorkloadFile::resolve`,
/// diffusion and game through their catalogs.
pub fn resolve_any(
    file: &WorkloadFile,
    base: &Path,
    loader: Option<ModelLoader>,
) -> Result<AnyWorkload, String> {
    match file.run.task {
        Some(Task::Diffusion) => Ok(AnyWorkload::Diffusion(diffusion::resolve::resolve(
            file,
            file.gpu.resolve()?,
        )?)),
        Some(Task::Game) => Ok(AnyWorkload::Game(game::resolve(file, file.gpu.resolve()?)?)),
        _ => file.resolve(base, loader).map(AnyWorkload::Llm),
    }
}

/// Per-GPU estimate of any workload.
pub fn estimate_any(w: &AnyWorkload) -> super::Breakdown {
    match w {
        AnyWorkload::Llm(w) => super::estimate(w),
        AnyWorkload::Diffusion(w) => diffusion::estimate(w),
        AnyWorkload::Game(w) => game::estimate(w),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Result<super::super::Breakdown, String> {
        let f = WorkloadFile::parse(text, "w.toml")?;
        Ok(estimate_any(&resolve_any(&f, Path::new("."), None)?))
    }

    #[test]
    fn dispatches_on_the_task() {
        let d = run("[gpu]\nvram_gib = 12\n[model]\npreset = \"sdxl\"\n[run]\ntask = \"diffusion\"\nwidth = 1024\nheight = 1024\n").unwrap();
        assert!(d.get("text_encoders") > 0 || d.get("vae_decode") > 0);
        let g = run("[gpu]\nvram_gib = 8\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"game\"\nresolution = \"2560x1440\"\ntexture_quality = \"ultra\"\n").unwrap();
        assert!(g.get("textures") > 0 && g.get("render_targets") > 0);
        let l = run("[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.1-8b\"\n").unwrap();
        assert!(l.get("kv_cache") > 0);
    }

    #[test]
    fn errors_stay_one_line() {
        for t in [
            "[gpu]\nvram_gib = 12\n[model]\npreset = \"sdxl\"\n[run]\ntask = \"game\"\n",
            "[gpu]\nvram_gib = 12\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"diffusion\"\n",
            "[gpu]\nvram_gib = 12\n[run]\ntask = \"game\"\nresolution = \"big\"\n",
            "[model]\npreset = \"sdxl\"\n[run]\ntask = \"diffusion\"\n",
        ] {
            let e = run(t).unwrap_err();
            assert!(!e.contains('\n') && !e.is_empty(), "{e}");
        }
    }
}
