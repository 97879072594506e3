//! Detectors over the history: each turns a pattern into an alert with a plain-language message
//! and the numbers behind it. Every detector fires once per episode and re-arms only after the
//! condition has clearly gone away (hysteresis), because users asked for "alert once per
//! threshold crossing, no spam" (Stb2506/VRAMeter#17, `monitor.md` §1.1 point 6).
//!
//! Thresholds are this project's choices, not from a paper; each is a field of
//! [`DetectorConfig`] so the GUI can expose them.

use super::history::{GpuHistory, History, Point};
use super::sample::{GpuSample, GpuStatus, Snapshot};
use crate::types::message::Message;
use crate::units::human;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    NearCapacity,
    SteadyGrowth,
    LikelySpill,
    OtherProcesses,
    Throttling,
    GpuLost,
    GpuBack,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

/// One finding about one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    pub time_ms: u64,
    pub gpu: String,
    pub gpu_name: String,
    pub kind: AlertKind,
    pub severity: Severity,
    /// What is happening and what to do, in plain words (stored as its English text).
    pub message: Message,
    /// The numbers that led to it.
    pub evidence: Vec<Message>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DetectorConfig {
    /// Near capacity fires at this fill (used + reserved over total) ...
    pub full_enter: f64,
    /// ... and re-arms below this one.
    pub full_leave: f64,
    /// Steady growth looks at this much history, ms ...
    pub growth_window_ms: u64,
    /// ... and needs at least this rise over the window, as a fraction of the card ...
    pub growth_min_fraction: f64,
    /// ... and at least this many bytes.
    pub growth_min_bytes: u64,
    /// Spill: the window compared half against half, ms.
    pub spill_window_ms: u64,
    /// Spill: the card counts as pinned full above this fill.
    pub spill_fill: f64,
    /// Other processes: fires when processes other than the main one hold this share of the card.
    pub others_enter: f64,
    pub others_leave: f64,
    /// Throttling: consecutive throttled samples before it fires.
    pub throttle_samples: u32,
}

impl Default for DetectorConfig {
    fn default() -> Self {
        DetectorConfig {
            full_enter: 0.95,
            full_leave: 0.90,
            growth_window_ms: 5 * 60_000,
            growth_min_fraction: 0.03,
            growth_min_bytes: 256 << 20,
            spill_window_ms: 30_000,
            spill_fill: 0.97,
            others_enter: 0.15,
            others_leave: 0.10,
            throttle_samples: 5,
        }
    }
}

/// Per-GPU episode flags.
#[derive(Debug, Clone, Default)]
struct Armed {
    /// Recent memory of each process, to name the one that grows.
    procs: HashMap<u32, ProcTrack>,
    full: bool,
    growth: bool,
    /// The floor's slope, bytes per second, while a growth episode lasts.
    growth_slope: Option<f64>,
    spill: bool,
    others: bool,
    throttle_run: u32,
    throttled: bool,
    lost: bool,
}

/// Bounds for the per-process tracks: the default growth window at 1 Hz, 64 processes per GPU.
const PROC_POINTS: usize = 300;
const MAX_PROCS: usize = 64;

#[derive(Debug, Clone, Default)]
struct ProcTrack {
    name: Option<String>,
    /// (time ms, bytes), oldest first.
    points: VecDeque<(u64, u64)>,
}

/// Records this sample's processes; forgets those that are gone.
fn track_processes(st: &mut Armed, g: &GpuSample, time_ms: u64) {
    let Some(procs) = g.processes.as_ref() else {
        return;
    };
    st.procs
        .retain(|pid, _| procs.iter().any(|p| p.pid == *pid));
    for p in procs {
        let Some(used) = p.used else { continue };
        if !st.procs.contains_key(&p.pid) && st.procs.len() >= MAX_PROCS {
            continue;
        }
        let t = st.procs.entry(p.pid).or_default();
        t.name.clone_from(&p.name);
        t.points.push_back((time_ms, used));
        if t.points.len() > PROC_POINTS {
            t.points.pop_front();
        }
    }
}

