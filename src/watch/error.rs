//! Why a watched run could not start or its report could not be kept, in the kinds a front end
//! treats differently: what the user gave (a command that does not start, a report folder that
//! holds another run) or what the machine failed (a folder it cannot make, a file it cannot
//! write).

use crate::file_error::FileError;

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The command, its folder or a recording's path is wrong: the message names it and why.
    #[error("{0}")]
    Refused(String),
    /// The system failed what was asked (making the report folder, opening the child's pipes).
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The child started without the pipes it was given (the system's failure).
    #[error("the child's output pipes could not be opened")]
    Pipes,
    /// A report file could not be written.
    #[error(transparent)]
    File(#[from] FileError),
    /// A recording could not be begun.
    #[error(transparent)]
    Record(#[from] crate::telemetry::record::RecordError),
}

impl WatchError {
    /// True when the input is at fault, false when the system is.
    pub fn is_bad_input(&self) -> bool {
        match self {
            WatchError::Refused(_) => true,
            WatchError::Io { .. } | WatchError::Pipes => false,
            WatchError::File(f) => f.is_refusal(),
            WatchError::Record(r) => r.is_bad_input(),
        }
    }
}

/// For callers that still report errors as one line of text (the app's watch panel).
impl From<WatchError> for String {
    fn from(e: WatchError) -> String {
        e.to_string()
    }
}
