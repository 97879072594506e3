//! The plots of one GPU: memory (large), then utilization, PCIe traffic and temperature (small),
//! all on one time axis: zooming or panning one moves the others, and the cursor shows on all.
//!
//! The x axis is labelled in time before the latest reading ("seconds ago", minutes:seconds, 0
//! at the latest reading, never negative): the grid marks are counted back from it, while the
//! points keep their place (seconds since the first reading), so a panned view stays put while
//! new readings arrive. Each plot is given only the points of the stretch it shows (found by
//! binary search in the history), so a frame costs the same with a day of history as with a
//! minute. Hovering names a line's value only near a point of it; over empty space it shows
//! nothing (egui_plot's default shows the cursor's coordinates, which read as data).

use crate::telemetry::GpuSample;
use crate::telemetry::history::{GpuHistory, Point};
use crate::ui::i18n::{tr, trf};
use crate::units::GIB;
use egui::{AsIdSalt, Id, Ui};
use egui_plot::{
    Corner, GridInput, GridMark, HLine, HoverPosition, Legend, Line, Plot, PlotPoints, PlotUi,
};

/// The time axis the plots of a GPU share.
pub(super) struct TimeAxis {
    /// Time of the first reading shown: zero of the x coordinates (not of the labels, which
    /// count back from `last_ms`).
    pub origin_ms: u64,
    /// Time of the latest reading: the right edge while the plots follow the readings.
    pub last_ms: u64,
    /// Width of the time window when following.
    pub span_ms: u64,
    /// Put the plots back on the latest readings this frame.
    pub reset: bool,
}

impl TimeAxis {
    fn x(&self, t_ms: u64) -> f64 {
        (t_ms as f64 - self.origin_ms as f64) / 1000.0
    }

    fn ms(&self, x: f64) -> u64 {
        (self.origin_ms as f64 + x * 1000.0).max(0.0) as u64
    }

    /// A plot on this axis, linked with the other plots of the same GPU (`group`), as wide as
    /// `ui` leaves room for less half a "0:00": egui_plot centres each time label on its mark
    /// (`axis.rs`, `add_tick_labels`, in the body font), and the latest reading's mark is the
    /// plot's right edge, so a plot that reached the window's edge had its "0:00" cut in half.
    fn plot<'a>(
        &self,
        ui: &Ui,
        id_salt: impl AsIdSalt,
        group: Id,
        height: f32,
        unit: &'static str,
    ) -> Plot<'a> {
        let last = self.x(self.last_ms);
        let first = last - self.span_ms as f64 / 1000.0;
        let half_label = ui
            .painter()
            .layout_no_wrap(
                clock(0.0),
                egui::TextStyle::Body.resolve(ui.style()),
                egui::Color32::PLACEHOLDER,
            )
            .size()
            .x
            / 2.0;
        let plot = Plot::new(id_salt)
            .height(height)
            .width((ui.available_width() - half_label).max(0.0))
            .link_axis(group, [true, false])
            .link_cursor(group, [true, false])
            .include_x(first)
            .include_x(last)
            .set_margin_fraction(egui::vec2(0.0, 0.08))
            // The wheel scrolls the page; Ctrl + wheel zooms, dragging pans.
            .allow_scroll(false)
            // No filled background: with four plots per GPU it cost a fifth of the idle CPU on
            // the software renderer (0.80 % → 0.60 % of a core); the grid marks the area.
            .show_background(false)
            // Grid lines at least 20 points apart (egui_plot: 8): fewer shapes to draw.
            .grid_spacing(egui::Rangef::new(20.0, 300.0))
            .x_grid_spacer(move |input| marks_back_from(last, input))
            .x_axis_formatter(move |mark, _| clock(last - mark.value))
            .label_formatter(move |pos| hover_label(pos, last, unit));
        if self.reset { plot.reset() } else { plot }
    }

    /// What a plot needs this frame: the stretch of time whose points it shows (the time window
    /// while it follows the readings, else what it showed last frame with half its width added
    /// on each side, so that panning never shows a gap), and the width of [`PIXELS_PER_BUCKET`]
    /// on its x axis.
    fn window(&self, p: &PlotUi<'_>) -> Window {
        let width_px = f64::from(p.transform().frame().width()).max(1.0);
        let buckets = width_px / PIXELS_PER_BUCKET;
        if p.auto_bounds().x {
            return Window {
                from_ms: self.last_ms.saturating_sub(self.span_ms),
                to_ms: self.last_ms,
                bucket_s: self.span_ms as f64 / 1000.0 / buckets,
            };
        }
        let b = p.plot_bounds();
        let (lo, hi) = (b.min()[0], b.max()[0]);
        let pad = (hi - lo) / 2.0;
        Window {
            from_ms: self.ms(lo - pad),
            to_ms: self.ms(hi + pad),
            bucket_s: (hi - lo) / buckets,
        }
    }

    /// One series as plot points: (x, value) for each point that has a value, at most the
    /// lowest and the highest per bucket of the window, so that peaks stay and a line never has
    /// more points than the plot has pixels (each point costs triangles to tessellate and, on a
    /// software renderer, to set up and rasterize, without showing anything more).
    fn series(
        &self,
        pts: &[Point],
        bucket_s: f64,
        value: impl Fn(&Point) -> Option<f64>,
    ) -> PlotPoints<'static> {
        let mut out = Vec::with_capacity(pts.len().min(4096));
        let mut bucket: Option<(i64, [f64; 2], [f64; 2])> = None;
        for p in pts {
            let Some(v) = value(p) else { continue };
            let x = self.x(p.time_ms);
            let k = (x / bucket_s.max(1e-9)).floor() as i64;
            match &mut bucket {
                Some((key, lo, hi)) if *key == k => {
                    if v < lo[1] {
                        *lo = [x, v];
                    }
                    if v > hi[1] {
                        *hi = [x, v];
                    }
                }
                _ => {
                    push_bucket(&mut out, bucket.take());
                    bucket = Some((k, [x, v], [x, v]));
                }
            }
        }
        push_bucket(&mut out, bucket);
        PlotPoints::from(out)
    }
}

