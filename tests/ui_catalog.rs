//! Catalog tab: the user's own presets through the form (add, a bad value refused, edit, plan,
//! delete), a corrupt presets file set aside with a banner, and the games shelf.

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use std::path::{Path, PathBuf};
use vram_doctor::catalog::user::{self, FILE_NAME, UserStore};
use vram_doctor::ui::{Tab, VramDoctorApp};

#[path = "common/app.rs"]
mod common_app;
use common_app::app_with;
use vram_doctor::ui::i18n::Lang;

/// The whole app on the catalog tab, with its presets file at `file`.
fn app(file: PathBuf) -> Harness<'static, VramDoctorApp> {
    let mut h = app_with(
        Harness::builder().with_size([1400.0, 1000.0]),
        Some(Tab::Catalog),
        Lang::English,
        Some(file),
    );
    h.run();
    h
}

/// Replaces the text of the field labelled `label`.
fn fill(h: &mut Harness<'static, VramDoctorApp>, label: &str, text: &str) {
    h.get_by_role_and_label(Role::TextInput, label).focus();
    h.run();
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.run();
    h.get_by_role_and_label(Role::TextInput, label)
        .type_text(text);
    h.run();
}

fn click(h: &mut Harness<'static, VramDoctorApp>, label: &str) {
    h.get_by_label(label).click();
    h.run();
}

fn on_disk(path: &Path) -> user::UserPresets {
    user::read(path).expect("the saved file reads")
}

#[test]
fn add_edit_plan_and_delete_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config").join(FILE_NAME);
    let mut h = app(path.clone());
    assert!(h.query_by_label("yours").is_none());

    click(&mut h, "Add GPU…");
    fill(&mut h, "Name", "Lab card");
    fill(&mut h, "Memory (GiB)", "twelve");
    click(&mut h, "Save");
    h.get_by_label("“twelve” is not a number");
    assert!(!path.exists(), "a bad value never saves");
    fill(&mut h, "Memory (GiB)", "-4");
    click(&mut h, "Save");
    h.get_by_label_contains("out of range");
    assert!(!path.exists());

    fill(&mut h, "Memory (GiB)", "12");
    click(&mut h, "Save");
    h.get_by_label_contains("Saved “Lab card”");
    let saved = on_disk(&path);
    assert_eq!(saved.gpus.len(), 1);
    assert_eq!(saved.gpus[0].vram_gib, 12.0);
    h.get_by_label("yours");
    h.get_by_label("Lab card");
    assert!(
        h.query_by_role_and_label(Role::TextInput, "Memory (GiB)")
            .is_none(),
        "the form closes once saved"
    );

    click(&mut h, "Edit");
    assert_eq!(
        h.get_by_role_and_label(Role::TextInput, "Memory (GiB)")
            .value()
            .as_deref(),
        Some("12")
    );
    fill(&mut h, "Memory (GiB)", "20");
    click(&mut h, "Save");
    let saved = on_disk(&path);
    assert_eq!((saved.gpus.len(), saved.gpus[0].vram_gib), (1, 20.0));

    // Plan with it: the planner gets the card's capacity and shows it.
    h.get_all_by_label("Plan").next().unwrap().click();
    h.run();
    assert_eq!(h.state().state.tab, Tab::Planner);
    assert_eq!(h.state().state.planner.workload.gpu.vram_gib, Some(20.0));
    h.get_by_label_contains("to spare: needs");
    h.get_all_by_label_contains("of 20.00 GiB").next().unwrap();

    click(&mut h, "Catalog");
    click(&mut h, "Delete");
    h.get_by_label("Delete “Lab card” from your presets?");
    click(&mut h, "Keep it");
    assert_eq!(on_disk(&path).gpus.len(), 1, "keeping deletes nothing");
    click(&mut h, "Delete");
    click(&mut h, "Yes, delete");
    assert!(on_disk(&path).gpus.is_empty());
    assert!(h.query_by_label("yours").is_none());
    h.get_by_label_contains("Deleted “Lab card”");
}

