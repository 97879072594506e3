//! `vram-doctor plan` end to end: the JSON contract of DESIGN.md, the human table, and bad input
//! (one line naming the field, exit status 2, no panic).

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(args)
        .output()
        .expect("runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn json_result_has_the_contract_fields() {
    let o = run(&[
        "plan",
        "--workload",
        "examples/llama-8b-4090.toml",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["capacity_bytes"], 25_769_803_776u64);
    assert!(v["fits"].is_boolean());
    for k in ["tensors_bytes", "reserved_bytes", "process_bytes"] {
        assert!(v["peak"][k].as_u64().unwrap() > 0, "{k}");
    }
    let t = v["peak"]["tensors_bytes"].as_u64().unwrap();
    let p = v["peak"]["process_bytes"].as_u64().unwrap();
    assert!(t <= v["peak"]["reserved_bytes"].as_u64().unwrap() && t < p);
    let ids: Vec<&str> = v["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    for id in ["weights", "kv_cache", "activations", "cuda_context"] {
        assert!(ids.contains(&id), "{id} in {ids:?}");
    }
    let plan = &v["plan"];
    assert!(
        plan["strategies"].is_array()
            && plan["speed_factor"].is_number()
            && plan["quality_note"].is_string()
    );
}

#[test]
fn flags_alone_plan_a_qlora_run_and_print_a_table() {
    let o = run(&[
        "plan",
        "--gpu",
        "rtx-4090",
        "--model",
        "llama-3.1-8b",
        "--task",
        "training",
        "--method",
        "qlora",
        "--batch",
        "4",
        "--seq",
        "2048",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("Model weights") && out.contains("LoRA adapters"),
        "{out}"
    );
    assert!(
        out.lines()
            .filter(|l| l.starts_with("Fits") || l.starts_with("Does not fit"))
            .count()
            == 1,
        "one verdict line: {out}"
    );
    assert!(out.contains("Why:"));
}

#[test]
fn every_task_plans_through_the_same_command() {
    for args in [
        ["plan", "--workload", "examples/sdxl-3060.toml", "--json"],
        [
            "plan",
            "--workload",
            "examples/qwen-32b-gguf.toml",
            "--json",
        ],
        [
            "plan",
            "--workload",
            "examples/qlora-8b-3060.toml",
            "--json",
        ],
    ] {
        let o = run(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v["peak"]["process_bytes"].as_u64().unwrap() > 0);
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "[run\nbatch = 2\n").unwrap();
    let binary = dir.path().join("binary.toml");
    std::fs::write(&binary, [0xffu8, 0xfe, 0x00, 0x13]).unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--gpu".into(),
                "rtx-4900".into(),
                "--model".into(),
                "llama-3.1-8b".into(),
            ],
            "rtx-4090",
        ),
        (
            vec![
                "--gpu".into(),
                "rtx-4090".into(),
                "--model".into(),
                "lama-3.1-8b".into(),
            ],
            "llama-3.1-8b",
        ),
        (
            vec![
                "--gpu".into(),
                "rtx-4090".into(),
                "--model".into(),
                "llama-3.1-8b".into(),
                "--batch".into(),
                "0".into(),
            ],
            "run.batch",
        ),
        (
            vec![
                "--gpu".into(),
                "rtx-4090".into(),
                "--model".into(),
                "llama-3.1-8b".into(),
                "--seq".into(),
                "300000".into(),
            ],
            "max_context",
        ),
        (
            vec![
                "--gpu".into(),
                "rtx-4090".into(),
                "--model".into(),
                "llama-3.1-8b".into(),
                "--weights".into(),
                "q9".into(),
            ],
            "run.weights",
        ),
        (
            vec![
                "--vram-gib=-4".into(),
                "--model".into(),
                "llama-3.1-8b".into(),
            ],
            "gpu.vram_gib",
        ),
        (
            vec!["--workload".into(), broken.display().to_string()],
            "line 1",
        ),
        (
            vec!["--workload".into(), binary.display().to_string()],
            "UTF-8",
        ),
        (
            vec!["--workload".into(), "/nonexistent/w.toml".into()],
            "cannot read",
        ),
        (
            vec![
                "--gpu".into(),
                "rtx-4090".into(),
                "--model-file".into(),
                "/nonexistent/config.json".into(),
            ],
            "nonexistent",
        ),
    ];
    for (args, needle) in cases {
        let mut full = vec!["plan".to_string()];
        full.extend(args.clone());
        let refs: Vec<&str> = full.iter().map(String::as_str).collect();
        let o = run(&refs);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn bad_flag_values_exit_2() {
    let o = run(&[
        "plan",
        "--gpu",
        "rtx-4090",
        "--model",
        "llama-3.1-8b",
        "--engine",
        "tgi",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("run.engine"), "{}", stderr(&o));
}

#[test]
fn presets_list_shows_both_catalogs() {
    let o = run(&["presets", "list"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("rtx-4090") && out.contains("llama-3.1-8b"));
    let o = run(&["presets", "list", "gpus"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("llama-3.1-8b"));
}

/// `vram-doctor ARGS` (a `plan --json`): the weights' bytes and the warnings.
fn plan_weights(args: &[&str]) -> (f64, Vec<String>) {
    let o = run(args);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let bytes = v["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "weights")
        .unwrap()["bytes"]
        .as_f64()
        .unwrap();
    let notes: Vec<String> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect();
    (bytes, notes)
}

/// A model shipped in fp8 is planned in fp8 unless a flag says otherwise, and the output says
/// which format was used; `inspect` reports the same format.
#[test]
fn plan_uses_the_files_own_weight_format() {
    let cfg = "tests/data/configs/deepseek-v3.json";
    let inspect = run(&["inspect", cfg, "--json"]);
    assert!(inspect.status.success(), "{}", stderr(&inspect));
    let i: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(i["weights"], "fp8");
    let weights = |args: &[&str]| {
        plan_weights(
            &[
                &["plan", "--model-file", cfg, "--vram-gib", "80", "--json"],
                args,
            ]
            .concat(),
        )
    };
    let (fp8, notes) = weights(&[]);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("planned as fp8, the format the model's files hold")),
        "{notes:?}"
    );
    let (bf16, notes) = weights(&["--weights", "bf16"]);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("bf16 (run.weights); the model's files hold fp8")),
        "{notes:?}"
    );
    // 671B parameters: about 1 byte each in fp8, 2 in bf16.
    assert!(fp8 > 6.0e11 && fp8 < 7.5e11, "{fp8}");
    assert!(bf16 / fp8 > 1.8, "{bf16} vs {fp8}");
}

/// gpt-oss ships its routed experts in MXFP4 (`quantization_config` quant_method "mxfp4"):
/// `plan` takes that format by default, 17 bytes per 32 expert weights and bf16 for the rest,
/// about 12.8 GiB for gpt-oss-20b's 20.9 B parameters instead of about 39 GiB in bf16.
#[test]
fn mxfp4_experts_are_planned_in_mxfp4() {
    let cfg = "tests/data/configs/gpt-oss-20b.json";
    let inspect = run(&["inspect", cfg, "--json"]);
    assert!(inspect.status.success(), "{}", stderr(&inspect));
    let i: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(i["weights"], "mxfp4");
    let weights = |args: &[&str]| {
        plan_weights(
            &[
                &["plan", "--model-file", cfg, "--vram-gib", "80", "--json"],
                args,
            ]
            .concat(),
        )
        .0
    };
    let gib = f64::from(1u32 << 30);
    // Experts: 24 layers × 32 experts × 3 × 2880 × 2880 weights at 17/32 byte; the other
    // 1.80 B parameters at 2 bytes.
    let experts = 24.0 * 32.0 * 3.0 * 2880.0 * 2880.0;
    let want = experts * 17.0 / 32.0 + (20_914_757_184.0 - experts) * 2.0;
    let mxfp4 = weights(&[]);
    assert!(
        (mxfp4 / want - 1.0).abs() < 0.01,
        "{} GiB vs {} GiB",
        mxfp4 / gib,
        want / gib
    );
    let bf16 = weights(&["--weights", "bf16"]);
    assert!(bf16 / gib > 38.0 && bf16 / gib < 40.0, "{}", bf16 / gib);
}

#[test]
fn print_resolved_shows_the_checked_workload() {
    let o = run(&[
        "plan",
        "--workload",
        "examples/llama-8b-4090.toml",
        "--batch",
        "3",
        "--print-resolved",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["task"], "llm");
    assert_eq!(v["gpu"]["vram_bytes"], 25_769_803_776u64);
    assert!(v["gpu"]["speed"]["bandwidth_gbs"].as_f64().unwrap() > 0.0);
    assert!(v["gpu"]["host"]["ram_gbps"].as_f64().unwrap() > 0.0);
    assert_eq!(v["run"]["batch"], 3, "flags are applied");
    assert!(v["model"]["layers"].as_u64().unwrap() > 0);
    assert!(v.get("components").is_none(), "nothing is planned");
    let bad = run(&["plan", "--gpu", "rtx-9999", "--print-resolved"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}

/// Issue 17's example on the command line (the host's RAM given, so any machine plans the same).
const EXAMPLE_4060: &[&str] = &[
    "plan",
    "--gpu",
    "rtx-4060",
    "--model",
    "qwen2.5-14b",
    "--weights",
    "q4_k_m",
    "--seq",
    "16384",
    "--engine",
    "llama-cpp",
    "--host-ram-gib",
    "32",
];

/// The recommendation of an `--objective quality` plan as JSON: (changes, decode tokens/s).
fn recommended(extra: &[&str]) -> (Vec<serde_json::Value>, f64, serde_json::Value) {
    let mut args = EXAMPLE_4060.to_vec();
    args.push("--json");
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = v["plan"].clone();
    let changes = p["changes"].as_array().cloned().unwrap_or_default();
    let tps = p["speed"]["decode_tokens_per_s"].as_f64().unwrap();
    (changes, tps, p)
}

/// Issue 17's example: Qwen2.5-14B Q4_K_M, 16k context, an 8 GB RTX 4060, llama.cpp, the
/// default host (dual-channel DDR4-3200). The weights do not fit on the GPU at any context, so
/// the planner must keep Q4_K_M by splitting (with a quantized KV cache or a shorter context if
/// that is what reaches the 5 tokens/s threshold) rather than fall to q2_k; every option shows
/// its memory and speed; a threshold no split reaches brings the GPU-only q2_k plan back.
#[test]
fn an_8gb_card_keeps_q4_k_m_with_a_split_above_the_threshold() {
    let (changes, tps, p) = recommended(&[]);
    let kind = |c: &serde_json::Value| c["kind"].as_str().unwrap_or("").to_string();
    assert!(
        changes.iter().all(|c| kind(c) != "weights"),
        "weights changed: {changes:?}"
    );
    assert!(changes.iter().any(|c| kind(c) == "split"), "{changes:?}");
    assert!(tps >= 5.0, "{tps} tok/s is below the default threshold");
    let pl = &p["placement"];
    assert!(pl["gpu_layers"].as_u64().unwrap() < pl["total_layers"].as_u64().unwrap());
    assert!(pl["host_bytes"].as_u64().unwrap() > 1 << 30);
    // Every option carries memory and speed; the plain --fit split is listed for reference.
    let opts = p["options"].as_array().unwrap();
    assert!(opts.len() >= 3, "{opts:?}");
    for o in opts {
        assert!(o["process_bytes"].as_u64().unwrap() > 0);
        assert!(o["speed"]["decode_tokens_per_s"].as_f64().unwrap() > 0.0);
    }
    assert!(
        opts.iter()
            .any(|o| o["label"].as_str().unwrap() == "keep q4_k_m, split GPU/CPU (--fit)")
    );
    assert_eq!(opts.iter().filter(|o| o["chosen"] == true).count(), 1);
    // A 20 tokens/s threshold is out of reach of any split of a 14B model over DDR4: the fast
    // GPU-only plan wins, and it changes the weights.
    let (changes, tps, _) = recommended(&["--min-tokens-per-s", "20"]);
    assert!(tps >= 20.0, "{tps}");
    assert!(changes.iter().any(|c| kind(c) == "weights"), "{changes:?}");
    // The human table says the same: tokens/s per option and the chosen one marked.
    let o = run(EXAMPLE_4060);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("Options (memory and speed side by side):"),
        "{text}"
    );
    let chosen = text
        .lines()
        .find(|l| l.starts_with("  * keep q4_k_m"))
        .expect("a kept-weights option is chosen");
    assert!(
        chosen.contains("decode ") && chosen.contains("tok/s"),
        "{chosen}"
    );
}

/// A catalog row that states its published format (`format` in presets/models.toml) is planned
/// in it as a model file's own format is, with the same words; `--weights` overrides it.
#[test]
fn plan_uses_a_catalog_rows_own_weight_format() {
    let weights = |args: &[&str]| {
        let base = [
            "plan",
            "--model",
            "gpt-oss-20b",
            "--vram-gib",
            "80",
            "--seq",
            "4096",
            "--json",
        ];
        plan_weights(&[&base, args].concat())
    };
    let (mxfp4, notes) = weights(&[]);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("planned as mxfp4, the format the model's files hold")),
        "{notes:?}"
    );
    let (bf16, notes) = weights(&["--weights", "bf16"]);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("bf16 (run.weights); the model's files hold mxfp4")),
        "{notes:?}"
    );
    // 20.9B parameters, 19.1B of them experts at 17/32 byte: about a third of bf16.
    assert!(
        bf16 / mxfp4 > 2.8 && bf16 / mxfp4 < 3.3,
        "{bf16} vs {mxfp4}"
    );
}

