//! The Windows build under Wine prints what the Linux build prints: `plan`, `diagnose`,
//! `inspect`, `presets` and `accuracy`, byte for byte, with the same exit status. The Linux
//! binary is this build's; the `.exe` and Wine come from `tests/common/wine.rs` (which says when
//! they are missing, and fails under CI=true then).
//!
//! Messages are pasted on Windows with CRLF line ends: the Windows side gets them so, the Linux
//! side with LF, and the diagnosis must not change.

#[path = "common/wine.rs"]
mod wine;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn linux(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_vram-doctor"));
    c.args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    feed(c, stdin)
}

fn windows(w: &wine::Wine, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut c = w.command(args);
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    feed(c, stdin)
}

fn feed(mut c: Command, stdin: Option<&[u8]>) -> Output {
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().expect("start the program");
    if let Some(bytes) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(bytes)
            .expect("write stdin");
    }
    child.wait_with_output().expect("wait for the program")
}

/// Runs both and compares stdout and the exit status; returns the (shared) stdout.
fn same(w: &wine::Wine, args: &[&str]) -> String {
    same_with(w, args, None, None)
}

fn same_with(
    w: &wine::Wine,
    args: &[&str],
    linux_in: Option<&[u8]>,
    windows_in: Option<&[u8]>,
) -> String {
    let l = linux(args, linux_in);
    let win = windows(w, args, windows_in);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    assert_eq!(
        win.status.code(),
        l.status.code(),
        "`vram-doctor {}`: exit status under Wine differs from Linux; Wine's stderr: {}",
        args.join(" "),
        text(&win.stderr)
    );
    if l.status.code() != Some(0) {
        assert_eq!(
            text(&win.stderr),
            text(&l.stderr),
            "`vram-doctor {}`: the error message under Wine differs from Linux",
            args.join(" ")
        );
    }
    if win.stdout != l.stdout {
        let (a, b) = (text(&l.stdout), text(&win.stdout));
        let line = a
            .lines()
            .zip(b.lines())
            .position(|(x, y)| x != y)
            .unwrap_or(a.lines().count().min(b.lines().count()));
        panic!(
            "`vram-doctor {}`: output under Wine differs from Linux, first at line {}:\n  linux: {:?}\n  wine:  {:?}\n(lengths {} and {} bytes; Wine's stderr: {})",
            args.join(" "),
            line + 1,
            a.lines().nth(line),
            b.lines().nth(line),
            l.stdout.len(),
            win.stdout.len(),
            text(&win.stderr)
        );
    }
    text(&l.stdout)
}

#[test]
fn plan_json_is_the_same() {
    let Some(w) = wine::wine() else { return };
    for args in [
        &[
            "plan",
            "--gpu",
            "rtx-4090",
            "--model",
            "llama-3.1-8b",
            "--json",
        ][..],
        &[
            "plan",
            "--gpu",
            "rtx-4060",
            "--model",
            "qwen2.5-14b",
            "--weights",
            "q4_k_m",
            "--engine",
            "llama-cpp",
            "--seq",
            "16384",
            // The offload's speed depends on the host's RAM, which each build reads from the
            // machine (Linux: the DMI table; Windows: the SMBIOS table Wine synthesises, which
            // differs): name one, so both price the same host.
            "--host",
            "ddr4-3200-2ch",
            "--host-ram-gib",
            "32",
            "--json",
        ],
        &[
            "plan",
            "--gpu",
            "rtx-3090",
            "--model",
            "llama-3.1-8b",
            "--task",
            "training",
            "--method",
            "qlora",
            "--json",
        ],
        &["plan", "--model", "no-such-model", "--json"],
    ] {
        let out = same(w, args);
        if args[2] != "no-such-model" {
            assert!(
                out.contains("\"verdict\""),
                "a plan has a verdict: {out:.300}"
            );
        }
    }
}

#[test]
fn diagnose_json_is_the_same_with_crlf_pasted_messages() {
    let Some(w) = wine::wine() else { return };
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/oom_messages.toml");
    let doc: toml::Table = toml::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let messages = doc["message"].as_array().unwrap();
    // Every seventh message: all families of the file without 81 Wine starts.
    let mut checked = 0;
    for m in messages.iter().step_by(7) {
        let text = m["text"].as_str().unwrap();
        let lf = text.replace("\r\n", "\n");
        let crlf = lf.replace('\n', "\r\n");
        let out = same_with(
            w,
            &["diagnose", "--json"],
            Some(lf.as_bytes()),
            Some(crlf.as_bytes()),
        );
        assert!(
            out.contains("\"reading\"") && out.contains("\"classification\""),
            "{}: {out:.300}",
            m["id"]
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} messages checked");
}

#[test]
fn inspect_json_is_the_same() {
    let Some(w) = wine::wine() else { return };
    for path in [
        "tests/data/gguf/tiny-llama-q8_0.gguf",
        "tests/data/configs/gpt-oss-20b.json",
    ] {
        let out = same(w, &["inspect", path, "--json"]);
        assert!(out.contains("\"arch\""), "{path}: {out:.300}");
    }
    // A bad file: the same one-line refusal and status 2.
    same(w, &["inspect", "Cargo.toml", "--json"]);
}

#[test]
fn presets_and_accuracy_are_the_same() {
    let Some(w) = wine::wine() else { return };
    for kind in ["gpus", "models", "diffusion", "games"] {
        let out = same(w, &["presets", "list", kind]);
        assert!(out.lines().count() > 3, "{kind}: {out}");
    }
    let out = same(w, &["accuracy", "--json"]);
    assert!(out.contains("\"by_kind\""), "{out:.300}");
}

#[test]
fn paths_with_spaces_and_non_ascii_letters_are_read() {
    let Some(w) = wine::wine() else { return };
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("Zoë's AI Models").join("模型 files");
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("tiny llama.gguf");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gguf/tiny-llama-q8_0.gguf"),
        &model,
    )
    .unwrap();
    let win_path = wine::Wine::windows_path(&model);
    let win = windows(w, &["inspect", &win_path, "--json"], None);
    let lin = linux(&["inspect", model.to_str().unwrap(), "--json"], None);
    assert!(
        win.status.success(),
        "{}",
        String::from_utf8_lossy(&win.stderr)
    );
    let mut a: serde_json::Value = serde_json::from_slice(&win.stdout).unwrap();
    let mut b: serde_json::Value = serde_json::from_slice(&lin.stdout).unwrap();
    assert_eq!(
        a["files"],
        serde_json::json!([win_path]),
        "the path as given"
    );
    a["files"] = serde_json::Value::Null;
    b["files"] = serde_json::Value::Null;
    assert_eq!(a, b, "the same model read from a Windows path");
}

#[test]
fn a_counter_recording_replays_the_same() {
    let Some(w) = wine::wine() else { return };
    let csv = "tests/data/windows-counters/game-spill.csv";
    let out = same(
        w,
        &["monitor", "--counters", csv, "--json", "--interval", "0.1"],
    );
    assert_eq!(
        out.lines().count(),
        12,
        "one snapshot per sample: {out:.300}"
    );
    assert!(out.contains("\"Cyberpunk2077\""), "{out:.300}");
    same(w, &["monitor", "--counters", "Cargo.toml", "--once"]);
}
