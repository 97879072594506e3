//! Monitor tab fed telemetry snapshots over a channel, as the sampler thread sends them.

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;
use vram_doctor::telemetry::demo::DemoSource;
use vram_doctor::telemetry::replay::ReplaySource;
use vram_doctor::telemetry::{
    GpuSample, MemorySample, ProcessSample, Snapshot, Source, SourceKind, SourceState,
};
use vram_doctor::ui::files::Dialogs;
use vram_doctor::ui::monitor::MonitorView;

#[path = "common/app.rs"]
mod common_app;
use common_app::Picks;

#[cfg(target_os = "linux")]
#[path = "common/fake_nvml.rs"]
mod fake_nvml;

#[cfg(target_os = "linux")]
#[path = "common/fake_amd.rs"]
mod fake_amd;

const GIB: u64 = 1 << 30;

fn snapshot(t_s: u64, used_gib: u64) -> Snapshot {
    Snapshot {
        time_ms: 1_000_000 + t_s * 1000,
        source: SourceKind::Replay,
        state: SourceState::Ok,
        gpus: vec![GpuSample {
            index: 0,
            name: "Test GPU".into(),
            memory: Some(MemorySample {
                total: 24 * GIB,
                used: used_gib * GIB,
                ..Default::default()
            }),
            processes: Some(vec![ProcessSample {
                pid: 4242,
                name: Some("python".into()),
                used: Some(used_gib * GIB),
                ..Default::default()
            }]),
            ..Default::default()
        }],
        notes: Vec::new(),
    }
}

fn no_gpu() -> Result<Box<dyn Source>, SourceState> {
    Err(SourceState::NoDriver("libnvidia-ml.so.1: not found".into()))
}

fn harness(view: MonitorView) -> Harness<'static, MonitorView> {
    // Up to 10 frames to settle: a reading from the sampler thread can land in the same run as
    // the sizing frames of the plots' legend areas (seen once in a full-suite run).
    Harness::builder()
        .with_context_setup(vram_doctor::ui::install_fonts)
        .with_size([1000.0, 900.0])
        .with_max_steps(10)
        .build_ui_state(|ui, v: &mut MonitorView| v.ui(ui, Some(20 * GIB)), view)
}

fn connected() -> (mpsc::Sender<Snapshot>, Harness<'static, MonitorView>) {
    connected_with_dialog(PathBuf::from("unused.jsonl"))
}

fn connected_with_dialog(path: PathBuf) -> (mpsc::Sender<Snapshot>, Harness<'static, MonitorView>) {
    let (tx, rx) = mpsc::channel();
    let mut v = MonitorView::default();
    v.connect(rx);
    v.dialogs = Dialogs(Box::new(Picks(path)));
    let mut h = harness(v);
    h.run();
    (tx, h)
}

