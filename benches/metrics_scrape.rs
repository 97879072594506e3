//! Cost of the exporter (`vram-doctor monitor --serve`): rendering `/metrics` for a full
//! 8-GPU machine (done once per sample, off the scrape path) and one whole scrape over
//! loopback (connect, request, the text, close), which the issue bounds at 1 ms.
//! Run: `cargo bench --bench metrics_scrape`. Figures: README, "Watching a cluster".

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use vram_doctor::telemetry::prometheus::http::{self, Url};
use vram_doctor::telemetry::prometheus::{Exporter, Limits, exporter};
use vram_doctor::telemetry::{
    MemorySample, ProcessSample, Session, Snapshot, Source, demo::DemoSource,
};

/// Eight cards with 32 processes each: the process series' bound per GPU, every label filled.
fn busy_machine() -> Snapshot {
    let mut s = DemoSource::new(3).sample();
    let template = s.gpus[0].clone();
    s.gpus = (0..8)
        .map(|i| {
            let mut g = template.clone();
            g.index = i;
            g.uuid = Some(format!("GPU-5f2e9c1a-0000-4000-8000-00000000000{i}"));
            g.memory = Some(MemorySample {
                total: 80 << 30,
                used: 70 << 30,
                reserved: Some(559 << 20),
                used_includes_reserved: false,
            });
            g.processes = Some(
                (0..32)
                    .map(|p| ProcessSample {
                        pid: 10_000 + p,
                        name: Some(format!("python train_{p}.py --config big.yaml")),
                        used: Some(u64::from(p + 1) << 28),
                        ..ProcessSample::default()
                    })
                    .collect(),
            );
            g
        })
        .collect();
    s
}

fn bench(c: &mut Criterion) {
    let mut session = Session::default();
    session.push(busy_machine());
    c.bench_function("render_metrics_8_gpus_256_processes", |b| {
        b.iter(|| black_box(exporter::render(&session, None)))
    });

    let e = Exporter::start("127.0.0.1:0", Limits::default()).expect("listen on loopback");
    let text = exporter::render(&session, None);
    let size = text.len();
    e.publish(text);
    let url = Url::parse(&format!("http://{}/metrics", e.local_addr())).unwrap();
    let r = http::get(&url, Duration::from_secs(2), 1 << 20).unwrap();
    assert_eq!((r.status, r.body.len()), (200, size), "a whole scrape");
    c.bench_function("scrape_over_loopback_8_gpus", |b| {
        b.iter(|| black_box(http::get(&url, Duration::from_secs(2), 1 << 20).unwrap()))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
