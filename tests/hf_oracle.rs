//! The transformers oracle (issue 15): `inspect`'s reading of a config.json against transformers
//! itself. `tools/hf_oracle.py` built every decoder and encoder model type transformers ships
//! (its default config) and every real config in `tests/data/configs/` on the meta device and
//! recorded the exact parameter count, the active count of MoE models and the KV cache of its
//! own cache layout; the rows are committed in `tests/data/oracle/`.
//!
//! Each row is either covered (parameters within 0.5 %, active parameters within 0.5 %, KV bytes
//! per token exact, the sliding-window layout the same at a long context, and the fixed state
//! of linear-attention and state-space blocks exact) or refused (the
//! importer answers with an error naming what it does not model, which `inspect` turns into exit
//! status 2). A row that is read without error but disagrees is "silently different" and fails.
//!
//! `cargo test --test hf_oracle -- --nocapture` prints the covered, refused and failing lists.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use vram_doctor::import::{self, ImportedModel};
use vram_doctor::memory::kv_cache::kv_cache_bytes;
use vram_doctor::memory::{Engine, KvDtype};

const PARAMS_TOLERANCE: f64 = 0.005;
/// The long context the sliding-window layout is compared at.
const LONG: u32 = 32768;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rows(file: &str) -> Vec<Value> {
    let path = root().join("tests/data/oracle").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{file}: {e}: {l}")))
        .collect()
}

#[derive(Debug)]
enum Outcome {
    Covered,
    Refused(String),
    Failing(String),
    /// transformers itself could not build it; nothing to compare.
    NotMeasured(String),
}

fn label(row: &Value) -> String {
    match row.get("file").and_then(Value::as_str) {
        Some(f) => format!(
            "{} ({})",
            Path::new(f).file_name().unwrap().to_string_lossy(),
            row["model_type"].as_str().unwrap_or("?")
        ),
        None => row["model_type"].as_str().unwrap_or("?").to_string(),
    }
}

fn import_row(row: &Value) -> Result<ImportedModel, import::ImportError> {
    match row.get("file").and_then(Value::as_str) {
        Some(f) => import::import_model(&root().join(f)),
        None => {
            let text = serde_json::to_string(&row["config"]).unwrap();
            import::from_bytes::hf_config(text.as_bytes())
        }
    }
}

fn near(got: f64, want: f64) -> bool {
    (got - want).abs() <= PARAMS_TOLERANCE * want.max(1.0)
}

/// KV bytes at `LONG` tokens from the oracle's per-layer cache (a windowed layer keeps at most its
/// window).
fn oracle_kv_long(layers: &[Value]) -> f64 {
    layers
        .iter()
        .map(|l| {
            let kv = l.get("kv").and_then(Value::as_f64).unwrap_or(0.0);
            let tokens = l
                .get("window")
                .and_then(Value::as_f64)
                .map_or(f64::from(LONG), |w| w.min(f64::from(LONG)));
            2.0 * kv * tokens
        })
        .sum()
}

fn judge(row: &Value) -> Outcome {
    if let Some(e) = row.get("error").and_then(Value::as_str) {
        return Outcome::NotMeasured(e.to_string());
    }
    let kind = row["kind"].as_str().unwrap_or_default();
    let got = import_row(row);
    if kind == "encoder-decoder" {
        return match got {
            Err(e) => Outcome::Refused(e.to_string()),
            Ok(_) => Outcome::Failing("an encoder-decoder model was read as a decoder".into()),
        };
    }
    let m = match got {
        Err(e) => return Outcome::Refused(e.to_string()),
        Ok(m) => m,
    };
    let mut wrong = Vec::new();
    let want = row["params"].as_f64().unwrap();
    let params = m.arch.params;
    if !near(params, want) {
        wrong.push(format!(
            "params {params:.0} vs {want:.0} ({:+.2} %)",
            100.0 * (params / want - 1.0)
        ));
    }
    if let Some(active) = row.get("active_params").and_then(Value::as_f64) {
        let got = m.arch.active_params();
        if !near(got, active) {
            wrong.push(format!(
                "active params {got:.0} vs {active:.0} ({:+.2} %)",
                100.0 * (got / active - 1.0)
            ));
        }
    }
    match row.get("kv_bytes_per_token_fp16").and_then(Value::as_f64) {
        Some(kv) => {
            let got = kv_cache_bytes(&m.arch, 1, 1, KvDtype::Fp16, Engine::Transformers, 1);
            if got != kv {
                wrong.push(format!("KV bytes per token {got} vs {kv}"));
            }
            let layers = row["cache_layers"].as_array().cloned().unwrap_or_default();
            // The fixed state of linear-attention / state-space blocks, elements per sequence.
            let want_state: f64 = layers
                .iter()
                .filter_map(|l| l.get("state").and_then(Value::as_f64))
                .sum();
            let got_state = m.arch.cache.as_ref().map_or(0.0, |c| c.state_elements);
            if got_state != want_state {
                wrong.push(format!(
                    "state elements per sequence {got_state} vs {want_state}"
                ));
            }
            let want_long = oracle_kv_long(&layers);
            let got_long = kv_cache_bytes(&m.arch, 1, LONG, KvDtype::Fp16, Engine::Transformers, 1);
            if kind != "encoder" && got_long != want_long {
                wrong.push(format!(
                    "KV bytes at {LONG} tokens {got_long} vs {want_long} (window layout)"
                ));
            }
        }
        // The parameters are still compared when transformers could not fill a cache.
        None if wrong.is_empty() => {
            let e = row["cache_error"].as_str().unwrap_or("no cache");
            return Outcome::NotMeasured(format!("params only; the cache failed: {e}"));
        }
        None => {}
    }
    if wrong.is_empty() {
        Outcome::Covered
    } else {
        Outcome::Failing(wrong.join("; "))
    }
}

