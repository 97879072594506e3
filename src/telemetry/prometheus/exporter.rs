//! `vram-doctor monitor --serve`: the latest snapshot, the detectors' running episodes and the
//! planner's predicted peak as Prometheus metrics on `/metrics`.
//!
//! The text is rendered once per sample by whoever holds the sampler's receiver ([`render`],
//! then [`Exporter::publish`]), and a scrape only copies an `Arc<String>` out of a mutex held
//! for that copy: a scrape never waits on the GPU, and a slow or hostile client never holds
//! anything the sampler needs. Connections are capped, a request head is read within a
//! deadline and a size bound, and every answer closes the connection.
//!
//! Names follow the Prometheus naming conventions (prometheus/docs `content/docs/practices/
//! naming.md`: base units, `_bytes`, `_celsius`, `_ratio`, `_hertz`); each HELP text names the
//! DCGM-exporter field that measures the same thing, and the README has the full mapping.

use super::http;
use super::text::{CONTENT_TYPE, Writer};
use crate::telemetry::Session;
use crate::telemetry::detect::{AlertKind, Detectors};
use crate::telemetry::sample::{GpuSample, GpuStatus, ProcessKind, Snapshot, SourceKind};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The default listen address: loopback, so nothing is exposed unless the user names an
/// address. 9835 is the port nvidia_gpu_exporter uses, the one a GPU exporter is looked for at.
pub const DEFAULT_ADDR: &str = "127.0.0.1:9835";

/// Bounds on what clients can make the exporter do.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections being answered at once; more are told 503 at once.
    pub max_connections: usize,
    /// A request head larger than this is refused.
    pub max_head_bytes: usize,
    /// The whole request head must arrive within this.
    pub read_timeout: Duration,
    pub write_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 16,
            max_head_bytes: 8 * 1024,
            read_timeout: Duration::from_secs(2),
            write_timeout: Duration::from_secs(5),
        }
    }
}

/// Process series per GPU, and in all: a GPU host with hundreds of short-lived processes
/// must not make the exporter's label sets unbounded.
pub const MAX_PROCESS_SERIES_PER_GPU: usize = 32;
pub const MAX_PROCESS_SERIES: usize = 256;
/// Process names longer than this are cut (a label value is stored with every sample).
const MAX_NAME_CHARS: usize = 128;

/// What a scrape gets before the first sample.
const NO_SAMPLE: &str = "# vram-doctor: no sample yet\n";

/// The text a scrape serves, swapped whole at each sample.
type Slot = Arc<Mutex<Arc<String>>>;

/// The HTTP server thread. Dropping it stops the server.
/// Why the metrics server could not start: an address that is not one (the user's), or the
/// system refusing to listen there or to start the server (the machine's).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `ADDR` does not parse or resolve as host:port: the user gives another.
    #[error("cannot listen on {addr}: {source}")]
    Address {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    /// The address is in use, not this machine's, or not permitted.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the metrics server thread: {0}")]
    Thread(#[source] std::io::Error),
}

impl ServeError {
    /// True when the input is at fault, false when the system is.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, ServeError::Address { .. })
    }
}

