//! The diffusion speed reference: published seconds-per-step (or it/s) figures against
//! `speed::diffusion`, in two files of one schema: `tests/data/speed-diffusion.jsonl`, the rows
//! `speed::diffusion::DENOISE_EFFICIENCY` was fitted on, and
//! `tests/data/speed-diffusion-held-out.jsonl`, rows it was not fitted on.
//!
//! One JSON object a line:
//!
//! | field | meaning |
//! | --- | --- |
//! | `id`, `source`, `where`, `date` | row id, the page, where on it, `YYYY-MM` |
//! | `tool` | what ran the steps: `comfyui`, `diffusers`, `bfl-flux` (Black Forest Labs' reference code) |
//! | `gpu`, `model`, `weights` | presets of `presets/gpus.toml` and `presets/diffusion.toml`, the denoiser's weight format |
//! | `width`, `height`, `batch`, `cfg` | the run; `cfg`: classifier-free guidance (cond and uncond in one batch) |
//! | `text_encoders_on_cpu` | the text encoders were kept off the GPU (optional) |
//! | `seconds_per_step` or `steps_per_s` | the measured figure (tqdm's `s/it` or `it/s`) |
//!
//! Rows are of PyTorch 2 builds (scaled-dot-product attention, 2023 on): earlier builds ran the
//! RTX 40 cards well below their rate (Tom's Hardware's Stable Diffusion benchmarks, January
//! 2023: "RTX 40-series results are a bit lower than expected"), and the estimate is of the
//! current programs.

use super::speed_rows::{SpeedReport, SpeedResult, run_reference_file, run_rows};
use crate::file_error::FileError;
use crate::memory::WorkloadFile;
use crate::memory::any::AnyWorkload;
use crate::speed::diffusion;
use serde::Deserialize;
use std::path::Path;

/// One row of the diffusion speed reference (the schema of the module doc).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiffusionSpeedRow {
    pub id: String,
    pub source: String,
    pub r#where: String,
    pub date: String,
    pub tool: String,
    pub gpu: String,
    pub model: String,
    pub weights: String,
    pub width: u32,
    pub height: u32,
    pub batch: u32,
    pub cfg: bool,
    #[serde(default)]
    pub text_encoders_on_cpu: bool,
    #[serde(default)]
    pub seconds_per_step: Option<f64>,
    #[serde(default)]
    pub steps_per_s: Option<f64>,
}

impl DiffusionSpeedRow {
    /// The measured steps per second.
    fn measured(&self) -> Result<f64, String> {
        let v = match (self.steps_per_s, self.seconds_per_step) {
            (Some(r), None) => r,
            (None, Some(s)) if s > 0.0 => 1.0 / s,
            _ => return Err("give one of steps_per_s and seconds_per_step".into()),
        };
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err("the measured figure is not a positive number".into())
        }
    }

    /// The workload the row ran.
    pub fn workload(&self) -> Result<WorkloadFile, String> {
        let engine = match self.tool.as_str() {
            "comfyui" => crate::types::options::Engine::ComfyUi,
            "diffusers" | "bfl-flux" => crate::types::options::Engine::Diffusers,
            t => return Err(format!("tool '{t}' is not comfyui, diffusers or bfl-flux")),
        };
        let mut f = WorkloadFile::default();
        f.gpu.preset = Some(self.gpu.clone());
        f.model.preset = Some(self.model.clone());
        let r = &mut f.run;
        r.task = Some(crate::types::options::Task::Diffusion);
        r.engine = Some(engine);
        r.weights = Some(self.weights.clone());
        r.width = Some(i64::from(self.width));
        r.height = Some(i64::from(self.height));
        r.batch = Some(i64::from(self.batch));
        r.cfg = Some(self.cfg);
        r.text_encoder_on_cpu = Some(self.text_encoders_on_cpu);
        Ok(f)
    }

    /// The engine's steps per second and its basis, the kind, or why there is none.
    fn estimate(&self) -> Result<(f64, String, &'static str), String> {
        let w = crate::resolve::resolve_any(&self.workload()?, Path::new("."), None)?;
        let AnyWorkload::Diffusion(d) = w else {
            return Err(format!("{} is not a diffusion model preset", self.model));
        };
        let s = diffusion::speed(&d);
        let kind = match diffusion::timing(&d) {
            Ok(t) if t.stream_s > 0.0 => "diffusion, streaming",
            _ => "diffusion, all on GPU",
        };
        let step = s.seconds_per_step.ok_or(s.basis.clone())?;
        Ok((1.0 / step, s.basis, kind))
    }
}

/// Runs the diffusion speed reference over JSON Lines text.
pub fn run(jsonl: &str) -> SpeedReport {
    run_rows(
        jsonl,
        "diffusion speed row",
        |row: DiffusionSpeedRow| match row.measured().and_then(|m| row.estimate().map(|e| (m, e))) {
            Ok((measured, (estimated, basis, kind))) => Ok(SpeedResult {
                id: row.id,
                kind: kind.into(),
                unit: "steps/s",
                measured_per_s: measured,
                estimated_per_s: estimated,
                basis,
            }),
            Err(why) => Err((row.id, why)),
        },
    )
}

/// Runs the diffusion speed reference over a file (at most 16 MiB).
pub fn run_file(path: &Path) -> Result<SpeedReport, FileError> {
    run_reference_file(path, "a diffusion speed reference file", run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(extra: &str) -> String {
        format!(
            r#"{{"id":"t","source":"s","where":"w","date":"2025-01","tool":"comfyui","gpu":"rtx-4090","model":"sdxl","weights":"fp16","width":1024,"height":1024,"cfg":true,{extra}}}"#
        )
    }

    #[test]
    fn rows_estimate_steps_per_second() {
        let r = run(&row(r#""batch":1,"steps_per_s":8"#));
        assert_eq!(r.rows.len(), 1, "{:?}", r.skipped);
        assert_eq!(r.rows[0].kind, "diffusion, all on GPU");
        // A batch of 4 takes about 4 times as long per step.
        let four = run(&row(r#""batch":4,"seconds_per_step":1"#));
        let ratio = r.rows[0].estimated_per_s / four.rows[0].estimated_per_s;
        assert!((ratio - 4.0).abs() < 0.01, "{ratio}");
    }

    #[test]
    fn bad_rows_are_skipped_with_a_reason() {
        let r = run(&format!(
            "{}\n{}\n{}\nnot json",
            row(r#""batch":1"#),
            row(r#""batch":1,"steps_per_s":-1"#),
            row(r#""batch":1,"steps_per_s":1,"extra":1"#),
        ));
        assert!(r.rows.is_empty());
        assert_eq!(r.skipped.len(), 4, "{:?}", r.skipped);
        assert!(r.skipped[0].1.contains("one of"), "{:?}", r.skipped);
        assert!(r.skipped[1].1.contains("positive"));
        assert!(r.skipped[2].1.contains("extra"), "{:?}", r.skipped[2]);
    }
}
