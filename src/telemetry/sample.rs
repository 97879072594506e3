//! Plain-data samples: what every source produces and every consumer (GUI, CLI, recorder,
//! detectors) reads. All fields a GPU may not report are `Option`: a metric a card does not
//! support is absent, never an error and never a made-up zero (`monitor.md` §5 point 2).

use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now. A clock before 1970 reads as 0 rather than panicking.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Which kind of source produced a snapshot, so a demo or a replay is never mistaken for live data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// No source could be opened.
    #[default]
    None,
    Nvml,
    Amd,
    Windows,
    Demo,
    Replay,
    /// A Prometheus server's query API or an exporter's `/metrics`, read over the network.
    Prometheus,
}

impl SourceKind {
    /// Short label for tables and window titles.
    pub fn label(self) -> &'static str {
        match self {
            SourceKind::None => "no source",
            SourceKind::Nvml => "NVIDIA (NVML)",
            SourceKind::Amd => "AMD (sysfs)",
            SourceKind::Windows => "Windows counters",
            SourceKind::Demo => "DEMO (synthetic data)",
            SourceKind::Replay => "REPLAY of a recording",
            SourceKind::Prometheus => "Prometheus (remote)",
        }
    }
}

/// The health of the source as a whole; each problem names what to do, so the UI can show it as is.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "state", content = "detail", rename_all = "snake_case")]
pub enum SourceState {
    #[default]
    Ok,
    /// The NVIDIA library is missing or the driver is not running.
    NoDriver(String),
    /// The driver refused access.
    NoPermission(String),
    /// The NVML library and the kernel driver are of different versions (typically after an update).
    VersionMismatch(String),
    /// Every GPU fell off the bus or stopped answering.
    GpuLost(String),
    /// The driver answered but reports no GPU.
    NoGpu,
    /// A replay reached the end of its file.
    Ended,
    /// A remote source (a Prometheus server, an exporter) does not answer; the detail says
    /// which, why, and when the next try is.
    Unreachable(String),
    /// Anything else, with the library's own words.
    Error(String),
}

impl SourceState {
    pub fn is_ok(&self) -> bool {
        matches!(self, SourceState::Ok)
    }

    /// One line: what is wrong and what to do. Wording follows the mapping in `monitor.md` §2.3.
    pub fn message(&self) -> String {
        self.describe("use --demo to see how the monitor works")
    }

    /// As [`Self::message`], for the desktop app, whose monitor offers demo data by a button
    /// rather than the command line's `--demo`.
    pub fn message_in_app(&self) -> String {
        self.describe("“Show demo data” shows how the monitor works")
    }

    /// The message, with `demo` as the way to see the monitor without a GPU.
    fn describe(&self, demo: &str) -> String {
        match self {
            SourceState::Ok => "ok".into(),
            SourceState::NoDriver(d) => {
                format!("no NVIDIA driver found ({d}); install the NVIDIA driver; {demo}")
            }
            SourceState::NoPermission(d) => {
                format!(
                    "no permission to read the GPU ({d}); run as a user with access to /dev/nvidia*"
                )
            }
            SourceState::VersionMismatch(d) => format!(
                "the NVIDIA library and the running driver differ ({d}); reboot after a driver update"
            ),
            SourceState::GpuLost(d) => {
                format!(
                    "the GPU stopped answering ({d}); save your work and reboot; still retrying"
                )
            }
            SourceState::NoGpu => format!("the driver reports no GPU; {demo}"),
            SourceState::Ended => "end of the recording".into(),
            SourceState::Unreachable(d) => format!("not reachable: {d}"),
            SourceState::Error(d) => format!("GPU monitoring failed: {d}; still retrying"),
        }
    }
}

/// Whether one GPU answered this time.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuStatus {
    #[default]
    Ok,
    /// Fell off the bus (NVML `GPU_IS_LOST`); the sampler keeps asking and it comes back as `Ok`.
    Lost,
}

