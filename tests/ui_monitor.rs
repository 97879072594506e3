//! Monitor tab fed plain readings over a channel, as a sampler thread would.

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use std::sync::mpsc;
use vram_doctor::ui::monitor::{GpuReading, MonitorView, ProcessReading, Reading};

const GIB: u64 = 1 << 30;

fn reading(t_s: f64, used_gib: u64) -> Reading {
    Reading {
        t_s,
        gpus: vec![GpuReading {
            index: 0,
            name: "Test GPU".into(),
            used_bytes: used_gib * GIB,
            total_bytes: 24 * GIB,
            processes: vec![ProcessReading {
                pid: 4242,
                name: "python".into(),
                used_bytes: used_gib * GIB,
            }],
        }],
    }
}

fn harness() -> Harness<'static, MonitorView> {
    Harness::builder()
        .with_size([1000.0, 700.0])
        .build_ui_state(
            |ui, v: &mut MonitorView| v.ui(ui, Some(20 * GIB)),
            MonitorView::default(),
        )
}

#[test]
fn readings_from_the_channel_show_as_gpu_and_process_rows() {
    let (tx, rx) = mpsc::channel();
    let mut h = harness();
    h.state_mut().connect(rx);
    h.run();
    h.get_by_label("Waiting for the first reading from the GPU driver…");

    tx.send(reading(0.0, 6)).unwrap();
    tx.send(reading(1.0, 12)).unwrap();
    h.run();
    h.get_by_label("GPU 0: Test GPU");
    h.get_by_label("12.00 GiB of 24.00 GiB in use");
    h.get_by_label("python");
    h.get_by_label("4242");
    h.get_by_label("50%");
}

#[test]
fn pause_stops_taking_readings() {
    let (tx, rx) = mpsc::channel();
    let mut h = harness();
    h.state_mut().connect(rx);
    tx.send(reading(0.0, 6)).unwrap();
    h.run();
    h.get_by_label("Pause").click();
    h.run();
    assert!(h.state().paused);
    tx.send(reading(1.0, 18)).unwrap();
    h.run();
    h.get_by_label("6.00 GiB of 24.00 GiB in use");
    assert!(h.query_by_label("18.00 GiB of 24.00 GiB in use").is_none());
}
