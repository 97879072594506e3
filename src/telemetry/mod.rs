//! Live GPU telemetry: sources behind one trait, a sampler thread that sends snapshots over a
//! channel, bounded history, recording and replay, and detectors that turn history into alerts.
//! Domain layer: no egui here; the GUI and `vram-doctor monitor` sit on top.
//!
//! How a front end uses it (the GUI does the same on its update loop with `try_recv`):
//!
//! ```no_run
//! use std::time::Duration;
//! use vram_doctor::telemetry::{Sampler, detect_or_demo};
//! use vram_doctor::telemetry::{detect::Detectors, history::History, record::Recorder};
//! let (sampler, rx) = Sampler::start(detect_or_demo(1), Duration::from_secs(1));
//! let mut history = History::default();
//! let mut detectors = Detectors::default();
//! let mut recorder = Recorder::open("run.jsonl".as_ref(), 128 << 20).ok();
//! for snap in rx.iter().take(10) {
//!     history.push(&snap);
//!     for alert in detectors.check(&history, &snap) {
//!         println!("{}: {}", alert.gpu_name, alert.message);
//!     }
//!     if let Some(r) = recorder.as_mut() {
//!         let _ = r.write(&snap);
//!     }
//!     println!("{} GPU(s) from {}; {}", snap.gpus.len(), snap.source.label(), snap.state.message());
//! }
//! sampler.stop();
//! ```

pub mod amd;
pub mod demo;
pub mod detect;
pub mod format;
pub mod history;
pub mod nvml;
pub mod pdh;
pub mod prometheus;
pub mod record;
pub mod replay;
pub mod sample;
pub mod sampler;
pub mod source;
#[cfg(windows)]
pub mod windows;

pub use sample::{
    GpuSample, GpuStatus, MemorySample, ProcessKind, ProcessSample, SharedMemory, Snapshot,
    SourceKind, SourceState, ThrottleReason,
};
pub use sampler::Sampler;
pub use source::{Source, detect, detect_or_demo};