/// Horizontal pixels per bucket of a plotted series (two points at most per bucket).
const PIXELS_PER_BUCKET: f64 = 6.0;

/// See [`TimeAxis::window`].
struct Window {
    from_ms: u64,
    to_ms: u64,
    bucket_s: f64,
}

/// A bucket's lowest and highest point, in time order (one point when they are the same).
fn push_bucket(out: &mut Vec<[f64; 2]>, bucket: Option<(i64, [f64; 2], [f64; 2])>) {
    let Some((_, lo, hi)) = bucket else { return };
    let (a, b) = if lo[0] <= hi[0] { (lo, hi) } else { (hi, lo) };
    out.push(a);
    if b != a {
        out.push(b);
    }
}

/// Grid steps in seconds that read well as times (egui_plot's default steps are powers of ten).
fn time_steps(input: GridInput) -> [f64; 3] {
    const NICE: [f64; 14] = [
        1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0,
    ];
    let i = NICE
        .iter()
        .position(|s| *s >= input.base_step_size * 3.0)
        .unwrap_or(NICE.len() - 3)
        .min(NICE.len() - 3);
    [NICE[i], NICE[i + 1], NICE[i + 2]]
}

/// Grid marks every step of [`time_steps`] counted back from `last` (the latest reading), none
/// after it: the axis reads "0:00" at the latest reading and never a negative time.
fn marks_back_from(last: f64, input: GridInput) -> Vec<GridMark> {
    let (min, max) = input.bounds;
    let mut out: Vec<GridMark> = Vec::new();
    // The largest step first, so a mark shared by several steps keeps the thickest line.
    for step in time_steps(input).into_iter().rev() {
        let first = ((last - max) / step).ceil().max(0.0) as i64;
        let end = ((last - min) / step).floor() as i64;
        for k in first..=end {
            let value = last - k as f64 * step;
            if !out.iter().any(|m| (m.value - value).abs() < step * 0.1) {
                out.push(GridMark {
                    value,
                    step_size: step,
                });
            }
        }
    }
    out
}

