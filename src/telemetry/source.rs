//! The one interface every GPU data source implements, and the choice of source at start-up.

use super::combined::Combined;
use super::sample::{Snapshot, SourceKind, SourceState};
use std::path::PathBuf;

/// A GPU data source. `sample` is called from the sampler's own thread at the sampling interval;
/// it never panics and never blocks for long: problems (no driver, GPU lost) are reported in the
/// snapshot's `state`, and the source retries on its own in later calls.
pub trait Source: Send {
    fn kind(&self) -> SourceKind;

    /// Takes one sample now.
    fn sample(&mut self) -> Snapshot;

    /// Readings from before the start that the source can supply at once (a Prometheus
    /// server's stored history), oldest first; the sampler sends them before the first sample.
    /// `interval` is the sampling interval, the finest step worth asking for.
    fn backfill(&mut self, _interval: std::time::Duration) -> Vec<Snapshot> {
        Vec::new()
    }

    /// True when there will be no more data (the end of a replay); the sampler then stops.
    fn finished(&self) -> bool {
        false
    }
}

/// Environment variable naming the NVML library [`detect`] loads instead of the system's.
pub const NVML_LIB_ENV: &str = "VRAM_DOCTOR_NVML_LIB";

/// Environment variable naming the directory [`detect`] reads AMD cards from instead of
/// `/sys/class/drm` (tests, containers that mount sysfs elsewhere).
pub const DRM_ROOT_ENV: &str = "VRAM_DOCTOR_DRM_ROOT";

/// Where [`detect_all`] looks for GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The NVML library to load; `None` = the system's.
    pub nvml_lib: Option<PathBuf>,
    /// A `/sys/class/drm` look-alike, for AMD cards (Linux).
    pub drm_root: PathBuf,
    /// A `/proc` look-alike, for the processes on AMD cards.
    pub proc_root: PathBuf,
}

impl Probe {
    /// This machine, with the overrides of [`NVML_LIB_ENV`] and [`DRM_ROOT_ENV`].
    pub fn system() -> Probe {
        Probe {
            nvml_lib: std::env::var_os(NVML_LIB_ENV).map(PathBuf::from),
            drm_root: std::env::var_os(DRM_ROOT_ENV)
                .map_or_else(|| PathBuf::from("/sys/class/drm"), PathBuf::from),
            proc_root: PathBuf::from("/proc"),
        }
    }
}

/// Every live source that finds a GPU, in this order: on Windows the performance counters
/// (which read every adapter, NVML's included, and add shared memory); elsewhere NVML, then
/// AMD sysfs on Linux, both when the machine has GPUs of both vendors. A new vendor's source
/// is one more step here. When none finds a GPU, the error is NVML's state, which says why (no
/// driver, no permission, ...).
pub fn detect_all(probe: &Probe) -> Result<Vec<Box<dyn Source>>, SourceState> {
    #[cfg(windows)]
    let counters_missing = match super::windows::open(probe.nvml_lib.clone()) {
        Ok(win) => return Ok(vec![Box::new(win)]),
        Err(why) => why,
    };
    let mut found: Vec<Box<dyn Source>> = Vec::new();
    let mut nvml = super::nvml::NvmlSource::new(probe.nvml_lib.clone());
    let first = nvml.sample();
    if first.state.is_ok() && !first.gpus.is_empty() {
        // Windows without its GPU counters: NVML's readings, each noting why the shared and
        // per-process memory are missing.
        #[cfg(windows)]
        found.push(Box::new(super::pdh::without_counters(
            nvml,
            counters_missing,
        )));
        #[cfg(not(windows))]
        found.push(Box::new(nvml));
    }
    #[cfg(target_os = "linux")]
    {
        let amd = super::amd::AmdSource::new(&probe.drm_root, &probe.proc_root);
        if amd.gpu_count() > 0 {
            found.push(Box::new(amd));
        }
    }
    if found.is_empty() {
        return Err(if first.state.is_ok() {
            SourceState::NoGpu
        } else {
            first.state
        });
    }
    Ok(found)
}

/// Every GPU of this machine as one source ([`detect_all`] over [`Probe::system`], merged by
/// [`Combined`]).
pub fn detect() -> Result<Box<dyn Source>, SourceState> {
    detect_all(&Probe::system()).map(Combined::of)
}

/// Like [`detect`], but falls back to the demo source (labelled as a demo in every snapshot) when
/// no GPU is found, so a first start on a machine without a GPU still shows something.
pub fn detect_or_demo(seed: u64) -> Box<dyn Source> {
    detect().unwrap_or_else(|_| Box::new(super::demo::DemoSource::new(seed)))
}
