//! Replays a recording (JSON Lines or CSV, told apart by the first line). The file is streamed,
//! never loaded whole; each line is bounded, a snapshot holds at most `MAX_GPUS` GPUs, and a
//! malformed line is skipped and counted rather than stopping the replay (the command line then
//! ends with an error naming the first one). Names read from the file (GPUs, processes) have
//! their control characters escaped (`crate::printable`). Snapshots come out with
//! `SourceKind::Replay`, so a replay is never shown as live data.

use super::format::{CSV_HEADER, CsvRow, parse_csv_row};
use super::record::TakeLine;
use super::sample::{Snapshot, SourceKind, SourceState};
use super::source::Source;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// A snapshot line longer than this is not from us (a recording line is a few KB even with dozens
/// of processes).
const MAX_LINE: usize = 1 << 20;
/// More GPUs than one snapshot can hold: NVML enumerates at most 64 devices per node
/// (`NVML_MAX_DEVICES` is not a constant of the API, but no system ships more than 16 GPUs), so
/// rows past this many at one time are refused as malformed, keeping a snapshot small.
pub const MAX_GPUS: usize = 256;

enum Kind {
    Jsonl,
    Csv,
}

pub struct ReplaySource {
    reader: Box<dyn BufRead + Send>,
    kind: Kind,
    /// A CSV row read ahead: the first GPU of the next snapshot.
    pending: Option<CsvRow>,
    last_time: u64,
    done: bool,
    skipped: u64,
    /// The first malformed line's number and problem, for the message.
    first_error: Option<String>,
    line_no: u64,
}

impl ReplaySource {
    pub fn open(path: &Path) -> Result<ReplaySource, String> {
        let (f, _) = crate::input_file::open_regular(path)?;
        Self::from_reader(Box::new(BufReader::new(f)))
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn from_reader(mut reader: Box<dyn BufRead + Send>) -> Result<ReplaySource, String> {
        let peek = reader.fill_buf().map_err(|e| format!("cannot read: {e}"))?;
        let start = peek
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .map_or(&[][..], |i| &peek[i..]);
        let kind = if start.starts_with(b"{") {
            Kind::Jsonl
        } else if start.starts_with(CSV_HEADER.as_bytes()) {
            Kind::Csv
        } else if start.is_empty() {
            return Err("the recording is empty".into());
        } else {
            return Err("not a vram-doctor recording (expected JSON Lines or the CSV header written by --record)".into());
        };
        let mut r = ReplaySource {
            reader,
            kind,
            pending: None,
            last_time: 0,
            done: false,
            skipped: 0,
            first_error: None,
            line_no: 0,
        };
        if matches!(r.kind, Kind::Csv) {
            let _ = r.next_line(); // the header
        }
        Ok(r)
    }

    /// Lines skipped as malformed so far.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The first problem found, as "line N: what".
    pub fn first_error(&self) -> Option<&str> {
        self.first_error.as_deref()
    }

    /// Next non-empty line; `None` at the end. Overlong lines count as malformed.
    fn next_line(&mut self) -> Option<String> {
        loop {
            let mut buf = Vec::new();
            match self.reader.take_first_line(&mut buf, MAX_LINE) {
                Ok(None) | Err(_) => return None,
                Ok(Some(complete)) => {
                    self.line_no += 1;
                    if !complete {
                        self.skip("line too long".into());
                        continue;
                    }
                    let line = String::from_utf8_lossy(&buf).trim().to_string();
                    if !line.is_empty() {
                        return Some(line);
                    }
                }
            }
        }
    }

    fn skip(&mut self, why: String) {
        self.skipped += 1;
        if self.first_error.is_none() {
            self.first_error = Some(format!("line {}: {why}", self.line_no));
        }
    }

    fn next_jsonl(&mut self) -> Option<Snapshot> {
        loop {
            let line = self.next_line()?;
            match serde_json::from_str::<Snapshot>(&line) {
                Ok(s) => return Some(s),
                Err(e) => self.skip(e.to_string()),
            }
        }
    }

    fn next_csv_row(&mut self) -> Option<CsvRow> {
        if let Some(r) = self.pending.take() {
            return Some(r);
        }
        loop {
            let line = self.next_line()?;
            match parse_csv_row(&line) {
                Ok(r) => return Some(r),
                Err(e) => self.skip(e),
            }
        }
    }

    /// Rows with the same time make one snapshot.
    fn next_csv(&mut self) -> Option<Snapshot> {
        let first = self.next_csv_row()?;
        let mut s = Snapshot {
            time_ms: first.time_ms,
            source: first.source,
            state: first.state,
            gpus: Vec::new(),
            notes: Vec::new(),
        };
        s.gpus.extend(first.gpu);
        while s.gpus.len() < MAX_GPUS {
            let Some(r) = self.next_csv_row() else {
                return Some(s);
            };
            if r.time_ms != s.time_ms {
                self.pending = Some(r);
                return Some(s);
            }
            s.gpus.extend(r.gpu);
        }
        // Full: the rest of this time's rows are told by their time field alone and skipped
        // unparsed, so a file of one time costs a line read per row.
        while let Some(line) = self.next_line() {
            let time = line.split(',').next().and_then(|t| t.parse::<u64>().ok());
            if time == Some(s.time_ms) {
                self.skip(format!(
                    "more than {MAX_GPUS} GPUs at one time (time_ms {})",
                    s.time_ms
                ));
                continue;
            }
            match parse_csv_row(&line) {
                Ok(r) => {
                    self.pending = Some(r);
                    break;
                }
                Err(e) => self.skip(e),
            }
        }
        Some(s)
    }
}

/// Escapes the control characters of a name read from the file, in place.
fn escape(s: &mut String) {
    if let std::borrow::Cow::Owned(e) = crate::printable::printable(s) {
        *s = e;
    }
}

impl Source for ReplaySource {
    fn kind(&self) -> SourceKind {
        SourceKind::Replay
    }

