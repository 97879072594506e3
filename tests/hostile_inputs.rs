//! Hostile and odd inputs (issue 23), through the real binary: paths that are not regular files,
//! headers whose counts are huge, names with control characters, writers that must not replace
//! what a path points at. One crafted input per defect (the builders of the large ones are in
//! `support/hostile.rs`; `hostile_limits.rs` runs them under a memory cap).

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::hostile::*;
use support::*;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_vram-doctor"));
    // No user presets of the machine running the tests.
    c.env(
        "VRAM_DOCTOR_CONFIG_DIR",
        std::env::temp_dir().join("vram-doctor-hostile-none"),
    );
    c
}

fn run(args: &[&str]) -> Output {
    run_in(&mut bin(), args)
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Exit 2 with one line on stderr that contains every one of `want`.
fn refused(o: &Output, want: &[&str]) {
    let e = err(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {e} stdout: {}", out(o));
    assert_eq!(e.trim().lines().count(), 1, "one line: {e}");
    for w in want {
        assert!(e.contains(w), "{w:?} not in: {e}");
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const PLAN: [&str; 5] = ["plan", "--vram-gib", "24", "--model", "llama-3.1-8b"];

fn plan_with(extra: &[&str]) -> Vec<String> {
    PLAN.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn run_owned(args: &[String]) -> Output {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&a)
}

// ------------------------------------------------------------ 1. writers

#[cfg(unix)]
#[test]
fn out_follows_links_and_never_replaces_devices_or_folders() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.json");
    std::fs::write(&real, "old").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = run_owned(&plan_with(&[
        "--task",
        "training",
        "--export",
        "deepspeed",
        "--out",
        s(&link),
    ]));
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(&real)
            .unwrap()
            .contains("zero_optimization")
    );
    // A device node (also through a link) and a FIFO: refused, left as they are.
    let to_null = dir.path().join("null.json");
    std::os::unix::fs::symlink("/dev/null", &to_null).unwrap();
    let pipe = fifo(dir.path(), "pipe.json");
    for (target, kind) in [
        (Path::new("/dev/null"), "character device"),
        (&to_null, "character device"),
        (&pipe, "named pipe"),
    ] {
        let o = run_owned(&plan_with(&[
            "--task",
            "training",
            "--export",
            "deepspeed",
            "--out",
            s(target),
        ]));
        refused(&o, &["--out", kind, "not a regular file"]);
    }
    assert!(
        std::fs::symlink_metadata(&to_null)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn out_with_a_trailing_separator_creates_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let newdir = format!("{}/new/deeper/", dir.path().display());
    let o = run_owned(&plan_with(&[
        "--task",
        "training",
        "--export",
        "deepspeed",
        "--out",
        &newdir,
    ]));
    assert!(o.status.success(), "{}", err(&o));
    assert!(Path::new(&newdir).join("ds_config.json").is_file());
}

#[test]
fn export_all_into_a_new_folder_appears_whole_and_stale_temporaries_go() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set");
    // What a writer killed mid-way leaves: a temporary folder and a temporary file, both of a
    // process that is gone (past the Linux pid maximum).
    let stale_dir = dir.path().join(".set.4194999.tmp");
    std::fs::create_dir(&stale_dir).unwrap();
    std::fs::write(stale_dir.join("ds_config.json"), "half").unwrap();
    let o = run_owned(&plan_with(&[
        "--task",
        "training",
        "--export",
        "all",
        "--out",
        s(&set),
    ]));
    assert!(o.status.success(), "{}", err(&o));
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    if Path::new("/proc/self").exists() {
        assert_eq!(names, ["set"], "stale temporary folder kept");
    }
    assert!(set.join("ds_config.json").is_file() && set.join("plan-report.md").is_file());
    // Again into the folder, which holds only the set: swapped whole, nothing left beside it.
    let o = run_owned(&plan_with(&[
        "--task",
        "training",
        "--export",
        "all",
        "--out",
        s(&set),
    ]));
    assert!(o.status.success(), "{}", err(&o));
    let listed = |d: &Path| -> Vec<String> {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(listed(dir.path()), ["set"]);
    assert!(
        listed(&set).iter().all(|n| !n.ends_with(".tmp")),
        "{:?}",
        listed(&set)
    );
    // Again into the now existing folder, with a stale temporary file of one export.
    let stale_file = set.join(".ds_config.json.4194999.tmp");
    std::fs::write(&stale_file, "half").unwrap();
    std::fs::write(set.join("notes.txt"), "mine").unwrap();
    let o = run_owned(&plan_with(&[
        "--task",
        "training",
        "--export",
        "all",
        "--out",
        s(&set),
    ]));
    assert!(o.status.success(), "{}", err(&o));
    if Path::new("/proc/self").exists() {
        assert!(!stale_file.exists(), "stale temporary kept");
    }
    assert_eq!(
        std::fs::read_to_string(set.join("notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn record_onto_the_replayed_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("r.jsonl");
    let o = run(&[
        "monitor",
        "--demo",
        "--count",
        "3",
        "--json",
        "--record",
        s(&rec),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let before = std::fs::read(&rec).unwrap();
    let o = run(&["monitor", "--replay", s(&rec), "--record", s(&rec)]);
    refused(&o, &["--record", "the file being replayed"]);
    assert_eq!(std::fs::read(&rec).unwrap(), before, "recording changed");
    #[cfg(unix)]
    {
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&rec, &link).unwrap();
        refused(
            &run(&["monitor", "--replay", s(&rec), "--record", s(&link)]),
            &["the file being replayed"],
        );
    }
}

// ------------------------------------------------------------ 2. reads

/// Every reader refuses a FIFO and a device without opening it (no block, no endless read).
#[cfg(unix)]
#[test]
fn readers_refuse_fifos_and_devices_unopened() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = fifo(dir.path(), "in");
    for path in [s(&pipe), "/dev/zero"] {
        let cases: Vec<Vec<&str>> = vec![
            vec!["plan", "--workload", path],
            vec!["diagnose", "--file", path],
            vec!["monitor", "--replay", path],
            vec!["monitor", "--once", "--nvml-lib", path],
            vec!["accuracy", "--reference", path],
            vec!["accuracy", "--speed-reference", path],
            vec!["plan", "--vram-gib", "8", "--model-file", path],
            vec!["inspect", path],
        ];
        for args in cases {
            let o = run(&args);
            let e = err(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
            assert!(
                e.contains("not a regular file") && e.contains(path),
                "{args:?}: {e}"
            );
        }
    }
    // Recording to /dev/zero used to spin reading it for a header.
    let o = run(&["monitor", "--demo", "--count", "1", "--record", "/dev/zero"]);
    refused(&o, &["--record", "character device"]);
}

#[cfg(unix)]
#[test]
fn a_fifo_as_the_presets_file_is_reported_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    fifo(dir.path(), "user-presets.toml");
    let o = run_in(
        bin().env("VRAM_DOCTOR_CONFIG_DIR", dir.path()),
        &["plan", "--gpu", "my-gpu", "--model", "llama-3.1-8b"],
    );
    refused(&o, &["--gpu my-gpu", "user-presets.toml", "named pipe"]);
}

#[test]
fn nvml_lib_names_the_path_and_the_loader_error() {
    let dir = tempfile::tempdir().unwrap();
    let nope = dir.path().join("nope.so");
    std::fs::write(&nope, "not a library").unwrap();
    let o = run(&["monitor", "--once", "--nvml-lib", s(&nope)]);
    refused(
        &o,
        &[
            "--nvml-lib",
            "nope.so",
            "cannot load it as the NVML library",
        ],
    );
    assert!(
        !err(&o).contains("install the NVIDIA driver"),
        "{}",
        err(&o)
    );
}

// ------------------------------------------------------------ 3. memory bounded by real models

#[test]
fn repeated_gguf_shards_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = tiny_llama(1).kv("split.count", Val::U32(3));
    first.tensors.truncate(5);
    let p1 = dir.path().join("m-00001-of-00003.gguf");
    first.write_sparse(&p1);
    let mut second = Gguf::new()
        .kv("split.count", Val::U32(3))
        .kv("split.no", Val::U32(1));
    second.tensors = tiny_llama(1).tensors[5..].to_vec();
    let p2 = dir.path().join("m-00002-of-00003.gguf");
    second.write_sparse(&p2);
    // The third shard is the second one again, under another name.
    let p3 = dir.path().join("m-00003-of-00003.gguf");
    std::fs::hard_link(&p2, &p3).unwrap();
    refused(
        &run(&["inspect", s(&p1)]),
        &["m-00003-of-00003.gguf", "same file as an earlier shard"],
    );
    // A copy says it is shard 2, not 3.
    std::fs::remove_file(&p3).unwrap();
    std::fs::copy(&p2, &p3).unwrap();
    refused(
        &run(&["inspect", s(&p1)]),
        &["says it is shard 2", "not shard 3"],
    );
}

#[test]
fn headers_claiming_more_than_any_model_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    // 200,000 empty tensors: past the count of any real model.
    let mut g = tiny_llama(1);
    for i in 0..200_000 {
        g.tensors.push(Tensor::new(&format!("x.{i}"), &[0], 0));
    }
    let p = dir.path().join("many.gguf");
    g.write_sparse(&p);
    refused(
        &run(&["inspect", s(&p)]),
        &["200", "tensors", "more than any model has"],
    );
}

#[test]
fn many_long_metadata_strings_are_skipped_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let p = many_strings(dir.path());
    let o = run(&["inspect", s(&p)]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("Tiny Llama"), "{}", out(&o));
}

#[test]
fn a_safetensors_header_of_millions_of_tensors_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = huge_safetensors(dir.path());
    let o = run(&["inspect", s(&p)]);
    refused(&o, &["model.safetensors", "more than 250000 tensors"]);
}

#[test]
fn a_replay_snapshot_holds_a_bounded_number_of_gpus() {
    let dir = tempfile::tempdir().unwrap();
    let p = one_time_csv(dir.path(), 2_000);
    let o = run(&["monitor", "--replay", s(&p), "--json"]);
    let lines: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), 1, "one snapshot");
    let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(
        v["gpus"].as_array().unwrap().len(),
        vram_doctor::telemetry::replay::MAX_GPUS
    );
    // The rows past the bound are malformed: said at the end, exit 2.
    refused(
        &o,
        &[
            "one-time.csv",
            "1744 malformed line(s)",
            "more than 256 GPUs",
        ],
    );
}

