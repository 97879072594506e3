//! Why a workload could not be resolved, in the kinds a front end treats differently: a field,
//! a flag or a preset name the user gave is wrong (bad input), or a model file it names could
//! not be imported, which is the file's fault or the system's ([`ImportError`]).

use crate::import::ImportError;
use crate::types::error::{BadField, UnknownPreset};
use crate::types::message::{Message, Sentences};
use crate::types::options::Task;

#[derive(Debug)]
pub enum ResolveError {
    /// A field's value is not allowed, or fields do not combine: the message names them and
    /// what is allowed.
    Field(BadField),
    /// A GPU, model, diffusion model or game preset name that no catalog has.
    UnknownPreset(UnknownPreset),
    /// A model file named by `model.file` / `model.hf_config` could not be imported.
    Import(ImportError),
    /// An LLM plan's model preset that is a diffusion model or a game: the error, and the task
    /// to set.
    OtherTask {
        error: Box<ResolveError>,
        preset: String,
        task: Task,
    },
}

impl ResolveError {
    /// True when the input is at fault, false when the system is (a model file it could not
    /// read).
    pub fn is_bad_input(&self) -> bool {
        match self {
            ResolveError::Field(_) | ResolveError::UnknownPreset(_) => true,
            ResolveError::Import(e) => e.is_bad_input(),
            ResolveError::OtherTask { error, .. } => error.is_bad_input(),
        }
    }

    /// The error in words, which the GUI says in its language and `Display` in English. An
    /// import error's own text (the file's parser or the system) is kept as it is, inside a
    /// sentence of the language shown.
    pub fn sentences(&self) -> Sentences {
        match self {
            ResolveError::Field(f) => Sentences::one(f.0.clone()),
            ResolveError::UnknownPreset(u) => u.sentences(),
            ResolveError::Import(e) => {
                Sentences::one(Message::new("resolve.import").text("error", e.to_string()))
            }
            ResolveError::OtherTask {
                error,
                preset,
                task,
            } => {
                let mut s = error.sentences();
                let id = match task {
                    Task::Game => "resolve.other_task.game",
                    _ => "resolve.other_task.diffusion",
                };
                s.push(Message::new(id).text("preset", preset));
                s
            }
        }
    }
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.sentences(), f)
    }
}

impl std::error::Error for ResolveError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ResolveError::Field(e) => e.source(),
            ResolveError::UnknownPreset(e) => e.source(),
            ResolveError::Import(e) => e.source(),
            ResolveError::OtherTask { .. } => None,
        }
    }
}

impl From<BadField> for ResolveError {
    fn from(e: BadField) -> Self {
        ResolveError::Field(e)
    }
}

impl From<UnknownPreset> for ResolveError {
    fn from(e: UnknownPreset) -> Self {
        ResolveError::UnknownPreset(e)
    }
}

impl From<ImportError> for ResolveError {
    fn from(e: ImportError) -> Self {
        ResolveError::Import(e)
    }
}

impl From<Message> for ResolveError {
    fn from(m: Message) -> Self {
        ResolveError::Field(BadField(m))
    }
}

/// The checks' one-line messages about a field.
impl From<String> for ResolveError {
    fn from(e: String) -> Self {
        ResolveError::Field(BadField::from(e))
    }
}

impl From<&str> for ResolveError {
    fn from(e: &str) -> Self {
        ResolveError::Field(BadField::from(e))
    }
}

/// For callers that still report errors as one line of text.
impl From<ResolveError> for String {
    fn from(e: ResolveError) -> String {
        e.to_string()
    }
}