#[test]
fn a_copied_model_is_checked_saved_and_planned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let mut h = app(path.clone());
    click(&mut h, "Models");
    h.get_by_role_and_label(Role::TextInput, "Search").focus();
    h.run();
    h.get_by_role_and_label(Role::TextInput, "Search")
        .type_text("llama 3.1 8b");
    h.run();
    h.get_all_by_label("Copy to my presets")
        .next()
        .expect("Llama 3.1 8B listed")
        .click();
    h.run();
    fill(&mut h, "Name", "My Llama");
    fill(&mut h, "KV heads", "5");
    click(&mut h, "Save");
    h.get_by_label_contains("must divide the attention heads");
    assert!(!path.exists());
    fill(&mut h, "KV heads", "8");
    fill(&mut h, "Search", "my llama");
    click(&mut h, "Save");
    let saved = on_disk(&path);
    assert_eq!(saved.models.len(), 1);
    assert_eq!(saved.models[0].kv_heads, 8);
    h.get_by_label("yours");

    h.get_all_by_label("Plan").next().unwrap().click();
    h.run();
    let planner = &h.state().state.planner;
    assert_eq!(planner.workload.model.preset, None);
    assert_eq!(planner.workload.model.layers, Some(32));
    // The planner estimates with it as it would with the built-in it was copied from.
    h.get_by_label_contains("Fits with");
}

#[test]
fn a_corrupt_file_is_set_aside_with_a_banner() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let bytes = b"[[gpu]]\nid = \"a\"\nname = \"A\"\nvram_gib = \"lots\"\n";
    std::fs::write(&path, bytes).unwrap();
    let mut h = app(path.clone());
    h.get_by_label("Your presets file was set aside");
    h.get_by_label_contains("line 4");
    let copy = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(".corrupt-"))
        .expect("a .corrupt copy");
    assert_eq!(std::fs::read(&copy).unwrap(), bytes);
    h.get_by_label_contains(&copy.to_string_lossy());
    click(&mut h, "Dismiss");
    assert!(
        h.query_by_label("Your presets file was set aside")
            .is_none()
    );
    // The app goes on with an empty set, and saving works again.
    assert!(UserStore::open(path).presets.gpus.is_empty());
}

#[test]
fn games_are_browsed_with_their_measurements() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = app(dir.path().join(FILE_NAME));
    click(&mut h, "Games");
    h.get_by_label("Cyberpunk 2077");
    h.get_all_by_label_contains("GiB at 3840x2160")
        .next()
        .expect("a 4K measurement");
    assert!(h.query_by_label("Add GPU…").is_none());
}

#[test]
fn a_failed_save_says_why_and_keeps_the_file_and_the_form() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let mut h = app(path.clone());
    click(&mut h, "Add GPU…");
    fill(&mut h, "Name", "First");
    fill(&mut h, "Memory (GiB)", "8");
    click(&mut h, "Save");
    let before = std::fs::read(&path).unwrap();
    // The temporary file's path taken by a directory: the atomic write fails (even for root).
    std::fs::create_dir(vram_doctor::atomic_write::temp_path(&path).unwrap()).unwrap();
    click(&mut h, "Add GPU…");
    fill(&mut h, "Name", "Second");
    fill(&mut h, "Memory (GiB)", "16");
    click(&mut h, "Save");
    h.get_by_label_contains("cannot write");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the old file is kept"
    );
    assert_eq!(
        h.get_by_role_and_label(Role::TextInput, "Name")
            .value()
            .as_deref(),
        Some("Second"),
        "the form stays open with what was typed"
    );
    assert_eq!(
        h.query_all_by_label("yours").count(),
        1,
        "only the saved GPU is listed"
    );
}

/// The models shelf lists the published weight format of each row; planning a row shipped in
/// MXFP4 (gpt-oss) opens the planner with that format, as for the model's own files.
#[test]
fn a_model_row_shows_and_plans_its_published_format() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = app(dir.path().join(FILE_NAME));
    click(&mut h, "Models");
    h.get_by_label("Weights");
    fill(&mut h, "Search", "gpt-oss 20b");
    h.get_by_label("gpt-oss 20B");
    h.get_by_label("mxfp4");
    assert!(
        h.query_by_label("Llama 3.1 8B").is_none(),
        "the search filters"
    );
    fill(&mut h, "Search", "llama 3.1 8b");
    h.get_by_label("bf16");
    fill(&mut h, "Search", "gpt-oss 20b");
    h.get_all_by_label("Plan").next().unwrap().click();
    h.run();
    let planner = &h.state().state.planner;
    assert_eq!(
        planner.workload.model.preset.as_deref(),
        Some("gpt-oss-20b")
    );
    // The planner's model picker names the format, and the plan says where it came from.
    let picker = h.get_by_role_and_label(Role::ComboBox, "Model");
    let shown = format!("{:?}", picker.value());
    assert!(shown.contains("gpt-oss 20B · mxfp4"), "{shown}");
    h.get_all_by_label_contains("the format the model's files hold")
        .next()
        .expect("the plan says which format it used");
}
