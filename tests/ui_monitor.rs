//! Monitor tab fed telemetry snapshots over a channel, as the sampler thread sends them.

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use std::sync::mpsc;
use std::time::Duration;
use vram_doctor::telemetry::{
    GpuSample, MemorySample, ProcessSample, Snapshot, Source, SourceKind, SourceState,
};
use vram_doctor::ui::monitor::MonitorView;

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
    }
}

fn no_gpu() -> Result<Box<dyn Source>, SourceState> {
    Err(SourceState::NoDriver("libnvidia-ml.so.1: not found".into()))
}

fn harness(view: MonitorView) -> Harness<'static, MonitorView> {
    Harness::builder()
        .with_context_setup(vram_doctor::ui::install_fonts)
        .with_size([1000.0, 900.0])
        .build_ui_state(|ui, v: &mut MonitorView| v.ui(ui, Some(20 * GIB)), view)
}

fn connected() -> (mpsc::Sender<Snapshot>, Harness<'static, MonitorView>) {
    let (tx, rx) = mpsc::channel();
    let mut v = MonitorView::default();
    v.connect(rx);
    let mut h = harness(v);
    h.run();
    (tx, h)
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
