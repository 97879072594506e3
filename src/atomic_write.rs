//! Atomic writes of user files, shared by every layer that saves one (workload files, exports,
//! the user's presets): a crash or a full disk never leaves a half-written file behind, and a
//! write never replaces what the path points at with something else.
//!
//! What a write does with the path it is given:
//! - missing: the file is created;
//! - a regular file: replaced by the new content (keeping the old file's permissions);
//! - a symbolic link to a regular file: the file it points at is replaced, the link stays;
//! - anything else (a directory, a device node such as `/dev/null`, a FIFO, a socket, a link
//!   to one of these, or a link to nothing): refused with one line naming what it is.
//!
//! Temporaries are `.NAME.PID.tmp` beside the target. One left by a writer that was killed
//! (its process is gone) is removed by the next write of the same file.

use crate::file_error::FileError;
use crate::input_file::kind_name;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The temporary file `write_atomic` writes before renaming it over `path`: in the same
/// directory (a rename across file systems is not atomic), hidden, and named for this process.
pub fn temp_path(path: &Path) -> Option<PathBuf> {
    temp_for(path, std::process::id())
}

fn temp_for(path: &Path, pid: u32) -> Option<PathBuf> {
    let name = path.file_name()?;
    Some(dir_of(path).join(format!(".{}.{pid}.tmp", name.to_string_lossy())))
}

fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The file a write to `path` really replaces: `path` itself, or the regular file a symbolic
/// link (or a chain of them) points at. Anything that is not a regular file or a missing path is
/// refused, so a write never turns a link, a device or a directory into a plain file.
pub fn target(path: &Path) -> Result<PathBuf, FileError> {
    let link = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(path.to_path_buf()),
        Err(e) => return Err(FileError::io(path, "cannot write", e)),
    };
    let meta = if link.file_type().is_symlink() {
        match std::fs::metadata(path) {
            Ok(m) => m,
            Err(_) => {
                return Err(FileError::refused(
                    path,
                    "is a symbolic link to nothing; write to the file it should name, or remove the link",
                ));
            }
        }
    } else {
        link.clone()
    };
    if !meta.is_file() {
        return Err(FileError::refused(
            path,
            format!(
                "is {}, not a regular file; it is left as it is (name a file to write)",
                kind_name(&meta)
            ),
        ));
    }
    if link.file_type().is_symlink() {
        std::fs::canonicalize(path).map_err(|e| FileError::io(path, "cannot follow the link", e))
    } else {
        Ok(path.to_path_buf())
    }
}

/// Whether process `pid` still runs. Linux and other systems with `/proc` answer exactly;
/// elsewhere a temporary is taken as live for an hour after it was last written.
fn is_live(pid: u32, temp: &Path) -> bool {
    if pid == std::process::id() {
        return true;
    }
    if Path::new("/proc/self").exists() {
        return Path::new("/proc").join(pid.to_string()).exists();
    }
    std::fs::metadata(temp)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_none_or(|age| age.as_secs() < 3600)
}

/// Removes the temporaries that killed writers left for `path` (`.NAME.PID.tmp` whose process
/// is gone): files, or folders for an export set. Best effort: one that cannot be removed is
/// left for the next write.
pub fn remove_stale_temps(path: &Path) {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir_of(path)) else {
        return;
    };
    let prefix = format!(".{name}.");
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = file
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(".tmp"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let p = e.path();
        if is_live(pid, &p) {
            continue;
        }
        match e.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&p).ok(),
            Ok(_) => std::fs::remove_file(&p).ok(),
            Err(_) => None,
        };
    }
}

/// Creates `tmp` afresh (never through a link or over a file someone else put there) and
/// writes `text` to it, flushed to the disk.
fn write_temp(tmp: &Path, text: &[u8], like: Option<&std::fs::Metadata>) -> std::io::Result<()> {
    // Only a file of our own process id can be at this name (an earlier failed write).
    if std::fs::symlink_metadata(tmp).is_ok_and(|m| !m.is_dir()) {
        std::fs::remove_file(tmp)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)?;
    f.write_all(text)?;
    if let Some(old) = like {
        f.set_permissions(old.permissions())?;
    }
    f.sync_all()
}

/// Flushes a directory entry to disk: a rename is durable only once its directory is (POSIX
/// rename(2) and fsync(2)). Best effort, since some systems cannot open a directory for this.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        d.sync_all().ok();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Writes `text` to `path` (see the module notes for what a path may be): write a temporary
/// file in the same directory, flush it to disk, rename it over the target, then flush the
/// directory entry. Until the rename, the old file is untouched, so a failure at any step
/// keeps it.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), FileError> {
    write_atomic_bytes(path, text.as_bytes())
}