#[test]
fn inspect_agrees_with_transformers_or_refuses() {
    let mut by: BTreeMap<&str, Vec<(String, String)>> = BTreeMap::new();
    for file in ["transformers-defaults.jsonl", "transformers-configs.jsonl"] {
        for row in rows(file) {
            let name = label(&row);
            let (k, why) = match judge(&row) {
                Outcome::Covered => ("covered", String::new()),
                Outcome::Refused(e) => ("refused", e),
                Outcome::Failing(e) => ("failing", e),
                Outcome::NotMeasured(e) => ("not measured", e),
            };
            by.entry(k).or_default().push((name, why));
        }
    }
    for (k, list) in &by {
        println!("== {k}: {}", list.len());
        for (name, why) in list {
            if why.is_empty() {
                println!("  {name}");
            } else {
                println!("  {name}: {why}");
            }
        }
    }
    let counts: Vec<String> = ["covered", "refused", "failing", "not measured"]
        .iter()
        .map(|k| format!("{k} {}", by.get(k).map_or(0, Vec::len)))
        .collect();
    println!("transformers oracle: {}", counts.join(", "));
    assert!(
        by.get("covered").map_or(0, Vec::len) > 0,
        "no model type is covered"
    );
    let failing = by.get("failing").cloned().unwrap_or_default();
    assert!(
        failing.is_empty(),
        "silently different from transformers: {failing:#?}"
    );
}

/// No refusal is a parse failure: every default config transformers writes is valid input.
#[test]
fn refusals_name_the_feature() {
    for row in rows("transformers-defaults.jsonl") {
        if row.get("error").is_some() {
            continue;
        }
        if let Outcome::Refused(e) = judge(&row) {
            assert!(
                !e.contains("not valid JSON"),
                "{}: refused for a reason that is not a feature: {e}",
                label(&row)
            );
        }
    }
}

/// Rows of `tools/hf_oracle.py WHAT --only SAMPLE`, run with `py`.
fn regenerate(py: &str, what: &str, sample: &[&str]) -> Vec<Value> {
    let out = Command::new(py)
        .arg(root().join("tools/hf_oracle.py"))
        .args([what, "--only", &sample.join(",")])
        .output()
        .expect("run tools/hf_oracle.py");
    assert!(
        out.status.success(),
        "hf_oracle.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fresh: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect();
    assert_eq!(
        fresh.len(),
        sample.len(),
        "one row per sampled {what} entry"
    );
    fresh
}

/// `tools/hf_oracle.py` on a sample of types, and on one real config (Mistral Small 3.1, whose
/// head the generator unties as its writer read it: `tie_as_written`), gives the committed rows
/// again (transformers is pinned in tests/calibration/requirements-dry-run.txt; CI installs it
/// and sets `VRAM_DOCTOR_CALIBRATION_PYTHON`).
#[test]
fn the_committed_rows_are_what_the_generator_gives() {
    let py = match std::env::var("VRAM_DOCTOR_CALIBRATION_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => {
            println!(
                "VRAM_DOCTOR_CALIBRATION_PYTHON (a Python with torch and transformers) is not set; the oracle rows were not regenerated"
            );
            assert!(
                std::env::var("CI").is_err(),
                "CI must set VRAM_DOCTOR_CALIBRATION_PYTHON (.ci/run installs the venv)"
            );
            return;
        }
    };
    let sample = [
        "bert",
        "deepseek_v3",
        "gemma3_text",
        "gpt2",
        "gpt_oss",
        "llama",
        "mixtral",
        "qwen3_moe",
        "qwen3_next",
    ];
    let committed = rows("transformers-defaults.jsonl");
    for row in &regenerate(&py, "defaults", &sample) {
        let ty = row["model_type"].as_str().unwrap();
        let old = committed
            .iter()
            .find(|r| r["model_type"] == ty)
            .unwrap_or_else(|| panic!("{ty} is not in the committed rows"));
        assert_eq!(
            row, old,
            "{ty}: regenerated row differs from the committed one"
        );
    }
    let committed = rows("transformers-configs.jsonl");
    for row in &regenerate(&py, "configs", &["mistral-small-3.1-24b-instruct-2503"]) {
        let file = row["file"].as_str().unwrap();
        let old = committed
            .iter()
            .find(|r| r["file"] == file)
            .unwrap_or_else(|| panic!("{file} is not in the committed rows"));
        assert_eq!(
            row, old,
            "{file}: regenerated row differs from the committed one"
        );
    }
}
