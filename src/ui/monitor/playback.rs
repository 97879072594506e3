//! "Open recording…": a file written by "Record…" or `vram-doctor monitor --record` shown in the
//! plots instead of the live source, with the detectors run over it as if it were live.
//!
//! `telemetry::replay::ReplaySource` streams the file (never loaded whole, each line bounded) on a
//! thread of its own, so a day-long recording does not freeze the window; the UI takes a bounded
//! number of readings per frame. A file that is not a recording is refused with a message naming
//! it; damaged lines are skipped and the first one is named by its line number.

use super::{MonitorView, Note};
use crate::telemetry::Snapshot;
use crate::telemetry::replay::ReplaySource;
use crate::telemetry::source::Source;
use crate::ui::i18n::{tr, trf};
use crate::ui::widgets::Said;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::Duration;

/// Readings taken into the history per frame: a few milliseconds of work (history and detectors),
/// so the window stays responsive while a long recording loads.
const PER_FRAME: usize = 2000;

/// Readings the reading thread may run ahead of the UI.
const QUEUE: usize = 4096;

/// What the reading thread sends.
enum Loaded {
    Reading(Snapshot),
    /// The end of the file: how many lines were skipped, and the first problem ("line N: …").
    End {
        skipped: u64,
        first_error: Option<String>,
    },
}

/// A recording being shown.
pub(super) struct Playback {
    path: PathBuf,
    /// `None` once the whole file has been read.
    rx: Option<Receiver<Loaded>>,
    readings: u64,
}

/// Opens `path` and starts reading it on its own thread; `ctx` is woken as readings arrive.
fn open(path: &Path, ctx: &egui::Context) -> Result<Playback, String> {
    let mut source = ReplaySource::open(path)?;
    let (tx, rx) = mpsc::sync_channel(QUEUE);
    let ctx = ctx.clone();
    std::thread::Builder::new()
        .name("monitor-replay".into())
        .spawn(move || {
            // Ends at the end of the file, or when the view drops the receiver.
            let mut sent = 0u64;
            loop {
                let s = source.sample();
                let msg = if source.finished() {
                    Loaded::End {
                        skipped: source.skipped(),
                        first_error: source.first_error().map(str::to_string),
                    }
                } else {
                    Loaded::Reading(s)
                };
                let end = matches!(msg, Loaded::End { .. });
                if tx.send(msg).is_err() {
                    return;
                }
                sent += 1;
                if end || sent.is_multiple_of(256) {
                    ctx.request_repaint_after(Duration::from_millis(1));
                }
                if end {
                    return;
                }
            }
        })
        .map_err(|e| format!("cannot start reading {}: {e}", path.display()))?;
    Ok(Playback {
        path: path.to_path_buf(),
        rx: Some(rx),
        readings: 0,
    })
}

impl MonitorView {
    /// Asks for a recording and shows it in place of the live source.
    pub(super) fn open_recording(&mut self, ctx: &egui::Context) {
        let Some(path) = self
            .dialogs
            .0
            .open(tr("Open a recording"), super::recording::EXTENSIONS)
        else {
            return;
        };
        match open(&path, ctx) {
            Ok(p) => {
                if self.feed.recording.is_some() {
                    self.stop_recording();
                }
                // The live source stops; "Back to live" starts it again.
                self.feed._sampler = None;
                self.feed.rx = None;
                self.feed.clear();
                self.feed.playback = Some(p);
                self.paused = false;
                self.reset_view = true;
                self.note = Some(Note {
                    text: Said::new(move || trf("Reading {path}…", &[("path", &path.display())])),
                    error: false,
                });
            }
            Err(e) => self.note_error(Said::new(move || {
                trf("Cannot open the recording: {error}", &[("error", &e)])
            })),
        }
    }

    /// Leaves the recording and finds the live source again.
    pub(super) fn back_to_live(&mut self) {
        self.feed.playback = None;
        self.feed.clear();
        self.feed.started = false;
        self.feed.unavailable = None;
        self.note = None;
        self.reset_view = true;
    }

    /// Takes what the reading thread has sent, at most [`PER_FRAME`] readings.
    pub(super) fn take_playback(&mut self, ctx: &egui::Context) {
        let Some(rx) = self.feed.playback.as_ref().and_then(|p| p.rx.as_ref()) else {
            return;
        };
        let mut got = Vec::new();
        let mut end = None;
        loop {
            if got.len() >= PER_FRAME {
                ctx.request_repaint();
                break;
            }
            match rx.try_recv() {
                Ok(Loaded::Reading(s)) => got.push(s),
                Ok(Loaded::End {
                    skipped,
                    first_error,
                }) => {
                    end = Some((skipped, first_error));
                    break;
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    end = Some((0, None));
                    break;
                }
            }
        }
        let n = got.len() as u64;
        got.into_iter().for_each(|s| self.feed.push(s));
        let Some(p) = self.feed.playback.as_mut() else {
            return;
        };
        p.readings += n;
        if let Some((skipped, first_error)) = end {
            p.rx = None;
            let note = summary(&p.path, p.readings, skipped, first_error.as_deref());
            self.note = Some(note);
        }
    }
}

/// The message shown once the whole recording has been read.
fn summary(path: &Path, readings: u64, skipped: u64, first_error: Option<&str>) -> Note {
    let path = path.to_path_buf();
    let problem = first_error.unwrap_or_default().to_string();
    let (text, error) = if readings == 0 {
        let text = Said::new(move || {
            trf(
                "{path} holds no readings that can be read ({problem}); choose a file written by Record… or vram-doctor monitor --record",
                &[("path", &path.display()), ("problem", &problem)],
            )
        });
        (text, true)
    } else if skipped > 0 {
        let text = Said::new(move || {
            trf(
                "Opened {path} (readings: {n}; damaged lines skipped: {skipped}, the first: {problem})",
                &[
                    ("path", &path.display()),
                    ("n", &readings),
                    ("skipped", &skipped),
                    ("problem", &problem),
                ],
            )
        });
        (text, true)
    } else {
        let text = Said::new(move || {
            trf(
                "Opened {path} (readings: {n})",
                &[("path", &path.display()), ("n", &readings)],
            )
        });
        (text, false)
    };
    Note { text, error }
}
