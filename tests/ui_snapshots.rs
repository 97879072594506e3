//! Image snapshots of the whole window, rendered by wgpu on the CPU (Mesa llvmpipe: GL through EGL,
//! or Vulkan through lavapipe when installed; `../shared/research/egui_stack.md` §3). The
//! accessibility tests check behaviour; these check what the user sees: layout, colours, and that
//! every glyph is drawn. `UPDATE_SNAPSHOTS=1 cargo test --test ui_snapshots` writes new images
//! after an intended change; look at them before committing.

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use vram_doctor::telemetry::{Source, SourceState};
use vram_doctor::ui::{Tab, VramDoctorApp};

fn no_gpu() -> Result<Box<dyn Source>, SourceState> {
    Err(SourceState::NoGpu)
}

/// The app as a first start shows it on `tab`, in the window's default size, once the GPU
/// probe of the top bar has answered (it runs on its own thread).
fn window(tab: Tab) -> Harness<'static, VramDoctorApp> {
    let mut h = Harness::builder()
        .with_size([1200.0, 780.0])
        .wgpu()
        .build_eframe(move |cc| {
            let mut app = VramDoctorApp::new(cc, Some(tab));
            app.state.monitor.feed.detect = no_gpu;
            let none = std::env::temp_dir().join(format!(
                "vram-doctor-snapshot-no-config-{}",
                std::process::id()
            ));
            app.state.catalog.use_file(none.join("user-presets.toml"));
            app
        });
    for _ in 0..500 {
        h.run();
        if h.query_by_label("no GPU found here").is_some() {
            return h;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("the GPU probe did not answer within 5 s");
}

#[test]
fn planner_window() {
    let mut h = window(Tab::Planner);
    h.run();
    h.snapshot("planner");
}

#[test]
fn monitor_without_a_gpu() {
    let mut h = window(Tab::Monitor);
    h.run();
    h.snapshot("monitor_no_gpu");
}
