//! Planner tab: pick a workload kind (LLM inference or training, diffusion, a game), edit its
//! knobs, and see its memory part by part against the card, the plan that makes it fit, and
//! the exports. The edited `WorkloadFile` goes through `resolve_any` + `plan_any`, the path of
//! `vram-doctor plan`, so the GUI and the CLI agree; the result is cached until the file changes.
//!
//! One module per kind holds its inputs and its plan view (`llm`, `diffusion`, `game`); `file`
//! opens and saves, `summary` draws the verdict and the bar, `export` the exports and report.

mod chart;
mod demo;
mod diffusion;
mod export;
mod file;
mod game;
mod kind;
mod llm;
mod summary;
mod undo;

use super::files::Dialogs;
use super::i18n::{msgs, tr};
use crate::catalog::Catalog;
use crate::memory::any::AnyWorkload;
use crate::memory::diffusion::DiffusionWorkload;
use crate::memory::game::{GameRun, GameWorkload};
use crate::memory::{Breakdown, Run, WorkloadFile};
use crate::plan::{Details, PlanResult, plan_any};
use crate::resolve::resolve_any;
use crate::types::arch::ModelArch;
use crate::types::message::Sentences;
use crate::types::workload::GpuTarget;
use crate::ui::widgets::{self, Status};
use egui::Ui;
pub use export::ExportView;
pub use kind::Parked;
use kind::{Family, start_model};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
pub use summary::verdict;
pub use undo::Snapshot;

/// What a first start shows: a common consumer card (the workload-file example's in
/// `DESIGN.md`); the catalog's first when it is missing.
const START_GPU: &str = "rtx-4090";

/// What the user is editing, and what the last estimate said.
#[derive(Serialize, Deserialize)]
#[serde(default)]
pub struct PlannerView {
    /// The workload in its file form; the widgets edit it directly.
    pub workload: WorkloadFile,
    /// The file it was last opened from or saved to.
    pub path: Option<PathBuf>,
    /// ComfyUI's models folder, where a workflow's files are identified from their headers
    /// (as `plan --comfy-models`); kept between sessions.
    pub comfy_models: Option<PathBuf>,
    /// The export format chosen under the plan, and its rendered text.
    pub export: ExportView,
    /// The other kinds' models and knobs.
    pub parked: Parked,
    /// Filter typed into the model picker.
    #[serde(skip)]
    model_filter: String,
    /// Outcome of the last open/save, shown under the buttons.
    #[serde(skip)]
    status: Status,
    #[serde(skip)]
    cache: Option<(WorkloadFile, Evaluated)>,
    /// The last workload of each kind that resolved, so the knobs keep their place while the
    /// workload is invalid.
    #[serde(skip)]
    shown: Shown,
    #[serde(skip)]
    pub dialogs: Dialogs,
    /// Steps back (Ctrl+Z, Undo); not kept between sessions.
    #[serde(skip)]
    history: undo::History,
    /// The last opened ComfyUI workflow's plan (its models, passes, changes and warnings,
    /// said in the language shown at each frame), or why it could not be planned again.
    #[serde(skip)]
    workflow_plan: Option<Result<crate::plan::workflow::WorkflowPlan, String>>,
    /// That workflow and the card and launch settings its lines were planned for: when either
    /// changes, the lines are planned again (`file::replan_workflow`).
    #[serde(skip)]
    workflow: Option<file::OpenWorkflow>,
    /// The knob the memory–speed chart follows: the last of GPU layers and context dragged.
    #[serde(skip)]
    chart_knob: crate::plan::curve::Knob,
    #[serde(skip)]
    chart: chart::Cache,
}

/// The resolved knobs the inputs show.
#[derive(Default)]
struct Shown {
    llm: Run,
    /// The LLM's architecture: its trained context bounds the sequence, its layers the split.
    llm_model: Option<ModelArch>,
    diffusion: Option<DiffusionWorkload>,
    game: GameRun,
    capacity_bytes: u64,
}

/// An estimate for the edited workload, or why there is none (said in the language shown).
type Evaluated = Result<Estimate, Sentences>;

#[derive(Clone)]
struct Estimate {
    breakdown: Breakdown,
    gpu_name: String,
    /// The workload and `plan_any`'s result: what the exports are rendered from and "Apply
    /// plan" writes back; a new `Arc` for every new estimate.
    source: Arc<(AnyWorkload, PlanResult)>,
    /// The workload as the monitor's demo plays it.
    demo: crate::telemetry::demo::DemoWorkload,
}

impl Estimate {
    fn new(w: AnyWorkload, result: PlanResult) -> Estimate {
        Estimate {
            demo: demo::demo_of(&w, &result),
            breakdown: result.breakdown(),
            gpu_name: gpu(&w).name.clone(),
            source: Arc::new((w, result)),
        }
    }
}

