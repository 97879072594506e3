//! The three lists of the catalog tab. The user's own entries come first, marked "yours", with
//! Plan, Edit and Delete; built-in entries have Plan and "Copy to my presets".

use super::form::{Form, FormKind};
use super::{Action, Pick};
use crate::catalog::Catalog;
use crate::catalog::GpuKind;
use crate::catalog::user::{UserGpu, UserModel, UserPresets};
use crate::memory::diffusion::catalog::DiffusionCatalog;
use crate::memory::game::catalog::GameCatalog;
use crate::ui::i18n::{tr, trf};
use egui::Ui;

type Hit<'a> = &'a dyn Fn(&[&str]) -> bool;

/// The mark on the user's rows, and its column's empty cell on the others.
fn mark(ui: &mut Ui, yours: bool) {
    if yours {
        ui.colored_label(ui.visuals().hyperlink_color, tr("yours"))
            .on_hover_text(tr("One of your own presets"));
    } else {
        ui.label("");
    }
}

fn plan_button(ui: &mut Ui, name: &str) -> bool {
    ui.button(tr("Plan"))
        .on_hover_text(trf("Open the planner with {name}", &[("name", &name)]))
        .clicked()
}

/// Edit and Delete of a user's row.
fn own_buttons(
    ui: &mut Ui,
    kind: FormKind,
    id: &str,
    edit: impl FnOnce() -> Form,
) -> Option<Action> {
    let mut action = None;
    if ui.button(tr("Edit")).clicked() {
        action = Some(Action::Form(edit()));
    }
    if ui.button(tr("Delete")).clicked() {
        action = Some(Action::AskDelete(kind, id.to_string()));
    }
    action
}

fn grid(ui: &mut Ui, id: &str, headers: &[&'static str], rows: impl FnOnce(&mut Ui)) {
    egui::Grid::new(id)
        .striped(true)
        .num_columns(headers.len())
        .spacing([16.0, 4.0])
        .show(ui, |ui| {
            for h in headers {
                ui.strong(tr(h));
            }
            ui.end_row();
            rows(ui);
        });
}

/// A card's kind in words, in the interface language.
fn kind_text(k: GpuKind) -> &'static str {
    tr(match k {
        GpuKind::Desktop => "desktop",
        GpuKind::Laptop => "laptop",
        GpuKind::Workstation => "workstation",
        GpuKind::Datacenter => "datacenter",
        GpuKind::Unified => "unified",
    })
}

pub(super) fn gpus_ui(ui: &mut Ui, user: &UserPresets, hit: Hit, action: &mut Option<Action>) {
    let headers = ["", "GPU", "Memory", "Bandwidth", "Kind", ""];
    grid(ui, "catalog_gpus", &headers, |ui| {
        for g in user.gpus.iter().filter(|g| hit(&[&g.id, &g.name])) {
            mark(ui, true);
            ui.label(&g.name);
            ui.label(format!("{} GiB", g.vram_gib));
            ui.label(
                g.bandwidth_gbs
                    .map_or("-".into(), |b| format!("{b:.0} GB/s")),
            );
            ui.label("");
            ui.horizontal(|ui| {
                if plan_button(ui, &g.name) {
                    *action = Some(Action::Pick(Pick::UserGpu(g.section())));
                }
                let edit = || Form::gpu(Some(g), Some(g.id.clone()));
                if let Some(a) = own_buttons(ui, FormKind::Gpu, &g.id, edit) {
                    *action = Some(a);
                }
            });
            ui.end_row();
        }
        let gpus = Catalog::get().gpus.iter();
        for g in gpus.filter(|g| hit(&[&g.id, &g.name])) {
            mark(ui, false);
            ui.label(&g.name).on_hover_text(&g.source);
            ui.label(format!("{} GiB", g.vram_gib));
            ui.label(format!("{:.0} GB/s", g.bandwidth_gbs));
            ui.label(kind_text(g.kind));
            ui.horizontal(|ui| {
                if plan_button(ui, &g.name) {
                    *action = Some(Action::Pick(Pick::Gpu(g.id.clone())));
                }
                if ui.button(tr("Copy to my presets")).clicked() {
                    let copy = UserGpu::from_builtin(g);
                    *action = Some(Action::Form(Form::gpu(Some(&copy), None)));
                }
            });
            ui.end_row();
        }
    });
}

