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
    /// Published measurements kept out of every fitted constant: the speed model's held-out check.
    #[arg(long, default_value = SPEED_HELD_OUT)]
    pub speed_held_out: PathBuf,
    /// Published diffusion step times the diffusion speed estimate was fitted on.
    #[arg(long, default_value = DIFFUSION_SPEED_REFERENCE)]
    pub diffusion_speed_reference: PathBuf,
    /// Published diffusion step times kept out of the fit: the diffusion speed held-out check.
    #[arg(long, default_value = DIFFUSION_SPEED_HELD_OUT)]
    pub diffusion_speed_held_out: PathBuf,
    /// Published training throughputs the training speed estimate was fitted on.
    #[arg(long, default_value = TRAINING_SPEED_REFERENCE)]
    pub training_speed_reference: PathBuf,
    /// Published training throughputs kept out of the fit: the training speed held-out check.
    #[arg(long, default_value = TRAINING_SPEED_HELD_OUT)]
    pub training_speed_held_out: PathBuf,
    /// Print every row, not only the per-kind summary.
    #[arg(long, short)]
    pub verbose: bool,
    /// Print the rows and summary as JSON.
    #[arg(long)]
    pub json: bool,
}

const SPEED_REFERENCE: &str = "tests/data/speed-llama-cpp.jsonl";
const SPEED_HELD_OUT: &str = "tests/data/speed-held-out.jsonl";
const DIFFUSION_SPEED_REFERENCE: &str = "tests/data/speed-diffusion.jsonl";
const DIFFUSION_SPEED_HELD_OUT: &str = "tests/data/speed-diffusion-held-out.jsonl";
const TRAINING_SPEED_REFERENCE: &str = "tests/data/speed-training.jsonl";
const TRAINING_SPEED_HELD_OUT: &str = "tests/data/speed-training-held-out.jsonl";

pub fn run(a: &AccuracyArgs) -> Result<(), CliError> {
    let report = crate::accuracy::run_file(&a.reference)?;
    let speed = crate::accuracy::speed_rows::run_file(&a.speed_reference)?;
    let held_out = crate::accuracy::speed_rows::run_file(&a.speed_held_out)?;
    let diffusion = crate::accuracy::diffusion_speed_rows::run_file(&a.diffusion_speed_reference)?;
    let diffusion_held_out =
        crate::accuracy::diffusion_speed_rows::run_file(&a.diffusion_speed_held_out)?;
    let training = crate::accuracy::training_speed_rows::run_file(&a.training_speed_reference)?;
    let training_held_out =
        crate::accuracy::training_speed_rows::run_file(&a.training_speed_held_out)?;
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
            "speed_held_out": {
                "rows": held_out.rows,
                "by_kind": held_out.by_kind(),
                "skipped": held_out.skipped,
            },
            "diffusion_speed": {
                "rows": diffusion.rows,
                "by_kind": diffusion.by_kind(),
                "skipped": diffusion.skipped,
            },
            "diffusion_speed_held_out": {
                "rows": diffusion_held_out.rows,
                "by_kind": diffusion_held_out.by_kind(),
                "skipped": diffusion_held_out.skipped,
            },
            "training_speed": {
                "rows": training.rows,
                "by_kind": training.by_kind(),
                "skipped": training.skipped,
            },
            "training_speed_held_out": {
                "rows": training_held_out.rows,
                "by_kind": training_held_out.by_kind(),
                "skipped": training_held_out.skipped,
            },
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        )?;
    } else {
        outln!("accuracy against {}\n", a.reference.display())?;
        out!("{}", report.render(a.verbose))?;
        outln!(
            "\nspeed against {} (in-sample: the speed constants were fitted on these rows)\n",
            a.speed_reference.display()
        )?;
        out!("{}", speed.render(a.verbose))?;
        outln!(
            "\nspeed against {} (held out: no constant was fitted on these rows)\n",
            a.speed_held_out.display()
        )?;
        out!("{}", held_out.render(a.verbose))?;
        outln!(
            "\ndiffusion speed against {} (in-sample: DENOISE_EFFICIENCY was fitted on these rows)\n",
            a.diffusion_speed_reference.display()
        )?;
        out!("{}", diffusion.render(a.verbose))?;
        outln!(
            "\ndiffusion speed against {} (held out: not fitted on)\n",
            a.diffusion_speed_held_out.display()
        )?;
        out!("{}", diffusion_held_out.render(a.verbose))?;
        outln!(
            "\ntraining speed against {} (in-sample: TRAINING_EFFICIENCY was fitted on these rows)\n",
            a.training_speed_reference.display()
        )?;
        out!("{}", training.render(a.verbose))?;
        outln!(
            "\ntraining speed against {} (held out: not fitted on)\n",
            a.training_speed_held_out.display()
        )?;
        out!("{}", training_held_out.render(a.verbose))?;
    }
    Ok(())
}
