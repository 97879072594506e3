//! The desktop app's tabs as the command line names them (`vram-doctor --tab monitor`). Kept
//! outside `ui` so the CLI parses `--tab` without importing the GUI (`tests/layering.rs`); the
//! tabs' titles and views live in `ui`.

use serde::{Deserialize, Serialize};

/// The tabs of the main window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Tab {
    #[default]
    Planner,
    Monitor,
    Doctor,
    Catalog,
}

impl Tab {
    pub const ALL: [Tab; 4] = [Tab::Planner, Tab::Monitor, Tab::Doctor, Tab::Catalog];
    /// Command-line spellings (`vram-doctor --tab monitor`).
    pub const NAMES: [&'static str; 4] = ["planner", "monitor", "doctor", "catalog"];

    /// Parses a command-line spelling (case-insensitive).
    pub fn from_name(name: &str) -> Option<Tab> {
        let name = name.trim().to_ascii_lowercase();
        Tab::NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| Tab::ALL[i])
    }
}
