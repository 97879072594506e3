//! Planner tab: edit a workload with pickers and sliders, see its memory part by part against the
//! card, and open or save the workload file. Every frame the edited `WorkloadFile` goes through
//! the same `resolve` + `memory::estimate` as `vram-doctor plan`, so the GUI and the CLI agree.
//! Under the plan, the exports of `crate::export` for the planned workload: preview, copy, save.

use super::bar;
use super::catalog::Pick;
use super::files::{Dialogs, write_atomic};
use crate::catalog::Catalog;
use crate::export::{self, ExportKind};
use crate::memory::any::AnyWorkload;
use crate::memory::dtype::{KV_NAMES, WEIGHT_NAMES};
use crate::memory::workload::RunSection;
use crate::memory::{
    Attention, Breakdown, Checkpointing, Engine, KvDtype, LoraTargets, Method, Offload, Optimizer,
    Precision, Run, Task, WorkloadFile,
};
use crate::plan::{self, Plan, PlanResult};
use crate::units::{gib, human};
use egui::{ComboBox, RichText, Slider, Ui};
use serde::{Deserialize, Serialize};
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// The export format chosen under the plan, and its rendered text.
    pub export: ExportView,
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
    plan: Plan,
    gpu_name: String,
    max_seq: u32,
    breakdown: Breakdown,
    /// What the exports are rendered from; a new `Arc` for every new estimate.
    source: Arc<(AnyWorkload, PlanResult)>,
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
            export: ExportView::default(),
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
        let e = self
            .workload
            .resolve(base, Some(crate::import::load_model))
            .map(|w| {
                let (breakdown, plan) = plan::plan(&w);
                let result = plan::result(breakdown.clone(), plan.clone());
                Estimate {
                    max_seq: w.model.max_context.unwrap_or(SEQ_MAX_FALLBACK),
                    breakdown,
                    plan,
                    gpu_name: w.gpu.name.clone(),
                    run: w.run.clone(),
                    source: Arc::new((AnyWorkload::Llm(w), result)),
                }
            });
        if let Ok(est) = &e {
            self.shown = est.run.clone();
        }
        self.cache = Some((self.workload.clone(), e.clone()));
        e
    }

    /// Writes the recommended plan's changes into the workload being edited.
    fn apply(&mut self, before: &Run, plan: &Plan) {
        let after = plan
            .changes
            .iter()
            .fold(before.clone(), |r, s| s.apply(&r).unwrap_or(r));
        write_changes(&mut self.workload.run, before, &after);
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
            // The user's own presets come as the sections they stand for; the GPU count stays.
            Pick::UserGpu(g) => {
                let count = self.workload.gpu.count;
                self.workload.gpu = g;
                self.workload.gpu.count = count;
            }
            Pick::UserModel(m) => self.workload.model = m,
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
                Ok(e) => {
                    // The verdict and the bar first; the export text below them.
                    let apply = summary_ui(ui, e);
                    ui.add_space(10.0);
                    details_ui(ui, e);
                    ui.add_space(10.0);
                    self.export.ui(ui, &e.source, &mut self.dialogs);
                    if apply {
                        self.apply(&e.run, &e.plan);
                    }
                }
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
        if ui
            .button("Open model file…")
            .on_hover_text("config.json, .safetensors, .safetensors.index.json or .gguf")
            .clicked()
        {
            self.open_model();
        }
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

    /// Uses a model file instead of a preset; the importer reads it on every estimate, and an
    /// unreadable file shows as the estimate's error.
    fn open_model(&mut self) {
        let exts = &["json", "safetensors", "gguf"];
        let Some(path) = self.dialogs.0.open("Open a model file", exts) else {
            return;
        };
        self.workload.model = Default::default();
        self.workload.model.file = Some(path);
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
                    if let Some(f) = w.model.file.as_ref().or(w.model.hf_config.as_ref()) {
                        f.file_name()
                            .map_or("model file".into(), |n| n.to_string_lossy().into_owned())
                    } else if w.model.params.is_some() {
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
        if let Some(v) = count_slider(ui, "Batch size", r.batch, 1..=512, true) {
            w.run.batch = Some(v);
        }
        let max_seq = estimate.map_or(SEQ_MAX_FALLBACK, |e| e.max_seq).max(16);
        if let Some(v) = count_slider(
            ui,
            "Sequence length",
            r.seq.min(max_seq),
            16..=max_seq,
            true,
        ) {
            w.run.seq = Some(v);
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
                if let Some(v) = count_slider(ui, "LoRA rank", r.lora_rank, 1..=512, true) {
                    w.run.lora_rank = Some(v);
                }
                if let Some(v) = pick(ui, "LoRA targets", LoraTargets::ALL, r.lora_targets) {
                    w.run.lora_targets = Some(v);
                }
            }
            if let Some(v) = count_slider(ui, "Gradient accumulation", r.grad_accum, 1..=256, true)
            {
                w.run.grad_accum = Some(v);
            }
            if let Some(v) = count_slider(ui, "ZeRO stage", r.zero_stage, 0..=3, false) {
                w.run.zero_stage = Some(v);
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
/// A slider over a count of the workload (batch, tokens, rank …); `Some` with the new value
/// when the user moved it, ready for the workload file's integer field.
fn count_slider(
    ui: &mut Ui,
    label: &str,
    value: u32,
    range: std::ops::RangeInclusive<u32>,
    logarithmic: bool,
) -> Option<i64> {
    let mut v = value;
    ui.add(
        Slider::new(&mut v, range)
            .logarithmic(logarithmic)
            .text(label),
    )
    .changed()
    .then_some(i64::from(v))
}

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

/// Draws the verdict and the plan; returns true when the user asked to apply the plan.
fn summary_ui(ui: &mut Ui, e: &Estimate) -> bool {
    let b = &e.breakdown;
    ui.heading(format!("Per GPU on {}", e.gpu_name));
    let color = if b.fits() {
        ui.visuals().widgets.active.fg_stroke.color
    } else {
        ui.visuals().error_fg_color
    };
    ui.label(RichText::new(verdict(b)).size(20.0).strong().color(color));
    plan_ui(ui, &e.plan)
}

/// Draws the memory part by part: the bar, the peaks and the warnings.
fn details_ui(ui: &mut Ui, e: &Estimate) {
    let b = &e.breakdown;
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

/// The export section: a format, a preview of the text, and buttons to copy or save it.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ExportView {
    /// The format the user picked; the first one that applies when unset or not applicable.
    kind: Option<ExportKind>,
    /// The formats and the text for one estimate, rendered again only when either changes.
    #[serde(skip)]
    cache: Option<Rendered>,
    /// Outcome of the last save, shown under the buttons.
    #[serde(skip)]
    status: Option<Result<String, String>>,
}

struct Rendered {
    source: Arc<(AnyWorkload, PlanResult)>,
    kinds: Vec<ExportKind>,
    kind: Option<ExportKind>,
    text: Result<String, String>,
}

impl ExportView {
    /// The formats and text for `source`, from the cache when neither it nor the format changed.
    fn refresh(&mut self, source: &Arc<(AnyWorkload, PlanResult)>) -> &Rendered {
        let same = |c: &Rendered| Arc::ptr_eq(&c.source, source);
        let kinds = match &self.cache {
            Some(c) if same(c) => c.kinds.clone(),
            _ => export::kinds_for(&source.0, &source.1),
        };
        let kind = self
            .kind
            .filter(|k| kinds.contains(k))
            .or(kinds.first().copied());
        if !matches!(&self.cache, Some(c) if same(c) && c.kind == kind) {
            let text = kind.map_or_else(
                || Err("No export applies to this workload".to_string()),
                |k| export::render(k, &source.0, &source.1),
            );
            self.cache = Some(Rendered {
                source: source.clone(),
                kinds,
                kind,
                text,
            });
        }
        self.cache.as_ref().expect("filled above")
    }

    fn ui(&mut self, ui: &mut Ui, source: &Arc<(AnyWorkload, PlanResult)>, dialogs: &mut Dialogs) {
        ui.heading("Export");
        let r = self.refresh(source);
        let (kinds, current) = (r.kinds.clone(), r.kind);
        let text = r.text.clone();
        let mut chosen = current;
        ComboBox::from_label("Export format")
            .selected_text(current.map_or("", |k| k.as_str()))
            .show_ui(ui, |ui| {
                for k in &kinds {
                    ui.selectable_value(&mut chosen, Some(*k), k.as_str());
                }
            });
        if chosen != current {
            self.kind = chosen;
            self.status = None;
        }
        match &text {
            Ok(t) => {
                egui::ScrollArea::both()
                    .id_salt("export_preview")
                    .max_height(240.0)
                    .show(ui, |ui| {
                        ui.add(egui::Label::new(RichText::new(t).monospace()).extend());
                    });
                ui.horizontal(|ui| {
                    if ui.button("Copy export").clicked() {
                        ui.ctx().copy_text(t.clone());
                    }
                    if let Some(k) = current
                        && ui.button("Save export…").clicked()
                    {
                        self.status = save_export(dialogs, k, t);
                    }
                });
            }
            Err(m) => {
                ui.colored_label(ui.visuals().error_fg_color, m);
            }
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
}

/// Asks where to save an export, proposing its usual file name; `None` when cancelled.
fn save_export(
    dialogs: &mut Dialogs,
    kind: ExportKind,
    text: &str,
) -> Option<Result<String, String>> {
    let name = kind.file_name();
    let ext: Vec<&str> = Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .into_iter()
        .collect();
    let path = dialogs.0.save("Save the export", name, &ext)?;
    Some(write_atomic(&path, text).map(|()| format!("Saved {}", path.display())))
}

/// The recommended plan, the largest batch and longest sequence that fit; true when "Apply
/// plan" was clicked.
fn plan_ui(ui: &mut Ui, p: &Plan) -> bool {
    let mut apply = false;
    ui.add_space(6.0);
    if p.changes.is_empty() {
        ui.label(&p.why);
    } else {
        ui.strong(format!(
            "Recommended plan: {} ({:.2}× speed; {})",
            p.strategies.join(" + "),
            p.speed_factor,
            p.quality_note
        ));
        ui.label(format!("Peak after the plan: {}", human(p.process_bytes)));
        apply = ui.button("Apply plan").clicked();
    }
    let fit = |v: Option<u32>| v.map_or("none fits".to_string(), |n| n.to_string());
    ui.label(format!(
        "Largest batch that fits: {} · longest sequence that fits: {}",
        fit(p.max_batch),
        fit(p.max_seq)
    ));
    apply
}

/// Records in the file form the knobs that differ between two resolved runs, so that applying a
/// plan changes only what the plan changed (each field is a plain copy; nothing is computed).
fn write_changes(f: &mut RunSection, before: &Run, after: &Run) {
    macro_rules! copy {
        ($($field:ident),*) => { $(if before.$field != after.$field { f.$field = Some(after.$field); })* };
    }
    macro_rules! copy_int {
        ($($field:ident),*) => { $(if before.$field != after.$field { f.$field = Some(i64::from(after.$field)); })* };
    }
    copy!(
        task,
        objective,
        engine,
        attention,
        method,
        precision,
        optimizer,
        checkpointing,
        lora_targets,
        offload
    );
    copy!(gpu_memory_utilization);
    copy_int!(
        batch, seq, prompt, lora_rank, grad_accum, zero_stage, ubatch
    );
    if before.weights != after.weights {
        f.weights = Some(after.weights.to_string());
    }
    if before.kv_cache != after.kv_cache {
        f.kv_cache = Some(kv_name(after.kv_cache).to_string());
    }
}

/// `KvDtype` has no Display: the first accepted spelling that parses back to it.
fn kv_name(k: KvDtype) -> &'static str {
    KV_NAMES
        .iter()
        .find(|n| n.parse::<KvDtype>() == Ok(k))
        .copied()
        .unwrap_or("fp16")
}
