//! The eframe application: top bar with the tabs, the current tab's view, and persistence of
//! everything the user set up (eframe storage, restored on the next start).

use super::Tab;
use super::catalog::CatalogView;
use super::doctor::DoctorView;
use super::gpu_picker::GpuPicker;
use super::i18n::{self, Lang, tr};
use super::monitor::MonitorView;
use super::planner::PlannerView;
use super::probe;
use serde::{Deserialize, Serialize};

/// Everything that survives a restart. Views keep their transient parts `#[serde(skip)]`.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AppState {
    pub tab: Tab,
    /// The interface language. The default is English so tests see the same app everywhere;
    /// a first start without saved state takes it from the locale instead (`VramDoctorApp::new`).
    pub lang: Lang,
    pub planner: PlannerView,
    pub monitor: MonitorView,
    pub doctor: DoctorView,
    pub catalog: CatalogView,
}

pub struct VramDoctorApp {
    pub state: AppState,
    /// The top bar's GPU picker; what it picks is the planner's `[gpu]`, saved with the planner.
    gpu_picker: GpuPicker,
    /// Where the app puts what it shows for the probe (`VRAM_DOCTOR_PROBE`), when it is on.
    probe: Option<probe::Shared>,
}

impl VramDoctorApp {
    /// Restores the last session's state when there is one (a state saved by an older version
    /// that no longer reads falls back to the defaults), then applies `start_tab`. A first start
    /// is in English whatever the machine's locale, so tests see the same app everywhere.
    pub fn new(cc: &eframe::CreationContext<'_>, start_tab: Option<Tab>) -> Self {
        Self::restore(cc, start_tab, Lang::default())
    }

    /// As [`Self::new`], but a first start (no saved state) speaks the locale's language
    /// (`LC_ALL`/`LC_MESSAGES`/`LANG`); what the desktop app itself uses.
    pub fn with_locale(cc: &eframe::CreationContext<'_>, start_tab: Option<Tab>) -> Self {
        Self::restore(cc, start_tab, Lang::from_locale(|k| std::env::var(k).ok()))
    }

    fn restore(cc: &eframe::CreationContext<'_>, start_tab: Option<Tab>, first: Lang) -> Self {
        super::install_fonts(&cc.egui_ctx);
        super::install_style(&cc.egui_ctx);
        let saved: Option<AppState> = cc
            .storage
            .and_then(|s| eframe::get_value(s, eframe::APP_KEY));
        let mut state = saved.unwrap_or_else(|| AppState {
            lang: first,
            ..AppState::default()
        });
        if let Some(t) = start_tab {
            state.tab = t;
        }
        VramDoctorApp {
            state,
            gpu_picker: GpuPicker::default(),
            probe: probe::install(&cc.egui_ctx),
        }
    }

    /// What the app shows, for the probe: the tab, the language, the planner's workload and the
    /// result of planning it (what `plan --json` prints for it), the doctor's reading.
    fn probe_state(&mut self) -> serde_json::Value {
        let s = &mut self.state;
        let planned = s.planner.plan_result();
        serde_json::json!({
            "tab": s.tab,
            "lang": s.lang,
            "planner": {
                "workload": s.planner.workload,
                "result": planned.as_ref().ok().map(|(_, r)| r),
                "error": planned.as_ref().err(),
            },
            "doctor": { "note": s.doctor.note() },
        })
    }
}

impl VramDoctorApp {
    /// Opens a workload or a ComfyUI workflow in the planner and shows it (`--open FILE`, a
    /// file dropped on the window).
    pub fn open_file(&mut self, path: &std::path::Path) {
        // `--open` comes before the first frame, which is what sets the thread's language: the
        // status line and the workflow's lines are said in the app's language all the same.
        i18n::set_lang(self.state.lang);
        self.state.planner.open_path(path);
        self.state.tab = Tab::Planner;
    }

