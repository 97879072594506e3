//! Monitor tab: per GPU a plot of memory over time (in use, reserved, the card's total and the
//! planner's predicted peak), smaller plots of utilization, PCIe traffic and temperature on the
//! same time axis, the processes holding memory, and the detectors' alerts; recording to a file
//! and opening a recording.
//!
//! The data comes from `crate::telemetry`: its sampler thread reads the GPU once a second and a
//! small forwarding thread here wakes the UI only when a snapshot arrives and someone needs it
//! (the tab is on screen, or a recording is running), so the window paints one frame per reading
//! and nothing in between (README, "Measured cost"; `tools/measure_idle_cpu.sh`).

mod panels;
mod playback;
mod plots;
mod recording;
mod watch_panel;

use super::files::Dialogs;
use super::i18n::{tr, trf};
use crate::memory::game::GameWorkload;
use crate::telemetry::prometheus::PrometheusSource;
use crate::telemetry::{
    FoundProcess, GpuSample, Sampler, Session, SessionConfig, Snapshot, Source, SourceState,
    demo::{DemoSource, DemoWorkload},
    sample::now_ms,
};
use crate::units::human;
use egui::Ui;
use playback::Playback;
use plots::TimeAxis;
use recording::Recording;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;
use watch_panel::WatchPanel;

/// One reading a second, the rate `nvidia-smi -l 1` users expect and the rate the idle-CPU
/// figures in the README were measured at.
const INTERVAL: Duration = Duration::from_secs(1);

/// Alerts kept for the banner; older ones drop off.
const ALERTS_KEPT: usize = 20;

/// How soon a frame follows a new reading. Not zero on purpose: egui answers a zero-delay
/// `request_repaint` with two frames ("each request results in two repaints", egui 0.37
/// `context.rs`), which doubled the monitor's idle CPU on the software renderer; any non-zero
/// delay gives exactly one.
const WAKE_DELAY: Duration = Duration::from_millis(1);

/// How much history the plots show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Span {
    OneMinute,
    #[default]
    FiveMinutes,
    FifteenMinutes,
}

impl Span {
    const ALL: [Span; 3] = [Span::OneMinute, Span::FiveMinutes, Span::FifteenMinutes];

    fn millis(self) -> u64 {
        match self {
            Span::OneMinute => 60_000,
            Span::FiveMinutes => 300_000,
            Span::FifteenMinutes => 900_000,
        }
    }

    fn title(self) -> &'static str {
        match self {
            Span::OneMinute => tr("1 min"),
            Span::FiveMinutes => tr("5 min"),
            Span::FifteenMinutes => tr("15 min"),
        }
    }
}

/// Finds the machine's GPU source; tests put a fake here.
pub type Detect = fn() -> Result<Box<dyn Source>, SourceState>;

/// Who needs a frame when a reading arrives; shared with the forwarding thread.
#[derive(Default)]
struct Wake {
    /// The tab is drawn.
    visible: AtomicBool,
    /// A recording runs, so readings must be taken (and written) even while another tab shows.
    recording: AtomicBool,
    /// A watched command runs: its readings too are taken while another tab shows.
    watching: AtomicBool,
}

impl Wake {
    fn wanted(&self) -> bool {
        self.visible.load(Ordering::Relaxed)
            || self.recording.load(Ordering::Relaxed)
            || self.watching.load(Ordering::Relaxed)
    }
}

/// The live part of the monitor: not saved, rebuilt on the next start.
pub struct Feed {
    pub detect: Detect,
    /// A Prometheus server or exporter to read instead of `detect`'s source.
    remote: Option<String>,
    /// Why no live source could be opened (shown with the demo button).
    pub unavailable: Option<String>,
    started: bool,
    _sampler: Option<Sampler>,
    rx: Option<Receiver<Snapshot>>,
    wake: Arc<Wake>,
    session: Session,
    /// Time of the first reading shown: the origin of the plots' x coordinates (their labels
    /// count back from the latest reading).
    origin_ms: Option<u64>,
    recording: Option<Recording>,
    /// A recording being shown instead of the live source.
    playback: Option<Playback>,
    /// The workload the demo plays, while it plays.
    demo: Option<DemoWorkload>,
}

fn new_session() -> Session {
    Session::new(SessionConfig {
        alerts_kept: ALERTS_KEPT,
        ..SessionConfig::default()
    })
}

