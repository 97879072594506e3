//! The whole app headless: tabs by label, going idle, and the no-display path of the binary.

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use vram_doctor::telemetry::{Source, SourceState};
use vram_doctor::ui::{Tab, VramDoctorApp};

#[path = "common/app.rs"]
mod common_app;
use common_app::app;

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

#[test]
fn a_doctor_fix_opens_in_the_planner_with_its_settings() {
    let mut h = app(Some(Tab::Doctor));
    h.run();
    h.get_by_role(Role::MultilineTextInput).focus();
    h.run();
    h.get_by_role(Role::MultilineTextInput).type_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a \
         total capacity of 23.65 GiB of which 1.05 GiB is free. Including non-PyTorch memory, \
         this process has 22.58 GiB memory in use. Of the allocated memory 20.10 GiB is \
         allocated by PyTorch, and 1.90 GiB is reserved by PyTorch but unallocated.",
    );
    h.run();
    h.get_by_label("Read message").click();
    h.run();
    // Answer the wizard's questions (first option) until a fix with a planner link shows.
    let kb = vram_doctor::doctor::Knowledge::get();
    for _ in 0..20 {
        if h.query_all_by_label("Open in planner").next().is_some() {
            break;
        }
        let w = h
            .state()
            .state
            .doctor
            .wizard
            .clone()
            .expect("the wizard started");
        let Ok(vram_doctor::doctor::View::Question { options, .. }) = w.view(kb, "en") else {
            break;
        };
        h.get_by_label(&options[0]).click();
        h.run();
    }
    let before = h.state().state.planner.workload.clone();
    assert_eq!(before.gpu.vram_gib, None);
    // The fixes sit below the fold of the scrolled result, as a user would find them.
    h.get_all_by_label("Open in planner")
        .next()
        .expect("a fix with a planner link")
        .scroll_to_me();
    h.run();
    h.get_all_by_label("Open in planner")
        .next()
        .unwrap()
        .click();
    h.run();
    if let Some(n) = h.query_by_label_contains("Cannot open this fix") {
        panic!("{n:?}");
    }
    let s = &h.state().state;
    assert_eq!(s.tab, Tab::Planner);
    // The card's size comes from the message; the fix changes at least one run setting.
    assert_eq!(
        s.planner.workload.gpu.vram_gib,
        Some(23.65),
        "{:?}",
        s.planner.workload
    );
    assert_ne!(s.planner.workload.run, before.run);
    assert_eq!(s.planner.workload.model, before.model);
    // …and the planner can estimate what it was handed.
    vram_doctor::resolve::resolve_any(
        &s.planner.workload,
        std::path::Path::new("."),
        Some(vram_doctor::import::load_model),
    )
    .expect("the opened workload resolves");
}

#[test]
fn games_and_image_models_open_in_the_planner_as_their_kind() {
    use vram_doctor::memory::Task;
    for (shelf, search, task) in [
        ("Games", "hogwarts", Task::Game),
        ("Image models", "flux", Task::Diffusion),
    ] {
        let mut h = app(Some(Tab::Catalog));
        h.run();
        h.get_by_label(shelf).click();
        h.run();
        h.get_by_role(Role::TextInput).focus();
        h.run();
        h.get_by_role(Role::TextInput).type_text(search);
        h.run();
        h.get_all_by_label("Plan")
            .next()
            .expect("a Plan button on the shelf")
            .click();
        h.run();
        let s = &h.state().state;
        assert_eq!(s.tab, Tab::Planner);
        assert_eq!(s.planner.workload.run.task, Some(task), "{shelf}");
        let preset = s.planner.workload.model.preset.clone().unwrap();
        assert!(preset.contains(search), "{shelf}: {preset}");
        vram_doctor::resolve::resolve_any(&s.planner.workload, std::path::Path::new("."), None)
            .expect("the picked preset plans");
    }
}

#[test]
fn the_top_bar_gpu_picker_searches_the_catalog() {
    let mut h = app(Some(Tab::Planner));
    h.run();
    h.get_by_role_and_label(Role::ComboBox, "GPU").click();
    h.run();
    assert!(
        h.query_all_by_label_contains("(16 GiB)").count() > 0,
        "the open list shows 16 GiB cards"
    );
    h.get_by_role(Role::TextInput).focus();
    h.run();
    h.get_by_role(Role::TextInput).type_text("3060");
    h.run();
    assert_eq!(
        h.query_all_by_label_contains("(16 GiB)").count(),
        0,
        "the search hides other cards"
    );
    h.get_by_label("NVIDIA GeForce RTX 3060 12GB (12 GiB)")
        .click();
    h.run();
    let gpu = &h.state().state.planner.workload.gpu;
    assert_eq!(gpu.preset.as_deref(), Some("rtx-3060-12gb"));
    assert_eq!(gpu.vram_gib, None);
    h.get_all_by_label_contains("of 12.00 GiB").next().unwrap();
}

