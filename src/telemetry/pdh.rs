//! Windows GPU memory counters, the plain part: what Task Manager shows, read through the
//! "GPU Adapter Memory" and "GPU Process Memory" performance counters (`Dedicated Usage`,
//! `Shared Usage`; `monitor.md` §4.3, prometheus-community/windows_exporter
//! `docs/collector.gpu.md`). NVML sees neither the shared part nor per-process use under WDDM
//! (NVML docs, `nvmlProcessInfo_t::usedGpuMemory`), so these counters are how a spill into shared
//! memory becomes visible on Windows. The FFI that reads them is in `windows.rs`; parsing,
//! bookkeeping and the source that merges them with NVML ([`CountersSource`]) are here, so they
//! run on any OS: live on Windows, from a recording (`pdh_csv.rs`) everywhere.

use super::nvml::NvmlSource;
use super::sample::{
    GpuSample, MemorySample, ProcessKind, ProcessSample, SharedMemory, Snapshot, SourceKind,
    SourceState,
};
use super::source::Source;
use std::collections::{BTreeMap, HashMap, VecDeque};

/// The counter paths, English names (`PdhAddEnglishCounterW` works on any Windows language).
pub const ADAPTER_DEDICATED: &str = r"\GPU Adapter Memory(*)\Dedicated Usage";
pub const ADAPTER_SHARED: &str = r"\GPU Adapter Memory(*)\Shared Usage";
pub const PROCESS_DEDICATED: &str = r"\GPU Process Memory(*)\Dedicated Usage";
pub const PROCESS_SHARED: &str = r"\GPU Process Memory(*)\Shared Usage";
/// Each process's PID under its image name (`Cyberpunk2077`, `chrome#2` for the second one):
/// the names of the processes the GPU counters list by PID.
pub const PROCESS_ID: &str = r"\Process(*)\ID Process";

/// A counter instance name: `luid_0x00000000_0x0000D1A5_phys_0` (adapter) or
/// `pid_1234_luid_0x00000000_0x0000D1A5_phys_0` (process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    pub pid: Option<u32>,
    /// `0x00000000_0x0000D1A5`: the adapter LUID, high and low parts.
    pub luid: String,
}

pub fn parse_instance(name: &str) -> Option<Instance> {
    let (pid, rest) = match name.strip_prefix("pid_") {
        Some(r) => {
            let (pid, rest) = r.split_once('_')?;
            (Some(pid.parse().ok()?), rest)
        }
        None => (None, name),
    };
    let luid_part = rest.strip_prefix("luid_")?;
    let (luid, _phys) = luid_part.split_once("_phys_")?;
    let (hi, lo) = luid.split_once('_')?;
    let hex = |s: &str| {
        s.strip_prefix("0x")
            .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
    };
    (hex(hi) && hex(lo)).then(|| Instance {
        pid,
        luid: luid.to_ascii_lowercase(),
    })
}

/// One read of the counters: (instance name, value) per counter, bytes for the memory ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    pub adapter_dedicated: Vec<(String, u64)>,
    pub adapter_shared: Vec<(String, u64)>,
    pub process_dedicated: Vec<(String, u64)>,
    pub process_shared: Vec<(String, u64)>,
    /// [`PROCESS_ID`]: (image name, PID).
    pub process_ids: Vec<(String, u64)>,
    /// The per-process counters were not read at all (a recording made without
    /// [`PROCESS_DEDICATED`]): each adapter's processes are then unknown, not none.
    pub processes_missing: bool,
}

/// Process names by PID from [`PROCESS_ID`]: the `#N` that tells duplicates apart is dropped;
/// PID 0 (`Idle`, `_Total`) is no process.
fn names(c: &Counters) -> HashMap<u32, String> {
    c.process_ids
        .iter()
        .filter_map(|(name, pid)| {
            let pid = u32::try_from(*pid).ok().filter(|p| *p != 0)?;
            let base = match name.rsplit_once('#') {
                Some((b, n)) if !n.is_empty() && n.bytes().all(|d| d.is_ascii_digit()) => b,
                _ => name.as_str(),
            };
            Some((pid, base.to_owned()))
        })
        .collect()
}

/// Memory of one adapter, summed over its physical parts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Adapter {
    pub luid: String,
    pub dedicated: u64,
    pub shared: u64,
    /// `None` when the per-process counters were not read ([`Counters::processes_missing`]).
    pub processes: Option<Vec<ProcessSample>>,
}

