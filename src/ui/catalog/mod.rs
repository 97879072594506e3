//! Catalog tab: browse the built-in GPUs, models, image models and games; add, edit and delete the user's own
//! GPUs and models (`catalog::user`, kept in `user-presets.toml`); send one to the planner.
//!
//! A user preset goes to the planner as its figures written into the workload (see
//! `catalog::user` for why), so the planner needs no access to the user's file.

mod form;
mod shelves;

use crate::catalog::user::{UserGpu, UserModel, UserPresets, UserStore};
use crate::types::workload::{GpuSection, ModelSection};
use crate::ui::i18n::{msg, tr, trf};
use crate::ui::widgets::Said;
use egui::Ui;
use form::{Entry, Form, FormEvent, FormKind};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Which list the tab shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Shelf {
    #[default]
    Gpus,
    Models,
    /// Image and video models (`presets/diffusion.toml`).
    Diffusion,
    Games,
}

/// A preset the user asked to plan with; the app hands it to the planner.
#[derive(Debug, Clone, PartialEq)]
pub enum Pick {
    /// A built-in GPU, by id.
    Gpu(String),
    /// A built-in model, by id.
    Model(String),
    /// One of the user's GPUs, as the workload's `[gpu]` it stands for.
    UserGpu(GpuSection),
    /// One of the user's models, as the workload's `[model]` it stands for.
    UserModel(ModelSection),
    /// A built-in image or video model, by id.
    Diffusion(String),
    /// A built-in game, by id.
    Game(String),
}

/// What a row's buttons asked for.
enum Action {
    Pick(Pick),
    /// Open the form (add, edit, or copy a built-in).
    Form(Form),
    /// Ask before deleting the user's entry.
    AskDelete(FormKind, String),
}

#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CatalogView {
    pub shelf: Shelf,
    #[serde(skip)]
    filter: String,
    /// The user's presets, opened on first show (`use_file` opens another file, for tests).
    #[serde(skip)]
    user: Option<UserStore>,
    #[serde(skip)]
    form: Option<Form>,
    /// A delete waiting for the user's yes.
    #[serde(skip)]
    confirm: Option<(FormKind, String)>,
    /// Outcome of the last save, shown above the list.
    #[serde(skip)]
    status: crate::ui::widgets::Status,
}

impl CatalogView {
    /// Uses the presets file at `path` instead of the one in the config directory.
    pub fn use_file(&mut self, path: PathBuf) {
        self.user = Some(UserStore::open(path));
    }

    fn store(&mut self) -> &mut UserStore {
        self.user.get_or_insert_with(UserStore::open_default)
    }

