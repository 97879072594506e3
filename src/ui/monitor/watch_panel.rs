//! The monitor's "Watch a command…": the app's face of `vram-doctor run` (`crate::watch`). The
//! user types a command line and a working directory and starts it; the monitor's own readings
//! feed the watch, the run's processes are marked in the process tables, its output is shown as
//! it passes, and when it fails (an out-of-memory or GPU error line) the app opens the doctor
//! with the diagnosis and the timeline's evidence. Nothing of the run outlives the app: closing
//! the window ends it (`watch::process::Running`'s drop).

use crate::telemetry::{Snapshot, SourceKind};
use crate::ui::i18n::{tr, trf};
use crate::units::human;
use crate::watch::process::CommandSpec;
use crate::watch::{self, Io, Outcome, Watch};
use egui::Ui;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

/// How often the window looks at a running command (its output, its exit) when nothing else
/// wakes it: often enough for output to feel live, rare enough to cost nothing measurable.
const POLL: Duration = Duration::from_millis(250);

/// Between SIGTERM and SIGKILL for what is left of a run that has ended: short, because the
/// window waits for it.
const GRACE: Duration = Duration::from_millis(300);

/// How the last run ended, for the status line.
struct Ended {
    command: String,
    exit_code: i32,
    failed: bool,
    peak: Option<u64>,
}

#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct WatchPanel {
    /// The panel is shown.
    pub open: bool,
    /// The command line, run by the system's shell (`sh -c` / `cmd /C`) so that it is written
    /// as in a terminal.
    pub command: String,
    /// Working directory; empty = the app's.
    pub cwd: String,
    #[serde(skip)]
    live: Option<Watch>,
    /// Wakes the window while a run is live.
    #[serde(skip)]
    ctx: Option<egui::Context>,
    #[serde(skip)]
    ended: Option<Ended>,
    #[serde(skip)]
    error: Option<String>,
    /// A failed run's outcome, for the app to open in the doctor; taken in the same frame.
    #[serde(skip)]
    pub failed: Option<Outcome>,
}

/// The command line as the system's shell runs it.
fn shell(line: &str, cwd: &str) -> CommandSpec {
    let (program, flag) = if cfg!(windows) {
        ("cmd", "/C")
    } else {
        ("sh", "-c")
    };
    CommandSpec {
        program: program.into(),
        args: vec![flag.into(), line.into()],
        cwd: (!cwd.trim().is_empty()).then(|| PathBuf::from(cwd.trim())),
        env: Vec::new(),
    }
}

impl WatchPanel {
    /// A run is live.
    pub fn active(&self) -> bool {
        self.live.is_some()
    }

    /// Starts the typed command line; `source`: the kind of readings the monitor feeds.
    pub fn start(&mut self, ctx: &egui::Context, source: SourceKind) {
        self.error = None;
        let line = self.command.trim();
        if line.is_empty() {
            self.error = Some(tr("Type a command line first.").into());
            return;
        }
        if !self.cwd.trim().is_empty() && !std::path::Path::new(self.cwd.trim()).is_dir() {
            self.error = Some(trf(
                "The working directory {dir} is not a folder.",
                &[("dir", &self.cwd.trim())],
            ));
            return;
        }
        match Watch::start(
            &shell(line, &self.cwd),
            Io::Captured,
            source,
            &watch::Options::default(),
        ) {
            Ok(w) => {
                self.live = Some(w);
                self.ended = None;
                self.ctx = Some(ctx.clone());
                ctx.request_repaint_after(POLL);
            }
            Err(e) => self.error = Some(e.into()),
        }
    }

    /// One reading of the monitor's (every one, paused or not, shown or not).
    pub fn sample(&mut self, s: &Snapshot) {
        if let Some(w) = &mut self.live {
            w.sample(s);
        }
    }

