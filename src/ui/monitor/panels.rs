//! The monitor's panels around the plots: the no-GPU panel, the alert banner and the process
//! table.

use crate::memory::game::{GameWorkload, generic};
use crate::telemetry::detect::{Alert, Severity};
use crate::telemetry::{FoundProcess, GpuSample};
use crate::ui::i18n::{msg, tr, trf};
use crate::units::{gib_to_bytes, human};
use egui::Ui;
use std::collections::BTreeSet;

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
                let name = super::gpu_name(&a.gpu_name);
                ui.colored_label(color, format!("{name}: {}", msg(&a.message)));
                for e in &a.evidence {
                    ui.weak(msg(e));
                }
            });
    }
}

/// Widths of the process table's columns (name, PID, memory, share, shared). Fixed, because
/// egui's `Grid` remembers its column widths and asks for two more frames whenever one changes,
/// which the changing memory figures did about once a second.
const COLUMNS: [f32; 5] = [280.0, 70.0, 100.0, 100.0, 110.0];

/// Name, pid, memory and share of the card of each process holding memory, and, where the
/// source knows it (Windows' GPU counters, AMD GTT), the shared system memory the GPU holds for
/// it; the processes of a watched command (`run`) and the game's (`game`) are marked.
pub(super) fn processes_ui(
    ui: &mut Ui,
    g: &GpuSample,
    total: u64,
    run: &BTreeSet<u32>,
    game: Option<u32>,
) {
    let procs = g.processes.as_deref().unwrap_or_default();
    if procs.is_empty() {
        ui.weak(tr(
            "No process holds memory on this GPU (or the driver does not say).",
        ));
        return;
    }
    let with_shared = procs.iter().any(|p| p.shared.is_some());
    let columns = if with_shared { 5 } else { 4 };
    let header = ["Process", "PID", "Memory", "Share of card", "Shared memory"]
        .map(|h| egui::RichText::new(tr(h)).strong().into());
    row_ui(ui, &header[..columns], false);
    for (i, p) in procs.iter().enumerate() {
        let (memory, share) = match p.used {
            Some(u) if total > 0 => (human(u), format!("{:.0}%", u as f64 / total as f64 * 100.0)),
            Some(u) => (human(u), "?".into()),
            None => ("?".into(), "?".into()),
        };
        let name = p.name.clone().unwrap_or_else(|| "?".into());
        let name: egui::WidgetText = if run.contains(&p.pid) {
            egui::RichText::new(trf("{name} (watched run)", &[("name", &name)]))
                .strong()
                .color(ui.visuals().selection.stroke.color)
                .into()
        } else if game == Some(p.pid) {
            egui::RichText::new(trf("{name} (the game)", &[("name", &name)]))
                .strong()
                .into()
        } else {
            name.into()
        };
        let shared = p.shared.map_or("?".into(), human);
        let cells = [
            name,
            p.pid.to_string().into(),
            memory.into(),
            share.into(),
            shared.into(),
        ];
        row_ui(ui, &cells[..columns], i % 2 == 0);
    }
}

/// The game plan's budget for one process on this card (`GameWorkload::check_on`: the card
/// less the planned other programs and the Windows desktop's reserve, what DXGI's budget lets
/// one process have) drawn as a bar against the dedicated memory the game's process holds now;
/// its shared memory (system RAM, outside the budget) is named beside it.
pub(super) fn game_budget_ui(
    ui: &mut Ui,
    g: &GpuSample,
    total: u64,
    w: &GameWorkload,
    found: FoundProcess,
) {
    let Some(p) = g.processes.iter().flatten().find(|p| p.pid == found.pid) else {
        return;
    };
    let Some(used) = p.used else { return };
    let c = w.check_on(total, used);
    ui.add_space(6.0);
    ui.strong(trf(
        "The game plan's budget for one process on this card: {budget}",
        &[("budget", &human(c.budget_bytes))],
    ));
    ui.weak(trf(
        "{total} less {other} for other programs (as planned) and {reserve} for the Windows desktop and driver",
        &[
            ("total", &human(c.capacity_bytes)),
            ("other", &human(w.run.other_processes_bytes)),
            ("reserve", &human(gib_to_bytes(generic::OS_RESERVE_GIB))),
        ],
    ));
    if !c.card_reported {
        ui.weak(tr(
            "This GPU does not report its size: the budget is the planned card's.",
        ));
    }
    let name = p.name.clone().unwrap_or_else(|| "?".into());
    let text = match p.shared {
        Some(sh) => trf(
            "{name}: {used} dedicated of {budget}, + {shared} shared",
            &[
                ("name", &name),
                ("used", &human(used)),
                ("budget", &human(c.budget_bytes)),
                ("shared", &human(sh)),
            ],
        ),
        None => trf(
            "{name}: {used} of {budget}",
            &[
                ("name", &name),
                ("used", &human(used)),
                ("budget", &human(c.budget_bytes)),
            ],
        ),
    };
    let fill = if c.budget_bytes == 0 {
        1.0
    } else {
        (used as f64 / c.budget_bytes as f64).min(1.0)
    };
    let mut bar = egui::ProgressBar::new(fill as f32)
        .text(text)
        .desired_width(COLUMNS.iter().sum());
    match c.over_bytes() {
        Some(over) => {
            bar = bar.fill(ui.visuals().error_fg_color);
            ui.add(bar);
            ui.colored_label(
                ui.visuals().error_fg_color,
                trf(
                    "Over the game's budget by {bytes}: the driver pages textures over PCIe (stutter, blurry textures)",
                    &[("bytes", &human(over))],
                ),
            );
        }
        None => {
            ui.add(bar);
            ui.label(trf(
                "{bytes} left in the game's budget",
                &[("bytes", &human(c.left_bytes()))],
            ));
        }
    }
    if !found.by_name {
        ui.weak(match &w.game {
            Some(t) => trf(
                "Taken as the game: the process holding the most memory (none is named like {title})",
                &[("title", &t.name)],
            ),
            None => tr(
                "Taken as the game: the process holding the most memory (the plan names no title)",
            )
            .to_string(),
        });
    }
}

/// One row of the process table; `stripe` shades it, as a striped grid would.
fn row_ui(ui: &mut Ui, cells: &[egui::WidgetText], stripe: bool) {
    let height = ui.spacing().interact_size.y;
    let width: f32 = COLUMNS[..cells.len()].iter().sum();
    let (row, _) = ui.allocate_exact_size(egui::vec2(width, height), egui::Sense::hover());
    if stripe {
        ui.painter()
            .rect_filled(row, 0.0, ui.visuals().faint_bg_color);
    }
    let mut x = row.left() + 4.0;
    for (w, text) in COLUMNS.iter().zip(cells.iter().cloned()) {
        let cell =
            egui::Rect::from_min_size(egui::pos2(x, row.top()), egui::vec2(*w - 8.0, height));
        ui.new_child(
            egui::UiBuilder::new()
                .max_rect(cell)
                .layout(egui::Layout::left_to_right(egui::Align::Center)),
        )
        .add(egui::Label::new(text).truncate());
        x += w;
    }
}
