//! Catalog tab: browse the built-in GPU and model presets, and send one to the planner.

use crate::catalog::Catalog;
use egui::Ui;
use serde::{Deserialize, Serialize};

/// Which list the tab shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Shelf {
    #[default]
    Gpus,
    Models,
}

/// A preset the user asked to plan with; the app hands it to the planner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    Gpu(String),
    Model(String),
}

#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CatalogView {
    pub shelf: Shelf,
    #[serde(skip)]
    filter: String,
}

impl CatalogView {
    #[must_use]
    pub fn ui(&mut self, ui: &mut Ui) -> Option<Pick> {
        let mut pick = None;
        egui::CentralPanel::default().show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.selectable_value(&mut self.shelf, Shelf::Gpus, "GPUs");
                ui.selectable_value(&mut self.shelf, Shelf::Models, "Models");
                ui.separator();
                let search = ui.label("Search");
                ui.text_edit_singleline(&mut self.filter)
                    .labelled_by(search.id);
            });
            ui.separator();
            let needle = self.filter.to_lowercase();
            let hit = |parts: &[&str]| {
                needle.is_empty() || parts.join(" ").to_lowercase().contains(&needle)
            };
            egui::ScrollArea::vertical().show(ui, |ui| match self.shelf {
                Shelf::Gpus => gpus_ui(ui, &hit, &mut pick),
                Shelf::Models => models_ui(ui, &hit, &mut pick),
            });
        });
        pick
    }
}

fn gpus_ui(ui: &mut Ui, hit: &dyn Fn(&[&str]) -> bool, pick: &mut Option<Pick>) {
    egui::Grid::new("catalog_gpus")
        .striped(true)
        .num_columns(5)
        .spacing([16.0, 4.0])
        .show(ui, |ui| {
            for h in ["GPU", "Memory", "Bandwidth", "Kind", ""] {
                ui.strong(h);
            }
            ui.end_row();
            for g in Catalog::get()
                .gpus
                .iter()
                .filter(|g| hit(&[&g.id, &g.name]))
            {
                ui.label(&g.name).on_hover_text(&g.source);
                ui.label(format!("{} GiB", g.vram_gib));
                ui.label(format!("{:.0} GB/s", g.bandwidth_gbs));
                ui.label(format!("{:?}", g.kind).to_lowercase());
                if ui
                    .button("Plan")
                    .on_hover_text(format!("Open the planner with the {}", g.name))
                    .clicked()
                {
                    *pick = Some(Pick::Gpu(g.id.clone()));
                }
                ui.end_row();
            }
        });
}

fn models_ui(ui: &mut Ui, hit: &dyn Fn(&[&str]) -> bool, pick: &mut Option<Pick>) {
    egui::Grid::new("catalog_models")
        .striped(true)
        .num_columns(5)
        .spacing([16.0, 4.0])
        .show(ui, |ui| {
            for h in ["Model", "Parameters", "Layers", "Context", ""] {
                ui.strong(h);
            }
            ui.end_row();
            let models = Catalog::get().models.iter();
            for m in models.filter(|m| hit(&[&m.id, &m.name, m.hf_id.as_deref().unwrap_or("")])) {
                let name = ui.label(&m.name);
                if let Some(hf) = &m.hf_id {
                    name.on_hover_text(hf);
                }
                ui.label(format!("{:.2} B", m.arch.params / 1e9));
                ui.label(m.arch.layers.to_string());
                ui.label(m.arch.max_context.map_or("-".into(), |c| c.to_string()));
                if ui
                    .button("Plan")
                    .on_hover_text(format!("Open the planner with {}", m.name))
                    .clicked()
                {
                    *pick = Some(Pick::Model(m.id.clone()));
                }
                ui.end_row();
            }
        });
}
