//! The calibration harness (`tests/calibration/`, issue 9) end to end without a GPU.
//!
//! The grid must be in the planner's own workload format, so every file is read by
//! `WorkloadFile::parse` and its `[run]` checked by the planner's rules. Then
//! `harness.py --dry-run` runs over the whole grid: with torch (CI installs it, see `.ci/run`, and
//! sets `VRAM_DOCTOR_CALIBRATION_PYTHON`) it builds every model at reduced size on the CPU and
//! runs its step; without torch it checks the plan, the rows and the writer in pure Python.
//! The harness resolves each file with this package's binary (`plan --print-resolved`), and
//! every row's `extras.run` must be the planner's resolution of its file, field for field.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use vram_doctor::catalog::Catalog;
use vram_doctor::import::{self, Imported};
use vram_doctor::memory::any::AnyWorkload;
use vram_doctor::memory::{Task, WorkloadFile};
use vram_doctor::resolve::resolve_any;

/// Field order of `../shared/reference/groundtruth-public.jsonl` rows (the reference schema).
const SCHEMA: [&str; 14] = [
    "id",
    "source",
    "workload",
    "model",
    "arch",
    "dtype",
    "quant",
    "batch",
    "seq",
    "mode",
    "extras",
    "measured_gib",
    "metric",
    "notes",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn grid_files() -> Vec<PathBuf> {
    let dir = root().join("tests/calibration/grid");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("grid directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

/// `VRAM_DOCTOR_CALIBRATION_PYTHON` (CI's venv with torch) or the system's python3.
fn python() -> (String, bool) {
    match std::env::var("VRAM_DOCTOR_CALIBRATION_PYTHON") {
        Ok(p) if !p.is_empty() => (p, true),
        _ => ("python3".to_string(), false),
    }
}

/// The harness with `bin` as the planner that resolves its workload files.
fn harness_with(bin: &Path, args: &[&str]) -> std::process::Output {
    let (py, _) = python();
    Command::new(py)
        .arg(root().join("tests/calibration/harness.py"))
        .args(args)
        .env("VRAM_DOCTOR_BIN", bin)
        .current_dir(root())
        .output()
        .expect("python3 runs")
}

fn harness(args: &[&str]) -> std::process::Output {
    harness_with(Path::new(env!("CARGO_BIN_EXE_vram-doctor")), args)
}

/// The planner's resolved `run` of a grid file, as `plan --print-resolved` prints it (the
/// diffusion run has no `task` of its own: the workload's kind is it).
fn resolved_run(file: &Path) -> Value {
    let wf = WorkloadFile::load(file).unwrap_or_else(|e| panic!("{e}"));
    let any = resolve_any(
        &wf,
        file.parent().expect("grid dir"),
        Some(import::load_model),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let v = serde_json::to_value(&any).expect("resolved workload serialises");
    let mut run = v["run"].clone();
    if let Some(obj) = run.as_object_mut() {
        obj.entry("task").or_insert_with(|| v["task"].clone());
    }
    run
}

#[test]
fn grid_is_in_the_planners_workload_format() {
    let files = grid_files();
    assert!(
        files.len() >= 40,
        "issue 9 asks for at least 40 workloads, found {}",
        files.len()
    );
    let cat = Catalog::get();
    let mut tasks = BTreeMap::new();
    for f in &files {
        let shown = f.display();
        let wf = WorkloadFile::load(f).unwrap_or_else(|e| panic!("{e}"));
        let base = f.parent().expect("grid dir");
        // Every file resolves in the planner: LLM presets and config.json files (through the
        // importer), diffusion presets from presets/diffusion.toml.
        let any = resolve_any(&wf, base, Some(import::load_model))
            .unwrap_or_else(|e| panic!("{shown}: {e}"));
        let task = wf.run.task.unwrap_or(Task::Inference);
        *tasks.entry(task.as_str()).or_insert(0) += 1;
        match any {
            AnyWorkload::Diffusion(_) => {
                // The harness builds the preset from a diffusers folder the importer reads too.
                let id = wf.model.preset.as_deref().expect("diffusion preset");
                let dir = root().join("tests/calibration/configs/diffusion").join(id);
                let Ok(Imported::Pipeline(p)) = import::import(&dir) else {
                    panic!("{shown}: {} is not a diffusers pipeline", dir.display());
                };
                let names: BTreeSet<&str> = p.components.iter().map(|c| c.name.as_str()).collect();
                assert!(
                    names.is_superset(&BTreeSet::from(["unet", "vae", "text_encoder"])),
                    "{shown}: {names:?}"
                );
            }
            AnyWorkload::Llm(w) => {
                let Some(cfg) = &wf.model.hf_config else {
                    continue;
                };
                // Each config.json is a catalog model's: same shapes, same parameter count.
                let id = cfg.file_stem().and_then(|s| s.to_str()).expect("file name");
                let preset = cat.model(id).unwrap_or_else(|e| panic!("{shown}: {e}"));
                let (a, b) = (&w.model, &preset.arch);
                assert_eq!(
                    (
                        a.layers,
                        a.hidden,
                        a.heads,
                        a.kv_heads,
                        a.head_dim,
                        a.intermediate,
                        a.vocab,
                        a.tied_embeddings
                    ),
                    (
                        b.layers,
                        b.hidden,
                        b.heads,
                        b.kv_heads,
                        b.head_dim,
                        b.intermediate,
                        b.vocab,
                        b.tied_embeddings
                    ),
                    "{shown}: config.json and catalog preset {id} differ"
                );
                assert!(
                    (a.params - b.params).abs() / b.params < 1e-6,
                    "{shown}: {} vs {}",
                    a.params,
                    b.params
                );
            }
            AnyWorkload::Game(_) => panic!("{shown}: a game has no calibration step"),
        }
    }
    for task in ["inference", "training", "diffusion"] {
        assert!(
            tasks.get(task).copied().unwrap_or(0) >= 10,
            "too few {task} workloads: {tasks:?}"
        );
    }
}

#[test]
fn dry_run_builds_every_workload_and_writes_reference_rows() {
    let (_, torch_required) = python();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("dry.jsonl");
    let out_s = out.to_str().expect("utf-8 path");
    let mut args = vec!["--dry-run", "tests/calibration/grid", "--out", out_s];
    if torch_required {
        args.push("--require-torch");
    }
    let o = harness(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "harness failed: {}\n{stderr}", o.status);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let summary: Value =
        serde_json::from_str(stdout.lines().last().expect("summary line")).expect("summary JSON");

    let files = grid_files();
    let mode = summary["mode"].as_str().expect("mode");
    if torch_required {
        assert_eq!(
            mode, "torch-cpu",
            "CI installs torch, so the dry run must build the models"
        );
    } else {
        assert!(mode == "torch-cpu" || mode == "pure", "mode {mode}");
    }
    assert_eq!(summary["workloads"], files.len());
    assert_eq!(
        summary["rows"],
        3 * files.len(),
        "one row per metric per workload"
    );
    assert_eq!(summary["failed"], Value::Array(vec![]), "{stderr}");
    let est = summary["estimated_gpu_seconds"].as_f64().expect("estimate");
    assert!(
        est > 0.0 && est < 480.0,
        "grid must fit 8 minutes of GPU time, estimated {est} s"
    );
    for kind in [
        "llm_inference",
        "llm_training_full",
        "llm_training_lora",
        "llm_training_qlora",
        "diffusion_inference",
    ] {
        assert!(
            summary["by_kind"][kind].as_u64().unwrap_or(0) >= 2,
            "{kind} missing: {summary}"
        );
    }

    // The JSONL: reference schema, unique ids, three metrics per workload file.
    let text = std::fs::read_to_string(&out).expect("output written (renamed from .partial)");
    assert!(
        !Path::new(&format!("{out_s}.partial")).exists(),
        "partial file left behind"
    );
    let mut ids = BTreeSet::new();
    let mut per_file: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let preset = Catalog::get().model("llama-3.1-8b").expect("preset");
    for line in text.lines() {
        let row: Value = serde_json::from_str(line).expect("JSON row");
        let keys: Vec<&str> = row
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        let mut want: Vec<&str> = SCHEMA.to_vec();
        want.sort();
        let mut got = keys.clone();
        got.sort();
        assert_eq!(got, want, "row keys");
        let id = row["id"].as_str().expect("id").to_string();
        assert!(ids.insert(id.clone()), "duplicate id {id}");
        assert!(
            row["metric"]
                .as_str()
                .expect("metric")
                .starts_with("dry-run"),
            "dry rows say so: {id}"
        );
        let m = row["measured_gib"].as_f64().expect("measured_gib");
        assert!(m.is_finite() && m >= 0.0, "{id}: {m}");
        let extras = &row["extras"];
        assert_eq!(extras["dry_run"], Value::Bool(true));
        let file = extras["workload_file"]
            .as_str()
            .expect("workload_file")
            .to_string();
        // What the harness ran is the planner's resolution of the file, not a copy of it.
        let planned = resolved_run(&root().join(&file));
        assert_eq!(
            extras["run"], planned,
            "{id}: the harness's run differs from the planner's resolution"
        );
        assert_eq!(row["batch"], planned["batch"], "{id}");
        let seq = if planned["task"] == "diffusion" {
            Value::from(format!("{}x{}", planned["width"], planned["height"]))
        } else {
            planned["seq"].clone()
        };
        assert_eq!(row["seq"], seq, "{id}");
        per_file
            .entry(file)
            .or_default()
            .push(id.rsplit('-').next().expect("suffix").to_string());
        if row["model"] == "llama-3.1-8b" {
            assert_eq!(
                row["arch"]["params"].as_f64(),
                Some(preset.arch.params),
                "{id}: arch from the catalog"
            );
        }
        let checks: Vec<&str> = extras["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(!checks.is_empty(), "{id}: no checks ran");
        if mode == "torch-cpu" {
            let task = extras["run"]["task"].as_str().expect("task");
            let must = match task {
                "inference" => "generate returns prompt + new tokens",
                "training" => "trainable parameters equal the plan",
                _ => "decoded image has the requested size",
            };
            assert!(
                checks.contains(&must),
                "{id}: missing check '{must}' in {checks:?}"
            );
            assert!(
                checks.iter().any(|c| c.starts_with("full-size")),
                "{id}: full-size count not checked"
            );
            if task == "training" && extras["run"]["optimizer"] != "adamw-8bit" {
                assert!(
                    checks.contains(&"optimizer state bytes equal the plan"),
                    "{id}: {checks:?}"
                );
            }
            let subs = extras["substitutions"].as_array().expect("substitutions");
            for s in subs {
                assert!(
                    s.as_str().unwrap_or("").contains("bitsandbytes needs CUDA"),
                    "{id}: unexpected substitution {s}"
                );
            }
        }
    }
    assert_eq!(per_file.len(), files.len(), "every grid file has rows");
    for (file, mut suffixes) in per_file {
        suffixes.sort();
        assert_eq!(suffixes, ["alloc", "process", "reserved"], "{file}");
    }
}

#[test]
fn bad_workload_files_get_one_clear_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let good = std::fs::read_to_string(
        root().join("tests/calibration/grid/inf-llama8b-bf16-sdpa-s4096.toml"),
    )
    .expect("grid file");
    let cases = [
        (
            "typo.toml",
            good.replace("attention = ", "atention = "),
            "unknown field `atention`",
        ),
        (
            "choice.toml",
            good.replace("\"sdpa\"", "\"paged\""),
            "run.attention",
        ),
        (
            "range.toml",
            good.replace("batch = 1", "batch = 0"),
            "run.batch",
        ),
        ("toml.toml", "[run\n".to_string(), "unclosed table"),
        (
            "preset.toml",
            good.replace("llama-3.1-8b", "no-such-model"),
            "unknown model preset 'no-such-model'",
        ),
        (
            "game.toml",
            good.replace("task = \"inference\"", "task = \"game\"")
                .replace("preset = \"llama-3.1-8b\"", ""),
            "no calibration step",
        ),
    ];
    let out = dir.path().join("o.jsonl");
    for (name, text, needle) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write case");
        let o = harness(&[
            "--dry-run",
            path.to_str().expect("utf-8"),
            "--out",
            out.to_str().expect("utf-8"),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains(needle) && err.contains(name) && err.trim().lines().count() == 1,
            "{name}: {err}"
        );
        assert!(!out.exists(), "{name}: nothing written for a bad file");
    }
    // Without the planner's binary nothing is resolved, so nothing runs.
    let grid = root().join("tests/calibration/grid/inf-llama8b-bf16-sdpa-s4096.toml");
    let o = harness_with(
        &dir.path().join("no-such-binary"),
        &[
            "--dry-run",
            grid.to_str().expect("utf-8"),
            "--out",
            out.to_str().expect("utf-8"),
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no-such-binary") && err.trim().lines().count() == 1,
        "{err}"
    );
    assert!(!out.exists());
}

/// A planner (a wrapper around this package's binary) whose resolution `sed` rewrites.
#[cfg(unix)]
fn rewriting_planner(dir: &Path, name: &str, sed: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    let script = format!(
        "#!/bin/sh\nset -e\n'{}' \"$@\" > \"$0.json\"\nsed -e '{sed}' \"$0.json\"\n",
        env!("CARGO_BIN_EXE_vram-doctor")
    );
    std::fs::write(&path, script).expect("write wrapper");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// The harness runs what the planner resolved, and refuses a model whose config.json says
/// otherwise than the planner's resolution of it.
#[cfg(unix)]
#[test]
fn the_harness_follows_the_planners_resolution_and_refuses_a_disagreeing_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("r.jsonl");
    let out_s = out.to_str().expect("utf-8");
    let preset = "tests/calibration/grid/inf-llama8b-bf16-sdpa-s4096.toml";
    // A planner that resolves batch 3: the rows say batch 3 (the file says 1).
    let batch3 = rewriting_planner(dir.path(), "batch3", r#"s/"batch": 1,/"batch": 3,/"#);
    let o = harness_with(&batch3, &["--dry-run", preset, "--out", out_s]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).expect("rows");
    for line in text.lines() {
        let row: Value = serde_json::from_str(line).expect("JSON row");
        assert_eq!(row["batch"], 3, "{row}");
        assert_eq!(row["extras"]["run"]["batch"], 3, "{row}");
    }
    // A planner whose hidden size is not the config.json's: refused, naming both.
    let config = "tests/calibration/grid/inf-qwen15b-bf16-sdpa-s4096.toml";
    let wider = rewriting_planner(dir.path(), "wider", r#"s/"hidden": 1536,/"hidden": 1537,/"#);
    let o = harness_with(&wider, &["--dry-run", config, "--out", out_s]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("hidden_size = 1536") && err.contains("model.hidden = 1537"),
        "{err}"
    );
}

#[test]
fn workloads_not_run_still_get_a_row_and_fail_the_dry_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("late.jsonl");
    // A deadline already past when the first workload would start: every file gets an error row.
    let o = harness(&[
        "--dry-run",
        "tests/calibration/grid",
        "--only",
        "llama8b",
        "--deadline-s",
        "1e-9",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let n = grid_files()
        .iter()
        .filter(|f| f.to_string_lossy().contains("llama8b"))
        .count();
    let text = std::fs::read_to_string(&out).expect("rows written");
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(rows.len(), n, "one error row per workload");
    for r in &rows {
        assert!(r["id"].as_str().expect("id").ends_with("-error"), "{r}");
        assert_eq!(r["measured_gib"], Value::Null);
        assert!(
            r["extras"]["error"]
                .as_str()
                .expect("error")
                .contains("deadline")
        );
        assert_eq!(r.as_object().expect("object").len(), SCHEMA.len());
    }
}
