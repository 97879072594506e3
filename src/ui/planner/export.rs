//! The export section under the plan: the formats that apply to the planned workload (any
//! kind), a preview, copy and save, and a one-click "Save report…" for the Markdown report.

use crate::atomic_write::write_atomic;
use crate::export::{self, Basis, ExportKind};
use crate::memory::any::AnyWorkload;
use crate::plan::PlanResult;
use crate::ui::files::Dialogs;
use crate::ui::i18n::{tr, trf};
use crate::ui::widgets::{Said, Status, explained, status_ui};
use egui::{ComboBox, RichText, Ui};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// What exports are rendered from: a workload and its plan.
type Source = Arc<(AnyWorkload, PlanResult)>;

/// The export section: a format, a preview of the text, and buttons to copy or save it.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ExportView {
    /// The format the user picked; the first one that applies when unset or not applicable.
    kind: Option<ExportKind>,
    /// Whether the export writes the recommended plan or the current settings.
    basis: Basis,
    /// The formats and the text for one estimate, rendered again only when either changes.
    #[serde(skip)]
    cache: Option<Rendered>,
    /// Outcome of the last save, shown under the buttons.
    #[serde(skip)]
    status: Status,
}

struct Rendered {
    source: Source,
    basis: Basis,
    kinds: Vec<ExportKind>,
    kind: Option<ExportKind>,
    text: Result<String, String>,
}

impl ExportView {
    /// The formats and text for `source` on `basis`, from the cache when neither they nor the
    /// format changed.
    fn refresh(&mut self, source: &Source, basis: Basis) -> &Rendered {
        let same = |c: &Rendered| Arc::ptr_eq(&c.source, source) && c.basis == basis;
        let kinds = match &self.cache {
            Some(c) if same(c) => c.kinds.clone(),
            _ => export::kinds_as(&source.0, &source.1, basis),
        };
        let kind = self
            .kind
            .filter(|k| kinds.contains(k))
            .or(kinds.first().copied());
        let stale = !matches!(&self.cache, Some(c) if same(c) && c.kind == kind);
        let text = match (&self.cache, stale) {
            (Some(c), false) => c.text.clone(),
            _ => kind.map_or_else(
                || Err(tr("No export applies to this workload").to_string()),
                |k| export::render_as(k, &source.0, &source.1, basis),
            ),
        };
        self.cache.insert(Rendered {
            source: source.clone(),
            basis,
            kinds,
            kind,
            text,
        })
    }

    pub fn ui(&mut self, ui: &mut Ui, source: &Source, dialogs: &mut Dialogs) {
        ui.horizontal(|ui| {
            ui.heading(tr("Export"));
            if ui.button(tr("Save report…")).clicked() {
                let report = export::render(ExportKind::Report, &source.0, &source.1);
                self.status = match report {
                    Ok(t) => save_export(dialogs, ExportKind::Report, &t),
                    Err(e) => Some(Err(e.into())),
                };
            }
        });
        let basis = self.basis_ui(ui, source);
        let r = self.refresh(source, basis);
        let (kinds, current) = (r.kinds.clone(), r.kind);
        let text = r.text.clone();
        let mut chosen = current;
        let label = tr("Export format");
        let combo = ComboBox::from_label(label)
            .selected_text(current.map_or("", |k| k.as_str()))
            .show_ui(ui, |ui| {
                for k in &kinds {
                    ui.selectable_value(&mut chosen, Some(*k), k.as_str());
                }
            });
        explained(combo.response, label);
        if chosen != current {
            self.kind = chosen;
            self.status = None;
        }
        match &text {
            Ok(t) => {
                egui::ScrollArea::both()
                    .id_salt("export_preview")
                    .max_height(240.0)
                    .show(ui, |ui| {
                        ui.add(egui::Label::new(RichText::new(t).monospace()).extend());
                    });
                ui.horizontal(|ui| {
                    if ui.button(tr("Copy export")).clicked() {
                        ui.ctx().copy_text(t.clone());
                    }
                    if let Some(k) = current
                        && ui.button(tr("Save export…")).clicked()
                    {
                        self.status = save_export(dialogs, k, t);
                    }
                });
            }
            Err(m) => {
                ui.colored_label(ui.visuals().error_fg_color, m);
            }
        }
        status_ui(ui, &self.status);
    }
}

impl ExportView {
    /// Which settings the export shows, said and picked: the recommended plan or the current
    /// settings; only said when the plan changes nothing. Returns the basis to render.
    fn basis_ui(&mut self, ui: &mut Ui, source: &Source) -> Basis {
        if !export::plan_changes(&source.0, &source.1) {
            ui.label(tr("Shows the current settings (the plan changes nothing)"));
            return Basis::Current;
        }
        ui.horizontal(|ui| {
            ui.label(tr("Shows:"));
            for (b, label) in [
                (Basis::Plan, tr("recommended plan")),
                (Basis::Current, tr("current settings")),
            ] {
                if ui.radio_value(&mut self.basis, b, label).changed() {
                    self.status = None;
                }
            }
        });
        self.basis
    }
}

/// Asks where to save an export, proposing its usual file name; `None` when cancelled.
fn save_export(dialogs: &mut Dialogs, kind: ExportKind, text: &str) -> Status {
    let name = kind.file_name();
    let ext: Vec<&str> = Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .into_iter()
        .collect();
    let path = dialogs.0.save(tr("Save the export"), name, &ext)?;
    Some(
        write_atomic(&path, text)
            .map_err(|e| String::from(e).into())
            .map(|()| Said::new(move || trf("Saved {path}", &[("path", &path.display())]))),
    )
}
