//! The accuracy benchmark: for every reference row the engine can express, estimate the same
//! figure the row measured and report relative errors per workload kind.
//!
//! Rows come from `tests/data/groundtruth-public.jsonl` (a copy of the shared reference data) or
//! any file in the same schema. Mapping a row to a workload lives in `llm_rows.rs`; each row
//! either becomes a [`Case`] or is skipped with a reason.

mod diffusion_rows;
pub mod diffusion_speed_rows;
mod llm_rows;
mod measured_rows;
mod report;
pub mod speed_rows;
pub mod training_speed_rows;

pub use report::{KindStats, Report, RowResult};

use crate::file_error::FileError;
use crate::memory::{self, Breakdown, ComponentId, WorkloadFile};
use serde_json::Value;
use std::path::Path;

/// Which estimated figure a measurement corresponds to ("compare like with like", DESIGN.md).
#[derive(Debug, Clone, PartialEq)]
pub enum Figure {
    /// `torch.cuda.max_memory_allocated`, or the sum of llama.cpp buffers.
    Tensors,
    /// `torch.cuda.max_memory_reserved`.
    Reserved,
    /// nvidia-smi's per-process figure.
    Process,
    /// The sum of some components (a llama.cpp buffer line, a vLLM log line).
    Components(Vec<ComponentId>),
}

impl Figure {
    pub fn of(&self, b: &Breakdown) -> u64 {
        match self {
            Figure::Tensors => b.peak.tensors_bytes,
            Figure::Reserved => b.peak.reserved_bytes,
            Figure::Process => b.peak.process_bytes,
            Figure::Components(ids) => ids.iter().map(|id| b.get(*id)).sum(),
        }
    }

    pub fn name(&self) -> String {
        match self {
            Figure::Tensors => "tensors".into(),
            Figure::Reserved => "reserved".into(),
            Figure::Process => "process".into(),
            Figure::Components(ids) => {
                let names: Vec<&str> = ids.iter().map(|id| id.as_str()).collect();
                names.join("+")
            }
        }
    }
}

/// One reference row expressed as a workload.
#[derive(Debug, Clone)]
pub struct Case {
    pub workload: WorkloadFile,
    pub figure: Figure,
}

/// Estimates a case's figure in bytes (model files through the importer).
pub fn estimate_case(c: &Case) -> Result<u64, String> {
    let w =
        crate::resolve::resolve_any(&c.workload, Path::new("."), Some(crate::import::load_model))?;
    Ok(c.figure.of(&memory::any::estimate_any(&w)))
}

/// Maps a row to a case, or says why it cannot be expressed.
pub fn case_for_row(row: &Value) -> Result<Case, String> {
    if measured_rows::is_harness_row(row) {
        // `workload_file` is relative to the repository root, where the benchmark runs.
        return measured_rows::case(row, Path::new("."));
    }
    let kind = row["workload"].as_str().unwrap_or("");
    if kind.starts_with("llm_") || kind == "runtime_overhead" {
        llm_rows::case(row)
    } else if kind.starts_with("diffusion_") {
        diffusion_rows::case(row)
    } else {
        Err(format!(
            "workload kind '{kind}' is not modelled by this engine yet"
        ))
    }
}

/// Runs the benchmark over JSON Lines text.
pub fn run(jsonl: &str) -> Report {
    let mut report = Report::default();
    for (i, line) in jsonl.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                report.skip(format!("line {}", i + 1), "?", format!("not JSON: {e}"));
                continue;
            }
        };
        let id = row["id"].as_str().unwrap_or("?").to_string();
        let kind = row["workload"].as_str().unwrap_or("?").to_string();
        let Some(measured) = row["measured_gib"].as_f64() else {
            report.skip(id, &kind, "no measured figure (an OOM marker)".into());
            continue;
        };
        match case_for_row(&row).and_then(|c| estimate_case(&c).map(|e| (c, e))) {
            Ok((case, est)) => report.add(RowResult {
                id,
                kind,
                figure: case.figure.name(),
                measured_gib: measured,
                estimated_gib: crate::units::gib(est),
            }),
            Err(why) => report.skip(id, &kind, why),
        }
    }
    report
}

/// Largest reference file read: the public table is 80 KB; 64 MiB holds a hundred thousand rows.
const MAX_REFERENCE_BYTES: u64 = 64 << 20;

/// Runs the benchmark over a file (a regular file of at most `MAX_REFERENCE_BYTES`). A row
/// that cannot be planned is a skip with its reason, not an error.
pub fn run_file(path: &Path) -> Result<Report, FileError> {
    let text = crate::input_file::read_text_capped(path, MAX_REFERENCE_BYTES, "a reference file")?;
    Ok(run(&text))
}