    /// One frame: the top bar and the current tab.
    fn frame_ui(&mut self, ui: &mut egui::Ui) {
        // Files dropped on the window (egui `RawInput::dropped_files`, each with its absolute
        // path on the desktop): each opens in the planner, so the last one is what it shows.
        let dropped: Vec<std::path::PathBuf> = ui.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .collect()
        });
        for path in &dropped {
            self.open_file(path);
        }
        let s = &mut self.state;
        i18n::set_lang(s.lang);
        // The machine's cards are read once, with the monitor's source finder.
        self.gpu_picker.start(ui.ctx(), s.monitor.feed.detect);
        egui::Panel::top("top_bar").show(ui, |ui| {
            // Wrapped, so a narrow window moves the language and theme switches to a second
            // row instead of drawing them over the GPU picker (at 800×600 "Dark" was cut off,
            // issue 22); on a wide one they sit at the right edge.
            ui.horizontal_wrapped(|ui| {
                ui.strong("VRAM Doctor");
                ui.separator();
                for t in Tab::ALL {
                    ui.selectable_value(&mut s.tab, t, t.title());
                }
                ui.separator();
                self.gpu_picker.ui(ui, &mut s.planner.workload.gpu);
                right_aligned(ui, |ui| {
                    if let Some(why) = s.lang.problem() {
                        ui.colored_label(ui.visuals().warn_fg_color, why);
                    }
                    lang_ui(ui, &mut s.lang);
                    ui.separator();
                    theme_ui(ui);
                });
            });
        });
        if s.tab != Tab::Monitor {
            s.monitor.hide();
        }
        // Ctrl+Z steps the planner back, unless a text field has the keyboard (it has its own).
        let ctx = ui.ctx().clone();
        if s.tab == Tab::Planner
            && !ctx.egui_wants_keyboard_input()
            && ctx.input_mut(|i| i.consume_key(egui::Modifiers::COMMAND, egui::Key::Z))
        {
            s.planner.undo();
        }
        match s.tab {
            Tab::Planner => s.planner.ui(ui),
            Tab::Monitor => {
                let predicted = s.planner.predicted_bytes();
                s.monitor.game = s.planner.game_workload();
                s.monitor.demo = s.planner.demo_workload();
                s.monitor.ui(ui, predicted);
            }
            Tab::Doctor => {
                s.doctor.context.live = crate::doctor::live::from_session(s.monitor.current(&ctx));
                s.doctor.context.plan = s.planner.plan_summary();
                s.doctor.ui(ui);
                if let Some(fields) = s.doctor.open_in_planner.take() {
                    match s.planner.open_fields(&fields) {
                        Ok(()) => s.tab = Tab::Planner,
                        Err(e) => s.doctor.planner_refused(e),
                    }
                }
            }
            Tab::Catalog => {
                if let Some(p) = s.catalog.ui(ui) {
                    s.planner.take(p);
                    s.tab = Tab::Planner;
                }
            }
        }
        // A watched command that failed: its diagnosis, from whichever tab is shown.
        if let Some(outcome) = s.monitor.watch.failed.take() {
            s.doctor.show_run(&outcome);
            s.tab = Tab::Doctor;
        }
    }
}

impl eframe::App for VramDoctorApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        let before = self.state.planner.snapshot();
        self.frame_ui(ui);
        let pressing = ui.input(|i| i.pointer.any_down());
        self.state.planner.record(before, pressing);
        if self.probe.is_some() {
            let shown = self.probe_state();
            if let Some(Ok(mut p)) = self.probe.as_ref().map(|p| p.lock()) {
                *p = shown;
            }
        }
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, eframe::APP_KEY, &self.state);
    }

    /// The window is cleared to the panel colour, so a view may leave its panel unfilled: on a
    /// software renderer an opaque full-window rectangle doubled the cost of each frame
    /// (README, "Measured cost").
    fn clear_color(&self, visuals: &egui::Visuals) -> [f32; 4] {
        visuals.panel_fill.to_normalized_gamma_f32()
    }
}

/// Draws `add` at the right end of the current row of a wrapped layout when it fits there,
/// else at the start of the next row. Its width is the one measured in the last frame (egui lays
/// out in one pass), so the first frame of a new width may place it once more before it settles.
fn right_aligned(ui: &mut egui::Ui, add: impl FnOnce(&mut egui::Ui)) {
    let id = ui.scope_id().with("right_aligned_width");
    let width: f32 = ui.data(|d| d.get_temp(id)).unwrap_or(0.0);
    let gap = ui.spacing().item_spacing.x;
    let room = ui.available_size_before_wrap().x;
    if width + gap > room {
        ui.end_row();
    } else {
        ui.add_space(room - width - gap);
    }
    let drawn = ui.horizontal(add).response.rect.width();
    if (drawn - width).abs() > 0.5 {
        ui.data_mut(|d| d.insert_temp(id, drawn));
        ui.ctx()
            .request_discard("the top bar's right group changed width");
    }
}

/// Theme choice in words: egui's own theme buttons are emoji the bundled fonts do not have.
fn theme_ui(ui: &mut egui::Ui) {
    use egui::ThemePreference as T;
    let mut pref = ui.options(|o| o.theme_preference);
    for (p, name) in [
        (T::System, tr("System theme")),
        (T::Light, tr("Light")),
        (T::Dark, tr("Dark")),
    ] {
        ui.selectable_value(&mut pref, p, name);
    }
    ui.ctx().set_theme(pref);
}

/// The language switch, each language named in itself so anyone can find their own. A change
/// shows from the next frame on, which egui draws at once because the click asked for it.
fn lang_ui(ui: &mut egui::Ui, lang: &mut Lang) {
    for l in Lang::ALL {
        if ui.selectable_value(lang, l, l.endonym()).changed() {
            i18n::set_lang(*lang);
        }
    }
}
