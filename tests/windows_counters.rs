//! Windows' GPU counters from a recording (`tests/data/windows-counters/game-spill.csv`, typeperf's
//! CSV; how it was made is in its `make_recording.py`) replayed through the code the live
//! Windows source uses (`pdh::CountersSource`: grouping by adapter, names from
//! `\Process(*)\ID Process`, the merge into NVML's GPUs), here with the fake NVML reporting per-process
//! memory as "not available", as NVML does under WDDM. The monitor's process table then shows the
//! game's own dedicated and shared memory.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;

use std::path::Path;
use vram_doctor::telemetry::nvml::NvmlSource;
use vram_doctor::telemetry::pdh::{CountersSource, RecordedCounters};
use vram_doctor::telemetry::{Source, SourceKind, SourceState, pdh_csv};

const MIB: u64 = 1 << 20;

fn recording() -> pdh_csv::Recording {
    pdh_csv::read(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/windows-counters/game-spill.csv"),
    )
    .expect("the recording reads")
}

/// `vram-doctor monitor --once --counters CSV EXTRA…`.
fn monitor_once(csv: &Path, extra: &[&std::ffi::OsStr]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(["monitor", "--once", "--counters"])
        .arg(csv)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn the_recording_reads_whole() {
    let r = recording();
    assert_eq!(r.samples.len(), 12);
    assert_eq!(r.ignored_columns, 0);
    let times: Vec<u64> = r.samples.iter().map(|(t, _)| *t).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    // 12/01/2026 21:14:05 W. Europe Standard Time (bias -60) is 20:14:05 UTC.
    assert_eq!((times[0] / 1000) % 86_400, 20 * 3600 + 14 * 60 + 5);
    let (_, last) = &r.samples[11];
    assert!(
        !last.process_ids.iter().any(|(n, _)| n == "chrome#1"),
        "an exited process's blank cells are left out"
    );
}

#[test]
fn the_game_shows_its_dedicated_and_shared_memory_merged_with_nvml() {
    // The RTX 4060 of the recording as NVML sees it under WDDM: the game listed, its memory not.
    let fake = fake_nvml::FakeNvml::new(
        "gpu0.name = NVIDIA GeForce RTX 4060\n\
         gpu0.total_mib = 8188\n\
         gpu0.used_mib = 7200\n\
         gpu0.gprocs = 9120:1:Cyberpunk2077.exe,1234:1:dwm.exe\n\
         gpu0.proc_mem_na = 1\n",
    );
    let mut source = CountersSource::new(
        Some(NvmlSource::new(Some(fake.lib.clone()))),
        Box::new(RecordedCounters::new(recording())),
        SourceKind::Windows,
    );
    let mut shared_seen = Vec::new();
    let mut n = 0;
    loop {
        let s = source.sample();
        if source.finished() {
            assert_eq!(s.state, SourceState::Ended);
            break;
        }
        n += 1;
        assert_eq!(s.state, SourceState::Ok, "{s:?}");
        assert_eq!(s.gpus.len(), 2, "the RTX 4060 and the integrated GPU");
        let g = &s.gpus[0];
        assert_eq!(g.name, "NVIDIA GeForce RTX 4060");
        let procs = g.processes.as_ref().unwrap();
        let game = procs.iter().find(|p| p.pid == 9120).expect("the game");
        assert_eq!(
            game.name.as_deref(),
            Some("Cyberpunk2077.exe"),
            "NVML's name kept"
        );
        let ded = game.used.expect("dedicated memory from the counters");
        let sh = game.shared.expect("shared memory from the counters");
        assert!((5800 * MIB..=7380 * MIB).contains(&ded), "{ded}");
        shared_seen.push(sh);
        // Processes NVML did not list come from the counters, named by \Process(*)\ID Process.
        let chrome = procs.iter().find(|p| p.pid == 3344).expect("chrome");
        assert_eq!(chrome.name.as_deref(), Some("chrome"));
        assert!(
            g.shared.unwrap().used >= sh,
            "the GPU's shared memory includes the game's"
        );
        let igpu = &s.gpus[1];
        assert_eq!(
            igpu.memory.unwrap().total,
            0,
            "the counters give no capacity"
        );
        assert!(igpu.uuid.as_deref().unwrap().starts_with("luid-"));
    }
    assert_eq!(n, 12);
    assert!(
        shared_seen.windows(2).all(|w| w[0] < w[1]) && shared_seen[11] > shared_seen[0] * 5,
        "the spill into shared memory grows: {shared_seen:?}"
    );
}

#[test]
fn the_monitor_replays_a_recording_with_each_process_dedicated_and_shared() {
    let csv =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/windows-counters/game-spill.csv");
    let out = monitor_once(&csv, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let game = text
        .lines()
        .find(|l| l.contains("Cyberpunk2077"))
        .unwrap_or_else(|| panic!("the game's row: {text}"));
    // Sample 0: 5800 MiB dedicated, 256 MiB shared.
    assert!(
        game.contains("9120") && game.contains("5.66 GiB") && game.contains("+ 256 MiB shared"),
        "{game}"
    );
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(["monitor", "--once", "--counters", "Cargo.toml"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("not a typeperf CSV") && err.lines().count() == 1,
        "{err}"
    );
}

/// The real capture (`tests/data/windows-counters/README.md`): typeperf's console output on a
/// German Windows 11 with an RX 7900 XT, no NVML (an AMD card).
fn real_capture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/windows-counters/rx7900xt-typeperf-console.csv")
}

#[test]
fn a_real_capture_from_the_console_replays_through_the_same_code() {
    let r = pdh_csv::read(&real_capture()).expect("the console output reads");
    assert_eq!(
        r.samples.len(),
        1,
        "the German closing messages are not samples"
    );
    assert!(!r.time_zone_known, "the console header names no zone");
    // 07/05/2026 12:34:28.096, read as UTC.
    assert_eq!(
        r.samples[0].0 % 86_400_000,
        (12 * 3600 + 34 * 60 + 28) * 1000 + 96
    );
    let mut source =
        CountersSource::new(None, Box::new(RecordedCounters::new(r)), SourceKind::Replay);
    let s = source.sample();
    assert_eq!(s.state, SourceState::Ok, "{s:?}");
    assert_eq!(
        s.gpus.len(),
        1,
        "the idle software adapter is left out: {s:?}"
    );
    let g = &s.gpus[0];
    assert_eq!(g.uuid.as_deref(), Some("luid-0x00000000_0x679bdd95"));
    assert_eq!(g.memory.unwrap().used, 5_764_141_056);
    assert_eq!(
        g.processes, None,
        "no per-process counters were recorded: unknown, not none"
    );
    assert_eq!(source.sample().state, SourceState::Ended);

    let out = monitor_once(&real_capture(), &[]);
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{err}");
    assert!(
        text.contains("5.37 GiB in use (capacity not reported)")
            && text.contains("processes: not available"),
        "{text}"
    );
    assert!(err.contains("does not name its time zone"), "{err}");
}

#[test]
fn with_a_game_plan_the_table_draws_its_budget_for_the_games_process() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("cyberpunk.toml");
    std::fs::write(
        &plan,
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"cyberpunk-2077\"\n\
         [run]\ntask = \"game\"\nresolution = \"1440p\"\nother_processes_gib = 1.0\n",
    )
    .unwrap();
    let csv =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/windows-counters/game-spill.csv");
    let out = monitor_once(&csv, &["--workload".as_ref(), plan.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("planned: cyberpunk needs "), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("game budget for one process"))
        .unwrap_or_else(|| panic!("the budget line: {text}"));
    // The counters give no card size: the planned RTX 4060's 8 GiB, less the planned 1 GiB of
    // other programs and the desktop's 0.4 GiB = 6.60 GiB; sample 0's game holds 5800 MiB, 958 MiB
    // below it.
    assert!(
        line.contains("6.60 GiB of 8.00 GiB (the planned card's size")
            && line.contains("Cyberpunk2077 (pid 9120)")
            && line.contains("5.66 GiB dedicated + 256 MiB shared: 958 MiB left"),
        "{line}"
    );
}