/// A machine whose only card is the demo source's (23.99 GiB, a name the catalog lacks).
fn demo_gpu() -> Result<Box<dyn Source>, SourceState> {
    Ok(Box::new(vram_doctor::telemetry::demo::DemoSource::new(7)))
}

#[test]
fn this_machines_cards_come_first_in_the_gpu_picker_with_their_real_size() {
    let mut h = Harness::builder()
        .with_size([1200.0, 800.0])
        .with_max_steps(10)
        .build_eframe(|cc| {
            let mut app = VramDoctorApp::new(cc, Some(Tab::Planner));
            app.state.monitor.feed.detect = demo_gpu;
            app
        });
    // The probe runs on its own thread and wakes the UI when done.
    for _ in 0..200 {
        h.run();
        h.get_by_role_and_label(Role::ComboBox, "GPU").click();
        h.run();
        if h.query_all_by_label_contains("this machine")
            .next()
            .is_some()
        {
            break;
        }
        h.key_press(egui::Key::Escape);
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let ours = h.get_by_label_contains("DEMO GeForce RTX 4090 (synthetic data) (23.99 GiB)");
    let catalog_first = h.get_by_label_contains("GTX 1050 Ti (4 GiB)");
    assert!(
        ours.rect().top() < catalog_first.rect().top(),
        "this machine's card is listed above the catalog"
    );
    h.get_all_by_label_contains("this machine")
        .next()
        .unwrap()
        .click();
    h.run();
    let gpu = &h.state().state.planner.workload.gpu;
    // Unknown to the catalog: planned by the size its driver reports.
    assert_eq!(gpu.preset, None);
    let total = gpu.vram_gib.expect("the driver's size");
    assert!((total - 23.99).abs() < 0.01, "{total}");
}

#[test]
fn the_tabs_can_be_reached_and_opened_with_the_keyboard() {
    let mut h = app(Some(Tab::Planner));
    h.run();
    // Tab moves the focus from widget to widget, starting at the top bar.
    for _ in 0..10 {
        h.key_press(egui::Key::Tab);
        h.run();
        if h.get_by_label("Doctor").is_focused() {
            break;
        }
    }
    assert!(
        h.get_by_label("Doctor").is_focused(),
        "Tab reaches the Doctor tab"
    );
    h.key_press(egui::Key::Enter);
    h.run();
    assert_eq!(h.state().state.tab, Tab::Doctor);
}

/// Frames until `done` holds (a watched child's output and exit land on other threads), or fails.
fn frames_until(
    h: &mut Harness<'static, VramDoctorApp>,
    what: &str,
    done: impl Fn(&VramDoctorApp) -> bool,
) {
    for _ in 0..400 {
        h.step();
        if done(h.state()) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("{what} did not happen within 10 s");
}

/// The app on the monitor with "Watch a command…" open.
fn watch_panel() -> Harness<'static, VramDoctorApp> {
    let mut h = app(Some(Tab::Monitor));
    h.run();
    h.get_by_label("Watch a command…").click();
    h.run();
    h
}

/// Types `text` into the field labelled `label`, as a user who clicked into it.
fn type_into(h: &mut Harness<'static, VramDoctorApp>, label: &str, text: &str) {
    h.get_by_label(label).focus();
    h.step();
    h.get_by_label(label).type_text(text);
    h.step();
}

/// The monitor's "Watch a command…": a command line typed into the panel runs as a child,
/// its output shows, and when it fails with an out-of-memory line the doctor tab opens with
/// the failure read and the wizard started; the child is gone afterwards.
#[test]
fn a_watched_command_that_fails_opens_the_doctor_with_its_diagnosis() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = watch_panel();
    // Starting with no command line says what to do and starts nothing.
    h.get_by_label("Start").click();
    h.run();
    h.get_by_label("Type a command line first.");
    type_into(
        &mut h,
        "Command line",
        "echo 'epoch 1'; echo $$ > pid; sleep 0.3; \
         echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.05 GiB is free.' >&2; exit 3",
    );
    type_into(&mut h, "Working directory", dir.path().to_str().unwrap());
    h.get_by_label("Start").click();
    h.step();
    assert!(h.state().state.monitor.watch.active(), "the run started");
    frames_until(&mut h, "the run's first output line", |a| {
        a.state.monitor.watch.active() && dir.path().join("pid").exists()
    });
    frames_until(&mut h, "the doctor tab opening", |a| {
        a.state.tab == Tab::Doctor
    });
    let doctor = &h.state().state.doctor;
    assert!(
        doctor.message.contains("Tried to allocate 2.00 GiB"),
        "{}",
        doctor.message
    );
    let w = doctor.wizard.as_ref().expect("the wizard started");
    assert!(!w.observations.is_empty(), "the failure line was read");
    h.run();
    h.get_by_label_contains("From the watched run of sh -c");
    h.get_by_label_contains("exit code 3");
    // The shell that ran the command is gone (ended and reaped, not a zombie or orphan).
    let pid: u32 = std::fs::read_to_string(dir.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    // Back on the monitor, the panel says how the run ended.
    h.get_by_label("Monitor").click();
    h.run();
    h.get_by_label_contains("failed (exit code 3");
}

/// Stop ends a watched command that would run for a minute, and a clean end opens nothing.
#[test]
fn stop_ends_a_watched_command_and_nothing_opens() {
    let mut h = watch_panel();
    type_into(&mut h, "Command line", "echo started; sleep 60");
    h.get_by_label("Start").click();
    h.step();
    frames_until(&mut h, "the run starting", |a| {
        a.state.monitor.watch.active()
    });
    h.get_by_label("Stop").click();
    frames_until(&mut h, "the run ending", |a| {
        !a.state.monitor.watch.active()
    });
    assert_eq!(h.state().state.tab, Tab::Monitor);
    h.run();
    h.get_by_label_contains("ended (exit code 143");
}

/// A card that is full, with another program ("chrome") holding 8 GiB of it.
fn full_card_reading() -> vram_doctor::telemetry::Snapshot {
    use vram_doctor::telemetry::{GpuSample, MemorySample, ProcessSample, Snapshot};
    const GIB: u64 = 1 << 30;
    let proc = |pid, name: &str, used| ProcessSample {
        pid,
        name: Some(name.into()),
        used: Some(used),
        ..Default::default()
    };
    Snapshot {
        time_ms: 1_000_000,
        gpus: vec![GpuSample {
            uuid: Some("GPU-full".into()),
            name: "Test GPU".into(),
            memory: Some(MemorySample {
                total: 24 * GIB,
                used: 23 * GIB + GIB / 2,
                ..Default::default()
            }),
            processes: Some(vec![
                proc(4242, "python", 15 * GIB),
                proc(99, "chrome", 8 * GIB),
            ]),
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn the_doctor_sees_the_monitors_reading_and_the_planners_verdict() {
    // Alone, the doctor knows nothing and asks the first question.
    let mut h = app(Some(Tab::Doctor));
    h.run();
    h.get_by_label("Start without a message").click();
    h.run();
    h.get_by_label("What is wrong?");
    assert!(h.query_by_label("Evidence").is_none());

    // With a reading in the monitor and a plan that does not fit, the same start shows both as
    // evidence, which answers the first question and points at causes.
    let mut h = app(Some(Tab::Doctor));
    let (tx, rx) = std::sync::mpsc::channel();
    h.state_mut().state.monitor.connect(rx);
    tx.send(full_card_reading()).unwrap();
    let fields = std::collections::BTreeMap::from([
        ("run.batch".to_string(), "64".to_string()),
        ("run.seq".to_string(), "131072".to_string()),
    ]);
    h.state_mut().state.planner.open_fields(&fields).unwrap();
    h.state_mut().state.tab = Tab::Doctor;
    h.run();
    h.get_by_label("Start without a message").click();
    h.run();
    h.get_by_label("Evidence");
    h.get_by_label("• Other processes hold 8.00 GiB of the 24.00 GiB card right now.");
    h.get_by_label("• 23.50 GiB of 24.00 GiB is in use right now.");
    h.get_by_label_contains("• The planner estimates ");
    assert!(h.query_by_label("What is wrong?").is_none(), "answered");
    h.get_by_label_contains("(answered from the evidence: ");
}

/// A file dropped from the desktop, as eframe hands it over: its path, its bytes on demand.
#[derive(Debug)]
struct Dropped(std::path::PathBuf);

impl egui::DroppedFile for Dropped {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
    fn bytes(&self) -> Result<Vec<u8>, String> {
        std::fs::read(&self.0).map_err(|e| e.to_string())
    }
}

/// A ComfyUI PNG dropped on the window while the doctor is shown: the planner opens it (as
/// "Open ComfyUI workflow…" does) and comes to the front; a file it does not open is refused
/// in words and the planner keeps its workload.
#[test]
fn a_workflow_dropped_on_the_window_opens_in_the_planner() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/comfy");
    let mut h = app(Some(Tab::Doctor));
    h.run();
    let before = h.state().state.planner.workload.clone();
    h.input_mut()
        .dropped_files
        .push(std::sync::Arc::new(Dropped(data.join("notes.txt"))));
    h.run();
    assert_eq!(h.state().state.tab, Tab::Planner);
    assert_eq!(h.state().state.planner.workload, before);
    h.get_by_label_contains("notes.txt: not a file the planner opens");

    h.input_mut()
        .dropped_files
        .push(std::sync::Arc::new(Dropped(
            data.join("sdxl_hires_fix.png"),
        )));
    h.run();
    let w = &h.state().state.planner.workload;
    assert_eq!(w.model.preset.as_deref(), Some("sdxl"));
    assert_eq!((w.run.width, w.run.height), (Some(1536), Some(1536)));
    h.get_by_label_contains("2 sampling passes; planned at its peak");
    // The loaded models are listed with their memory.
    h.get_by_label_contains("4 CheckpointLoaderSimple: sd_xl_base_1.0_0.9vae.safetensors → sdxl, ");
}
