//! Doctor tab: a box to paste an error message. The wizard and the message reader come from the
//! doctor engine (`crate::doctor`) once it is part of the build; this view only collects input.

use egui::Ui;
use serde::{Deserialize, Serialize};

#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DoctorView {
    /// The pasted error message, kept between sessions so a long log is not lost.
    pub message: String,
}

impl DoctorView {
    pub fn ui(&mut self, ui: &mut Ui) {
        egui::CentralPanel::default().show(ui, |ui| {
            ui.heading("What went wrong?");
            ui.label("Paste the error message (for example a “CUDA out of memory” traceback):");
            let label = ui.label("Error message");
            let edit = egui::TextEdit::multiline(&mut self.message)
                .desired_rows(12)
                .desired_width(f32::INFINITY)
                .code_editor()
                .show(ui);
            edit.response.response.labelled_by(label.id);
            ui.add_space(8.0);
            ui.weak(
                "Reading the message and the step-by-step wizard arrive with the doctor engine.",
            );
        });
    }
}
