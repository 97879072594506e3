//! Planner tab: edit a workload with pickers and sliders, see its memory part by part against the
//! card, and open or save the workload file. Every frame the edited `WorkloadFile` goes through
//! the same `resolve` + `memory::estimate` as `vram-doctor plan`, so the GUI and the CLI agree.

use super::bar;
use super::catalog::Pick;
use super::files::{Dialogs, write_atomic};
use crate::catalog::Catalog;
use crate::memory::dtype::{KV_NAMES, WEIGHT_NAMES};
use crate::memory::{
    self, Attention, Breakdown, Checkpointing, Engine, KvDtype, LoraTargets, Method, Offload,
    Optimizer, Precision, Run, Task, WorkloadFile,
};
use crate::units::{gib, human};
use egui::{ComboBox, RichText, Slider, Ui};
use serde::{Deserialize, Serialize};
use std::fmt::Display;
use std::path::{Path, PathBuf};

/// Extensions offered by the open/save dialogs.
const WORKLOAD_EXT: &[&str] = &["toml"];

/// What a first start shows: a common consumer card and a common open model (the pair of the
/// workload-file example in `DESIGN.md`); the catalog's first entries when they are missing.
const START_GPU: &str = "rtx-4090";
const START_MODEL: &str = "llama-3.1-8b";

/// Longest sequence offered when the model does not state its maximum context.
const SEQ_MAX_FALLBACK: u32 = 131_072;

/// What the user is editing, and what the last estimate said.
#[derive(Serialize, Deserialize)]
#[serde(default)]
pub struct PlannerView {
    /// The workload in its file form; the widgets edit it directly.
    pub workload: WorkloadFile,
    /// The file it was last opened from or saved to.
    pub path: Option<PathBuf>,
    /// Filters typed into the GPU and model pickers.
    #[serde(skip)]
    gpu_filter: String,
    #[serde(skip)]
    model_filter: String,
    /// Outcome of the last open/save, shown under the buttons.
    #[serde(skip)]
    status: Option<Result<String, String>>,
    #[serde(skip)]
    cache: Option<(WorkloadFile, Evaluated)>,
    /// The last run that resolved, so the knobs keep their place while the workload is invalid.
    #[serde(skip)]
    shown: Run,
    #[serde(skip)]
    pub dialogs: Dialogs,
}

/// An estimate for the edited workload, or why there is none.
type Evaluated = Result<Estimate, String>;

#[derive(Clone)]
struct Estimate {
    run: Run,
    gpu_name: String,
    max_seq: u32,
    breakdown: Breakdown,
}

impl Default for PlannerView {
    /// Starts on `START_GPU` and `START_MODEL`, with the run defaults.
    fn default() -> Self {
        let cat = Catalog::get();
        let mut workload = WorkloadFile::default();
        workload.gpu.preset = cat
            .gpu(START_GPU)
            .ok()
            .or(cat.gpus.first())
            .map(|g| g.id.clone());
        workload.model.preset = cat
            .model(START_MODEL)
            .ok()
            .or(cat.models.first())
            .map(|m| m.id.clone());
        PlannerView {
            workload,
            path: None,
            gpu_filter: String::new(),
            model_filter: String::new(),
            status: None,
            cache: None,
            shown: Run::default(),
            dialogs: Dialogs::default(),
        }
    }
}

impl PlannerView {
    /// The estimate for the current workload, recomputed only when the workload changed.
    fn evaluate(&mut self) -> Evaluated {
        if let Some((w, e)) = &self.cache
            && *w == self.workload
        {
            return e.clone();
        }
        let base = self
            .path
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(Path::new("."));
        let e = self.workload.resolve(base, None).map(|w| Estimate {
            max_seq: w.model.max_context.unwrap_or(SEQ_MAX_FALLBACK),
            breakdown: memory::estimate(&w),
            gpu_name: w.gpu.name.clone(),
            run: w.run,
        });
        if let Ok(est) = &e {
            self.shown = est.run.clone();
        }
        self.cache = Some((self.workload.clone(), e.clone()));
        e
    }

    /// Plans with a preset chosen in the catalog tab.
    pub fn take(&mut self, pick: Pick) {
        match pick {
            Pick::Gpu(id) => {
                self.workload.gpu.preset = Some(id);
                self.workload.gpu.vram_gib = None;
            }
            Pick::Model(id) => {
                self.workload.model = Default::default();
                self.workload.model.preset = Some(id);
            }
        }
    }

