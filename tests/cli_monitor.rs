//! `vram-doctor monitor` end to end: the real binary, the fake NVML, the demo, record and replay.

// The fake NVML is built as an ELF shared object with GNU linker flags: Linux only.
#[cfg(target_os = "linux")]
#[path = "common/fake_nvml.rs"]
mod fake_nvml;

#[cfg(target_os = "linux")]
use fake_nvml::FakeNvml;

#[cfg(target_os = "linux")]
#[path = "common/fake_amd.rs"]
mod fake_amd;
use std::process::{Command, Output};
use vram_doctor::telemetry::{Snapshot, SourceKind};

fn monitor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .arg("monitor")
        .args(args)
        .output()
        .expect("run vram-doctor")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
#[cfg(target_os = "linux")]
fn once_json_prints_one_snapshot_of_the_fake_gpu() {
    let fake = FakeNvml::new(
        "gpu0.name = Fake RTX 4090\ngpu0.used_mib = 8000\ngpu0.procs = 4242:6000:python\n",
    );
    let out = monitor(&["--once", "--json", "--nvml-lib", fake.lib.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1);
    let s: Snapshot = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(s.source, SourceKind::Nvml);
    assert_eq!(s.gpus[0].name, "Fake RTX 4090");
    assert_eq!(s.gpus[0].memory.unwrap().used, 8000 << 20);
}

#[test]
#[cfg(target_os = "linux")]
fn table_shows_gpus_processes_and_alerts() {
    let fake = FakeNvml::new(
        "gpu0.name = Fake RTX 4090\ngpu0.used_mib = 23900\ngpu0.procs = 4242:19000:python,99:4000:chrome\n",
    );
    let out = monitor(&[
        "--count",
        "2",
        "--interval",
        "0.1",
        "--nvml-lib",
        fake.lib.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(
        t.contains("NVIDIA (NVML)") && t.contains("Fake RTX 4090") && t.contains("python"),
        "{t}"
    );
    assert_eq!(
        t.matches("vram-doctor monitor -").count(),
        2,
        "two frames: {t}"
    );
    assert!(
        t.contains("ALERT") && t.contains("full"),
        "near-capacity alert: {t}"
    );
    assert!(
        t.contains("chrome (pid 99"),
        "other-process alert names chrome: {t}"
    );
}

#[test]
#[cfg(target_os = "linux")]
fn without_a_gpu_it_says_so_and_suggests_the_demo() {
    // No NVML library where the system's would be (the environment names a missing one, as a
    // machine without the driver): no GPU, exit 1.
    let out = Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(["monitor", "--once"])
        .env("VRAM_DOCTOR_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
        .output()
        .expect("run vram-doctor");
    assert_eq!(out.status.code(), Some(1));
    let e = text(&out.stderr);
    assert!(
        e.contains("no GPU to monitor") && e.contains("--demo"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    // The same missing library named by the flag is bad input: the path, exit 2.
    let out = monitor(&["--once", "--nvml-lib", "/nonexistent/libnvidia-ml.so.1"]);
    assert_eq!(out.status.code(), Some(2));
    let e = text(&out.stderr);
    assert!(
        e.contains("--nvml-lib /nonexistent/libnvidia-ml.so.1"),
        "{e}"
    );
    let fake = FakeNvml::new("init_rc = 4\n");
    let out = monitor(&["--once", "--nvml-lib", fake.lib.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("permission"),
        "{}",
        text(&out.stderr)
    );
}

/// `--serve` on a port another program holds is the machine's refusal, not a bad flag: exit 1,
/// one line naming the address (it was 2 while the exporter's error was text).
#[test]
fn a_taken_serve_port_exits_1() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = taken.local_addr().unwrap().to_string();
    let out = monitor(&["--demo", "--count", "1", "--serve", &at]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("cannot listen on {at}")), "{err}");
}

#[test]
fn bad_flags_exit_2() {
    for args in [
        &["--interval", "0"][..],
        &["--interval", "fast"],
        &["--count", "0"],
        &["--bogus"],
        &["--demo", "--replay", "x.jsonl"],
        &["--replay", "/nonexistent/rec.jsonl"],
        &["--demo", "--count", "1", "--serve", "not an address"],
    ] {
        let out = monitor(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(!text(&out.stderr).is_empty());
    }
}

#[test]
fn demo_record_then_replay_both_formats() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["rec.csv", "rec.jsonl"] {
        let path = dir.path().join(name);
        let p = path.to_str().unwrap();
        let out = monitor(&[
            "--demo",
            "--seed",
            "5",
            "--count",
            "3",
            "--interval",
            "0.1",
            "--json",
            "--record",
            p,
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let live: Vec<Snapshot> = text(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(
            live.iter()
                .all(|s| s.source == SourceKind::Demo && s.gpus[0].name.starts_with("DEMO"))
        );
        let out = monitor(&["--replay", p, "--json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let replayed: Vec<Snapshot> = text(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(replayed.len(), 3, "{name}");
        for (r, l) in replayed.iter().zip(&live) {
            assert_eq!(r.source, SourceKind::Replay);
            assert_eq!((r.time_ms, &r.gpus), (l.time_ms, &l.gpus), "{name}");
        }
    }
    // Recording refuses to append to a file that is not a recording.
    let foreign = dir.path().join("notes.csv");
    std::fs::write(&foreign, "keep me\n").unwrap();
    let out = monitor(&["--demo", "--once", "--record", foreign.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&foreign).unwrap(), "keep me\n");
    // A file the system cannot create is its failure (exit 1), not a refusal of the name.
    let nowhere = dir.path().join("no such folder").join("r.jsonl");
    let out = monitor(&["--demo", "--once", "--record", nowhere.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--record") && err.contains("cannot open"),
        "{err}"
    );
}

#[test]
#[cfg(target_os = "linux")]
fn auto_detection_finds_the_library_named_in_the_environment() {
    let fake = FakeNvml::new("gpu0.name = Found By Detect\n");
    let out = Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(["monitor", "--once", "--json"])
        .env("VRAM_DOCTOR_NVML_LIB", &fake.lib)
        .output()
        .expect("run vram-doctor");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s: Snapshot = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(
        (s.source, s.gpus[0].name.as_str()),
        (SourceKind::Nvml, "Found By Detect")
    );
}

#[test]
#[cfg(target_os = "linux")]
fn a_machine_with_nvidia_and_amd_cards_shows_both() {
    let fake = FakeNvml::new("gpu0.name = Fake RTX 4090\ngpu0.used_mib = 8000\n");
    let dir = tempfile::tempdir().unwrap();
    fake_amd::SECOND_VENDOR.write(&dir.path().join("drm"));
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
            .arg("monitor")
            .args(args)
            .env("VRAM_DOCTOR_NVML_LIB", &fake.lib)
            .env("VRAM_DOCTOR_DRM_ROOT", dir.path().join("drm"))
            .output()
            .expect("run vram-doctor");
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let table = run(&["--once"]);
    assert!(
        table.contains("NVIDIA (NVML) + AMD (sysfs)")
            && table.contains("0   Fake RTX 4090")
            && table.contains("1   AMD GPU 1002:744C"),
        "{table}"
    );
    let s: Snapshot = serde_json::from_str(run(&["--once", "--json"]).trim()).unwrap();
    let gpus: Vec<(&str, Option<SourceKind>)> =
        s.gpus.iter().map(|g| (g.name.as_str(), g.source)).collect();
    assert_eq!(
        gpus,
        [
            ("Fake RTX 4090", None),
            ("AMD GPU 1002:744C", Some(SourceKind::Amd))
        ]
    );
}
