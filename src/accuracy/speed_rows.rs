//! The speed reference: published llama.cpp tokens-per-second measurements against
//! `speed::llm`, in two files of the same schema: `tests/data/speed-llama-cpp.jsonl`, the rows
//! the speed constants were fitted on (in-sample), and `tests/data/speed-held-out.jsonl`, rows
//! no constant was fitted on (other hosts and cards), which `vram-doctor accuracy` reports apart.
//!
//! One JSON object a line:
//!
//! | field | meaning |
//! | --- | --- |
//! | `id` | row id (`sp01` …) |
//! | `source`, `where` | the page the figure is published on, and where on it (comment, table, column, hardware line) |
//! | `date` | `YYYY-MM` of the measurement |
//! | `tool` | `llama-bench` (its `t/s` column) or `llama-server` (generation speed of a served request) |
//! | `gpu`, `model`, `weights` | presets of `presets/gpus.toml` and `presets/models.toml`, a GGUF file type |
//! | `host_ram_gbps` | the host's RAM bandwidth (theoretical peak) when the row has layers or experts on the CPU |
//! | `test` | `ppN`: prompt processing of N tokens (llama-bench `-p N`); `tgN`: generating N tokens (`-n N`); `@dD`: after D tokens already in the cache (`-d D`) |
//! | `ubatch` | `-ub` (default 512); `ppN` at ubatch 1 runs one token per step, a decode |
//! | `gpu_layers`, `cpu_moe_layers` | `-ngl` and `--n-cpu-moe`; absent: every layer on the GPU, no experts on the CPU |
//! | `tokens_per_s` | the measured figure |
//!
//! Rows are of builds from June 2024 on: llama.cpp's CUDA matrix kernels were rewritten then
//! (PR 7676, int8 tensor cores for quantized prompt processing, 1.3-2× faster; PR 7716, the
//! decode kernels), and the estimate is of the current program.

use super::report::KindStats;
use crate::file_error::FileError;
use crate::memory::WorkloadFile;
use crate::speed::llm;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// One row of the speed reference (the schema of the module doc).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeedRow {
    pub id: String,
    pub source: String,
    pub r#where: String,
    pub date: String,
    pub tool: String,
    pub gpu: String,
    pub model: String,
    pub weights: String,
    pub test: String,
    #[serde(default)]
    pub host_ram_gbps: Option<f64>,
    #[serde(default)]
    pub ubatch: Option<u32>,
    #[serde(default)]
    pub gpu_layers: Option<u32>,
    #[serde(default)]
    pub cpu_moe_layers: Option<u32>,
    pub tokens_per_s: f64,
}

/// What a test measures: prefill or decode of `tokens` after `depth` tokens in the cache.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Test {
    decode: bool,
    tokens: u32,
    depth: u32,
}

/// `pp512`, `tg128`, `pp512@d32768` (llama-bench's test names); `ubatch` 1 makes `ppN` a decode.
fn parse_test(test: &str, ubatch: Option<u32>) -> Result<Test, String> {
    let bad = || format!("test '{test}' is not ppN, tgN or either with @dD");
    let (head, depth) = match test.split_once("@d") {
        Some((h, d)) => (h, d.parse::<u32>().map_err(|_| bad())?),
        None => (test, 0),
    };
    let n = |p: &str| head.strip_prefix(p).and_then(|n| n.parse::<u32>().ok());
    let (decode, tokens) = match (n("pp"), n("tg")) {
        (Some(p), _) => (ubatch == Some(1), p),
        (_, Some(g)) => (true, g),
        _ => return Err(bad()),
    };
    if tokens == 0 {
        return Err(bad());
    }
    Ok(Test {
        decode,
        tokens,
        depth,
    })
}

impl SpeedRow {
    /// The group the row's error is reported in: phase and where the weights sit.
    pub fn kind(&self) -> String {
        let phase = match parse_test(&self.test, self.ubatch) {
            Ok(t) if t.decode => "decode",
            Ok(_) => "prefill",
            Err(_) => "?",
        };
        let split = if self.cpu_moe_layers.unwrap_or(0) > 0 {
            "experts on CPU"
        } else if self.gpu_layers.is_some() {
            "layers split"
        } else {
            "full GPU"
        };
        format!("{phase}, {split}")
    }