/// The process whose memory floor rises fastest over the window: (pid, name, bytes per second).
fn fastest_grower(st: &Armed, since_ms: u64) -> Option<(u32, Option<String>, f64)> {
    st.procs
        .iter()
        .filter_map(|(pid, t)| {
            let xy: Vec<(f64, f64)> = t
                .points
                .iter()
                .filter(|(time, _)| *time >= since_ms)
                .map(|&(time, b)| (time as f64 / 1000.0, b as f64))
                .collect();
            let slope = (xy.len() >= 20).then(|| floor_slope(&xy)).flatten()?;
            (slope > 0.0).then(|| (*pid, t.name.clone(), slope))
        })
        .max_by(|a, b| a.2.total_cmp(&b.2))
}

/// The detectors and their per-GPU memory of what already fired.
#[derive(Debug, Clone, Default)]
pub struct Detectors {
    pub config: DetectorConfig,
    /// The process the user is watching (their training run); `None` = the largest one.
    pub focus_pid: Option<u32>,
    state: HashMap<String, Armed>,
}

impl Detectors {
    pub fn new(config: DetectorConfig) -> Self {
        Detectors {
            config,
            focus_pid: None,
            state: HashMap::new(),
        }
    }

    /// Checks the newest snapshot; `history` must already contain it. Front ends go through a
    /// [`super::Session`], which keeps the two together.
    pub(super) fn check(&mut self, history: &History, snap: &Snapshot) -> Vec<Alert> {
        let mut out = Vec::new();
        for g in &snap.gpus {
            let key = g.key();
            let Some(h) = history.gpu(&key) else { continue };
            let st = self.state.entry(key.clone()).or_default();
            let mut emit = |kind, severity, message: Message, evidence: Vec<Message>| {
                out.push(Alert {
                    time_ms: snap.time_ms,
                    gpu: key.clone(),
                    gpu_name: g.name.clone(),
                    kind,
                    severity,
                    message,
                    evidence,
                });
            };
            track_processes(st, g, snap.time_ms);
            lost(st, g, &mut emit);
            if g.status == GpuStatus::Lost {
                continue;
            }
            near_capacity(&self.config, st, h, &mut emit);
            growth(&self.config, st, h, &mut emit);
            spill(&self.config, st, h, &mut emit);
            others(&self.config, self.focus_pid, st, g, &mut emit);
            throttling(&self.config, st, h, &mut emit);
        }
        out
    }
}

/// The episodes that are running on one GPU now (fired and not yet re-armed): what an exporter
/// shows as alert gauges, where the [`Alert`]s are the events that started them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Active {
    pub kinds: Vec<AlertKind>,
    /// While memory grows steadily: the rate, bytes per second (the leak's slope).
    pub growth_bytes_per_s: Option<f64>,
}

impl Detectors {
    /// What is active on the GPU with this [`GpuSample::key`].
    pub fn active(&self, gpu_key: &str) -> Active {
        let Some(st) = self.state.get(gpu_key) else {
            return Active::default();
        };
        let kinds = [
            (st.full, AlertKind::NearCapacity),
            (st.growth, AlertKind::SteadyGrowth),
            (st.spill, AlertKind::LikelySpill),
            (st.others, AlertKind::OtherProcesses),
            (st.throttled, AlertKind::Throttling),
            (st.lost, AlertKind::GpuLost),
        ]
        .into_iter()
        .filter_map(|(on, k)| on.then_some(k))
        .collect();
        Active {
            kinds,
            growth_bytes_per_s: st.growth_slope,
        }
    }
}

type Emit<'a> = dyn FnMut(AlertKind, Severity, Message, Vec<Message>) + 'a;

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn lost(st: &mut Armed, g: &GpuSample, emit: &mut Emit) {
    let now = g.status == GpuStatus::Lost;
    if now && !st.lost {
        emit(
            AlertKind::GpuLost,
            Severity::Critical,
            Message::new("alert.lost").text("gpu", g.name.clone()),
            vec![Message::new("alert.lost.evidence")],
        );
    } else if !now && st.lost {
        emit(
            AlertKind::GpuBack,
            Severity::Info,
            Message::new("alert.back").text("gpu", g.name.clone()),
            vec![],
        );
    }
    st.lost = now;
}

