//! `vram-doctor monitor`: a compact live view of every GPU, or one snapshot for scripts
//! (`--once --json`), with recording, replay and a demo source. Thin: sources, history,
//! detectors and recording live in `telemetry`.

use super::CliError;
use crate::memory::any::AnyWorkload;
use crate::memory::game::GameWorkload;
use crate::printable::printable;
use crate::telemetry::demo::DemoSource;
use crate::telemetry::detect::Alert;
use crate::telemetry::nvml::NvmlSource;
use crate::telemetry::pdh::{CountersSource, RecordedCounters};
use crate::telemetry::pdh_csv;
use crate::telemetry::prometheus::{
    self, Exporter, Limits, Predicted, PrometheusSource, ServeError,
};
use crate::telemetry::record::{DEFAULT_MAX_BYTES, Recorder};
use crate::telemetry::replay::ReplaySource;
use crate::telemetry::{
    FoundProcess, GpuSample, GpuStatus, ProcessKind, Sampler, Session, SessionConfig, Snapshot,
    Source, SourceKind, SourceState, detect,
};
use crate::units::human;
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Exit status when there is no GPU to monitor (not bad input: the flags were fine).
pub const EXIT_NO_GPU: u8 = super::EXIT_ENVIRONMENT;

/// Alerts listed under the table: the newest few, so the table keeps its place on screen.
const ALERTS_SHOWN: usize = 5;

#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Seconds between samples, 0.1 to 3600 [default: 1; a replay runs as fast as it prints].
    #[arg(long, value_parser = parse_interval)]
    pub interval: Option<f64>,
    /// Print one snapshot and exit.
    #[arg(long)]
    pub once: bool,
    /// Print JSON Lines (one snapshot per line) instead of the table; alerts go to stderr.
    #[arg(long)]
    pub json: bool,
    /// Stop after this many samples.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Also record every snapshot to FILE (`.csv` for CSV, anything else for JSON Lines).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Replay a recording made with --record instead of reading a GPU.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["demo", "nvml_lib"])]
    pub replay: Option<PathBuf>,
    /// Replay Windows GPU counters recorded with typeperf (its CSV: the command is in the
    /// README's "On Windows"): each process's dedicated and shared GPU memory, per adapter.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["replay", "demo", "nvml_lib", "prometheus"])]
    pub counters: Option<PathBuf>,
    /// Show synthetic demo data (for machines without a supported GPU).
    #[arg(long, conflicts_with = "nvml_lib")]
    pub demo: bool,
    /// Seed of the demo data.
    #[arg(long, default_value_t = 1, requires = "demo")]
    pub seed: u64,
    /// Load this NVML library instead of the system's (also: VRAM_DOCTOR_NVML_LIB).
    #[arg(long, value_name = "PATH")]
    pub nvml_lib: Option<PathBuf>,
    /// Read the GPUs of every host a Prometheus server knows (http://HOST:9090), or one
    /// exporter's endpoint (http://HOST:9400/metrics): DCGM-exporter, nvidia_gpu_exporter or
    /// vram-doctor metrics.
    #[arg(long, value_name = "URL", conflicts_with_all = ["replay", "demo", "nvml_lib"])]
    pub prometheus: Option<String>,
    /// Serve the readings, alerts and predicted peak as Prometheus metrics at
    /// http://ADDR/metrics [default ADDR: 127.0.0.1:9835]. The table is then shown only on a
    /// terminal.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = prometheus::DEFAULT_ADDR)]
    pub serve: Option<String>,
    /// A workload file (as `plan --workload`): the table names its planned peak, and for a
    /// game draws its budget for one process against the game's process; with --serve the
    /// peak is exported too.
    #[arg(long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
}

fn parse_interval(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if (0.1..=3600.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is outside 0.1 to 3600 seconds"))
    }
}

pub fn run(a: &MonitorArgs) -> ExitCode {
    match run_inner(a) {
        Ok(code) => code,
        Err(e) => super::fail(&e),
    }
}

