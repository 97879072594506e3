//! Bounded per-GPU history: the last hour at full rate, the 23 hours before it as one-minute
//! buckets, so a day at 1 Hz fits in well under a megabyte per GPU (the "at most a few MB";
//! tests check the bound). Buckets keep the *peak* memory, because an OOM happens at the peak and
//! an average would hide it, and the mean of everything else.

use super::sample::{GpuSample, GpuStatus, Snapshot};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// One instant (or one bucket) of one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Point {
    pub time_ms: u64,
    /// Memory no process can get any more (used + reserved), bytes.
    pub used: Option<u64>,
    /// Of `used`, what the driver and firmware hold, bytes (`None` where the source cannot tell).
    #[serde(default)]
    pub reserved: Option<u64>,
    pub total: Option<u64>,
    /// Shared / GTT memory in use, bytes.
    pub shared_used: Option<u64>,
    pub util_gpu: Option<f32>,
    /// Memory-controller busy percent (not capacity).
    #[serde(default)]
    pub util_mem: Option<f32>,
    pub temp_c: Option<f32>,
    pub power_w: Option<f32>,
    /// PCIe RX + TX, KB/s.
    pub pcie_kbps: Option<f32>,
    /// PCIe received (host to GPU) and sent, KB/s, each as the source reports it.
    #[serde(default)]
    pub pcie_rx_kbps: Option<f32>,
    #[serde(default)]
    pub pcie_tx_kbps: Option<f32>,
    pub thermal_throttle: bool,
    pub power_throttle: bool,
    pub lost: bool,
}

impl Point {
    pub fn from_gpu(time_ms: u64, g: &GpuSample) -> Point {
        let throttle = g.throttle.as_deref().unwrap_or_default();
        Point {
            time_ms,
            used: g.memory.map(|m| m.unavailable()),
            reserved: g
                .memory
                .and_then(|m| m.reserved.filter(|_| !m.used_includes_reserved)),
            total: g.memory.map(|m| m.total),
            shared_used: g.shared.map(|s| s.used),
            util_gpu: g.util_gpu_pct.map(|v| v as f32),
            util_mem: g.util_mem_pct.map(|v| v as f32),
            temp_c: g.temp_c.map(|v| v as f32),
            power_w: g.power_w.map(|v| v as f32),
            pcie_kbps: match (g.pcie_rx_kbps, g.pcie_tx_kbps) {
                (None, None) => None,
                (rx, tx) => Some(rx.unwrap_or(0) as f32 + tx.unwrap_or(0) as f32),
            },
            pcie_rx_kbps: g.pcie_rx_kbps.map(|v| v as f32),
            pcie_tx_kbps: g.pcie_tx_kbps.map(|v| v as f32),
            thermal_throttle: throttle.iter().any(|r| r.is_thermal()),
            power_throttle: throttle.iter().any(|r| r.is_power()),
            lost: g.status == GpuStatus::Lost,
        }
    }

    /// Fraction of the card taken, when known.
    pub fn fill(&self) -> Option<f64> {
        match (self.used, self.total) {
            (Some(u), Some(t)) if t > 0 => Some(u as f64 / t as f64),
            _ => None,
        }
    }
}

/// Sizes of the two tiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryConfig {
    /// Points kept at full rate (3600 = one hour at 1 Hz).
    pub recent: usize,
    /// Width of an older bucket, ms.
    pub bucket_ms: u64,
    /// Buckets kept (1380 one-minute buckets = 23 hours).
    pub buckets: usize,
    /// GPUs tracked at most (a bound for a malformed replay with endless new ids).
    pub max_gpus: usize,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig {
            recent: 3600,
            bucket_ms: 60_000,
            buckets: 1380,
            // A small fleet read through Prometheus (8 hosts of 8 GPUs); about 30 MB at most.
            max_gpus: 64,
        }
    }
}

/// Values a bucket averages: utilization, temperature, power, PCIe (sum), memory-controller
/// utilization, PCIe RX, PCIe TX; in the order of [`Acc::means_of`].
const MEANS: usize = 7;

/// Running sums for the bucket being filled.
#[derive(Debug, Clone, Default)]
struct Acc {
    first: Option<Point>,
    n: [u32; MEANS],
    sum: [f64; MEANS],
    max_used: Option<u64>,
    max_reserved: Option<u64>,
    max_shared: Option<u64>,
    flags: (bool, bool, bool),
    total: Option<u64>,
}

impl Acc {
    fn add(&mut self, p: &Point) {
        if self.first.is_none() {
            self.first = Some(*p);
        }
        self.max_used = self.max_used.max(p.used);
        self.max_reserved = self.max_reserved.max(p.reserved);
        self.max_shared = self.max_shared.max(p.shared_used);
        self.total = p.total.or(self.total);
        for (i, v) in Self::means_of(p).iter().enumerate() {
            if let Some(v) = v {
                self.n[i] += 1;
                self.sum[i] += f64::from(*v);
            }
        }
        self.flags = (
            self.flags.0 | p.thermal_throttle,
            self.flags.1 | p.power_throttle,
            self.flags.2 | p.lost,
        );
    }