/// Dedicated memory in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MemorySample {
    pub total: u64,
    /// Allocated by processes. Excludes `reserved` unless `used_includes_reserved`.
    pub used: u64,
    /// Held by the driver and firmware (NVML v2 `reserved`); `None` where the source cannot tell.
    pub reserved: Option<u64>,
    /// True for NVML's v1 call (drivers before R510), whose `used` counts reserved memory too
    /// (rust-nvml/nvml-wrapper#57: 912 MB v1 vs 7.8 MB v2 on the same idle A100).
    #[serde(default)]
    pub used_includes_reserved: bool,
}

impl MemorySample {
    /// Memory no process can get any more: used plus reserved.
    pub fn unavailable(&self) -> u64 {
        if self.used_includes_reserved {
            self.used
        } else {
            self.used.saturating_add(self.reserved.unwrap_or(0))
        }
    }

    pub fn free(&self) -> u64 {
        self.total.saturating_sub(self.unavailable())
    }

    /// Fraction of the card that is taken, 0..=1 (0 for a zero-sized card).
    pub fn fill(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            (self.unavailable() as f64 / self.total as f64).min(1.0)
        }
    }
}

/// Memory a GPU borrows from system RAM: Windows "shared GPU memory", AMD GTT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SharedMemory {
    pub used: u64,
    pub total: Option<u64>,
}

/// Why the clocks are held down (NVML throttle reasons, by the names nvml-wrapper uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThrottleReason {
    Idle,
    ApplicationClocks,
    SwPowerCap,
    HwSlowdown,
    SyncBoost,
    SwThermal,
    HwThermal,
    HwPowerBrake,
    DisplayClocks,
}

impl ThrottleReason {
    pub fn is_thermal(self) -> bool {
        matches!(
            self,
            ThrottleReason::SwThermal | ThrottleReason::HwThermal | ThrottleReason::HwSlowdown
        )
    }
    pub fn is_power(self) -> bool {
        matches!(
            self,
            ThrottleReason::SwPowerCap | ThrottleReason::HwPowerBrake
        )
    }
}

/// How a process uses the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessKind {
    #[default]
    Compute,
    Graphics,
    Both,
}

/// One process holding GPU memory.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProcessSample {
    pub pid: u32,
    pub name: Option<String>,
    /// Dedicated memory in bytes; `None` = the driver does not say (always so under Windows WDDM,
    /// NVML docs for `nvmlProcessInfo_t::usedGpuMemory`), which is not the same as 0.
    pub used: Option<u64>,
    /// Shared (system) memory in bytes where the source knows it (Windows counters, AMD GTT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<u64>,
    pub kind: ProcessKind,
}

/// One GPU at one instant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GpuSample {
    /// Position in the source's own order (NVML order is not CUDA order).
    pub index: u32,
    /// Stable identity (NVML UUID, PCI slot, adapter LUID); histories are keyed by it.
    pub uuid: Option<String>,
    pub name: String,
    /// The machine the GPU is in, for sources that read several (a Prometheus server); `None`
    /// for this machine's own GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The source that read this GPU where it is not the snapshot's own: the GPUs of a second
    /// vendor in the same machine, merged by [`super::combined::Combined`]. `None` = the
    /// snapshot's source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceKind>,
    pub status: GpuStatus,
    pub memory: Option<MemorySample>,
    pub shared: Option<SharedMemory>,
    /// Percent of time a kernel ran (SM busy).
    pub util_gpu_pct: Option<u32>,
    /// Percent of time the memory controller was busy (not capacity).
    pub util_mem_pct: Option<u32>,
    pub temp_c: Option<u32>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub clock_graphics_mhz: Option<u32>,
    pub clock_mem_mhz: Option<u32>,
    /// PCIe traffic in KB/s (NVML counts over 20 ms; sampled less often than the rest).
    pub pcie_rx_kbps: Option<u32>,
    pub pcie_tx_kbps: Option<u32>,
    pub throttle: Option<Vec<ThrottleReason>>,
    /// `None` = the process list could not be read; `Some(empty)` = nothing is running.
    pub processes: Option<Vec<ProcessSample>>,
}

