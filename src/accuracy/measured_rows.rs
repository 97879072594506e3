//! Rows measured by the calibration harness (`tests/calibration/`, issue 9). Each names the
//! workload file it ran (`extras.workload_file`, relative to the repository root) and the planner
//! figure it is compared with (`extras.compare_with`), so nothing is guessed from `mode` text.

use super::{Case, Figure};
use crate::memory::WorkloadFile;
use serde_json::Value;
use std::path::Path;

/// Whether a row comes from the calibration harness.
pub(super) fn is_harness_row(row: &Value) -> bool {
    row["extras"]["workload_file"].is_string()
}

/// The row's workload file, with the paths inside it made relative to `root` (the repository
/// root, which the harness's `workload_file` is relative to).
pub(super) fn case(row: &Value, root: &Path) -> Result<Case, String> {
    let extras = &row["extras"];
    if extras["dry_run"] == Value::Bool(true) {
        return Err("a dry-run row of the calibration harness is not a measurement".into());
    }
    // The three metrics of tests/calibration/record.py (GPU_METRICS).
    let figure = match extras["compare_with"].as_str() {
        Some("peak.tensors_bytes") => Figure::Tensors,
        Some("peak.reserved_bytes") => Figure::Reserved,
        Some("peak.process_bytes") => Figure::Process,
        other => {
            return Err(format!(
                "extras.compare_with {other:?} is not a planner figure"
            ));
        }
    };
    let path = root.join(extras["workload_file"].as_str().unwrap_or_default());
    let mut workload = WorkloadFile::load(&path)?;
    let dir = path.parent().unwrap_or(root);
    for p in [&mut workload.model.hf_config, &mut workload.model.file]
        .into_iter()
        .flatten()
    {
        *p = dir.join(&*p);
    }
    Ok(Case { workload, figure })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(file: &str, compare: &str, dry: bool) -> Value {
        json!({"extras": {"workload_file": file, "compare_with": compare, "dry_run": dry}})
    }

    #[test]
    fn harness_rows_name_their_file_and_figure() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let grid = "tests/calibration/grid/inf-llama1b-bf16-sdpa-s4096.toml";
        let c = case(&row(grid, "peak.reserved_bytes", false), root).unwrap();
        assert_eq!(c.figure, Figure::Reserved);
        let cfg = c
            .workload
            .model
            .hf_config
            .expect("grid file gives hf_config");
        assert!(cfg.is_file(), "{} made relative to the root", cfg.display());
        assert_eq!(
            case(&row(grid, "peak.process_bytes", false), root)
                .unwrap()
                .figure,
            Figure::Process
        );
        let e = case(&row(grid, "peak.tensors_bytes", true), root).unwrap_err();
        assert!(e.contains("dry-run"), "{e}");
        let e = case(&row(grid, "none", false), root).unwrap_err();
        assert!(e.contains("compare_with"), "{e}");
        // Every task of the grid estimates, including diffusion presets and config.json files.
        for file in [
            grid,
            "tests/calibration/grid/diff-sdxl-fp16-1024.toml",
            "tests/calibration/grid/train-llama8b-qlora-r16-all-ckpt-b1-s2048.toml",
        ] {
            let c = case(&row(file, "peak.tensors_bytes", false), root).unwrap();
            let bytes = super::super::estimate_case(&c).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert!(bytes > 1 << 30, "{file}: {bytes} bytes");
        }
        let e = case(
            &row(
                "tests/calibration/grid/missing.toml",
                "peak.tensors_bytes",
                false,
            ),
            root,
        )
        .unwrap_err();
        assert!(e.contains("missing.toml"), "{e}");
    }
}
