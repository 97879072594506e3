//! NVIDIA GPUs through NVML (nvml-wrapper 0.13). One `Nvml` is kept for the life of the source:
//! initialising NVML on every tick is what made `gpustat -i` burn 80 % of a core (wookayin/gpustat#54,
//! fixed by #166). It is dropped and re-opened only after the library failed as a whole.

use super::sample::{
    GpuSample, GpuStatus, MemorySample, ProcessKind, ProcessSample, Snapshot, SourceKind,
    SourceState, ThrottleReason, now_ms,
};
use super::source::Source;
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, PcieUtilCounter, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::{NvmlError, nvml_try};
use nvml_wrapper::struct_wrappers::device::ProcessInfo;
use nvml_wrapper::{Device, Nvml};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `nvmlDeviceGetPcieThroughput` counts bytes over a 20 ms window and blocks for it (NVIDIA
/// cuda-python docs for `device_get_pcie_throughput`), so it is read every 5th tick only, as
/// zml/zml#766 does with every 4th; in between the last value is repeated.
pub const PCIE_EVERY: u64 = 5;

/// Longest wait between two attempts to re-open NVML after it failed as a whole.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// Per-device facts that do not change while NVML stays open.
#[derive(Default)]
struct DeviceCache {
    name: Option<String>,
    uuid: Option<String>,
    pcie: (Option<u32>, Option<u32>),
}

pub struct NvmlSource {
    lib_path: Option<PathBuf>,
    nvml: Option<Nvml>,
    state: SourceState,
    retry_after: Instant,
    retry_wait: Duration,
    min_retry: Duration,
    tick: u64,
    /// The driver lacks `nvmlDeviceGetMemoryInfo_v2` (before R510): use v1 from now on.
    memory_v1: bool,
    devices: Vec<DeviceCache>,
    names: HashMap<u32, String>,
    lost: Vec<GpuSample>,
}

impl NvmlSource {
    /// `lib_path`: the NVML library to load; `None` = the system's (`libnvidia-ml.so.1`, `nvml.dll`).
    pub fn new(lib_path: Option<PathBuf>) -> Self {
        NvmlSource {
            lib_path,
            nvml: None,
            state: SourceState::Ok,
            retry_after: Instant::now(),
            retry_wait: Duration::from_secs(1),
            min_retry: Duration::from_secs(1),
            tick: 0,
            memory_v1: false,
            devices: Vec::new(),
            names: HashMap::new(),
            lost: Vec::new(),
        }
    }

    /// Sets the first wait before re-opening NVML after a failure (doubling up to 30 s).
    pub fn with_retry(mut self, first: Duration) -> Self {
        self.min_retry = first;
        self.retry_wait = first;
        self
    }

    fn open(&mut self) -> Result<(), SourceState> {
        let res = match &self.lib_path {
            Some(p) => Nvml::builder().lib_path(p.as_os_str()).init(),
            None => Nvml::init(),
        };
        let nvml = res.map_err(|e| classify(&e))?;
        self.nvml = Some(nvml);
        // The device cache (names, UUIDs by index) is kept: after a GPU was lost and NVML was
        // re-opened, the lost GPU is still shown under its name.
        self.memory_v1 = false;
        Ok(())
    }

    /// Drops NVML after a failure of the whole library and schedules the next attempt.
    fn fail(&mut self, state: SourceState) -> Snapshot {
        self.nvml = None;
        self.retry_after = Instant::now() + self.retry_wait;
        self.retry_wait = (self.retry_wait * 2).min(MAX_RETRY).max(self.min_retry);
        self.state = state.clone();
        Snapshot {
            time_ms: now_ms(),
            source: SourceKind::Nvml,
            gpus: self.shown_while_down(&state),
            state,
            notes: Vec::new(),
        }
    }

    /// While NVML is down because every GPU was lost, the lost GPUs stay in the snapshots
    /// (marked lost), so the UI and the detectors see *which* GPU is gone.
    fn shown_while_down(&self, state: &SourceState) -> Vec<GpuSample> {
        if matches!(state, SourceState::GpuLost(_)) {
            self.lost.clone()
        } else {
            Vec::new()
        }
    }

    fn sample_open(&mut self) -> Result<Vec<GpuSample>, SourceState> {
        let Some(nvml) = self.nvml.as_ref() else {
            return Err(SourceState::NoDriver("not opened".into()));
        };
        let count = nvml.device_count().map_err(|e| classify(&e))?;
        self.devices
            .resize_with(count as usize, DeviceCache::default);
        let mut pass = Pass {
            nvml,
            memory_v1: &mut self.memory_v1,
            read_pcie: self.tick.is_multiple_of(PCIE_EVERY),
            names: &mut self.names,
            seen: Vec::new(),
        };
        let mut gpus = Vec::with_capacity(count as usize);
        for i in 0..count {
            let cache = &mut self.devices[i as usize];
            let g = match nvml.device_by_index(i) {
                Ok(dev) => pass.read_device(&dev, i, cache),
                Err(e) => lost_or_empty(i, cache, &e),
            };
            gpus.push(g);
        }
        let seen = pass.seen;
        self.names.retain(|pid, _| seen.contains(pid));
        if !gpus.is_empty() && gpus.iter().all(|g| g.status == GpuStatus::Lost) {
            self.lost = gpus;
            return Err(SourceState::GpuLost("every GPU stopped answering".into()));
        }
        Ok(gpus)
    }
}

impl Source for NvmlSource {
    fn kind(&self) -> SourceKind {
        SourceKind::Nvml
    }

    fn sample(&mut self) -> Snapshot {
        if self.nvml.is_none() {
            if Instant::now() < self.retry_after {
                return Snapshot {
                    time_ms: now_ms(),
                    source: SourceKind::Nvml,
                    state: self.state.clone(),
                    gpus: self.shown_while_down(&self.state),
                    notes: Vec::new(),
                };
            }
            if let Err(state) = self.open() {
                return self.fail(state);
            }
        }
        let result = self.sample_open();
        self.tick += 1;
        match result {
            Ok(gpus) => {
                self.state = if gpus.is_empty() {
                    SourceState::NoGpu
                } else {
                    SourceState::Ok
                };
                self.retry_wait = self.min_retry;
                self.lost.clear();
                Snapshot {
                    time_ms: now_ms(),
                    source: SourceKind::Nvml,
                    state: self.state.clone(),
                    gpus,
                    notes: Vec::new(),
                }
            }
            Err(state) => self.fail(state),
        }
    }
}

/// Checks a library the user named (`--nvml-lib`) before sampling from it: it must be a regular
/// file (a FIFO would block the loader) that the loader accepts. `Err` names the path and the
/// loader's own words, since the fault is the flag, not a missing driver. A library that loads
/// but whose init fails (no permission, no driver) is left to the source, which reports it as a
/// state like the system library's.
pub fn check_lib(path: &std::path::Path) -> Result<(), String> {
    crate::input_file::regular(path)?;
    match Nvml::builder().lib_path(path.as_os_str()).init() {
        Err(NvmlError::LibloadingError(e)) => Err(format!(
            "{}: cannot load it as the NVML library: {e}",
            path.display()
        )),
        Err(NvmlError::LibraryNotFound) => Err(format!(
            "{}: the library was not found by the loader",
            path.display()
        )),
        _ => Ok(()),
    }
}

/// Maps a library-wide NVML error to a state the UI can show (`monitor.md` §2.3).
pub fn classify(e: &NvmlError) -> SourceState {
    match e {
        NvmlError::LibloadingError(_) | NvmlError::LibraryNotFound => {
            SourceState::NoDriver("the NVIDIA management library (NVML) is not installed".into())
        }
        NvmlError::DriverNotLoaded => {
            SourceState::NoDriver("the driver is installed but not running".into())
        }
        NvmlError::NoPermission => {
            SourceState::NoPermission("NVML: insufficient permissions".into())
        }
        NvmlError::LibRmVersionMismatch => {
            SourceState::VersionMismatch("NVML/driver version mismatch".into())
        }
        NvmlError::GpuLost => SourceState::GpuLost("NVML: GPU is lost".into()),
        other => SourceState::Error(other.to_string()),
    }
}

/// Turns a per-metric result into an optional value. Unsupported or missing functions make the
/// metric absent; a lost GPU is remembered so the whole GPU is marked lost.
fn opt<T>(r: Result<T, NvmlError>, lost: &mut bool) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(NvmlError::GpuLost) => {
            *lost = true;
            None
        }
        Err(_) => None,
    }
}

