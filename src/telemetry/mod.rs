//! Live GPU telemetry: sources behind one trait, a sampler thread that sends snapshots over a
//! channel, bounded history, recording and replay, and detectors that turn history into alerts.
//! Domain layer: no egui here; the GUI and `vram-doctor monitor` sit on top.
//!
//! How a front end uses it (the GUI does the same on its update loop with `try_recv`): a
//! [`Session`] holds the history, runs the detectors and keeps the alerts.
//!
//! ```no_run
//! use std::time::Duration;
//! use vram_doctor::telemetry::{Sampler, Session, SessionConfig, detect_or_demo};
//! use vram_doctor::telemetry::record::Recorder;
//! let (sampler, rx) = Sampler::start(detect_or_demo(1), Duration::from_secs(1));
//! let mut session = Session::new(SessionConfig::default());
//! let mut recorder = Recorder::open("run.jsonl".as_ref(), 128 << 20).ok();
//! for snap in rx.iter().take(10) {
//!     if let Some(r) = recorder.as_mut() {
//!         r.write(&snap).expect("the recording is written");
//!     }
//!     println!("{} GPU(s) from {}; {}", snap.gpus.len(), snap.source_label(), snap.state.message());
//!     for alert in session.push(snap) {
//!         println!("{}: {}", alert.gpu_name, alert.message);
//!     }
//! }
//! sampler.stop();
//! ```
//!
//! A new kind of GPU source implements [`Source`] in a module of its own and is one step in
//! [`source::detect_all`]; everything above it (sessions, recording, the exporter) is unchanged.

pub mod amd;
pub mod combined;
pub mod demo;
pub mod detect;
pub mod format;
pub mod history;
pub mod nvml;
pub mod pdh;
pub mod pdh_csv;
pub mod prometheus;
pub mod record;
pub mod replay;
pub mod sample;
pub mod sampler;
pub mod session;
pub mod source;
#[cfg(windows)]
pub mod windows;

pub use sample::{
    FoundProcess, GpuSample, GpuStatus, MemorySample, ProcessKind, ProcessSample, SharedMemory,
    Snapshot, SourceKind, SourceState, ThrottleReason,
};
pub use sampler::Sampler;
pub use session::{Session, SessionConfig};
pub use source::{Probe, Source, detect, detect_all, detect_or_demo};
