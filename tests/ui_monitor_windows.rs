//! The monitor tab on Windows' GPU counters: the recording `tests/data/windows-counters/game-spill.csv`
//! replayed through `pdh::CountersSource` with the fake NVML reporting per-process memory as
//! not available (as under WDDM), and the planner's game plan. The process table shows the
//! game's dedicated and shared memory, and the plan's budget for one process is drawn for the
//! game's process; without the counters one note says why.
#![cfg(target_os = "linux")]

#[path = "common/fake_nvml.rs"]
mod fake_nvml;

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use std::path::Path;
use std::sync::{OnceLock, mpsc};
use std::time::Duration;
use vram_doctor::memory::WorkloadFile;
use vram_doctor::memory::any::AnyWorkload;
use vram_doctor::memory::game::{GameWorkload, generic};
use vram_doctor::telemetry::nvml::NvmlSource;
use vram_doctor::telemetry::pdh::{self, CountersSource, RecordedCounters};
use vram_doctor::telemetry::{Snapshot, Source, SourceKind, SourceState, pdh_csv};
use vram_doctor::ui::monitor::MonitorView;
use vram_doctor::units::{gib_to_bytes, human};

const MIB: u64 = 1 << 20;

/// The recording's RTX 4060 as NVML sees it under WDDM: the game listed, its memory not.
const RTX_4060: &str = "gpu0.name = NVIDIA GeForce RTX 4060\n\
    gpu0.total_mib = 8188\n\
    gpu0.used_mib = 7200\n\
    gpu0.gprocs = 9120:1:Cyberpunk2077.exe,1234:1:dwm.exe\n\
    gpu0.proc_mem_na = 1\n";

/// A game plan as the planner resolves it.
fn game(title: &str, other_gib: f64) -> GameWorkload {
    let text = format!(
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"{title}\"\n[run]\ntask = \"game\"\n\
         resolution = \"1440p\"\ntexture_quality = \"ultra\"\nother_processes_gib = {other_gib}\n"
    );
    let file = WorkloadFile::parse(&text, "test").unwrap();
    match vram_doctor::resolve::resolve_any(&file, Path::new("."), None).unwrap() {
        AnyWorkload::Game(g) => g,
        other => panic!("not a game: {other:?}"),
    }
}

/// Every reading of the recording, as the Windows source gives them.
fn replayed(fake: &fake_nvml::FakeNvml) -> Vec<Snapshot> {
    let rec = pdh_csv::read(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/windows-counters/game-spill.csv"),
    )
    .unwrap();
    let mut source = CountersSource::new(
        Some(NvmlSource::new(Some(fake.lib.clone()))),
        Box::new(RecordedCounters::new(rec)),
        SourceKind::Windows,
    );
    let mut out = Vec::new();
    loop {
        let s = source.sample();
        if source.finished() {
            return out;
        }
        out.push(s);
    }
}

fn harness(view: MonitorView) -> Harness<'static, MonitorView> {
    Harness::builder()
        .with_context_setup(vram_doctor::ui::install_fonts)
        .with_size([1000.0, 1200.0])
        .with_max_steps(10)
        .build_ui_state(|ui, v: &mut MonitorView| v.ui(ui, None), view)
}

fn shown_with(game: GameWorkload, readings: Vec<Snapshot>) -> Harness<'static, MonitorView> {
    let (tx, rx) = mpsc::channel();
    let mut v = MonitorView::default();
    v.connect(rx);
    v.game = Some(game);
    for s in readings {
        tx.send(s).unwrap();
    }
    let mut h = harness(v);
    h.run();
    h
}