/// Issue 17, spills: an inference run over the card says what it costs where the driver lets it
/// run from shared system memory (Windows' sysmem fallback): decode over PCIe, slower than all
/// in VRAM. llama.cpp's --fit splits instead, so only a set -ngl gets the sentence.
#[test]
fn a_run_over_the_card_says_what_spilling_into_shared_memory_costs() {
    let why = |extra: &[&str]| {
        let mut args = vec![
            "plan",
            "--gpu",
            "rtx-4060",
            "--model",
            "qwen2.5-14b",
            "--seq",
            "16384",
            "--json",
        ];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["plan"]["why"].as_str().unwrap().to_string()
    };
    let figures = |text: &str| -> (f64, f64) {
        let after = |key: &str| -> f64 {
            let rest =
                &text[text.find(key).unwrap_or_else(|| panic!("{key}: {text}")) + key.len()..];
            rest.split_whitespace().next().unwrap().parse().unwrap()
        };
        (after("GB/s: about "), after("decode, against "))
    };
    let t = why(&["--weights", "awq-4bit", "--engine", "transformers"]);
    assert!(
        t.contains("shared system memory") && t.contains("over PCIe"),
        "{t}"
    );
    let (spilled, full) = figures(&t[t.find("If it runs anyway").unwrap()..]);
    assert!(
        spilled > 0.0 && spilled < 0.5 * full,
        "{spilled} vs {full}: {t}"
    );
    // llama.cpp with --fit: no spill; with -ngl forced to every layer: the same sentence.
    let fit = why(&["--weights", "q4_k_m", "--engine", "llama.cpp"]);
    assert!(!fit.contains("shared system memory"), "{fit}");
    let forced = why(&[
        "--weights",
        "q4_k_m",
        "--engine",
        "llama.cpp",
        "--gpu-layers",
        "49",
    ]);
    assert!(forced.contains("shared system memory"), "{forced}");
}

