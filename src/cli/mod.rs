//! Command line: clap subcommands that call the domain layers and print tables or JSON.
//! Each subcommand lives in its own module with an `args` struct and a `run` function.

mod accuracy;
mod diagnose;
mod error;
mod inspect;
mod monitor;
pub(crate) mod out;
mod plan;
mod presets;
mod run;
mod workflow;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub use error::{CliError, EXIT_BAD_INPUT, EXIT_ENVIRONMENT};

#[derive(Debug, Parser)]
#[command(
    name = "vram-doctor",
    version,
    about = "Will it fit? What is happening now? What went wrong? — GPU memory planner, monitor and doctor."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Desktop app only: the tab to open on (otherwise the one used last).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::tabs::Tab::NAMES))]
    pub tab: Option<String>,
    /// Desktop app only: the monitor shows the GPUs of every host this Prometheus server
    /// (http://HOST:9090) or exporter (http://HOST:9400/metrics) reports.
    #[arg(long, value_name = "URL", value_parser = parse_remote)]
    pub prometheus: Option<String>,
    /// Desktop app only: open this file in the planner — a workload (.toml) or a ComfyUI
    /// workflow (UI or API .json, or a .png ComfyUI saved with one embedded).
    #[arg(long, value_name = "FILE")]
    pub open: Option<std::path::PathBuf>,
}

/// Checks a `--prometheus` URL before the window opens.
fn parse_remote(s: &str) -> Result<String, String> {
    crate::telemetry::prometheus::PrometheusSource::open(s).map(|_| s.to_owned())
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Estimate a workload's memory, part by part, and find the cheapest plan that fits.
    Plan(Box<plan::PlanArgs>),
    /// Watch GPU memory live: per GPU and per process, with alerts, recording and replay.
    Monitor(monitor::MonitorArgs),
    /// List the presets: built-in GPUs, models, diffusion models and games, and your own.
    Presets(presets::PresetsArgs),
    /// Compare the engine with measured reference data (median and p90 relative error).
    Accuracy(accuracy::AccuracyArgs),
    /// Read an error message (stdin or --file) or answer questions; print causes and fixes.
    Diagnose(diagnose::DiagnoseArgs),
    /// Show what a model file or folder holds (config.json, safetensors, GGUF, diffusers).
    Inspect(inspect::InspectArgs),
    /// Run a command under watch: its GPU memory over time, its output read by the doctor, and
    /// on a failure the diagnosis with the timeline as evidence (returns the command's status).
    Run(Box<run::RunArgs>),
}

/// Runs a parsed command; prints errors as one line and returns the exit status.
pub fn run(cmd: Command) -> ExitCode {
    let result: Result<(), CliError> = match cmd {
        Command::Plan(a) => plan::run(&a),
        Command::Presets(a) => presets::run(&a),
        Command::Accuracy(a) => accuracy::run(&a),
        Command::Monitor(a) => return monitor::run(&a),
        Command::Diagnose(a) => diagnose::run(&a),
        Command::Inspect(a) => inspect::run(&a),
        Command::Run(a) => return run::run(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// Prints `e` as one line and returns its exit status; a closed stdout (`| head`) is not
/// reported, the reader stopped reading on purpose.
pub(crate) fn fail(e: &CliError) -> ExitCode {
    if !matches!(e, CliError::StdoutClosed) {
        eprintln!("error: {}", crate::printable::printable(&e.to_string()));
    }
    ExitCode::from(e.exit_code())
}