pub struct Exporter {
    addr: SocketAddr,
    slot: Slot,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Exporter {
    /// Listens on `addr` (`host:port`; port 0 picks a free one, see [`Exporter::local_addr`]).
    pub fn start(addr: &str, limits: Limits) -> Result<Exporter, ServeError> {
        let shown = || crate::printable::printable_cut(addr, 120);
        // Resolved first, so an address that is not one is told from one the system refuses.
        let at: Vec<SocketAddr> = addr
            .to_socket_addrs()
            .map_err(|source| ServeError::Address {
                addr: shown(),
                source,
            })?
            .collect();
        let listen = |source| ServeError::Listen {
            addr: shown(),
            source,
        };
        let listener = TcpListener::bind(&at[..]).map_err(listen)?;
        let local = listener.local_addr().map_err(listen)?;
        let slot: Slot = Arc::new(Mutex::new(Arc::new(String::from(NO_SAMPLE))));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (slot.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("metrics-server".into())
            .spawn(move || serve(&listener, &s, &st, limits))
            .map_err(ServeError::Thread)?;
        Ok(Exporter {
            addr: local,
            slot,
            stop,
            thread: Some(thread),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Makes `text` what the next scrapes get.
    pub fn publish(&self, text: String) {
        let text = Arc::new(text);
        if let Ok(mut s) = self.slot.lock() {
            *s = text;
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept call with a connection of our own.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(listener: &TcpListener, slot: &Slot, stop: &AtomicBool, limits: Limits) {
    let active = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut stream) = conn else { continue };
        if active.load(Ordering::SeqCst) >= limits.max_connections {
            // A short write into an empty socket buffer: never blocks for long.
            stream
                .set_write_timeout(Some(Duration::from_millis(100)))
                .ok();
            let _ = http::respond(
                &mut stream,
                "503 Service Unavailable",
                "text/plain",
                b"too many connections\n",
                false,
            );
            continue;
        }
        active.fetch_add(1, Ordering::SeqCst);
        let (slot, active2) = (slot.clone(), active.clone());
        let spawned = std::thread::Builder::new()
            .name("metrics-conn".into())
            .spawn(move || {
                answer(&mut stream, &slot, limits);
                active2.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            active.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn answer(stream: &mut TcpStream, slot: &Slot, limits: Limits) {
    stream.set_write_timeout(Some(limits.write_timeout)).ok();
    let head = http::read_request_head(stream, limits.max_head_bytes, limits.read_timeout).ok();
    // An unreadable head and an unparsable request line get the same answer.
    let Some((method, target)) = head.as_deref().and_then(http::request_line) else {
        let _ = http::respond(
            stream,
            "400 Bad Request",
            "text/plain",
            b"bad request\n",
            false,
        );
        return;
    };
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        let _ = http::respond(
            stream,
            "405 Method Not Allowed",
            "text/plain",
            b"only GET\n",
            false,
        );
        return;
    }
    let path = target.split('?').next().unwrap_or("");
    match path {
        "/metrics" => {
            let text = slot.lock().map(|s| s.clone()).ok();
            let body = text.as_deref().map_or("", String::as_str);
            let _ = http::respond(stream, "200 OK", CONTENT_TYPE, body.as_bytes(), head_only);
        }
        "/" => {
            let _ = http::respond(
                stream,
                "200 OK",
                "text/plain; charset=utf-8",
                b"vram-doctor exporter: metrics at /metrics\n",
                head_only,
            );
        }
        _ => {
            let _ = http::respond(stream, "404 Not Found", "text/plain", b"not found\n", false);
        }
    }
}

/// The planner's estimate for the workload the user loaded with `--workload`.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    /// The workload's name (its file's stem).
    pub workload: String,
    /// What the card must hold at the peak: the process plus other programs, bytes.
    pub peak_bytes: u64,
}

/// A per-GPU gauge: name, HELP text (with the DCGM-exporter equivalent) and its value.
type GpuGauge = (&'static str, &'static str, fn(&GpuSample) -> Option<f64>);

const GPU_GAUGES: &[GpuGauge] = &[
    (
        "vram_doctor_gpu_up",
        "1 while the GPU answers, 0 once it fell off the bus (NVML GPU_IS_LOST).",
        |g| Some(if g.status == GpuStatus::Ok { 1.0 } else { 0.0 }),
    ),
    (
        "vram_doctor_gpu_memory_total_bytes",
        "Dedicated memory of the card, bytes (DCGM: DCGM_FI_DEV_FB_TOTAL, MiB).",
        |g| g.memory.map(|m| m.total as f64),
    ),
    (
        "vram_doctor_gpu_memory_used_bytes",
        "Memory allocated by processes, bytes; counts the reserved memory too on drivers before R510 (DCGM: DCGM_FI_DEV_FB_USED, MiB).",
        |g| g.memory.map(|m| m.used as f64),
    ),
    (
        "vram_doctor_gpu_memory_reserved_bytes",
        "Memory held by the driver and firmware, bytes (DCGM: DCGM_FI_DEV_FB_RESERVED, MiB).",
        |g| {
            g.memory
                .and_then(|m| m.reserved.filter(|_| !m.used_includes_reserved))
                .map(|r| r as f64)
        },
    ),
    (
        "vram_doctor_gpu_memory_free_bytes",
        "Memory no one holds: total minus used minus reserved, bytes (DCGM: DCGM_FI_DEV_FB_FREE, MiB).",
        |g| g.memory.map(|m| m.free() as f64),
    ),
    (
        "vram_doctor_gpu_shared_memory_used_bytes",
        "System memory the GPU borrows (Windows shared GPU memory, AMD GTT), bytes; absent where the driver does not say (no DCGM field).",
        |g| g.shared.map(|s| s.used as f64),
    ),
    (
        "vram_doctor_gpu_shared_memory_total_bytes",
        "System memory the GPU may borrow at most, bytes (no DCGM field).",
        |g| g.shared.and_then(|s| s.total).map(|t| t as f64),
    ),
    (
        "vram_doctor_gpu_utilization_ratio",
        "Fraction of time a kernel ran, 0 to 1 (DCGM: DCGM_FI_DEV_GPU_UTIL, percent).",
        |g| g.util_gpu_pct.map(|v| f64::from(v) / 100.0),
    ),
    (
        "vram_doctor_gpu_memory_bus_utilization_ratio",
        "Fraction of time the memory controller was busy, 0 to 1; not capacity (DCGM: DCGM_FI_DEV_MEM_COPY_UTIL, percent).",
        |g| g.util_mem_pct.map(|v| f64::from(v) / 100.0),
    ),
    (
        "vram_doctor_gpu_temperature_celsius",
        "GPU temperature, degrees Celsius (DCGM: DCGM_FI_DEV_GPU_TEMP).",
        |g| g.temp_c.map(f64::from),
    ),
    (
        "vram_doctor_gpu_power_watts",
        "Power draw, watts (DCGM: DCGM_FI_DEV_POWER_USAGE).",
        |g| g.power_w,
    ),
    (
        "vram_doctor_gpu_power_limit_watts",
        "Power limit, watts (DCGM: DCGM_FI_DEV_POWER_MGMT_LIMIT).",
        |g| g.power_limit_w,
    ),
    (
        "vram_doctor_gpu_clock_graphics_hertz",
        "Graphics clock, hertz (DCGM: DCGM_FI_DEV_SM_CLOCK, MHz).",
        |g| g.clock_graphics_mhz.map(|v| f64::from(v) * 1e6),
    ),
    (
        "vram_doctor_gpu_clock_memory_hertz",
        "Memory clock, hertz (DCGM: DCGM_FI_DEV_MEM_CLOCK, MHz).",
        |g| g.clock_mem_mhz.map(|v| f64::from(v) * 1e6),
    ),
    (
        "vram_doctor_gpu_pcie_receive_bytes_per_second",
        "PCIe traffic into the GPU, bytes per second, as NVML averages it over 20 ms (DCGM: DCGM_FI_PROF_PCIE_RX_BYTES).",
        |g| g.pcie_rx_kbps.map(|v| f64::from(v) * 1000.0),
    ),
    (
        "vram_doctor_gpu_pcie_transmit_bytes_per_second",
        "PCIe traffic out of the GPU, bytes per second (DCGM: DCGM_FI_PROF_PCIE_TX_BYTES).",
        |g| g.pcie_tx_kbps.map(|v| f64::from(v) * 1000.0),
    ),
];

/// The alert gauges' `kind` label, for each detector with an episode (a returning GPU is an
/// event, not a state, and has no gauge).
const ALERT_KINDS: [(AlertKind, &str); 6] = [
    (AlertKind::NearCapacity, "near_capacity"),
    (AlertKind::SteadyGrowth, "leak"),
    (AlertKind::LikelySpill, "spill"),
    (AlertKind::OtherProcesses, "other_processes"),
    (AlertKind::Throttling, "throttling"),
    (AlertKind::GpuLost, "gpu_lost"),
];

fn source_label(k: SourceKind) -> &'static str {
    match k {
        SourceKind::None => "none",
        SourceKind::Nvml => "nvml",
        SourceKind::Amd => "amd",
        SourceKind::Windows => "windows",
        SourceKind::Demo => "demo",
        SourceKind::Replay => "replay",
        SourceKind::Prometheus => "prometheus",
    }
}

/// The GPU's identity labels: its index, and its UUID where known.
fn ids(g: &GpuSample) -> (String, &str) {
    (g.index.to_string(), g.uuid.as_deref().unwrap_or(""))
}

fn gpu_labels<'a>(index: &'a str, uuid: &'a str) -> Vec<(&'static str, &'a str)> {
    let mut l = vec![("gpu", index)];
    if !uuid.is_empty() {
        l.push(("uuid", uuid));
    }
    l
}

/// The whole `/metrics` text for the session's latest snapshot and its running episodes.
pub fn render(session: &Session, predicted: Option<&Predicted>) -> String {
    let Some(snap) = session.latest() else {
        return NO_SAMPLE.into();
    };
    let detectors = session.detectors();
    let mut w = Writer::with_capacity(4096 + snap.gpus.len() * 4096);
    w.family(
        "vram_doctor_source_up",
        "1 when the GPU source answered the last sample, 0 when it reported a problem.",
    );
    w.sample(
        "vram_doctor_source_up",
        &[("source", source_label(snap.source))],
        if snap.state.is_ok() { 1.0 } else { 0.0 },
    );
    w.family(
        "vram_doctor_last_sample_timestamp_seconds",
        "When the last sample was taken, Unix time in seconds.",
    );
    w.sample(
        "vram_doctor_last_sample_timestamp_seconds",
        &[],
        snap.time_ms as f64 / 1000.0,
    );
    let ids: Vec<(String, &str)> = snap.gpus.iter().map(ids).collect();
    w.family(
        "vram_doctor_gpu_info",
        "Always 1; the GPU's name as a label (DCGM: the modelName label).",
    );
    for (g, (i, u)) in snap.gpus.iter().zip(&ids) {
        let mut l = gpu_labels(i, u);
        l.push(("name", &g.name));
        w.sample("vram_doctor_gpu_info", &l, 1.0);
    }
    for (name, help, value) in GPU_GAUGES {
        let values: Vec<(usize, f64)> = snap
            .gpus
            .iter()
            .enumerate()
            .filter_map(|(n, g)| value(g).map(|v| (n, v)))
            .collect();
        if values.is_empty() {
            continue;
        }
        w.family(name, help);
        for (n, v) in values {
            w.sample(name, &gpu_labels(&ids[n].0, ids[n].1), v);
        }
    }
    processes(&mut w, snap, &ids);
    alerts(&mut w, snap, &ids, detectors);
    if let Some(p) = predicted {
        w.family(
            "vram_doctor_workload_predicted_peak_bytes",
            "The planner's predicted peak for the loaded workload (process plus other programs), bytes.",
        );
        w.sample(
            "vram_doctor_workload_predicted_peak_bytes",
            &[("workload", &p.workload)],
            p.peak_bytes as f64,
        );
    }
    w.finish()
}

fn processes(w: &mut Writer, snap: &Snapshot, ids: &[(String, &str)]) {
    const NAME: &str = "vram_doctor_process_memory_used_bytes";
    let mut written = 0usize;
    let mut dropped = 0usize;
    let mut header = false;
    for (g, (i, u)) in snap.gpus.iter().zip(ids) {
        let Some(procs) = &g.processes else { continue };
        let mut procs: Vec<_> = procs.iter().filter(|p| p.used.is_some()).collect();
        procs.sort_by_key(|p| std::cmp::Reverse(p.used));
        for (n, p) in procs.iter().enumerate() {
            if n >= MAX_PROCESS_SERIES_PER_GPU || written >= MAX_PROCESS_SERIES {
                dropped += 1;
                continue;
            }
            if !header {
                w.family(
                    NAME,
                    "Dedicated memory one process holds on the GPU, bytes; the largest processes only (see vram_doctor_process_series_dropped).",
                );
                header = true;
            }
            let pid = p.pid.to_string();
            let name: String = p
                .name
                .as_deref()
                .unwrap_or("?")
                .chars()
                .take(MAX_NAME_CHARS)
                .collect();
            let kind = match p.kind {
                ProcessKind::Compute => "compute",
                ProcessKind::Graphics => "graphics",
                ProcessKind::Both => "compute+graphics",
            };
            let mut l = gpu_labels(i, u);
            l.extend([("pid", pid.as_str()), ("process", &name), ("type", kind)]);
            w.sample(NAME, &l, p.used.unwrap_or(0) as f64);
            written += 1;
        }
    }
    w.family(
        "vram_doctor_process_series_dropped",
        "Processes holding memory that were left out to keep the number of series bounded.",
    );
    w.sample("vram_doctor_process_series_dropped", &[], dropped as f64);
}

fn alerts(w: &mut Writer, snap: &Snapshot, ids: &[(String, &str)], detectors: &Detectors) {
    let active: Vec<_> = snap
        .gpus
        .iter()
        .map(|g| detectors.active(&g.key()))
        .collect();
    w.family(
        "vram_doctor_alert",
        "1 while a detector's finding lasts on the GPU, else 0; kind: near_capacity, leak, spill, other_processes, throttling, gpu_lost.",
    );
    for ((i, u), a) in ids.iter().zip(&active) {
        for (kind, label) in ALERT_KINDS {
            let mut l = gpu_labels(i, u);
            l.push(("kind", label));
            w.sample(
                "vram_doctor_alert",
                &l,
                if a.kinds.contains(&kind) { 1.0 } else { 0.0 },
            );
        }
    }
    let leaks: Vec<(usize, f64)> = active
        .iter()
        .enumerate()
        .filter_map(|(n, a)| a.growth_bytes_per_s.map(|s| (n, s)))
        .collect();
    if leaks.is_empty() {
        return;
    }
    w.family(
        "vram_doctor_leak_growth_bytes_per_second",
        "While the leak alert lasts: how fast the memory floor rises, bytes per second.",
    );
    for &(n, slope) in &leaks {
        w.sample(
            "vram_doctor_leak_growth_bytes_per_second",
            &gpu_labels(&ids[n].0, ids[n].1),
            slope,
        );
    }
    w.family(
        "vram_doctor_leak_eta_seconds",
        "While the leak alert lasts: seconds until the card is full at the current rate.",
    );
    for &(n, slope) in &leaks {
        let free = snap.gpus[n].memory.map_or(0, |m| m.free()) as f64;
        if slope > 0.0 {
            w.sample(
                "vram_doctor_leak_eta_seconds",
                &gpu_labels(&ids[n].0, ids[n].1),
                free / slope,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::families::Families;
    use super::super::text::parse;
    use super::*;
    use crate::telemetry::sample::{MemorySample, ProcessSample, SharedMemory, SourceState};
    use std::io::{Read, Write};

    fn gpu(i: u32) -> GpuSample {
        GpuSample {
            index: i,
            uuid: Some(format!("GPU-{i}")),
            name: format!("Card \"{i}\""),
            memory: Some(MemorySample {
                total: 24 << 30,
                used: 3 << 30,
                reserved: Some(300 << 20),
                used_includes_reserved: false,
            }),
            shared: Some(SharedMemory {
                used: 1 << 30,
                total: Some(16 << 30),
            }),
            util_gpu_pct: Some(37),
            util_mem_pct: Some(12),
            temp_c: Some(54),
            power_w: Some(123.5),
            power_limit_w: Some(450.0),
            clock_graphics_mhz: Some(2520),
            clock_mem_mhz: Some(10501),
            pcie_rx_kbps: Some(65536),
            pcie_tx_kbps: Some(2048),
            processes: Some(vec![ProcessSample {
                pid: 42,
                name: Some("python \"train\".py".into()),
                used: Some(2 << 30),
                ..ProcessSample::default()
            }]),
            ..GpuSample::default()
        }
    }

    /// A session that has seen `s` (and nothing before).
    fn session(s: &Snapshot) -> Session {
        let mut session = Session::default();
        session.push(s.clone());
        session
    }

    fn snap(gpus: Vec<GpuSample>) -> Snapshot {
        Snapshot {
            time_ms: 1_700_000_000_123,
            source: SourceKind::Nvml,
            state: SourceState::Ok,
            gpus,
            notes: Vec::new(),
        }
    }

    /// What the exporter writes, the remote source reads back as the same sample: the table in
    /// presets/prometheus.toml and the exporter's names cannot drift apart.
    #[test]
    fn rendered_metrics_read_back_through_the_family_table() {
        let s = snap(vec![gpu(0), gpu(1)]);
        let text = render(&session(&s), None);
        let f = Families::builtin();
        let series = parse(&text, |_| true, 10_000).unwrap();
        for se in &series {
            assert!(
                f.knows(&se.name)
                    || se.name.starts_with("vram_doctor_alert")
                    || se.name.starts_with("vram_doctor_source")
                    || se.name.starts_with("vram_doctor_last")
                    || se.name.starts_with("vram_doctor_process_series"),
                "{} is not in presets/prometheus.toml",
                se.name
            );
        }
        let back = f.assemble(
            &series
                .into_iter()
                .filter(|s| f.knows(&s.name))
                .collect::<Vec<_>>(),
            "host:1",
        );
        for (b, g) in back.iter().zip(&s.gpus) {
            let mut want = g.clone();
            want.host = Some("host:1".into());
            assert_eq!(*b, want);
        }
    }

    #[test]
    fn alert_gauges_and_predicted_peak() {
        let mut full = gpu(0);
        full.memory = Some(MemorySample {
            total: 100 << 30,
            used: 99 << 30,
            reserved: None,
            used_includes_reserved: false,
        });
        let s = session(&snap(vec![full]));
        assert!(s.alerts().iter().any(|a| a.kind == AlertKind::NearCapacity));
        let p = Predicted {
            workload: "llama".into(),
            peak_bytes: 5 << 30,
        };
        let text = render(&s, Some(&p));
        assert!(
            text.contains("vram_doctor_alert{gpu=\"0\",uuid=\"GPU-0\",kind=\"near_capacity\"} 1\n")
        );
        assert!(text.contains("vram_doctor_alert{gpu=\"0\",uuid=\"GPU-0\",kind=\"leak\"} 0\n"));
        assert!(text.contains(
            "vram_doctor_workload_predicted_peak_bytes{workload=\"llama\"} 5368709120\n"
        ));
        assert!(
            text.contains("process=\"python \\\"train\\\".py\""),
            "{text}"
        );
    }

    #[test]
    fn process_series_are_capped() {
        let mut g = gpu(0);
        g.processes = Some(
            (0..100)
                .map(|pid| ProcessSample {
                    pid,
                    name: Some("x".repeat(500)),
                    used: Some(u64::from(pid) << 20),
                    ..ProcessSample::default()
                })
                .collect(),
        );
        let text = render(&session(&snap(vec![g.clone(); 10])), None);
        let series = parse(
            &text,
            |n| n == "vram_doctor_process_memory_used_bytes",
            10_000,
        )
        .unwrap();
        assert_eq!(series.len(), MAX_PROCESS_SERIES);
        assert!(
            series
                .iter()
                .all(|s| s.label("process").unwrap().len() == MAX_NAME_CHARS)
        );
        // The largest processes are the ones kept.
        assert_eq!(series[0].label("pid"), Some("99"));
        assert!(text.contains(&format!(
            "vram_doctor_process_series_dropped {}\n",
            1000 - MAX_PROCESS_SERIES
        )));
    }

    fn exchange(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(request).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn an_address_that_is_not_one_is_told_from_one_that_is_taken() {
        let Err(e) = Exporter::start("not an address", Limits::default()) else {
            panic!("listening on 'not an address'");
        };
        assert!(e.is_bad_input(), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("cannot listen on not an address: "),
            "{e}"
        );
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = taken.local_addr().unwrap().to_string();
        let Err(e) = Exporter::start(&at, Limits::default()) else {
            panic!("listening on {at}, which is taken");
        };
        assert!(matches!(e, ServeError::Listen { .. }), "{e:?}");
        assert!(!e.is_bad_input());
    }

    #[test]
    fn serves_metrics_refuses_the_rest_and_a_silent_client_does_not_block_others() {
        let limits = Limits {
            max_connections: 2,
            read_timeout: Duration::from_millis(300),
            ..Limits::default()
        };
        let e = Exporter::start("127.0.0.1:0", limits).unwrap();
        let addr = e.local_addr();
        e.publish("m 1\n".into());
        let ok = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains(CONTENT_TYPE) && ok.ends_with("\r\n\r\nm 1\n"),
            "{ok}"
        );
        assert!(exchange(addr, b"GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(exchange(addr, b"POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(exchange(addr, b"\x16\x03\x01\x00\r\n\r\n").starts_with("HTTP/1.1 400"));
        let huge = format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
        assert!(exchange(addr, huge.as_bytes()).starts_with("HTTP/1.1 400"));
        // Two silent clients take both slots; a third is told 503 at once, and after the read
        // timeout the slots are free again.
        let _a = TcpStream::connect(addr).unwrap();
        let _b = TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let t = std::time::Instant::now();
        assert!(exchange(addr, b"GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 503"));
        assert!(t.elapsed() < Duration::from_secs(1));
        std::thread::sleep(Duration::from_millis(600));
        e.publish("m 2\n".into());
        assert!(exchange(addr, b"GET /metrics HTTP/1.1\r\n\r\n").ends_with("m 2\n"));
        drop(e);
        assert!(TcpStream::connect(addr).is_err(), "stopped");
    }
}
