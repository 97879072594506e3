//! The programs a test needs from the machine (Debian packages that `.ci/run` installs).
//! Without them a test says what is missing and does not run; under CI=true it fails instead,
//! so a missing package never passes silently.

use std::process::{Command, Stdio};

/// Whether every `(program, harmless argument)` starts. When one does not, reports them all
/// with `why` (which packages, what did not run): a failure under CI=true, a SKIPPED line
/// otherwise.
pub fn present(programs: &[(&str, &str)], why: &str) -> bool {
    let missing: Vec<&str> = programs
        .iter()
        .filter(|(p, a)| {
            Command::new(p)
                .arg(a)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_err()
        })
        .map(|(p, _)| *p)
        .collect();
    if missing.is_empty() {
        return true;
    }
    let msg = format!("{} missing ({why})", missing.join(", "));
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
    eprintln!("SKIPPED: {msg}");
    false
}