fn lost_or_empty(index: u32, cache: &DeviceCache, e: &NvmlError) -> GpuSample {
    GpuSample {
        index,
        uuid: cache.uuid.clone(),
        name: cache.name.clone().unwrap_or_else(|| format!("GPU {index}")),
        status: if matches!(e, NvmlError::GpuLost) {
            GpuStatus::Lost
        } else {
            GpuStatus::Ok
        },
        ..Default::default()
    }
}

/// One sampling pass over the devices: what the per-device reads share.
struct Pass<'a> {
    nvml: &'a Nvml,
    memory_v1: &'a mut bool,
    read_pcie: bool,
    /// Process names by pid, kept across passes (NVML's name call is a syscall per pid).
    names: &'a mut HashMap<u32, String>,
    /// Pids seen in this pass; names of the others are forgotten afterwards.
    seen: Vec<u32>,
}

impl Pass<'_> {
    fn read_device(&mut self, dev: &Device, index: u32, cache: &mut DeviceCache) -> GpuSample {
        let mut lost = false;
        let memory = opt(memory(self.nvml, dev, self.memory_v1), &mut lost);
        // The processes right after the memory they add up to: NVML answers each call on its
        // own, so a process that allocates between the two reads makes the card's figure
        // smaller than its processes' (seen under load with the rest of the calls in between).
        let processes = self.processes(dev, &mut lost);
        if cache.name.is_none() {
            cache.name = opt(dev.name(), &mut lost);
        }
        if cache.uuid.is_none() {
            cache.uuid = opt(dev.uuid(), &mut lost);
        }
        let util = opt(dev.utilization_rates(), &mut lost);
        if self.read_pcie {
            cache.pcie = (
                opt(dev.pcie_throughput(PcieUtilCounter::Receive), &mut lost),
                opt(dev.pcie_throughput(PcieUtilCounter::Send), &mut lost),
            );
        }
        let g = GpuSample {
            index,
            uuid: cache.uuid.clone(),
            name: cache.name.clone().unwrap_or_else(|| format!("GPU {index}")),
            host: None,
            source: None,
            status: GpuStatus::Ok,
            memory,
            shared: None,
            util_gpu_pct: util.as_ref().map(|u| u.gpu),
            util_mem_pct: util.as_ref().map(|u| u.memory),
            temp_c: opt(dev.temperature(TemperatureSensor::Gpu), &mut lost),
            power_w: opt(dev.power_usage(), &mut lost).map(|mw| f64::from(mw) / 1000.0),
            power_limit_w: opt(dev.enforced_power_limit(), &mut lost)
                .map(|mw| f64::from(mw) / 1000.0),
            clock_graphics_mhz: opt(dev.clock_info(Clock::Graphics), &mut lost),
            clock_mem_mhz: opt(dev.clock_info(Clock::Memory), &mut lost),
            pcie_rx_kbps: cache.pcie.0,
            pcie_tx_kbps: cache.pcie.1,
            throttle: opt(dev.current_throttle_reasons(), &mut lost).map(throttle_reasons),
            processes,
        };
        if lost {
            return GpuSample {
                status: GpuStatus::Lost,
                ..lost_or_empty(index, cache, &NvmlError::GpuLost)
            };
        }
        g
    }

    /// Compute and graphics processes merged by pid. `None` when neither list could be read.
    fn processes(&mut self, dev: &Device, lost: &mut bool) -> Option<Vec<ProcessSample>> {
        let compute = opt(dev.running_compute_processes(), lost);
        let graphics = opt(dev.running_graphics_processes(), lost);
        if compute.is_none() && graphics.is_none() {
            return None;
        }
        let mut out: Vec<ProcessSample> = Vec::new();
        for (list, kind) in [
            (compute, ProcessKind::Compute),
            (graphics, ProcessKind::Graphics),
        ] {
            for p in list.unwrap_or_default() {
                merge_process(&mut out, &p, kind);
            }
        }
        for p in &mut out {
            self.seen.push(p.pid);
            let name = self
                .names
                .entry(p.pid)
                .or_insert_with(|| process_name(self.nvml, p.pid));
            p.name = (!name.is_empty()).then(|| name.clone());
        }
        Some(out)
    }
}

