//! Games: the title picker over the game presets, the display resolution and the settings the
//! game model has; the advice: verdict against the budget the OS gives a game, what running
//! out looks like, and which setting to lower first with what it saves.

use crate::memory::WorkloadFile;
use crate::memory::game::{GameCatalog, GameRun, TextureQuality, Upscaler};
use crate::plan::game::{GameAdvice, Verdict};
use crate::types::workload::ModelSection;
use crate::ui::i18n::{tr, trf};
use crate::ui::widgets::{flag, other_programs, pick, pick_name, search_pick};
use crate::units::human;
use egui::Ui;

/// Display resolutions offered: the common monitor sizes of the Steam hardware survey (16:9 at
/// 720p, 1080p, 1440p, 4K and the 21:9 ultrawides).
const RESOLUTIONS: &[&str] = &[
    "1280x720",
    "1920x1080",
    "2560x1080",
    "2560x1440",
    "3440x1440",
    "3840x2160",
];

/// The title and settings of a game; `r` is the last game run that resolved.
pub fn inputs_ui(
    ui: &mut Ui,
    w: &mut WorkloadFile,
    r: &GameRun,
    filter: &mut String,
    cap_gib: f64,
) {
    let cat = GameCatalog::get();
    ui.heading(tr("Game title"));
    let current = w.model.preset.as_deref().and_then(|p| cat.game(p).ok());
    let generic = tr("Any game (generic model)");
    let text = current.map_or_else(|| generic.to_string(), |g| g.name.clone());
    // The empty id stands for no title: the generic model.
    let items = std::iter::once(("", generic.to_string()))
        .chain(cat.games.iter().map(|g| (g.id.as_str(), g.name.clone())));
    if let Some(id) = search_pick(
        ui,
        tr("Title"),
        text,
        filter,
        items,
        Some(current.map_or("", |g| g.id.as_str())),
    ) {
        w.model = ModelSection {
            preset: (!id.is_empty()).then_some(id),
            ..Default::default()
        };
    }

    ui.heading(tr("Settings"));
    let f = &mut w.run;
    if let Some(v) = pick_name(ui, tr("Resolution"), RESOLUTIONS, &r.resolution.to_string()) {
        f.resolution = Some(v);
    }
    if let Some(v) = pick(
        ui,
        tr("Texture quality"),
        TextureQuality::ALL,
        r.texture_quality,
    ) {
        f.texture_quality = Some(v.to_string());
    }
    if let Some(v) = pick(ui, tr("Upscaler"), Upscaler::ALL, r.upscaler) {
        f.upscaler = Some(v.to_string());
    }
    if let Some(v) = flag(ui, tr("Ray tracing"), r.ray_tracing) {
        f.ray_tracing = Some(v);
    }
    if let Some(v) = flag(ui, tr("Frame generation"), r.frame_generation) {
        f.frame_generation = Some(v);
    }
    if let Some(v) = other_programs(ui, r.other_processes_bytes, cap_gib) {
        f.other_processes_gib = Some(v);
    }
}

/// The advice; true when "Apply plan" (the steps that make the game fit) was clicked.
pub fn advice_ui(ui: &mut Ui, a: &GameAdvice) -> bool {
    ui.add_space(6.0);
    let room = human(a.headroom_bytes.unsigned_abs());
    let args: [(&str, &dyn std::fmt::Display); 3] = [
        ("use", &human(a.use_bytes)),
        ("budget", &human(a.budget_bytes)),
        ("room", &room),
    ];
    let (text, color) = match a.verdict {
        Verdict::Fits => (
            trf(
                "Within the game's budget: uses {use} of {budget}, {room} left",
                &args,
            ),
            ui.visuals().widgets.active.fg_stroke.color,
        ),
        Verdict::Tight => (
            trf("Tight: uses {use} of {budget}, only {room} left", &args),
            ui.visuals().warn_fg_color,
        ),
        Verdict::OverBudget => (
            trf("Over budget: uses {use} of {budget}, {room} short", &args),
            ui.visuals().error_fg_color,
        ),
    };
    ui.colored_label(color, text);
    for s in &a.signs {
        ui.label(format!("• {}", tr(s)));
    }
    if !a.lower_first.is_empty() {
        ui.add_space(6.0);
        ui.strong(tr("Lower first (most memory for the least quality)"));
        egui::Grid::new("lower_first")
            .num_columns(2)
            .spacing([16.0, 4.0])
            .show(ui, |ui| {
                for c in &a.lower_first {
                    let (what, from, to) = (tr(&c.setting), tr(&c.from), tr(&c.to));
                    ui.label(format!("{what}: {from} → {to}"));
                    ui.label(trf("saves {bytes}", &[("bytes", &human(c.saves_bytes))]));
                    ui.end_row();
                }
            });
    }
    if a.to_fit.is_empty() {
        return false;
    }
    let steps: Vec<String> = a
        .to_fit
        .iter()
        .map(|c| format!("{}: {} → {}", tr(&c.setting), tr(&c.from), tr(&c.to)))
        .collect();
    ui.strong(trf(
        "Recommended plan: {plan}",
        &[("plan", &steps.join(" + "))],
    ));
    ui.button(tr("Apply plan")).clicked()
}
