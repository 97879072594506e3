//! The desktop app (eframe/egui). Thin: every view turns widgets into a `WorkloadFile` or other
//! domain input and renders what the domain layers return; no estimation logic lives here.
//!
//! Shape follows the egui demo app and rerun's viewer (`../shared/research/egui_stack.md` §4):
//! `app` owns the eframe glue and persistence, one module per tab holds that tab's state struct.

mod app;
mod bar;
pub mod catalog;
pub mod doctor;
pub mod files;
mod gpu_picker;
pub mod i18n;
pub mod monitor;
pub mod planner;
mod widgets;

pub use app::{AppState, VramDoctorApp};

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

    /// The tab's title in the top bar, which is also its accessible label.
    pub fn title(self) -> &'static str {
        i18n::tr(match self {
            Tab::Planner => "Planner",
            Tab::Monitor => "Monitor",
            Tab::Doctor => "Doctor",
            Tab::Catalog => "Catalog",
        })
    }

    /// Parses a command-line spelling (case-insensitive).
    pub fn from_name(name: &str) -> Option<Tab> {
        let name = name.trim().to_ascii_lowercase();
        Tab::NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| Tab::ALL[i])
    }
}

/// Fonts: egui's bundled ones, with its monospace font (Hack) as a fallback for the proportional
/// text, because Ubuntu-Light has no arrows and the doctor's and planner's texts use "→"
/// (found by the kittest harness, which fails on any glyph it cannot draw).
pub fn install_fonts(ctx: &egui::Context) {
    let mut fonts = egui::FontDefinitions::default();
    let hack = "Hack".to_string();
    if fonts.font_data.contains_key(&hack)
        && let Some(p) = fonts.families.get_mut(&egui::FontFamily::Proportional)
    {
        let at = p
            .iter()
            .position(|f| f == "Ubuntu-Light")
            .map_or(0, |i| i + 1);
        p.insert(at, hack);
    }
    ctx.set_fonts(fonts);
}

/// Why the app cannot open a window here, when that can be told before trying.
///
/// winit picks Wayland when `WAYLAND_DISPLAY`/`WAYLAND_SOCKET` is set and X11 through `DISPLAY`
/// otherwise (egui_stack.md §1, winit 0.30 `platform_impl/linux/mod.rs`); with none of them set it
/// can only fail, so say so in words instead of showing winit's error.
pub fn missing_display() -> Option<String> {
    if !cfg!(all(unix, not(target_os = "macos"))) {
        return None;
    }
    let set = |v: &str| std::env::var_os(v).is_some_and(|s| !s.is_empty());
    if set("DISPLAY") || set("WAYLAND_DISPLAY") || set("WAYLAND_SOCKET") {
        return None;
    }
    Some(
        "no display: neither DISPLAY nor WAYLAND_DISPLAY is set, so the desktop app cannot open a window; \
         use the command line instead (`vram-doctor --help`, e.g. `vram-doctor plan --workload FILE`)"
            .into(),
    )
}

/// Starts the desktop app and returns when its window closes. `start_tab` overrides the tab
/// restored from the last session (used by `--tab` and for screenshots).
pub fn run(start_tab: Option<Tab>) -> Result<(), String> {
    if let Some(why) = missing_display() {
        return Err(why);
    }
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("VRAM Doctor")
            .with_app_id("vram-doctor")
            .with_inner_size([1200.0, 780.0])
            .with_min_inner_size([640.0, 420.0]),
        ..Default::default()
    };
    eframe::run_native(
        "vram-doctor",
        options,
        Box::new(move |cc| Ok(Box::new(VramDoctorApp::new(cc, start_tab)))),
    )
    .map_err(|e| {
        format!(
            "cannot start the desktop app: {e}; the command line still works (`vram-doctor --help`)"
        )
    })
}