    fn means_of(p: &Point) -> [Option<f32>; MEANS] {
        [
            p.util_gpu,
            p.temp_c,
            p.power_w,
            p.pcie_kbps,
            p.util_mem,
            p.pcie_rx_kbps,
            p.pcie_tx_kbps,
        ]
    }

    fn mean(&self, i: usize) -> Option<f32> {
        (self.n[i] > 0).then(|| (self.sum[i] / f64::from(self.n[i])) as f32)
    }

    fn finish(&self) -> Option<Point> {
        let first = self.first?;
        Some(Point {
            time_ms: first.time_ms,
            used: self.max_used,
            reserved: self.max_reserved,
            total: self.total,
            shared_used: self.max_shared,
            util_gpu: self.mean(0),
            util_mem: self.mean(4),
            temp_c: self.mean(1),
            power_w: self.mean(2),
            pcie_kbps: self.mean(3),
            pcie_rx_kbps: self.mean(5),
            pcie_tx_kbps: self.mean(6),
            thermal_throttle: self.flags.0,
            power_throttle: self.flags.1,
            lost: self.flags.2,
        })
    }
}

/// History of one GPU.
#[derive(Debug, Clone, Default)]
pub struct GpuHistory {
    pub name: String,
    recent: VecDeque<Point>,
    older: VecDeque<Point>,
    acc: Acc,
}

impl GpuHistory {
    fn push(&mut self, p: Point, cfg: &HistoryConfig) {
        self.recent.push_back(p);
        while self.recent.len() > cfg.recent.max(1) {
            let Some(old) = self.recent.pop_front() else {
                break;
            };
            let starts_new = self
                .acc
                .first
                .is_some_and(|f| old.time_ms.saturating_sub(f.time_ms) >= cfg.bucket_ms);
            if starts_new {
                if let Some(b) = self.acc.finish() {
                    self.older.push_back(b);
                }
                self.acc = Acc::default();
                while self.older.len() > cfg.buckets {
                    self.older.pop_front();
                }
            }
            self.acc.add(&old);
        }
    }

    /// Full-rate points, oldest first.
    pub fn recent(&self) -> &VecDeque<Point> {
        &self.recent
    }

    /// Every point, oldest first: the buckets (including the one being filled), then full rate.
    pub fn points(&self) -> impl Iterator<Item = Point> + '_ {
        self.older
            .iter()
            .copied()
            .chain(self.acc.finish())
            .chain(self.recent.iter().copied())
    }

    pub fn last(&self) -> Option<&Point> {
        self.recent.back()
    }

    /// Full-rate points newer than `since_ms`.
    pub fn since(&self, since_ms: u64) -> impl Iterator<Item = &Point> {
        let start = self.recent.partition_point(|p| p.time_ms < since_ms);
        self.recent.range(start..)
    }

    /// Every point (buckets, then full rate) with `from_ms <= time <= to_ms`, oldest first: what
    /// a plot showing that stretch of time needs, found by binary search so a view of a minute
    /// costs a minute of points however long the history is.
    pub fn between(&self, from_ms: u64, to_ms: u64) -> impl Iterator<Item = Point> + '_ {
        let old = self.older.partition_point(|p| p.time_ms < from_ms);
        let new = self.recent.partition_point(|p| p.time_ms < from_ms);
        self.older
            .range(old..)
            .copied()
            .chain(self.acc.finish().filter(|p| p.time_ms >= from_ms))
            .chain(self.recent.range(new..).copied())
            .take_while(move |p| p.time_ms <= to_ms)
    }

    pub fn len(&self) -> usize {
        self.recent.len() + self.older.len()
    }

    pub fn is_empty(&self) -> bool {
        self.recent.is_empty()
    }
}

/// Histories of every GPU seen, keyed by [`GpuSample::key`].
#[derive(Debug, Clone, Default)]
pub struct History {
    pub config: HistoryConfig,
    gpus: BTreeMap<String, GpuHistory>,
}

impl History {
    pub fn new(config: HistoryConfig) -> Self {
        History {
            config,
            gpus: BTreeMap::new(),
        }
    }

    /// Adds every GPU of a snapshot. A time before the last stored one (the wall clock set back,
    /// a replay of concatenated recordings) is clamped to it: each series stays in time order and
    /// nothing is dropped, so a clock adjustment cannot freeze the graph.
    pub fn push(&mut self, s: &Snapshot) {
        for g in &s.gpus {
            let key = g.key();
            if !self.gpus.contains_key(&key) && self.gpus.len() >= self.config.max_gpus {
                continue;
            }
            let h = self.gpus.entry(key).or_default();
            let time_ms = h.last().map_or(s.time_ms, |l| l.time_ms.max(s.time_ms));
            h.name.clone_from(&g.name);
            h.push(Point::from_gpu(time_ms, g), &self.config);
        }
    }

