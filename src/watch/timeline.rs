//! The run's memory over time, per GPU: what the run's processes held (summed from the
//! source's per-process figures) next to the whole card, and the processes that arrived on the
//! GPU while it ran. Bounded: past [`MAX_POINTS`] a track halves its resolution, keeping the
//! higher point of each pair (an OOM happens at the peak, so the peak is never averaged away).

use super::tree::Membership;
use crate::telemetry::{GpuSample, ProcessSample, Snapshot};
use serde::{Deserialize, Serialize};

/// Points kept per GPU: an hour at 10 Hz before the first halving, about 1.4 MB.
pub const MAX_POINTS: usize = 36_000;

/// Where a point's `run` figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// The sum of the run's processes' figures.
    Processes,
    /// The whole card: the source gives no per-process figures (Windows WDDM, some AMD setups),
    /// or none of the listed processes could be matched to the run.
    WholeCard,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TrackPoint {
    /// Milliseconds since the run started.
    pub t_ms: u64,
    /// Bytes the run held on this GPU (see the track's basis).
    pub run: u64,
    /// Bytes taken on the whole card (used + reserved).
    pub card: u64,
    /// Shared (system) memory the GPU used, where the source says.
    pub shared: Option<u64>,
}

/// A process that was not on the GPU when the run started and is not the run's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arrival {
    pub gpu: String,
    pub pid: u32,
    pub name: Option<String>,
    /// When it was first seen, ms since the start.
    pub t_ms: u64,
    /// The most it held while the run was watched.
    pub max_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuTrack {
    /// The GPU's history key (UUID, or index).
    pub key: String,
    pub index: u32,
    pub name: String,
    pub total: Option<u64>,
    pub points: Vec<TrackPoint>,
    /// Samples whose `run` figure is the whole card, of all samples.
    pub whole_card_samples: u64,
    pub samples: u64,
    /// Samples in which one of the run's processes was listed on this GPU.
    pub run_seen_samples: u64,
    /// Points merged into one (1, 2, 4, … after halvings).
    #[serde(skip)]
    stride: u64,
    #[serde(skip)]
    pending: Option<(TrackPoint, u64)>,
}

impl GpuTrack {
    fn new(g: &GpuSample) -> GpuTrack {
        GpuTrack {
            key: g.key(),
            index: g.index,
            name: g.name.clone(),
            total: None,
            points: Vec::new(),
            whole_card_samples: 0,
            samples: 0,
            run_seen_samples: 0,
            stride: 1,
            pending: None,
        }
    }

    /// A track of per-process points, as if sampled (for tests of the analysis).
    #[cfg(test)]
    pub(crate) fn from_points(key: &str, total: u64, points: Vec<TrackPoint>) -> GpuTrack {
        let n = points.len() as u64;
        GpuTrack {
            key: key.into(),
            index: 0,
            name: "G".into(),
            total: Some(total),
            points,
            whole_card_samples: 0,
            samples: n,
            run_seen_samples: n,
            stride: 1,
            pending: None,
        }
    }

    /// The basis of most samples.
    pub fn basis(&self) -> Basis {
        if self.whole_card_samples * 2 > self.samples {
            Basis::WholeCard
        } else {
            Basis::Processes
        }
    }

    /// The highest `run` point: (point).
    pub fn peak(&self) -> Option<TrackPoint> {
        self.points
            .iter()
            .copied()
            .max_by_key(|p| (p.run, std::cmp::Reverse(p.t_ms)))
    }

    fn push(&mut self, p: TrackPoint) {
        // Merge `stride` samples into one, keeping the higher.
        let (best, n) = match self.pending.take() {
            Some((b, n)) => (if p.run > b.run { p } else { b }, n + 1),
            None => (p, 1),
        };
        if n < self.stride {
            self.pending = Some((best, n));
            return;
        }
        self.points.push(best);
        if self.points.len() >= MAX_POINTS {
            self.points = self
                .points
                .chunks(2)
                .filter_map(|c| c.iter().copied().max_by_key(|p| p.run))
                .collect();
            self.stride *= 2;
        }
    }

    /// Points merged into the last kept one, for a track that was just halved, included.
    pub fn finish(&mut self) {
        if let Some((p, _)) = self.pending.take() {
            self.points.push(p);
        }
    }
}