    /// Bytes the card must hold at the peak, for the monitor's "predicted" line.
    pub fn predicted_bytes(&mut self) -> Option<u64> {
        self.evaluate().ok().map(|e| e.breakdown.required_bytes())
    }

    pub fn ui(&mut self, ui: &mut Ui) {
        let estimate = self.evaluate();
        egui::Panel::left("planner_inputs")
            .resizable(true)
            .default_size(360.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| {
                    self.file_ui(ui);
                    ui.separator();
                    self.inputs_ui(ui, estimate.as_ref().ok());
                });
            });
        let estimate = self.evaluate();
        egui::CentralPanel::default().show(ui, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| match &estimate {
                Ok(e) => result_ui(ui, e),
                Err(msg) => {
                    ui.heading("Cannot estimate this workload");
                    ui.colored_label(ui.visuals().error_fg_color, msg);
                }
            });
        });
    }

    fn file_ui(&mut self, ui: &mut Ui) {
        ui.horizontal(|ui| {
            if ui.button("Open workload…").clicked() {
                self.open();
            }
            if ui.button("Save workload…").clicked() {
                self.save();
            }
        });
        if let Some(p) = &self.path {
            ui.weak(p.display().to_string());
        }
        match &self.status {
            Some(Ok(m)) => {
                ui.label(m);
            }
            Some(Err(m)) => {
                ui.colored_label(ui.visuals().error_fg_color, m);
            }
            None => {}
        }
    }

    fn open(&mut self) {
        let Some(path) = self.dialogs.0.open("Open a workload file", WORKLOAD_EXT) else {
            return;
        };
        self.status = Some(match WorkloadFile::load(&path) {
            Ok(w) => {
                self.workload = w;
                let msg = format!("Opened {}", path.display());
                self.path = Some(path);
                Ok(msg)
            }
            // The workload being edited is kept as it was.
            Err(e) => Err(e),
        });
    }

    fn save(&mut self) {
        let name = self.path.as_deref().and_then(Path::file_name).map_or_else(
            || "workload.toml".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let Some(path) = self
            .dialogs
            .0
            .save("Save the workload", &name, WORKLOAD_EXT)
        else {
            return;
        };
        self.status = Some(write_atomic(&path, &self.workload.to_toml()).map(|()| {
            let msg = format!("Saved {}", path.display());
            self.path = Some(path);
            msg
        }));
    }

    fn inputs_ui(&mut self, ui: &mut Ui, estimate: Option<&Estimate>) {
        let cat = Catalog::get();
        let r = self.shown.clone();
        let w = &mut self.workload;

        ui.heading("GPU");
        let gpu_text = w
            .gpu
            .preset
            .as_deref()
            .and_then(|p| cat.gpu(p).ok())
            .map_or_else(
                || {
                    w.gpu
                        .vram_gib
                        .map_or("choose a GPU".into(), |v| format!("{v} GiB GPU"))
                },
                |g| format!("{} ({} GiB)", g.name, g.vram_gib),
            );
        let gpus = cat
            .gpus
            .iter()
            .map(|g| (g.id.as_str(), format!("{} ({} GiB)", g.name, g.vram_gib)));
        if let Some(id) = search_pick(
            ui,
            "GPU",
            gpu_text,
            &mut self.gpu_filter,
            gpus,
            w.gpu.preset.as_deref(),
        ) {
            w.gpu.preset = Some(id);
            w.gpu.vram_gib = None;
        }
        let mut count = w.gpu.count.unwrap_or(1);
        if ui
            .add(Slider::new(&mut count, 1..=8).text("GPU count"))
            .changed()
        {
            w.gpu.count = Some(count);
        }

        ui.heading("Model");
        let model_text = w
            .model
            .preset
            .as_deref()
            .and_then(|p| cat.model(p).ok())
            .map_or_else(
                || {
                    if w.model.params.is_some() {
                        "custom architecture".into()
                    } else {
                        "choose a model".into()
                    }
                },
                |m| m.name.clone(),
            );
        let models = cat.models.iter().map(|m| (m.id.as_str(), m.name.clone()));
        if let Some(id) = search_pick(
            ui,
            "Model",
            model_text,
            &mut self.model_filter,
            models,
            w.model.preset.as_deref(),
        ) {
            w.model = Default::default();
            w.model.preset = Some(id);
        }

        ui.heading("Run");
        ui.horizontal(|ui| {
            ui.label("Task");
            // Only the LLM tasks: the diffusion and game estimators are not in the engine yet.
            for t in [Task::Inference, Task::Training] {
                if ui.selectable_label(r.task == t, t.as_str()).clicked() {
                    w.run.task = Some(t);
                }
            }
        });
        if let Some(v) = pick_name(ui, "Weights", WEIGHT_NAMES, &r.weights.to_string()) {
            w.run.weights = Some(v);
        }
        if let Some(v) = pick(ui, "Engine", Engine::ALL, r.engine) {
            w.run.engine = Some(v);
        }
        let mut batch = r.batch;
        if ui
            .add(
                Slider::new(&mut batch, 1..=512)
                    .logarithmic(true)
                    .text("Batch size"),
            )
            .changed()
        {
            w.run.batch = Some(i64::from(batch));
        }
        let max_seq = estimate.map_or(SEQ_MAX_FALLBACK, |e| e.max_seq).max(16);
        let mut seq = r.seq.min(max_seq);
        if ui
            .add(
                Slider::new(&mut seq, 16..=max_seq)
                    .logarithmic(true)
                    .text("Sequence length"),
            )
            .changed()
        {
            w.run.seq = Some(i64::from(seq));
        }
        // `KvDtype` has no Display: show the first accepted spelling that parses back to it.
        let kv_name = KV_NAMES
            .iter()
            .find(|n| n.parse::<KvDtype>() == Ok(r.kv_cache))
            .copied()
            .unwrap_or("fp16");
        if let Some(v) = pick_name(ui, "KV cache", KV_NAMES, kv_name) {
            w.run.kv_cache = Some(v);
        }
        if let Some(v) = pick(ui, "Attention", Attention::ALL, r.attention) {
            w.run.attention = Some(v);
        }
        if r.engine == Engine::Vllm {
            let mut u = r.gpu_memory_utilization;
            if ui
                .add(Slider::new(&mut u, 0.1..=1.0).text("GPU memory utilization"))
                .changed()
            {
                w.run.gpu_memory_utilization = Some(u);
            }
        }
        let cap_gib = estimate.map_or(80.0, |e| gib(e.breakdown.capacity_bytes));
        let mut other = gib(r.other_processes_bytes);
        if ui
            .add(
                Slider::new(&mut other, 0.0..=cap_gib)
                    .suffix(" GiB")
                    .text("Other programs"),
            )
            .changed()
        {
            w.run.other_processes_gib = Some(other);
        }

        if r.task == Task::Training {
            ui.heading("Training");
            if let Some(v) = pick(ui, "Method", Method::ALL, r.method) {
                w.run.method = Some(v);
            }
            if let Some(v) = pick(ui, "Precision", Precision::ALL, r.precision) {
                w.run.precision = Some(v);
            }
            if let Some(v) = pick(ui, "Optimizer", Optimizer::ALL, r.optimizer) {
                w.run.optimizer = Some(v);
            }
            if let Some(v) = pick(ui, "Checkpointing", Checkpointing::ALL, r.checkpointing) {
                w.run.checkpointing = Some(v);
            }
            if r.method != Method::Full {
                let mut rank = r.lora_rank;
                if ui
                    .add(
                        Slider::new(&mut rank, 1..=512)
                            .logarithmic(true)
                            .text("LoRA rank"),
                    )
                    .changed()
                {
                    w.run.lora_rank = Some(i64::from(rank));
                }
                if let Some(v) = pick(ui, "LoRA targets", LoraTargets::ALL, r.lora_targets) {
                    w.run.lora_targets = Some(v);
                }
            }
            let mut accum = r.grad_accum;
            if ui
                .add(
                    Slider::new(&mut accum, 1..=256)
                        .logarithmic(true)
                        .text("Gradient accumulation"),
                )
                .changed()
            {
                w.run.grad_accum = Some(i64::from(accum));
            }
            let mut zero = r.zero_stage;
            if ui
                .add(Slider::new(&mut zero, 0..=3).text("ZeRO stage"))
                .changed()
            {
                w.run.zero_stage = Some(i64::from(zero));
            }
            if let Some(v) = pick(ui, "Offload", Offload::ALL, r.offload) {
                w.run.offload = Some(v);
            }
        }
    }
}