/// Groups the counters by adapter LUID, naming processes where [`PROCESS_ID`] knows them.
/// Unparsable instance names are ignored.
pub fn adapters(c: &Counters) -> Vec<Adapter> {
    let names = names(c);
    let mut by: BTreeMap<String, Adapter> = BTreeMap::new();
    let mut procs: BTreeMap<(String, u32), (u64, u64)> = BTreeMap::new();
    let lists = [
        (&c.adapter_dedicated, 0),
        (&c.adapter_shared, 1),
        (&c.process_dedicated, 2),
        (&c.process_shared, 3),
    ];
    for (list, which) in lists {
        for (name, v) in list {
            let Some(i) = parse_instance(name) else {
                continue;
            };
            let a = by.entry(i.luid.clone()).or_insert_with(|| Adapter {
                luid: i.luid.clone(),
                processes: (!c.processes_missing).then(Vec::new),
                ..Default::default()
            });
            match (which, i.pid) {
                (0, None) => a.dedicated = a.dedicated.saturating_add(*v),
                (1, None) => a.shared = a.shared.saturating_add(*v),
                (2, Some(pid)) => procs.entry((i.luid, pid)).or_default().0 += v,
                (3, Some(pid)) => procs.entry((i.luid, pid)).or_default().1 += v,
                _ => {}
            }
        }
    }
    for ((luid, pid), (ded, sh)) in procs {
        // Every process that ever touched the GPU has an instance; only list those holding memory.
        if ded == 0 && sh == 0 {
            continue;
        }
        if let Some(list) = by.get_mut(&luid).and_then(|a| a.processes.as_mut()) {
            list.push(ProcessSample {
                pid,
                name: names.get(&pid).cloned(),
                used: Some(ded),
                shared: Some(sh),
                kind: ProcessKind::Graphics,
            });
        }
    }
    by.into_values()
        .filter(|a| {
            a.dedicated > 0 || a.shared > 0 || a.processes.as_ref().is_some_and(|p| !p.is_empty())
        })
        .collect()
}

/// Adds the counters to NVML's view of the same GPUs: shared memory per GPU, and per-process
/// dedicated and shared memory where NVML says "not available" (always, under WDDM).
/// An adapter is matched to the NVML GPU whose used memory is closest to its dedicated usage,
/// within 10 % of the card (PDH and NVML count slightly differently); this stands in for the
/// DXGI LUID ↔ PCI bus mapping (`monitor.md` §4.3), which needs COM. Returns the adapters that
/// matched no GPU (another vendor's card, an integrated GPU).
pub fn merge(gpus: &mut [GpuSample], adapters: Vec<Adapter>) -> Vec<Adapter> {
    let mut left = Vec::new();
    let mut taken = vec![false; gpus.len()];
    for a in adapters {
        let best = gpus
            .iter()
            .enumerate()
            .filter(|(i, _)| !taken[*i])
            .filter_map(|(i, g)| {
                let m = g.memory?;
                let diff = m
                    .used
                    .abs_diff(a.dedicated)
                    .min(m.unavailable().abs_diff(a.dedicated));
                (diff as f64 <= 0.10 * m.total as f64).then_some((diff, i))
            })
            .min();
        let Some((_, i)) = best else {
            left.push(a);
            continue;
        };
        taken[i] = true;
        let g = &mut gpus[i];
        g.shared = Some(SharedMemory {
            used: a.shared,
            total: g.shared.and_then(|s| s.total),
        });
        let Some(counted) = a.processes else {
            continue;
        };
        let procs = g.processes.get_or_insert_with(Vec::new);
        for p in counted {
            match procs.iter_mut().find(|q| q.pid == p.pid) {
                Some(q) => {
                    q.used = q.used.or(p.used);
                    q.shared = p.shared;
                    q.name = q.name.take().or(p.name);
                }
                None => procs.push(p),
            }
        }
    }
    left
}

/// A GPU sample for an adapter NVML does not know. The counters give no capacity, so `total` is
/// 0 ("unknown"): fill and free read as unknown, and detectors that need a capacity skip it.
pub fn adapter_sample(index: u32, a: Adapter) -> GpuSample {
    GpuSample {
        index,
        uuid: Some(format!("luid-{}", a.luid)),
        name: format!("GPU adapter {}", a.luid),
        memory: Some(MemorySample {
            total: 0,
            used: a.dedicated,
            reserved: None,
            used_includes_reserved: false,
        }),
        shared: Some(SharedMemory {
            used: a.shared,
            total: None,
        }),
        processes: a.processes,
        ..Default::default()
    }
}