// ------------------------------------------------------------ 4. sums and exports

#[test]
fn tensor_sizes_that_overflow_are_refused_not_wrapped() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("wrap.gguf");
    wrapping_gguf(&p);
    refused(&run(&["inspect", s(&p)]), &["wrap.gguf", "past 2^64"]);
}

#[test]
fn exports_carry_the_kv_cache_the_plan_counted_or_the_plan_refuses() {
    // vLLM has no q4_0/q8_0 cache, llama.cpp no fp8, transformers neither.
    for (engine, kv) in [
        ("vllm", "q4_0"),
        ("vllm", "q8_0"),
        ("llama.cpp", "fp8"),
        ("transformers", "q4_0"),
    ] {
        let o = run_owned(&plan_with(&["--engine", engine, "--kv-cache", kv]));
        refused(&o, &["run.kv_cache", kv, "use one of"]);
    }
    let o = run_owned(&plan_with(&[
        "--engine",
        "vllm",
        "--kv-cache",
        "fp8",
        "--export",
        "vllm",
    ]));
    assert!(out(&o).contains("--kv-cache-dtype fp8"), "{}", out(&o));
    let o = run_owned(&plan_with(&["--engine", "vllm", "--export", "vllm"]));
    assert!(out(&o).contains("--kv-cache-dtype auto"), "{}", out(&o));
    let o = run_owned(&plan_with(&[
        "--weights",
        "q4_k_m",
        "--kv-cache",
        "q4_0",
        "--export",
        "llama.cpp",
    ]));
    let t = out(&o);
    assert!(
        t.contains("--cache-type-k q4_0") && t.contains("--cache-type-v q4_0"),
        "{t}"
    );
    let o = run_owned(&plan_with(&[
        "--weights",
        "q4_k_m",
        "--export",
        "llama.cpp",
    ]));
    assert!(out(&o).contains("--cache-type-k f16"), "{}", out(&o));
}

