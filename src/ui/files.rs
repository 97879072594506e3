//! Native file dialogs behind a trait; atomic writes of user files (`crate::atomic_write`,
//! re-exported here for the views).
//!
//! rfd's portal backend returns `None` at once when no portal or zenity is available, which the UI
//! cannot tell apart from Cancel (egui_stack.md §1, "rfd without GTK"), and tests have no desktop:
//! so views ask a `FileDialog`, which tests replace with a fake.

use std::path::PathBuf;

/// Asks the user for a path. `None` means cancelled (or no dialog could be shown).
pub trait FileDialog {
    /// A file to open, among files whose extension is one of `extensions`.
    fn open(&mut self, title: &str, extensions: &[&str]) -> Option<PathBuf>;
    /// A path to save to, proposing `file_name`.
    fn save(&mut self, title: &str, file_name: &str, extensions: &[&str]) -> Option<PathBuf>;
    /// A folder.
    fn folder(&mut self, title: &str) -> Option<PathBuf>;
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

    fn folder(&mut self, title: &str) -> Option<PathBuf> {
        rfd::FileDialog::new().set_title(title).pick_folder()
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
