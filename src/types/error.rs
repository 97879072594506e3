//! The input errors the layers above share: a preset name no catalog has, a field whose value
//! is not allowed (both the user's to fix: a front end exits 2 on them; each message names what
//! was given and what is allowed), and a text file the user named that could not be read or
//! is not understood.

use crate::file_error::FileError;
use crate::printable::printable_cut;
use crate::suggest::nearest;
use crate::types::message::{Message, Sentences};
use std::fmt;

/// The catalogs a preset is looked up in, each with the command that lists its names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shelf {
    Gpu,
    Model,
    Diffusion,
    Game,
}

impl Shelf {
    fn listing(self) -> &'static str {
        match self {
            Shelf::Gpu => "vram-doctor presets list gpus",
            Shelf::Model => "vram-doctor presets list models",
            Shelf::Diffusion => "vram-doctor presets list diffusion",
            Shelf::Game => "vram-doctor presets list games",
        }
    }

    /// The ids of "unknown preset" for this catalog: without and with the nearest names.
    fn unknown_ids(self) -> (&'static str, &'static str) {
        match self {
            Shelf::Gpu => ("preset.unknown.gpu", "preset.unknown.gpu.near"),
            Shelf::Model => ("preset.unknown.model", "preset.unknown.model.near"),
            Shelf::Diffusion => ("preset.unknown.diffusion", "preset.unknown.diffusion.near"),
            Shelf::Game => ("preset.unknown.game", "preset.unknown.game.near"),
        }
    }
}

/// A preset name that names no row of its catalog: the name as given (cut to a printable 80
/// characters), the nearest names, and where the user finds them all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct UnknownPreset {
    pub shelf: Shelf,
    pub id: String,
    pub near: Vec<String>,
}

impl UnknownPreset {
    /// `id` looked up among `names` in vain.
    pub fn new<'a>(shelf: Shelf, id: &str, names: impl Iterator<Item = &'a str>) -> Self {
        UnknownPreset {
            shelf,
            near: nearest(id, names, 3),
            id: printable_cut(id, 80),
        }
    }
}

impl UnknownPreset {
    /// The error in words (`preset.unknown*` in `assets/i18n/messages.*.toml`): the name, the
    /// nearest names and the listing command; for a game, that the generic model needs none.
    pub fn sentences(&self) -> Sentences {
        let (alone, near) = self.shelf.unknown_ids();
        let m = |id| {
            Message::new(id)
                .text("id", &self.id)
                .text("list", self.shelf.listing())
        };
        let mut s = Sentences::one(if self.near.is_empty() {
            m(alone)
        } else {
            m(near).text("near", self.near.join(", "))
        });
        if self.shelf == Shelf::Game {
            s.push(Message::new("preset.unknown.game.generic"));
        }
        s
    }
}

impl fmt::Display for UnknownPreset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.sentences(), f)
    }
}

/// A field of a workload, a flag or a preset whose value is not allowed, or fields that do not
/// combine: the message names the field, the value and what is allowed, in words every front
/// end says in its language (English in `Display`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct BadField(pub Message);

impl From<Message> for BadField {
    fn from(m: Message) -> Self {
        BadField(m)
    }
}

impl BadField {
    /// `field = value` outside `min..=max`.
    pub fn range(
        field: &str,
        value: impl fmt::Display,
        min: impl fmt::Display,
        max: impl fmt::Display,
    ) -> Self {
        BadField(
            Message::new("field.range")
                .text("field", field)
                .text("value", value.to_string())
                .text("min", min.to_string())
                .text("max", max.to_string()),
        )
    }

    /// `field = value` not above 0 or above `max`.
    pub fn positive_range(field: &str, value: impl fmt::Display, max: impl fmt::Display) -> Self {
        BadField(
            Message::new("field.range.positive")
                .text("field", field)
                .text("value", value.to_string())
                .text("max", max.to_string()),
        )
    }

    /// `field = 'value'`, a name that is none of `allowed`.
    pub fn not_allowed(field: &str, value: &str, allowed: &[&str]) -> Self {
        BadField(
            Message::new("field.not_allowed")
                .text("field", field)
                .text("value", value)
                .text("allowed", allowed.join(", ")),
        )
    }
}

/// A check's message known only as English text (those not yet built as a [`Message`]).
impl From<String> for BadField {
    fn from(e: String) -> Self {
        BadField(Message::english_text(e))
    }
}

impl From<&str> for BadField {
    fn from(e: &str) -> Self {
        BadField::from(e.to_string())
    }
}

/// A text file the user named (a workload, a reference of measurements) that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TextFileError {
    /// It could not be opened or read whole: the path's fault or the system's.
    #[error(transparent)]
    File(#[from] FileError),
    /// Its content is not what is read there: the message names the file, the line or row, and
    /// what is wrong.
    #[error("{0}")]
    Malformed(String),
}

impl TextFileError {
    /// True when the input is at fault, false when the system is.
    pub fn is_bad_input(&self) -> bool {
        match self {
            TextFileError::File(f) => f.is_refusal(),
            TextFileError::Malformed(_) => true,
        }
    }
}

/// For callers that still report errors as one line of text.
impl From<TextFileError> for String {
    fn from(e: TextFileError) -> String {
        e.to_string()
    }
}

/// For callers that still report errors as one line of text.
impl From<BadField> for String {
    fn from(e: BadField) -> String {
        e.0.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_name_offers_the_near_ones_and_the_listing() {
        let names = ["rtx-4090", "h100-sxm"];
        let e = UnknownPreset::new(Shelf::Gpu, "rtx-4900", names.into_iter());
        assert_eq!(
            e.to_string(),
            "unknown GPU preset 'rtx-4900'; did you mean rtx-4090? (all: `vram-doctor presets list gpus`)"
        );
        let e = UnknownPreset::new(Shelf::Game, "zzzzzzzz", names.into_iter());
        assert_eq!(
            e.to_string(),
            "unknown game preset 'zzzzzzzz'; see `vram-doctor presets list games` (or leave model.preset out for the generic model)"
        );
    }
}
