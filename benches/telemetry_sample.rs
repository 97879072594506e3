//! Cost of one telemetry sample: the NVML source (real nvml-wrapper code path) against the fake
//! `libnvidia-ml.so.1`, and the demo source. At 1 Hz the sampler's share of one core is the time
//! per sample divided by one second. Method and figures: README, "Monitor" section.
//! Run: `cargo bench --bench telemetry_sample`.

#[path = "../tests/common/fake_nvml.rs"]
mod fake_nvml;

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use vram_doctor::telemetry::demo::DemoSource;
use vram_doctor::telemetry::nvml::NvmlSource;
use vram_doctor::telemetry::{Session, Source};

/// A busy desktop: two GPUs, a training run and four other processes.
const SCENARIO: &str = "gpus = 2
gpu0.procs = 4242:18000:python,1201:260:Xorg,2417:410:firefox,3001:900:blender
gpu0.gprocs = 1201:260:Xorg,2417:410:firefox
gpu1.procs = 5000:2000:ollama
";

fn bench(c: &mut Criterion) {
    let fake = fake_nvml::FakeNvml::new(SCENARIO);
    let mut nvml = NvmlSource::new(Some(fake.lib.clone()));
    assert_eq!(nvml.sample().gpus.len(), 2, "the fake NVML answers");
    c.bench_function("nvml_sample_2_gpus", |b| {
        b.iter(|| black_box(nvml.sample()))
    });
    let after = nvml.sample();
    assert!(
        after.state.is_ok()
            && after.gpus[0]
                .processes
                .as_ref()
                .is_some_and(|p| p.len() == 4),
        "still sampling real data"
    );

    let mut demo = DemoSource::new(1);
    c.bench_function("demo_sample", |b| b.iter(|| black_box(demo.sample())));

    // What the monitor does with each snapshot besides reading it: its session (history,
    // detectors, alerts), after an hour of readings.
    let mut session = Session::default();
    let mut demo = DemoSource::new(2);
    for _ in 0..3600 {
        session.push(demo.sample());
    }
    c.bench_function("history_and_detectors_per_sample", |b| {
        b.iter(|| black_box(session.push(demo.sample())))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