fn near_capacity(c: &DetectorConfig, st: &mut Armed, h: &GpuHistory, emit: &mut Emit) {
    let Some(p) = h.last() else { return };
    let Some(fill) = p.fill() else { return };
    if !st.full && fill >= c.full_enter {
        st.full = true;
        let free = p.total.unwrap_or(0).saturating_sub(p.used.unwrap_or(0));
        emit(
            AlertKind::NearCapacity,
            Severity::Warning,
            Message::new("alert.full")
                .text("fill", pct(fill))
                .bytes("free", free),
            vec![
                Message::new("alert.full.evidence")
                    .bytes("used", p.used.unwrap_or(0))
                    .bytes("total", p.total.unwrap_or(0)),
            ],
        );
    } else if st.full && fill < c.full_leave {
        st.full = false;
    }
}

/// Theil–Sen estimator (Sen 1968): the median of all pairwise slopes, robust to spikes and to the
/// saw-tooth of a caching allocator. At most 64 evenly spaced points are used (2016 pairs).
pub fn theil_sen(points: &[(f64, f64)]) -> Option<f64> {
    let step = points.len().div_ceil(64).max(1);
    let pts: Vec<(f64, f64)> = points.iter().step_by(step).copied().collect();
    let mut slopes = Vec::with_capacity(pts.len() * pts.len() / 2);
    for (i, a) in pts.iter().enumerate() {
        for b in &pts[i + 1..] {
            if b.0 > a.0 {
                slopes.push((b.1 - a.1) / (b.0 - a.0));
            }
        }
    }
    if slopes.is_empty() {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    Some(slopes[slopes.len() / 2])
}

/// The slope of the floor of a series: Theil–Sen over the lowest point of each tenth.
fn floor_slope(xy: &[(f64, f64)]) -> Option<f64> {
    let floor: Vec<(f64, f64)> = xy
        .chunks(xy.len().div_ceil(10).max(1))
        .filter_map(|c| c.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1)))
        .collect();
    theil_sen(&floor)
}

/// How a memory series rose: the robust slope of its floor and the floor of each quarter.
/// Shared by the monitor's steady-growth alert and `vram-doctor run`'s timeline evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Growth {
    /// Theil–Sen slope of the floor, bytes per second.
    pub bytes_per_s: f64,
    /// Time from the first point to the last, ms.
    pub span_ms: u64,
    /// The floor (5th percentile) of each quarter of the series, oldest first.
    pub floors: Vec<u64>,
}

impl Growth {
    /// Measures `(time ms, bytes)` points, oldest first; `None` for fewer than 20 points.
    pub fn measure(points: &[(u64, u64)]) -> Option<Growth> {
        if points.len() < 20 {
            return None;
        }
        let xy: Vec<(f64, f64)> = points
            .iter()
            .map(|&(t, b)| (t as f64 / 1000.0, b as f64))
            .collect();
        let bytes_per_s = floor_slope(&xy)?;
        let q = points.len() / 4;
        let floors = (0..4)
            .map(|i| {
                let mut v: Vec<u64> = points[i * q..(i + 1) * q].iter().map(|p| p.1).collect();
                v.sort_unstable();
                // The 5th percentile, not the minimum: one reading in which the process was
                // missing from the driver's list (or the source glitched) must not pull a
                // quarter's floor to zero; a saw-tooth's floor is many readings, not one.
                v.get(v.len() / 20).copied().unwrap_or(0)
            })
            .collect();
        let span_ms = points[points.len() - 1].0.saturating_sub(points[0].0);
        Some(Growth {
            bytes_per_s,
            span_ms,
            floors,
        })
    }

    /// The rise the slope makes over the span, bytes.
    pub fn rise(&self) -> f64 {
        self.bytes_per_s * self.span_ms as f64 / 1000.0
    }