/// [`write_atomic`] for binary content (a PNG plot).
pub fn write_atomic_bytes(path: &Path, text: &[u8]) -> Result<(), FileError> {
    let real = target(path)?;
    let tmp = temp_path(&real).ok_or_else(|| FileError::refused(path, "not a file name"))?;
    remove_stale_temps(&real);
    let old = std::fs::metadata(&real).ok();
    let written = write_temp(&tmp, text, old.as_ref()).and_then(|()| std::fs::rename(&tmp, &real));
    match written {
        Ok(()) => {
            sync_dir(dir_of(&real));
            Ok(())
        }
        Err(e) => {
            // Best effort: the temporary file is ours and useless after a failure. (When the
            // temporary path is a directory, which is how the tests make the write fail, this
            // leaves it alone: remove_file does not remove directories.)
            std::fs::remove_file(&tmp).ok();
            Err(FileError::io(path, "cannot write", e))
        }
    }
}

/// Writes several files into the folder `dir` as one set (`plan --export all --out DIR`) and
/// returns their paths.
///
/// - `dir` missing: the set is written into a hidden sibling folder (`.DIR.PID.tmp`), every
///   file flushed, and the folder renamed to `dir` in one step, so `dir` either does not exist
///   or holds the whole set. Missing parent folders are created first.
/// - `dir` an existing folder (or a link to one) that holds nothing but files of this set (an
///   earlier export): on Linux the new set is built the same way and swapped with the folder in
///   one step (`renameat2` with `RENAME_EXCHANGE`), then the old set is removed; `dir` holds the
///   old set or the new one, never a mix.
/// - any other existing folder (one holding other files, which are the user's, or on a system
///   or file system without the swap): every file of the set is written and flushed as a
///   temporary first, and only when all are on disk are they renamed into place, each rename
///   atomic. An interruption while writing leaves every old file as it was; only the renames
///   themselves (microseconds, no writing) can be cut between, leaving some files new and the
///   rest old.
/// - anything else: refused, as for [`write_atomic`].
pub fn write_set(dir: &Path, files: &[(&str, &str)]) -> Result<Vec<PathBuf>, FileError> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {
            let real = std::fs::canonicalize(dir)
                .map_err(|e| FileError::io(dir, "cannot open the folder", e))?;
            if !(only_files_of(&real, files) && swap_whole(&real, &m, files)?) {
                replace_in(&real, files)?;
            }
            Ok(files.iter().map(|(n, _)| dir.join(n)).collect())
        }
        Ok(m) => Err(FileError::refused(
            dir,
            format!(
                "is {}, not a folder; several files are written to a folder (name a new or existing one)",
                kind_name(&m)
            ),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if std::fs::symlink_metadata(dir).is_ok() {
                return Err(FileError::refused(
                    dir,
                    "is a symbolic link to nothing; name the folder itself, or remove the link",
                ));
            }
            create_whole(dir, files)?;
            Ok(files.iter().map(|(n, _)| dir.join(n)).collect())
        }
        Err(e) => Err(FileError::io(dir, "cannot write", e)),
    }
}

/// Builds the set in the hidden sibling folder of `dir` (`.DIR.PID.tmp`), every file and the
/// folder flushed; returns the folder.
fn build_temp(dir: &Path, files: &[(&str, &str)]) -> std::io::Result<PathBuf> {
    let tmp = temp_path(dir).ok_or(std::io::ErrorKind::InvalidInput)?;
    remove_stale_temps(dir);
    let built = (|| {
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp)?;
        }
        std::fs::create_dir(&tmp)?;
        for (name, text) in files {
            write_temp(&tmp.join(name), text.as_bytes(), None)?;
        }
        sync_dir(&tmp);
        Ok(())
    })();
    match built {
        Ok(()) => Ok(tmp),
        Err(e) => {
            std::fs::remove_dir_all(&tmp).ok();
            Err(e)
        }
    }
}

/// `write_set` into a folder that does not exist yet: build it hidden, then rename it.
fn create_whole(dir: &Path, files: &[(&str, &str)]) -> Result<(), FileError> {
    let parent = dir_of(dir);
    std::fs::create_dir_all(parent)
        .map_err(|e| FileError::io(dir, "cannot create the folder it is in", e))?;
    let tmp =
        build_temp(dir, files).map_err(|e| FileError::io(dir, "cannot write the folder", e))?;
    if let Err(e) = std::fs::rename(&tmp, dir) {
        std::fs::remove_dir_all(&tmp).ok();
        return Err(FileError::io(dir, "cannot write the folder", e));
    }
    sync_dir(parent);
    Ok(())
}

