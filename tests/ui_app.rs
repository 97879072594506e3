//! The whole app headless: tabs by label, going idle, and the no-display path of the binary.

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use vram_doctor::telemetry::{Source, SourceState};
use vram_doctor::ui::{Tab, VramDoctorApp};

/// The machine running the tests may have a GPU; the app tests behave as if it had none.
fn no_gpu() -> Result<Box<dyn Source>, SourceState> {
    Err(SourceState::NoGpu)
}

fn app(start: Option<Tab>) -> Harness<'static, VramDoctorApp> {
    Harness::builder()
        .with_size([1200.0, 800.0])
        .build_eframe(move |cc| {
            let mut app = VramDoctorApp::new(cc, start);
            app.state.monitor.feed.detect = no_gpu;
            // Never the real config directory: a file that does not exist (nothing is saved).
            let none =
                std::env::temp_dir().join(format!("vram-doctor-no-config-{}", std::process::id()));
            app.state.catalog.use_file(none.join("user-presets.toml"));
            app
        })
}

#[test]
fn tabs_open_by_label() {
    let mut h = app(None);
    h.run();
    h.get_by_role_and_label(Role::Slider, "Batch size");
    h.get_by_label("Monitor").click();
    h.run();
    assert_eq!(h.state().state.tab, Tab::Monitor);
    h.get_by_label("No GPU readings");
    h.get_by_label("Doctor").click();
    h.run();
    h.get_by_label("Read message");
    assert!(
        h.query_by_role_and_label(Role::Slider, "Batch size")
            .is_none()
    );
}

#[test]
fn start_tab_overrides_the_default() {
    let mut h = app(Tab::from_name("Doctor"));
    h.run();
    assert_eq!(h.state().state.tab, Tab::Doctor);
    assert_eq!(Tab::from_name("nope"), None);
}

/// A reactive app stops asking for frames once nothing changes; `try_run` fails if any view
/// kept requesting repaints (which would burn CPU while idle).
#[test]
fn every_tab_goes_idle() {
    for t in Tab::ALL {
        let mut h = app(Some(t));
        assert!(h.try_run().is_ok(), "{t:?} keeps repainting");
    }
}

#[test]
fn without_a_display_the_binary_says_so_and_fails_cleanly() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("WAYLAND_SOCKET")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("DISPLAY")
            && err.contains("WAYLAND_DISPLAY")
            && err.contains("vram-doctor --help"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_wrong_tab_flag_is_bad_input() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(["--tab", "graphs"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("planner"));
}

#[test]
fn a_catalog_pick_opens_in_the_planner() {
    let mut h = app(Some(Tab::Catalog));
    h.run();
    h.get_by_label("Models").click();
    h.run();
    h.get_by_role(Role::TextInput).focus();
    h.run();
    h.get_by_role(Role::TextInput).type_text("qwen");
    h.run();
    assert!(
        h.query_by_label_contains("Llama").is_none(),
        "the search filters the list"
    );
    h.get_all_by_label_contains("Qwen")
        .next()
        .expect("a Qwen model in the catalog");
    h.get_all_by_label("Plan")
        .next()
        .expect("a Plan button")
        .click();
    h.run();
    assert_eq!(h.state().state.tab, Tab::Planner);
    let picked = h
        .state()
        .state
        .planner
        .workload
        .model
        .preset
        .clone()
        .unwrap();
    assert!(picked.starts_with("qwen"), "{picked}");
}
