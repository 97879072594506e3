//! Memory estimation: `Workload` in, `Breakdown` out. One module per kind of memory; the
//! per-task estimators (`inference`, `training`) assemble them.

pub mod activations;
pub mod any;
pub mod breakdown;
pub mod diffusion;
pub mod game;
pub mod inference;
pub mod kv_cache;
pub mod lora;
pub mod optimizer;
pub mod overhead;
pub mod training;
pub mod weights;

pub use crate::types::arch::ModelArch;
pub use crate::types::dtype::{KvDtype, WeightFormat};
pub use crate::types::options::*;
pub use crate::types::workload::{GpuTarget, Run, Workload, WorkloadFile};
pub use breakdown::{Breakdown, Component, ComponentId, Device, DeviceMemory, Layer, Peak};

/// Estimates the per-GPU peak memory of an LLM workload.
pub fn estimate(w: &Workload) -> Breakdown {
    let mut b = match w.run.task {
        Task::Training => training::estimate(w),
        _ => inference::estimate(w),
    };
    b.warnings.extend(w.model_notes.iter().cloned());
    b.add(
        ComponentId::OtherProcesses,
        "Other programs on the GPU",
        w.run.other_processes_bytes as f64,
        Layer::External,
    );
    b
}
