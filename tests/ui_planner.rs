//! Planner tab driven by accessible labels, headless (egui_kittest, no renderer).

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use std::path::PathBuf;
use vram_doctor::ui::files::{Dialogs, FileDialog};
use vram_doctor::ui::planner::PlannerView;

/// Answers every dialog with one fixed path, as if the user had picked it.
struct Picks(PathBuf);

impl FileDialog for Picks {
    fn open(&mut self, _: &str, _: &[&str]) -> Option<PathBuf> {
        Some(self.0.clone())
    }
    fn save(&mut self, _: &str, _: &str, _: &[&str]) -> Option<PathBuf> {
        Some(self.0.clone())
    }
}

/// An 8B model in bf16 on a 24 GiB card: about 15 GiB of weights, so it fits at batch 1.
fn view(dialog_path: PathBuf) -> PlannerView {
    let mut v = PlannerView::default();
    v.workload.gpu.preset = Some("rtx-4090".into());
    v.workload.model.preset = Some("llama-3.1-8b".into());
    v.dialogs = Dialogs(Box::new(Picks(dialog_path)));
    v
}

fn harness(v: PlannerView) -> Harness<'static, PlannerView> {
    Harness::builder()
        .with_context_setup(vram_doctor::ui::install_fonts)
        .with_size([1200.0, 900.0])
        .build_ui_state(|ui, v: &mut PlannerView| v.ui(ui), v)
}

#[test]
fn raising_the_batch_turns_the_verdict() {
    let mut h = harness(view(PathBuf::from("unused.toml")));
    h.run();
    h.get_by_label_contains("Fits: needs");
    assert!(h.query_by_label_contains("Does not fit").is_none());

    h.get_by_role_and_label(Role::Slider, "Batch size")
        .set_value_accesskit(512.0);
    h.run();
    assert_eq!(h.state().workload.run.batch, Some(512));
    h.get_by_label_contains("Does not fit: needs");
    assert!(h.query_by_label_contains("Fits: needs").is_none());
}

#[test]
fn components_are_listed_with_the_bar() {
    let mut h = harness(view(PathBuf::from("unused.toml")));
    h.run();
    h.get_by_label("Model weights");
    h.get_by_label("Activations (prefill)");
    h.get_by_label_contains("Memory bar:");
}

#[test]
fn training_knobs_appear_for_training() {
    let mut h = harness(view(PathBuf::from("unused.toml")));
    h.run();
    assert!(
        h.query_by_role_and_label(Role::ComboBox, "Optimizer")
            .is_none()
    );
    h.get_by_label("training").click();
    h.run();
    h.get_by_role_and_label(Role::ComboBox, "Optimizer");
    h.get_by_role_and_label(Role::Slider, "ZeRO stage");
}

#[test]
fn save_then_open_round_trips_the_workload() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.toml");
    let mut h = harness(view(file.clone()));
    h.run();
    h.get_by_role_and_label(Role::Slider, "Batch size")
        .set_value_accesskit(8.0);
    h.run();
    h.get_by_label("Save workload…").click();
    h.run();
    h.get_by_label_contains("Saved");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("batch = 8"), "{text}");

    let mut fresh = PlannerView::default();
    fresh.dialogs = Dialogs(Box::new(Picks(file)));
    let mut h2 = harness(fresh);
    h2.run();
    h2.get_by_label("Open workload…").click();
    h2.run();
    assert_eq!(h2.state().workload, h.state().workload);
}

#[test]
fn a_malformed_file_is_reported_and_the_workload_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.toml");
    std::fs::write(&file, "[gpu\npreset = \"rtx-4090\"\n").unwrap();
    let mut h = harness(view(file));
    h.run();
    let before = h.state().workload.clone();
    h.get_by_label("Open workload…").click();
    h.run();
    h.get_by_label_contains("broken.toml: line 1");
    assert_eq!(h.state().workload, before);
    h.get_by_label_contains("Fits: needs");
}

#[test]
fn an_invalid_combination_says_why_instead_of_a_verdict() {
    let mut v = view(PathBuf::from("unused.toml"));
    v.workload.run.seq = Some(1_000_000);
    let mut h = harness(v);
    h.run();
    h.get_by_label_contains("max_context");
    assert!(h.query_by_label_contains("Fits: needs").is_none());
}

#[test]
fn the_gpu_picker_searches_the_catalog() {
    let mut h = harness(view(PathBuf::from("unused.toml")));
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
    assert_eq!(
        h.state().workload.gpu.preset.as_deref(),
        Some("rtx-3060-12gb")
    );
    h.get_by_label_contains("of 12.00 GiB, ");
}

#[test]
fn applying_the_recommended_plan_makes_it_fit() {
    let mut v = view(PathBuf::from("unused.toml"));
    v.workload.gpu.preset = Some("rtx-3060-12gb".into());
    let mut h = harness(v);
    h.run();
    h.get_by_label_contains("Does not fit");
    h.get_by_label_contains("Recommended plan:");
    h.get_by_label_contains("Largest batch that fits: none fits");
    h.get_by_label("Apply plan").click();
    h.run();
    h.get_by_label_contains("Fits: needs");
    assert!(
        h.query_by_label("Apply plan").is_none(),
        "nothing left to apply"
    );
    let run = &h.state().workload.run;
    assert!(
        run.weights.is_some() || run.kv_cache.is_some(),
        "the plan changed the file form: {run:?}"
    );
    h.get_by_label_contains("Largest batch that fits: ");
    assert!(
        h.query_by_label_contains("Largest batch that fits: none")
            .is_none()
    );
}

#[test]
fn a_model_file_replaces_the_preset() {
    let config = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/configs/mistral-7b-v0.1.json");
    let mut h = harness(view(config.clone()));
    h.run();
    h.get_by_label("Open model file…").click();
    h.run();
    assert_eq!(
        h.state().workload.model.file.as_deref(),
        Some(config.as_path())
    );
    assert_eq!(h.state().workload.model.preset, None);
    h.get_by_label_contains("Per GPU on");
    h.get_by_label_contains("Fits: needs");
}

#[test]
fn an_export_is_previewed_and_saved() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.sh");
    // q4_k_m weights run on llama.cpp: its exports are llama.cpp and ollama.
    let mut v = view(file.clone());
    v.workload.run.weights = Some("q4_k_m".into());
    let mut h = harness(v);
    h.run();
    h.get_by_role_and_label(Role::ComboBox, "Export format")
        .click();
    h.run();
    h.get_by_label("ollama").click();
    h.run();
    h.get_by_label_contains("PARAMETER num_gpu");
    assert!(h.query_by_label_contains("-ngl 999").is_none());

    h.get_by_role_and_label(Role::ComboBox, "Export format")
        .click();
    h.run();
    h.get_by_label("llama.cpp").click();
    h.run();
    let node = h.get_by_label_contains("-ngl 999");
    // egui gives a label's text as the node's value (older versions: as its label).
    let preview = node
        .value()
        .or_else(|| node.accesskit_node().label())
        .unwrap();
    assert!(preview.contains("llama-server"), "{preview}");

    h.get_by_label("Save export…").click();
    h.run();
    h.get_by_label_contains("Saved");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), preview);
}
