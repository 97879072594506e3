//! Why a workload could not be resolved, in the kinds a front end treats differently: a field,
//! a flag or a preset name the user gave is wrong (bad input), or a model file it names could
//! not be imported, which is the file's fault or the system's ([`ImportError`]).

use crate::import::ImportError;
use crate::types::error::{BadField, UnknownPreset};
use crate::types::options::Task;

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// A field's value is not allowed, or fields do not combine: the message names them and
    /// what is allowed.
    #[error(transparent)]
    Field(#[from] BadField),
    /// A GPU, model, diffusion model or game preset name that no catalog has.
    #[error(transparent)]
    UnknownPreset(#[from] UnknownPreset),
    /// A model file named by `model.file` / `model.hf_config` could not be imported.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// An LLM plan's model preset that is a diffusion model or a game: the error, and the task
    /// to set.
    #[error("{error} ('{preset}' is a {what}: set run.task = \"{task}\" / --task {task})")]
    OtherTask {
        error: Box<ResolveError>,
        preset: String,
        what: &'static str,
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
}

/// The checks' one-line messages about a field.
impl From<String> for ResolveError {
    fn from(e: String) -> Self {
        ResolveError::Field(BadField(e))
    }
}

impl From<&str> for ResolveError {
    fn from(e: &str) -> Self {
        ResolveError::Field(BadField(e.to_string()))
    }
}

/// For callers that still report errors as one line of text.
impl From<ResolveError> for String {
    fn from(e: ResolveError) -> String {
        e.to_string()
    }
}
