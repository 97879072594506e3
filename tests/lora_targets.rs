//! `run.lora_targets` against PEFT itself (issue 14). `tools/lora_oracle.py` built real configs
//! (tests/data/configs/) with transformers on the meta device, applied
//! `peft.get_peft_model(model, LoraConfig(r, target_modules=...))` and recorded PEFT's trainable
//! parameter count, or its error; the rows are committed in tests/data/oracle/peft-lora.jsonl
//! so that `cargo test` needs no Python.
//!
//! Each row: where PEFT adapts something, the program's count is PEFT's to the parameter; where
//! PEFT refuses, the program refuses (exit 2); where PEFT silently skips a list entry that names
//! nothing, the program refuses and names it. Where a Python with peft is given
//! (`VRAM_DOCTOR_CALIBRATION_PYTHON`), a sample is regenerated and must equal the committed rows.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use vram_doctor::import;
use vram_doctor::memory::LoraTargets;
use vram_doctor::memory::lora::{adapters, check};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const ROWS: &str = "tests/data/oracle/peft-lora.jsonl";

fn rows() -> Vec<Value> {
    let text = std::fs::read_to_string(root().join(ROWS)).expect("the committed oracle rows");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn lora_parameters_are_peft_s_own_count() {
    let rows = rows();
    assert!(rows.len() >= 40, "the oracle covers several families");
    let mut failures = Vec::new();
    let (mut counted, mut refused) = (0, 0);
    for row in &rows {
        let file = row["file"].as_str().unwrap();
        let spec = row["targets"].as_str().unwrap();
        let r = u32::try_from(row["r"].as_u64().unwrap()).unwrap();
        let arch = import::import_model(&root().join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"))
            .arch;
        let t: LoraTargets = spec
            .parse()
            .unwrap_or_else(|e| panic!("{file} {spec}: {e}"));
        let label = format!("{file} --lora-targets {spec}");
        let checked = check(&arch, &t);
        if let Some(err) = row.get("peft_error") {
            refused += 1;
            if checked.is_ok() {
                failures.push(format!(
                    "{label}: PEFT refuses ({err}) but the program accepts"
                ));
            }
            continue;
        }
        let want = row["trainable"].as_f64().unwrap();
        let got = adapters(&arch, &t).params(r);
        counted += 1;
        if got != want {
            failures.push(format!(
                "{label} r={r}: {got} trainable parameters, PEFT {want}"
            ));
        }
        let unmatched: Vec<&str> = row
            .get("unmatched")
            .and_then(Value::as_array)
            .map(|u| u.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match (checked, unmatched.is_empty()) {
            (Ok(()), true) => {}
            (Err(e), true) => failures.push(format!("{label}: refused ({e}) but PEFT adapts it")),
            (Ok(()), false) => failures.push(format!(
                "{label}: PEFT finds nothing for {unmatched:?} and the program does not say so"
            )),
            (Err(e), false) => {
                for n in unmatched {
                    if !e.to_string().contains(&format!("'{n}'")) {
                        failures.push(format!("{label}: the error does not name {n}: {e}"));
                    }
                }
            }
        }
    }
    println!("{counted} counts compared, {refused} refusals");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn plan(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args([
            "plan", "--gpu", "rtx-4090", "--task", "training", "--method", "lora",
        ])
        .args(["--seq", "512"])
        .args(args)
        .output()
        .expect("run vram-doctor")
}

#[test]
fn the_flag_takes_peft_lists_and_patterns_and_names_what_matches_nothing() {
    let gpt2 = root().join("tests/data/configs/gpt2.json");
    let gpt2 = gpt2.to_str().unwrap();
    let adapters_bytes = |args: &[&str]| -> f64 {
        let out = plan(&[args, &["--json"]].concat());
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "adapters")
            .map_or(0.0, |c| c["bytes"].as_f64().unwrap())
    };
    let one = adapters_bytes(&["--model-file", gpt2, "--lora-targets", "c_attn"]);
    let two = adapters_bytes(&["--model-file", gpt2, "--lora-targets", "c_attn,c_fc"]);
    let pattern = adapters_bytes(&["--model-file", gpt2, "--lora-targets", r".*\.(c_attn|c_fc)"]);
    assert!(one > 0.0 && two > one, "{one} {two}");
    assert_eq!(
        pattern, two,
        "a pattern naming the same modules weighs the same"
    );

    let out = plan(&["--model-file", gpt2, "--lora-targets", "q_proj,c_attn"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'q_proj'") && err.contains("attn.c_attn"),
        "names the stray name and the model's modules: {err}"
    );
}

/// `tools/lora_oracle.py` on a sample of configs gives the committed rows again.
#[test]
fn the_committed_rows_are_what_peft_gives() {
    let py = match std::env::var("VRAM_DOCTOR_CALIBRATION_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => {
            println!(
                "VRAM_DOCTOR_CALIBRATION_PYTHON (a Python with torch, transformers and peft) is not set; the PEFT rows were not regenerated"
            );
            assert!(
                std::env::var("CI").is_err(),
                "CI must set VRAM_DOCTOR_CALIBRATION_PYTHON (.ci/run installs the venv)"
            );
            return;
        }
    };
    let sample = ["gpt2.json", "falcon-7b.json", "mixtral-8x7b-v0.1.json"];
    let out = Command::new(&py)
        .arg(root().join("tools/lora_oracle.py"))
        .args(["--only", &sample.join(",")])
        .output()
        .expect("run tools/lora_oracle.py");
    assert!(
        out.status.success(),
        "lora_oracle.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fresh: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect();
    let committed = rows();
    assert!(fresh.len() >= sample.len());
    for row in &fresh {
        assert!(
            committed.contains(row),
            "regenerated row not in {ROWS}: {row}"
        );
    }
}
