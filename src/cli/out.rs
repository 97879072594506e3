//! What a command prints on stdout. `println!` panics when stdout is closed or full
//! ("failed printing to stdout", std's `print_to`), so `vram-doctor accuracy | head` ended in a
//! panic; every command writes through [`outln!`] / [`out!`] instead, which return the write's
//! error as a [`CliError`] for `?`: a closed pipe exits 1 without a message (the reader stopped
//! on purpose), any other failure exits 1 naming it (README, "Exit status").

use super::CliError;
use std::io::Write;

/// `println!` that returns `Err(CliError)` instead of panicking.
macro_rules! outln {
    () => {
        $crate::cli::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` that returns `Err(CliError)` instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::out::write(format_args!($($arg)*))
    };
}

pub(crate) use {out, outln};

/// Writes to stdout and flushes, so a failure shows here rather than at exit, where std
/// ignores it.
pub(crate) fn write(args: std::fmt::Arguments<'_>) -> Result<(), CliError> {
    let mut o = std::io::stdout().lock();
    o.write_fmt(args)
        .and_then(|()| o.flush())
        .map_err(|e| CliError::stdout(&e))
}