fn no_gpu(state: &SourceState) -> ExitCode {
    let mut msg = state.message();
    if !msg.contains("--demo") {
        msg.push_str("; try `vram-doctor monitor --demo` to see how the monitor works");
    }
    eprintln!("error: no GPU to monitor: {msg}");
    ExitCode::from(EXIT_NO_GPU)
}

fn open_source(a: &MonitorArgs) -> Result<Result<Box<dyn Source>, SourceState>, String> {
    if let Some(url) = &a.prometheus {
        return Ok(Ok(Box::new(PrometheusSource::open(url)?)));
    }
    if a.demo {
        return Ok(Ok(Box::new(DemoSource::new(a.seed))));
    }
    if let Some(path) = &a.counters {
        let rec = pdh_csv::read(path).map_err(|e| format!("--counters {e}"))?;
        if rec.ignored_columns > 0 {
            eprintln!(
                "note: {}: {} column(s) of other counters ignored",
                path.display(),
                rec.ignored_columns
            );
        }
        if !rec.time_zone_known {
            eprintln!(
                "note: {}: the recording does not name its time zone (typeperf's console output); its local times are shown as UTC",
                path.display()
            );
        }
        return Ok(Ok(Box::new(CountersSource::new(
            None,
            Box::new(RecordedCounters::new(rec)),
            SourceKind::Replay,
        ))));
    }
    live_source(a.nvml_lib.as_deref())
}

/// The NVML library named by `--nvml-lib` when given (`Err` if it is not one; `Ok(Err)` if it
/// answers with no GPU), else the first live source that finds one ([`detect`]). On Windows
/// both come with the GPU performance counters, and a note on stderr says when those are
/// missing (the per-process memory then reads "?").
pub(super) fn live_source(
    nvml_lib: Option<&Path>,
) -> Result<Result<Box<dyn Source>, SourceState>, String> {
    if let Some(lib) = nvml_lib {
        crate::telemetry::nvml::check_lib(lib).map_err(|e| format!("--nvml-lib {e}"))?;
    }
    #[cfg(windows)]
    let counters_missing = {
        let lib = nvml_lib.map(Path::to_path_buf).or_else(|| {
            std::env::var_os(crate::telemetry::source::NVML_LIB_ENV).map(PathBuf::from)
        });
        match crate::telemetry::windows::open(lib) {
            Ok(w) => return Ok(Ok(Box::new(w))),
            Err(why) => {
                eprintln!("note: {}", printable(&why));
                why
            }
        }
    };
    let Some(lib) = nvml_lib else {
        return Ok(detect());
    };
    let mut s = NvmlSource::new(Some(lib.to_path_buf()));
    let first = s.sample();
    if first.gpus.is_empty() {
        return Ok(Err(if first.state.is_ok() {
            SourceState::NoGpu
        } else {
            first.state
        }));
    }
    // As `detect` does: every snapshot notes why the counters are missing.
    #[cfg(windows)]
    let s = crate::telemetry::pdh::without_counters(s, counters_missing);
    Ok(Ok(Box::new(s)))
}

/// Where the snapshots come from: a sampler thread over a live source, or a replay read here,
/// so that its skipped lines can be told at the end.
enum Feed {
    Live {
        /// Kept so the thread runs until the feed is dropped.
        _sampler: Sampler,
        rx: std::sync::mpsc::Receiver<Snapshot>,
    },
    Replay(Box<ReplaySource>, Duration, bool),
}

impl Iterator for Feed {
    type Item = Snapshot;
    fn next(&mut self) -> Option<Snapshot> {
        match self {
            Feed::Live { rx, .. } => rx.recv().ok(),
            Feed::Replay(r, pace, started) => {
                if std::mem::replace(started, true) && !pace.is_zero() {
                    std::thread::sleep(*pace);
                }
                let s = r.sample();
                (s.state != SourceState::Ended).then_some(s)
            }
        }
    }
}

/// True when `a` and `b` are the same existing file (also through links or other names).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return (x.dev(), x.ino()) == (y.dev(), y.ino());
        }
        false
    }
    #[cfg(not(unix))]
    {
        matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
    }
}

