//! The verdict in words and the memory part by part: the stacked bar against the card and the
//! safety margin, the peaks as each tool reports them, and the estimator's warnings.

use super::Estimate;
use crate::memory::any::AnyWorkload;
use crate::plan::verdict::{Fit, Verdict};
use crate::ui::i18n::{msg, tr, tr_template, trf};
use crate::ui::{bar, glossary};
use crate::units::human;
use egui::{RichText, Ui};

/// The plan's verdict in the interface language, figures kept (`plan::verdict::Verdict`).
pub fn verdict(v: &Verdict) -> String {
    msg(&v.message())
}

/// The card and the verdict, large; what the engine would use below it when that is not
/// what the run needs.
pub fn verdict_ui(ui: &mut Ui, e: &Estimate) {
    let v = &e.source.1.verdict;
    let gpu = &e.gpu_name;
    ui.heading(match e.source.0 {
        AnyWorkload::Llm(_) => trf("Per GPU on {gpu}", &[("gpu", gpu)]),
        _ => trf("On {gpu}", &[("gpu", gpu)]),
    });
    let color = match v.fit {
        Fit::Fits => ui.visuals().widgets.active.fg_stroke.color,
        Fit::Streams { .. } => ui.visuals().warn_fg_color,
        Fit::Short => ui.visuals().error_fg_color,
    };
    ui.label(RichText::new(verdict(v)).size(20.0).strong().color(color));
    if let Some(m) = v.use_message() {
        ui.label(msg(&m));
    }
}

/// The bar, its legend, the peaks (of the PyTorch-style tools; a game has none of those) and
/// the warnings.
pub fn details_ui(ui: &mut Ui, e: &Estimate) {
    let b = &e.breakdown;
    let parts: Vec<bar::Segment> = b
        .components
        .iter()
        .map(|c| bar::Segment {
            label: tr(&c.label),
            bytes: c.bytes,
            about: glossary::part(c.id, &c.label),
        })
        .collect();
    let v = &e.source.1.verdict;
    let streamed = match (v.fit, v.pace_template()) {
        (Fit::Streams { streamed_bytes, .. }, Some((template, values))) => Some(bar::Streamed {
            bytes: streamed_bytes,
            text: tr_template(template, &values),
        }),
        _ => None,
    };
    bar::stacked_bar(
        ui,
        &parts,
        b.capacity_bytes,
        v.margin_bytes,
        streamed.as_ref(),
    );
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
            ui.colored_label(ui.visuals().warn_fg_color, msg(w));
        }
    }
}
