//! The user's presets file: where it lives, reading it with a size cap, setting a bad one aside
//! unchanged, and saving atomically.
//!
//! The file is the user's, so a bad one is never dropped: one that cannot be read as presets is
//! renamed aside (`user-presets.toml.corrupt-<UTC time>`, never over an existing file) and the
//! message names the file, the line or entry at fault, and where the copy went. It is read with a
//! size cap (`MAX_FILE_BYTES`), and written only through `write_atomic`.

use super::UserPresets;
use crate::atomic_write::write_atomic;
use crate::file_error::FileError;
use crate::types::message::Message;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The file's name in the config directory.
pub const FILE_NAME: &str = "user-presets.toml";
/// Largest file read. A hand-written presets file is a few KiB; 1 MiB holds thousands of entries.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// Environment variable naming the directory to use instead of the OS config directory (tests,
/// screenshots, portable installs).
pub const DIR_ENV: &str = "VRAM_DOCTOR_CONFIG_DIR";

/// Where the file lives: `$VRAM_DOCTOR_CONFIG_DIR/user-presets.toml` when that is set, else the
/// OS config directory (`~/.config/vram-doctor` on Linux, `%APPDATA%\vram-doctor\config` on
/// Windows, `~/Library/Application Support/vram-doctor` on macOS; `directories` crate).
pub fn default_path() -> Result<PathBuf, PresetsFileError> {
    if let Some(d) = std::env::var_os(DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join(FILE_NAME));
    }
    directories::ProjectDirs::from("", "", "vram-doctor")
        .map(|d| d.config_dir().join(FILE_NAME))
        .ok_or(PresetsFileError::NoConfigDir)
}

/// Why the user's presets file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PresetsFileError {
    /// The system names no config directory for this user (no home directory): the machine's
    /// setup, which the user fixes by naming one.
    #[error("no config directory is known for this user (no home directory); set {DIR_ENV}")]
    NoConfigDir,
    /// The file cannot be opened or read at all (permissions, a folder at its name, a failing
    /// disk): the app leaves it where it is and does not save over it.
    #[error(transparent)]
    File(#[from] FileError),
    /// It was read but is not a presets file (too large, not UTF-8, a TOML or value error; the
    /// message names the file and the line or entry): the app sets it aside.
    #[error("{0}")]
    Malformed(String),
}

impl PresetsFileError {
    /// True when the file's content or path is at fault, false when the system is.
    pub fn is_bad_input(&self) -> bool {
        match self {
            PresetsFileError::NoConfigDir => false,
            PresetsFileError::File(f) => f.is_refusal(),
            PresetsFileError::Malformed(_) => true,
        }
    }
}

