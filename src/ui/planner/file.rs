//! Opening and saving the workload file, and opening a model file in place of a preset. The
//! file's `[run] task` decides the kind the tab shows.

use super::{Family, PlannerView};
use crate::atomic_write::write_atomic;
use crate::memory::{Task, WorkloadFile};
use crate::types::workload::ModelSection;
use crate::ui::i18n::{tr, trf};
use crate::ui::widgets::status_ui;
use egui::Ui;
use std::path::Path;

/// Extensions offered by the workload open/save dialogs.
const WORKLOAD_EXT: &[&str] = &["toml"];
/// Model files the importer reads: config.json, model_index.json, safetensors, GGUF.
const MODEL_EXT: &[&str] = &["json", "safetensors", "gguf"];

impl PlannerView {
    pub(super) fn file_ui(&mut self, ui: &mut Ui) {
        ui.horizontal(|ui| {
            if ui.button(tr("Open workload…")).clicked() {
                self.open();
            }
            if ui.button(tr("Save workload…")).clicked() {
                self.save();
            }
            if ui
                .add_enabled(self.can_undo(), egui::Button::new(tr("Undo")))
                .on_hover_text(tr("Ctrl+Z: back one change of the workload"))
                .clicked()
            {
                self.undo();
            }
        });
        if ui
            .button(tr("Open model file…"))
            .on_hover_text(tr(
                "config.json, .safetensors, .safetensors.index.json or .gguf for an LLM; a diffusers model_index.json for a diffusion model",
            ))
            .clicked()
        {
            self.open_model();
        }
        if let Some(p) = &self.path {
            ui.weak(p.display().to_string());
        }
        status_ui(ui, &self.status);
    }

    fn open(&mut self) {
        let Some(path) = self
            .dialogs
            .0
            .open(tr("Open a workload file"), WORKLOAD_EXT)
        else {
            return;
        };
        self.status = Some(match WorkloadFile::load(&path) {
            Ok(w) => {
                self.workload = w;
                let msg = trf("Opened {path}", &[("path", &path.display())]);
                self.path = Some(path);
                Ok(msg)
            }
            // The workload being edited is kept as it was.
            Err(e) => Err(e),
        });
    }

    /// Uses a model file instead of a preset. An LLM file is read by the importer on every
    /// estimate (an unreadable one shows as the estimate's error); a diffusers pipeline is
    /// matched to its diffusion preset once, here.
    fn open_model(&mut self) {
        let Some(path) = self.dialogs.0.open(tr("Open a model file"), MODEL_EXT) else {
            return;
        };
        let pipeline = path
            .file_name()
            .is_some_and(|n| n.eq_ignore_ascii_case("model_index.json"));
        if pipeline {
            let found = crate::import::import_pipeline(&path)
                .and_then(|p| p.diffusion_preset().map(|m| (p.class_name, m)));
            self.status = Some(found.map(|(class, m)| {
                if Family::of(self.workload.run.task) != Family::Diffusion {
                    self.set_task(Task::Diffusion);
                }
                self.workload.model = ModelSection {
                    preset: Some(m.id.clone()),
                    ..Default::default()
                };
                trf(
                    "{class} read from {path}: planning as {model}",
                    &[
                        ("class", &class),
                        ("path", &path.display()),
                        ("model", &m.name),
                    ],
                )
            }));
        } else {
            if Family::of(self.workload.run.task) != Family::Llm {
                self.set_task(Task::Inference);
            }
            self.workload.model = ModelSection {
                file: Some(path),
                ..Default::default()
            };
            self.status = None;
        }
    }

    fn save(&mut self) {
        let name = self.path.as_deref().and_then(Path::file_name).map_or_else(
            || "workload.toml".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let Some(path) = self
            .dialogs
            .0
            .save(tr("Save the workload"), &name, WORKLOAD_EXT)
        else {
            return;
        };
        self.status = Some(
            write_atomic(&path, &self.workload.to_toml())
                .map_err(String::from)
                .map(|()| {
                    let msg = trf("Saved {path}", &[("path", &path.display())]);
                    self.path = Some(path);
                    msg
                }),
        );
    }
}
