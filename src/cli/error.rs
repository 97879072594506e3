//! How a command fails: one line on stderr, and an exit status that says whose problem it is,
//! so a script can tell a typo from a full disk (README, "Exit status").
//!
//! - 0: done.
//! - 1 ([`EXIT_ENVIRONMENT`]): the machine failed what valid input asked for: a file could not
//!   be written or read (permissions, a full disk), stdout is closed, no GPU to monitor, no
//!   display for the app.
//! - 2 ([`EXIT_BAD_INPUT`]): the input is wrong: a flag, a file's content, a preset name, a
//!   path that names the wrong kind of thing. The message names what and what is allowed.
//!
//! `vram-doctor run` returns the watched command's own status instead.

use crate::catalog::user::UnusablePresets;
use crate::doctor::DoctorError;
use crate::file_error::FileError;
use crate::import::ImportError;
use crate::resolve::ResolveError;
use crate::telemetry::prometheus::ServeError;
use crate::types::error::TextFileError;
use crate::watch::WatchError;

/// Exit status for bad input (a malformed file, an unknown preset, a wrong flag).
pub const EXIT_BAD_INPUT: u8 = 2;

/// Exit status for an I/O or environment failure (a write that failed, no GPU, no display).
pub const EXIT_ENVIRONMENT: u8 = 1;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// What the user gave is wrong. The modules' one-line text errors are this kind: they
    /// name a field, a flag or a file's content.
    #[error("{0}")]
    BadInput(String),
    /// The machine failed: the message names what could not be done and the system's reason.
    #[error("{0}")]
    Environment(String),
    #[error(transparent)]
    File(#[from] FileError),
    /// A model, pipeline or workflow file that could not be read or is not understood.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// A `--lang`, an answer or a pasted text the doctor refuses.
    #[error(transparent)]
    Doctor(#[from] DoctorError),
    /// A workload file that could not be read or is not a workload.
    #[error(transparent)]
    TextFile(#[from] TextFileError),
    /// A workload whose fields, presets or model file do not resolve.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// A `--gpu`/`--model` name only the user's presets could hold, and that file unusable.
    #[error(transparent)]
    UserPresets(#[from] UnusablePresets),
    /// `monitor --serve ADDR`: an address that is not one, or one the system will not listen on.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// A watched run that could not start, or its report that could not be kept.
    #[error(transparent)]
    Watch(#[from] WatchError),
    /// Whoever read stdout closed it (`vram-doctor accuracy | head`): exit 1, without a message.
    #[error("stdout was closed before everything was written")]
    StdoutClosed,
}

impl From<String> for CliError {
    fn from(e: String) -> Self {
        CliError::BadInput(e)
    }
}

impl From<crate::types::error::BadField> for CliError {
    fn from(e: crate::types::error::BadField) -> Self {
        CliError::BadInput(e.to_string())
    }
}

impl From<&str> for CliError {
    fn from(e: &str) -> Self {
        CliError::BadInput(e.to_string())
    }
}

impl CliError {
    /// Writing to stdout failed (a closed pipe, a full disk behind a redirection).
    pub fn stdout(e: &std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return CliError::StdoutClosed;
        }
        CliError::Environment(format!("cannot write to stdout: {e}"))
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Import(e) if e.is_bad_input() => EXIT_BAD_INPUT,
            CliError::Import(_) => EXIT_ENVIRONMENT,
            CliError::Watch(e) if e.is_bad_input() => EXIT_BAD_INPUT,
            CliError::Watch(_) => EXIT_ENVIRONMENT,
            CliError::TextFile(e) if e.is_bad_input() => EXIT_BAD_INPUT,
            CliError::TextFile(_) => EXIT_ENVIRONMENT,
            CliError::Resolve(e) if e.is_bad_input() => EXIT_BAD_INPUT,
            CliError::Resolve(_) => EXIT_ENVIRONMENT,
            CliError::UserPresets(e) if e.source.is_bad_input() => EXIT_BAD_INPUT,
            CliError::UserPresets(_) => EXIT_ENVIRONMENT,
            CliError::Serve(e) if e.is_bad_input() => EXIT_BAD_INPUT,
            CliError::Serve(_) => EXIT_ENVIRONMENT,
            CliError::BadInput(_)
            | CliError::Doctor(_)
            | CliError::File(FileError::Refused { .. }) => EXIT_BAD_INPUT,
            CliError::Environment(_)
            | CliError::StdoutClosed
            | CliError::File(FileError::Io { .. }) => EXIT_ENVIRONMENT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whose_problem_decides_the_status() {
        let dir = tempfile::tempdir().unwrap();
        // A folder where a file should be: the user names another path.
        let refused = crate::atomic_write::write_atomic(dir.path(), "x").unwrap_err();
        assert_eq!(CliError::from(refused).exit_code(), EXIT_BAD_INPUT);
        // A file inside a file: the system cannot do it.
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let failed = crate::atomic_write::write_atomic(&file.join("g"), "x").unwrap_err();
        assert!(matches!(failed, FileError::Io { .. }), "{failed:?}");
        assert_eq!(CliError::from(failed).exit_code(), EXIT_ENVIRONMENT);
        assert_eq!(CliError::from("bad flag").exit_code(), EXIT_BAD_INPUT);
        let closed = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert_eq!(CliError::stdout(&closed).exit_code(), EXIT_ENVIRONMENT);
    }
}
