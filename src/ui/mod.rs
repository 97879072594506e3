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
pub mod glossary;
mod gpu_picker;
pub mod i18n;
pub mod monitor;
pub mod planner;
pub mod probe;
mod widgets;

pub use app::{AppState, VramDoctorApp};

pub use crate::tabs::Tab;

impl Tab {
    /// The tab's title in the top bar, which is also its accessible label.
    pub fn title(self) -> &'static str {
        i18n::tr(match self {
            Tab::Planner => "Planner",
            Tab::Monitor => "Monitor",
            Tab::Doctor => "Doctor",
            Tab::Catalog => "Catalog",
        })
    }
}

/// The Chinese glyphs: a subset of Noto Sans CJK SC (SIL OFL 1.1, `assets/fonts/OFL.txt`) with
/// only the characters our texts use, made by `tools/make_cjk_subset.py`, so Chinese renders on
/// machines without any CJK font while the binary grows by ~120 KB instead of ~16 MB.
pub const CJK_FONT: &[u8] = include_bytes!("../../assets/fonts/NotoSansCJKsc-subset.otf");

/// Fonts: egui's bundled ones, with its monospace font (Hack) as a fallback for the proportional
/// text, because Ubuntu-Light has no arrows and the doctor's and planner's texts use "→"
/// (found by the kittest harness, which fails on any glyph it cannot draw); then the CJK subset
/// last in both families, so Latin text keeps its look and only Chinese comes from it.
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
    let cjk = "NotoSansCJKsc-subset".to_string();
    fonts.font_data.insert(
        cjk.clone(),
        std::sync::Arc::new(egui::FontData::from_static(CJK_FONT)),
    );
    for family in [egui::FontFamily::Proportional, egui::FontFamily::Monospace] {
        fonts.families.entry(family).or_default().push(cjk.clone());
    }
    ctx.set_fonts(fonts);
}

/// Light-theme widgets drawn with a visible outline: egui's light visuals give an unchecked
/// checkbox a gray-230 box with no outline on the gray-248 panel, a contrast of 1.15:1 that
/// hides it (issue 22). WCAG 2.1 success criterion 1.4.11 (non-text contrast) asks 3:1 for the
/// parts of a control that identify it; gray 118 on gray 248 is 4.6:1 (contrast ratio as WCAG
/// defines it, tests/ui_layout.rs measures the rendered box).
pub const LIGHT_OUTLINE: egui::Color32 = egui::Color32::from_gray(118);

/// The app's adjustments to egui's themes (see [`LIGHT_OUTLINE`]).
pub fn install_style(ctx: &egui::Context) {
    ctx.style_mut_of(egui::Theme::Light, |s| {
        s.visuals.widgets.inactive.bg_stroke = egui::Stroke::new(1.0, LIGHT_OUTLINE);
    });
}

/// The window and taskbar icon: 64 x 64 straight RGBA drawn by `tools/make_icon.py`, which also
/// writes the `.ico` that `build.rs` links into the Windows `.exe`.
pub fn app_icon() -> egui::IconData {
    const SIDE: u32 = 64;
    const RGBA: &[u8] = include_bytes!("../../assets/icon/vram-doctor-64.rgba");
    const _: () = assert!(RGBA.len() == (SIDE * SIDE * 4) as usize);
    egui::IconData {
        rgba: RGBA.to_vec(),
        width: SIDE,
        height: SIDE,
    }
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
/// `remote`: a Prometheus server or exporter URL the monitor reads instead of this machine's GPUs.
/// `open`: a workload or ComfyUI workflow opened in the planner at start (`--open FILE`).
pub fn run(
    start_tab: Option<Tab>,
    remote: Option<String>,
    open: Option<std::path::PathBuf>,
) -> Result<(), String> {
    if let Some(why) = missing_display() {
        return Err(why);
    }
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("VRAM Doctor")
            .with_app_id("vram-doctor")
            .with_icon(app_icon())
            .with_inner_size([1200.0, 780.0])
            .with_min_inner_size([640.0, 420.0]),
        ..Default::default()
    };
    // A display that is set but cannot be reached makes the windowing crates panic; the panic
    // becomes the one-line error below, and its location is told relative to the crate, never
    // as a path of the machine the binary was built on (`crate_relative`).
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", crate_relative(l.file()), l.line()))
            .unwrap_or_default();
        eprintln!(
            "vram-doctor: internal error{at}: {}",
            panic_text(info.payload())
        );
    }));
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        eframe::run_native(
            "vram-doctor",
            options,
            Box::new(move |cc| {
                let mut app = VramDoctorApp::with_locale(cc, start_tab);
                if let Some(url) = remote {
                    app.state.monitor.watch_remote(url);
                }
                if let Some(path) = &open {
                    app.open_file(path);
                }
                Ok(Box::new(app))
            }),
        )
    }));
    std::panic::set_hook(default_hook);
    let failed = |e: &dyn std::fmt::Display| {
        format!(
            "cannot start the desktop app: {e}; the command line still works (`vram-doctor --help`)"
        )
    };
    match ran {
        Ok(r) => r.map_err(|e| failed(&e)),
        Err(payload) => Err(failed(&panic_text(payload.as_ref()))),
    }
}

/// The text of a panic.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// A source path as built: a dependency's path is cut to `crate-version/src/…` (dropping the
/// build machine's `…/.cargo/registry/src/index-hash/`), and the standard library's to what
/// follows `/rustc/HASH/`.
pub fn crate_relative(file: &str) -> &str {
    let cut = |marker: &str| {
        file.find(marker).map(|i| {
            let rest = &file[i + marker.len()..];
            // Skip the registry index (`index.crates.io-1949cf8c6b5b557f/`) or the commit hash.
            rest.split_once('/').map_or(rest, |(_, tail)| tail)
        })
    };
    cut("/registry/src/")
        .or_else(|| cut("/git/checkouts/"))
        .or_else(|| cut("/rustc/"))
        .unwrap_or(file)
}

#[cfg(test)]
mod tests {
    #[test]
    fn panic_locations_do_not_show_the_build_machine() {
        let f = "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/winit-0.30.12/src/platform_impl/linux/mod.rs";
        assert_eq!(
            super::crate_relative(f),
            "winit-0.30.12/src/platform_impl/linux/mod.rs"
        );
        assert_eq!(
            super::crate_relative("/rustc/abc123/library/core/src/option.rs"),
            "library/core/src/option.rs"
        );
        assert_eq!(super::crate_relative("src/ui/mod.rs"), "src/ui/mod.rs");
    }
}
