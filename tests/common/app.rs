//! The whole app, or a view, as the UI tests drive it: a machine with no GPU whatever the test
//! machine has, the user's presets never read from or written to the real config directory, and
//! file dialogs answered without a person.
#![allow(dead_code)]

use egui_kittest::{Harness, HarnessBuilder};
use std::path::PathBuf;
use vram_doctor::telemetry::{Source, SourceState};
use vram_doctor::ui::files::FileDialog;
use vram_doctor::ui::i18n::Lang;
use vram_doctor::ui::{Tab, VramDoctorApp};

/// The GPU finder of a machine without one.
pub fn no_gpu() -> Result<Box<dyn Source>, SourceState> {
    Err(SourceState::NoGpu)
}

/// The app from `builder` (size, renderer), opened on `start` in `lang`, with its presets file
/// at `presets` or, when `None`, at a path that does not exist (nothing is read or saved).
///
/// `Harness::run` may take up to 10 frames to settle instead of kittest's 4: a popup or tooltip
/// area needs sizing frames of its own, and the GPU probe's answer can arrive in the same run
/// (seen once in a full-suite run: "would have settled after 6 steps").
pub fn app_with(
    builder: HarnessBuilder<VramDoctorApp>,
    start: Option<Tab>,
    lang: Lang,
    presets: Option<PathBuf>,
) -> Harness<'static, VramDoctorApp> {
    let presets = presets.unwrap_or_else(|| {
        std::env::temp_dir()
            .join(format!("vram-doctor-no-config-{}", std::process::id()))
            .join("user-presets.toml")
    });
    builder.with_max_steps(10).build_eframe(move |cc| {
        let mut app = VramDoctorApp::new(cc, start);
        app.state.monitor.feed.detect = no_gpu;
        app.state.lang = lang;
        app.state.catalog.use_file(presets.clone());
        app
    })
}

/// The app in English in a 1200×800 window, without a renderer.
pub fn app(start: Option<Tab>) -> Harness<'static, VramDoctorApp> {
    app_with(
        Harness::builder().with_size([1200.0, 800.0]),
        start,
        Lang::English,
        None,
    )
}

/// Answers every file dialog with one fixed path, as if the user had picked it.
pub struct Picks(pub PathBuf);

impl FileDialog for Picks {
    fn open(&mut self, _: &str, _: &[&str]) -> Option<PathBuf> {
        Some(self.0.clone())
    }
    fn save(&mut self, _: &str, _: &str, _: &[&str]) -> Option<PathBuf> {
        Some(self.0.clone())
    }
    fn folder(&mut self, _: &str) -> Option<PathBuf> {
        Some(self.0.clone())
    }
}

/// Runs frames until a text containing `label` is there, bounded: some answers come from a
/// thread (the GPU probe, the doctor's reading).
pub fn wait_for(h: &mut Harness<'static, VramDoctorApp>, label: &str) {
    use egui_kittest::kittest::Queryable;
    for _ in 0..250 {
        if h.query_all_by_label_contains(label).next().is_some() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        h.run();
    }
    panic!("no {label:?} appeared");
}

/// Clicks the control labelled `en` as the app says it in the language it shows.
pub fn click(h: &mut Harness<'static, VramDoctorApp>, en: &str) {
    use egui_kittest::kittest::Queryable;
    let shown = vram_doctor::ui::i18n::tr_in(h.state().state.lang, en).to_string();
    wait_for(h, &shown);
    h.get_all_by_label(&shown).next().unwrap().click();
    h.run();
}

/// On the doctor's tab: types `message` into its box and reads it, until the answer is shown
/// (the reading runs on a thread).
pub fn read_in_doctor(h: &mut Harness<'static, VramDoctorApp>, message: &str) {
    use egui::accesskit::Role;
    use egui_kittest::kittest::Queryable;
    h.get_by_role(Role::MultilineTextInput).click();
    h.run();
    h.get_by_role(Role::MultilineTextInput).type_text(message);
    h.run();
    click(h, "Read message");
    let recognised = vram_doctor::ui::i18n::tr_in(h.state().state.lang, "Recognised: {names}");
    wait_for(h, recognised.split('{').next().unwrap());
}
