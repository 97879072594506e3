//! `vram-doctor`: with a subcommand, the command line; without one, the desktop app.

use clap::Parser;
use std::process::ExitCode;
use vram_doctor::cli::{Cli, run};
use vram_doctor::ui::{self, Tab};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(cmd) => run(cmd),
        None => match ui::run(cli.tab.as_deref().and_then(Tab::from_name), cli.prometheus) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(vram_doctor::cli::EXIT_ENVIRONMENT)
            }
        },
    }
}
