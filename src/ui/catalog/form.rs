//! The form that adds or edits one of the user's presets. Values are edited as text so that
//! anything can be typed; Save reads them, and a value that does not read or does not pass the
//! domain's checks (`catalog::user`) is shown under its field and nothing is saved.

use crate::catalog::user::{Invalid, UserGpu, UserModel};
use crate::types::arch::Mlp;
use crate::ui::i18n::{msg, tr, trf};
use egui::Ui;

/// What the form edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormKind {
    Gpu,
    Model,
}

/// A preset read from the form, ready for `UserPresets::put`.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Gpu(UserGpu),
    Model(UserModel),
}

/// One text field: the file's field name (which errors name too), its label, its text.
struct Field {
    key: &'static str,
    label: &'static str,
    text: String,
}

pub struct Form {
    pub kind: FormKind,
    /// The id of the entry being edited; `None` for a new one.
    pub editing: Option<String>,
    fields: Vec<Field>,
    mlp: Mlp,
    tied: bool,
    /// Messages by field name; a name no field has is shown under the form.
    errors: Vec<(&'static str, String)>,
    /// Scroll the form into view when it is first shown (Edit on a row far down the list).
    reveal: bool,
}

/// What the user did with the form this frame.
pub enum FormEvent {
    Save(Entry),
    Cancel,
}

/// Optional whole numbers and GiB figures, as text (blank for none).
fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

impl Form {
    /// A form for a GPU: blank, or filled from `g` (editing it when `editing` is its id).
    pub fn gpu(g: Option<&UserGpu>, editing: Option<String>) -> Self {
        let field = |key, label, text| Field { key, label, text };
        Form {
            kind: FormKind::Gpu,
            editing,
            fields: vec![
                field("name", "Name", opt(g.map(|g| g.name.clone()))),
                field("vram_gib", "Memory (GiB)", opt(g.map(|g| g.vram_gib))),
                field(
                    "bandwidth_gbs",
                    "Bandwidth (GB/s, optional)",
                    opt(g.and_then(|g| g.bandwidth_gbs)),
                ),
            ],
            mlp: Mlp::default(),
            tied: false,
            errors: Vec::new(),
            reveal: true,
        }
    }

    /// A form for a model: blank, or filled from `m`. Parameters are typed in billions.
    pub fn model(m: Option<&UserModel>, editing: Option<String>) -> Self {
        let field = |key, label, text| Field { key, label, text };
        let n = |f: fn(&UserModel) -> u32| opt(m.map(f));
        Form {
            kind: FormKind::Model,
            editing,
            fields: vec![
                field("name", "Name", opt(m.map(|m| m.name.clone()))),
                field(
                    "params",
                    "Parameters (billions)",
                    opt(m.map(|m| m.params / 1e9)),
                ),
                field("layers", "Layers", n(|m| m.layers)),
                field("hidden", "Hidden size", n(|m| m.hidden)),
                field("heads", "Attention heads", n(|m| m.heads)),
                field("kv_heads", "KV heads", n(|m| m.kv_heads)),
                field(
                    "head_dim",
                    "Head size (blank: hidden size ÷ heads)",
                    n(|m| m.head_dim),
                ),
                field(
                    "intermediate",
                    "MLP intermediate size",
                    n(|m| m.intermediate),
                ),
                field("vocab", "Vocabulary size", n(|m| m.vocab)),
                field(
                    "max_context",
                    "Longest context (optional)",
                    opt(m.and_then(|m| m.max_context)),
                ),
                field(
                    "sliding_window",
                    "Sliding window (optional)",
                    opt(m.and_then(|m| m.sliding_window)),
                ),
            ],
            mlp: m.map_or_else(Mlp::default, |m| m.mlp),
            tied: m.is_some_and(|m| m.tied_embeddings),
            errors: Vec::new(),
            reveal: true,
        }
    }

    /// Shows a domain check's complaint under its field.
    pub fn reject(&mut self, e: Invalid) {
        self.errors = vec![(e.field, msg(&e.message))];
    }

    fn text(&self, key: &str) -> &str {
        self.fields
            .iter()
            .find(|f| f.key == key)
            .map_or("", |f| f.text.trim())
    }

    /// Reads the fields; every field that does not read gets its message, and then there is
    /// no entry.
    fn read(&mut self) -> Option<Entry> {
        let mut r = Reader {
            form: self,
            errors: Vec::new(),
        };
        let entry = match self.kind {
            FormKind::Gpu => r.gpu(),
            FormKind::Model => r.model(),
        };
        let errors = r.errors;
        if errors.is_empty() {
            self.errors.clear();
            entry
        } else {
            self.errors = errors;
            None
        }
    }