fn run_inner(a: &MonitorArgs) -> Result<ExitCode, CliError> {
    if let (Some(rec), Some(rep)) = (&a.record, &a.replay)
        && same_file(rec, rep)
    {
        return Err(CliError::BadInput(format!(
            "--record {} is the file being replayed; recording into it would append the replay to itself (name another file)",
            rec.display()
        )));
    }
    let mut recorder = a
        .record
        .as_deref()
        .map(|p| Recorder::open(p, DEFAULT_MAX_BYTES))
        .transpose()
        .map_err(|e| {
            let m = format!("--record {e}");
            if e.is_bad_input() {
                CliError::BadInput(m)
            } else {
                CliError::Environment(m)
            }
        })?;
    let planned = a.workload.as_deref().map(planned).transpose()?;
    let exporter = a.serve.as_deref().map(serve).transpose()?;
    let replay = a.replay.is_some();
    let secs = a.interval.unwrap_or(if replay { 0.0 } else { 1.0 });
    let mut feed = match &a.replay {
        Some(path) => Feed::Replay(
            Box::new(ReplaySource::open(path)?),
            Duration::from_secs_f64(secs),
            false,
        ),
        None => match open_source(a)? {
            Ok(source) => {
                let (sampler, rx) = Sampler::start(source, Duration::from_secs_f64(secs));
                Feed::Live {
                    _sampler: sampler,
                    rx,
                }
            }
            Err(state) => return Ok(no_gpu(&state)),
        },
    };
    let limit = if a.once { Some(1) } else { a.count };
    let terminal = std::io::stdout().is_terminal();
    let live_screen = !a.json && !a.once && terminal;
    // A server's log is not flooded with a table a second; the table is for people.
    let print = a.json || exporter.is_none() || terminal;
    let mut session = Session::new(SessionConfig {
        alerts_kept: ALERTS_SHOWN,
        ..SessionConfig::default()
    });
    let mut shown = 0u64;
    let mut out = std::io::stdout().lock();
    for snap in feed.by_ref() {
        if snap.state == SourceState::Ended {
            break;
        }
        if let Some(r) = recorder.as_mut() {
            // The file was accepted at the start: a write failing now is the disk's doing.
            r.write(&snap)
                .map_err(|e| CliError::Environment(e.to_string()))?;
        }
        let new = session.push(snap);
        let Some(snap) = session.latest() else {
            continue;
        };
        if let Some(e) = &exporter {
            e.publish(prometheus::exporter::render(
                &session,
                planned.as_ref().map(|p| &p.predicted),
            ));
        }
        // Without the table, alerts go to stderr as they come.
        if !print || a.json {
            for al in &new {
                eprintln!(
                    "alert: {}: {}",
                    printable(&al.gpu_name),
                    printable(&al.message.to_string())
                );
            }
        }
        let text = if !print {
            String::new()
        } else if a.json {
            let mut line = serde_json::to_string(snap).map_err(|e| e.to_string())?;
            line.push('\n');
            line
        } else {
            let mut t = String::new();
            if live_screen {
                t.push_str("\x1b[2J\x1b[H");
            }
            t.push_str(&render(snap, secs, session.alerts(), planned.as_ref()));
            t
        };
        // A closed pipe (`| head`) ends the command quietly with status 1, a full disk says so.
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| CliError::stdout(&e))?;
        shown += 1;
        if limit.is_some_and(|n| shown >= n) {
            // One reading asked for, and the server did not answer: a script learns it.
            if a.once && matches!(snap.state, SourceState::Unreachable(_)) {
                return Ok(ExitCode::from(EXIT_NO_GPU));
            }
            break;
        }
    }
    if let Feed::Replay(r, ..) = &feed
        && r.skipped() > 0
    {
        return Err(CliError::BadInput(format!(
            "{}: {} malformed line(s) skipped, first at {}; the rest was replayed",
            a.replay
                .as_deref()
                .unwrap_or_else(|| std::path::Path::new(""))
                .display(),
            r.skipped(),
            r.first_error().unwrap_or("?")
        )));
    }
    drop(feed);
    if shown == 0 && !replay {
        return Ok(no_gpu(&SourceState::NoGpu));
    }
    Ok(ExitCode::SUCCESS)
}