impl GpuSample {
    /// The processes other than the main one (`focus`, else the one holding the most), largest
    /// first, counting only those whose memory is known; `None` where the source cannot list
    /// processes. What the other-processes alert and the doctor's live evidence add up.
    pub fn other_processes(&self, focus: Option<u32>) -> Option<Vec<&ProcessSample>> {
        let procs = self.processes.as_ref()?;
        let main = self.main_process(focus);
        let mut rest: Vec<&ProcessSample> = procs
            .iter()
            .filter(|p| Some(p.pid) != main && p.used.is_some())
            .collect();
        rest.sort_by_key(|p| std::cmp::Reverse(p.used));
        Some(rest)
    }

    /// The main process: `focus` when given, else the one holding the most known memory.
    pub fn main_process(&self, focus: Option<u32>) -> Option<u32> {
        focus.or_else(|| {
            self.processes
                .iter()
                .flatten()
                .filter(|p| p.used.is_some())
                .max_by_key(|p| p.used)
                .map(|p| p.pid)
        })
    }

    /// Key for per-GPU history: the UUID, or the index (on its host) when there is none.
    pub fn key(&self) -> String {
        match (&self.uuid, &self.host) {
            (Some(u), _) => u.clone(),
            (None, Some(h)) => format!("{h}/index-{}", self.index),
            (None, None) => format!("index-{}", self.index),
        }
    }
}

/// Everything one source said at one instant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Snapshot {
    pub time_ms: u64,
    pub source: SourceKind,
    pub state: SourceState,
    pub gpus: Vec<GpuSample>,
    /// What the source could not read this time although its GPUs answered, one line each
    /// (Windows without its GPU performance counters: no shared or per-process memory), for
    /// the front ends to show beside the readings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A program's process found in a snapshot ([`Snapshot::find_process`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoundProcess {
    /// Index into [`Snapshot::gpus`].
    pub gpu: usize,
    pub pid: u32,
    /// Found by its name; `false`: no process is named so, this is the one holding the most.
    pub by_name: bool,
}

/// A name as letters and digits only, lower case, without `.exe`: `Cyberpunk2077.exe`,
/// `Cyberpunk 2077` and `cyberpunk-2077` all read `cyberpunk2077`.
fn name_key(name: &str) -> String {
    let lower = name.trim().to_lowercase();
    let stem = lower.strip_suffix(".exe").unwrap_or(&lower);
    stem.chars().filter(|c| c.is_alphanumeric()).collect()
}

/// Whether an image name and a program's name are the same program: equal keys, or one key
/// inside the other when the shorter has at least 5 characters (`DOOMEternalx64vk` for
/// "DOOM Eternal", `Spider-Man` for "Marvel's Spider-Man Remastered"), so that a short word
/// does not match every process.
fn same_program(image: &str, name: &str) -> bool {
    let (a, b) = (name_key(image), name_key(name));
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let (short, long) = if a.len() <= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    a == b || (short.chars().count() >= 5 && long.contains(short.as_str()))
}

impl Snapshot {
    /// The process of a program known by `names` (a game's title and aliases): the first
    /// process on any GPU whose image name matches one of them ([`same_program`]); when none
    /// does (or `names` is empty), the process holding the most memory on any GPU. `None`
    /// when no process's memory is known.
    pub fn find_process(&self, names: &[&str]) -> Option<FoundProcess> {
        let all = || {
            self.gpus.iter().enumerate().flat_map(|(i, g)| {
                g.processes
                    .iter()
                    .flatten()
                    .filter(|p| p.used.is_some())
                    .map(move |p| (i, p))
            })
        };
        let named = all().find(|(_, p)| {
            p.name
                .as_deref()
                .is_some_and(|image| names.iter().any(|n| same_program(image, n)))
        });
        let (gpu, p, by_name) = match named {
            Some((i, p)) => (i, p, true),
            None => {
                let (i, p) = all().max_by_key(|(_, p)| p.used)?;
                (i, p, false)
            }
        };
        Some(FoundProcess {
            gpu,
            pid: p.pid,
            by_name,
        })
    }

