//! Monitor tab: per GPU a plot of memory over time, with the card's total and the planner's
//! predicted peak drawn as lines, and a table of the processes holding memory.
//!
//! The view draws plain `Reading`s. It never polls anything itself: readings arrive over a
//! channel from a sampler thread, which wakes the UI with `request_repaint` when it sends, so an
//! idle window costs no CPU (egui_stack.md §2: a reactive eframe app idles at 0 %).

use crate::units::{GIB, human};
use egui::Ui;
use egui_plot::{HLine, Legend, Line, Plot, PlotPoints};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::mpsc::Receiver;

/// Points kept per GPU: an hour at one reading a second.
const HISTORY: usize = 3600;

/// One process's memory on one GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessReading {
    pub pid: u32,
    pub name: String,
    pub used_bytes: u64,
}

/// One GPU at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuReading {
    pub index: u32,
    pub name: String,
    pub used_bytes: u64,
    pub total_bytes: u64,
    pub processes: Vec<ProcessReading>,
}

/// Every GPU read at one instant; `t_s` counts seconds from the start of sampling.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub t_s: f64,
    pub gpus: Vec<GpuReading>,
}

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

    fn seconds(self) -> f64 {
        match self {
            Span::OneMinute => 60.0,
            Span::FiveMinutes => 300.0,
            Span::FifteenMinutes => 900.0,
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

/// One GPU's history and its latest process list.
struct Track {
    index: u32,
    name: String,
    total_bytes: u64,
    /// (seconds, used bytes).
    points: VecDeque<(f64, u64)>,
    processes: Vec<ProcessReading>,
}

#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MonitorView {
    pub span: Span,
    pub paused: bool,
    #[serde(skip)]
    tracks: Vec<Track>,
    #[serde(skip)]
    feed: Option<Receiver<Reading>>,
}

impl MonitorView {
    /// Takes readings from `feed` from now on (the sampler thread's end of a channel).
    pub fn connect(&mut self, feed: Receiver<Reading>) {
        self.feed = Some(feed);
    }

    /// Adds one reading to the history (ignored while paused).
    pub fn push(&mut self, r: Reading) {
        if self.paused {
            return;
        }
        for g in r.gpus {
            let pos = match self.tracks.iter().position(|t| t.index == g.index) {
                Some(p) => p,
                None => {
                    self.tracks.push(Track {
                        index: g.index,
                        name: String::new(),
                        total_bytes: 0,
                        points: VecDeque::new(),
                        processes: Vec::new(),
                    });
                    self.tracks.len() - 1
                }
            };
            let t = &mut self.tracks[pos];
            t.name = g.name;
            t.total_bytes = g.total_bytes;
            t.processes = g.processes;
            if t.points.len() == HISTORY {
                t.points.pop_front();
            }
            t.points.push_back((r.t_s, g.used_bytes));
        }
        self.tracks.sort_by_key(|t| t.index);
    }

    /// `predicted_bytes`: the planner's peak for its workload, drawn over the plots.
    pub fn ui(&mut self, ui: &mut Ui, predicted_bytes: Option<u64>) {
        let fresh: Vec<Reading> = self
            .feed
            .as_ref()
            .map(|f| f.try_iter().collect())
            .unwrap_or_default();
        for r in fresh {
            self.push(r);
        }
        egui::CentralPanel::default().show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.toggle_value(&mut self.paused, "Pause");
                ui.separator();
                ui.label("Window");
                for s in Span::ALL {
                    ui.selectable_value(&mut self.span, s, s.title());
                }
            });
            ui.separator();
            if self.tracks.is_empty() {
                no_data_ui(ui, self.feed.is_some());
                return;
            }
            egui::ScrollArea::vertical().show(ui, |ui| {
                for t in &self.tracks {
                    track_ui(ui, t, self.span, predicted_bytes);
                    ui.add_space(12.0);
                }
            });
        });
    }
}

fn no_data_ui(ui: &mut Ui, connected: bool) {
    ui.add_space(20.0);
    ui.vertical_centered(|ui| {
        ui.heading("No GPU readings");
        if connected {
            ui.label("Waiting for the first reading from the GPU driver…");
        } else {
            ui.label("Live telemetry is not connected in this build.");
            ui.label("The planner and the doctor work without it; nvidia-smi shows the same figures meanwhile.");
        }
    });
}

fn track_ui(ui: &mut Ui, t: &Track, span: Span, predicted_bytes: Option<u64>) {
    let used = t.points.back().map_or(0, |p| p.1);
    ui.heading(format!("GPU {}: {}", t.index, t.name));
    ui.label(format!(
        "{} of {} in use",
        human(used),
        human(t.total_bytes)
    ));
    let now = t.points.back().map_or(0.0, |p| p.0);
    let pts: PlotPoints = t
        .points
        .iter()
        .filter(|p| now - p.0 <= span.seconds())
        .map(|p| [p.0 - now, p.1 as f64 / GIB])
        .collect();
    Plot::new(("memory_plot", t.index))
        .height(200.0)
        .legend(Legend::default())
        .include_y(0.0)
        .include_y(t.total_bytes as f64 / GIB * 1.05)
        .include_x(-span.seconds())
        .include_x(0.0)
        .x_axis_label("seconds")
        .y_axis_label("GiB")
        .show(ui, |p| {
            p.line(Line::new("used", pts));
            p.hline(HLine::new("total", t.total_bytes as f64 / GIB));
            if let Some(b) = predicted_bytes {
                p.hline(HLine::new("planner's peak", b as f64 / GIB));
            }
        });
    if t.processes.is_empty() {
        ui.weak("No process holds memory on this GPU.");
        return;
    }
    egui::Grid::new(("processes", t.index))
        .striped(true)
        .num_columns(4)
        .spacing([16.0, 4.0])
        .show(ui, |ui| {
            for h in ["Process", "PID", "Memory", "Share of card"] {
                ui.strong(h);
            }
            ui.end_row();
            for p in &t.processes {
                ui.label(&p.name);
                ui.label(p.pid.to_string());
                ui.label(human(p.used_bytes));
                let share = if t.total_bytes > 0 {
                    p.used_bytes as f64 / t.total_bytes as f64 * 100.0
                } else {
                    0.0
                };
                ui.label(format!("{share:.0}%"));
                ui.end_row();
            }
        });
}
