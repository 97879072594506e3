//! `vram-doctor`: with a subcommand, the command line; without one, the desktop app.

use clap::Parser;
use std::process::ExitCode;
use vram_doctor::cli::{Cli, run};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(cmd) => run(cmd),
        None => {
            eprintln!("The desktop app is not built yet; try `vram-doctor --help`.");
            ExitCode::SUCCESS
        }
    }
}