    pub fn gpu(&self, key: &str) -> Option<&GpuHistory> {
        self.gpus.get(key)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &GpuHistory)> {
        self.gpus.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::sample::MemorySample;

    fn snap(t: u64, used: u64, util: u32) -> Snapshot {
        Snapshot {
            time_ms: t,
            gpus: vec![GpuSample {
                name: "g".into(),
                memory: Some(MemorySample {
                    total: 1000,
                    used,
                    reserved: Some(10),
                    used_includes_reserved: false,
                }),
                util_gpu_pct: Some(util),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_day_at_one_hertz_is_bounded_and_keeps_peaks() {
        let mut h = History::new(HistoryConfig::default());
        let day = 86_400u64;
        for t in 0..day {
            // A one-second spike once every ten minutes must survive the downsampling.
            let used = if t % 600 == 300 { 990 } else { 100 };
            h.push(&snap(t * 1000, used, if t % 2 == 0 { 20 } else { 80 }));
        }
        let g = h.gpu("index-0").unwrap();
        let cfg = HistoryConfig::default();
        assert!(g.len() <= cfg.recent + cfg.buckets);
        let bytes = g.len() * std::mem::size_of::<Point>();
        assert!(bytes < 1 << 20, "{bytes} bytes for a day");
        let pts: Vec<Point> = g.points().collect();
        assert!(
            pts.windows(2).all(|w| w[0].time_ms < w[1].time_ms),
            "time order"
        );
        assert!(
            pts[0].time_ms < 3_600_000,
            "the oldest point is from the first hour: {}",
            pts[0].time_ms
        );
        // Every ten-minute stretch keeps its spike (used + reserved = 1000).
        let spikes = pts.iter().filter(|p| p.used == Some(1000)).count();
        assert!(spikes >= 140, "{spikes} spikes kept");
        let bucket = pts[5];
        assert_eq!(
            bucket.util_gpu,
            Some(50.0),
            "buckets average the rest: {bucket:?}"
        );
    }

    #[test]
    fn between_spans_buckets_and_full_rate_points() {
        let mut h = History::new(HistoryConfig {
            recent: 10,
            bucket_ms: 5000,
            ..Default::default()
        });
        for t in 0..40u64 {
            let mut s = snap(t * 1000, t, 10);
            s.gpus[0].pcie_rx_kbps = Some(t as u32);
            h.push(&s);
        }
        let g = h.gpu("index-0").unwrap();
        let times = |a, b| g.between(a, b).map(|p| p.time_ms).collect::<Vec<_>>();
        // Full rate: the last ten seconds.
        assert_eq!(times(35_000, 37_000), vec![35_000, 36_000, 37_000]);
        // Older: one point per five-second bucket, stamped with its first second.
        assert_eq!(times(9_000, 21_000), vec![10_000, 15_000, 20_000]);
        assert!(times(100_000, 200_000).is_empty());
        let all: Vec<Point> = g.between(0, u64::MAX).collect();
        assert_eq!(all.len(), g.points().count());
        // Buckets keep the peak memory and average the rest, PCIe directions included.
        let b = all.iter().find(|p| p.time_ms == 10_000).unwrap();
        assert_eq!(b.used, Some(14 + 10));
        assert_eq!(b.reserved, Some(10));
        assert_eq!(b.pcie_rx_kbps, Some(12.0));
    }

    #[test]
    fn bounded_gpu_count_and_time_order() {
        let mut h = History::new(HistoryConfig {
            max_gpus: 2,
            ..Default::default()
        });
        for i in 0..5 {
            let mut s = snap(1000, 1, 1);
            s.gpus[0].uuid = Some(format!("u{i}"));
            h.push(&s);
        }
        assert_eq!(h.iter().count(), 2);
        h.push(&snap(5000, 1, 1));
        h.push(&snap(4000, 2, 1));
        assert!(h.gpu("index-0").is_none(), "index-0 came after the bound");
        let mut h = History::default();
        h.push(&snap(5000, 1, 1));
        h.push(&snap(4000, 2, 1));
        let pts: Vec<Point> = h.gpu("index-0").unwrap().points().collect();
        let times: Vec<u64> = pts.iter().map(|p| p.time_ms).collect();
        assert_eq!(
            times,
            vec![5000, 5000],
            "a step back in time is clamped, not dropped"
        );
        assert_eq!(pts[1].used, Some(12));
        assert_eq!(h.gpu("index-0").unwrap().since(4500).count(), 2);
    }
}