/// Runs frames until a label containing `text` shows (work on other threads lands), or fails.
fn wait_for(h: &mut Harness<'static, MonitorView>, text: &str) {
    for _ in 0..250 {
        h.run();
        if h.query_by_label_contains(text).is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    h.get_by_label_contains(text);
}

#[test]
fn snapshots_show_as_gpu_and_process_rows() {
    let (tx, mut h) = connected();
    h.get_by_label("Waiting for the first reading from the GPU driver…");
    tx.send(snapshot(0, 6)).unwrap();
    tx.send(snapshot(1, 12)).unwrap();
    h.run();
    h.get_by_label("GPU 0: Test GPU");
    h.get_by_label("12.00 GiB of 24.00 GiB in use");
    h.get_by_label("python");
    h.get_by_label("4242");
    h.get_by_label("50%");
}

#[test]
fn an_alert_appears_when_memory_ramps_to_full() {
    let (tx, mut h) = connected();
    for t in 0..5 {
        tx.send(snapshot(t, 10 + t)).unwrap();
    }
    h.run();
    assert!(
        h.query_by_label_contains("Test GPU: ").is_none(),
        "no alert at half full"
    );
    tx.send(snapshot(5, 23)).unwrap();
    h.run();
    h.get_by_label_contains("Test GPU: ");
}

#[test]
fn pause_stops_taking_readings() {
    let (tx, mut h) = connected();
    tx.send(snapshot(0, 6)).unwrap();
    h.run();
    h.get_by_label("Pause").click();
    h.run();
    assert!(h.state().paused);
    tx.send(snapshot(1, 18)).unwrap();
    h.run();
    h.get_by_label("6.00 GiB of 24.00 GiB in use");
    assert!(h.query_by_label("18.00 GiB of 24.00 GiB in use").is_none());
}

/// The machine the next test's detection looks at (a `Detect` is a plain function).
#[cfg(target_os = "linux")]
static MACHINE: std::sync::OnceLock<vram_doctor::telemetry::Probe> = std::sync::OnceLock::new();

#[cfg(target_os = "linux")]
fn two_vendors() -> Result<Box<dyn Source>, SourceState> {
    let probe = MACHINE.get().expect("the test sets the machine first");
    vram_doctor::telemetry::detect_all(probe).map(vram_doctor::telemetry::combined::Combined::of)
}

#[test]
#[cfg(target_os = "linux")]
fn an_nvidia_and_an_amd_card_in_one_machine_both_show() {
    let fake = fake_nvml::FakeNvml::new("gpu0.name = Fake RTX 4090\ngpu0.used_mib = 8000\n");
    let dir = tempfile::tempdir().unwrap();
    fake_amd::SECOND_VENDOR.write(&dir.path().join("drm"));
    MACHINE
        .set(vram_doctor::telemetry::Probe {
            nvml_lib: Some(fake.lib.clone()),
            drm_root: dir.path().join("drm"),
            proc_root: dir.path().join("proc"),
        })
        .unwrap();
    let mut v = MonitorView::default();
    v.feed.detect = two_vendors;
    let mut h = harness(v);
    wait_for(&mut h, "GPU 1: ");
    h.get_by_label("GPU 0: Fake RTX 4090");
    h.get_by_label("GPU 1: AMD GPU 1002:744C");
    h.get_by_label("2.00 GiB of 24.00 GiB in use");
    h.get_by_label("Source: NVIDIA (NVML) + AMD (sysfs)");
}

#[test]
fn without_a_gpu_it_says_why_and_offers_the_demo() {
    let mut v = MonitorView::default();
    v.feed.detect = no_gpu;
    let mut h = harness(v);
    h.run();
    h.get_by_label("No GPU readings");
    h.get_by_label_contains("libnvidia-ml.so.1: not found");
    h.get_by_label("Show demo data").click();
    // The demo source runs on the sampler thread; its first snapshot comes at once.
    for _ in 0..100 {
        h.run();
        if h.query_by_label_contains("GPU 0: ").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    h.get_by_label_contains("GPU 0: ");
    h.get_by_label_contains("Source: DEMO");
}

#[test]
fn small_plots_show_utilization_pcie_and_temperature_from_the_demo() {
    let (tx, mut h) = connected();
    let mut demo = DemoSource::new(5);
    // Past the demo's model load, so the PCIe traffic is in MB/s.
    let snaps: Vec<Snapshot> = (0..45).map(|_| demo.sample()).collect();
    let last = snaps.last().unwrap().gpus[0].clone();
    snaps.into_iter().for_each(|s| tx.send(s).unwrap());
    h.run();
    h.get_by_label(&format!(
        "Utilization: GPU {} %, memory controller {} %",
        last.util_gpu_pct.unwrap(),
        last.util_mem_pct.unwrap()
    ));
    h.get_by_label(&format!("Temperature: {} °C", last.temp_c.unwrap()));
    h.get_by_label_contains("PCIe traffic: to the GPU ");
    assert!(h.query_by_label_contains("not reported").is_none());
}

#[test]
fn a_metric_the_source_does_not_report_says_so() {
    let (tx, mut h) = connected();
    let mut s = snapshot(0, 6);
    s.gpus[0].util_gpu_pct = Some(40);
    tx.send(s).unwrap();
    h.run();
    h.get_by_label("Temperature: not reported");
    h.get_by_label("PCIe traffic: not reported");
    h.get_by_label("Utilization: 40 %");
}

#[test]
fn the_time_window_and_reset_view_buttons_work() {
    let (tx, mut h) = connected();
    tx.send(snapshot(0, 6)).unwrap();
    h.run();
    h.get_by_label("1 min").click();
    h.run();
    assert_eq!(
        h.state().span,
        vram_doctor::ui::monitor::Span::OneMinute,
        "window selector"
    );
    h.get_by_label("Reset view").click();
    h.run();
    h.get_by_label("GPU 0: Test GPU");
}

fn replay(path: &Path) -> Vec<Snapshot> {
    let mut r = ReplaySource::open(path).unwrap();
    let mut out = vec![];
    loop {
        let s = r.sample();
        if r.finished() {
            assert_eq!(r.skipped(), 0);
            return out;
        }
        out.push(s);
    }
}

#[test]
fn a_recording_holds_every_reading_and_opens_again() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.jsonl");
    let (tx, mut h) = connected_with_dialog(file.clone());
    tx.send(snapshot(0, 6)).unwrap();
    h.run();
    h.get_by_label("Record…").click();
    h.run();
    h.get_by_label_contains("Recording to ");
    let sent: Vec<Snapshot> = (1..=4).map(|t| snapshot(t, 6 + t)).collect();
    tx.send(sent[0].clone()).unwrap();
    tx.send(sent[1].clone()).unwrap();
    h.run();
    // Paused, and then on another tab: readings still reach the file.
    h.get_by_label("Pause").click();
    h.run();
    tx.send(sent[2].clone()).unwrap();
    h.run();
    tx.send(sent[3].clone()).unwrap();
    h.state_mut().hide();
    h.run();
    h.get_by_label("Stop recording").click();
    h.run();
    h.get_by_label(&format!(
        "Recording saved to {} (readings: 4)",
        file.display()
    ));

    let back = replay(&file);
    assert_eq!(back.len(), sent.len());
    for (b, s) in back.iter().zip(&sent) {
        assert_eq!((b.time_ms, &b.gpus), (s.time_ms, &s.gpus));
    }

    // The same file opened in the monitor replaces the live readings.
    h.get_by_label("Open recording…").click();
    wait_for(&mut h, "Opened ");
    h.get_by_label(&format!("Opened {} (readings: 4)", file.display()));
    h.get_by_label("Source: REPLAY of a recording");
    h.get_by_label("10.00 GiB of 24.00 GiB in use");
    h.get_by_label("Back to live");
}

#[test]
fn recording_into_a_file_that_is_not_a_recording_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.csv");
    std::fs::write(&file, "my,own,data\n").unwrap();
    let (tx, mut h) = connected_with_dialog(file.clone());
    tx.send(snapshot(0, 6)).unwrap();
    h.run();
    h.get_by_label("Record…").click();
    h.run();
    h.get_by_label_contains("Cannot record: ");
    h.get_by_label_contains("notes.csv exists and is not a vram-doctor CSV recording");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "my,own,data\n");
    h.get_by_label("Record…");
}