/// Starts the metrics server; says where it listens, and warns when that is reachable from
/// other machines (process names are in the metrics).
fn serve(addr: &str) -> Result<Exporter, ServeError> {
    let e = Exporter::start(addr, Limits::default())?;
    let at = e.local_addr();
    eprintln!("serving Prometheus metrics at http://{at}/metrics");
    if !at.ip().is_loopback() {
        eprintln!(
            "note: {at} is reachable from other machines; the metrics name the processes on each GPU"
        );
    }
    Ok(e)
}

/// What `--workload` plans: its peak, and the game when it is one.
pub struct Planned {
    predicted: Predicted,
    game: Option<GameWorkload>,
}

/// The planner's peak for a workload file, as `vram-doctor plan` computes it.
fn planned(path: &std::path::Path) -> Result<Planned, CliError> {
    let file = crate::memory::WorkloadFile::load(path)?;
    let base = path.parent().unwrap_or(std::path::Path::new("."));
    let w = crate::resolve::resolve_any(&file, base, Some(crate::import::load_model))?;
    let result = crate::plan::plan_any(&w);
    Ok(Planned {
        predicted: Predicted {
            workload: path
                .file_stem()
                .map_or_else(|| "workload".into(), |s| s.to_string_lossy().into_owned()),
            peak_bytes: result.breakdown().required_bytes(),
        },
        game: match w {
            AnyWorkload::Game(g) => Some(g),
            _ => None,
        },
    })
}

/// The game plan's budget for one process on `g` (`GameWorkload::check_on` with this card's
/// size) against the dedicated memory the game's process holds, in one line; the app's monitor
/// draws the same as a bar (ui/monitor/panels.rs, `game_budget_ui`).
fn game_budget_line(g: &GpuSample, w: &GameWorkload, found: FoundProcess) -> Option<String> {
    let p = g.processes.iter().flatten().find(|p| p.pid == found.pid)?;
    let c = w.check_on(g.memory.map_or(0, |m| m.total), p.used?);
    let name = printable(p.name.as_deref().unwrap_or("?"));
    let how = if found.by_name {
        ""
    } else {
        ", taken as the game: it holds the most memory"
    };
    let card = if c.card_reported {
        ""
    } else {
        " (the planned card's size: this GPU does not report its own)"
    };
    let shared = p
        .shared
        .map_or(String::new(), |b| format!(" + {} shared", human(b)));
    let verdict = match c.over_bytes() {
        Some(over) => format!("OVER by {}", human(over)),
        None => format!("{} left", human(c.left_bytes())),
    };
    Some(format!(
        "    game budget for one process: {} of {}{card}; {name} (pid {}{how}) holds {} dedicated{shared}: {verdict}\n",
        human(c.budget_bytes),
        human(c.capacity_bytes),
        p.pid,
        human(c.used_bytes)
    ))
}

/// `HH:MM:SS` UTC of a Unix time in ms.
fn clock(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}", s / 3600 % 24, s / 60 % 60, s % 60)
}

fn or_dash<T: std::fmt::Display>(v: Option<T>, unit: &str) -> String {
    v.map_or("-".into(), |v| format!("{v}{unit}"))
}

/// A 10-cell bar.
fn bar(fill: f64) -> String {
    let n = (fill * 10.0).round().clamp(0.0, 10.0) as usize;
    format!("[{}{}]", "#".repeat(n), ".".repeat(10 - n))
}

