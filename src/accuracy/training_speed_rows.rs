//! The training speed reference: published training throughput (tokens per second) against
//! `speed::llm`'s training estimate, in two files of one schema:
//! `tests/data/speed-training.jsonl`, the rows `speed::llm::TRAINING_EFFICIENCY` was fitted on,
//! and `tests/data/speed-training-held-out.jsonl`, rows it was not fitted on (other cards, another
//! model and recipe table), which `vram-doctor accuracy` reports apart.
//!
//! One JSON object a line:
//!
//! | field | meaning |
//! | --- | --- |
//! | `id`, `source`, `where`, `date` | row id, the page (a permalink), where on it, `YYYY-MM` |
//! | `tool` | what trained: `torchtune`, `llm-foundry` (MosaicML's Composer trainer) … |
//! | `gpu`, `gpu_count` | a preset of `presets/gpus.toml`, and how many ran together (FSDP) |
//! | `model` | a preset of `presets/models.toml` |
//! | `method`, `precision`, `checkpointing` | `run.method`, `run.precision`, `run.checkpointing` |
//! | `batch`, `seq`, `grad_accum` | micro-batch per GPU, tokens per sequence, micro-batches per step |
//! | `optimizer`, `lora_rank`, `lora_targets`, `zero_stage`, `offload`, `loss` | the run fields of the same names (optional) |
//! | `tokens_per_s` | the measured figure: tokens trained per second over all GPUs |
//!
//! Rows count every token of a packed sequence (torchtune's `tokens_per_second_per_gpu` counts
//! `batch["tokens"].numel()`, recipes/full_finetune_single_device.py; llm-foundry's
//! `Throughput (T/s)` is samples per second × sequence length).
//!
//! Left out: torchtune's two `1x A6000` rows of the same table (2579 and 4699 tokens/s for the
//! 8B full and LoRA fine-tune). Under this FLOP count they need 104% and 143% of the RTX A6000's
//! data-sheet 154.8 dense TFLOPS, and still 78% and 97% without activation checkpointing; their
//! peak memory (37.4 and 30.3 GiB against the 4090 rows' 18.9 and 16.2) says they ran other
//! settings than the recipe's, which the page does not give.

use super::speed_rows::{SpeedReport, run_reference_file, run_rows, tokens_result};
use crate::file_error::FileError;
use crate::memory::WorkloadFile;
use crate::speed::llm;
use crate::types::options::{
    Checkpointing, LoraTargets, Loss, Method, Offload, Optimizer, Precision, Task,
};
use serde::Deserialize;
use std::path::Path;

/// One row of the training speed reference (the schema of the module doc).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingSpeedRow {
    pub id: String,
    pub source: String,
    pub r#where: String,
    pub date: String,
    pub tool: String,
    pub gpu: String,
    #[serde(default = "one")]
    pub gpu_count: u32,
    pub model: String,
    pub method: Method,
    pub precision: Precision,
    pub checkpointing: Checkpointing,
    pub batch: u32,
    pub seq: u32,
    #[serde(default = "one")]
    pub grad_accum: u32,
    #[serde(default)]
    pub optimizer: Option<Optimizer>,
    #[serde(default)]
    pub lora_rank: Option<u32>,
    #[serde(default)]
    pub lora_targets: Option<LoraTargets>,
    #[serde(default)]
    pub zero_stage: Option<u32>,
    #[serde(default)]
    pub offload: Option<Offload>,
    #[serde(default)]
    pub loss: Option<Loss>,
    pub tokens_per_s: f64,
}

fn one() -> u32 {
    1
}

impl TrainingSpeedRow {
    /// The group the row's error is reported in: the method, on one GPU or several.
    pub fn kind(&self) -> String {
        format!(
            "training {}, {}",
            self.method,
            if self.gpu_count > 1 {
                "several GPUs"
            } else {
                "one GPU"
            }
        )
    }

