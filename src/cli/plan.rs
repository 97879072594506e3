//! `vram-doctor plan`: a workload from a file or flags → breakdown, verdict and plan.

use clap::Args;

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Workload file (TOML, see DESIGN.md).
    #[arg(long)]
    pub workload: Option<std::path::PathBuf>,
    /// Print the JSON result instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(_a: &PlanArgs) -> Result<(), String> {
    Err("plan: not implemented yet".into())
}