    fn sample(&mut self) -> Snapshot {
        let next = if self.done {
            None
        } else {
            match self.kind {
                Kind::Jsonl => self.next_jsonl(),
                Kind::Csv => self.next_csv(),
            }
        };
        match next {
            Some(mut s) => {
                s.source = SourceKind::Replay;
                s.gpus.truncate(MAX_GPUS);
                for g in &mut s.gpus {
                    escape(&mut g.name);
                    for p in g.processes.iter_mut().flatten() {
                        if let Some(n) = &mut p.name {
                            escape(n);
                        }
                    }
                }
                self.last_time = s.time_ms;
                s
            }
            None => {
                self.done = true;
                Snapshot {
                    time_ms: self.last_time,
                    source: SourceKind::Replay,
                    state: SourceState::Ended,
                    gpus: vec![],
                    notes: Vec::new(),
                }
            }
        }
    }

    fn finished(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::demo::DemoSource;
    use crate::telemetry::record::Recorder;

    fn record(name: &str, n: usize) -> (tempfile::TempDir, std::path::PathBuf, Vec<Snapshot>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        let mut demo = DemoSource::new(11);
        let mut r = Recorder::open(&path, 1 << 30).unwrap();
        let mut snaps = vec![];
        for i in 0..n {
            let mut s = demo.sample();
            s.time_ms = 1000 * i as u64;
            r.write(&s).unwrap();
            snaps.push(s);
        }
        (dir, path, snaps)
    }

    fn replay_all(path: &Path) -> (Vec<Snapshot>, ReplaySource) {
        let mut r = ReplaySource::open(path).unwrap();
        let mut out = vec![];
        loop {
            let s = r.sample();
            if r.finished() {
                assert_eq!(s.state, SourceState::Ended);
                return (out, r);
            }
            out.push(s);
        }
    }

    #[test]
    fn jsonl_and_csv_recordings_replay_exactly() {
        for name in ["r.jsonl", "r.csv"] {
            let (_d, path, snaps) = record(name, 70);
            let (got, r) = replay_all(&path);
            assert_eq!(r.skipped(), 0);
            assert_eq!(got.len(), snaps.len(), "{name}");
            for (g, s) in got.iter().zip(&snaps) {
                assert_eq!(g.source, SourceKind::Replay);
                assert_eq!((g.time_ms, &g.gpus), (s.time_ms, &s.gpus), "{name}");
            }
        }
    }

    #[test]
    fn damaged_lines_are_skipped_and_reported() {
        let (_d, path, snaps) = record("r.jsonl", 5);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.insert_str(0, "{\"time_ms\": \"yesterday\"}\n\n");
        text.push_str(&"x".repeat(MAX_LINE + 10));
        text.push_str("\n{\"time_ms\":1,\"truncated");
        std::fs::write(&path, text).unwrap();
        let (got, r) = replay_all(&path);
        assert_eq!(got.len(), snaps.len());
        assert_eq!(r.skipped(), 3);
        assert!(
            r.first_error().unwrap().starts_with("line 1:"),
            "{:?}",
            r.first_error()
        );
    }

    #[test]
    fn foreign_and_empty_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for (name, text, want) in [
            ("a.csv", "a,b\n1,2\n", "not a vram-doctor recording"),
            ("e.jsonl", "\n  \n", "empty"),
            ("bin", "\u{0}\u{1}PNG", "not a vram-doctor"),
        ] {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            let err = ReplaySource::open(&p).err().unwrap();
            assert!(err.contains(want), "{name}: {err}");
        }
        assert!(
            ReplaySource::open(&dir.path().join("missing"))
                .err()
                .unwrap()
                .contains("cannot read")
        );
    }
}
