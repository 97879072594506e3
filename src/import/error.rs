//! Why a model, pipeline or workflow file could not be imported, in the kinds a front end
//! treats differently: the file could not be opened (the path's fault or the system's,
//! [`FileError`]), reading it failed midway (the system's), or its content is not what this
//! program reads (the file's: the message names the file, the field and what is allowed).

use crate::file_error::FileError;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The path could not be opened or read whole.
    #[error(transparent)]
    File(#[from] FileError),
    /// The file was opened and its size checked, then a read or seek inside it failed (the
    /// disk, a file shrinking while read): the system's problem, not the file's content.
    #[error("{origin}: cannot {what}: {source}")]
    Read {
        origin: String,
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The content is truncated, corrupt, hostile or uses a feature this program does not
    /// model: the user gives another file (or reports the feature).
    #[error("{0}")]
    Malformed(String),
}

impl ImportError {
    /// The error as seen from `path`, the file that held what was parsed: its messages about
    /// content and reads are prefixed with the path (an open's error names it already).
    pub fn within(self, path: &std::path::Path) -> Self {
        let shown = path.display();
        match self {
            ImportError::Malformed(m) => ImportError::Malformed(format!("{shown}: {m}")),
            ImportError::Read {
                origin,
                what,
                source,
            } => ImportError::Read {
                origin: format!("{shown}: {origin}"),
                what,
                source,
            },
            e @ ImportError::File(_) => e,
        }
    }

    /// True when the input is at fault, false when the system is.
    pub fn is_bad_input(&self) -> bool {
        match self {
            ImportError::File(f) => f.is_refusal(),
            ImportError::Read { .. } => false,
            ImportError::Malformed(_) => true,
        }
    }
}

/// The parsers' one-line messages about a file's content.
impl From<String> for ImportError {
    fn from(e: String) -> Self {
        ImportError::Malformed(e)
    }
}

impl From<&str> for ImportError {
    fn from(e: &str) -> Self {
        ImportError::Malformed(e.to_string())
    }
}

/// For callers that still report errors as one line of text.
impl From<ImportError> for String {
    fn from(e: ImportError) -> String {
        e.to_string()
    }
}