/// The whole timeline of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// Unix ms of the first sample.
    pub start_ms: u64,
    pub gpus: Vec<GpuTrack>,
    pub arrivals: Vec<Arrival>,
    /// Pids on each GPU in the first sample (not arrivals).
    #[serde(skip)]
    present: Vec<(String, Vec<u32>)>,
}

/// GPUs tracked at most (as the monitor's history bounds a malformed source).
const MAX_GPUS: usize = 16;
/// Arrivals kept at most.
const MAX_ARRIVALS: usize = 32;

impl Timeline {
    /// An empty timeline of a run started at `start_ms` (Unix ms).
    pub fn new(start_ms: u64) -> Timeline {
        Timeline {
            start_ms,
            ..Default::default()
        }
    }

    /// Adds one snapshot; returns the snapshot as the detectors should see it: the run's
    /// processes merged into one entry under the child's pid (so "other processes" means
    /// processes that are not the run's), everything else as sampled.
    pub fn push(&mut self, snap: &Snapshot, run: &mut Membership) -> Snapshot {
        let t_ms = snap.time_ms.saturating_sub(self.start_ms);
        let listed: Vec<u32> = snap
            .gpus
            .iter()
            .flat_map(|g| g.processes.iter().flatten().map(|p| p.pid))
            .collect();
        run.retain(&listed);
        let mut out = snap.clone();
        for g in &mut out.gpus {
            let Some(mem) = g.memory else { continue };
            let key = g.key();
            let i = match self.gpus.iter().position(|t| t.key == key) {
                Some(i) => i,
                None if self.gpus.len() < MAX_GPUS => {
                    self.gpus.push(GpuTrack::new(g));
                    self.gpus.len() - 1
                }
                None => continue,
            };
            let first_sample = self.gpus[i].samples == 0;
            let (mine, others): (Vec<ProcessSample>, Vec<ProcessSample>) = g
                .processes
                .iter()
                .flatten()
                .cloned()
                .partition(|p| run.contains(p.pid));
            let per_process = g.processes.is_some() && mine.iter().all(|p| p.used.is_some());
            let run_bytes = if per_process {
                mine.iter().filter_map(|p| p.used).sum()
            } else {
                mem.unavailable()
            };
            let track = &mut self.gpus[i];
            track.total = Some(mem.total);
            track.samples += 1;
            track.whole_card_samples += u64::from(!per_process);
            track.run_seen_samples += u64::from(!mine.is_empty());
            track.push(TrackPoint {
                t_ms,
                run: run_bytes,
                card: mem.unavailable(),
                shared: g.shared.map(|s| s.used),
            });
            self.note_arrivals(&key, &others, t_ms, first_sample);
            if let Some(procs) = g.processes.as_mut() {
                *procs = others;
                if !mine.is_empty() {
                    procs.push(ProcessSample {
                        pid: run.child(),
                        name: mine.iter().find_map(|p| p.name.clone()),
                        used: per_process.then_some(run_bytes),
                        shared: None,
                        kind: mine[0].kind,
                    });
                }
            }
        }
        out
    }