    #[must_use]
    pub fn ui(&mut self, ui: &mut Ui) -> Option<Pick> {
        let mut action = None;
        let shelf_before = self.shelf;
        egui::CentralPanel::default().show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.selectable_value(&mut self.shelf, Shelf::Gpus, tr("GPUs"));
                ui.selectable_value(&mut self.shelf, Shelf::Models, tr("Models"));
                ui.selectable_value(&mut self.shelf, Shelf::Diffusion, tr("Image models"));
                ui.selectable_value(&mut self.shelf, Shelf::Games, tr("Games"));
                ui.separator();
                let search = ui.label(tr("Search"));
                ui.text_edit_singleline(&mut self.filter)
                    .labelled_by(search.id);
                ui.separator();
                match self.shelf {
                    Shelf::Gpus if ui.button(tr("Add GPU…")).clicked() => {
                        action = Some(Action::Form(Form::gpu(None, None)));
                    }
                    Shelf::Models if ui.button(tr("Add model…")).clicked() => {
                        action = Some(Action::Form(Form::model(None, None)));
                    }
                    _ => {}
                }
            });
            if self.shelf != shelf_before {
                // The form and the delete question belong to the shelf they were opened on.
                self.form = None;
                self.confirm = None;
            }
            // One scroll area for the messages, the form and the list, so that a long form
            // never pushes its Save button off a small window.
            egui::ScrollArea::vertical().show(ui, |ui| self.body_ui(ui, &mut action));
        });
        match action? {
            Action::Pick(p) => return Some(p),
            Action::Form(f) => {
                self.form = Some(f);
                self.confirm = None;
            }
            Action::AskDelete(kind, id) => self.confirm = Some((kind, id)),
        }
        None
    }

    fn body_ui(&mut self, ui: &mut Ui, action: &mut Option<Action>) {
        self.messages_ui(ui);
        if let Some(event) = self.form.as_mut().and_then(|f| f.ui(ui)) {
            self.form_event(event);
        }
        self.confirm_ui(ui);
        ui.separator();
        let needle = self.filter.to_lowercase();
        let hit =
            |parts: &[&str]| needle.is_empty() || parts.join(" ").to_lowercase().contains(&needle);
        let shelf = self.shelf;
        let presets = &self.store().presets;
        match shelf {
            Shelf::Gpus => shelves::gpus_ui(ui, presets, &hit, action),
            Shelf::Models => shelves::models_ui(ui, presets, &hit, action),
            Shelf::Diffusion => shelves::diffusion_ui(ui, &hit, action),
            Shelf::Games => shelves::games_ui(ui, &hit, action),
        }
    }

    /// The notice about the file found at start (set aside, unreadable), and the last outcome.
    fn messages_ui(&mut self, ui: &mut Ui) {
        let store = self.store();
        if let Some(notice) = store.notice.clone() {
            let warn = ui.visuals().warn_fg_color;
            egui::Frame::group(ui.style()).show(ui, |ui| {
                // Moved aside, or (when saving is off) left where it is.
                let title = if store.blocked().is_some() {
                    tr("Your presets cannot be saved")
                } else {
                    tr("Your presets file was set aside")
                };
                ui.horizontal_wrapped(|ui| {
                    ui.colored_label(warn, title);
                    if ui.button(tr("Dismiss")).clicked() {
                        store.notice = None;
                    }
                });
                ui.label(notice);
            });
        }
        crate::ui::widgets::status_ui(ui, &self.status);
    }

    fn form_event(&mut self, event: FormEvent) {
        let FormEvent::Save(entry) = event else {
            self.form = None;
            return;
        };
        let Some(form) = self.form.as_mut() else {
            return;
        };
        let editing = form.editing.clone();
        let mut next = self
            .user
            .get_or_insert_with(UserStore::open_default)
            .presets
            .clone();
        let (put, name) = match entry {
            Entry::Gpu(g) => {
                let name = g.name.clone();
                (next.put(editing.as_deref(), g), name)
            }
            Entry::Model(m) => {
                let name = m.name.clone();
                (next.put(editing.as_deref(), m), name)
            }
        };
        if let Err(e) = put {
            form.reject(e);
            return;
        }
        let name = name.trim().to_string();
        self.save(
            next,
            Said::new(move || trf("Saved “{name}”", &[("name", &name)])),
        );
        if matches!(self.status, Some(Ok(_))) {
            self.form = None;
        }
    }

    /// Saves the user's presets; the status says where, or why not.
    fn save(&mut self, next: UserPresets, done: Said) {
        let store = self.store();
        let path = store.path.clone();
        let saved = store.save(next).map(|()| {
            Said::new(move || {
                trf(
                    "{done} in {path}",
                    &[("done", &done.now()), ("path", &path.display())],
                )
            })
        });
        self.status = Some(saved.map_err(|m| Said::new(move || msg(&m))));
    }

    fn confirm_ui(&mut self, ui: &mut Ui) {
        let Some((kind, id)) = self.confirm.clone() else {
            return;
        };
        let presets = &self.store().presets;
        let name = match kind {
            FormKind::Gpu => presets.get::<UserGpu>(&id).map(|g| g.name.clone()),
            FormKind::Model => presets.get::<UserModel>(&id).map(|m| m.name.clone()),
        };
        let Some(name) = name else {
            self.confirm = None;
            return;
        };
        let mut answer = None;
        ui.horizontal_wrapped(|ui| {
            ui.colored_label(
                ui.visuals().warn_fg_color,
                trf("Delete “{name}” from your presets?", &[("name", &name)]),
            );
            if ui.button(tr("Yes, delete")).clicked() {
                answer = Some(true);
            }
            if ui.button(tr("Keep it")).clicked() {
                answer = Some(false);
            }
        });
        match answer {
            Some(true) => {
                let mut next = presets.clone();
                match kind {
                    FormKind::Gpu => next.remove::<UserGpu>(&id),
                    FormKind::Model => next.remove::<UserModel>(&id),
                };
                let name = name.clone();
                self.save(
                    next,
                    Said::new(move || trf("Deleted “{name}”", &[("name", &name)])),
                );
                self.confirm = None;
                if self.form.as_ref().and_then(|f| f.editing.as_deref()) == Some(id.as_str()) {
                    self.form = None;
                }
            }
            Some(false) => self.confirm = None,
            None => {}
        }
    }
}