    /// Takes the run's output and notices its end; a failed run's outcome goes to `failed`.
    pub fn poll(&mut self) {
        let Some(w) = &mut self.live else { return };
        if !w.step(Duration::ZERO) {
            if let Some(ctx) = &self.ctx {
                ctx.request_repaint_after(POLL);
            }
            return;
        }
        let Some(w) = self.live.take() else { return };
        let outcome = w.finish(GRACE);
        self.ended = Some(Ended {
            command: outcome.command.clone(),
            exit_code: outcome.exit.code,
            failed: outcome.failed(),
            peak: outcome.evidence.peak.as_ref().map(|p| p.bytes),
        });
        if outcome.failed() {
            self.failed = Some(outcome);
        }
    }

    /// The pids among `snapshot`'s processes that are the run's (the child and descendants).
    pub fn run_pids(&mut self, snapshot: &Snapshot) -> BTreeSet<u32> {
        let Some(w) = &mut self.live else {
            return BTreeSet::new();
        };
        snapshot
            .gpus
            .iter()
            .flat_map(|g| g.processes.iter().flatten())
            .map(|p| p.pid)
            .filter(|&pid| w.is_run(pid))
            .collect()
    }

    pub fn ui(&mut self, ui: &mut Ui, source: SourceKind) {
        ui.strong(tr("Watch a command"));
        ui.label(tr(
            "Runs a command line as a terminal would, marks its processes below and reads its output; if it fails with an out-of-memory or GPU error, the doctor opens with the diagnosis.",
        ));
        let running = self.live.is_some();
        egui::Grid::new("watch_fields")
            .num_columns(2)
            .show(ui, |ui| {
                let label = ui.label(tr("Command line"));
                ui.add_enabled(
                    !running,
                    egui::TextEdit::singleline(&mut self.command)
                        .hint_text("python train.py --batch-size 8")
                        .desired_width(420.0),
                )
                .labelled_by(label.id);
                ui.end_row();
                let label = ui.label(tr("Working directory"));
                ui.add_enabled(
                    !running,
                    egui::TextEdit::singleline(&mut self.cwd)
                        .hint_text(tr("(the app's)"))
                        .desired_width(420.0),
                )
                .labelled_by(label.id);
                ui.end_row();
            });
        ui.horizontal(|ui| {
            if running {
                if ui.button(tr("Stop")).clicked()
                    && let Some(w) = &mut self.live
                {
                    w.stop();
                }
            } else if ui.button(tr("Start")).clicked() {
                self.start(ui.ctx(), source);
            }
            ui.label(self.status());
        });
        if let Some(e) = &self.error {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
        if let Some(w) = &self.live {
            egui::ScrollArea::vertical()
                .id_salt("watch_output")
                .max_height(160.0)
                .stick_to_bottom(true)
                .show(ui, |ui| {
                    for l in w.lines() {
                        ui.monospace(crate::printable::printable(l));
                    }
                });
        }
    }

    fn status(&self) -> String {
        if let Some(w) = &self.live {
            let memory = match w.memory() {
                Some((now, peak)) => trf(
                    "{now} now, peak {peak}",
                    &[("now", &human(now)), ("peak", &human(peak))],
                ),
                None => tr("no GPU memory seen yet").into(),
            };
            return trf(
                "Running (pid {pid}): {memory}",
                &[("pid", &w.pid()), ("memory", &memory)],
            );
        }
        match &self.ended {
            Some(e) => {
                let peak = e.peak.map(human).unwrap_or_else(|| "?".into());
                let command = crate::printable::printable(&e.command);
                let args: [(&str, &dyn std::fmt::Display); 3] = [
                    ("command", &command),
                    ("code", &e.exit_code),
                    ("peak", &peak),
                ];
                if e.failed {
                    trf(
                        "{command} failed (exit code {code}, peak {peak}); the doctor has its diagnosis.",
                        &args,
                    )
                } else {
                    trf(
                        "{command} ended (exit code {code}, peak {peak}); no out-of-memory or GPU error was seen.",
                        &args,
                    )
                }
            }
            None => String::new(),
        }
    }
}
