//! Watching the user's own run (`vram-doctor run -- CMD ARGS…`): start the command, pass its
//! input and output through, sample the GPUs with the monitor's sampler and sources, attribute
//! memory to the run's processes, read every output line with the doctor's reader, and turn the
//! timeline into facts the doctor ranks causes by. Domain layer: no egui, no printing of its
//! own besides passing the child's output through; the CLI and the app sit on top.
//!
//! - `process`: the child, its process group, signals, nothing left behind;
//! - `tree`: which pids are the run's (/proc);
//! - `timeline`: the run's memory per GPU, bounded; `evidence`: the facts it shows;
//! - `scan`: the output lines and the incident around the first failure;
//! - `retry`: the environment change `--retry-on-oom` makes; `report` and `plot`: `--report DIR`.
//!
//! The monitor's pieces are reused as they are: [`Sampler`] and any [`Source`], [`History`]
//! and [`Detectors`] (fed the snapshot with the run's processes merged under the child's pid, so
//! "other processes" means other programs), [`Recorder`] for the recording.

mod error;
pub mod evidence;
pub mod plot;
pub mod process;
pub mod report;
pub mod retry;
pub mod scan;
pub mod timeline;
pub mod tree;

use crate::doctor::{Context, Diagnosis, Knowledge, Reading, View, WizardState};
use crate::telemetry::detect::Alert;
use crate::telemetry::history::HistoryConfig;
use crate::telemetry::record::{DEFAULT_MAX_BYTES, Recorder};
use crate::telemetry::sample::now_ms;
use crate::telemetry::{
    Sampler, Session, SessionConfig, Snapshot, Source, SourceKind, SourceState,
};
pub use error::WatchError;
use evidence::Evidence;
use process::{CommandSpec, Exit, Running};
use scan::{Incident, Scanner};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use timeline::Timeline;
use tree::Membership;

/// Default sampling interval: 10 Hz (issue 19), enough to see a step's spike.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(100);

/// After the child exits, how long its output may keep flowing (a grandchild still holding the
/// pipe) before what is left of the run is ended.
const DRAIN: Duration = Duration::from_secs(1);
/// How long the run's processes get between SIGTERM and SIGKILL when the watcher ends them.
const GRACE: Duration = Duration::from_secs(3);

#[derive(Debug, Clone)]
pub struct Options {
    pub interval: Duration,
    /// Recordings to write, each with every snapshot as sampled (JSON Lines or CSV by name).
    pub record: Vec<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            interval: DEFAULT_INTERVAL,
            record: Vec::new(),
        }
    }
}

/// Everything a watched run showed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub command: String,
    pub exit: Exit,
    /// Signals the watcher received and forwarded to the run.
    pub forwarded_signals: Vec<i32>,
    pub source: SourceKind,
    /// The source's last state (why there are no readings, if there are none).
    pub source_state: SourceState,
    pub duration_ms: u64,
    pub timeline: Timeline,
    /// The monitor's detectors' alerts during the run.
    pub alerts: Vec<Alert>,
    pub incident: Option<Incident>,
    /// Failure lines seen in all.
    pub failure_lines: u64,
    /// The doctor's reading of the incident.
    pub reading: Reading,
    pub evidence: Evidence,
    /// What the watcher could not do (no GPU source, an incomplete recording).
    pub notes: Vec<String>,
    /// The child's stdout ended in the middle of a line (so what is printed after it starts
    /// on a new one).
    pub stdout_open_line: bool,
}

impl Outcome {
    /// The run failed the way the doctor diagnoses: an out-of-memory or GPU error line passed.
    pub fn failed(&self) -> bool {
        self.incident.is_some()
    }

    /// The doctor's walk over what the message and the timeline show, as far as the evidence
    /// goes.
    pub fn diagnose(&self, kb: &Knowledge, lang: &str) -> Result<(WizardState, View), String> {
        let ctx = Context {
            timeline: self.evidence.observations.clone(),
            ..Context::default()
        };
        let state = WizardState::start(kb, &kb.root, ctx.observations(Some(&self.reading)))?;
        let view = state.view(kb, lang)?;
        Ok((state, view))
    }
}

/// The answer the walk ends in: a leaf's text and its diagnosis, or, where the walk stopped at
/// a question the evidence cannot answer, what the evidence alone points at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub result: Option<String>,
    pub diagnosis: Diagnosis,
}

impl Verdict {
    pub fn of(state: &WizardState, view: &View, kb: &Knowledge, lang: &str) -> Verdict {
        match view {
            View::Result {
                text, diagnosis, ..
            } => Verdict {
                result: Some(text.clone()),
                diagnosis: diagnosis.clone(),
            },
            View::Question { .. } => Verdict {
                result: None,
                diagnosis: state.evidence_diagnosis(kb, lang),
            },
        }
    }
}