    /// Every source that read this snapshot, its own first: `[Nvml, Amd]` for a machine with
    /// GPUs of both vendors.
    pub fn sources(&self) -> Vec<SourceKind> {
        let mut out = vec![self.source];
        for k in self.gpus.iter().filter_map(|g| g.source) {
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out
    }

    /// The sources' labels joined: "NVIDIA (NVML) + AMD (sysfs)".
    pub fn source_label(&self) -> String {
        let labels: Vec<&str> = self.sources().into_iter().map(SourceKind::label).collect();
        labels.join(" + ")
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_app_points_at_its_demo_button_and_the_command_line_at_its_flag() {
        for state in [
            SourceState::NoGpu,
            SourceState::NoDriver("libnvidia-ml.so.1".into()),
        ] {
            assert!(state.message().contains("--demo"), "{state:?}");
            let app = state.message_in_app();
            assert!(
                !app.contains("--demo") && app.contains("Show demo data"),
                "{app}"
            );
        }
    }
    use super::*;

    #[test]
    fn a_program_is_found_by_its_name_else_as_the_largest_process() {
        let proc_ = |pid, name: &str, gib: u64| ProcessSample {
            pid,
            name: Some(name.into()),
            used: Some(gib << 30),
            ..Default::default()
        };
        let gpu = |procs| GpuSample {
            processes: Some(procs),
            ..Default::default()
        };
        let s = Snapshot {
            gpus: vec![
                gpu(vec![proc_(1, "dwm.exe", 1)]),
                gpu(vec![
                    proc_(7, "python.exe", 9),
                    proc_(9, "DOOMEternalx64vk.exe", 6),
                ]),
            ],
            ..Default::default()
        };
        let found = s.find_process(&["doom-eternal", "DOOM Eternal"]).unwrap();
        assert_eq!((found.gpu, found.pid, found.by_name), (1, 9, true));
        // No process named like the title: the largest one, said to be so.
        let found = s.find_process(&["Cyberpunk 2077"]).unwrap();
        assert_eq!((found.pid, found.by_name), (7, false));
        assert_eq!(s.find_process(&[]).map(|f| f.pid), Some(7));
        // A short word does not match a longer name; equal names do.
        assert!(!same_program("dwm.exe", "dwmx"));
        assert!(same_program("re4.exe", "RE4"));
        assert!(same_program(
            "Spider-Man.exe",
            "Marvel's Spider-Man Remastered"
        ));
        assert_eq!(Snapshot::default().find_process(&["x"]), None);
    }

    #[test]
    fn memory_v1_used_is_not_double_counted() {
        let v2 = MemorySample {
            total: 100,
            used: 60,
            reserved: Some(5),
            used_includes_reserved: false,
        };
        let v1 = MemorySample {
            total: 100,
            used: 65,
            reserved: None,
            used_includes_reserved: true,
        };
        assert_eq!(v2.unavailable(), 65);
        assert_eq!(v1.unavailable(), 65);
        assert_eq!(v2.free(), 35);
        assert!((v1.fill() - 0.65).abs() < 1e-12);
        assert_eq!(MemorySample::default().fill(), 0.0);
    }

    #[test]
    fn snapshot_round_trips_through_json_with_absent_metrics() {
        let s = Snapshot {
            time_ms: 5,
            source: SourceKind::Nvml,
            state: SourceState::NoPermission("x".into()),
            gpus: vec![GpuSample {
                name: "g".into(),
                processes: Some(vec![ProcessSample {
                    pid: 1,
                    used: None,
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            notes: Vec::new(),
        };
        let j = serde_json::to_string(&s).unwrap();
        assert!(j.contains("\"temp_c\":null"), "{j}");
        let back: Snapshot = serde_json::from_str(&j).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.gpus[0].processes.as_ref().unwrap()[0].used, None);
    }
}
