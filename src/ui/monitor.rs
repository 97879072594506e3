//! Monitor tab: per GPU a plot of memory over time, with the card's total and the planner's
//! predicted peak drawn as lines, the processes holding memory, and the detectors' alerts.
//!
//! The data comes from `crate::telemetry`: its sampler thread reads the GPU once a second and a
//! small forwarding thread here wakes the UI (`request_repaint`) only when a snapshot arrives and
//! the tab is on screen, so an idle window costs no CPU (egui_stack.md §2: a reactive eframe app
//! idles at 0 %).

use crate::telemetry::detect::{Alert, Detectors, Severity};
use crate::telemetry::history::History;
use crate::telemetry::{Sampler, Snapshot, Source, SourceState, demo::DemoSource};
use crate::units::{GIB, human};
use egui::Ui;
use egui_plot::{HLine, Legend, Line, Plot, PlotPoints};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

/// One reading a second, the rate `nvidia-smi -l 1` users expect and the rate the idle-CPU
/// figures in egui_stack.md §2 were measured at.
const INTERVAL: Duration = Duration::from_secs(1);

/// Alerts kept for the banner; older ones drop off.
const ALERTS_KEPT: usize = 20;

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
            Span::OneMinute => "1 min",
            Span::FiveMinutes => "5 min",
            Span::FifteenMinutes => "15 min",
        }
    }
}

/// Finds the machine's GPU source; tests put a fake here.
pub type Detect = fn() -> Result<Box<dyn Source>, SourceState>;

/// The live part of the monitor: not saved, rebuilt on the next start.
pub struct Feed {
    pub detect: Detect,
    /// Why no live source could be opened (shown with the demo button).
    pub unavailable: Option<String>,
    started: bool,
    _sampler: Option<Sampler>,
    rx: Option<Receiver<Snapshot>>,
    /// Set while the tab is drawn; the forwarder only wakes the UI then.
    visible: Arc<AtomicBool>,
    history: History,
    detectors: Detectors,
    latest: Option<Snapshot>,
    alerts: Vec<Alert>,
}

impl Default for Feed {
    fn default() -> Self {
        Feed {
            detect: crate::telemetry::detect,
            unavailable: None,
            started: false,
            _sampler: None,
            rx: None,
            visible: Arc::new(AtomicBool::new(false)),
            history: History::default(),
            detectors: Detectors::default(),
            latest: None,
            alerts: Vec::new(),
        }
    }
}

#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MonitorView {
    pub span: Span,
    pub paused: bool,
    #[serde(skip)]
    pub feed: Feed,
}

impl MonitorView {
    /// Takes snapshots from `rx` (instead of opening a source on first show).
    pub fn connect(&mut self, rx: Receiver<Snapshot>) {
        self.feed.started = true;
        self.feed.rx = Some(rx);
    }

    /// Starts sampling `source` on its own thread; `ctx` is woken for each snapshot.
    fn start(&mut self, ctx: &egui::Context, source: Box<dyn Source>) {
        let (sampler, from_sampler) = Sampler::start(source, INTERVAL);
        let (tx, rx) = mpsc::channel();
        let (ctx, visible) = (ctx.clone(), self.feed.visible.clone());
        let spawned = std::thread::Builder::new()
            .name("monitor-wake".into())
            .spawn(move || {
                // Ends when the sampler stops or the view is gone.
                for s in from_sampler {
                    if tx.send(s).is_err() {
                        break;
                    }
                    if visible.load(Ordering::Relaxed) {
                        ctx.request_repaint();
                    }
                }
            });
        if let Err(e) = spawned {
            self.feed.unavailable = Some(format!("cannot start the monitor thread: {e}"));
            return;
        }
        self.feed._sampler = Some(sampler);
        self.connect(rx);
        self.feed.unavailable = None;
    }

    /// Called by the app when another tab is shown: stop waking the UI for new snapshots.
    pub fn hide(&self) {
        self.feed.visible.store(false, Ordering::Relaxed);
    }

    /// Adds one snapshot to the history and runs the detectors over it.
    pub fn push(&mut self, s: Snapshot) {
        let f = &mut self.feed;
        f.history.push(&s);
        f.alerts.extend(f.detectors.check(&f.history, &s));
        let excess = f.alerts.len().saturating_sub(ALERTS_KEPT);
        f.alerts.drain(..excess);
        f.latest = Some(s);
    }

