//! The verdict in words and the memory part by part: the stacked bar against the card and the
//! safety margin, the peaks as each tool reports them, and the estimator's warnings.

use super::Estimate;
use crate::memory::Breakdown;
use crate::memory::any::AnyWorkload;
use crate::plan::search::SAFETY_MARGIN;
use crate::ui::bar;
use crate::ui::i18n::{tr, trf};
use crate::units::human;
use egui::{RichText, Ui};

/// The verdict in words: whether it fits, and by how much.
pub fn verdict(b: &Breakdown) -> String {
    let need = human(b.required_bytes());
    let cap = human(b.capacity_bytes);
    let room = b.headroom_bytes();
    let margin = human(room.unsigned_abs().min(u128::from(u64::MAX)) as u64);
    let args: [(&str, &dyn std::fmt::Display); 3] =
        [("need", &need), ("cap", &cap), ("margin", &margin)];
    if room >= 0 {
        trf("Fits: needs {need} of {cap}, {margin} headroom", &args)
    } else {
        trf("Does not fit: needs {need} of {cap}, {margin} short", &args)
    }
}

/// The card and the verdict, large.
pub fn verdict_ui(ui: &mut Ui, e: &Estimate) {
    let b = &e.breakdown;
    let gpu = &e.gpu_name;
    ui.heading(match e.source.0 {
        AnyWorkload::Llm(_) => trf("Per GPU on {gpu}", &[("gpu", gpu)]),
        _ => trf("On {gpu}", &[("gpu", gpu)]),
    });
    let color = if b.fits() {
        ui.visuals().widgets.active.fg_stroke.color
    } else {
        ui.visuals().error_fg_color
    };
    ui.label(RichText::new(verdict(b)).size(20.0).strong().color(color));
}

/// The bar, its legend, the peaks (of the PyTorch-style tools; a game has none of those) and
/// the warnings.
pub fn details_ui(ui: &mut Ui, e: &Estimate) {
    let b = &e.breakdown;
    let parts: Vec<(&str, u64)> = b
        .components
        .iter()
        .map(|c| (c.label.as_str(), c.bytes))
        .collect();
    let margin = (b.capacity_bytes as f64 * SAFETY_MARGIN) as u64;
    bar::stacked_bar(ui, &parts, b.capacity_bytes, margin);
    ui.add_space(6.0);
    bar::legend(ui, &parts);
    if !matches!(e.source.0, AnyWorkload::Game(_)) {
        ui.add_space(10.0);
        ui.heading(tr("Peak, as each tool reports it"));
        egui::Grid::new("peaks")
            .num_columns(2)
            .spacing([16.0, 4.0])
            .show(ui, |ui| {
                for (what, bytes) in [
                    (
                        tr("Live tensors (torch max_memory_allocated)"),
                        b.peak.tensors_bytes,
                    ),
                    (
                        tr("Reserved by the allocator (torch max_memory_reserved)"),
                        b.peak.reserved_bytes,
                    ),
                    (tr("Whole process (nvidia-smi)"), b.peak.process_bytes),
                    (tr("Card total, with other programs"), b.required_bytes()),
                ] {
                    ui.label(what);
                    ui.label(human(bytes));
                    ui.end_row();
                }
            });
    }
    if !b.warnings.is_empty() {
        ui.add_space(10.0);
        ui.heading(tr("Warnings"));
        for w in &b.warnings {
            ui.colored_label(ui.visuals().warn_fg_color, w);
        }
    }
}