impl Default for Feed {
    fn default() -> Self {
        Feed {
            detect: crate::telemetry::detect,
            remote: None,
            unavailable: None,
            started: false,
            _sampler: None,
            rx: None,
            wake: Arc::default(),
            session: new_session(),
            origin_ms: None,
            recording: None,
            playback: None,
            demo: None,
        }
    }
}

impl Feed {
    /// Forgets every reading (a recording is opened, or the live source comes back).
    fn clear(&mut self) {
        self.session = new_session();
        self.origin_ms = None;
    }

    /// Adds one snapshot to the history and runs the detectors over it.
    fn push(&mut self, s: Snapshot) {
        self.origin_ms.get_or_insert(s.time_ms);
        self.session.push(s);
    }

    fn latest(&self) -> Option<&Snapshot> {
        self.session.latest()
    }
}

impl Drop for Feed {
    /// Readings that arrived since the last frame still reach the recording file, which is then
    /// flushed: closing the window never loses recorded data, and when the disk refuses, the
    /// terminal the app was started from says so (the window is gone).
    fn drop(&mut self) {
        let mut failed = None;
        if let (Some(rec), Some(rx)) = (self.recording.as_mut(), self.rx.as_ref()) {
            for s in rx.try_iter() {
                if let Err(e) = rec.write(&s) {
                    failed = Some(e);
                    break;
                }
            }
        }
        if let Some(rec) = self.recording.take()
            && let Err(e) = rec.stop()
        {
            failed.get_or_insert(e);
        }
        if let Some(e) = failed {
            eprintln!("vram-doctor: the recording is incomplete: {e}");
        }
    }
}

/// A one-line message under the toolbar (what a file action did, or why it failed).
struct Note {
    text: crate::ui::widgets::Said,
    error: bool,
}

#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MonitorView {
    pub span: Span,
    pub paused: bool,
    #[serde(skip)]
    pub feed: Feed,
    /// File dialogs for recordings; tests put a fake here.
    #[serde(skip)]
    pub dialogs: Dialogs,
    #[serde(skip)]
    note: Option<Note>,
    /// Set for one frame to put every plot back on the latest readings.
    #[serde(skip)]
    reset_view: bool,
    /// "Watch a command…": a run of the user's, watched with these readings.
    pub watch: WatchPanel,
    /// The game the planner plans: its budget for one process is drawn for the game's process.
    #[serde(skip)]
    pub game: Option<GameWorkload>,
    /// The planner's workload on its card, which "Show demo data" plays (the CLI's demo story
    /// when `None`); the demo follows it when the plan changes.
    #[serde(skip)]
    pub demo: Option<DemoWorkload>,
}

impl MonitorView {
    /// Reads the GPUs a Prometheus server or exporter at `url` reports (`--prometheus`),
    /// instead of this machine's, from the first time the tab is shown.
    pub fn watch_remote(&mut self, url: String) {
        self.feed.remote = Some(url);
    }

    /// Takes snapshots from `rx` (instead of opening a source on first show).
    pub fn connect(&mut self, rx: Receiver<Snapshot>) {
        self.feed.started = true;
        self.feed.rx = Some(rx);
    }

    /// Starts sampling `source` on its own thread; `ctx` is woken for each snapshot.
    fn start(&mut self, ctx: &egui::Context, source: Box<dyn Source>) {
        let (sampler, from_sampler) = Sampler::start(source, INTERVAL);
        let (tx, rx) = mpsc::channel();
        let (ctx, wake) = (ctx.clone(), self.feed.wake.clone());
        let spawned = std::thread::Builder::new()
            .name("monitor-wake".into())
            .spawn(move || {
                // Ends when the sampler stops or the view is gone.
                for s in from_sampler {
                    if tx.send(s).is_err() {
                        break;
                    }
                    if wake.wanted() {
                        ctx.request_repaint_after(WAKE_DELAY);
                    }
                }
            });
        if let Err(e) = spawned {
            self.feed.unavailable = Some(trf(
                "cannot start the monitor thread: {error}",
                &[("error", &e)],
            ));
            return;
        }
        self.feed._sampler = Some(sampler);
        self.connect(rx);
        self.feed.unavailable = None;
    }