    /// True when the floor of every quarter is higher than the one before. A caching
    /// allocator's saw-tooth goes up and down around a flat floor and does not pass; a leak
    /// raises the floor.
    pub fn floor_rises(&self) -> bool {
        self.floors.windows(2).all(|w| w[1] > w[0])
    }

    /// A leak: the floor rises steadily and by at least `need` bytes.
    pub fn is_steady(&self, need: f64) -> bool {
        self.rise() >= need && self.floor_rises()
    }

    /// "1.00 GiB → 2.00 GiB → …": the floor of each quarter, for the evidence.
    pub fn floors_text(&self) -> String {
        self.floors
            .iter()
            .map(|f| human(*f))
            .collect::<Vec<_>>()
            .join(" → ")
    }
}

/// Steady growth (a leak): over the window the robust slope of the floor is positive, the memory
/// rose by a real amount, and the *floor* rises ([`Growth::is_steady`]).
fn growth(c: &DetectorConfig, st: &mut Armed, h: &GpuHistory, emit: &mut Emit) {
    let Some(last) = h.last() else { return };
    let pts: Vec<(u64, u64)> = h
        .since(last.time_ms.saturating_sub(c.growth_window_ms))
        .filter_map(|p| Some((p.time_ms, p.used?)))
        .collect();
    let Some(g) = Growth::measure(&pts) else {
        return;
    };
    if g.span_ms < c.growth_window_ms / 2 {
        return;
    }
    let slope = g.bytes_per_s;
    let total = last.total.unwrap_or(0) as f64;
    let need = (c.growth_min_fraction * total).max(c.growth_min_bytes as f64);
    if !st.growth && g.is_steady(need) {
        st.growth = true;
        let free = (total - last.used.unwrap_or(0) as f64).max(0.0);
        let minutes = free / slope / 60.0;
        // Name the process that grows, when one accounts for at least a quarter of the rise.
        let grower = fastest_grower(st, pts[0].0).filter(|g| g.2 >= 0.25 * slope);
        let message = match grower {
            Some((pid, name, rate)) => Message::new("alert.growth.named")
                .text("name", name.as_deref().unwrap_or("?"))
                .int("pid", pid)
                .bytes("grower_rate", (rate * 60.0) as u64),
            None => Message::new("alert.growth"),
        };
        emit(
            AlertKind::SteadyGrowth,
            Severity::Warning,
            message
                .bytes("rate", (slope * 60.0) as u64)
                .fixed("minutes", minutes, 0),
            vec![
                Message::new("alert.growth.slope")
                    .bytes("slope", slope as u64)
                    .fixed("seconds", g.span_ms as f64 / 1000.0, 0),
                Message::new("alert.growth.floors").text("floors", g.floors_text()),
            ],
        );
    } else if st.growth && (slope <= 0.0 || g.rise() < need / 2.0) {
        st.growth = false;
    }
    st.growth_slope = st.growth.then_some(slope);
}

fn mean(it: impl Iterator<Item = f32>) -> Option<f64> {
    let (n, s) = it.fold((0u32, 0.0f64), |(n, s), v| (n + 1, s + f64::from(v)));
    (n > 0).then(|| s / f64::from(n))
}