// ------------------------------------------------------------ 5. forged output

const FORGED: &str = "Evil\nFITS: 80.0 GiB free (100% of the card)\u{1b}[2J\u{7}";

fn no_forgery(text: &str) {
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "raw ESC/BEL: {text:?}"
    );
    let fits = text
        .lines()
        .filter(|l| {
            ["FITS", "Fits", "DOES NOT FIT", "Does not fit"]
                .iter()
                .any(|v| l.starts_with(v))
        })
        .count();
    assert!(fits <= 1, "a forged verdict line: {text}");
}

#[test]
fn names_from_files_cannot_forge_lines_or_send_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let mut g = tiny_llama(1);
    for (k, v) in &mut g.kv {
        if k == "general.name" {
            *v = Val::Str(FORGED.into());
        }
    }
    let p = dir.path().join("evil.gguf");
    g.write_sparse(&p);
    for args in [
        vec![
            "plan",
            "--vram-gib",
            "8",
            "--seq",
            "1024",
            "--model-file",
            s(&p),
        ],
        vec!["inspect", s(&p)],
    ] {
        let o = run(&args);
        assert!(o.status.success(), "{}", err(&o));
        let t = out(&o);
        no_forgery(&t);
        assert!(t.contains("Evil\\nFITS"), "{t}");
    }
    // A GPU name in a recording.
    use vram_doctor::telemetry::Source;
    let mut snap = vram_doctor::telemetry::demo::DemoSource::new(2).sample();
    snap.gpus[0].name = FORGED.into();
    let rec = dir.path().join("evil.jsonl");
    std::fs::write(&rec, serde_json::to_string(&snap).unwrap() + "\n").unwrap();
    let o = run(&["monitor", "--replay", s(&rec)]);
    assert!(o.status.success(), "{}", err(&o));
    no_forgery(&out(&o));
    assert!(out(&o).contains("Evil\\nFITS"), "{}", out(&o));
    // A preset name echoed in an error.
    let o = run(&["plan", "--vram-gib", "8", "--model", FORGED]);
    assert_eq!(o.status.code(), Some(2));
    no_forgery(&err(&o));
    assert_eq!(err(&o).trim().lines().count(), 1);
    // A log whose error line holds terminal escapes: `diagnose` quotes it as evidence.
    let log = dir.path().join("evil.log");
    std::fs::write(
        &log,
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB \u{1b}[2J\u{7}\u{202e}x\n",
    )
    .unwrap();
    let o = run(&["diagnose", "--file", s(&log)]);
    assert!(o.status.success(), "{}", err(&o));
    let t = out(&o);
    no_forgery(&t);
    assert!(!t.contains('\u{202e}'), "{t}");
    assert!(t.contains("\\u{1b}[2J\\u{7}\\u{202e}x"), "{t}");
}

