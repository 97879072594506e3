//! Doctor tab: paste an error message, walk the symptom wizard (`crate::doctor`) step by step
//! with back and restart, and read the causes and fixes at the end. Steps the evidence answered
//! are shown as such. The wizard's state is plain data and is kept between sessions.

use crate::doctor::diagnosis::{causes_for, diagnose, evidence_line};
use crate::doctor::knowledge::Cost;
use crate::doctor::{Context, Diagnosis, Knowledge, View, WizardState, reading};
use crate::ui::i18n::{lang, tr, trf};
use crate::ui::widgets::Said;
use crate::watch::Outcome;
use egui::{RichText, Ui};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The knowledge files' code for the language chosen in the top bar.
fn code() -> &'static str {
    lang().doctor_code()
}

#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DoctorView {
    /// The pasted error message, kept between sessions so a long log is not lost.
    pub message: String,
    /// Where the wizard stands; `None` before it starts.
    pub wizard: Option<WizardState>,
    /// What reading the message found, in words of the language shown.
    #[serde(skip)]
    note: Option<Said>,
    /// Workload fields of the fix whose "Open in planner" was clicked, for the app to hand to
    /// the planner (`WorkloadFile::with_fields`); taken by the app in the same frame.
    #[serde(skip)]
    pub open_in_planner: Option<BTreeMap<String, String>>,
    /// What the rest of the app knows (the monitor's latest reading, the planner's verdict),
    /// set by the app each frame; read when the wizard starts.
    #[serde(skip)]
    pub context: Context,
}

impl DoctorView {
    pub fn ui(&mut self, ui: &mut Ui) {
        let kb = Knowledge::get();
        egui::Panel::left("doctor_input").resizable(true).default_size(460.0).show(ui, |ui| {
            ui.heading(tr("What went wrong?"));
            ui.label(tr("Paste the error message (for example a “CUDA out of memory” traceback), or start without one:"));
            let label = ui.label(tr("Error message"));
            let edit = egui::ScrollArea::vertical().max_height(320.0).show(ui, |ui| {
                // Tab leaves the box (a code editor would indent instead), so the buttons
                // below are reachable by keyboard; Ctrl+Enter reads the message from inside it.
                let edit = egui::TextEdit::multiline(&mut self.message)
                    .desired_rows(14)
                    .desired_width(f32::INFINITY)
                    .code_editor()
                    .lock_focus(false)
                    .show(ui);
                edit.response.response.labelled_by(label.id)
            });
            let read_by_key = edit.inner.has_focus()
                && ui.input_mut(|i| i.consume_key(egui::Modifiers::COMMAND, egui::Key::Enter));
            ui.horizontal(|ui| {
                if ui
                    .button(tr("Read message"))
                    .on_hover_text(tr("Ctrl+Enter in the message box"))
                    .clicked()
                    || read_by_key
                {
                    self.start(kb, true);
                }
                if ui.button(tr("Start without a message")).clicked() {
                    self.start(kb, false);
                }
            });
            if let Some(n) = &self.note {
                ui.label(n.now());
            }
        });
        egui::CentralPanel::default().show(ui, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| self.wizard_ui(ui, kb));
        });
    }

    /// Shows what a watched command's failure shows (the monitor's "Watch a command…"): the
    /// lines around the failure as the message, and the wizard walked over what they and the
    /// run's memory timeline establish.
    pub fn show_run(&mut self, outcome: &Outcome) {
        let kb = Knowledge::get();
        self.message = outcome
            .incident
            .as_ref()
            .map(|i| i.text.clone())
            .unwrap_or_default();
        match outcome.diagnose(kb, code()) {
            Ok((state, _)) => {
                self.wizard = Some(state);
                let command = crate::printable::printable(&outcome.command).to_string();
                let exit = outcome.exit.code;
                self.note = Some(Said::new(move || {
                    trf(
                        "From the watched run of {command} (exit code {code}): its failure and its memory over time.",
                        &[("command", &command), ("code", &exit)],
                    )
                }));
            }
            Err(e) => self.note = Some(e.into()),
        }
    }

    /// What reading the message found (or why it could not start), as shown under the buttons.
    pub fn note(&self) -> Option<String> {
        self.note.as_ref().map(Said::now)
    }

    /// Says why the planner could not take a fix's fields, in the tab where it was clicked.
    pub fn planner_refused(&mut self, why: String) {
        self.note = Some(Said::new(move || {
            trf(
                "Cannot open this fix in the planner: {why}",
                &[("why", &why)],
            )
        }));
    }

    /// Starts the wizard at its root, with what the message shows when `read` is set.
    fn start(&mut self, kb: &Knowledge, read: bool) {
        let text = self.message.trim();
        let reading = if read && !text.is_empty() {
            match reading::read(text, kb, self.context.live.as_ref()) {
                Ok(r) => Some(r),
                Err(e) => {
                    self.note = Some(e.to_string().into());
                    return;
                }
            }
        } else {
            None
        };
        self.note = Some(match &reading {
            Some(r) if r.recognised() => {
                let ids = r.signatures.clone();
                Said::new(move || {
                    let kb = Knowledge::get();
                    let names: Vec<&str> = ids
                        .iter()
                        .map(|id| {
                            kb.signatures
                                .iter()
                                .find(|s| &s.id == id)
                                .map_or(id.as_str(), |s| s.label.get(code()))
                        })
                        .collect();
                    trf("Recognised: {names}", &[("names", &names.join("; "))])
                })
            }
            Some(_) => Said::new(|| {
                tr("No known GPU error in this text; answer the questions instead.").into()
            }),
            None => Said::new(|| tr("Answer the questions below.").into()),
        });
        let observations = self.context.observations(reading.as_ref());
        match WizardState::start(kb, &kb.root, observations) {
            Ok(w) => self.wizard = Some(w),
            Err(e) => self.note = Some(e.to_string().into()),
        }
    }

    fn wizard_ui(&mut self, ui: &mut Ui, kb: &Knowledge) {
        let Some(w) = &mut self.wizard else {
            ui.weak(tr(
                "The wizard starts when you read a message or start without one.",
            ));
            return;
        };
        let view = match w.view(kb, code()) {
            Ok(v) => v,
            Err(e) => {
                ui.colored_label(ui.visuals().error_fg_color, e.to_string());
                if ui.button(tr("Restart")).clicked() {
                    self.wizard = None;
                }
                return;
            }
        };
        if !w.observations.is_empty() {
            ui.strong(tr("Evidence"));
            for o in &w.observations {
                ui.label(format!("• {}", evidence_line(kb, o, code())));
            }
            ui.add_space(6.0);
        }
        for step in w.history(kb, code()) {
            let line = format!("{} → {}", step.question, step.answer);
            match step.because {
                Some(b) => ui.weak(trf(
                    "{line}   (answered from the evidence: {because})",
                    &[("line", &line), ("because", &b)],
                )),
                None => ui.weak(line),
            };
        }
        ui.add_space(6.0);
        let mut restart = false;
        ui.horizontal(|ui| {
            if ui
                .add_enabled(
                    w.path.iter().any(|s| !s.auto),
                    egui::Button::new(tr("Back")),
                )
                .clicked()
            {
                w.back();
            }
            restart = ui.button(tr("Restart")).clicked();
        });
        ui.separator();
        match view {
            View::Question { text, options, .. } => {
                ui.heading(text);
                for (i, o) in options.iter().enumerate() {
                    if ui.button(o).clicked() {
                        // The options come from this very node, so the index exists.
                        w.answer(kb, i).ok();
                    }
                }
                let causes = causes_for(kb, &w.observations);
                if !causes.is_empty() {
                    ui.add_space(10.0);
                    ui.strong(tr("What the evidence points at so far"));
                    let d = diagnose(kb, &causes, &w.observations, code());
                    self.open_in_planner = self.open_in_planner.take().or(diagnosis_ui(ui, &d));
                }
            }
            View::Result {
                text, diagnosis, ..
            } => {
                ui.heading(text);
                self.open_in_planner = self.open_in_planner.take().or(diagnosis_ui(ui, &diagnosis));
            }
        }
        if restart {
            self.wizard = None;
            self.note = None;
        }
    }
}

