//! Input widgets the views share: a searchable catalog picker, choice and
//! spelling combo boxes, count sliders, and the one-line outcome of a file action.

use crate::types::dtype::WeightFormat;
use crate::ui::glossary;
use crate::ui::i18n::{tr, trf};
use egui::{ComboBox, Response, Slider, Ui};
use std::fmt::Display;

/// Outcome of an open or save: a message, or what went wrong.
pub type Status = Option<Result<Said, Said>>;

/// A line kept on screen after the event that made it (a status line), said again at each
/// frame in the language shown then, so a language switch re-says it too: built by a closure
/// that calls `tr`/`trf`, or a text that reads the same in every language (a domain layer's
/// error, in English).
#[derive(Clone)]
pub struct Said(std::sync::Arc<dyn Fn() -> String + Send + Sync>);

impl Said {
    /// A line `say` says, in the language current when it is shown.
    pub fn new(say: impl Fn() -> String + Send + Sync + 'static) -> Self {
        Said(std::sync::Arc::new(say))
    }

    /// The line now, in the current language.
    pub fn now(&self) -> String {
        (self.0)()
    }
}

impl From<String> for Said {
    fn from(text: String) -> Self {
        Said::new(move || text.clone())
    }
}

impl std::fmt::Debug for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Said({:?})", self.now())
    }
}

/// `response` with the glossary's explanation of the control labelled `label` (shown text) as
/// its tooltip, when the glossary has one (tests/ui_glossary.rs requires one for every control).
pub fn explained(response: Response, label: &str) -> Response {
    match glossary::control(label) {
        // A disabled control says what it is too: it is greyed out because something else
        // must be set first, and the text says what (e.g. offloading needs full checkpointing).
        Some(about) => response.on_hover_text(about).on_disabled_hover_text(about),
        None => response,
    }
}

/// The tooltip of a choice control: what the control is for, then what the current choice
/// means when the glossary explains it.
fn choice_tooltip(label: &str, current: &str) -> Option<String> {
    let about = glossary::control(label)?;
    Some(match glossary::choice(label, current) {
        Some(c) => format!("{about}\n\n{current}: {c}"),
        None => about.to_string(),
    })
}

/// Shows a status line (errors in the error colour).
pub fn status_ui(ui: &mut Ui, status: &Status) {
    match status {
        Some(Ok(m)) => {
            ui.label(m.now());
        }
        Some(Err(m)) => {
            ui.colored_label(ui.visuals().error_fg_color, m.now());
        }
        None => {}
    }
}

/// A combo box over catalog entries (id, text) with a search box on top; returns the id picked.
///
/// The search has the keyboard as soon as the list opens, empty, so typing filters at once (with 182
/// cards nobody scrolls), a click into it keeps the list open, and Enter takes the first match.
/// egui's combo box closes on any click inside and focuses nothing (`PopupCloseBehavior::
/// CloseOnClick`, its default), which made the search unreachable (issue 22).
pub fn search_pick<'a>(
    ui: &mut Ui,
    label: &str,
    selected_text: String,
    filter: &mut String,
    items: impl Iterator<Item = (&'a str, String)>,
    current: Option<&str>,
) -> Option<String> {
    let mut picked = None;
    let focused_once = egui::Id::unique(("search_pick_focused", label));
    let shown = ComboBox::from_label(label)
        .selected_text(selected_text)
        .width(260.0)
        .height(400.0)
        .close_behavior(egui::PopupCloseBehavior::CloseOnClickOutside)
        .show_ui(ui, |ui| {
            let search = ui.add(
                egui::TextEdit::singleline(filter)
                    .hint_text(trf("Search {what}", &[("what", &label.to_lowercase())])),
            );
            if !ui.data(|d| d.get_temp::<bool>(focused_once).unwrap_or(false)) {
                // A new search each time the list opens: the last one's text ("3060") left in
                // the box made typing "4060" search for "30604060" (found by tools/walk.py).
                filter.clear();
                search.request_focus();
                ui.data_mut(|d| d.insert_temp(focused_once, true));
            }
            let enter = search.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            let needle = filter.to_lowercase();
            for (id, text) in items {
                if !needle.is_empty() && !format!("{id} {text}").to_lowercase().contains(&needle) {
                    continue;
                }
                let first = enter && picked.is_none();
                if ui.selectable_label(current == Some(id), &text).clicked() || first {
                    picked = Some(id.to_string());
                }
            }
            if picked.is_some() {
                ui.close();
            }
        });
    explained(shown.response, label);
    if shown.inner.is_none() {
        // Closed: the next opening focuses the search again.
        ui.data_mut(|d| d.remove::<bool>(focused_once));
    }
    picked
}

/// A slider over a count of the workload (batch, tokens, rank …); `Some` with the new value
/// when the user moved it, ready for the file's integer field.
pub fn count_slider(
    ui: &mut Ui,
    label: &str,
    value: u32,
    range: std::ops::RangeInclusive<u32>,
    logarithmic: bool,
) -> Option<i64> {
    stepped_slider(ui, label, value, range, 1, logarithmic)
}