fn render_gpu(g: &GpuSample) -> String {
    let blank = GpuSample {
        index: g.index,
        uuid: g.uuid.clone(),
        name: g.name.clone(),
        host: g.host.clone(),
        ..GpuSample::default()
    };
    if *g == blank {
        return format!("{:<3} {:<30} not reported\n", g.index, printable(&g.name));
    }
    if g.status == GpuStatus::Lost {
        return format!(
            "{:<3} {:<30} LOST: stopped answering; still retrying\n",
            g.index,
            printable(&g.name)
        );
    }
    let mem = g.memory.map_or("memory: -".into(), |m| {
        if m.total == 0 {
            // Windows' counters without NVML: use is known, capacity is not.
            return format!("{} in use (capacity not reported)", human(m.unavailable()));
        }
        let note = if m.used_includes_reserved {
            " (incl. reserved)"
        } else {
            ""
        };
        format!(
            "{} / {} {} {:>3.0}%{note}",
            human(m.unavailable()),
            human(m.total),
            bar(m.fill()),
            m.fill() * 100.0
        )
    });
    let power = match (g.power_w, g.power_limit_w) {
        (Some(p), Some(l)) => format!("{p:.0}/{l:.0} W"),
        (p, _) => or_dash(p.map(|p| format!("{p:.0}")), " W"),
    };
    let pcie = match (g.pcie_rx_kbps, g.pcie_tx_kbps) {
        (None, None) => "-".into(),
        (rx, tx) => format!(
            "{}/{} MB/s",
            or_dash(rx.map(|v| v / 1000), ""),
            or_dash(tx.map(|v| v / 1000), "")
        ),
    };
    let mut s = format!(
        "{:<3} {:<30} {}  util {}  mem-bus {}  {}  {}  PCIe rx/tx {}\n",
        g.index,
        printable(&g.name),
        mem,
        or_dash(g.util_gpu_pct, "%"),
        or_dash(g.util_mem_pct, "%"),
        or_dash(g.temp_c, "°C"),
        power,
        pcie
    );
    if let Some(sh) = g.shared {
        s.push_str(&format!(
            "    shared (system RAM) in use: {}\n",
            human(sh.used)
        ));
    }
    match &g.processes {
        None => s.push_str("    processes: not available from this driver\n"),
        Some(ps) => {
            let mut ps: Vec<_> = ps.iter().collect();
            ps.sort_by_key(|p| std::cmp::Reverse(p.used));
            for p in ps {
                let kind = match p.kind {
                    ProcessKind::Compute => "C",
                    ProcessKind::Graphics => "G",
                    ProcessKind::Both => "C+G",
                };
                let used = p.used.map_or("n/a (driver does not say)".into(), human);
                // Windows counters: the system RAM the GPU borrows for this process.
                let shared = p
                    .shared
                    .map_or(String::new(), |b| format!("  + {} shared", human(b)));
                s.push_str(&format!(
                    "    {:>7}  {:<3} {:>12}{shared}  {}\n",
                    p.pid,
                    kind,
                    used,
                    printable(p.name.as_deref().unwrap_or("?"))
                ));
            }
        }
    }
    s
}

/// The table for one snapshot, with the latest alerts under it; `plan`: what `--workload`
/// planned.
pub fn render(s: &Snapshot, interval: f64, alerts: &[Alert], plan: Option<&Planned>) -> String {
    let mut t = format!(
        "vram-doctor monitor - {} - {} UTC",
        s.source_label(),
        clock(s.time_ms)
    );
    if interval > 0.0 {
        t.push_str(&format!(" - every {interval} s"));
    }
    t.push('\n');
    if !s.state.is_ok() {
        t.push_str(&format!("! {}\n", s.state.message()));
    }
    for n in &s.notes {
        t.push_str(&format!("note: {}\n", printable(n)));
    }
    if let Some(p) = plan {
        t.push_str(&format!(
            "planned: {} needs {} at its peak\n",
            printable(&p.predicted.workload),
            human(p.predicted.peak_bytes)
        ));
    }
    let game = plan
        .and_then(|p| p.game.as_ref())
        .and_then(|w| Some((w, s.find_process(&w.process_names())?)));
    let mut host = None;
    for (i, g) in s.gpus.iter().enumerate() {
        if g.host.is_some() && g.host != host {
            host.clone_from(&g.host);
            t.push_str(&format!(
                "host {}\n",
                printable(g.host.as_deref().unwrap_or_default())
            ));
        }
        t.push_str(&render_gpu(g));
        if let Some(line) = game
            .filter(|(_, f)| f.gpu == i)
            .and_then(|(w, f)| game_budget_line(g, w, f))
        {
            t.push_str(&line);
        }
    }
    for a in alerts {
        t.push_str(&format!(
            "ALERT {} {}: {}\n",
            clock(a.time_ms),
            printable(&a.gpu_name),
            printable(&a.message.to_string())
        ));
    }
    t
}