/// Layout of NVML's v1 `nvmlMemory_t` (nvml-wrapper-sys 0.10 bindings: three `c_ulonglong`).
#[repr(C)]
#[derive(Default)]
struct MemoryV1 {
    total: u64,
    free: u64,
    used: u64,
}

/// Memory with the v2 call, or the v1 call on drivers that lack v2 (before R510). nvml-wrapper has
/// no v1 fallback since 0.11 (`monitor.md` §2.2), so v1 goes through the raw symbol table.
fn memory(nvml: &Nvml, dev: &Device, memory_v1: &mut bool) -> Result<MemorySample, NvmlError> {
    if !*memory_v1 {
        match dev.memory_info() {
            Ok(m) => {
                return Ok(MemorySample {
                    total: m.total,
                    used: m.used,
                    reserved: Some(m.reserved),
                    used_includes_reserved: false,
                });
            }
            // A missing symbol, or a driver that answers the v2 struct version with
            // FUNCTION_NOT_FOUND (dxvk-nvapi#198, NVIDIA/nvidia-settings#78).
            Err(NvmlError::FailedToLoadSymbol(_) | NvmlError::FunctionNotFound) => {
                *memory_v1 = true
            }
            Err(e) => return Err(e),
        }
    }
    let f = nvml
        .lib()
        .nvmlDeviceGetMemoryInfo
        .as_ref()
        .map_err(|e| NvmlError::FailedToLoadSymbol(e.to_string()))?;
    let mut m = MemoryV1::default();
    // SAFETY: `f` is NVML's `nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t*)`; `MemoryV1` has
    // the same #[repr(C)] layout as `nvmlMemory_t`, and the handle comes from a live `Device`.
    let rc = unsafe { f(dev.handle(), (&raw mut m).cast()) };
    nvml_try(rc)?;
    Ok(MemorySample {
        total: m.total,
        used: m.used,
        reserved: None,
        used_includes_reserved: true,
    })
}

