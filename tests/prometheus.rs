//! Prometheus end to end, with the real thing: Debian's `prometheus` server (installed by
//! `.ci/run`) on a loopback port, scraping `vram-doctor monitor --serve` on the fake NVML and a
//! DCGM-exporter fixture this test serves; values and alerts are read back through its query
//! API, by hand and through the monitor's remote source, including after the server restarts.
//! Without the `prometheus` binary the tests say so, and fail under CI=true.

// The fake NVML is built as an ELF shared object with GNU linker flags: Linux only.
#![cfg(target_os = "linux")]

#[path = "common/fake_nvml.rs"]
mod fake_nvml;

use fake_nvml::FakeNvml;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};
use vram_doctor::telemetry::detect::AlertKind;
use vram_doctor::telemetry::prometheus::PrometheusSource;
use vram_doctor::telemetry::prometheus::http::{self, Url, encode_query};
use vram_doctor::telemetry::{Session, Source, SourceState};

const MIB: u64 = 1 << 20;
const DCGM_HOST: &str = "gpu-node-b";

/// The fake GPUs: GPU 0 nearly full (23500 + 300 of 24564 MiB = 95 %), GPU 1 idle.
const SCENARIO: &str = "gpus = 2\n\
    gpu0.used_mib = 23500\n\
    gpu0.procs = 4242:20000:python \"train\".py,77:1500:Xorg\n\
    gpu1.used_mib = 2048\n";

/// True when the binary is there; otherwise says so (and fails under CI=true).
fn have_prometheus() -> bool {
    if Command::new("prometheus")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        return true;
    }
    let msg = "the `prometheus` binary is missing (Debian package `prometheus`; .ci/run installs it): the tests against a real Prometheus server did not run";
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
    eprintln!("SKIPPED: {msg}");
    false
}

/// A free loopback port (for Prometheus, which takes a port, not a listening socket).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `vram-doctor monitor --serve 127.0.0.1:0` on the fake NVML; killed on drop.
struct ExporterProcess {
    child: Child,
    addr: SocketAddr,
    stdout: Option<ChildStdout>,
    _fake: FakeNvml,
}

impl ExporterProcess {
    fn start(interval: &str, extra: &[&str]) -> ExporterProcess {
        let fake = FakeNvml::new(SCENARIO);
        let mut child = Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
            .args(["monitor", "--serve", "127.0.0.1:0", "--interval", interval])
            .arg("--nvml-lib")
            .arg(&fake.lib)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start vram-doctor monitor --serve");
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        err.read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("serving Prometheus metrics at http://")
            .and_then(|r| r.strip_suffix("/metrics"))
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .parse()
            .unwrap();
        // Keep draining stderr so the child never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            let _ = err.read_to_string(&mut sink);
        });
        let stdout = child.stdout.take();
        ExporterProcess {
            child,
            addr,
            stdout,
            _fake: fake,
        }
    }
}

impl Drop for ExporterProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Serves the DCGM-exporter fixture on loopback until the test ends.
fn dcgm_fixture() -> SocketAddr {
    let body = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/prometheus/dcgm_exporter.txt"),
    )
    .unwrap();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = s.read(&mut buf);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(body.as_bytes());
        }
    });
    addr
}

/// A Prometheus server on loopback with a temp config and storage; killed on drop.
struct PrometheusServer {
    child: Option<Child>,
    port: u16,
    config: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
}

impl PrometheusServer {
    fn start(targets: &[SocketAddr]) -> PrometheusServer {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: gpus\n    static_configs:\n      - targets: [{}]\n",
                list.join(", ")
            ),
        )
        .unwrap();
        let data = dir.path().join("data");
        let mut p = PrometheusServer {
            child: None,
            port: free_port(),
            config,
            data,
            _dir: dir,
        };
        p.spawn();
        p
    }

    fn spawn(&mut self) {
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", self.config.display()))
            .arg(format!("--storage.tsdb.path={}", self.data.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{}", self.port))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        self.child = Some(child);
        let ready = self.url().with_path("/-/ready");
        wait_for("prometheus to be ready", Duration::from_secs(30), || {
            http::get(&ready, Duration::from_secs(1), 1 << 16).is_ok_and(|r| r.status == 200)
        });
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn url(&self) -> Url {
        Url::parse(&format!("http://127.0.0.1:{}", self.port)).unwrap()
    }

    /// An instant query: each result's labels and value.
    fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64)> {
        let u = self
            .url()
            .with_path(&format!("/api/v1/query?query={}", encode_query(promql)));
        let r = http::get(&u, Duration::from_secs(5), 16 << 20).expect("query prometheus");
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["status"], "success", "{v}");
        v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let value = r["value"][1].as_str().unwrap().parse().unwrap();
                (r["metric"].clone(), value)
            })
            .collect()
    }
}