    pub fn ui(&mut self, ui: &mut Ui) -> Option<FormEvent> {
        let mut event = None;
        let error_color = ui.visuals().error_fg_color;
        egui::Frame::group(ui.style()).show(ui, |ui| {
            let heading = ui.heading(match (self.kind, self.editing.is_some()) {
                (FormKind::Gpu, false) => tr("New GPU"),
                (FormKind::Gpu, true) => tr("Edit GPU"),
                (FormKind::Model, false) => tr("New model"),
                (FormKind::Model, true) => tr("Edit model"),
            });
            if std::mem::take(&mut self.reveal) {
                heading.scroll_to_me(Some(egui::Align::Min));
            }
            egui::Grid::new("catalog_form")
                .num_columns(2)
                .spacing([12.0, 4.0])
                .show(ui, |ui| {
                    for f in &mut self.fields {
                        let label = ui.label(tr(f.label));
                        ui.text_edit_singleline(&mut f.text).labelled_by(label.id);
                        ui.end_row();
                        for (_, msg) in self.errors.iter().filter(|(k, _)| *k == f.key) {
                            ui.label("");
                            ui.colored_label(error_color, msg);
                            ui.end_row();
                        }
                    }
                    if self.kind == FormKind::Model {
                        ui.label(tr("MLP"));
                        ui.horizontal(|ui| {
                            ui.selectable_value(&mut self.mlp, Mlp::Gated, tr("gated (SwiGLU)"));
                            ui.selectable_value(&mut self.mlp, Mlp::Plain, tr("plain (GeLU)"));
                        });
                        ui.end_row();
                        ui.label("");
                        ui.checkbox(&mut self.tied, tr("Input and output embeddings tied"));
                        ui.end_row();
                    }
                });
            let keys: Vec<&str> = self.fields.iter().map(|f| f.key).collect();
            for (k, msg) in self.errors.iter().filter(|(k, _)| !keys.contains(k)) {
                ui.colored_label(error_color, format!("{k}: {msg}"));
            }
            ui.horizontal(|ui| {
                if ui.button(tr("Save")).clicked()
                    && let Some(entry) = self.read()
                {
                    event = Some(FormEvent::Save(entry));
                }
                if ui.button(tr("Cancel")).clicked() {
                    event = Some(FormEvent::Cancel);
                }
            });
        });
        event
    }
}

/// Reads a form's texts, keeping a message for each field that does not read.
struct Reader<'a> {
    form: &'a Form,
    errors: Vec<(&'static str, String)>,
}

impl Reader<'_> {
    fn num(&mut self, key: &'static str, required: bool) -> Option<f64> {
        let t = self.form.text(key);
        if t.is_empty() {
            if required {
                self.errors.push((key, tr("required").to_string()));
            }
            return None;
        }
        match t.parse::<f64>() {
            Ok(x) if x.is_finite() => Some(x),
            _ => {
                let msg = trf("“{text}” is not a number", &[("text", &t)]);
                self.errors.push((key, msg));
                None
            }
        }
    }

    fn count(&mut self, key: &'static str, required: bool) -> Option<u32> {
        let x = self.num(key, required)?;
        if x.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&x) {
            Some(x as u32)
        } else {
            let msg = trf("{x} is not a whole number", &[("x", &x)]);
            self.errors.push((key, msg));
            None
        }
    }

    fn gpu(&mut self) -> Option<Entry> {
        let vram_gib = self.num("vram_gib", true);
        let bandwidth_gbs = self.num("bandwidth_gbs", false);
        Some(Entry::Gpu(UserGpu {
            id: String::new(),
            name: self.form.text("name").to_string(),
            vram_gib: vram_gib?,
            bandwidth_gbs,
        }))
    }

    fn model(&mut self) -> Option<Entry> {
        let params = self.num("params", true);
        let layers = self.count("layers", true);
        let hidden = self.count("hidden", true);
        let heads = self.count("heads", true);
        let kv_heads = self.count("kv_heads", false);
        let head_dim = self.count("head_dim", false);
        let intermediate = self.count("intermediate", true);
        let vocab = self.count("vocab", true);
        let max_context = self.count("max_context", false);
        let sliding_window = self.count("sliding_window", false);
        let (hidden, heads) = (hidden?, heads?);
        Some(Entry::Model(UserModel {
            id: String::new(),
            name: self.form.text("name").to_string(),
            params: params? * 1e9,
            layers: layers?,
            hidden,
            heads,
            // Absent: as many KV heads as heads (multi-head attention) and the usual
            // hidden ÷ heads head size, as the workload resolver assumes.
            kv_heads: kv_heads.unwrap_or(heads),
            head_dim: head_dim.unwrap_or(hidden.checked_div(heads).unwrap_or(0)),
            intermediate: intermediate?,
            vocab: vocab?,
            mlp: self.form.mlp,
            tied_embeddings: self.form.tied,
            max_context,
            sliding_window,
            model_type: None,
        }))
    }
}
