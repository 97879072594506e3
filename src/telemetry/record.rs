//! Recording snapshots to a file while monitoring. The file is opened for appending and each
//! snapshot is written with one `write` of whole lines, so a crash or a second writer never leaves
//! half a record in the middle of the file. The size is bounded: past `max_bytes` the file is
//! rotated to `FILE.1` (replacing an older one), so a forgotten recording holds at most twice the
//! limit on disk. An existing file that is not a recording in the same format is refused, never
//! appended to.

use super::format::{CSV_HEADER, Format, csv_rows};
use super::sample::Snapshot;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// Default per-file limit: a day at 1 Hz of one GPU is about 50 MB of JSON Lines.
pub const DEFAULT_MAX_BYTES: u64 = 128 << 20;

pub struct Recorder {
    path: PathBuf,
    format: Format,
    file: File,
    written: u64,
    max_bytes: u64,
}

impl Recorder {
    /// Opens `path` for appending (creating it), in the format its extension names.
    pub fn open(path: &Path, max_bytes: u64) -> Result<Recorder, String> {
        let format = Format::from_path(path);
        check_existing(path, format)?;
        let (file, written) = open_append(path)?;
        let mut r = Recorder {
            path: path.to_path_buf(),
            format,
            file,
            written,
            max_bytes: max_bytes.max(1024),
        };
        if r.written == 0 {
            r.write_header()?;
        }
        Ok(r)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_header(&mut self) -> Result<(), String> {
        if self.format == Format::Csv {
            self.write_raw(format!("{CSV_HEADER}\n").as_bytes())?;
        }
        Ok(())
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.file
            .write_all(bytes)
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Appends one snapshot.
    pub fn write(&mut self, s: &Snapshot) -> Result<(), String> {
        let record = match self.format {
            Format::Jsonl => {
                let mut line = serde_json::to_string(s)
                    .map_err(|e| format!("cannot encode a snapshot: {e}"))?;
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
    pub fn finish(self) -> Result<(), String> {
        self.file
            .sync_all()
            .map_err(|e| format!("cannot flush {}: {e}", self.path.display()))
    }

    fn rotate(&mut self) -> Result<(), String> {
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        std::fs::rename(&self.path, &old)
            .map_err(|e| format!("cannot rotate {}: {e}", self.path.display()))?;
        let (file, written) = open_append(&self.path)?;
        self.file = file;
        self.written = written;
        self.write_header()
    }
}

fn open_append(path: &Path) -> Result<(File, u64), String> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("cannot open {} for recording: {e}", path.display()))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok((file, len))
}

/// Refuses to append to a non-empty file whose first line is not this format's.
fn check_existing(path: &Path, format: Format) -> Result<(), String> {
    let Ok(f) = File::open(path) else {
        return Ok(());
    };
    let mut first = Vec::new();
    // Read at most 64 KiB of the first line: enough for any header or snapshot start.
    let _ = BufReader::new(f).take_first_line(&mut first, 64 * 1024);
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
        Err(format!(
            "{} exists and is not a vram-doctor {} recording; choose another file name",
            path.display(),
            if format == Format::Csv {
                "CSV"
            } else {
                "JSON Lines"
            }
        ))
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
        assert!(err.contains("not a vram-doctor CSV recording"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "my,precious,data\n",
            "untouched"
        );
        let missing_dir = dir.path().join("no/such/dir/x.jsonl");
        assert!(
            Recorder::open(&missing_dir, 1 << 20)
                .err()
                .unwrap()
                .contains("cannot open")
        );
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