impl Drop for PrometheusServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ok() {
        assert!(
            t.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn value_where(rows: &[(serde_json::Value, f64)], key: &str, val: &str) -> Option<f64> {
    rows.iter().find(|(m, _)| m[key] == val).map(|(_, v)| *v)
}

#[test]
fn prometheus_scrapes_both_and_the_monitor_reads_two_hosts_back_and_survives_a_restart() {
    if !have_prometheus() {
        return;
    }
    let exporter = ExporterProcess::start("0.5", &[]);
    let dcgm = dcgm_fixture();
    let mut prom = PrometheusServer::start(&[exporter.addr, dcgm]);
    wait_for("both targets up", Duration::from_secs(30), || {
        let up = prom.query("up == 1");
        up.len() == 2
            && !prom.query("vram_doctor_alert").is_empty()
            && !prom.query("DCGM_FI_DEV_FB_USED").is_empty()
    });

    // Through Prometheus' own API: our names, values, escaped labels and the alert gauge.
    let used = prom.query("vram_doctor_gpu_memory_used_bytes");
    assert_eq!(value_where(&used, "gpu", "0"), Some((23500 * MIB) as f64));
    assert_eq!(value_where(&used, "gpu", "1"), Some((2048 * MIB) as f64));
    let procs = prom.query("vram_doctor_process_memory_used_bytes");
    assert_eq!(
        value_where(&procs, "process", "python \"train\".py"),
        Some((20000 * MIB) as f64),
        "{procs:?}"
    );
    let near = prom.query("vram_doctor_alert{kind=\"near_capacity\"}");
    assert_eq!(value_where(&near, "gpu", "0"), Some(1.0), "{near:?}");
    assert_eq!(value_where(&near, "gpu", "1"), Some(0.0));
    let fb = prom.query("DCGM_FI_DEV_FB_USED");
    assert_eq!(value_where(&fb, "gpu", "1"), Some(79000.0));

    // The monitor's remote source: four GPUs on two hosts, in bytes, with history from the
    // range query, and the same detectors as for local GPUs.
    let mut src = PrometheusSource::open(&format!("http://127.0.0.1:{}", prom.port)).unwrap();
    // The range query's steps are 3 s apart: wait (bounded) until one step has both hosts.
    let mut back = Vec::new();
    wait_for(
        "a range step with both hosts",
        Duration::from_secs(20),
        || {
            back = src.backfill(Duration::from_secs(1));
            back.iter()
                .any(|s| s.gpus.iter().filter(|g| g.memory.is_some()).count() == 4)
        },
    );
    let s = src.sample();
    assert_eq!(s.state, SourceState::Ok);
    let exporter_host = exporter.addr.to_string();
    let hosts: Vec<(&str, u32)> = s
        .gpus
        .iter()
        .map(|g| (g.host.as_deref().unwrap(), g.index))
        .collect();
    let mut want = vec![
        (exporter_host.as_str(), 0),
        (exporter_host.as_str(), 1),
        (DCGM_HOST, 0),
        (DCGM_HOST, 1),
    ];
    want.sort();
    assert_eq!(hosts, want);
    let g = |host: &str, i: u32| {
        s.gpus
            .iter()
            .find(|g| g.host.as_deref() == Some(host) && g.index == i)
            .unwrap()
    };
    let full = g(DCGM_HOST, 1);
    let m = full.memory.unwrap();
    assert_eq!((m.used, m.reserved), (79000 * MIB, Some(559 * MIB)));
    assert_eq!(m.total, (79000 + 2000 + 559) * MIB);
    assert_eq!(full.name, "NVIDIA H100 80GB HBM3");
    assert_eq!(full.temp_c, None, "no temperature series: not reported");
    assert_eq!(g(DCGM_HOST, 0).temp_c, Some(41));
    let ours = g(&exporter_host, 0);
    assert_eq!(ours.memory.unwrap().used, 23500 * MIB);
    assert_eq!(ours.memory.unwrap().total, 24564 * MIB);
    assert_eq!(ours.name, "Fake NVIDIA GeForce RTX 4090 #0");
    assert!(
        ours.processes
            .as_ref()
            .unwrap()
            .iter()
            .any(|p| p.pid == 4242 && p.used == Some(20000 * MIB))
    );
    let mut session = Session::default();
    let mut alerts = Vec::new();
    for snap in back.iter().chain([&s]) {
        alerts.extend(session.push(snap.clone()));
    }
    let full_ones: Vec<&str> = alerts
        .iter()
        .filter(|a| a.kind == AlertKind::NearCapacity)
        .map(|a| a.gpu.as_str())
        .collect();
    assert!(
        full_ones.contains(&full.uuid.as_deref().unwrap())
            && full_ones.contains(&ours.uuid.as_deref().unwrap())
            && full_ones.len() == 2,
        "{full_ones:?}"
    );

    // The server goes away: a clear state, every GPU still listed with nothing reported.
    prom.stop();
    let gone = src.sample();
    let SourceState::Unreachable(why) = &gone.state else {
        panic!("{:?}", gone.state)
    };
    assert!(why.contains(&prom.port.to_string()), "{why}");
    assert_eq!(gone.gpus.len(), 4);
    assert!(gone.gpus.iter().all(|g| g.memory.is_none()));
    session.push(gone);

    // It comes back (same storage): the source finds it again on its own.
    prom.spawn();
    wait_for(
        "the remote source to read again",
        Duration::from_secs(60),
        || {
            let s = src.sample();
            let back = s.state == SourceState::Ok
                && s.gpus.iter().filter(|g| g.memory.is_some()).count() == 4;
            session.push(s);
            back
        },
    );
    let h = session
        .history()
        .gpu(full.uuid.as_deref().unwrap())
        .unwrap();
    assert!(
        h.recent().iter().any(|p| p.used.is_none()),
        "the outage is a gap in the history"
    );
    assert!(h.last().unwrap().used.is_some());
}

#[test]
fn an_exporter_endpoint_is_read_directly_without_a_server() {
    let exporter = ExporterProcess::start("0.5", &[]);
    let dcgm = dcgm_fixture();
    let url = format!("http://{}/metrics", exporter.addr);
    let mut ours = PrometheusSource::open(&url).unwrap();
    let mut s = ours.sample();
    // The exporter's first text is published with its first sample.
    let t = Instant::now();
    while s.gpus.is_empty() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
        s = ours.sample();
    }
    assert_eq!(s.state, SourceState::Ok);
    assert_eq!(s.gpus.len(), 2);
    assert_eq!(
        s.gpus[0].host.as_deref(),
        Some(exporter.addr.to_string().as_str())
    );
    assert_eq!(s.gpus[0].memory.unwrap().used, 23500 * MIB);
    assert_eq!(s.gpus[1].util_gpu_pct, Some(37));
    let mut d = PrometheusSource::open(&format!("http://{dcgm}/metrics")).unwrap();
    let s = d.sample();
    assert_eq!(s.gpus.len(), 2);
    assert!(s.gpus.iter().all(|g| g.host.as_deref() == Some(DCGM_HOST)));
    assert_eq!(s.gpus[0].clock_graphics_mhz, Some(1980));
    // The CLI on the same endpoint: hosts as groups, the missing temperature as a dash.
    let out = Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(["monitor", "--once", "--prometheus"])
        .arg(format!("http://{dcgm}/metrics"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains(&format!("host {DCGM_HOST}\n")), "{text}");
    assert!(text.contains("NVIDIA H100 80GB HBM3"), "{text}");
}

#[test]
fn the_cli_says_when_the_server_is_not_there() {
    let out = Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(["monitor", "--once", "--prometheus"])
        .arg(format!("http://127.0.0.1:{}", free_port()))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("does not answer") && text.contains("next try"),
        "{text}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(["monitor", "--prometheus", "https://prom.example:9090"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("https is not supported"));
}

/// 100 scrapes a second for 10 s against the exporter, on loopback; the sampler's readings
/// (printed with --json) keep their cadence. Prints the figures the README quotes.
#[test]
fn load_100_scrapes_a_second_leaves_the_sampler_cadence_alone() {
    let interval_ms = 200u64;
    let mut exporter = ExporterProcess::start("0.2", &["--json"]);
    let stdout = exporter.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            if tx
                .send((Instant::now(), v["time_ms"].as_u64().unwrap()))
                .is_err()
            {
                break;
            }
        }
    });
    // Let it settle: the first reading is out.
    rx.recv_timeout(Duration::from_secs(10)).unwrap();
    while rx.try_recv().is_ok() {}
    let url = Url::parse(&format!("http://{}/metrics", exporter.addr)).unwrap();
    let start = Instant::now();
    let mut latencies = Vec::with_capacity(1000);
    for i in 0..1000u32 {
        let due = start + Duration::from_millis(u64::from(i) * 10);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let t = Instant::now();
        let r = http::get(&url, Duration::from_secs(2), 1 << 20).expect("scrape");
        latencies.push(t.elapsed());
        assert_eq!(r.status, 200);
        assert!(r.body.starts_with(b"# HELP vram_doctor_source_up"));
    }
    let took = start.elapsed();
    let readings: Vec<(Instant, u64)> = rx.try_iter().collect();
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() - 1) as f64 * p) as usize];
    let gaps: Vec<u64> = readings.windows(2).map(|w| w[1].1 - w[0].1).collect();
    let max_gap = gaps.iter().copied().max().unwrap_or(0);
    let expected = took.as_millis() as u64 / interval_ms;
    eprintln!(
        "load: 1000 scrapes in {:.2} s; latency p50 {:?}, p99 {:?}, max {:?}; sampler: {} readings (expected ~{expected}), largest gap {max_gap} ms at a {interval_ms} ms interval",
        took.as_secs_f64(),
        pct(0.5),
        pct(0.99),
        latencies.last().unwrap(),
        readings.len()
    );
    assert!(
        took < Duration::from_secs(12),
        "the scrapes fell behind: {took:?}"
    );
    assert!(
        readings.len() as u64 + 3 >= expected,
        "the sampler slowed down: {} readings in {took:?}",
        readings.len()
    );
    assert!(
        max_gap <= interval_ms + 150,
        "a reading came {max_gap} ms after the one before"
    );
    assert!(pct(0.99) < Duration::from_millis(50), "p99 {:?}", pct(0.99));
}