    /// `predicted_bytes`: the planner's peak for its workload, drawn over the plots.
    pub fn ui(&mut self, ui: &mut Ui, predicted_bytes: Option<u64>) {
        self.feed.visible.store(true, Ordering::Relaxed);
        if !self.feed.started {
            self.feed.started = true;
            match (self.feed.detect)() {
                Ok(source) => self.start(ui.ctx(), source),
                Err(state) => self.feed.unavailable = Some(state.message()),
            }
        }
        let fresh: Vec<Snapshot> = self
            .feed
            .rx
            .as_ref()
            .map(|r| r.try_iter().collect())
            .unwrap_or_default();
        if !self.paused {
            fresh.into_iter().for_each(|s| self.push(s));
        }
        egui::CentralPanel::default().show(ui, |ui| {
            self.toolbar_ui(ui);
            ui.separator();
            if let Some(why) = self.feed.unavailable.clone() {
                if self.no_source_ui(ui, &why) {
                    self.start(ui.ctx(), Box::new(DemoSource::new(1)));
                }
                return;
            }
            let Some(latest) = &self.feed.latest else {
                ui.label("Waiting for the first reading from the GPU driver…");
                return;
            };
            if !latest.state.is_ok() {
                ui.colored_label(ui.visuals().warn_fg_color, latest.state.message());
            }
            alerts_ui(ui, &self.feed.alerts);
            egui::ScrollArea::vertical().show(ui, |ui| {
                for g in &latest.gpus {
                    self.gpu_ui(ui, latest, g, predicted_bytes);
                    ui.add_space(12.0);
                }
            });
        });
    }

    fn toolbar_ui(&mut self, ui: &mut Ui) {
        ui.horizontal(|ui| {
            ui.toggle_value(&mut self.paused, "Pause");
            ui.separator();
            ui.label("Window");
            for s in Span::ALL {
                ui.selectable_value(&mut self.span, s, s.title());
            }
            if let Some(s) = &self.feed.latest {
                ui.separator();
                ui.label(format!("Source: {}", s.source.label()));
            }
        });
    }

    /// The panel shown when no GPU can be read; true when the user asked for demo data.
    fn no_source_ui(&self, ui: &mut Ui, why: &str) -> bool {
        ui.add_space(20.0);
        ui.vertical_centered(|ui| {
            ui.heading("No GPU readings");
            ui.label(why);
            ui.label("The planner and the doctor work without a GPU.");
            ui.add_space(8.0);
            ui.button("Show demo data").clicked()
        })
        .inner
    }

    fn gpu_ui(
        &self,
        ui: &mut Ui,
        snap: &Snapshot,
        g: &crate::telemetry::GpuSample,
        predicted: Option<u64>,
    ) {
        ui.heading(format!("GPU {}: {}", g.index, g.name));
        let Some(m) = g.memory else {
            ui.label("This GPU does not report its memory.");
            return;
        };
        ui.label(format!(
            "{} of {} in use",
            human(m.unavailable()),
            human(m.total)
        ));
        let since = snap.time_ms.saturating_sub(self.span.millis());
        let pts: PlotPoints = self
            .feed
            .history
            .gpu(&g.key())
            .into_iter()
            .flat_map(|h| h.since(since))
            .filter_map(|p| {
                let secs = (p.time_ms as f64 - snap.time_ms as f64) / 1000.0;
                p.used.map(|u| [secs, u as f64 / GIB])
            })
            .collect();
        let total = m.total as f64 / GIB;
        Plot::new(("memory_plot", g.index))
            .height(200.0)
            .legend(Legend::default())
            .include_y(0.0)
            .include_y(total * 1.05)
            .include_x(-(self.span.millis() as f64) / 1000.0)
            .include_x(0.0)
            .x_axis_label("seconds")
            .y_axis_label("GiB")
            .show(ui, |p| {
                p.line(Line::new("used", pts));
                p.hline(HLine::new("total", total));
                if let Some(b) = predicted {
                    p.hline(HLine::new("planner's peak", b as f64 / GIB));
                }
            });
        processes_ui(ui, g, m.total);
    }
}

fn alerts_ui(ui: &mut Ui, alerts: &[Alert]) {
    for a in alerts.iter().rev().take(3) {
        let color = match a.severity {
            Severity::Critical => ui.visuals().error_fg_color,
            Severity::Warning => ui.visuals().warn_fg_color,
            Severity::Info => ui.visuals().text_color(),
        };
        egui::Frame::group(ui.style())
            .stroke(egui::Stroke::new(1.0, color))
            .show(ui, |ui| {
                ui.colored_label(color, format!("{}: {}", a.gpu_name, a.message));
                for e in &a.evidence {
                    ui.weak(e);
                }
            });
    }
}

fn processes_ui(ui: &mut Ui, g: &crate::telemetry::GpuSample, total: u64) {
    let procs = g.processes.as_deref().unwrap_or_default();
    if procs.is_empty() {
        ui.weak("No process holds memory on this GPU (or the driver does not say).");
        return;
    }
    egui::Grid::new(("processes", g.index))
        .striped(true)
        .num_columns(4)
        .spacing([16.0, 4.0])
        .show(ui, |ui| {
            for h in ["Process", "PID", "Memory", "Share of card"] {
                ui.strong(h);
            }
            ui.end_row();
            for p in procs {
                ui.label(p.name.as_deref().unwrap_or("?"));
                ui.label(p.pid.to_string());
                match p.used {
                    Some(u) if total > 0 => {
                        ui.label(human(u));
                        ui.label(format!("{:.0}%", u as f64 / total as f64 * 100.0));
                    }
                    Some(u) => {
                        ui.label(human(u));
                        ui.label("?");
                    }
                    None => {
                        ui.label("?");
                        ui.label("?");
                    }
                }
                ui.end_row();
            }
        });
}