// ------------------------------------------------------------ 6. errors that name the right thing

#[test]
fn a_corrupt_presets_file_is_named_where_it_is_used() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("user-presets.toml"),
        "[[gpu]]\nid = \"my-gpu\"\nname = \"x\"\nvram_gib = \"lots\"\n",
    )
    .unwrap();
    let o = run_in(
        bin().env("VRAM_DOCTOR_CONFIG_DIR", dir.path()),
        &["plan", "--gpu", "my-gpu", "--model", "llama-3.1-8b"],
    );
    refused(&o, &["--gpu my-gpu", "user-presets.toml", "line"]);
}

#[test]
fn a_malformed_replay_line_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("r.jsonl");
    let o = run(&[
        "monitor",
        "--demo",
        "--count",
        "2",
        "--json",
        "--record",
        s(&rec),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let mut text = std::fs::read_to_string(&rec).unwrap();
    text.push_str("{\"time_ms\": \"broken\"\n");
    std::fs::write(&rec, text).unwrap();
    let o = run(&["monitor", "--replay", s(&rec), "--json"]);
    assert_eq!(out(&o).lines().count(), 2, "the good lines are replayed");
    refused(&o, &["r.jsonl", "1 malformed line(s)", "line 3"]);
}

fn zero_key(key: &str) -> Gguf {
    let mut g = tiny_llama(1);
    for (k, v) in &mut g.kv {
        if k == key {
            *v = Val::U32(0);
        }
    }
    g
}

#[test]
fn zero_layers_and_zero_context_are_named() {
    let dir = tempfile::tempdir().unwrap();
    for (key, want) in [
        ("llama.block_count", "llama.block_count\" is zero"),
        ("llama.context_length", "llama.context_length\" is zero"),
    ] {
        let p = dir.path().join("zero.gguf");
        zero_key(key).write_sparse(&p);
        refused(
            &run(&["plan", "--vram-gib", "8", "--model-file", s(&p)]),
            &[want],
        );
    }
}

#[test]
fn a_model_file_with_a_diffusion_or_game_task_is_refused_not_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let idx = dir.path().join("model_index.json");
    std::fs::write(&idx, "{\"_class_name\": \"StableDiffusionXLPipeline\"}").unwrap();
    for task in ["diffusion", "game"] {
        let o = run(&[
            "plan",
            "--vram-gib",
            "12",
            "--task",
            task,
            "--model-file",
            s(&idx),
        ]);
        refused(
            &o,
            &[
                "model.file",
                "model_index.json",
                "does not read model files",
            ],
        );
    }
}

