//! `vram-doctor run [options] -- CMD ARGS…`: runs the command under watch (src/watch), returns
//! its exit status, and on a failure prints the doctor's diagnosis with the timeline's evidence
//! (to stderr, so the command's own stdout stays as it was; `--json` puts one JSON object on
//! the last line of stdout). Thin: everything it shows comes from `watch` and `doctor`.

use super::CliError;
use super::diagnose::{Report, render, report};
use crate::doctor::Knowledge;
use crate::telemetry::detect::Alert;
use crate::watch::evidence::Peak;
use crate::watch::process::CommandSpec;
use crate::watch::retry::{EnvChange, env_fix};
use crate::watch::timeline::{Arrival, Basis};
use crate::watch::{self, Outcome, Verdict, report as run_report};
use clap::Args;
use serde::Serialize;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Milliseconds between GPU samples, 10 to 60000 (100 = 10 Hz).
    #[arg(long, value_name = "MS", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub interval: u64,
    /// Also record every GPU snapshot to FILE (`.csv` for CSV, anything else for JSON Lines;
    /// `vram-doctor monitor --replay FILE` plays it back).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Write the recording, a Markdown report and a PNG plot of memory over time into DIR.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Print the result as one JSON object on the last line of stdout, after the command's output.
    #[arg(long)]
    pub json: bool,
    /// After an out-of-memory failure, run the command once more with the doctor's top fix,
    /// only when that fix is an environment setting (it says exactly what it changed).
    #[arg(long)]
    pub retry_on_oom: bool,
    /// Run the command in this directory.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Language of the diagnosis: en, de or zh.
    #[arg(long, default_value = "en")]
    pub lang: String,
    /// Load this NVML library instead of the system's (also: VRAM_DOCTOR_NVML_LIB).
    #[arg(long, value_name = "PATH")]
    pub nvml_lib: Option<PathBuf>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD",
          value_parser = clap::value_parser!(OsString))]
    pub command: Vec<OsString>,
}

/// The timeline section of `--json`.
#[derive(Debug, Serialize)]
struct TimelineJson<'a> {
    start_ms: u64,
    duration_ms: u64,
    source: String,
    peak: Option<&'a Peak>,
    /// What the timeline showed, as facts (facts.toml names) with their evidence lines.
    facts: Vec<FactJson>,
    notes: Vec<String>,
    gpus: Vec<GpuJson>,
    arrivals: &'a [Arrival],
    alerts: &'a [Alert],
}

#[derive(Debug, Serialize)]
struct FactJson {
    fact: String,
    text: String,
}

#[derive(Debug, Serialize)]
struct GpuJson {
    index: u32,
    name: String,
    total_bytes: Option<u64>,
    basis: Basis,
    samples: u64,
    peak_bytes: Option<u64>,
}

/// One run in `--json`.
#[derive(Debug, Serialize)]
struct RunJson<'a> {
    command: &'a str,
    exit_code: i32,
    signal: Option<i32>,
    failed: bool,
    failure_line: Option<&'a str>,
    timeline: TimelineJson<'a>,
    /// The diagnosis object of `diagnose --json`, when the run failed.
    #[serde(flatten)]
    diagnosis: Option<Report<'a>>,
}

#[derive(Debug, Serialize)]
struct Json<'a> {
    #[serde(flatten)]
    run: RunJson<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry: Option<RetryJson<'a>>,
}

#[derive(Debug, Serialize)]
struct RetryJson<'a> {
    /// The change made for the second run, or why there was none.
    changed: Option<&'a EnvChange>,
    skipped: Option<&'a str>,
    run: Option<RunJson<'a>>,
}

pub fn run(a: &RunArgs) -> ExitCode {
    match run_inner(a) {
        Ok(code) => code,
        Err(e) => super::fail(&e),
    }
}

/// One watched run and what it printed and wrote.
struct Done {
    outcome: Outcome,
    verdict: Option<(crate::doctor::WizardState, Verdict)>,
}

fn watch_once(
    a: &RunArgs,
    spec: &CommandSpec,
    report_dir: Option<&Path>,
) -> Result<Done, CliError> {
    let kb = Knowledge::get();
    let mut opts = watch::Options {
        interval: Duration::from_millis(a.interval),
        record: a.record.iter().cloned().collect(),
    };
    if let Some(dir) = report_dir {
        opts.record.push(run_report::prepare(dir)?);
    }
    let source = super::monitor::live_source(a.nvml_lib.as_deref())?;
    let outcome = watch::watch(spec, source, &opts)?;
    let verdict = if outcome.failed() {
        let (state, view) = outcome.diagnose(kb, &a.lang)?;
        let v = Verdict::of(&state, &view, kb, &a.lang);
        Some((state, v))
    } else {
        None
    };
    if let Some(dir) = report_dir {
        run_report::write(dir, &outcome, verdict.as_ref().map(|v| &v.1), kb, &a.lang)?;
    }
    print_summary(&outcome, verdict.as_ref().map(|v| &v.0), kb, &a.lang)?;
    Ok(Done { outcome, verdict })
}