enum Msg {
    Snap(Snapshot),
    Line(String),
}

/// Where the child's input and output go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// The terminal's: stdin passed through, the terminal's foreground handed to the child,
    /// stdout and stderr copied to the watcher's own, byte for byte (`vram-doctor run`).
    Terminal,
    /// No input; the output is read as lines and kept, the last [`KEPT_LINES`], for a window to
    /// show (the app's "Watch a command…").
    Captured,
}

/// Output lines a captured run keeps for display.
pub const KEPT_LINES: usize = 500;

/// Copies one output stream of the child to the watcher's own (`to`, when passing through),
/// and sends each complete line on. A closed output of the watcher (a pipe to `head`) does not
/// stop the copying: the child must never block on a full pipe. The thread's result: the
/// stream ended in the middle of a line.
fn pump<R: Read + Send + 'static, W: Write + 'static>(
    mut from: R,
    to: Option<fn() -> W>,
    tx: SyncSender<Msg>,
) -> std::io::Result<JoinHandle<bool>> {
    std::thread::Builder::new()
        .name("run-output".into())
        .spawn(move || {
            let mut buf = vec![0u8; 64 << 10];
            let mut line: Vec<u8> = Vec::new();
            let mut out_ok = to.is_some();
            loop {
                let n = match from.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                if let Some(to) = to.filter(|_| out_ok) {
                    let mut w = to();
                    out_ok = w.write_all(&buf[..n]).and_then(|()| w.flush()).is_ok();
                }
                for &b in &buf[..n] {
                    if b == b'\n' {
                        let _ = tx.send(Msg::Line(String::from_utf8_lossy(&line).into_owned()));
                        line.clear();
                    } else if line.len() < (1 << 20) {
                        line.push(b);
                    }
                }
            }
            let open = !line.is_empty();
            if open {
                let _ = tx.send(Msg::Line(String::from_utf8_lossy(&line).into_owned()));
            }
            open
        })
}

/// Feeds GPU snapshots into a [`Watch`] from another thread (a sampler's).
#[derive(Clone)]
pub struct SnapshotFeed(SyncSender<Msg>);

impl SnapshotFeed {
    /// False once the watch is gone.
    pub fn send(&self, s: Snapshot) -> bool {
        self.0.send(Msg::Snap(s)).is_ok()
    }
}

/// A run under watch, driven step by step by its owner: the CLI's loop, or the app's frames.
/// Snapshots come from a [`SnapshotFeed`] or [`Watch::sample`]; output lines from the child's
/// pipes. Dropping it ends whatever is left of the run.
pub struct Watch {
    running: Running,
    readers: Vec<JoinHandle<bool>>,
    rx: Receiver<Msg>,
    tx: Option<SyncSender<Msg>>,
    recorders: Vec<Recorder>,
    record_error: Option<String>,
    session: RunState,
    command: String,
    source: SourceKind,
    started: Instant,
    exited_at: Option<Instant>,
    stopping: bool,
    forwarded: Vec<i32>,
    notes: Vec<String>,
    /// The last output lines, for [`Io::Captured`].
    kept: Option<VecDeque<String>>,
}

impl Watch {
    /// Starts `spec`. `Err` only when it cannot start (one line: what and why) or a recording
    /// cannot be opened. `source` is the kind of GPU readings that will be fed (for the outcome).
    pub fn start(
        spec: &CommandSpec,
        io: Io,
        source: SourceKind,
        opts: &Options,
    ) -> Result<Watch, WatchError> {
        let kb = Knowledge::get();
        let recorders = opts
            .record
            .iter()
            .map(|p| Recorder::open(p, DEFAULT_MAX_BYTES))
            .collect::<Result<Vec<_>, _>>()
            .map_err(WatchError::Record)?;
        let (running, out, err) = process::spawn(spec, io)?;
        let start_ms = now_ms();
        let (tx, rx) = mpsc::sync_channel::<Msg>(1024);
        let pumps = match io {
            Io::Terminal => [
                pump(out, Some(std::io::stdout), tx.clone()),
                pump(err, Some(std::io::stderr), tx.clone()),
            ],
            Io::Captured => [
                pump(out, None::<fn() -> std::io::Sink>, tx.clone()),
                pump(err, None::<fn() -> std::io::Sink>, tx.clone()),
            ],
        };
        let mut readers = Vec::new();
        for r in pumps {
            readers.push(r.map_err(|source| WatchError::Io {
                what: "cannot start the output reader".into(),
                source,
            })?);
        }
        let pid = running.pid();
        Ok(Watch {
            running,
            readers,
            rx,
            tx: Some(tx),
            recorders,
            record_error: None,
            session: RunState {
                membership: Membership::new(std::process::id(), pid),
                timeline: Timeline::new(start_ms),
                telemetry: Session::new(SessionConfig {
                    history: HistoryConfig {
                        recent: 36_000,
                        ..HistoryConfig::default()
                    },
                    alerts_kept: MAX_ALERTS,
                    focus_pid: Some(pid),
                }),
                scanner: Scanner::new(kb),
                source_state: SourceState::Ok,
                start_ms,
            },
            command: spec.display(),
            source,
            started: Instant::now(),
            exited_at: None,
            stopping: false,
            forwarded: Vec::new(),
            notes: Vec::new(),
            kept: (io == Io::Captured).then(VecDeque::new),
        })
    }

