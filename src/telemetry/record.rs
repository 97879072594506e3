//! Recording snapshots to a file while monitoring. The file is opened for appending and each
//! snapshot is written with one `write` of whole lines, so a crash or a second writer never leaves
//! half a record in the middle of the file. An existing file that is not a recording in the same
//! format is refused, never appended to; so is a path that is not a regular file (a device, a
//! FIFO, a directory; a symbolic link is followed to the file it names).
//!
//! The size is bounded by rotation. Past `max_bytes` the file is moved aside and a new one begun.
//! What rotation keeps: the current file and the one part before it *that this recording wrote*.
//! The first rotation moves `FILE` to the first name of `FILE.1`, `FILE.2`, … that is free, so a
//! part left by an earlier recording (or any file of that name) is never replaced; later
//! rotations of the same recording replace that same part, and only while it is still the file
//! this recording put there. A forgotten recording thus holds at most twice the limit on disk.

use super::format::{CSV_HEADER, Format, csv_rows};
use super::sample::Snapshot;
use crate::file_error::FileError;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// Default per-file limit: a day at 1 Hz of one GPU is about 50 MB of JSON Lines.
pub const DEFAULT_MAX_BYTES: u64 = 128 << 20;
/// Names tried for a rotated part (`FILE.1` … `FILE.999`) before rotation gives up.
const MAX_PARTS: u32 = 999;

/// Why a recording could not be begun or kept.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file exists and is not a recording in this format: the user names another.
    #[error("{0}")]
    Refused(String),
    /// The path could not be resolved, opened or read (a refusal when it is not a regular
    /// file, the system's failure otherwise).
    #[error(transparent)]
    File(#[from] FileError),
    /// Writing, encoding, rotating or flushing failed: the system's failure.
    #[error("{0}")]
    Io(String),
}

impl RecordError {
    /// True when the path given is at fault, false when the system is.
    pub fn is_bad_input(&self) -> bool {
        match self {
            RecordError::Refused(_) => true,
            RecordError::File(f) => f.is_refusal(),
            RecordError::Io(_) => false,
        }
    }
}

pub struct Recorder {
    path: PathBuf,
    format: Format,
    file: File,
    written: u64,
    max_bytes: u64,
    /// The part the last rotation made, and how to tell it is still that file.
    rotated: Option<(PathBuf, FileId)>,
}

/// What tells one file from another that later took its name: the device and inode where the
/// system has them, and the size everywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileId {
    len: u64,
    #[cfg(unix)]
    node: (u64, u64),
}

impl FileId {
    fn of(path: &Path) -> Option<FileId> {
        let m = std::fs::symlink_metadata(path).ok()?;
        Some(FileId {
            len: m.len(),
            #[cfg(unix)]
            node: {
                use std::os::unix::fs::MetadataExt;
                (m.dev(), m.ino())
            },
        })
    }
}