fn run_inner(a: &RunArgs) -> Result<ExitCode, CliError> {
    let kb = Knowledge::get();
    kb.check_lang(&a.lang)?;
    let (program, args) = a
        .command
        .split_first()
        .ok_or("no command given: vram-doctor run -- CMD ARGS…")?;
    let mut spec = CommandSpec {
        program: program.clone(),
        args: args.to_vec(),
        cwd: a.cwd.clone(),
        env: Vec::new(),
    };
    let first = watch_once(a, &spec, a.report.as_deref())?;
    let mut last_code = first.outcome.exit.code;
    let mut retry: Option<(Result<EnvChange, String>, Option<Done>)> = None;
    if a.retry_on_oom && first.outcome.failed() {
        let change = match &first.verdict {
            Some((_, v)) => env_fix(&v.diagnosis, |k| std::env::var(k).ok()),
            None => Err("the doctor has no diagnosis".into()),
        };
        let second = match &change {
            Ok(c) => {
                eprintln!(
                    "vram-doctor: --retry-on-oom: running the command once more with {}, the top fix for this failure ({}); nothing else is changed",
                    c.describe(),
                    c.fix
                );
                spec.env.push((c.var.clone().into(), c.new.clone().into()));
                let dir = a.report.as_ref().map(|d| d.join("retry"));
                let done = watch_once(a, &spec, dir.as_deref())?;
                last_code = done.outcome.exit.code;
                Some(done)
            }
            Err(why) => {
                eprintln!("vram-doctor: --retry-on-oom: not retrying: {why}");
                None
            }
        };
        retry = Some((change, second));
    }
    if a.json {
        let json = Json {
            run: run_json(&first, kb, &a.lang)?,
            retry: match &retry {
                Some((change, second)) => Some(RetryJson {
                    changed: change.as_ref().ok(),
                    skipped: change.as_ref().err().map(String::as_str),
                    run: second
                        .as_ref()
                        .map(|d| run_json(d, kb, &a.lang))
                        .transpose()?,
                }),
                None => None,
            },
        };
        let mut line = serde_json::to_string(&json).map_err(|e| e.to_string())?;
        let last = retry.as_ref().and_then(|r| r.1.as_ref()).unwrap_or(&first);
        if last.outcome.stdout_open_line {
            line.insert(0, '\n');
        }
        let mut out = std::io::stdout().lock();
        // The run is over and its status stands; the lost result is said, not hidden.
        if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
            eprintln!(
                "warning: the --json result was not written: {}",
                CliError::stdout(&e)
            );
        }
    }
    if let Some(dir) = &a.report {
        let text = serde_json::to_string_pretty(&run_json(&first, kb, &a.lang)?)
            .map_err(|e| e.to_string())?;
        crate::atomic_write::write_atomic(&dir.join("run.json"), &(text + "\n"))?;
    }
    // The shell's convention: the low 8 bits are the status a parent sees.
    Ok(ExitCode::from(last_code as u8))
}

fn run_json<'a>(d: &'a Done, kb: &Knowledge, lang: &str) -> Result<RunJson<'a>, String> {
    let o = &d.outcome;
    let diagnosis = match &d.verdict {
        Some((state, _)) => Some(report(kb, Some(&o.reading), state, lang)?),
        None => None,
    };
    Ok(RunJson {
        command: &o.command,
        exit_code: o.exit.code,
        signal: o.exit.signal,
        failed: o.failed(),
        failure_line: o.incident.as_ref().map(|i| i.line.as_str()),
        timeline: TimelineJson {
            start_ms: o.timeline.start_ms,
            duration_ms: o.duration_ms,
            source: o.source.label().to_string(),
            peak: o.evidence.peak.as_ref(),
            facts: o
                .evidence
                .observations
                .iter()
                .map(|ob| FactJson {
                    fact: ob.fact.name(),
                    text: crate::doctor::diagnosis::evidence_line(kb, ob, lang),
                })
                .collect(),
            notes: o.evidence.notes.iter().chain(&o.notes).cloned().collect(),
            gpus: o
                .timeline
                .gpus
                .iter()
                .map(|g| GpuJson {
                    index: g.index,
                    name: g.name.clone(),
                    total_bytes: g.total,
                    basis: g.basis(),
                    samples: g.samples,
                    peak_bytes: g.peak().map(|p| p.run),
                })
                .collect(),
            arrivals: &o.timeline.arrivals,
            alerts: &o.alerts,
        },
        diagnosis,
    })
}

/// The end-of-run summary on stderr; with a failure, the doctor's diagnosis after it.
fn print_summary(
    o: &Outcome,
    state: Option<&crate::doctor::WizardState>,
    kb: &Knowledge,
    lang: &str,
) -> Result<(), String> {
    let mut s = String::from("\n── vram-doctor run ──\n");
    for l in run_report::summary(o) {
        s += &format!("{l}\n");
    }
    match state {
        Some(state) => {
            s += "\n";
            s += &render(&report(kb, Some(&o.reading), state, lang)?);
        }
        None => {
            for ob in &o.evidence.observations {
                s += &format!(
                    "  - {}\n",
                    crate::doctor::diagnosis::evidence_line(kb, ob, lang)
                );
            }
            if o.exit.code != 0 {
                s += "No out-of-memory or GPU error was seen in its output, so there is nothing for the doctor to diagnose.\n";
            }
        }
    }
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(s.as_bytes());
    Ok(())
}