    /// The workload the row ran.
    pub fn workload(&self) -> WorkloadFile {
        let mut f = WorkloadFile::default();
        f.gpu.preset = Some(self.gpu.clone());
        f.gpu.count = Some(self.gpu_count);
        f.model.preset = Some(self.model.clone());
        let r = &mut f.run;
        r.task = Some(Task::Training);
        r.method = Some(self.method);
        r.precision = Some(self.precision);
        r.checkpointing = Some(self.checkpointing);
        r.batch = Some(i64::from(self.batch));
        r.seq = Some(i64::from(self.seq));
        r.grad_accum = Some(i64::from(self.grad_accum));
        r.optimizer = self.optimizer;
        r.lora_rank = self.lora_rank.map(i64::from);
        r.lora_targets.clone_from(&self.lora_targets);
        r.zero_stage = self.zero_stage.map(i64::from);
        r.offload = self.offload;
        r.loss = self.loss;
        f
    }

    /// The engine's tokens per second and its basis, or why there is none.
    fn estimate(&self) -> Result<(f64, String), String> {
        let w = self.workload().resolve(Path::new("."), None)?;
        let s = llm::speed(&w);
        s.training_tokens_per_s
            .map(|t| (t, s.basis.clone()))
            .ok_or(s.basis)
    }
}

/// Runs the training speed reference over JSON Lines text.
pub fn run(jsonl: &str) -> SpeedReport {
    run_rows(jsonl, "training speed row", |row: TrainingSpeedRow| {
        tokens_result(row.id.clone(), row.kind(), row.tokens_per_s, row.estimate())
    })
}

/// Runs the training speed reference over a file (at most 16 MiB).
pub fn run_file(path: &Path) -> Result<SpeedReport, FileError> {
    run_reference_file(path, "a training speed reference file", run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(extra: &str) -> String {
        format!(
            r#"{{"id":"t","source":"s","where":"w","date":"2025-01","tool":"torchtune","gpu":"rtx-4090","model":"llama-3.1-8b","precision":"bf16","batch":2,"seq":2048,{extra}}}"#
        )
    }

    #[test]
    fn rows_estimate_tokens_per_second_by_method() {
        let full = run(&row(
            r#""method":"full","checkpointing":"none","tokens_per_s":1000"#,
        ));
        assert_eq!(full.rows.len(), 1, "{:?}", full.skipped);
        assert_eq!(full.rows[0].kind, "training full, one GPU");
        // Recomputing the forward pass costs time; adapters skip the weight gradients.
        let ckpt = run(&row(
            r#""method":"full","checkpointing":"full","tokens_per_s":1000"#,
        ));
        let lora = run(&row(
            r#""method":"lora","checkpointing":"none","tokens_per_s":1000"#,
        ));
        let (f, c, l) = (
            full.rows[0].estimated_per_s,
            ckpt.rows[0].estimated_per_s,
            lora.rows[0].estimated_per_s,
        );
        assert!(c < 0.85 * f && l > 1.3 * f, "full {f} ckpt {c} lora {l}");
        // Eight GPUs train about eight times the tokens (a little more: ZeRO gives each GPU
        // an eighth of the optimizer step).
        let eight = run(&row(
            r#""method":"full","checkpointing":"none","gpu_count":8,"zero_stage":3,"tokens_per_s":1000"#,
        ));
        assert_eq!(eight.rows[0].kind, "training full, several GPUs");
        let ratio = eight.rows[0].estimated_per_s / f;
        assert!(ratio > 7.0 && ratio < 9.0, "{ratio}");
    }

    #[test]
    fn bad_rows_are_skipped_with_a_reason() {
        let r = run(&format!(
            "{}\n{}\n{}\nnot json",
            row(r#""method":"full","checkpointing":"none","tokens_per_s":-1"#),
            row(r#""method":"full","checkpointing":"none","tokens_per_s":1,"extra":1"#),
            row(r#""method":"dpo","checkpointing":"none","tokens_per_s":1"#),
        ));
        assert!(r.rows.is_empty());
        assert_eq!(r.skipped.len(), 4, "{:?}", r.skipped);
        assert!(r.skipped[0].1.contains("positive"), "{:?}", r.skipped);
        assert!(r.skipped[1].1.contains("extra"), "{:?}", r.skipped[1]);
        assert!(r.skipped[2].1.contains("run.method"), "{:?}", r.skipped[2]);
    }
}
