//! Native file dialogs behind a trait, and atomic writes of user files.
//!
//! rfd's portal backend returns `None` at once when no portal or zenity is available, which the UI
//! cannot tell apart from Cancel (egui_stack.md §1, "rfd without GTK"), and tests have no desktop:
//! so views ask a `FileDialog`, which tests replace with a fake.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Asks the user for a path. `None` means cancelled (or no dialog could be shown).
pub trait FileDialog {
    /// A file to open, among files whose extension is one of `extensions`.
    fn open(&mut self, title: &str, extensions: &[&str]) -> Option<PathBuf>;
    /// A path to save to, proposing `file_name`.
    fn save(&mut self, title: &str, file_name: &str, extensions: &[&str]) -> Option<PathBuf>;
}

/// The desktop's own dialog (XDG portal, or zenity), through rfd.
pub struct NativeDialog;

impl FileDialog for NativeDialog {
    fn open(&mut self, title: &str, extensions: &[&str]) -> Option<PathBuf> {
        with_filter(rfd::FileDialog::new().set_title(title), extensions).pick_file()
    }

    fn save(&mut self, title: &str, file_name: &str, extensions: &[&str]) -> Option<PathBuf> {
        let d = rfd::FileDialog::new()
            .set_title(title)
            .set_file_name(file_name);
        with_filter(d, extensions).save_file()
    }
}

/// Filters on `extensions`; no filter when there are none (a file such as `Modelfile`).
fn with_filter(d: rfd::FileDialog, extensions: &[&str]) -> rfd::FileDialog {
    if extensions.is_empty() {
        d
    } else {
        d.add_filter(extensions.join(", "), extensions)
    }
}

/// The dialog a view uses; the native one unless a test put a fake in.
pub struct Dialogs(pub Box<dyn FileDialog>);

impl Default for Dialogs {
    fn default() -> Self {
        Dialogs(Box::new(NativeDialog))
    }
}

/// Writes `text` to `path` so that a crash or a full disk never leaves a half-written file:
/// write a temporary file in the same directory, flush it to disk, then rename it over `path`.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    let shown = path.display();
    let name = path
        .file_name()
        .ok_or_else(|| format!("{shown}: not a file name"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    written.map_err(|e| {
        // Best effort: the temporary file is ours and useless after a failure.
        std::fs::remove_file(&tmp).ok();
        format!("{shown}: cannot write: {e}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.toml");
        std::fs::write(&p, "old").unwrap();
        write_atomic(&p, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "temporary file left behind"
        );
    }

    #[test]
    fn atomic_write_failure_keeps_the_old_file_and_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("missing-dir").join("w.toml");
        let e = write_atomic(&p, "x").unwrap_err();
        assert!(e.contains("w.toml") && e.contains("cannot write"), "{e}");
    }
}
