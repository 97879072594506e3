//! When the project's sources last changed: a built artefact older than this (the Windows `.exe`
//! the Wine tests run, the release archives) was built from other sources and is refused, so a
//! test never passes on a stale build.

// Each test binary that includes this file uses a different part of it.
#![allow(dead_code)]

use std::path::Path;
use std::time::SystemTime;

/// What goes into a build: the code, the data compiled in, the lock file and the build script.
pub const BUILD_INPUTS: [&str; 5] = ["src", "presets", "assets", "Cargo.lock", "build.rs"];

/// The newest modification time among the build inputs of this checkout.
pub fn newest() -> SystemTime {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    BUILD_INPUTS
        .iter()
        .map(|p| newest_in(&root.join(p)))
        .max()
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// A file's modification time (the epoch when it cannot be read).
pub fn modified(p: &Path) -> SystemTime {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

fn newest_in(p: &Path) -> SystemTime {
    let mut t = modified(p);
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            t = t.max(newest_in(&e.path()));
        }
    }
    t
}
