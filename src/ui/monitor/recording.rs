//! "Record…" / "Stop recording": the live readings written to a file the user picks, in the
//! format of `vram-doctor monitor --record` (JSON Lines, or CSV for a `.csv` name), so the CLI's
//! `--replay` and "Open recording…" read it back.
//!
//! `telemetry::record::Recorder` appends each reading with one `write` of whole lines (a crash
//! never leaves half a record) and refuses to append to a file that is not a recording; stopping
//! flushes the file to disk. A write error stops the recording with a message naming the file;
//! what was written before stays.

use super::{MonitorView, Note};
use crate::telemetry::Snapshot;
use crate::telemetry::record::{DEFAULT_MAX_BYTES, Recorder};
use crate::ui::i18n::{tr, trf};
use crate::ui::widgets::Said;
use egui::Ui;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// Extensions the dialogs offer; the recorder picks the format from the name.
pub(super) const EXTENSIONS: &[&str] = &["jsonl", "csv"];

/// A running recording.
pub(super) struct Recording {
    recorder: Recorder,
    readings: u64,
}

impl Recording {
    fn start(path: &std::path::Path) -> Result<Recording, String> {
        Ok(Recording {
            recorder: Recorder::open(path, DEFAULT_MAX_BYTES).map_err(|e| e.to_string())?,
            readings: 0,
        })
    }

    pub(super) fn write(&mut self, s: &Snapshot) -> Result<(), String> {
        self.recorder.write(s).map_err(|e| e.to_string())?;
        self.readings += 1;
        Ok(())
    }

    /// Flushes and closes the file: the path and how many readings went in.
    pub(super) fn stop(self) -> Result<(PathBuf, u64), String> {
        let path = self.recorder.path().to_path_buf();
        self.recorder.finish().map_err(|e| e.to_string())?;
        Ok((path, self.readings))
    }
}

impl MonitorView {
    /// The file buttons of the toolbar: record, stop, open a recording, back to live.
    pub(super) fn files_ui(&mut self, ui: &mut Ui) {
        match &self.feed.recording {
            Some(r) => {
                if ui.button(tr("Stop recording")).clicked() {
                    self.stop_recording();
                } else {
                    ui.label(trf(
                        "Recording to {path} (readings so far: {n})",
                        &[("path", &r.recorder.path().display()), ("n", &r.readings)],
                    ));
                }
            }
            None => {
                let live = self.feed.playback.is_none() && self.feed.rx.is_some();
                let record = ui.add_enabled(live, egui::Button::new(tr("Record…")));
                if record.clicked() {
                    self.start_recording();
                }
            }
        }
        if ui.button(tr("Open recording…")).clicked() {
            self.open_recording(ui.ctx());
        }
        if self.feed.playback.is_some() && ui.button(tr("Back to live")).clicked() {
            self.back_to_live();
        }
    }

    fn start_recording(&mut self) {
        let Some(path) = self.dialogs.0.save(
            tr("Record the readings to a file"),
            "gpu-recording.jsonl",
            EXTENSIONS,
        ) else {
            return;
        };
        match Recording::start(&path) {
            Ok(r) => {
                self.feed.recording = Some(r);
                self.feed.wake.recording.store(true, Ordering::Relaxed);
                self.note = None;
            }
            Err(e) => self.note_error(Said::new(move || {
                trf("Cannot record: {error}", &[("error", &e)])
            })),
        }
    }

    pub(super) fn stop_recording(&mut self) {
        self.feed.wake.recording.store(false, Ordering::Relaxed);
        let Some(r) = self.feed.recording.take() else {
            return;
        };
        self.note = Some(match r.stop() {
            Ok((path, n)) => Note {
                text: Said::new(move || {
                    trf(
                        "Recording saved to {path} (readings: {n})",
                        &[("n", &n), ("path", &path.display())],
                    )
                }),
                error: false,
            },
            Err(e) => Note {
                text: Said::new(move || trf("Recording stopped: {error}", &[("error", &e)])),
                error: true,
            },
        });
    }

    /// Writes one live reading to the recording, if one runs; on a write error the recording
    /// stops and says why.
    pub(super) fn record(&mut self, s: &Snapshot) {
        let Some(r) = self.feed.recording.as_mut() else {
            return;
        };
        if let Err(e) = r.write(s) {
            let kept = r.readings;
            self.feed.wake.recording.store(false, Ordering::Relaxed);
            // Closing the file can fail too (its last readings not flushed): said with the rest.
            let closed = self.feed.recording.take().map(Recording::stop);
            let error = match closed {
                Some(Err(close)) => format!("{e}; {close}"),
                _ => e,
            };
            self.note_error(Said::new(move || {
                trf(
                    "Recording stopped: {error} (readings saved before it: {n})",
                    &[("error", &error), ("n", &kept)],
                )
            }));
        }
    }

    pub(super) fn note_error(&mut self, text: Said) {
        self.note = Some(Note { text, error: true });
    }
}