/// Likely spill into shared system memory: the card stays pinned at the ceiling while PCIe
/// traffic rises and the GPU gets less busy (the heuristic of `monitor.md` §4.2, the GPU-Z "bus
/// interface load" signal of comfy-aimdo#86), or shared/GTT memory grows while pinned. A guess from
/// the numbers, and the message says so.
fn spill(c: &DetectorConfig, st: &mut Armed, h: &GpuHistory, emit: &mut Emit) {
    let Some(last) = h.last() else { return };
    let pts: Vec<&Point> = h
        .since(last.time_ms.saturating_sub(c.spill_window_ms))
        .collect();
    if pts.len() < 6 {
        return;
    }
    let (early, late) = pts.split_at(pts.len() / 2);
    let pinned = late
        .iter()
        .all(|p| p.fill().is_some_and(|f| f >= c.spill_fill));
    let pcie = |s: &[&Point]| mean(s.iter().filter_map(|p| p.pcie_kbps));
    let util = |s: &[&Point]| mean(s.iter().filter_map(|p| p.util_gpu));
    let shared = |s: &[&Point]| s.iter().filter_map(|p| p.shared_used).max();
    // PCIe at least doubles and reaches 200 MB/s; utilization falls by 15 points; or shared
    // memory grows by 256 MiB.
    let bus =
        matches!((pcie(early), pcie(late)), (Some(a), Some(b)) if b >= 2.0 * a && b >= 200_000.0);
    let slower = matches!((util(early), util(late)), (Some(a), Some(b)) if b <= a - 15.0);
    let shared_rise = match (shared(early), shared(late)) {
        (Some(a), Some(b)) => b.saturating_sub(a) >= 256 << 20,
        _ => false,
    };
    let now = pinned && ((bus && slower) || shared_rise);
    if now && !st.spill {
        st.spill = true;
        let mut evidence = vec![
            Message::new("alert.spill.pinned")
                .text("fill", pct(c.spill_fill))
                .int("samples", late.len() as u64),
        ];
        if bus && slower {
            evidence.push(
                Message::new("alert.spill.bus")
                    .fixed("before", pcie(early).unwrap_or(0.0) / 1000.0, 0)
                    .fixed("after", pcie(late).unwrap_or(0.0) / 1000.0, 0)
                    .fixed("util_before", util(early).unwrap_or(0.0), 0)
                    .fixed("util_after", util(late).unwrap_or(0.0), 0),
            );
        }
        if shared_rise {
            evidence.push(
                Message::new("alert.spill.shared").bytes("shared", shared(late).unwrap_or(0)),
            );
        }
        emit(
            AlertKind::LikelySpill,
            Severity::Warning,
            Message::new("alert.spill"),
            evidence,
        );
    } else if st.spill && !pinned {
        st.spill = false;
    }
}

/// Other processes hold a large share: everything but the main process (the focus pid, or the
/// largest) adds up to `others_enter` of the card. Names the biggest ones.
fn others(c: &DetectorConfig, focus: Option<u32>, st: &mut Armed, g: &GpuSample, emit: &mut Emit) {
    let (Some(rest), Some(mem)) = (g.other_processes(focus), g.memory) else {
        return;
    };
    if mem.total == 0 {
        return;
    }
    let sum: u64 = rest.iter().filter_map(|p| p.used).sum();
    let share = sum as f64 / mem.total as f64;
    if !st.others && share >= c.others_enter {
        st.others = true;
        let names: Vec<String> = rest
            .iter()
            .take(3)
            .map(|p| {
                format!(
                    "{} (pid {}, {})",
                    p.name.as_deref().unwrap_or("?"),
                    p.pid,
                    human(p.used.unwrap_or(0))
                )
            })
            .collect();
        emit(
            AlertKind::OtherProcesses,
            Severity::Warning,
            Message::new("alert.others")
                .bytes("bytes", sum)
                .text("share", pct(share))
                .text("names", names.join(", ")),
            vec![
                Message::new("alert.others.evidence")
                    .int("n", rest.len() as u64)
                    .text(
                        "main",
                        g.main_process(focus).map_or("-".into(), |p| p.to_string()),
                    ),
            ],
        );
    } else if st.others && share < c.others_leave {
        st.others = false;
    }
}