/// The cost tag before a fix, bracketed in the key too so "free" (no cost) cannot be confused
/// with "free" (memory) in the translation table.
fn cost_title(c: Cost) -> &'static str {
    tr(match c {
        Cost::Free => "[free]",
        Cost::Code => "[code change]",
        Cost::Quality => "[quality trade-off]",
        Cost::Hardware => "[hardware]",
    })
}

fn planner_hover(fields: &BTreeMap<String, String>) -> String {
    let what = fields
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    trf(
        "Plans the current workload with {fields}",
        &[("fields", &what)],
    )
}

/// The causes and fixes; returns the planner fields of the fix whose "Open in planner" was
/// clicked.
fn diagnosis_ui(ui: &mut Ui, d: &Diagnosis) -> Option<BTreeMap<String, String>> {
    let mut open = None;
    ui.add_space(6.0);
    // The workload the message itself describes (engine, card, context), for llama.cpp, ollama
    // and vLLM messages: the planner opens on it.
    if let Some(fields) = &d.planner
        && ui
            .button(tr("Open the message's workload in the planner"))
            .on_hover_text(planner_hover(fields))
            .clicked()
    {
        open = Some(fields.clone());
    }
    ui.label(RichText::new(tr("Likely causes")).strong().size(16.0));
    for c in &d.causes {
        ui.strong(&c.title);
        ui.label(&c.why);
        for e in &c.evidence {
            ui.weak(trf("seen: {evidence}", &[("evidence", e)]));
        }
        ui.add_space(4.0);
    }
    ui.add_space(6.0);
    ui.label(
        RichText::new(tr("Fixes, for the likeliest cause first"))
            .strong()
            .size(16.0),
    );
    for f in &d.fixes {
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new(cost_title(f.cost)).weak());
            ui.label(&f.text);
        });
        ui.horizontal(|ui| {
            if let Some(copy) = &f.copy {
                ui.code(copy);
                if ui.button(tr("Copy")).clicked() {
                    ui.ctx().copy_text(copy.clone());
                }
            }
            if let Some(fields) = &f.planner
                && ui
                    .button(tr("Open in planner"))
                    .on_hover_text(planner_hover(fields))
                    .clicked()
            {
                open = Some(fields.clone());
            }
        });
    }
    cannot_help_ui(ui, d);
    open
}

/// The fixes the causes list that cannot help with this message, apart from those that can,
/// each with its reason (issue 22: a fix the figures rule out was sorted among the others).
fn cannot_help_ui(ui: &mut Ui, d: &Diagnosis) {
    if d.cannot_help.is_empty() {
        return;
    }
    ui.add_space(6.0);
    ui.label(RichText::new(tr("Cannot help here")).strong().size(16.0));
    for f in &d.cannot_help {
        ui.label(RichText::new(&f.text).weak());
        if let Some(r) = &f.reason {
            ui.label(trf("why not: {reason}", &[("reason", r)]));
        }
    }
}