/// The card(s) a workload of any kind runs on.
fn gpu(w: &AnyWorkload) -> &GpuTarget {
    match w {
        AnyWorkload::Llm(l) => &l.gpu,
        AnyWorkload::Diffusion(d) => &d.gpu,
        AnyWorkload::Game(g) => &g.gpu,
    }
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
        workload.model = start_model(Family::Llm);
        PlannerView {
            workload,
            path: None,
            comfy_models: None,
            export: ExportView::default(),
            parked: Parked::default(),
            model_filter: String::new(),
            status: None,
            cache: None,
            shown: Shown::default(),
            dialogs: Dialogs::default(),
            history: undo::History::default(),
            workflow_plan: None,
            workflow: None,
            chart_knob: Default::default(),
            chart: chart::Cache::default(),
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
        let e = resolve_any(&self.workload, base, Some(crate::import::load_model))
            .map(|w| {
                let result = plan_any(&w);
                Estimate::new(w, result)
            })
            .map_err(|e| e.sentences());
        if let Ok(est) = &e {
            let s = &mut self.shown;
            s.capacity_bytes = est.breakdown.capacity_bytes;
            match &est.source.0 {
                AnyWorkload::Llm(l) => {
                    s.llm = l.run.clone();
                    s.llm_model = Some(l.model.clone());
                }
                AnyWorkload::Diffusion(d) => s.diffusion = Some(d.clone()),
                AnyWorkload::Game(g) => s.game = g.run.clone(),
            }
        }
        self.cache = Some((self.workload.clone(), e.clone()));
        e
    }

    /// The workload and `plan_any`'s result for it, as the tab shows them (the CLI's
    /// `plan --json` prints the same result for the same file).
    pub fn plan_result(&mut self) -> Result<(AnyWorkload, PlanResult), String> {
        self.evaluate()
            .map(|e| (*e.source).clone())
            .map_err(|why| msgs(&why))
    }

    /// The verdict on the current workload, for the doctor; `None` while it does not resolve.
    pub fn plan_summary(&mut self) -> Option<crate::doctor::PlanSummary> {
        let e = self.evaluate().ok()?;
        let (fits, v) = (e.source.1.fits, e.source.1.verdict);
        // A ComfyUI plan's memory mode (plan::diffusion `comfyui_memory`).
        let comfy_mode = (e.source.1.plan.details.diffusion())
            .and_then(|d| d.comfyui_memory.as_ref())
            .map(|m| m.mode);
        Some(crate::doctor::PlanSummary {
            fits,
            needed_bytes: v.need_bytes,
            capacity_bytes: v.capacity_bytes,
            comfy_mode,
        })
    }

    /// The game being planned, for the monitor's budget line; `None` for other workloads.
    pub fn game_workload(&mut self) -> Option<GameWorkload> {
        match &self.evaluate().ok()?.source.0 {
            AnyWorkload::Game(g) => Some(g.clone()),
            _ => None,
        }
    }

    /// The planned workload on its card, for the monitor's demo; `None` while it does not
    /// resolve.
    pub fn demo_workload(&mut self) -> Option<crate::telemetry::demo::DemoWorkload> {
        self.evaluate().ok().map(|e| e.demo)
    }

    /// Bytes the card must hold at the peak, for the monitor's "predicted" line.
    pub fn predicted_bytes(&mut self) -> Option<u64> {
        self.evaluate().ok().map(|e| e.breakdown.required_bytes())
    }

    pub fn ui(&mut self, ui: &mut Ui) {
        // Fills `shown`, which the inputs draw from.
        self.evaluate().ok();
        egui::Panel::left("planner_inputs")
            .resizable(true)
            .default_size(360.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| {
                    self.file_ui(ui);
                    ui.separator();
                    self.inputs_ui(ui);
                });
            });
        // The inputs may have changed the workload: show the estimate of what they left
        // (from the cache when they did not).
        let estimate = self.evaluate();
        egui::CentralPanel::default().show(ui, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| match &estimate {
                Ok(e) => {
                    // The verdict, the plan and the bar first; the export text below them.
                    summary::verdict_ui(ui, e);
                    let apply = match &e.source.1.plan.details {
                        Details::Llm => {
                            let apply = llm::plan_ui(ui, &e.source.1.plan);
                            ui.add_space(8.0);
                            chart::chart_ui(ui, &e.source, self.chart_knob, &mut self.chart);
                            apply
                        }
                        Details::Diffusion(p) => diffusion::plan_ui(ui, p),
                        Details::Game(a) => game::advice_ui(ui, a),
                    };
                    ui.add_space(10.0);
                    summary::details_ui(ui, e);
                    ui.add_space(10.0);
                    self.export.ui(ui, &e.source, &mut self.dialogs);
                    if apply {
                        let (w, r) = &*e.source;
                        crate::export::workload_file::apply_plan(&mut self.workload, w, r);
                    }
                }
                Err(why) => {
                    ui.heading(tr("Cannot estimate this workload"));
                    ui.colored_label(ui.visuals().error_fg_color, msgs(why));
                }
            });
        });
    }

    /// The kind, the GPU, then the inputs of the kind.
    fn inputs_ui(&mut self, ui: &mut Ui) {
        ui.heading(tr("Workload"));
        self.kind_ui(ui);
        self.gpu_ui(ui);
        let cap_gib = crate::units::gib(self.shown.capacity_bytes.max(1 << 30));
        let before = (self.workload.run.gpu_layers, self.workload.run.seq);
        let (w, s, filter) = (&mut self.workload, &self.shown, &mut self.model_filter);
        match Family::of(w.run.task) {
            Family::Llm => llm::inputs_ui(ui, w, &s.llm, s.llm_model.as_ref(), filter, cap_gib),
            Family::Diffusion => diffusion::inputs_ui(ui, w, s.diffusion.as_ref(), filter, cap_gib),
            Family::Game => game::inputs_ui(ui, w, &s.game, filter, cap_gib),
        }
        use crate::plan::curve::Knob;
        if w.run.gpu_layers != before.0 {
            self.chart_knob = Knob::GpuLayers;
        } else if w.run.seq != before.1 {
            self.chart_knob = Knob::Context;
        }
    }

    /// The card itself is picked in the top bar (`ui::gpu_picker`); here only how many.
    fn gpu_ui(&mut self, ui: &mut Ui) {
        let w = &mut self.workload;
        // Several cards only share the work of LLMs (ZeRO, tensor parallel).
        if Family::of(w.run.task) == Family::Llm
            && let Some(n) =
                widgets::count_slider(ui, tr("GPU count"), w.gpu.count.unwrap_or(1), 1..=8, false)
        {
            w.gpu.count = u32::try_from(n).ok();
        }
    }
}
