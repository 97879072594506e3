//! Why a file the user named could not be read or written, in the two kinds a front end treats
//! differently: the path's fault (the user names another: exit 2) or the system's (exit 1).
//! Shared by `input_file` (reading) and `atomic_write` (writing).

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The path names nothing, or something that is not read or replaced (a folder, a device,
    /// a link to nothing), or a file too large or not text: the user names another path.
    #[error("{path}: {why}")]
    Refused { path: String, why: String },
    /// The system refused or failed (permissions, a full disk, a read-only file system, an I/O
    /// error): the machine's problem, not the input's.
    #[error("{path}: {what}: {source}")]
    Io {
        path: String,
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl FileError {
    pub fn refused(path: &Path, why: impl Into<String>) -> Self {
        FileError::Refused {
            path: path.display().to_string(),
            why: why.into(),
        }
    }

    /// `what` failed on `path`; a path that names nothing is the user's to change, so
    /// `NotFound` is a refusal (with the same words).
    pub fn io(path: &Path, what: &'static str, source: std::io::Error) -> Self {
        if source.kind() == std::io::ErrorKind::NotFound {
            return FileError::refused(path, format!("{what}: {source}"));
        }
        FileError::Io {
            path: path.display().to_string(),
            what,
            source,
        }
    }

    /// True when the input is at fault (a refusal), false when the system is.
    pub fn is_refusal(&self) -> bool {
        matches!(self, FileError::Refused { .. })
    }
}

/// For callers that still report errors as one line of text.
impl From<FileError> for String {
    fn from(e: FileError) -> String {
        e.to_string()
    }
}
