//! Opening and saving the workload file, and opening a model file in place of a preset. The
//! file's `[run] task` decides the kind the tab shows.

use super::{Family, PlannerView};
use crate::atomic_write::write_atomic;
use crate::memory::{Task, WorkloadFile};
use crate::types::message::Message;
use crate::types::workload::{GpuSection, ModelSection};
use crate::ui::i18n::{msg, tr, trf};
use crate::ui::widgets::{Said, status_ui};
use egui::Ui;
use std::path::Path;

/// Extensions offered by the workload open/save dialogs.
const WORKLOAD_EXT: &[&str] = &["toml"];
/// Model files the importer reads: config.json, model_index.json, safetensors, GGUF.
const MODEL_EXT: &[&str] = &["json", "safetensors", "gguf"];
/// ComfyUI workflows: UI or API JSON, or a PNG ComfyUI saved with one embedded.
const WORKFLOW_EXT: &[&str] = &["json", "png"];

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
        ui.horizontal(|ui| {
            if ui
                .button(tr("Open ComfyUI workflow…"))
                .on_hover_text(tr(
                    "A workflow saved by ComfyUI (UI or API JSON, or a PNG with it embedded): its models and the pass where memory peaks",
                ))
                .clicked()
            {
                self.open_workflow();
            }
            if ui
                .button(tr("ComfyUI models folder…"))
                .on_hover_text(tr(
                    "ComfyUI's folder (or its models folder): each file a workflow names is identified exactly from its header there, not from its name",
                ))
                .clicked()
            {
                self.pick_comfy_models();
            }
            if let Some(d) = &self.comfy_models {
                ui.weak(d.display().to_string());
            }
        });
        self.replan_workflow();
        match &self.workflow_plan {
            Some(Ok(wp)) => {
                for line in workflow_lines(wp) {
                    ui.label(line);
                }
            }
            Some(Err(e)) => {
                ui.label(e);
            }
            None => {}
        }
        if let Some(p) = &self.path {
            ui.weak(p.display().to_string());
        }
        status_ui(ui, &self.status);
    }

    fn open(&mut self) {
        if let Some(path) = self
            .dialogs
            .0
            .open(tr("Open a workload file"), WORKLOAD_EXT)
        {
            self.open_workload(path);
        }
    }

    /// Opens a file given at start-up (`--open FILE`) or dropped on the window: a workload
    /// (`.toml`) or a ComfyUI workflow (`.json`, or a `.png` ComfyUI saved), told by its
    /// extension. Anything else is refused in the status line, naming what is accepted.
    pub fn open_path(&mut self, path: &Path) {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some(e) if WORKLOAD_EXT.contains(&e) => self.open_workload(path.to_path_buf()),
            Some(e) if WORKFLOW_EXT.contains(&e) => self.open_workflow_path(path),
            _ => {
                let path = path.to_path_buf();
                self.status = Some(Err(Said::new(move || {
                    trf(
                        "{path}: not a file the planner opens (a workload .toml, or a ComfyUI workflow .json or .png)",
                        &[("path", &path.display())],
                    )
                })))
            }
        }
    }

    fn open_workload(&mut self, path: std::path::PathBuf) {
        self.status = Some(match WorkloadFile::load(&path) {
            Ok(w) => {
                self.workload = w;
                let opened = path.clone();
                self.path = Some(path);
                Ok(Said::new(move || {
                    trf("Opened {path}", &[("path", &opened.display())])
                }))
            }
            // The workload being edited is kept as it was.
            Err(e) => Err(e.to_string().into()),
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
                .and_then(|p| p.diffusion_preset().map(|m| (p.class_name, m)))
                .map_err(String::from);
            self.status = Some(
                found
                    .map(|(class, m)| {
                        if Family::of(self.workload.run.task) != Family::Diffusion {
                            self.set_task(Task::Diffusion);
                        }
                        self.workload.model = ModelSection {
                            preset: Some(m.id.clone()),
                            ..Default::default()
                        };
                        let (path, model) = (path.clone(), m.name.clone());
                        Said::new(move || {
                            trf(
                                "{class} read from {path}: planning as {model}",
                                &[
                                    ("class", &class),
                                    ("path", &path.display()),
                                    ("model", &model),
                                ],
                            )
                        })
                    })
                    .map_err(Said::from),
            );
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

    /// "ComfyUI models folder…": checked now, kept for every workflow opened after.
    fn pick_comfy_models(&mut self) {
        let Some(dir) = self.dialogs.0.folder(tr("ComfyUI's models folder")) else {
            return;
        };
        self.status = Some(
            crate::plan::workflow::headers::ModelsDir::open(&dir)
                .map(|m| {
                    self.comfy_models = Some(dir);
                    Said::new(move || {
                        trf(
                            "Workflow files are looked up in {path}",
                            &[("path", &m.root.display())],
                        )
                    })
                })
                .map_err(Said::from),
        );
    }

    /// "Open ComfyUI workflow…".
    fn open_workflow(&mut self) {
        if let Some(path) = self
            .dialogs
            .0
            .open(tr("Open a ComfyUI workflow"), WORKFLOW_EXT)
        {
            self.open_workflow_path(&path);
        }
    }

    /// Plans a ComfyUI workflow on the card being planned for (`plan::workflow`, as `plan
    /// --workflow`) and shows its peak pass as a diffusion workload, with the models it loads
    /// and its passes listed under the buttons.
    fn open_workflow_path(&mut self, path: &Path) {
        let planned = crate::import::comfy::read(path)
            .map_err(String::from)
            .and_then(|wf| Ok((self.plan_workflow(&wf)?, wf)));
        let (wp, wf) = match planned {
            Ok(p) => p,
            Err(e) => {
                self.status = Some(Err(e.into()));
                return;
            }
        };
        let peak = wp.peak();
        let Ok(start) = crate::resolve::diffusion::for_preset(
            peak.workload.gpu.clone(),
            peak.workload.bus,
            &peak.model,
        ) else {
            return;
        };
        if Family::of(self.workload.run.task) != Family::Diffusion {
            self.set_task(Task::Diffusion);
        }
        self.workload.model = ModelSection {
            preset: Some(peak.model.clone()),
            ..Default::default()
        };
        // The launch settings stay; the rest comes from the workflow.
        let old = std::mem::take(&mut self.workload.run);
        let r = &mut self.workload.run;
        r.task = Some(Task::Diffusion);
        (r.other_processes_gib, r.vram_mode, r.reserve_vram_gib) =
            (old.other_processes_gib, old.vram_mode, old.reserve_vram_gib);
        (r.dynamic_vram, r.vram_headroom_gib) = (old.dynamic_vram, old.vram_headroom_gib);
        (r.torch_version, r.os) = (old.torch_version, old.os);
        crate::export::workload_file::diffusion(
            &mut self.workload.run,
            &start.run,
            &peak.workload.run,
        );
        self.workflow = Some(OpenWorkflow {
            planned_for: (self.workload.gpu.clone(), self.launch()),
            workflow: wf,
        });
        let stage = match wp.peak_stage {
            "text_encode" => "text encode",
            "vae_decode" => "VAE decode",
            _ => "sampling",
        };
        let (path, n, node) = (path.to_path_buf(), wp.passes.len(), wp.peak_node.clone());
        self.status = Some(Ok(Said::new(move || {
            trf(
                "Workflow {path}: {n} sampling passes; planned at its peak, node {node} ({stage})",
                &[
                    ("path", &path.display()),
                    ("n", &n),
                    ("node", &node),
                    ("stage", &tr(stage)),
                ],
            )
        })));
        self.workflow_plan = Some(Ok(wp));
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
        let saved = match self.workload.to_toml() {
            Ok(text) => write_atomic(&path, &text).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        self.status = Some(match saved {
            Ok(()) => {
                self.path = Some(path.clone());
                Ok(Said::new(move || {
                    trf("Saved {path}", &[("path", &path.display())])
                }))
            }
            // The reason is the system's (or the TOML writer's) English text.
            Err(why) => Err(Said::new(move || {
                msg(&Message::new("save.not_saved").text("why", &why))
            })),
        });
    }
}

/// The workflow's loaders with their memory, its passes and the nodes not modelled.
/// An opened workflow and the card and launch settings its lines were last planned for.
#[derive(Debug, Clone)]
pub(super) struct OpenWorkflow {
    workflow: crate::import::comfy::Workflow,
    planned_for: (GpuSection, Option<crate::plan::workflow::Launch>),
}

impl PlannerView {
    fn launch(&self) -> Option<crate::plan::workflow::Launch> {
        crate::plan::workflow::Launch::from_fields(&self.workload.run).ok()
    }

    /// Plans `wf` on the card and launch settings being planned for (as `plan --workflow`).
    fn plan_workflow(
        &self,
        wf: &crate::import::comfy::Workflow,
    ) -> Result<crate::plan::workflow::WorkflowPlan, String> {
        let gpu = self.workload.gpu.resolve()?;
        let bus = crate::resolve::diffusion::bus_for(&gpu);
        let launch = crate::plan::workflow::Launch::from_fields(&self.workload.run)?;
        let mut answers = crate::plan::workflow::files::Answers::default();
        if let Some(d) = &self.comfy_models {
            answers = answers.with_models(crate::plan::workflow::headers::ModelsDir::open(d)?);
        }
        crate::plan::workflow::plan(wf, gpu, bus, &launch, &answers)
    }

    /// The workflow's lines follow the card and the launch settings: planned again when either
    /// changed since (the workload's own knobs, taken from the workflow when it was opened, stay).
    fn replan_workflow(&mut self) {
        let now = (self.workload.gpu.clone(), self.launch());
        let Some(open) = self.workflow.as_ref().filter(|o| o.planned_for != now) else {
            return;
        };
        self.workflow_plan = Some(self.plan_workflow(&open.workflow));
        if let Some(o) = &mut self.workflow {
            o.planned_for = now;
        }
    }
}

fn workflow_lines(wp: &crate::plan::workflow::WorkflowPlan) -> Vec<String> {
    use crate::units::human;
    let mut out = vec![tr("Models the workflow loads:").to_string()];
    for n in &wp.nodes {
        let what = match (&n.preset, n.bytes) {
            (Some(p), Some(b)) if n.from_header => trf(
                "{preset}, {bytes} (from its header)",
                &[("preset", p), ("bytes", &human(b))],
            ),
            (Some(p), Some(b)) => format!("{p}, {}", human(b)),
            (None, Some(b)) => human(b),
            _ => tr("not identified").to_string(),
        };
        out.push(format!("{} {}: {} → {what}", n.id, n.class_type, n.file));
    }
    for p in &wp.passes {
        out.push(trf(
            "Pass at node {node}: {model} {w}×{h}, batch {batch}; needs {need}",
            &[
                ("node", &p.node),
                ("model", &p.model),
                ("w", &p.width),
                ("h", &p.height),
                ("batch", &p.batch),
                ("need", &human(p.need_bytes)),
            ],
        ));
    }
    if !wp.changes.is_empty() {
        out.push(tr("Changes to the workflow that make it fit:").to_string());
    }
    for c in &wp.changes {
        out.push(trf(
            "{change}: saves {saves}, {speed}× the time",
            &[
                ("change", &msg(&c.change)),
                ("saves", &human(c.saves_bytes)),
                ("speed", &format!("{:.2}", c.speed_factor)),
            ],
        ));
    }
    if !wp.unmodelled_nodes.is_empty() {
        out.push(trf(
            "Not modelled: {nodes}",
            &[("nodes", &wp.unmodelled_nodes.join(", "))],
        ));
    }
    // The workflow's warnings, as `plan --workflow` prints them beside the plan.
    if !wp.warnings.is_empty() {
        out.push(tr("Warnings").to_string());
    }
    out.extend(wp.warnings.iter().map(msg));
    out
}
