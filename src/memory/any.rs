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
    // Diffusion and game plans are built from their catalogs' presets; a model file given with
    // them would be silently ignored, so it is refused instead.
    if let Some(task @ (Task::Diffusion | Task::Game)) = file.run.task {
        let given = [
            ("model.file", &file.model.file),
            ("model.hf_config", &file.model.hf_config),
        ];
        if let Some((field, Some(path))) = given.into_iter().find(|(_, p)| p.is_some()) {
            return Err(format!(
                "{field} (--model-file) = {}: a {task} plan does not read model files; name a preset with model.preset (--model; see `vram-doctor presets list`), and `vram-doctor inspect` shows what the files hold",
                path.display()
            ));
        }
    }
    match file.run.task {
        Some(Task::Diffusion) => Ok(AnyWorkload::Diffusion(diffusion::resolve::resolve(
            file,
            file.gpu.resolve()?,
        )?)),
        Some(Task::Game) => Ok(AnyWorkload::Game(game::resolve(file, file.gpu.resolve()?)?)),
        _ => file
            .resolve(base, loader)
            .map(AnyWorkload::Llm)
            .map_err(|e| with_task_hint(e, file)),
    }
}

/// An LLM error about a model preset that is a diffusion model or a game says which task to set.
fn with_task_hint(e: String, file: &WorkloadFile) -> String {
    let Some(p) = file.model.preset.as_deref() else {
        return e;
    };
    if diffusion::DiffusionCatalog::get().model(p).is_ok() {
        format!("{e} ('{p}' is a diffusion model: set run.task = \"diffusion\" / --task diffusion)")
    } else if game::GameCatalog::get().game(p).is_ok() {
        format!("{e} ('{p}' is a game: set run.task = \"game\" / --task game)")
    } else {
        e
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
            "[gpu]\nvram_gib = 12\n[model]\npreset = \"sdxl\"\n",
        ] {
            let e = run(t).unwrap_err();
            assert!(!e.contains('\n') && !e.is_empty(), "{e}");
        }
        let e = run("[gpu]\nvram_gib = 12\n[model]\npreset = \"flux-dev\"\n").unwrap_err();
        assert!(e.contains("task = \"diffusion\""), "{e}");
        let e = run("[gpu]\nvram_gib = 12\n[model]\npreset = \"doom-eternal\"\n").unwrap_err();
        assert!(e.contains("--task game"), "{e}");
    }
}