/// Reads the file at `path` without changing anything: `None` when there is none.
fn read_file(path: &Path) -> Result<Option<UserPresets>, PresetsFileError> {
    let shown = path.display();
    // Checked before opening: a FIFO at this name would block the app at start.
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    let f = crate::input_file::open_regular(path)?.0;
    // Read one byte past the cap, so a file that grows while being read is still caught.
    let mut bytes = Vec::new();
    f.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FileError::io(path, "cannot read", e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(PresetsFileError::Malformed(format!(
            "{shown}: larger than the {} KiB a presets file may have",
            MAX_FILE_BYTES >> 10
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|e| PresetsFileError::Malformed(format!("{shown}: not UTF-8 text: {e}")))?;
    UserPresets::parse(&text, &shown.to_string())
        .map(Some)
        .map_err(PresetsFileError::Malformed)
}

/// Reads the file without changing anything (the command line's view): empty when there is
/// none, and the reason when it cannot be used.
pub fn read(path: &Path) -> Result<UserPresets, PresetsFileError> {
    Ok(read_file(path)?.unwrap_or_default())
}

/// The user's presets as the app holds them: the file's path, its entries, and what happened
/// when it was opened.
#[derive(Debug, Clone, Default)]
pub struct UserStore {
    pub path: PathBuf,
    pub presets: UserPresets,
    /// What the user must be told about the file found at opening (set aside, unreadable).
    pub notice: Option<String>,
    /// Set when a file is there that could neither be read nor set aside: saving would
    /// overwrite it, so saving is refused with this reason.
    blocked: Option<String>,
}

impl UserStore {
    /// Opens the file at `path`. Missing: no presets. Unusable: moved aside (never deleted,
    /// never over another file) and `notice` says why and where; if it cannot be moved, it is
    /// left alone and saving is refused, so it is never overwritten either.
    pub fn open(path: PathBuf) -> Self {
        let mut store = UserStore {
            path,
            ..Default::default()
        };
        match read_file(&store.path) {
            Ok(p) => store.presets = p.unwrap_or_default(),
            Err(e @ (PresetsFileError::File(_) | PresetsFileError::NoConfigDir)) => {
                store.notice = Some(format!(
                    "{e}; your presets are not shown, and saving is off so that the file is not overwritten"
                ));
                store.blocked = store.notice.clone();
            }
            Err(e @ PresetsFileError::Malformed(_)) => match set_aside(&store.path) {
                Ok(copy) => {
                    store.notice = Some(format!(
                        "{e}. The file was moved to {} unchanged; your presets start empty. \
                         Fix that copy and move it back, or add your presets again.",
                        copy.display()
                    ));
                }
                Err(why) => {
                    store.notice = Some(format!(
                        "{e}. It could not be moved aside ({why}), so saving is off until you \
                         fix or move it yourself."
                    ));
                    store.blocked = store.notice.clone();
                }
            },
        }
        store
    }

    /// The file at `default_path`; without a config directory, an empty store that says why
    /// and refuses to save.
    pub fn open_default() -> Self {
        match default_path() {
            Ok(p) => UserStore::open(p),
            Err(why) => UserStore {
                notice: Some(why.to_string()),
                blocked: Some(why.to_string()),
                ..Default::default()
            },
        }
    }

    /// Why saving is refused, if it is.
    pub fn blocked(&self) -> Option<&str> {
        self.blocked.as_deref()
    }

    /// Writes `presets` atomically (creating the directory), and holds them once written. On
    /// failure the file on disk and the presets held stay as they were; the error says why, the
    /// reason itself (the file's, the system's) as its English text.
    pub fn save(&mut self, presets: UserPresets) -> Result<(), Message> {
        let not_saved = |why: String| Message::new("save.not_saved").text("why", why);
        if let Some(why) = &self.blocked {
            return Err(not_saved(why.clone()));
        }
        presets.validate().map_err(not_saved)?;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                Message::new("save.no_folder")
                    .text("dir", dir.display().to_string())
                    .text("error", e.to_string())
            })?;
        }
        let text = presets.to_toml().map_err(|e| not_saved(e.to_string()))?;
        write_atomic(&self.path, &text).map_err(|e| not_saved(e.to_string()))?;
        self.presets = presets;
        Ok(())
    }
}

/// Renames `path` to `<name>.corrupt-<UTC time>` (with `-2`, `-3` … when that exists) and
/// returns the new path.
fn set_aside(path: &Path) -> Result<PathBuf, String> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Built on the OS string, so a path that is not UTF-8 keeps its exact bytes.
    let with = |suffix: String| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    };
    let stamp = format!(".corrupt-{}", utc_stamp(secs));
    let free = std::iter::once(with(stamp.clone()))
        .chain((2..1000).map(|n| with(format!("{stamp}-{n}"))))
        .find(|p| !p.exists())
        .ok_or("every name for the copy is taken")?;
    std::fs::rename(path, &free).map_err(|e| e.to_string())?;
    Ok(free)
}