/// A combo box over catalog entries (id, text) with a search box on top; returns the id picked.
fn search_pick<'a>(
    ui: &mut Ui,
    label: &str,
    selected_text: String,
    filter: &mut String,
    items: impl Iterator<Item = (&'a str, String)>,
    current: Option<&str>,
) -> Option<String> {
    let mut picked = None;
    ComboBox::from_label(label)
        .selected_text(selected_text)
        .width(260.0)
        .height(400.0)
        .show_ui(ui, |ui| {
            ui.add(
                egui::TextEdit::singleline(filter)
                    .hint_text(format!("Search {}s", label.to_lowercase())),
            );
            let needle = filter.to_lowercase();
            for (id, text) in items {
                if !needle.is_empty() && !format!("{id} {text}").to_lowercase().contains(&needle) {
                    continue;
                }
                if ui.selectable_label(current == Some(id), &text).clicked() {
                    picked = Some(id.to_string());
                }
            }
        });
    picked
}

/// A combo box over a choice enum; returns the new value when the user picked another one.
fn pick<T: Copy + PartialEq + Display>(
    ui: &mut Ui,
    label: &str,
    all: &[T],
    current: T,
) -> Option<T> {
    let mut chosen = current;
    ComboBox::from_label(label)
        .selected_text(current.to_string())
        .show_ui(ui, |ui| {
            for v in all {
                ui.selectable_value(&mut chosen, *v, v.to_string());
            }
        });
    (chosen != current).then_some(chosen)
}

