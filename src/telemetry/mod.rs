//! Live GPU telemetry: sources behind one trait, a sampler thread that sends snapshots over a
//! channel, bounded history, recording and replay, and detectors that turn history into alerts.
//! Domain layer: no egui here; the GUI and `vram-doctor monitor` sit on top.
//!
//! ```no_run
//! use std::time::Duration;
//! use vram_doctor::telemetry::{Sampler, detect_or_demo};
//! let (sampler, rx) = Sampler::start(detect_or_demo(1), Duration::from_secs(1));
//! let first = rx.recv().unwrap();
//! println!("{} GPU(s), {}", first.gpus.len(), first.source.label());
//! sampler.stop();
//! ```

pub mod amd;
pub mod demo;
pub mod detect;
pub mod format;
pub mod history;
pub mod nvml;
pub mod record;
pub mod replay;
pub mod sample;
pub mod sampler;
pub mod source;

pub use sample::{
    GpuSample, GpuStatus, MemorySample, ProcessKind, ProcessSample, SharedMemory, Snapshot,
    SourceKind, SourceState, ThrottleReason,
};
pub use sampler::Sampler;
pub use source::{Source, detect, detect_or_demo};
