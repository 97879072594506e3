//! The monitor's panels around the plots: the no-GPU panel, the alert banner and the process
//! table.

use crate::telemetry::GpuSample;
use crate::telemetry::detect::{Alert, Severity};
use crate::ui::i18n::tr;
use crate::units::human;
use egui::Ui;

/// The panel shown when no GPU can be read; true when the user asked for demo data.
pub(super) fn no_source_ui(ui: &mut Ui, why: &str) -> bool {
    ui.add_space(20.0);
    ui.vertical_centered(|ui| {
        ui.heading(tr("No GPU readings"));
        ui.label(why);
        ui.label(tr("The planner and the doctor work without a GPU."));
        ui.add_space(8.0);
        ui.button(tr("Show demo data")).clicked()
    })
    .inner
}

/// The newest alerts, with the numbers behind each.
pub(super) fn alerts_ui(ui: &mut Ui, alerts: &[Alert]) {
    for a in alerts.iter().rev().take(3) {
        let color = match a.severity {
            Severity::Critical => ui.visuals().error_fg_color,
            Severity::Warning => ui.visuals().warn_fg_color,
            Severity::Info => ui.visuals().text_color(),
        };
        egui::Frame::group(ui.style())
            .stroke(egui::Stroke::new(1.0, color))
            .show(ui, |ui| {
                ui.colored_label(color, format!("{}: {}", a.gpu_name, a.message));
                for e in &a.evidence {
                    ui.weak(e);
                }
            });
    }
}

/// Name, pid, memory and share of the card of each process holding memory.
pub(super) fn processes_ui(ui: &mut Ui, g: &GpuSample, total: u64) {
    let procs = g.processes.as_deref().unwrap_or_default();
    if procs.is_empty() {
        ui.weak(tr(
            "No process holds memory on this GPU (or the driver does not say).",
        ));
        return;
    }
    egui::Grid::new(("processes", g.index))
        .striped(true)
        .num_columns(4)
        .spacing([16.0, 4.0])
        .show(ui, |ui| {
            for h in ["Process", "PID", "Memory", "Share of card"] {
                ui.strong(tr(h));
            }
            ui.end_row();
            for p in procs {
                ui.label(p.name.as_deref().unwrap_or("?"));
                ui.label(p.pid.to_string());
                match p.used {
                    Some(u) if total > 0 => {
                        ui.label(human(u));
                        ui.label(format!("{:.0}%", u as f64 / total as f64 * 100.0));
                    }
                    Some(u) => {
                        ui.label(human(u));
                        ui.label("?");
                    }
                    None => {
                        ui.label("?");
                        ui.label("?");
                    }
                }
                ui.end_row();
            }
        });
}
