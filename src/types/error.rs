//! The input errors the layers above share: a preset name no catalog has, a field whose value
//! is not allowed (both the user's to fix: a front end exits 2 on them; each message names what
//! was given and what is allowed), and a text file the user named that could not be read or
//! is not understood.

use crate::file_error::FileError;
use crate::printable::printable_cut;
use crate::suggest::nearest;
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
    fn noun(self) -> &'static str {
        match self {
            Shelf::Gpu => "GPU",
            Shelf::Model => "model",
            Shelf::Diffusion => "diffusion model",
            Shelf::Game => "game",
        }
    }

    fn listing(self) -> &'static str {
        match self {
            Shelf::Gpu => "vram-doctor presets list gpus",
            Shelf::Model => "vram-doctor presets list models",
            Shelf::Diffusion => "vram-doctor presets list diffusion",
            Shelf::Game => "vram-doctor presets list games",
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

impl fmt::Display for UnknownPreset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, id, list) = (self.shelf.noun(), &self.id, self.shelf.listing());
        if self.near.is_empty() {
            write!(f, "unknown {what} preset '{id}'; see `{list}`")?;
        } else {
            let near = self.near.join(", ");
            write!(
                f,
                "unknown {what} preset '{id}'; did you mean {near}? (all: `{list}`)"
            )?;
        }
        if self.shelf == Shelf::Game {
            f.write_str(" (or leave model.preset out for the generic model)")?;
        }
        Ok(())
    }
}

/// A field of a workload, a flag or a preset whose value is not allowed, or fields that do not
/// combine: the message names the field, the value and what is allowed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct BadField(pub String);

impl From<String> for BadField {
    fn from(e: String) -> Self {
        BadField(e)
    }
}

impl From<&str> for BadField {
    fn from(e: &str) -> Self {
        BadField(e.to_string())
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
        e.0
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