/// Where counter readings come from: the live PDH query (`windows.rs`) or a recording.
pub trait CounterFeed: Send {
    /// The next reading, with its time (ms since 1970) when the feed has its own clock (a
    /// recording); `Err` says why there is none this time. `Ok(None)`: the feed has ended.
    fn read(&mut self) -> Result<Option<(Option<u64>, Counters)>, String>;
}

/// A recording's samples, one per read ([`super::pdh_csv`]).
pub struct RecordedCounters(VecDeque<(u64, Counters)>);

impl RecordedCounters {
    pub fn new(recording: super::pdh_csv::Recording) -> RecordedCounters {
        RecordedCounters(recording.samples.into())
    }
}

impl CounterFeed for RecordedCounters {
    fn read(&mut self) -> Result<Option<(Option<u64>, Counters)>, String> {
        Ok(self.0.pop_front().map(|(t, c)| (Some(t), c)))
    }
}

/// The one line that says the counters cannot be read, and `why` (a PDH status, "lists no
/// GPU adapter"): the CLI's note and every snapshot's ([`without_counters`]).
pub fn unavailable(why: &str) -> String {
    format!(
        "the Windows GPU performance counters are not available ({why}): shared GPU memory and \
         each process's memory are not shown"
    )
}

/// The counters where they cannot be read (Windows before 10 1709, no WDDM 2 driver, Wine):
/// every read answers why, and every snapshot notes it.
pub struct Unavailable(pub String);

impl CounterFeed for Unavailable {
    fn read(&mut self) -> Result<Option<(Option<u64>, Counters)>, String> {
        Err(self.0.clone())
    }
}

/// NVML alone, noting in every snapshot why the counters are missing (`why`), so that the
/// process table's unknown memory is explained where it is shown.
pub fn without_counters(nvml: NvmlSource, why: String) -> CountersSource {
    CountersSource::new(Some(nvml), Box::new(Unavailable(why)), SourceKind::Nvml)
}

/// NVML's readings, where there is an NVML, merged with the GPU counters ([`merge`]); adapters
/// NVML does not know become GPUs of their own ([`adapter_sample`]). The Windows source is this
/// over the live counters; a replay of a recording is this over [`RecordedCounters`].
pub struct CountersSource {
    nvml: Option<NvmlSource>,
    feed: Box<dyn CounterFeed>,
    kind: SourceKind,
    ended: bool,
}

impl CountersSource {
    pub fn new(
        nvml: Option<NvmlSource>,
        feed: Box<dyn CounterFeed>,
        kind: SourceKind,
    ) -> CountersSource {
        CountersSource {
            nvml,
            feed,
            kind,
            ended: false,
        }
    }
}

impl Source for CountersSource {
    fn kind(&self) -> SourceKind {
        self.kind
    }

    fn sample(&mut self) -> Snapshot {
        let mut snap = match self.nvml.as_mut() {
            Some(n) => n.sample(),
            None => Snapshot {
                time_ms: super::sample::now_ms(),
                ..Default::default()
            },
        };
        let (time, adapters) = match self.feed.read() {
            Ok(Some((time, c))) => (time, adapters(&c)),
            Ok(None) => {
                self.ended = true;
                snap.state = SourceState::Ended;
                snap.source = self.kind;
                snap.gpus.clear();
                return snap;
            }
            Err(why) => {
                snap.notes.push(why);
                (None, Vec::new())
            }
        };
        if let Some(t) = time {
            snap.time_ms = t;
        }
        let left = merge(&mut snap.gpus, adapters);
        let next = snap.gpus.len() as u32;
        snap.gpus.extend(
            left.into_iter()
                .enumerate()
                .map(|(i, a)| adapter_sample(next + i as u32, a)),
        );
        if !snap.gpus.is_empty() {
            // NVML may be missing (another vendor's GPU); the counters still work.
            snap.state = SourceState::Ok;
        }
        snap.source = self.kind;
        snap
    }

