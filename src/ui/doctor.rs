//! Doctor tab: paste an error message, walk the symptom wizard (`crate::doctor`) step by step
//! with back and restart, and read the causes and fixes at the end. Steps the evidence answered
//! are shown as such. The wizard's state is plain data and is kept between sessions.

use crate::doctor::diagnosis::{causes_for, diagnose, evidence_line};
use crate::doctor::knowledge::Cost;
use crate::doctor::{Context, Diagnosis, Knowledge, View, WizardState, reading};
use egui::{RichText, Ui};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Language of the wizard's texts (the knowledge files also ship others).
const LANG: &str = "en";

#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DoctorView {
    /// The pasted error message, kept between sessions so a long log is not lost.
    pub message: String,
    /// Where the wizard stands; `None` before it starts.
    pub wizard: Option<WizardState>,
    /// What reading the message found, in words.
    #[serde(skip)]
    note: Option<String>,
    /// Workload fields of the fix whose "Open in planner" was clicked, for the app to hand to
    /// the planner (`WorkloadFile::with_fields`); taken by the app in the same frame.
    #[serde(skip)]
    pub open_in_planner: Option<BTreeMap<String, String>>,
}

impl DoctorView {
    pub fn ui(&mut self, ui: &mut Ui) {
        let kb = Knowledge::get();
        egui::Panel::left("doctor_input").resizable(true).default_size(460.0).show(ui, |ui| {
            ui.heading("What went wrong?");
            ui.label("Paste the error message (for example a “CUDA out of memory” traceback), or start without one:");
            let label = ui.label("Error message");
            egui::ScrollArea::vertical().max_height(320.0).show(ui, |ui| {
                let edit = egui::TextEdit::multiline(&mut self.message)
                    .desired_rows(14)
                    .desired_width(f32::INFINITY)
                    .code_editor()
                    .show(ui);
                edit.response.response.labelled_by(label.id);
            });
            ui.horizontal(|ui| {
                if ui.button("Read message").clicked() {
                    self.start(kb, true);
                }
                if ui.button("Start without a message").clicked() {
                    self.start(kb, false);
                }
            });
            if let Some(n) = &self.note {
                ui.label(n);
            }
        });
        egui::CentralPanel::default().show(ui, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| self.wizard_ui(ui, kb));
        });
    }

    /// Says why the planner could not take a fix's fields, in the tab where it was clicked.
    pub fn planner_refused(&mut self, why: String) {
        self.note = Some(format!("Cannot open this fix in the planner: {why}"));
    }

    /// Starts the wizard at its root, with what the message shows when `read` is set.
    fn start(&mut self, kb: &Knowledge, read: bool) {
        let text = self.message.trim();
        let reading = if read && !text.is_empty() {
            match reading::read(text, kb, None) {
                Ok(r) => Some(r),
                Err(e) => {
                    self.note = Some(e);
                    return;
                }
            }
        } else {
            None
        };
        self.note = Some(match &reading {
            Some(r) if r.recognised() => format!("Recognised: {}", r.signatures.join(", ")),
            Some(_) => "No known GPU error in this text; answer the questions instead.".into(),
            None => "Answer the questions below.".into(),
        });
        let observations = Context::default().observations(reading.as_ref());
        match WizardState::start(kb, &kb.root, observations) {
            Ok(w) => self.wizard = Some(w),
            Err(e) => self.note = Some(e),
        }
    }

    fn wizard_ui(&mut self, ui: &mut Ui, kb: &Knowledge) {
        let Some(w) = &mut self.wizard else {
            ui.weak("The wizard starts when you read a message or start without one.");
            return;
        };
        let view = match w.view(kb, LANG) {
            Ok(v) => v,
            Err(e) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
                if ui.button("Restart").clicked() {
                    self.wizard = None;
                }
                return;
            }
        };
        if !w.observations.is_empty() {
            ui.strong("Evidence");
            for o in &w.observations {
                ui.label(format!("• {}", evidence_line(kb, o, LANG)));
            }
            ui.add_space(6.0);
        }
        for step in w.history(kb, LANG) {
            let line = format!("{} → {}", step.question, step.answer);
            match step.because {
                Some(b) => ui.weak(format!("{line}   (answered from the evidence: {b})")),
                None => ui.weak(line),
            };
        }
        ui.add_space(6.0);
        let mut restart = false;
        ui.horizontal(|ui| {
            if ui
                .add_enabled(w.path.iter().any(|s| !s.auto), egui::Button::new("Back"))
                .clicked()
            {
                w.back();
            }
            restart = ui.button("Restart").clicked();
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
                    ui.strong("What the evidence points at so far");
                    let d = diagnose(kb, &causes, &w.observations, LANG);
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

fn cost_title(c: Cost) -> &'static str {
    match c {
        Cost::Free => "free",
        Cost::Code => "code change",
        Cost::Quality => "quality trade-off",
        Cost::Hardware => "hardware",
    }
}

/// The causes and fixes; returns the planner fields of the fix whose "Open in planner" was
/// clicked.
fn diagnosis_ui(ui: &mut Ui, d: &Diagnosis) -> Option<BTreeMap<String, String>> {
    let mut open = None;
    ui.add_space(6.0);
    ui.label(RichText::new("Likely causes").strong().size(16.0));
    for c in &d.causes {
        ui.strong(&c.title);
        ui.label(&c.why);
        for e in &c.evidence {
            ui.weak(format!("seen: {e}"));
        }
        ui.add_space(4.0);
    }
    ui.add_space(6.0);
    ui.label(RichText::new("Fixes, cheapest first").strong().size(16.0));
    for f in &d.fixes {
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new(format!("[{}]", cost_title(f.cost))).weak());
            ui.label(&f.text);
        });
        ui.horizontal(|ui| {
            if let Some(copy) = &f.copy {
                ui.code(copy);
                if ui.button("Copy").clicked() {
                    ui.ctx().copy_text(copy.clone());
                }
            }
            if let Some(fields) = &f.planner {
                let what = fields
                    .iter()
                    .map(|(k, v)| format!("{k} = {v}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                if ui
                    .button("Open in planner")
                    .on_hover_text(format!("Plans the current workload with {what}"))
                    .clicked()
                {
                    open = Some(fields.clone());
                }
            }
        });
    }
    open
}
