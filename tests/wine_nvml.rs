//! The Windows build's NVML path under Wine, against a fake `nvml.dll` built with MinGW from the
//! same source as the Linux tests' fake `libnvidia-ml.so.1` (tests/fake_nvml/fake_nvml.c): one
//! snapshot under Wine equals the Linux build's on the same scenario (but for its time), and
//! Windows' GPU performance counters, which Wine does not have, are reported as not available
//! in one note while NVML's readings still come through.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/wine.rs"]
mod wine;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use vram_doctor::telemetry::{Snapshot, SourceKind};

/// Two GPUs; per-process memory "not available" on GPU 1, as NVML reports it under WDDM.
const SCENARIO: &str = "gpus = 2\n\
    gpu0.name = Fake RTX 4090\n\
    gpu0.used_mib = 20000\n\
    gpu0.procs = 4242:18000:python.exe,77:900:Cyberpunk2077.exe\n\
    gpu1.name = Fake RTX 4060\n\
    gpu1.total_mib = 8188\n\
    gpu1.used_mib = 7000\n\
    gpu1.gprocs = 5150:6500:Game.exe\n\
    gpu1.proc_mem_na = 1\n";

/// The fake `nvml.dll`, built once per test binary.
fn fake_dll() -> Result<&'static Path, &'static str> {
    static DLL: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DLL.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wine/fake_nvml");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let out = dir.join("nvml.dll");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_nvml/fake_nvml.c");
        wine::build_dll(&[&src], &[], &out)?;
        Ok(out)
    })
    .as_deref()
    .map_err(String::as_str)
}

/// A private copy of the DLL beside its scenario, as the Linux fake is used.
fn dll_with(scenario: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let dll = dir.path().join("nvml.dll");
    std::fs::copy(fake_dll().expect("build the fake nvml.dll"), &dll).unwrap();
    std::fs::write(dir.path().join("fake_nvml_scenario.txt"), scenario).unwrap();
    (dir, dll)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn snapshot(out: &Output) -> Snapshot {
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    serde_json::from_str(text(&out.stdout).trim()).expect("one JSON snapshot")
}

#[test]
fn one_snapshot_under_wine_equals_the_linux_one() {
    let Some(w) = wine::wine() else { return };
    let (_dir, dll) = dll_with(SCENARIO);
    let win = w.run(&[
        "monitor",
        "--once",
        "--json",
        "--nvml-lib",
        &wine::Wine::windows_path(&dll),
    ]);
    let linux_fake = fake_nvml::FakeNvml::new(SCENARIO);
    let linux = Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(["monitor", "--once", "--json", "--nvml-lib"])
        .arg(&linux_fake.lib)
        .output()
        .unwrap();
    let (mut a, mut b) = (snapshot(&win), snapshot(&linux));
    assert_eq!(a.source, SourceKind::Nvml);
    assert_eq!(a.gpus.len(), 2, "{a:?}");
    // Wine has no GPU counters: the Windows build's snapshot says so, the Linux one has no
    // such counters to miss.
    assert!(
        a.notes.len() == 1 && a.notes[0].contains("performance counters are not available"),
        "{:?}",
        a.notes
    );
    assert!(b.notes.is_empty(), "{:?}", b.notes);
    a.notes.clear();
    (a.time_ms, b.time_ms) = (0, 0);
    assert_eq!(a, b, "Wine and Linux read the same fake GPUs differently");
    let g1 = &a.gpus[1];
    let game = &g1.processes.as_ref().unwrap()[0];
    assert_eq!(
        (game.name.as_deref(), game.used),
        (Some("Game.exe"), None),
        "WDDM: NVML knows the process but not its memory"
    );
}

#[test]
fn without_gpu_counters_the_monitor_says_so_and_reads_nvml() {
    let Some(w) = wine::wine() else { return };
    let (_dir, dll) = dll_with(SCENARIO);
    // Through the automatic choice of source (no --nvml-lib), as a user starts it.
    let out = w
        .command(&["monitor", "--once", "--json"])
        .env("VRAM_DOCTOR_NVML_LIB", wine::Wine::windows_path(&dll))
        .output()
        .unwrap();
    let s = snapshot(&out);
    assert_eq!(s.source, SourceKind::Nvml, "{s:?}");
    assert_eq!(s.gpus[0].name, "Fake RTX 4090");
    assert!(
        s.notes.iter().any(|n| n.contains("GPU Adapter Memory")),
        "each snapshot notes the missing counters: {:?}",
        s.notes
    );
    let err = text(&out.stderr);
    assert!(
        err.contains("performance counters are not available")
            && err.contains("GPU Adapter Memory"),
        "the missing counters are named: {err}"
    );
    assert!(
        !err.contains("panicked") && err.lines().count() == 1,
        "one clean note: {err}"
    );
    // Neither counters nor NVML: the usual no-GPU error, with the note, exit 1.
    let out = w
        .command(&["monitor", "--once", "--json"])
        .env("VRAM_DOCTOR_NVML_LIB", "Z:\\no\\such\\nvml.dll")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("performance counters are not available") && err.contains("no GPU to monitor"),
        "{err}"
    );
}