/// Seconds as m:ss (or h:mm:ss); a time after the latest reading (only the cursor can be there)
/// reads as zero.
fn clock(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// The hover text: a line's name, how long before the latest reading and its value, near a
/// point of it; nothing over empty space.
fn hover_label(pos: &HoverPosition<'_>, last: f64, unit: &str) -> Option<String> {
    match pos {
        HoverPosition::NearDataPoint {
            plot_name,
            position,
            ..
        } => Some(format!(
            "{plot_name}\n{}\n{:.1} {unit}",
            trf("{time} ago", &[("time", &clock(last - position.x))]),
            position.y
        )),
        HoverPosition::Elsewhere { .. } => None,
    }
}

/// The id that links the plots of one GPU.
fn group(g: &GpuSample) -> Id {
    Id::unique(("monitor-time", g.key()))
}

fn points(history: Option<&GpuHistory>, w: &Window) -> Vec<Point> {
    history.map_or_else(Vec::new, |h| h.between(w.from_ms, w.to_ms).collect())
}

/// Memory over time: in use (used + reserved), reserved, the card's total and the planner's peak.
pub(super) fn memory_ui(
    ui: &mut Ui,
    axis: &TimeAxis,
    g: &GpuSample,
    history: Option<&GpuHistory>,
    total: u64,
    predicted: Option<u64>,
) {
    let gib = |b: u64| b as f64 / GIB;
    let visuals = ui.visuals().clone();
    axis.plot(ui, ("memory_plot", g.key()), group(g), 200.0, "GiB")
        .legend(Legend::default().position(Corner::LeftTop))
        .include_y(0.0)
        .include_y(gib(total) * 1.05)
        .x_axis_label(tr("time before the latest reading (min:s)"))
        .y_axis_label("GiB")
        .show(ui, |p| {
            let w = axis.window(p);
            let pts = points(history, &w);
            p.line(
                Line::new(
                    tr("in use"),
                    axis.series(&pts, w.bucket_s, |p| p.used.map(gib)),
                )
                .color(visuals.hyperlink_color),
            );
            if pts.iter().any(|p| p.reserved.is_some()) {
                p.line(
                    Line::new(
                        tr("reserved by the driver"),
                        axis.series(&pts, w.bucket_s, |p| p.reserved.map(gib)),
                    )
                    .color(visuals.weak_text_color()),
                );
            }
            p.hline(HLine::new(tr("total"), gib(total)).color(visuals.error_fg_color));
            if let Some(b) = predicted {
                p.hline(HLine::new(tr("planner's peak"), gib(b)).color(visuals.warn_fg_color));
            }
        });
}

/// One line of a small plot.
struct Series {
    name: &'static str,
    value: fn(&Point) -> Option<f64>,
}

/// A small plot: its title, unit, the y range it always shows, its lines, and the latest value
/// in words (`None`: the GPU's source does not report it).
struct Small {
    title: &'static str,
    unit: &'static str,
    include_y: f64,
    series: &'static [Series],
    now: fn(&GpuSample) -> Option<String>,
}

/// PCIe counters are in KB/s (NVML `nvmlDeviceGetPcieThroughput`); plotted as MB/s.
fn mb_per_s(kbps: f32) -> f64 {
    f64::from(kbps) / 1000.0
}

fn rate(kbps: u32) -> String {
    match kbps {
        0..1_000 => format!("{kbps} KB/s"),
        1_000..1_000_000 => format!("{:.0} MB/s", f64::from(kbps) / 1e3),
        _ => format!("{:.1} GB/s", f64::from(kbps) / 1e6),
    }
}

const SMALL: [Small; 3] = [
    Small {
        title: "Utilization",
        unit: "%",
        include_y: 100.0,
        series: &[
            Series {
                name: "GPU",
                value: |p| p.util_gpu.map(f64::from),
            },
            Series {
                name: "memory controller",
                value: |p| p.util_mem.map(f64::from),
            },
        ],
        now: |g| {
            g.util_gpu_pct.map(|u| match g.util_mem_pct {
                Some(m) => trf(
                    "GPU {gpu} %, memory controller {mem} %",
                    &[("gpu", &u), ("mem", &m)],
                ),
                None => format!("{u} %"),
            })
        },
    },
    Small {
        title: "PCIe traffic",
        unit: "MB/s",
        include_y: 0.0,
        series: &[
            Series {
                name: "to the GPU",
                value: |p| p.pcie_rx_kbps.map(mb_per_s),
            },
            Series {
                name: "from the GPU",
                value: |p| p.pcie_tx_kbps.map(mb_per_s),
            },
        ],
        now: |g| match (g.pcie_rx_kbps, g.pcie_tx_kbps) {
            (None, None) => None,
            (rx, tx) => Some(trf(
                "to the GPU {rx}, from it {tx}",
                &[
                    ("rx", &rx.map_or("?".into(), rate)),
                    ("tx", &tx.map_or("?".into(), rate)),
                ],
            )),
        },
    },
    Small {
        title: "Temperature",
        unit: "°C",
        include_y: 100.0,
        series: &[Series {
            name: "°C",
            value: |p| p.temp_c.map(f64::from),
        }],
        now: |g| g.temp_c.map(|t| format!("{t} °C")),
    },
];

/// Height of a small plot.
const SMALL_HEIGHT: f32 = 110.0;

/// Utilization, PCIe traffic and temperature side by side. A metric the source does not report
/// says so in words rather than drawing a line at zero.
pub(super) fn small_plots_ui(
    ui: &mut Ui,
    axis: &TimeAxis,
    g: &GpuSample,
    history: Option<&GpuHistory>,
) {
    ui.columns(SMALL.len(), |cols| {
        for (col, m) in cols.iter_mut().zip(&SMALL) {
            // Columns are justified, which would stretch the plot over the room `plot` leaves.
            col.vertical(|ui| {
                let now = (m.now)(g).unwrap_or_else(|| tr("not reported").to_string());
                ui.label(format!("{}: {now}", tr(m.title)));
                let mut drawn = false;
                let plot = axis.plot(ui, (m.title, g.key()), group(g), SMALL_HEIGHT, m.unit);
                let plot = if m.series.len() > 1 {
                    plot.legend(
                        Legend::default()
                            .position(Corner::LeftTop)
                            .text_style(egui::TextStyle::Small),
                    )
                } else {
                    plot
                };
                let shown = plot.include_y(0.0).include_y(m.include_y).show(ui, |p| {
                    let w = axis.window(p);
                    let pts = points(history, &w);
                    for s in m.series {
                        if pts.iter().any(|p| (s.value)(p).is_some()) {
                            let line = axis.series(&pts, w.bucket_s, s.value);
                            p.line(Line::new(tr(s.name), line));
                            drawn = true;
                        }
                    }
                });
                if !drawn {
                    // Nothing to draw in this stretch: say so on the empty plot.
                    ui.painter().text(
                        shown.response.rect.center(),
                        egui::Align2::CENTER_CENTER,
                        tr("not reported"),
                        egui::TextStyle::Body.resolve(ui.style()),
                        ui.visuals().weak_text_color(),
                    );
                }
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis() -> TimeAxis {
        TimeAxis {
            origin_ms: 10_000,
            last_ms: 20_000,
            span_ms: 10_000,
            reset: false,
        }
    }

    fn xy(pts: &PlotPoints<'_>) -> Vec<(f64, f64)> {
        pts.points().iter().map(|p| (p.x, p.y)).collect()
    }

    #[test]
    fn series_keeps_each_buckets_low_and_high_in_time_order() {
        let pts: Vec<Point> = [5.0, 9.0, 1.0, 4.0, 7.0, 7.0]
            .iter()
            .enumerate()
            .map(|(i, v)| Point {
                time_ms: 10_000 + 1000 * i as u64,
                util_gpu: Some(*v),
                ..Default::default()
            })
            .chain([Point {
                time_ms: 17_000,
                ..Default::default()
            }])
            .collect();
        let util = |p: &Point| p.util_gpu.map(f64::from);
        // Buckets of 3 s: [0, 3) holds 5, 9, 1; [3, 6) holds 4, 7, 7; a point without a value is
        // left out.
        assert_eq!(
            xy(&axis().series(&pts, 3.0, util)),
            vec![(1.0, 9.0), (2.0, 1.0), (3.0, 4.0), (4.0, 7.0)]
        );
        // Buckets narrower than the readings keep every point.
        let all = xy(&axis().series(&pts, 0.5, util));
        assert_eq!(all.len(), 6);
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn times_read_as_minutes_and_seconds_never_negative() {
        assert_eq!(clock(0.0), "0:00");
        assert_eq!(clock(95.0), "1:35");
        assert_eq!(clock(-30.0), "0:00");
        assert_eq!(clock(3_725.0), "1:02:05");
    }

    #[test]
    fn grid_marks_count_back_from_the_latest_reading_and_stop_there() {
        // 300 s shown, the latest reading at 1234.5 s, the view reaching 20 s past it.
        let input = GridInput {
            bounds: (954.5, 1254.5),
            base_step_size: 10.0,
        };
        let marks = marks_back_from(1234.5, input);
        let ago: Vec<f64> = marks.iter().map(|m| 1234.5 - m.value).collect();
        assert!(ago.iter().all(|a| *a >= 0.0), "{ago:?}");
        assert!(ago.contains(&0.0), "a mark at the latest reading: {ago:?}");
        assert!(ago.contains(&60.0) && ago.contains(&240.0), "{ago:?}");
        let mut values: Vec<f64> = marks.iter().map(|m| m.value).collect();
        values.sort_by(f64::total_cmp);
        assert!(
            values.windows(2).all(|w| w[1] - w[0] > 1.0),
            "no mark twice"
        );
        // A view that ends before the latest reading (panned back) still counts from it.
        let panned = GridInput {
            bounds: (100.0, 200.0),
            base_step_size: 5.0,
        };
        let marks = marks_back_from(1234.5, panned);
        assert!(!marks.is_empty());
        assert!(marks.iter().all(|m| (100.0..=200.0).contains(&m.value)));
    }
}