pub(super) fn models_ui(ui: &mut Ui, user: &UserPresets, hit: Hit, action: &mut Option<Action>) {
    let headers = [
        "",
        "Model",
        "Parameters",
        "Layers",
        "Context",
        "Weights",
        "",
    ];
    // What a plan uses unless told otherwise: the published weights' own format.
    let default_weights = crate::types::workload::Run::default().weights;
    let context = |c: Option<u32>| c.map_or("-".into(), |c| c.to_string());
    grid(ui, "catalog_models", &headers, |ui| {
        for m in user.models.iter().filter(|m| hit(&[&m.id, &m.name])) {
            mark(ui, true);
            ui.label(&m.name);
            ui.label(format!("{:.2} B", m.params / 1e9));
            ui.label(m.layers.to_string());
            ui.label(context(m.max_context));
            ui.label(default_weights.label());
            ui.horizontal(|ui| {
                if plan_button(ui, &m.name) {
                    *action = Some(Action::Pick(Pick::UserModel(m.section())));
                }
                let edit = || Form::model(Some(m), Some(m.id.clone()));
                if let Some(a) = own_buttons(ui, FormKind::Model, &m.id, edit) {
                    *action = Some(a);
                }
            });
            ui.end_row();
        }
        let models = Catalog::get().models.iter();
        for m in models.filter(|m| hit(&[&m.id, &m.name, m.hf_id.as_deref().unwrap_or("")])) {
            mark(ui, false);
            let name = ui.label(&m.name);
            if let Some(hf) = &m.hf_id {
                name.on_hover_text(hf);
            }
            ui.label(format!("{:.2} B", m.arch.params / 1e9));
            ui.label(m.arch.layers.to_string());
            ui.label(context(m.arch.max_context));
            ui.label(m.format.unwrap_or(default_weights).label());
            ui.horizontal(|ui| {
                if plan_button(ui, &m.name) {
                    *action = Some(Action::Pick(Pick::Model(m.id.clone())));
                }
                // Mixture-of-experts and latent-attention models have no [model] section form.
                let copy = UserModel::from_builtin(m);
                let button = ui
                    .add_enabled(copy.is_some(), egui::Button::new(tr("Copy to my presets")))
                    .on_disabled_hover_text(tr(
                        "Your own presets describe dense models; this one has experts or latent attention",
                    ));
                if button.clicked()
                    && let Some(c) = copy
                {
                    *action = Some(Action::Form(Form::model(Some(&c), None)));
                }
            });
            ui.end_row();
        }
    });
}

/// Image and video models, with what sets their memory: size and native resolution.
pub(super) fn diffusion_ui(ui: &mut Ui, hit: Hit, action: &mut Option<Action>) {
    let headers = ["Model", "Parameters", "Native size", "Text encoders", ""];
    grid(ui, "catalog_diffusion", &headers, |ui| {
        let models = DiffusionCatalog::get().models.iter();
        for m in models.filter(|m| hit(&[&m.id, &m.name])) {
            ui.label(&m.name);
            ui.label(format!("{:.2} B", m.params / 1e9));
            ui.label(format!("{}×{}", m.native_width, m.native_height));
            ui.label(m.text_encoders.join(", "));
            if plan_button(ui, &m.name) {
                *action = Some(Action::Pick(Pick::Diffusion(m.id.clone())));
            }
            ui.end_row();
        }
    });
}

/// Games, with the measurements their presets are built on.
pub(super) fn games_ui(ui: &mut Ui, hit: Hit, action: &mut Option<Action>) {
    let headers = ["Game", "Engine", "Measured VRAM", ""];
    grid(ui, "catalog_games", &headers, |ui| {
        for g in GameCatalog::get()
            .games
            .iter()
            .filter(|g| hit(&[&g.id, &g.name]))
        {
            ui.label(&g.name);
            ui.label(&g.engine);
            let seen: Vec<String> = g
                .measured
                .iter()
                .map(|m| {
                    let rt = if m.ray_tracing {
                        tr(", ray tracing")
                    } else {
                        ""
                    };
                    trf(
                        "{gib} GiB at {res}, {tex} textures{rt}",
                        &[
                            ("gib", &m.vram_gib),
                            ("res", &m.resolution),
                            ("tex", &m.texture_quality.as_str()),
                            ("rt", &rt),
                        ],
                    )
                })
                .collect();
            // One line per measurement: joined on one line, a game's few measurements ran past
            // the window at 800×600. Unwrapped: a grid's cell wraps at the width its column had
            // the frame before, so a line wrapped once would keep the column narrow.
            ui.vertical(|ui| {
                for (seen, m) in seen.iter().zip(&g.measured) {
                    ui.add(egui::Label::new(seen).extend())
                        .on_hover_text(&m.source);
                }
            });
            if plan_button(ui, &g.name) {
                *action = Some(Action::Pick(Pick::Game(g.id.clone())));
            }
            ui.end_row();
        }
    });
}