    fn finished(&self) -> bool {
        self.ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L1: &str = "luid_0x00000000_0x0000D1A5_phys_0";
    const L2: &str = "luid_0x00000000_0x0000E2B6_phys_0";

    fn counters() -> Counters {
        let gib = 1u64 << 30;
        Counters {
            adapter_dedicated: vec![
                (L1.into(), 23 * gib),
                (L2.into(), gib / 2),
                ("garbage".into(), 7),
            ],
            adapter_shared: vec![(L1.into(), 3 * gib), (L2.into(), 100)],
            process_dedicated: vec![
                (format!("pid_4242_{L1}"), 22 * gib),
                (format!("pid_77_{L1}"), gib / 4),
                (format!("pid_5_{L1}"), 0),
                (format!("pid_x_{L1}"), 1),
            ],
            process_shared: vec![
                (format!("pid_4242_{L1}"), 3 * gib),
                (format!("pid_5_{L1}"), 0),
            ],
            process_ids: vec![
                ("python#1".into(), 4242),
                ("dwm".into(), 77),
                ("Idle".into(), 0),
                ("_Total".into(), 0),
            ],
            processes_missing: false,
        }
    }

    #[test]
    fn counters_that_cannot_be_read_are_noted_in_every_snapshot() {
        let why = "the Windows GPU performance counters are not available (PDH_CSTATUS_NO_OBJECT)";
        let mut s =
            CountersSource::new(None, Box::new(Unavailable(why.into())), SourceKind::Windows);
        for _ in 0..2 {
            let snap = s.sample();
            assert_eq!(snap.notes, vec![why.to_string()]);
            assert!(snap.gpus.is_empty() && !s.finished());
        }
    }

    #[test]
    fn instance_names() {
        assert_eq!(
            parse_instance(L1),
            Some(Instance {
                pid: None,
                luid: "0x00000000_0x0000d1a5".into()
            })
        );
        assert_eq!(
            parse_instance(&format!("pid_12_{L1}")).unwrap().pid,
            Some(12)
        );
        for bad in [
            "",
            "pid_12",
            "luid_0x1_phys_0",
            "luid_0xZZ_0x1_phys_0",
            "pid_-1_luid_0x0_0x1_phys_0",
            "_Total",
        ] {
            assert_eq!(parse_instance(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn groups_by_adapter_and_skips_idle_processes() {
        let a = adapters(&counters());
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].dedicated, a[0].shared), (23 << 30, 3 << 30));
        let procs = a[0].processes.as_ref().unwrap();
        let pids: Vec<u32> = procs.iter().map(|p| p.pid).collect();
        assert_eq!(
            pids,
            vec![77, 4242],
            "pid 5 holds nothing, pid x is unparsable"
        );
        assert_eq!(procs[1].shared, Some(3 << 30));
        // Without the per-process counters the processes are unknown, not none.
        let without = Counters {
            processes_missing: true,
            ..counters()
        };
        assert!(adapters(&without).iter().all(|a| a.processes.is_none()));
    }

    #[test]
    fn merges_into_nvml_gpus_and_fills_unavailable_process_memory() {
        let mut gpus = vec![GpuSample {
            memory: Some(MemorySample {
                total: 24 << 30,
                used: (23 << 30) - (100 << 20),
                reserved: Some(300 << 20),
                used_includes_reserved: false,
            }),
            processes: Some(vec![ProcessSample {
                pid: 4242,
                name: Some("python.exe".into()),
                used: None,
                ..Default::default()
            }]),
            ..Default::default()
        }];
        let left = merge(&mut gpus, adapters(&counters()));
        assert_eq!(left.len(), 1, "the small adapter matches no NVML GPU");
        let g = &gpus[0];
        assert_eq!(
            g.shared.unwrap().used,
            3 << 30,
            "shared memory becomes visible"
        );
        let p = g.processes.as_ref().unwrap();
        let py = p.iter().find(|p| p.pid == 4242).unwrap();
        assert_eq!(
            (py.name.as_deref(), py.used, py.shared),
            (Some("python.exe"), Some(22 << 30), Some(3 << 30))
        );
        assert!(
            p.iter().any(|p| p.pid == 77),
            "processes NVML did not list are added"
        );
        let extra = adapter_sample(1, left.into_iter().next().unwrap());
        assert_eq!(extra.memory.unwrap().fill(), 0.0);
        assert_eq!(extra.memory.unwrap().used, 1 << 29);
    }
}
