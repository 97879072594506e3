//! Every subcommand whose stdout is closed (`vram-doctor accuracy | head`) or full (a redirection
//! to a full disk) exits 1 without a panic: quietly for the closed pipe, whose reader stopped on
//! purpose, and naming the failure for the full disk (README, "Exit status").

use std::io::Write;
use std::process::{Command, Stdio};

/// One invocation per subcommand that prints on stdout (tables, JSON, exports, listings).
const COMMANDS: &[&[&str]] = &[
    &["plan", "--gpu", "rtx-4090", "--model", "llama-3.1-8b"],
    &[
        "plan",
        "--gpu",
        "rtx-4090",
        "--model",
        "llama-3.1-8b",
        "--json",
    ],
    &[
        "plan",
        "--gpu",
        "rtx-4090",
        "--model",
        "llama-3.1-8b",
        "--export",
        "all",
    ],
    &[
        "plan",
        "--gpu",
        "rtx-4090",
        "--workflow",
        "tests/data/comfy/flux_gguf.json",
    ],
    &["presets", "list"],
    &["accuracy"],
    &["accuracy", "--json"],
    &["inspect", "tests/data/configs/deepseek-v3.json"],
    &["inspect", "tests/data/configs/deepseek-v3.json", "--json"],
    &["diagnose"],
    &["monitor", "--demo", "--count", "3", "--interval", "0.1"],
];

/// Runs `args` with stdout on `out`; CUDA's OOM message on stdin for `diagnose`.
fn run(args: &[&str], out: impl Into<Stdio>) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vram-doctor");
    let msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which 1.06 GiB is free.\n";
    // A command that does not read stdin may have exited already.
    let _ = child.stdin.take().unwrap().write_all(msg.as_bytes());
    child.wait_with_output().expect("vram-doctor ends")
}

#[test]
fn a_closed_stdout_ends_every_command_quietly_with_status_1() {
    for args in COMMANDS {
        // The reading end is closed before the command starts: its first write fails.
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let o = run(args, writer);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            !err.contains("error:"),
            "{args:?}: a closed pipe is not an error to report: {err}"
        );
    }
}

#[test]
fn a_full_stdout_is_named_and_exits_1() {
    for args in COMMANDS {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full, which Linux always has");
        let o = run(args, full);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("error: cannot write to stdout"),
            "{args:?}: {err}"
        );
    }
}