fn throttling(c: &DetectorConfig, st: &mut Armed, h: &GpuHistory, emit: &mut Emit) {
    let Some(p) = h.last() else { return };
    if p.thermal_throttle || p.power_throttle {
        st.throttle_run += 1;
    } else {
        st.throttle_run = 0;
        st.throttled = false;
    }
    if !st.throttled && st.throttle_run >= c.throttle_samples {
        st.throttled = true;
        let id = if p.thermal_throttle {
            "alert.throttling.hot"
        } else {
            "alert.throttling.power"
        };
        emit(
            AlertKind::Throttling,
            Severity::Info,
            Message::new(id),
            vec![
                Message::new("alert.throttling.evidence")
                    .int("samples", st.throttle_run)
                    .fixed("temp", f64::from(p.temp_c.unwrap_or(f32::NAN)), 0)
                    .fixed("power", f64::from(p.power_w.unwrap_or(f32::NAN)), 0),
            ],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::history::HistoryConfig;
    use crate::telemetry::sample::{MemorySample, ProcessSample, SharedMemory, ThrottleReason};

    const GIB: u64 = 1 << 30;

    fn gpu(used: u64) -> GpuSample {
        GpuSample {
            name: "G".into(),
            memory: Some(MemorySample {
                total: 24 * GIB,
                used,
                reserved: Some(0),
                used_includes_reserved: false,
            }),
            ..Default::default()
        }
    }

    /// Feeds one GPU sample per second and collects the alerts.
    fn run(samples: impl IntoIterator<Item = GpuSample>) -> Vec<(usize, Alert)> {
        let mut h = History::new(HistoryConfig::default());
        let mut d = Detectors::default();
        let mut out = vec![];
        for (i, g) in samples.into_iter().enumerate() {
            let s = Snapshot {
                time_ms: i as u64 * 1000,
                gpus: vec![g],
                ..Default::default()
            };
            h.push(&s);
            out.extend(d.check(&h, &s).into_iter().map(|a| (i, a)));
        }
        out
    }

    fn kinds(a: &[(usize, Alert)]) -> Vec<(usize, AlertKind)> {
        a.iter().map(|(i, a)| (*i, a.kind)).collect()
    }

    #[test]
    fn near_capacity_fires_once_per_crossing() {
        // 50% → 96% (fires) → 93% (still in the band: no re-fire) → 96% → 80% (re-arms) → 96% (fires).
        let fills = [0.5, 0.96, 0.93, 0.96, 0.8, 0.96];
        let a = run(fills.iter().map(|f| gpu((24.0 * f * GIB as f64) as u64)));
        assert_eq!(
            kinds(&a),
            vec![(1, AlertKind::NearCapacity), (5, AlertKind::NearCapacity)]
        );
        assert!(
            a[0].1.message.to_string().contains("96% full"),
            "{}",
            a[0].1.message
        );
    }

    #[test]
    fn steady_growth_is_a_leak_but_a_saw_tooth_is_not() {
        // Saw-tooth between 8 and 14 GiB for ten minutes: no alert.
        let saw = (0..600).map(|t| gpu(8 * GIB + (t % 30) * GIB / 5));
        assert!(run(saw).is_empty());
        // The same saw-tooth on a floor rising 4 MiB/s: an alert with a time-to-full.
        let leak = (0..600).map(|t| {
            let leaking = (t % 30) * GIB / 5 + t * 4 * (1 << 20);
            let procs = vec![
                ProcessSample {
                    pid: 7,
                    name: Some("python".into()),
                    used: Some(leaking),
                    ..Default::default()
                },
                ProcessSample {
                    pid: 8,
                    name: Some("Xorg".into()),
                    used: Some(GIB),
                    ..Default::default()
                },
            ];
            GpuSample {
                processes: Some(procs),
                ..gpu(8 * GIB + leaking)
            }
        });
        let a = run(leak);
        assert_eq!(
            a.iter()
                .filter(|(_, a)| a.kind == AlertKind::SteadyGrowth)
                .count(),
            1,
            "{a:?}"
        );
        let (i, alert) = a
            .iter()
            .find(|(_, a)| a.kind == AlertKind::SteadyGrowth)
            .unwrap();
        assert!(
            *i >= 150 && *i <= 300,
            "fires once the window shows it: {i}"
        );
        assert!(
            alert.message.to_string().contains("240 MiB/min"),
            "{}",
            alert.message
        );
        assert!(
            alert
                .message
                .to_string()
                .contains("Growing: python (pid 7), +240 MiB/min"),
            "{}",
            alert.message
        );
    }

    #[test]
    fn theil_sen_ignores_outliers() {
        let mut pts: Vec<(f64, f64)> = (0..100).map(|i| (i as f64, 2.0 * i as f64)).collect();
        pts[50].1 = 1e9;
        pts[70].1 = -1e9;
        assert_eq!(theil_sen(&pts), Some(2.0));
        assert_eq!(theil_sen(&[(1.0, 1.0)]), None);
    }

    #[test]
    fn spill_needs_full_card_and_bus_up_and_utilization_down() {
        let g = |fill: f64, pcie: u32, util: u32| GpuSample {
            pcie_rx_kbps: Some(pcie),
            util_gpu_pct: Some(util),
            ..gpu((24.0 * fill * GIB as f64) as u64)
        };
        let healthy = (0..40).map(|t| {
            if t < 20 {
                g(0.98, 50_000, 95)
            } else {
                g(0.98, 50_000, 94)
            }
        });
        assert!(
            run(healthy)
                .iter()
                .all(|(_, a)| a.kind != AlertKind::LikelySpill),
            "full but busy and quiet bus"
        );
        let spilling = (0..40).map(|t| {
            if t < 20 {
                g(0.98, 50_000, 95)
            } else {
                g(0.99, 3_000_000, 35)
            }
        });
        let a = run(spilling);
        let spill: Vec<_> = a
            .iter()
            .filter(|(_, a)| a.kind == AlertKind::LikelySpill)
            .collect();
        assert_eq!(spill.len(), 1, "{a:?}");
        assert!(spill[0].1.message.to_string().contains("guess"));
        // Bus traffic and a slowdown with room left on the card is not a spill.
        let roomy = (0..40).map(|t| {
            if t < 20 {
                g(0.5, 50_000, 95)
            } else {
                g(0.5, 3_000_000, 35)
            }
        });
        assert!(
            run(roomy)
                .iter()
                .all(|(_, a)| a.kind != AlertKind::LikelySpill)
        );
        // Shared memory rising while pinned (Windows counters, AMD GTT) is enough on its own.
        let shared = (0..40).map(|t| GpuSample {
            shared: Some(SharedMemory {
                used: t * (100 << 20),
                total: None,
            }),
            ..g(0.98, 0, 90)
        });
        assert!(
            run(shared)
                .iter()
                .any(|(_, a)| a.kind == AlertKind::LikelySpill)
        );
    }

    #[test]
    fn other_processes_are_named() {
        let p = |pid, name: &str, gib: u64| ProcessSample {
            pid,
            name: Some(name.into()),
            used: Some(gib * GIB),
            ..Default::default()
        };
        let g = GpuSample {
            processes: Some(vec![
                p(1, "python", 10),
                p(2, "chrome", 3),
                p(3, "blender", 2),
            ]),
            ..gpu(15 * GIB)
        };
        let a = run([g.clone(), g.clone()]);
        assert_eq!(
            kinds(&a),
            vec![(0, AlertKind::OtherProcesses)],
            "once, not every sample"
        );
        assert!(
            a[0].1
                .message
                .to_string()
                .contains("chrome (pid 2, 3.00 GiB)"),
            "{}",
            a[0].1.message
        );
        assert!(
            !a[0].1.message.to_string().contains("python"),
            "the main process is not 'other'"
        );
        let small = GpuSample {
            processes: Some(vec![p(1, "python", 10), p(2, "chrome", 1)]),
            ..gpu(11 * GIB)
        };
        assert!(run([small]).is_empty());
    }

    #[test]
    fn throttling_and_gpu_lost() {
        let hot = GpuSample {
            throttle: Some(vec![ThrottleReason::HwThermal]),
            temp_c: Some(91),
            ..gpu(GIB)
        };
        let a = run(std::iter::repeat_n(hot, 10));
        assert_eq!(kinds(&a), vec![(4, AlertKind::Throttling)]);
        assert!(a[0].1.message.to_string().contains("too hot"));
        let lost = GpuSample {
            status: GpuStatus::Lost,
            memory: None,
            ..gpu(0)
        };
        let a = run([gpu(GIB), lost.clone(), lost, gpu(GIB)]);
        assert_eq!(
            kinds(&a),
            vec![(1, AlertKind::GpuLost), (3, AlertKind::GpuBack)]
        );
        assert_eq!(a[0].1.severity, Severity::Critical);
    }
}