/// `count_slider` moving in steps of `step` from the start of `range` (image sides, frames).
///
/// A typed value is taken when the field is left or Enter is pressed, not at each keystroke:
/// egui's default (`update_while_editing(true)`) applied "5" of "512" at once, clamped it to the
/// range, and when the workload then resolved to another value the stale text came back with the
/// cursor in the middle, so "512" became "112024" (issue 22).
pub fn stepped_slider(
    ui: &mut Ui,
    label: &str,
    value: u32,
    range: std::ops::RangeInclusive<u32>,
    step: u32,
    logarithmic: bool,
) -> Option<i64> {
    let mut v = value;
    let slider = ui.add(
        Slider::new(&mut v, range)
            .step_by(f64::from(step.max(1)))
            .logarithmic(logarithmic)
            .update_while_editing(false)
            .text(label),
    );
    explained(slider, label).changed().then_some(i64::from(v))
}

/// A slider over an amount of memory in GiB, shown to 0.01 GiB; `Some` with the new value when
/// the user moved it. Only the text is rounded: egui's `max_decimals` would round the value
/// itself and report a change nobody made.
pub fn gib_slider(ui: &mut Ui, label: &str, bytes: u64, max_gib: f64) -> Option<f64> {
    let mut v = crate::units::gib(bytes);
    let slider = ui.add(
        Slider::new(&mut v, 0.0..=max_gib)
            .custom_formatter(|v, _| format!("{v:.2}"))
            .suffix(" GiB")
            .update_while_editing(false)
            .text(label),
    );
    explained(slider, label).changed().then_some(v)
}

/// A slider over GiB held by other programs, up to the card's size.
pub fn other_programs(ui: &mut Ui, bytes: u64, capacity_gib: f64) -> Option<f64> {
    gib_slider(ui, tr("Other programs"), bytes, capacity_gib.max(1.0))
}

/// A combo box over a choice enum; returns the new value when the user picked another one.
pub fn pick<T: Copy + PartialEq + Display>(
    ui: &mut Ui,
    label: &str,
    all: &[T],
    current: T,
) -> Option<T> {
    let names: Vec<String> = all.iter().map(ToString::to_string).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let at = all.iter().position(|v| *v == current);
    let picked = pick_name(ui, label, &names, at.map_or("", |i| names[i]))?;
    all.iter()
        .zip(&names)
        .find(|(_, n)| **n == picked)
        .map(|(v, _)| *v)
}

/// A combo box over spellings of a string-valued field (`run.weights`, `run.resolution` …).
pub fn pick_name(ui: &mut Ui, label: &str, names: &[&str], current: &str) -> Option<String> {
    pick_shown(ui, label, names, current, str::to_string)
}

/// A combo box over `run.weights` spellings, each shown as people know the format ("GGUF Q4_0",
/// `WeightFormat::label`); a spelling that does not parse is shown as it is.
pub fn pick_weights(ui: &mut Ui, label: &str, names: &[&str], current: &str) -> Option<String> {
    pick_shown(ui, label, names, current, |n| {
        n.parse::<WeightFormat>()
            .map_or_else(|_| n.to_string(), WeightFormat::label)
    })
}

/// [`pick_name`] with each spelling shown as `show` writes it.
fn pick_shown(
    ui: &mut Ui,
    label: &str,
    names: &[&str],
    current: &str,
    show: impl Fn(&str) -> String,
) -> Option<String> {
    let mut chosen = current;
    let combo = ComboBox::from_label(label)
        .selected_text(tr(&show(current)))
        .show_ui(ui, |ui| {
            for n in names {
                let item = ui.selectable_value(&mut chosen, *n, tr(&show(n)));
                if let Some(about) = glossary::choice(label, n) {
                    item.on_hover_text(about);
                }
            }
        });
    if let Some(tip) = choice_tooltip(label, current) {
        combo.response.on_hover_text(tip);
    }
    (chosen != current).then(|| chosen.to_string())
}

/// A one-line text field over a string field of the workload (`run.lora_targets`): the draft
/// lives in egui's memory while it is edited; `Some` with the parsed value when the user
/// presses Enter or leaves the field having changed it. Text that does not parse stays in the
/// field with the parser's message under it. `hint` is shown while it is empty.
pub fn text_field<T: std::str::FromStr<Err = String>>(
    ui: &mut Ui,
    label: &str,
    current: &str,
    hint: &str,
) -> Option<T> {
    let id = egui::Id::unique(("text_field", label));
    let err_id = id.with("error");
    let mut draft = ui
        .data(|d| d.get_temp::<String>(id))
        .unwrap_or_else(|| current.to_string());
    let shown = ui
        .horizontal(|ui| {
            let name = ui.label(label);
            ui.add(
                egui::TextEdit::singleline(&mut draft)
                    .hint_text(hint)
                    .desired_width(220.0),
            )
            .labelled_by(name.id)
        })
        .inner;
    let response = explained(shown, label);
    let mut parsed = None;
    if response.has_focus() {
        ui.data_mut(|d| d.insert_temp(id, draft));
    } else if response.lost_focus() && draft.trim() != current {
        match draft.parse::<T>() {
            Ok(v) => {
                ui.data_mut(|d| {
                    d.remove::<String>(id);
                    d.remove::<String>(err_id);
                });
                parsed = Some(v);
            }
            Err(e) => ui.data_mut(|d| {
                d.insert_temp(id, draft);
                d.insert_temp(err_id, e);
            }),
        }
    }
    if let Some(e) = ui.data(|d| d.get_temp::<String>(err_id)) {
        ui.colored_label(ui.visuals().error_fg_color, e);
    }
    parsed
}

/// A checkbox over a flag of the workload; `Some` with the new value when clicked.
pub fn flag(ui: &mut Ui, label: &str, value: bool) -> Option<bool> {
    let mut v = value;
    explained(ui.checkbox(&mut v, label), label)
        .changed()
        .then_some(v)
}
