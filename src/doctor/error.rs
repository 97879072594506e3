//! Why the doctor refused what it was asked: every kind is the asker's to fix (a front end
//! exits 2), and each names what was given and what is allowed.

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DoctorError {
    /// A `--lang` that the knowledge has no texts for.
    #[error("--lang {lang}: not shipped; choose one of {}", shipped.join(", "))]
    UnknownLanguage { lang: String, shipped: Vec<String> },
    /// Pasted text too long to be an error message and the lines around it.
    #[error(
        "the text is {} long; the reader takes at most {} — paste only the error and the lines around it",
        crate::units::human(*bytes as u64),
        crate::units::human(*max as u64)
    )]
    TooLong { bytes: usize, max: usize },
    /// A wizard entry that names no step of the trees.
    #[error("unknown wizard step '{0}'")]
    UnknownStep(String),
    /// A kept wizard state standing on a step these trees do not have.
    #[error("the wizard is at unknown step '{0}' (saved by another version?)")]
    StaleStep(String),
    /// An answer to a step that is a result.
    #[error("this step is a result; there is nothing to answer")]
    AtResult,
    /// An answer number the step does not offer (`index` counts from 0).
    #[error("answer {} does not exist; choose 1 to {options}", index + 1)]
    NoSuchAnswer { index: usize, options: usize },
}

/// For callers that still report errors as one line of text.
impl From<DoctorError> for String {
    fn from(e: DoctorError) -> String {
        e.to_string()
    }
}