    /// Plays `workload` as demo data, with the readings of the current time window before now
    /// already in the history, so the plots start full.
    fn start_demo(&mut self, ctx: &egui::Context, workload: DemoWorkload) {
        let mut source = DemoSource::of(workload.clone(), 1);
        self.feed.clear();
        for s in source.history(now_ms(), self.span.millis() / 1000) {
            self.feed.push(s);
        }
        self.start(ctx, Box::new(source));
        self.feed.demo = Some(workload);
    }

    /// Called by the app while another tab is shown: stop waking the UI for new snapshots,
    /// except while recording, whose readings are taken here so that none waits in memory.
    pub fn hide(&mut self) {
        self.feed.wake.visible.store(false, Ordering::Relaxed);
        if self.feed.recording.is_some() || self.watch.active() {
            self.take_live();
        }
        self.watch.poll();
    }

    /// Adds one snapshot to the history and runs the detectors over it.
    pub fn push(&mut self, s: Snapshot) {
        self.feed.push(s);
    }

    /// Takes the live readings that arrived: each goes to the recording (paused or not, so a
    /// recording has no gaps), and to the plots unless paused.
    fn take_live(&mut self) {
        let fresh: Vec<Snapshot> = self
            .feed
            .rx
            .as_ref()
            .map(|r| r.try_iter().collect())
            .unwrap_or_default();
        for s in fresh {
            self.record(&s);
            self.watch.sample(&s);
            if !self.paused {
                self.feed.push(s);
            }
        }
    }

    /// `predicted_bytes`: the planner's peak for its workload, drawn over the memory plots.
    /// Opens the source on first use (the tab is shown, or another tab asks for readings).
    fn ensure_started(&mut self, ctx: &egui::Context) {
        if self.feed.started {
            return;
        }
        self.feed.started = true;
        let source = match self.feed.remote.as_deref() {
            Some(url) => PrometheusSource::open(url).map(|s| Box::new(s) as Box<dyn Source>),
            None => (self.feed.detect)().map_err(|state| state.message_in_app()),
        };
        match source {
            Ok(source) => self.start(ctx, source),
            Err(why) => self.feed.unavailable = Some(why),
        }
    }

    /// The readings so far, with the ones that arrived since the last frame taken in, for
    /// another tab (the doctor) while the monitor is not shown; starts the source if needed.
    pub fn current(&mut self, ctx: &egui::Context) -> &Session {
        self.ensure_started(ctx);
        self.take_live();
        &self.feed.session
    }

    pub fn ui(&mut self, ui: &mut Ui, predicted_bytes: Option<u64>) {
        self.feed.wake.visible.store(true, Ordering::Relaxed);
        self.ensure_started(ui.ctx());
        self.take_live();
        self.watch.poll();
        self.feed
            .wake
            .watching
            .store(self.watch.active(), Ordering::Relaxed);
        self.take_playback(ui.ctx());
        if let (Some(playing), Some(planned)) = (&self.feed.demo, &self.demo)
            && playing != planned
            && self.feed.playback.is_none()
        {
            self.start_demo(ui.ctx(), planned.clone());
        }
        // No fill: the app clears the window to the panel colour, and on a software renderer
        // an opaque full-window rectangle costs as much as the rest of the frame.
        let frame = egui::Frame::central_panel(ui.style()).fill(egui::Color32::TRANSPARENT);
        egui::CentralPanel::default().frame(frame).show(ui, |ui| {
            self.toolbar_ui(ui);
            if let Some(n) = &self.note {
                let color = if n.error {
                    ui.visuals().error_fg_color
                } else {
                    ui.visuals().text_color()
                };
                ui.colored_label(color, n.text.now());
            }
            ui.separator();
            self.body_ui(ui, predicted_bytes);
        });
        self.reset_view = false;
    }