/// A combo box over spellings of a string-valued field (`run.weights`, `run.kv_cache`).
fn pick_name(ui: &mut Ui, label: &str, names: &[&str], current: &str) -> Option<String> {
    let mut chosen = current;
    ComboBox::from_label(label)
        .selected_text(current)
        .show_ui(ui, |ui| {
            for n in names {
                ui.selectable_value(&mut chosen, *n, *n);
            }
        });
    (chosen != current).then(|| chosen.to_string())
}

/// The verdict in words: whether it fits, and by how much.
pub fn verdict(b: &Breakdown) -> String {
    let need = human(b.required_bytes());
    let cap = human(b.capacity_bytes);
    let room = b.headroom_bytes();
    let margin = human(room.unsigned_abs().min(u128::from(u64::MAX)) as u64);
    if room >= 0 {
        format!("Fits: needs {need} of {cap}, {margin} headroom")
    } else {
        format!("Does not fit: needs {need} of {cap}, {margin} short")
    }
}

fn result_ui(ui: &mut Ui, e: &Estimate) {
    let b = &e.breakdown;
    ui.heading(format!("Per GPU on {}", e.gpu_name));
    let color = if b.fits() {
        ui.visuals().widgets.active.fg_stroke.color
    } else {
        ui.visuals().error_fg_color
    };
    ui.label(RichText::new(verdict(b)).size(20.0).strong().color(color));
    ui.add_space(6.0);
    let parts: Vec<(&str, u64)> = b
        .components
        .iter()
        .map(|c| (c.label.as_str(), c.bytes))
        .collect();
    bar::stacked_bar(ui, &parts, b.capacity_bytes);
    ui.add_space(6.0);
    bar::legend(ui, &parts);
    ui.add_space(10.0);
    ui.heading("Peak, as each tool reports it");
    egui::Grid::new("peaks")
        .num_columns(2)
        .spacing([16.0, 4.0])
        .show(ui, |ui| {
            for (what, bytes) in [
                (
                    "Live tensors (torch max_memory_allocated)",
                    b.peak.tensors_bytes,
                ),
                (
                    "Reserved by the allocator (torch max_memory_reserved)",
                    b.peak.reserved_bytes,
                ),
                ("Whole process (nvidia-smi)", b.peak.process_bytes),
                ("Card total, with other programs", b.required_bytes()),
            ] {
                ui.label(what);
                ui.label(human(bytes));
                ui.end_row();
            }
        });
    if !b.warnings.is_empty() {
        ui.add_space(10.0);
        ui.heading("Warnings");
        for w in &b.warnings {
            ui.colored_label(ui.visuals().warn_fg_color, w);
        }
    }
}