#[test]
fn the_game_plans_budget_is_drawn_for_the_games_process() {
    let fake = fake_nvml::FakeNvml::new(RTX_4060);
    let readings = replayed(&fake);
    let last = readings.last().unwrap().clone();
    let g = &last.gpus[0];
    let total = g.memory.unwrap().total;
    let p = g
        .processes
        .as_ref()
        .unwrap()
        .iter()
        .find(|p| p.pid == 9120)
        .unwrap();
    let (used, shared) = (p.used.unwrap(), p.shared.unwrap());
    // A plan that leaves 1 GiB for other programs: the card less that and the desktop's reserve.
    let w = game("cyberpunk-2077", 1.0);
    let budget = total - gib_to_bytes(1.0) - gib_to_bytes(generic::OS_RESERVE_GIB);
    assert_eq!(w.budget_on(total), budget);
    assert!(
        used > budget,
        "the recording's game ends above this budget: {used} vs {budget}"
    );
    let h = shown_with(w, readings);
    // The process table: the game marked, its dedicated and shared memory from the counters.
    h.get_by_label("Cyberpunk2077.exe (the game)");
    h.get_by_label(&human(used));
    h.get_by_label(&human(shared));
    // The budget line, on this card (8188 MiB).
    assert_eq!(total, 8188 * MIB);
    h.get_by_label(&format!(
        "The game plan's budget for one process on this card: {}",
        human(budget)
    ));
    h.get_by_label(&format!(
        "Cyberpunk2077.exe: {} dedicated of {}, + {} shared",
        human(used),
        human(budget),
        human(shared)
    ));
    h.get_by_label_contains(&format!(
        "Over the game's budget by {}",
        human(used - budget)
    ));
    assert!(
        h.query_by_label_contains("Taken as the game").is_none(),
        "found by its name"
    );
}

#[test]
fn a_plan_whose_title_runs_nowhere_takes_the_largest_process_and_says_so() {
    let fake = fake_nvml::FakeNvml::new(RTX_4060);
    let readings = replayed(&fake);
    let first = readings[0].clone();
    let used = first.gpus[0]
        .processes
        .as_ref()
        .unwrap()
        .iter()
        .find(|p| p.pid == 9120)
        .and_then(|p| p.used)
        .unwrap();
    // Only the first reading: the game still within the plan's budget.
    let w = game("hogwarts-legacy", 0.0);
    let budget = w.budget_on(8188 * MIB);
    assert!(used < budget);
    let h = shown_with(w, vec![first]);
    h.get_by_label("Cyberpunk2077.exe (the game)");
    h.get_by_label(&format!(
        "{} left in the game's budget",
        human(budget - used)
    ));
    h.get_by_label(
        "Taken as the game: the process holding the most memory (none is named like Hogwarts Legacy)",
    );
}

static NO_COUNTERS_LIB: OnceLock<fake_nvml::FakeNvml> = OnceLock::new();

/// Windows without its GPU counters (Wine, an old driver), as `detect` opens it there.
fn nvml_without_counters() -> Result<Box<dyn Source>, SourceState> {
    let fake = NO_COUNTERS_LIB.get().expect("set by the test");
    Ok(Box::new(pdh::without_counters(
        NvmlSource::new(Some(fake.lib.clone())),
        pdh::unavailable(r"\GPU Adapter Memory(*)\Dedicated Usage: PDH_CSTATUS_NO_OBJECT"),
    )))
}

#[test]
fn without_the_counters_one_note_says_why_and_nvml_still_shows() {
    NO_COUNTERS_LIB.get_or_init(|| fake_nvml::FakeNvml::new(RTX_4060));
    let mut v = MonitorView::default();
    v.feed.detect = nvml_without_counters;
    let mut h = harness(v);
    let note = "the Windows GPU performance counters are not available";
    for _ in 0..250 {
        h.run();
        if h.query_by_label_contains(note).is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let shown = h.get_by_label_contains(note);
    let text = format!("{shown:?}");
    assert!(
        text.contains("PDH_CSTATUS_NO_OBJECT")
            && text.contains("each process's memory are not shown"),
        "{text}"
    );
    h.get_by_label("GPU 0: NVIDIA GeForce RTX 4060");
    // NVML names the game; its memory is unknown ("?"), and the note says why.
    h.get_by_label("Cyberpunk2077.exe");
    assert_eq!(
        h.query_all_by_label_contains(note).count(),
        1,
        "one note, not one per reading"
    );
}