    /// The workload the row ran: decode at the average context of the generated tokens, prefill
    /// of a prompt that starts the context.
    pub fn workload(&self) -> Result<WorkloadFile, String> {
        let mut f = WorkloadFile::default();
        f.gpu.preset = Some(self.gpu.clone());
        f.gpu.host_ram_gbps = self.host_ram_gbps;
        f.model.preset = Some(self.model.clone());
        let r = &mut f.run;
        r.engine = Some(crate::types::options::Engine::LlamaCpp);
        r.weights = Some(self.weights.clone());
        r.batch = Some(1);
        r.ubatch = self.ubatch.map(i64::from);
        let t = parse_test(&self.test, self.ubatch)?;
        if t.decode {
            r.seq = Some(i64::from(t.depth + (t.tokens / 2).max(1)));
        } else if t.depth == 0 {
            r.seq = Some(i64::from(t.tokens));
        } else {
            return Err(format!(
                "test '{}': prefill after a filled cache is not modelled (a plan's prompt starts \
                 its context)",
                self.test
            ));
        }
        r.gpu_layers = self.gpu_layers.map(i64::from);
        r.cpu_moe_layers = self.cpu_moe_layers.map(i64::from);
        Ok(f)
    }

    /// The engine's figure for the row's test, or why there is none.
    pub fn estimate(&self) -> Result<(f64, String), String> {
        let decode = parse_test(&self.test, self.ubatch)?.decode;
        let w = self.workload()?.resolve(Path::new("."), None)?;
        let s = llm::speed(&w);
        let figure = if decode {
            s.decode_tokens_per_s
        } else {
            s.prefill_tokens_per_s
        };
        figure.map(|f| (f, s.basis.clone())).ok_or(s.basis)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SpeedResult {
    pub id: String,
    pub kind: String,
    /// What the figures count per second: `tokens/s` (LLM rows) or `steps/s` (diffusion rows).
    pub unit: &'static str,
    pub measured_per_s: f64,
    pub estimated_per_s: f64,
    /// What the estimate assumed (`speed::Speed::basis`).
    pub basis: String,
}

impl SpeedResult {
    pub fn rel_error(&self) -> f64 {
        ((self.estimated_per_s - self.measured_per_s) / self.measured_per_s).abs()
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SpeedReport {
    pub rows: Vec<SpeedResult>,
    /// (id, why) of rows without an estimate.
    pub skipped: Vec<(String, String)>,
}

impl SpeedReport {
    /// Median and p90 relative error per kind, and over all rows (`"ALL speed"`).
    pub fn by_kind(&self) -> BTreeMap<String, KindStats> {
        let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for r in &self.rows {
            let e = r.rel_error();
            groups.entry(r.kind.clone()).or_default().push(e);
            groups.entry("ALL speed".into()).or_default().push(e);
        }
        groups
            .into_iter()
            .filter_map(|(k, v)| KindStats::of(v).map(|s| (k, s)))
            .collect()
    }

    pub fn render(&self, verbose: bool) -> String {
        let mut s = String::new();
        if verbose {
            let _ = writeln!(
                s,
                "{:<6} {:<28} {:>10} {:>10} {:>7}",
                "ROW", "KIND", "MEASURED", "ESTIMATE", "ERROR"
            );
            for r in &self.rows {
                let _ = writeln!(
                    s,
                    "{:<6} {:<28} {:>8.1}/s {:>8.1}/s {:>6.1}%",
                    r.id,
                    r.kind,
                    r.measured_per_s,
                    r.estimated_per_s,
                    100.0 * (r.estimated_per_s - r.measured_per_s) / r.measured_per_s
                );
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(
            s,
            "{:<28} {:>5} {:>9} {:>9} {:>9}",
            format!(
                "SPEED ({})",
                self.rows.first().map_or("tokens/s", |r| r.unit)
            ),
            "ROWS",
            "MEDIAN",
            "P90",
            "MAX"
        );
        for (k, st) in self.by_kind() {
            let max = self
                .rows
                .iter()
                .filter(|r| k == "ALL speed" || r.kind == k)
                .map(SpeedResult::rel_error)
                .fold(0.0, f64::max);
            let _ = writeln!(
                s,
                "{:<28} {:>5} {:>8.1}% {:>8.1}% {:>8.1}%",
                k,
                st.rows,
                100.0 * st.median,
                100.0 * st.p90,
                100.0 * max
            );
        }
        let _ = writeln!(s, "\nskipped {} speed rows:", self.skipped.len());
        for (id, why) in &self.skipped {
            let _ = writeln!(s, "  {id:<6} {why}");
        }
        s
    }
}

/// Runs the speed reference over JSON Lines text.
pub fn run(jsonl: &str) -> SpeedReport {
    run_rows(jsonl, "speed row", |row: SpeedRow| {
        tokens_result(row.id.clone(), row.kind(), row.tokens_per_s, row.estimate())
    })
}

/// A tokens/s row's result (the inference and the training references): the measured figure
/// must be a positive number, then the estimate or why there is none.
pub(super) fn tokens_result(
    id: String,
    kind: String,
    tokens_per_s: f64,
    estimate: Result<(f64, String), String>,
) -> Result<SpeedResult, (String, String)> {
    if !(tokens_per_s.is_finite() && tokens_per_s > 0.0) {
        return Err((id, "tokens_per_s is not a positive number".into()));
    }
    match estimate {
        Ok((e, basis)) => Ok(SpeedResult {
            kind,
            id,
            unit: "tokens/s",
            measured_per_s: tokens_per_s,
            estimated_per_s: e,
            basis,
        }),
        Err(why) => Err((id, why)),
    }
}

/// One reference file's loop, shared by the LLM and the diffusion speed references: each
/// non-blank line is read as a row `R` ("not a WHAT" when it is not one) and scored by `score`,
/// which gives the result or the row's id with why it was skipped.
pub(super) fn run_rows<R: serde::de::DeserializeOwned>(
    jsonl: &str,
    what: &str,
    score: impl Fn(R) -> Result<SpeedResult, (String, String)>,
) -> SpeedReport {
    let mut report = SpeedReport::default();
    for (i, line) in jsonl.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(row) => match score(row) {
                Ok(r) => report.rows.push(r),
                Err(skip) => report.skipped.push(skip),
            },
            Err(e) => report
                .skipped
                .push((format!("line {}", i + 1), format!("not a {what}: {e}"))),
        }
    }
    report
}

/// Runs the speed reference over a file (at most 16 MiB).
pub fn run_file(path: &Path) -> Result<SpeedReport, FileError> {
    run_reference_file(path, "a speed reference file", run)
}

/// Reads a speed reference file (at most 16 MiB, what every speed reference allows) and runs
/// `run` over its text: shared by the inference, diffusion and training references.
pub(super) fn run_reference_file(
    path: &Path,
    what: &str,
    run: fn(&str) -> SpeedReport,
) -> Result<SpeedReport, FileError> {
    let text = crate::input_file::read_text_capped(path, 16 << 20, what)?;
    Ok(run(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(extra: &str) -> String {
        format!(
            r#"{{"id":"t","source":"s","where":"w","date":"2025-01","tool":"llama-bench","gpu":"rtx-4090","model":"llama-3.1-8b","weights":"q4_k_m",{extra}}}"#
        )
    }

    #[test]
    fn rows_map_to_their_test_and_split() {
        let r = run(&row(r#""test":"tg128","tokens_per_s":100"#));
        assert_eq!(r.rows.len(), 1, "{:?}", r.skipped);
        assert_eq!(r.rows[0].kind, "decode, full GPU");
        let r = run(&row(
            r#""test":"pp512","gpu_layers":20,"host_ram_gbps":51.2,"tokens_per_s":100"#,
        ));
        assert_eq!(r.rows[0].kind, "prefill, layers split");
        // A split is slower than the full offload on the same card.
        let full = run(&row(r#""test":"tg128","tokens_per_s":1"#)).rows[0].estimated_per_s;
        let split = run(&row(
            r#""test":"tg128","gpu_layers":20,"host_ram_gbps":51.2,"tokens_per_s":1"#,
        ))
        .rows[0]
            .estimated_per_s;
        assert!(split < 0.6 * full, "{split} vs {full}");
    }

    #[test]
    fn bad_rows_are_skipped_with_a_reason() {
        let r = run(&format!(
            "{}\n{}\nnot json\n{}",
            row(r#""test":"xx","tokens_per_s":1"#),
            row(r#""test":"tg128","tokens_per_s":-1"#),
            row(r#""test":"tg128","tokens_per_s":1,"extra":1"#),
        ));
        assert!(r.rows.is_empty());
        assert_eq!(r.skipped.len(), 4);
        assert!(r.skipped[0].1.contains("ppN"), "{:?}", r.skipped);
        assert!(r.skipped[1].1.contains("positive"));
        assert!(r.skipped[3].1.contains("extra"), "{:?}", r.skipped[3]);
    }

    #[test]
    fn tests_read_like_llama_bench() {
        let t = |s: &str, ub| parse_test(s, ub);
        assert_eq!(
            t("pp512@d32768", Some(1)).unwrap(),
            Test {
                decode: true,
                tokens: 512,
                depth: 32768
            }
        );
        assert!(!t("pp512", None).unwrap().decode);
        assert!(t("tg128", None).unwrap().decode);
        for bad in ["pp", "tg0", "pp512@d", "pp512@dx", "x128"] {
            assert!(t(bad, None).is_err(), "{bad}");
        }
        // A deep cache slows decode: the KV cache is read once per token.
        let at = |test: &str| {
            run(&row(&format!(
                r#""test":"{test}","ubatch":1,"tokens_per_s":1"#
            )))
            .rows[0]
                .estimated_per_s
        };
        assert!(at("pp512@d32768") < 0.8 * at("pp512"));
    }
}