impl Recorder {
    /// Opens `path` for appending (creating it), in the format its extension names. A symbolic
    /// link is followed; anything but a regular file or a missing path is refused.
    pub fn open(path: &Path, max_bytes: u64) -> Result<Recorder, RecordError> {
        let format = Format::from_path(path);
        let real = crate::atomic_write::target(path)?;
        check_existing(&real, format)?;
        let (file, written) = open_append(&real)?;
        let mut r = Recorder {
            path: real,
            format,
            file,
            written,
            max_bytes: max_bytes.max(1024),
            rotated: None,
        };
        if r.written == 0 {
            r.write_header()?;
        }
        Ok(r)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_header(&mut self) -> Result<(), RecordError> {
        if self.format == Format::Csv {
            self.write_raw(format!("{CSV_HEADER}\n").as_bytes())?;
        }
        Ok(())
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<(), RecordError> {
        self.file
            .write_all(bytes)
            .map_err(|e| RecordError::Io(format!("cannot write {}: {e}", self.path.display())))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Appends one snapshot.
    pub fn write(&mut self, s: &Snapshot) -> Result<(), RecordError> {
        let record = match self.format {
            Format::Jsonl => {
                let mut line = serde_json::to_string(s)
                    .map_err(|e| RecordError::Io(format!("cannot encode a snapshot: {e}")))?;
                line.push('\n');
                line
            }
            Format::Csv => csv_rows(s),
        };
        if self.written + record.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        self.write_raw(record.as_bytes())
    }

    /// Flushes everything written to the disk and closes the file. Each record already reached
    /// the operating system with its own `write`; this also survives a power cut.
    pub fn finish(self) -> Result<(), RecordError> {
        self.file
            .sync_all()
            .map_err(|e| RecordError::Io(format!("cannot flush {}: {e}", self.path.display())))
    }

    fn rotate(&mut self) -> Result<(), RecordError> {
        let cannot =
            |e: String| RecordError::Io(format!("cannot rotate {}: {e}", self.path.display()));
        // This recording's own previous part goes; a file someone else put at its name stays.
        if let Some((part, id)) = self.rotated.take()
            && FileId::of(&part).as_ref() == Some(&id)
        {
            std::fs::remove_file(&part).map_err(|e| cannot(e.to_string()))?;
        }
        let part = (1..=MAX_PARTS)
            .map(|n| {
                let mut p = self.path.clone().into_os_string();
                p.push(format!(".{n}"));
                PathBuf::from(p)
            })
            .find_map(|p| match move_no_replace(&self.path, &p) {
                Ok(true) => Some(Ok(p)),
                Ok(false) => None,
                Err(e) => Some(Err(e)),
            })
            .unwrap_or_else(|| Err(format!("every name up to .{MAX_PARTS} is taken")))
            .map_err(cannot)?;
        self.rotated = FileId::of(&part).map(|id| (part, id));
        let (file, written) = open_append(&self.path)?;
        self.file = file;
        self.written = written;
        self.write_header()
    }
}

/// Moves `from` to `to` unless `to` exists: `Ok(false)` when it does. A hard link is made first
/// (which fails on an existing name, atomically) and the old name removed; where the file
/// system has no hard links, a plain rename after checking the name is free.
fn move_no_replace(from: &Path, to: &Path) -> Result<bool, String> {
    match std::fs::hard_link(from, to) {
        Ok(()) => std::fs::remove_file(from)
            .map(|()| true)
            .map_err(|e| e.to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(_) if std::fs::symlink_metadata(to).is_ok() => Ok(false),
        Err(_) => std::fs::rename(from, to)
            .map(|()| true)
            .map_err(|e| e.to_string()),
    }
}

fn open_append(path: &Path) -> Result<(File, u64), RecordError> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| {
            RecordError::Io(format!("cannot open {} for recording: {e}", path.display()))
        })?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok((file, len))
}

/// Refuses to append to a non-empty file whose first line is not this format's. Reads at most
/// 64 KiB: enough for any header or snapshot start.
fn check_existing(path: &Path, format: Format) -> Result<(), RecordError> {
    if !path.exists() {
        return Ok(());
    }
    let (f, _) = crate::input_file::open_regular(path)?;
    let mut first = Vec::new();
    // A first line that cannot be read is not taken as an empty file: appending to a file
    // whose kind is unknown could spoil someone else's data.
    BufReader::new(f.take(64 * 1024))
        .take_first_line(&mut first, 64 * 1024)
        .map_err(|e| {
            RecordError::Io(format!(
                "{}: cannot read it to check it: {e}",
                path.display()
            ))
        })?;
    if first.is_empty() {
        return Ok(());
    }
    let line = String::from_utf8_lossy(&first);
    let ok = match format {
        Format::Csv => line.trim_end() == CSV_HEADER,
        Format::Jsonl => line.starts_with("{\"time_ms\":"),
    };
    if ok {
        Ok(())
    } else {
        Err(RecordError::Refused(format!(
            "{} exists and is not a vram-doctor {} recording; choose another file name",
            path.display(),
            if format == Format::Csv {
                "CSV"
            } else {
                "JSON Lines"
            }
        )))
    }
}

/// Reading one line with a length bound.
pub trait TakeLine {
    /// Appends up to `max` bytes of the next line (without its `\n`) to `buf`; the rest of an
    /// overlong line is skipped. Returns `Ok(None)` at the end of the input, else whether the
    /// line was complete.
    fn take_first_line(&mut self, buf: &mut Vec<u8>, max: usize) -> std::io::Result<Option<bool>>;
}

impl<R: BufRead> TakeLine for R {
    fn take_first_line(&mut self, buf: &mut Vec<u8>, max: usize) -> std::io::Result<Option<bool>> {
        let mut any = false;
        let mut complete = true;
        loop {
            let chunk = self.fill_buf()?;
            if chunk.is_empty() {
                return Ok(any.then_some(complete));
            }
            any = true;
            let (part, found) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (&chunk[..i], Some(i + 1)),
                None => (chunk, None),
            };
            let room = max.saturating_sub(buf.len());
            if part.len() > room {
                complete = false;
            }
            buf.extend_from_slice(&part[..part.len().min(room)]);
            let used = found.unwrap_or(chunk.len());
            self.consume(used);
            if found.is_some() {
                return Ok(Some(complete));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::demo::DemoSource;
    use crate::telemetry::source::Source;

    #[test]
    fn appends_whole_records_and_rotates_at_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.jsonl");
        let mut demo = DemoSource::new(3);
        let mut r = Recorder::open(&path, 8 * 1024).unwrap();
        for _ in 0..40 {
            r.write(&demo.sample()).unwrap();
        }
        drop(r);
        let main = std::fs::read_to_string(&path).unwrap();
        let old = std::fs::read_to_string(dir.path().join("rec.jsonl.1")).unwrap();
        assert!(main.len() as u64 <= 8 * 1024 && old.len() as u64 <= 8 * 1024);
        for line in main.lines().chain(old.lines()) {
            serde_json::from_str::<Snapshot>(line).expect("every line is a whole snapshot");
        }
        // Re-opening appends instead of truncating.
        let before = main.lines().count();
        Recorder::open(&path, 1 << 20)
            .unwrap()
            .write(&demo.sample())
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap().lines().count(),
            before + 1
        );
    }

    #[test]
    fn csv_has_one_header_even_when_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.CSV");
        let mut demo = DemoSource::new(3);
        for _ in 0..2 {
            Recorder::open(&path, 1 << 20)
                .unwrap()
                .write(&demo.sample())
                .unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().filter(|l| *l == CSV_HEADER).count(), 1);
        assert_eq!(text.lines().count(), 3);
    }

    #[test]
    fn refuses_to_append_to_a_foreign_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.csv");
        std::fs::write(&path, "my,precious,data\n").unwrap();
        let err = Recorder::open(&path, 1 << 20).err().unwrap();
        assert!(err.is_bad_input(), "{err}");
        assert!(
            err.to_string().contains("not a vram-doctor CSV recording"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "my,precious,data\n",
            "untouched"
        );
        let missing_dir = dir.path().join("no/such/dir/x.jsonl");
        let err = Recorder::open(&missing_dir, 1 << 20).err().unwrap();
        assert!(
            !err.is_bad_input() && err.to_string().contains("cannot open"),
            "{err}"
        );
    }

    #[test]
    fn rotation_never_replaces_a_part_it_did_not_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.jsonl");
        let earlier = dir.path().join("rec.jsonl.1");
        std::fs::write(&earlier, "an earlier recording's part\n").unwrap();
        let mut demo = DemoSource::new(3);
        let mut r = Recorder::open(&path, 4 * 1024).unwrap();
        for _ in 0..60 {
            r.write(&demo.sample()).unwrap();
        }
        drop(r);
        assert_eq!(
            std::fs::read_to_string(&earlier).unwrap(),
            "an earlier recording's part\n"
        );
        // The recording's own parts: the current file and one rotated part, `.2`.
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["rec.jsonl", "rec.jsonl.1", "rec.jsonl.2"]);
        let part = std::fs::read_to_string(dir.path().join("rec.jsonl.2")).unwrap();
        assert!(part.len() <= 4 * 1024 && part.starts_with("{\"time_ms\":"));
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_links_are_not_recorded_over() {
        // /dev/zero would be read forever by the format check; it is refused unopened.
        let e = Recorder::open(Path::new("/dev/zero"), 1 << 20)
            .err()
            .unwrap();
        assert!(
            e.is_bad_input() && e.to_string().contains("character device"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.jsonl");
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        std::fs::write(&real, "").unwrap();
        let mut r = Recorder::open(&link, 1 << 20).unwrap();
        r.write(&DemoSource::new(1).sample()).unwrap();
        drop(r);
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap().lines().count(), 1);
    }

    #[test]
    fn bounded_line_reading() {
        let mut input: &[u8] = b"short\nthis line is far too long\nend";
        let mut out = vec![];
        let mut buf = Vec::new();
        while let Some(complete) = input.take_first_line(&mut buf, 8).unwrap() {
            out.push((
                String::from_utf8(std::mem::take(&mut buf)).unwrap(),
                complete,
            ));
        }
        assert_eq!(
            out,
            vec![
                ("short".into(), true),
                ("this lin".into(), false),
                ("end".into(), true)
            ]
        );
    }
}
