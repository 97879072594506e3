//! The workload kind: LLM inference, LLM training, diffusion or a game. Switching kind keeps
//! the GPU and parks the model and knobs of the kind left, so coming back restores them.

use super::PlannerView;
use crate::catalog::Catalog;
use crate::memory::Task;
use crate::types::workload::{FieldsKind, ModelSection, RunSection, fields_kind};
use crate::ui::catalog::Pick;
use crate::ui::i18n::tr;
use egui::Ui;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The model each kind starts with the first time it is chosen: a common open LLM (the one of
/// the workload-file example in `DESIGN.md`; the catalog's first when missing), then the most
/// used diffusion model and game.
const START_MODEL: &str = "llama-3.1-8b";
const START_DIFFUSION: &str = "sdxl";
const START_GAME: &str = "cyberpunk-2077";

/// How far a reported card size may be from a preset's and still be that card: drivers report
/// a little less than the marketing size (a 24 GB RTX 4090: 23.99 GiB; a 12 GB RTX 3060:
/// 11.76 GiB in PyTorch's message).
const PRESET_SIZE_SLACK: f64 = 0.03;

/// The kinds the selector offers, as the task each sets, with their labels.
const KINDS: [(Task, &str); 4] = [
    (Task::Inference, "LLM inference"),
    (Task::Training, "LLM training"),
    (Task::Diffusion, "Diffusion"),
    (Task::Game, "Game"),
];

/// Families of tasks whose model and knobs do not carry over to one another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    Llm,
    Diffusion,
    Game,
}

impl Family {
    pub(super) fn of(task: Option<Task>) -> Family {
        match task {
            Some(Task::Diffusion) => Family::Diffusion,
            Some(Task::Game) => Family::Game,
            _ => Family::Llm,
        }
    }
}

/// A family's model and run, kept while another family is shown, so switching back restores
/// them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Parked {
    llm: Option<(ModelSection, RunSection)>,
    diffusion: Option<(ModelSection, RunSection)>,
    game: Option<(ModelSection, RunSection)>,
}

impl Parked {
    fn slot(&mut self, f: Family) -> &mut Option<(ModelSection, RunSection)> {
        match f {
            Family::Llm => &mut self.llm,
            Family::Diffusion => &mut self.diffusion,
            Family::Game => &mut self.game,
        }
    }
}

/// The model a kind starts with the first time it is chosen.
pub(super) fn start_model(f: Family) -> ModelSection {
    let preset = match f {
        Family::Llm => {
            let cat = Catalog::get();
            cat.model(START_MODEL)
                .ok()
                .or(cat.models.first())
                .map(|m| m.id.clone())
        }
        Family::Diffusion => Some(START_DIFFUSION.to_string()),
        Family::Game => Some(START_GAME.to_string()),
    };
    ModelSection {
        preset,
        ..Default::default()
    }
}

impl PlannerView {
    /// The kind selector.
    pub(super) fn kind_ui(&mut self, ui: &mut Ui) {
        let task = self.workload.run.task.unwrap_or(Task::Inference);
        ui.horizontal_wrapped(|ui| {
            for (t, label) in KINDS {
                if ui.selectable_label(task == t, tr(label)).clicked() && t != task {
                    self.set_task(t);
                }
            }
        });
    }

    /// Switches the workload to `task`. The GPU and "other programs" stay; the model and knobs
    /// of another family are parked and this family's come back (or its start model).
    pub(super) fn set_task(&mut self, task: Task) {
        let (from, to) = (Family::of(self.workload.run.task), Family::of(Some(task)));
        if from != to {
            let other = self.workload.run.other_processes_gib;
            let current = (
                std::mem::take(&mut self.workload.model),
                std::mem::take(&mut self.workload.run),
            );
            *self.parked.slot(from) = Some(current);
            let (model, run) = self
                .parked
                .slot(to)
                .take()
                .unwrap_or_else(|| (start_model(to), RunSection::default()));
            self.workload.model = model;
            self.workload.run = run;
            self.workload.run.other_processes_gib = other;
            self.model_filter.clear();
        }
        self.workload.run.task = Some(task);
    }

    /// Opens workload fields handed over by another tab (the doctor's "Open in planner") on
    /// the kind they are about: their `run.task`, or the kind their fields or engine belong to
    /// (`fields_kind`: a training knob opens training, an LLM engine an LLM, whatever kind was
    /// shown), switching as the kind selector does so the fields land on that kind's model. A
    /// card size the message reports replaces a preset of another size (the preset's name would
    /// then name a card that does not exist). On error the planner is left as it was.
    pub fn open_fields(&mut self, fields: &BTreeMap<String, String>) -> Result<(), String> {
        let explicit = fields
            .get("run.task")
            .map(|t| t.parse::<Task>())
            .transpose()?;
        let shown = Family::of(self.workload.run.task);
        let task = explicit.or(match fields_kind(fields) {
            Some(FieldsKind::Training) => Some(Task::Training),
            Some(FieldsKind::Diffusion) => Some(Task::Diffusion),
            Some(FieldsKind::Game) => Some(Task::Game),
            Some(FieldsKind::Llm) if shown != Family::Llm => Some(Task::Inference),
            _ => None,
        });
        let kept = (self.workload.clone(), self.parked.clone());
        if let Some(t) = task {
            self.set_task(t);
        }
        match self.workload.with_fields(fields) {
            Ok(mut w) => {
                if fields.contains_key("gpu.vram_gib") && !fields.contains_key("gpu.preset") {
                    let cat = Catalog::get();
                    let other_size = |p: &String| {
                        cat.gpu(p).ok().is_none_or(|g| {
                            w.gpu.vram_gib.is_some_and(|v| {
                                (v - g.vram_gib).abs() > PRESET_SIZE_SLACK * g.vram_gib
                            })
                        })
                    };
                    if w.gpu.preset.as_ref().is_some_and(other_size) {
                        w.gpu.preset = None;
                    }
                }
                self.workload = w;
                Ok(())
            }
            Err(e) => {
                (self.workload, self.parked) = kept;
                Err(e)
            }
        }
    }

    /// Plans with the preset `id` of `task`'s kind, switching to that kind when another one
    /// is shown (an LLM model keeps training as training).
    fn take_preset(&mut self, task: Task, id: String) {
        if Family::of(self.workload.run.task) != Family::of(Some(task)) {
            self.set_task(task);
        }
        self.workload.model = ModelSection {
            preset: Some(id),
            ..Default::default()
        };
    }

    /// Plans with a preset chosen in the catalog tab; a model of another kind switches to it.
    pub fn take(&mut self, pick: Pick) {
        match pick {
            Pick::Gpu(id) => {
                self.workload.gpu.preset = Some(id);
                self.workload.gpu.vram_gib = None;
            }
            Pick::Model(id) => self.take_preset(Task::Inference, id),
            // The user's own presets come as the sections they stand for; the GPU count stays.
            Pick::UserGpu(g) => {
                let count = self.workload.gpu.count;
                self.workload.gpu = g;
                self.workload.gpu.count = count;
            }
            Pick::UserModel(m) => {
                if Family::of(self.workload.run.task) != Family::Llm {
                    self.set_task(Task::Inference);
                }
                self.workload.model = m;
            }
            Pick::Diffusion(id) => self.take_preset(Task::Diffusion, id),
            Pick::Game(id) => self.take_preset(Task::Game, id),
        }
    }
}