    /// A sender for snapshots from another thread.
    pub fn feed(&self) -> Option<SnapshotFeed> {
        self.tx.clone().map(SnapshotFeed)
    }

    /// Adds a note to the outcome (what the watcher could not do).
    pub fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    pub fn pid(&self) -> u32 {
        self.running.pid()
    }

    /// The command line, as the user would type it.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// True when `pid` is one of the run's processes (the child or a descendant).
    pub fn is_run(&mut self, pid: u32) -> bool {
        self.session.membership.contains(pid)
    }

    /// The last output lines ([`Io::Captured`] only).
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.kept.iter().flatten().map(String::as_str)
    }

    /// Failure lines seen so far (an out-of-memory or GPU error passed).
    pub fn failures(&self) -> u64 {
        self.session.scanner.failures
    }

    /// The run's memory on its main GPU now and at its peak so far, if readings show it.
    pub fn memory(&self) -> Option<(u64, u64)> {
        let g = self.session.timeline.main_gpu()?;
        Some((g.points.last()?.run, g.peak()?.run))
    }

    /// One GPU snapshot, taken by the owner's own sampler.
    pub fn sample(&mut self, s: &Snapshot) {
        for r in &mut self.recorders {
            if let Err(e) = r.write(s) {
                self.record_error.get_or_insert(e.to_string());
            }
        }
        self.session.sample(s);
    }

    fn take(&mut self, m: Msg) {
        match m {
            Msg::Snap(s) => self.sample(&s),
            Msg::Line(l) => {
                self.session.line(&l);
                if let Some(k) = &mut self.kept {
                    if k.len() == KEPT_LINES {
                        k.pop_front();
                    }
                    k.push_back(l);
                }
            }
        }
    }

    /// Takes what arrived, waiting up to `wait` for the first message. True once the run is
    /// over: the child exited and its output was read to the end (or for [`DRAIN`] after).
    pub fn step(&mut self, wait: Duration) -> bool {
        // Disconnected: every pipe and feed has closed (the watch's own sender goes when the
        // child exits, or at once where a feed brings the snapshots).
        match self.rx.recv_timeout(wait) {
            Ok(m) => {
                self.take(m);
                while let Ok(m) = self.rx.try_recv() {
                    self.take(m);
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return true,
        }
        if self.running.poll().is_some() {
            self.tx = None;
            let t = *self.exited_at.get_or_insert_with(Instant::now);
            return self.readers.iter().all(|r| r.is_finished()) || t.elapsed() >= DRAIN;
        }
        false
    }

    /// Forwards a signal the watcher received: the first goes to the run as it is; a second,
    /// or one while the run is already ending, ends it at once.
    pub fn signal(&mut self, sig: i32) {
        if self.forwarded.is_empty() && !self.stopping {
            self.running.signal(sig);
        } else {
            self.running.end_all(Duration::ZERO);
        }
        self.forwarded.push(sig);
    }

    /// Asks the run to end (the app's Stop): SIGTERM to all of it, without waiting; a second
    /// call kills what is left.
    pub fn stop(&mut self) {
        if self.stopping {
            self.running.end_all(Duration::ZERO);
        } else {
            self.running.signal(process::SIGTERM);
        }
        self.stopping = true;
    }

    /// Ends whatever is left of the run (up to `grace` between SIGTERM and SIGKILL) and says
    /// what it showed.
    pub fn finish(mut self, grace: Duration) -> Outcome {
        // Every way out: nothing of the run stays behind, and its pipes close.
        self.running.end_all(grace);
        let exit = wait_exit(&mut self.running);
        self.tx = None;
        let open_lines: Vec<bool> = std::mem::take(&mut self.readers)
            .into_iter()
            .map(|r| r.join().unwrap_or(false))
            .collect();
        while let Ok(m) = self.rx.try_recv() {
            if let Msg::Line(_) = m {
                self.take(m);
            }
        }
        for r in std::mem::take(&mut self.recorders) {
            if let Err(e) = r.finish() {
                self.record_error.get_or_insert(e.to_string());
            }
        }
        if let Some(e) = self.record_error.take() {
            self.notes.push(format!("the recording is incomplete: {e}"));
        }
        let took = self.started.elapsed();
        let Watch {
            session,
            command,
            source,
            forwarded,
            notes,
            ..
        } = self;
        let mut outcome = session.finish(command, exit, forwarded, source, took);
        outcome.notes.extend(notes);
        outcome.stdout_open_line = open_lines.first().copied().unwrap_or(false);
        outcome
    }
}

/// Runs `spec` to its end under watch, its input and output the terminal's, with signals to
/// the watcher forwarded to it. `Err` only when it cannot start (one line: what and why) or a
/// recording cannot be opened; everything after the start is in the [`Outcome`]. `source` is
/// the GPU source, or why there is none (the run is then watched for its output only, and the
/// outcome says so).
pub fn watch(
    spec: &CommandSpec,
    source: Result<Box<dyn Source>, SourceState>,
    opts: &Options,
) -> Result<Outcome, WatchError> {
    process::signals::install();
    let source_kind = source.as_ref().map_or(SourceKind::None, |s| s.kind());
    let mut w = Watch::start(spec, Io::Terminal, source_kind, opts)?;
    let mut sampler = None;
    let mut forwarder = None;
    match source {
        Ok(source) => {
            let (s, snaps) = Sampler::start(source, opts.interval);
            sampler = Some(s);
            if let Some(feed) = w.feed() {
                let spawned = std::thread::Builder::new()
                    .name("run-samples".into())
                    .spawn(move || {
                        for s in snaps {
                            if !feed.send(s) {
                                break;
                            }
                        }
                    });
                match spawned {
                    Ok(f) => forwarder = Some(f),
                    Err(e) => w.note(format!(
                        "no GPU readings: cannot start the thread that takes them: {e}"
                    )),
                }
            }
        }
        Err(state) => w.note(format!("no GPU readings: {}", state.message())),
    }
    w.tx = None;
    loop {
        let over = w.step(Duration::from_millis(100));
        if let Some(sig) = process::signals::take() {
            w.signal(sig);
        }
        if over {
            break;
        }
    }
    if let Some(s) = sampler {
        s.stop();
    }
    if let Some(f) = forwarder {
        let _ = f.join();
    }
    Ok(w.finish(GRACE))
}

/// The child's exit (it was ended above, so this does not wait long).
fn wait_exit(running: &mut Running) -> Exit {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(e) = running.poll() {
            return e;
        }
        if Instant::now() >= until {
            return Exit {
                code: 1,
                signal: None,
            };
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The state of one watched run, fed by the loop above.
struct RunState {
    membership: Membership,
    timeline: Timeline,
    /// The monitor's history, detectors and alerts over the run's own readings.
    telemetry: Session,
    scanner: Scanner,
    source_state: SourceState,
    start_ms: u64,
}

/// Alerts kept at most, the newest (each detector fires once per episode, so this is generous).
const MAX_ALERTS: usize = 256;

impl RunState {
    fn sample(&mut self, s: &Snapshot) {
        self.source_state = s.state.clone();
        let seen = self.timeline.push(s, &mut self.membership);
        self.telemetry.push(seen);
    }

    fn line(&mut self, l: &str) {
        let t = now_ms().saturating_sub(self.start_ms);
        self.scanner.line(l, t);
    }

    fn finish(
        mut self,
        command: String,
        exit: Exit,
        forwarded_signals: Vec<i32>,
        source: SourceKind,
        took: Duration,
    ) -> Outcome {
        self.timeline.finish();
        if self.timeline.run_never_listed() {
            self.timeline.use_whole_card();
        }
        let incident = self.scanner.incident().cloned();
        let alerts = self.telemetry.take_alerts();
        let evidence =
            evidence::analyse(&self.timeline, &alerts, incident.as_ref().map(|i| i.t_ms));
        Outcome {
            command,
            exit,
            forwarded_signals,
            source,
            source_state: self.source_state,
            duration_ms: took.as_millis() as u64,
            reading: self.scanner.reading(),
            failure_lines: self.scanner.failures,
            incident,
            alerts,
            evidence,
            timeline: self.timeline,
            notes: Vec::new(),
            stdout_open_line: false,
        }
    }
}