    fn body_ui(&mut self, ui: &mut Ui, predicted_bytes: Option<u64>) {
        if self.watch.open {
            let source = self
                .feed
                .latest()
                .map_or(crate::telemetry::SourceKind::None, |s| s.source);
            egui::Frame::group(ui.style()).show(ui, |ui| self.watch.ui(ui, source));
            ui.add_space(6.0);
        }
        if self.feed.playback.is_none()
            && let Some(why) = self.feed.unavailable.clone()
        {
            if panels::no_source_ui(ui, &why) {
                self.start_demo(ui.ctx(), self.demo.clone().unwrap_or_default());
            }
            return;
        }
        let Some(latest) = self.feed.latest() else {
            ui.label(if self.feed.playback.is_some() {
                tr("Reading the recording…")
            } else {
                tr("Waiting for the first reading from the GPU driver…")
            });
            return;
        };
        if !latest.state.is_ok() {
            ui.colored_label(ui.visuals().warn_fg_color, latest.state.message_in_app());
        }
        for n in &latest.notes {
            ui.colored_label(ui.visuals().warn_fg_color, n);
        }
        panels::alerts_ui(ui, self.feed.session.alerts());
        let run_pids = self.watch.run_pids(latest);
        let axis = TimeAxis {
            origin_ms: self.feed.origin_ms.unwrap_or(latest.time_ms),
            last_ms: latest.time_ms,
            span_ms: self.span.millis(),
            reset: self.reset_view,
        };
        let game = self
            .game
            .as_ref()
            .and_then(|w| Some((w, latest.find_process(&w.process_names())?)));
        egui::ScrollArea::vertical().show(ui, |ui| {
            // GPUs of a fleet (a Prometheus source) come sorted by host: one heading per host.
            let mut host = None;
            for (i, g) in latest.gpus.iter().enumerate() {
                if g.host.is_some() && g.host != host {
                    host.clone_from(&g.host);
                    ui.separator();
                    ui.label(
                        egui::RichText::new(trf(
                            "Host {host}",
                            &[("host", &g.host.as_deref().unwrap_or_default())],
                        ))
                        .heading()
                        .strong(),
                    );
                }
                let game_here = game.filter(|(_, f)| f.gpu == i);
                self.gpu_ui(ui, &axis, g, predicted_bytes, &run_pids, game_here);
                ui.add_space(12.0);
            }
        });
    }

    fn toolbar_ui(&mut self, ui: &mut Ui) {
        ui.horizontal_wrapped(|ui| {
            ui.toggle_value(&mut self.paused, tr("Pause"));
            ui.separator();
            ui.label(tr("Window"));
            for s in Span::ALL {
                if ui.selectable_value(&mut self.span, s, s.title()).clicked() {
                    self.reset_view = true;
                }
            }
            let reset = ui.button(tr("Reset view")).on_hover_text(tr(
                "Drag a plot to pan, Ctrl + wheel to zoom, right-drag to zoom to a box; double-click a plot or press this to follow the latest readings again",
            ));
            self.reset_view |= reset.clicked();
            ui.separator();
            self.files_ui(ui);
            ui.separator();
            ui.toggle_value(&mut self.watch.open, tr("Watch a command…"));
            if let Some(s) = self.feed.latest() {
                ui.separator();
                let labels: Vec<&str> = s.sources().into_iter().map(|k| tr(k.label())).collect();
                ui.label(trf("Source: {source}", &[("source", &labels.join(" + "))]));
            }
        });
    }

    fn gpu_ui(
        &self,
        ui: &mut Ui,
        axis: &TimeAxis,
        g: &GpuSample,
        predicted: Option<u64>,
        run_pids: &BTreeSet<u32>,
        game: Option<(&GameWorkload, FoundProcess)>,
    ) {
        ui.heading(trf(
            "GPU {index}: {name}",
            &[("index", &g.index), ("name", &gpu_name(&g.name))],
        ));
        let history = self.feed.session.history().gpu(&g.key());
        match g.memory {
            Some(m) => {
                ui.label(trf(
                    "{used} of {total} in use",
                    &[
                        ("used", &human(m.unavailable())),
                        ("total", &human(m.total)),
                    ],
                ));
                plots::memory_ui(ui, axis, g, history, m.total, predicted);
            }
            None => {
                ui.label(tr("This GPU does not report its memory."));
            }
        }
        plots::small_plots_ui(ui, axis, g, history);
        if let Some(m) = g.memory {
            panels::processes_ui(ui, g, m.total, run_pids, game.map(|(_, f)| f.pid));
            if let Some((w, found)) = game {
                panels::game_budget_ui(ui, g, m.total, w, found);
            }
        }
    }
}
/// A GPU's name as the monitor shows it: the demo's card in words of the language shown
/// (`telemetry::demo::gpu_label`), any other name as its source reports it.
pub(super) fn gpu_name(name: &str) -> String {
    crate::telemetry::demo::card_in(name).map_or_else(
        || name.to_string(),
        |card| super::i18n::msg(&crate::telemetry::demo::gpu_label(card)),
    )
}