/// A llama.cpp run split between two GPUs and system RAM: `devices` holds llama.cpp's rows (one
/// per GPU, then the host with the layers left there), and the table prints them; a run whole
/// on one GPU keeps the rows in the JSON only.
#[test]
fn a_split_llama_cpp_run_has_rows_per_device() {
    let args = |extra: &[&'static str]| {
        let mut a = vec![
            "plan",
            "--gpu",
            "rtx-4060",
            "--model",
            "qwen2.5-14b",
            "--engine",
            "llama-cpp",
            "--weights",
            "q4_k_m",
            "--seq",
            "16384",
            "--host-ram-gib",
            "64",
        ];
        a.extend_from_slice(extra);
        a
    };
    let o = run(&args(&["--gpus", "2", "--gpu-layers", "25", "--json"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["devices"].as_array().expect("devices");
    let names: Vec<&str> = rows.iter().map(|d| d["device"].as_str().unwrap()).collect();
    assert_eq!(names, ["gpu0", "gpu1", "host"]);
    // Each GPU's rows are its components: weights, KV cache, compute buffer.
    let part = |id: &str| {
        v["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .map_or(0, |c| c["bytes"].as_u64().unwrap())
    };
    assert_eq!(rows[0]["model_bytes"].as_u64(), Some(part("weights")));
    assert_eq!(rows[1]["context_bytes"].as_u64(), Some(part("kv_cache")));
    assert_eq!(rows[0]["compute_bytes"].as_u64(), Some(part("activations")));
    // qwen2.5-14b: 48 layers + the output head; -ngl 25 leaves 24 on the CPU.
    assert_eq!(rows[2]["layers"], 24);
    assert!(rows[2]["model_bytes"].as_u64().unwrap() > rows[0]["model_bytes"].as_u64().unwrap());
    let o = run(&args(&["--gpus", "2", "--gpu-layers", "25"]));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("Per device"), "{table}");
    assert!(
        table.contains("GPU 1") && table.contains("Host (24 layers)"),
        "{table}"
    );

    let o = run(&args(&["--json"]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .map(|d| d["device"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gpu0", "host"]);
    let o = run(&args(&[]));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("Per device"));
}

/// A float32 checkpoint (OLMo 2 13B's torch_dtype) is planned as each engine loads it by
/// default: vLLM's dtype "auto" downcasts it to the card's bf16, or fp16 on a card without bf16
/// (vllm/config/model.py `_resolve_auto_dtype`); transformers keeps float32
/// (modeling_utils.py `_get_dtype`); the output says which. `--weights` still decides.
#[test]
fn a_float32_checkpoint_is_planned_as_each_engine_loads_it() {
    let cfg = "tests/data/configs/olmo-2-1124-13b.json";
    let plan =
        |args: &[&str]| plan_weights(&[&["plan", "--model-file", cfg, "--json"], args].concat());
    let (fp32, notes) = plan(&["--vram-gib", "80"]);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("keeps a float32 checkpoint in float32")),
        "{notes:?}"
    );
    let (bf16, notes) = plan(&["--vram-gib", "80", "--engine", "vllm"]);
    assert!(
        (fp32 / bf16 - 2.0).abs() < 0.01,
        "transformers {fp32} vs vLLM {bf16}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("weights planned as bf16") && n.contains("dtype \"auto\"")),
        "{notes:?}"
    );
    let (fp16, notes) = plan(&["--gpu", "t4", "--engine", "vllm"]);
    assert_eq!(fp16, bf16);
    assert!(
        notes.iter().any(|n| n.contains("weights planned as fp16")),
        "{notes:?}"
    );
    let (asked, _) = plan(&["--vram-gib", "80", "--engine", "vllm", "--weights", "fp32"]);
    assert_eq!(asked, fp32);
}