/// Whether `dir` holds nothing but regular files named as files of the set: then swapping it
/// for the new set loses nothing.
fn only_files_of(dir: &Path, files: &[(&str, &str)]) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.into_iter().all(|e| {
        e.is_ok_and(|e| {
            let name = e.file_name();
            e.file_type().is_ok_and(|t| t.is_file())
                && files.iter().any(|(n, _)| name.to_str() == Some(*n))
        })
    })
}

/// `write_set` into a folder holding only an earlier set: build the new set beside it and swap
/// the two in one step. `Ok(false)` when the system cannot swap (the caller then replaces file
/// by file); the folder keeps its permissions.
fn swap_whole(
    dir: &Path,
    meta: &std::fs::Metadata,
    files: &[(&str, &str)],
) -> Result<bool, FileError> {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        return Ok(false);
    }
    let tmp =
        build_temp(dir, files).map_err(|e| FileError::io(dir, "cannot write the folder", e))?;
    std::fs::set_permissions(&tmp, meta.permissions()).ok();
    if !exchange(&tmp, dir) {
        std::fs::remove_dir_all(&tmp).ok();
        return Ok(false);
    }
    sync_dir(dir_of(dir));
    // `tmp` now holds the old set.
    std::fs::remove_dir_all(&tmp).ok();
    Ok(true)
}

