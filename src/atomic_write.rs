//! Atomic writes of user files, shared by every layer that saves one (workload files, exports,
//! the user's presets): a crash or a full disk never leaves a half-written file behind.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The temporary file `write_atomic` writes before renaming it over `path`: in the same
/// directory (a rename across file systems is not atomic), hidden, and named for this process.
pub fn temp_path(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    Some(dir_of(path).join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    )))
}

fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Writes `text` to `path`: write a temporary file in the same directory, flush it to disk,
/// rename it over `path`, then flush the directory entry. Until the rename, the old file is
/// untouched, so a failure at any step keeps it.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    let shown = path.display();
    let tmp = temp_path(path).ok_or_else(|| format!("{shown}: not a file name"))?;
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    match written {
        Ok(()) => {
            // The rename is durable only once the directory is flushed too (POSIX rename(2) and
            // fsync(2)); best effort, since some systems cannot open a directory for this.
            #[cfg(unix)]
            if let Ok(d) = std::fs::File::open(dir_of(path)) {
                d.sync_all().ok();
            }
            Ok(())
        }
        Err(e) => {
            // Best effort: the temporary file is ours and useless after a failure. (When the
            // temporary path is a directory, which is how the tests make the write fail, this
            // leaves it alone: remove_file does not remove directories.)
            std::fs::remove_file(&tmp).ok();
            Err(format!("{shown}: cannot write: {e}"))
        }
    }
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

        // A write that fails after the old file exists: the temporary path is taken by a
        // directory, so creating the temporary file fails (even for root).
        let p = dir.path().join("w.toml");
        std::fs::write(&p, "old").unwrap();
        std::fs::create_dir(temp_path(&p).unwrap()).unwrap();
        assert!(write_atomic(&p, "new").is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
    }
}