fn throttle_reasons(bits: ThrottleReasons) -> Vec<ThrottleReason> {
    const MAP: [(ThrottleReasons, ThrottleReason); 9] = [
        (ThrottleReasons::GPU_IDLE, ThrottleReason::Idle),
        (
            ThrottleReasons::APPLICATIONS_CLOCKS_SETTING,
            ThrottleReason::ApplicationClocks,
        ),
        (ThrottleReasons::SW_POWER_CAP, ThrottleReason::SwPowerCap),
        (ThrottleReasons::HW_SLOWDOWN, ThrottleReason::HwSlowdown),
        (ThrottleReasons::SYNC_BOOST, ThrottleReason::SyncBoost),
        (
            ThrottleReasons::SW_THERMAL_SLOWDOWN,
            ThrottleReason::SwThermal,
        ),
        (
            ThrottleReasons::HW_THERMAL_SLOWDOWN,
            ThrottleReason::HwThermal,
        ),
        (
            ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN,
            ThrottleReason::HwPowerBrake,
        ),
        (
            ThrottleReasons::DISPLAY_CLOCK_SETTING,
            ThrottleReason::DisplayClocks,
        ),
    ];
    MAP.iter()
        .filter(|(b, _)| bits.contains(*b))
        .map(|(_, r)| *r)
        .collect()
}

fn merge_process(out: &mut Vec<ProcessSample>, p: &ProcessInfo, kind: ProcessKind) {
    let used = match p.used_gpu_memory {
        UsedGpuMemory::Used(b) => Some(b),
        UsedGpuMemory::Unavailable => None,
    };
    if let Some(existing) = out.iter_mut().find(|e| e.pid == p.pid) {
        // The same context shows in both lists with the same figure (nvidia-smi prints it once
        // as type "C+G"), so take the larger, not the sum.
        existing.kind = ProcessKind::Both;
        existing.used = existing.used.max(used);
        return;
    }
    out.push(ProcessSample {
        pid: p.pid,
        name: None,
        used,
        shared: None,
        kind,
    });
}

/// NVML's name for a pid, else `/proc/<pid>/comm` (NVML can fail on non-UTF-8 names,
/// `monitor.md` §2.2); empty when neither knows.
fn process_name(nvml: &Nvml, pid: u32) -> String {
    if let Ok(n) = nvml.sys_process_name(pid, 64) {
        return n;
    }
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}