/// Swaps two paths in one step: Linux `renameat2(2)` with `RENAME_EXCHANGE` (Linux 3.15, glibc
/// 2.28; the flag's value from `include/uapi/linux/fs.h`). False where it fails (a file system
/// without it answers `EINVAL`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn exchange(a: &Path, b: &Path) -> bool {
    use std::ffi::{CString, c_char, c_int, c_uint};
    use std::os::unix::ffi::OsStrExt;
    unsafe extern "C" {
        fn renameat2(
            olddirfd: c_int,
            oldpath: *const c_char,
            newdirfd: c_int,
            newpath: *const c_char,
            flags: c_uint,
        ) -> c_int;
    }
    const AT_FDCWD: c_int = -100;
    const RENAME_EXCHANGE: c_uint = 1 << 1;
    let (Ok(x), Ok(y)) = (
        CString::new(a.as_os_str().as_bytes()),
        CString::new(b.as_os_str().as_bytes()),
    ) else {
        return false;
    };
    // SAFETY: both pointers are NUL-terminated strings that outlive the call; renameat2 only
    // reads them.
    unsafe { renameat2(AT_FDCWD, x.as_ptr(), AT_FDCWD, y.as_ptr(), RENAME_EXCHANGE) == 0 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn exchange(_: &Path, _: &Path) -> bool {
    false
}

/// `write_set` into an existing folder: every temporary first, then the renames.
fn replace_in(dir: &Path, files: &[(&str, &str)]) -> Result<(), FileError> {
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut stage = || -> Result<(), FileError> {
        for (name, text) in files {
            let real = target(&dir.join(name))?;
            let tmp = temp_path(&real)
                .ok_or_else(|| FileError::refused(Path::new(name), "not a file name"))?;
            remove_stale_temps(&real);
            let old = std::fs::metadata(&real).ok();
            staged.push((tmp.clone(), real.clone()));
            write_temp(&tmp, text.as_bytes(), old.as_ref())
                .map_err(|e| FileError::io(&real, "cannot write", e))?;
        }
        Ok(())
    };
    if let Err(e) = stage() {
        for (tmp, _) in &staged {
            std::fs::remove_file(tmp).ok();
        }
        return Err(e);
    }
    for (i, (tmp, real)) in staged.iter().enumerate() {
        if let Err(e) = std::fs::rename(tmp, real) {
            for (t, _) in &staged[i..] {
                std::fs::remove_file(t).ok();
            }
            return Err(FileError::io(real, "cannot write", e));
        }
    }
    sync_dir(dir);
    Ok(())
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
        assert!(
            e.is_refusal(),
            "a folder that is not there is the path's fault: {e:?}"
        );
        let e = e.to_string();
        assert!(e.contains("w.toml") && e.contains("cannot write"), "{e}");

        // A write that fails after the old file exists: the temporary path is taken by a
        // directory, so creating the temporary file fails (even for root).
        let p = dir.path().join("w.toml");
        std::fs::write(&p, "old").unwrap();
        std::fs::create_dir(temp_path(&p).unwrap()).unwrap();
        assert!(write_atomic(&p, "new").is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
    }

    #[cfg(unix)]
    #[test]
    fn links_are_followed_and_other_kinds_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.toml");
        std::fs::write(&real, "old").unwrap();
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, "new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");

        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        let e = write_atomic(&dangling, "x").unwrap_err().to_string();
        assert!(e.contains("symbolic link to nothing"), "{e}");
        assert!(
            std::fs::symlink_metadata(&dangling)
                .unwrap()
                .file_type()
                .is_symlink()
        );

        // A directory, a device and a link to a device: one line each, nothing replaced.
        let e = write_atomic(dir.path(), "x").unwrap_err();
        assert!(
            matches!(e, FileError::Refused { .. }),
            "the path's fault: {e:?}"
        );
        let e = e.to_string();
        assert!(e.contains("is a directory, not a regular file"), "{e}");
        let to_null = dir.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &to_null).unwrap();
        for p in [Path::new("/dev/null"), &to_null] {
            let e = write_atomic(p, "x").unwrap_err().to_string();
            assert!(e.contains("is a character device"), "{e}");
            assert_eq!(e.lines().count(), 1);
        }
    }

    #[test]
    fn temporaries_of_killed_writers_are_removed_by_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.toml");
        // A process id that no process has (past the Linux maximum, 2^22): its writer is gone.
        let stale = temp_for(&p, 4_194_999).unwrap();
        std::fs::write(&stale, "half").unwrap();
        // A temporary of a process that runs (this one's parent) stays.
        let live_pid = if Path::new("/proc/self").exists() {
            1
        } else {
            std::process::id()
        };
        let live = temp_for(&p, live_pid).unwrap();
        std::fs::write(&live, "busy").unwrap();
        let other = dir.path().join(".other.toml.4194999.tmp");
        std::fs::write(&other, "not ours").unwrap();
        write_atomic(&p, "new").unwrap();
        if Path::new("/proc/self").exists() {
            assert!(!stale.exists(), "stale temporary kept");
        }
        assert!(live.exists() && other.exists());
    }

    #[test]
    fn a_new_folder_appears_whole_and_an_existing_one_keeps_other_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a").join("set/");
        let written = write_set(&out, &[("x.json", "{}"), ("y.sh", "echo")]).unwrap();
        assert_eq!(written.len(), 2);
        assert_eq!(std::fs::read_to_string(out.join("y.sh")).unwrap(), "echo");
        let names = |d: &Path| {
            let mut v: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        assert_eq!(
            names(&dir.path().join("a")),
            ["set"],
            "temporary folder left"
        );
        // Again into the folder holding only the set: swapped whole (on Linux), nothing left.
        let before = std::fs::metadata(&out).unwrap();
        write_set(&out, &[("x.json", "{\"b\":2}"), ("y.sh", "echo 1")]).unwrap();
        assert_eq!(names(&out), ["x.json", "y.sh"]);
        assert_eq!(names(&dir.path().join("a")), ["set"], "old set left");
        assert_eq!(
            std::fs::read_to_string(out.join("x.json")).unwrap(),
            "{\"b\":2}"
        );
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            use std::os::unix::fs::MetadataExt;
            let after = std::fs::metadata(&out).unwrap();
            assert_ne!(before.ino(), after.ino(), "not swapped as a folder");
        }
        let _ = before;
        // Again into the folder, which now also holds a file of the user's.
        std::fs::write(out.join("mine.txt"), "keep").unwrap();
        write_set(&out, &[("x.json", "{\"a\":1}"), ("y.sh", "echo 2")]).unwrap();
        assert_eq!(names(&out), ["mine.txt", "x.json", "y.sh"]);
        assert_eq!(
            std::fs::read_to_string(out.join("mine.txt")).unwrap(),
            "keep"
        );
        // A set whose second file cannot be written leaves the first one old.
        std::fs::create_dir(out.join("z.py")).unwrap();
        let e = write_set(&out, &[("x.json", "new"), ("z.py", "x")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("z.py") && e.contains("is a directory"), "{e}");
        assert_eq!(
            std::fs::read_to_string(out.join("x.json")).unwrap(),
            "{\"a\":1}"
        );
        assert_eq!(names(&out), ["mine.txt", "x.json", "y.sh", "z.py"]);
        // A file where the folder should be.
        let e = write_set(&out.join("mine.txt"), &[("x", "y")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a folder"), "{e}");
    }
}