#[test]
fn a_malformed_recording_is_named_and_the_monitor_keeps_running() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("photo.jsonl");
    std::fs::write(&foreign, "\u{89}PNG not a recording\n").unwrap();
    let (tx, mut h) = connected_with_dialog(foreign.clone());
    tx.send(snapshot(0, 6)).unwrap();
    h.run();
    h.get_by_label("Open recording…").click();
    h.run();
    h.get_by_label_contains(&format!(
        "Cannot open the recording: {}: not a vram-doctor recording",
        foreign.display()
    ));
    // Still live: the next reading shows.
    tx.send(snapshot(1, 9)).unwrap();
    h.run();
    h.get_by_label("9.00 GiB of 24.00 GiB in use");

    // A recording with a damaged line: the good readings show, the line is named.
    let damaged = dir.path().join("damaged.jsonl");
    let good = serde_json::to_string(&snapshot(2, 7)).unwrap();
    std::fs::write(&damaged, format!("{good}\n{{\"time_ms\": \"noon\"}}\n")).unwrap();
    h.state_mut().dialogs = Dialogs(Box::new(Picks(damaged.clone())));
    h.get_by_label("Open recording…").click();
    wait_for(&mut h, "damaged lines skipped: 1");
    h.get_by_label_contains(&format!(
        "Opened {} (readings: 1; damaged lines skipped: 1, the first: line 2: ",
        damaged.display()
    ));
    h.get_by_label("7.00 GiB of 24.00 GiB in use");

    // Nothing readable at all: said so, naming the file and the line.
    let empty = dir.path().join("broken.jsonl");
    std::fs::write(&empty, "{\"time_ms\": \"noon\"}\n").unwrap();
    h.state_mut().dialogs = Dialogs(Box::new(Picks(empty.clone())));
    h.get_by_label("Open recording…").click();
    wait_for(&mut h, "holds no readings");
    h.get_by_label_contains(&format!(
        "{} holds no readings that can be read (line 1: ",
        empty.display()
    ));
    h.state_mut().feed.detect = no_gpu;
    h.get_by_label("Back to live").click();
    h.run();
    h.get_by_label("No GPU readings");
}

/// The monitor repaints only when a reading arrives: taking one must cost one frame, with no
/// follow-up frame requested by a widget whose size changed (the idle-CPU budget in the README
/// assumes one frame a second).
#[test]
fn a_new_reading_costs_one_frame() {
    let (tx, mut h) = connected();
    tx.send(snapshot(0, 6)).unwrap();
    h.run();
    for (t, used) in [(1, 12), (2, 7), (3, 23), (4, 9)] {
        let mut s = snapshot(t, used);
        s.gpus[0].util_gpu_pct = Some(used as u32 * 4);
        s.gpus[0].temp_c = Some(40 + used as u32);
        tx.send(s).unwrap();
        assert_eq!(h.run(), 1, "reading {t} took more than one frame");
        h.get_by_label(&format!("{used}.00 GiB of 24.00 GiB in use"));
    }
}
