//! The one interface every GPU data source implements, and the choice of source at start-up.

use super::sample::{Snapshot, SourceKind, SourceState};

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

/// The first live source that finds a GPU on this machine: on Windows the performance counters
/// (which include NVML and add shared memory), then NVML, then AMD sysfs on Linux. When none finds
/// one, the error is NVML's state, which says why (no driver, no permission, ...).
/// `VRAM_DOCTOR_NVML_LIB` names another NVML library to load (tests, unusual installs).
pub fn detect() -> Result<Box<dyn Source>, SourceState> {
    #[cfg(windows)]
    {
        if let Some(win) = super::windows::WindowsSource::open() {
            return Ok(Box::new(win));
        }
    }
    let lib = std::env::var_os(NVML_LIB_ENV).map(std::path::PathBuf::from);
    let mut nvml = super::nvml::NvmlSource::new(lib);
    let first = nvml.sample();
    if first.state.is_ok() && !first.gpus.is_empty() {
        return Ok(Box::new(nvml));
    }
    #[cfg(target_os = "linux")]
    {
        let amd = super::amd::AmdSource::system();
        if amd.gpu_count() > 0 {
            return Ok(Box::new(amd));
        }
    }
    Err(if first.state.is_ok() {
        SourceState::NoGpu
    } else {
        first.state
    })
}

/// Like [`detect`], but falls back to the demo source (labelled as a demo in every snapshot) when
/// no GPU is found, so a first start on a machine without a GPU still shows something.
pub fn detect_or_demo(seed: u64) -> Box<dyn Source> {
    detect().unwrap_or_else(|_| Box::new(super::demo::DemoSource::new(seed)))
}
