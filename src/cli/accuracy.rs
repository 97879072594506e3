//! `vram-doctor accuracy`: the accuracy benchmark against measured reference data.

use super::CliError;
use super::out::{out, outln};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct AccuracyArgs {
    /// Reference data (JSON Lines in the shared reference schema).
    #[arg(long, default_value = "tests/data/groundtruth-public.jsonl")]
    pub reference: PathBuf,
    /// Published llama.cpp tokens/s measurements the speed estimates are checked against.
    #[arg(long, default_value = SPEED_REFERENCE)]
    pub speed_reference: PathBuf,
    /// Print every row, not only the per-kind summary.
    #[arg(long, short)]
    pub verbose: bool,
    /// Print the rows and summary as JSON.
    #[arg(long)]
    pub json: bool,
}

const SPEED_REFERENCE: &str = "tests/data/speed-llama-cpp.jsonl";

pub fn run(a: &AccuracyArgs) -> Result<(), CliError> {
    let report = crate::accuracy::run_file(&a.reference)?;
    let speed = crate::accuracy::speed_rows::run_file(&a.speed_reference)?;
    if a.json {
        let out = serde_json::json!({
            "rows": report.rows,
            "by_kind": report.by_kind(),
            "skipped": report.skipped,
            "speed": {
                "rows": speed.rows,
                "by_kind": speed.by_kind(),
                "skipped": speed.skipped,
            },
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        )?;
    } else {
        outln!("accuracy against {}\n", a.reference.display())?;
        out!("{}", report.render(a.verbose))?;
        outln!("\nspeed against {}\n", a.speed_reference.display())?;
        out!("{}", speed.render(a.verbose))?;
    }
    Ok(())
}