/// `YYYYMMDD-HHMMSSZ` for seconds since 1970 (UTC), by the days-to-civil algorithm of Howard
/// Hinnant, "chrono-Compatible Low-Level Date Algorithms" (`civil_from_days`).
fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let s = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::{gpu, model};
    use super::*;

    fn store_in(dir: &Path) -> UserStore {
        UserStore::open(dir.join("cfg").join(FILE_NAME))
    }

    #[test]
    fn utc_stamps_match_known_dates() {
        assert_eq!(utc_stamp(0), "19700101-000000Z");
        // 2000-02-29 12:34:56 UTC (a leap day in a century leap year).
        assert_eq!(utc_stamp(951_827_696), "20000229-123456Z");
    }

    #[test]
    fn save_then_open_round_trips_and_creates_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store_in(dir.path());
        assert!(
            s.presets.gpus.is_empty() && s.notice.is_none(),
            "missing = empty"
        );
        let mut p = s.presets.clone();
        p.put(None, gpu("Lab card", 12.0)).unwrap();
        p.put(None, model()).unwrap();
        s.save(p.clone()).unwrap();
        let again = store_in(dir.path());
        assert_eq!(again.presets, p);
        assert!(again.notice.is_none());
        assert_eq!(read(&s.path).unwrap(), p);
        let text = std::fs::read_to_string(&s.path).unwrap();
        assert!(
            text.starts_with("# VRAM Doctor") && text.contains("[[gpu]]"),
            "{text}"
        );
    }

    #[test]
    fn a_failed_save_keeps_the_old_file_and_the_presets() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store_in(dir.path());
        let mut p = UserPresets::default();
        p.put(None, gpu("Old", 12.0)).unwrap();
        s.save(p.clone()).unwrap();
        let before = std::fs::read(&s.path).unwrap();
        // Block the temporary file's path with a directory: the write fails even for root.
        std::fs::create_dir(crate::atomic_write::temp_path(&s.path).unwrap()).unwrap();
        let mut next = p.clone();
        next.put(None, gpu("New", 16.0)).unwrap();
        let e = s.save(next).unwrap_err().to_string();
        assert!(e.contains(FILE_NAME) && e.contains("cannot write"), "{e}");
        assert_eq!(std::fs::read(&s.path).unwrap(), before);
        assert_eq!(s.presets, p, "the presets held stay the saved ones");
        // An invalid set is refused before anything is written.
        let mut bad = p.clone();
        bad.gpus[0].vram_gib = -1.0;
        assert!(s.save(bad).unwrap_err().to_string().contains("vram_gib"));
    }

    /// Each kind of bad file, with what its message must name.
    #[test]
    fn a_corrupt_file_is_set_aside_unchanged_and_named() {
        let cases: [(&[u8], &str); 6] = [
            (b"[[gpu]\nid = 1\n", "line 1"),
            (b"[[gpu]]\nid = \"a\"\nname = \"A\"\nvram_gib = -2\n", "vram_gib"),
            (b"[[gpu]]\nid = \"a\"\nname = \"A\"\nvram_gib = 8\ncolour = \"red\"\n", "colour"),
            (
                b"[[gpu]]\nid = \"a\"\nname = \"A\"\nvram_gib = 8\n[[gpu]]\nid = \"a\"\nname = \"B\"\nvram_gib = 9\n",
                "used twice",
            ),
            (b"\xff\xfe not text", "UTF-8"),
            (b"name = \"x\"\n", "name"),
        ];
        for (bytes, names) in cases {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(FILE_NAME);
            std::fs::write(&path, bytes).unwrap();
            let s = UserStore::open(path.clone());
            let notice = s.notice.clone().expect("a notice");
            assert!(
                notice.contains(names) && notice.contains(FILE_NAME),
                "{notice}"
            );
            assert!(!path.exists(), "the bad file was moved");
            let copies: Vec<PathBuf> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            assert_eq!(copies.len(), 1);
            let copy = &copies[0];
            assert!(
                copy.to_string_lossy().contains(".corrupt-")
                    && notice.contains(&*copy.to_string_lossy()),
                "{notice}"
            );
            assert_eq!(
                std::fs::read(copy).unwrap(),
                bytes,
                "the copy is the original"
            );
            assert!(s.presets.gpus.is_empty() && s.blocked().is_none());
        }
    }

    #[test]
    fn set_aside_never_overwrites_an_earlier_copy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        for n in 0..3 {
            std::fs::write(&path, format!("broken {n} [")).unwrap();
            assert!(UserStore::open(path.clone()).notice.is_some());
        }
        let mut kept: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect();
        kept.sort();
        assert_eq!(kept, ["broken 0 [", "broken 1 [", "broken 2 ["]);
    }

    #[test]
    fn an_oversized_file_is_set_aside_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, "#".repeat(MAX_FILE_BYTES as usize + 10)).unwrap();
        let s = UserStore::open(path.clone());
        assert!(s.notice.unwrap().contains("1024 KiB"));
        assert!(!path.exists());
    }

    #[test]
    fn an_unreadable_file_is_left_alone_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be: it cannot be read, and must not be replaced.
        let path = dir.path().join(FILE_NAME);
        std::fs::create_dir(&path).unwrap();
        let mut s = UserStore::open(path.clone());
        assert!(s.notice.as_deref().unwrap().contains("saving is off"));
        let e = s.save(UserPresets::default()).unwrap_err().to_string();
        assert!(e.starts_with("not saved"), "{e}");
        assert!(path.is_dir());
        assert!(read(&path).is_err());
    }
}