    fn note_arrivals(&mut self, key: &str, others: &[ProcessSample], t_ms: u64, first: bool) {
        if first {
            self.present
                .push((key.to_string(), others.iter().map(|p| p.pid).collect()));
            return;
        }
        let present = self
            .present
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_slice())
            .unwrap_or_default();
        for p in others.iter().filter(|p| !present.contains(&p.pid)) {
            let used = p.used.unwrap_or(0);
            match self
                .arrivals
                .iter()
                .position(|a| a.pid == p.pid && a.gpu == key)
            {
                Some(i) => self.arrivals[i].max_bytes = self.arrivals[i].max_bytes.max(used),
                None if self.arrivals.len() < MAX_ARRIVALS => self.arrivals.push(Arrival {
                    gpu: key.to_string(),
                    pid: p.pid,
                    name: p.name.clone(),
                    t_ms,
                    max_bytes: used,
                }),
                None => {}
            }
        }
    }

    /// Ends the timeline (keeps points still being merged).
    pub fn finish(&mut self) {
        for g in &mut self.gpus {
            g.finish();
        }
    }

    /// The GPU the run used most: the highest `run` peak among tracks where the run's
    /// processes were seen (else among all).
    pub fn main_gpu(&self) -> Option<&GpuTrack> {
        let seen: Vec<&GpuTrack> = self
            .gpus
            .iter()
            .filter(|g| g.run_seen_samples > 0)
            .collect();
        let pool = if seen.is_empty() {
            self.gpus.iter().collect()
        } else {
            seen
        };
        pool.into_iter()
            .max_by_key(|g| g.peak().map_or(0, |p| p.run))
    }

    /// True when the source listed processes with figures but never one of the run's, on any
    /// GPU (in a container the driver may show host pids the run's pid namespace does not
    /// know): then the per-process figures say nothing about the run.
    pub fn run_never_listed(&self) -> bool {
        !self.gpus.is_empty()
            && self.gpus.iter().all(|g| g.run_seen_samples == 0)
            && self.gpus.iter().any(|g| g.basis() == Basis::Processes)
    }

    /// Switches every track to the whole card (see [`Timeline::run_never_listed`]).
    pub fn use_whole_card(&mut self) {
        for g in &mut self.gpus {
            for p in &mut g.points {
                p.run = p.card;
            }
            g.whole_card_samples = g.samples;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::MemorySample;

    fn snap(t: u64, procs: Option<Vec<(u32, Option<u64>)>>, used: u64) -> Snapshot {
        Snapshot {
            time_ms: 1_000_000 + t,
            gpus: vec![GpuSample {
                name: "G".into(),
                uuid: Some("GPU-1".into()),
                memory: Some(MemorySample {
                    total: 1000,
                    used,
                    reserved: Some(10),
                    used_includes_reserved: false,
                }),
                processes: procs.map(|v| {
                    v.into_iter()
                        .map(|(pid, used)| ProcessSample {
                            pid,
                            used,
                            ..Default::default()
                        })
                        .collect()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn the_runs_processes_are_summed_and_merged_and_others_kept() {
        let me = std::process::id();
        // Pid 1 (init) is never the run's; the "child" is a made-up pid that is the run's by definition.
        let mut run = Membership::new(me, 999_999_999);
        let mut tl = Timeline::new(1_000_000);
        let s = snap(0, Some(vec![(999_999_999, Some(300)), (1, Some(100))]), 500);
        let seen = tl.push(&s, &mut run);
        let g = &tl.gpus[0];
        assert_eq!(g.points[0].run, 300);
        assert_eq!(g.points[0].card, 510, "used + reserved");
        assert_eq!(g.basis(), Basis::Processes);
        let procs = seen.gpus[0].processes.as_ref().unwrap();
        assert_eq!(procs.len(), 2);
        assert!(
            procs
                .iter()
                .any(|p| p.pid == 999_999_999 && p.used == Some(300))
        );
        // A process that appears later is an arrival; one present from the start is not.
        tl.push(
            &snap(
                100,
                Some(vec![
                    (999_999_999, Some(300)),
                    (1, Some(100)),
                    (2, Some(50)),
                ]),
                550,
            ),
            &mut run,
        );
        assert_eq!(tl.arrivals.len(), 1);
        assert_eq!((tl.arrivals[0].pid, tl.arrivals[0].t_ms), (2, 100));
    }

    #[test]
    fn without_per_process_figures_the_whole_card_is_used_and_said() {
        let mut run = Membership::new(std::process::id(), 999_999_999);
        let mut tl = Timeline::new(1_000_000);
        tl.push(&snap(0, None, 500), &mut run);
        tl.push(&snap(100, Some(vec![(999_999_999, None)]), 600), &mut run);
        let g = &tl.gpus[0];
        assert_eq!(g.basis(), Basis::WholeCard);
        assert_eq!(
            g.points.iter().map(|p| p.run).collect::<Vec<_>>(),
            vec![510, 610]
        );
    }

    #[test]
    fn a_long_run_is_bounded_and_keeps_its_peak() {
        let mut run = Membership::new(std::process::id(), 999_999_999);
        let mut tl = Timeline::new(1_000_000);
        for t in 0..(MAX_POINTS as u64 * 3) {
            let used = if t == 12_345 { 900 } else { t % 100 };
            tl.push(
                &snap(t * 100, Some(vec![(999_999_999, Some(used))]), 0),
                &mut run,
            );
        }
        tl.finish();
        let g = &tl.gpus[0];
        assert!(g.points.len() <= MAX_POINTS, "{}", g.points.len());
        assert_eq!(g.peak().unwrap().run, 900);
        assert_eq!(g.peak().unwrap().t_ms, 1_234_500);
    }
}