#[test]
fn a_utf16_log_with_a_bom_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.05 GiB is free.\r\n";
    let bytes: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(msg.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let p = dir.path().join("ps.log");
    std::fs::write(&p, bytes).unwrap();
    let o = run(&["diagnose", "--file", s(&p), "--json"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).contains("2.00 GiB") || out(&o).contains("2147483648"),
        "{}",
        out(&o)
    );
}

#[test]
fn an_answer_cut_inside_a_character_is_not_an_error() {
    // 1023 ASCII bytes and then a 3-byte character across the 1 KiB bound, then a real answer.
    let mut input = "a".repeat(1023);
    input.push_str("€€\n1\nq\n");
    let mut child = bin()
        .args(["diagnose", "--interactive"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let e = err(&o);
    assert!(o.status.success(), "{e}");
    assert!(!e.contains("UTF-8"), "{e}");
    assert!(e.contains("is not an answer"), "{e}");
    // The echo of the overlong line is cut.
    assert!(e.lines().all(|l| l.len() < 300), "{e}");
}

#[test]
fn a_megabyte_preset_name_is_answered_at_once_and_echoed_cut() {
    let dir = tempfile::tempdir().unwrap();
    let p = megabyte_name(dir.path());
    let start = Instant::now();
    let o = run(&["plan", "--workload", s(&p)]);
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    refused(&o, &["unknown model preset"]);
    assert!(err(&o).len() < 1000, "{} bytes echoed", err(&o).len());
}
