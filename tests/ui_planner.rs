//! Planner tab driven by accessible labels, headless (egui_kittest, no renderer).

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use std::path::PathBuf;
use vram_doctor::export::{ExportKind, render};
use vram_doctor::memory::WorkloadFile;
use vram_doctor::plan::plan_any;
use vram_doctor::resolve::resolve_any;
use vram_doctor::ui::files::Dialogs;
use vram_doctor::ui::planner::PlannerView;

#[path = "common/app.rs"]
mod common_app;
use common_app::Picks;

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

/// A fresh planner that opened `file` through "Open workload…", as on the next start.
fn reopen(file: PathBuf) -> Harness<'static, PlannerView> {
    let mut fresh = PlannerView::default();
    fresh.dialogs = Dialogs(Box::new(Picks(file)));
    let mut h = harness(fresh);
    h.run();
    h.get_by_label("Open workload…").click();
    h.run();
    h
}

/// Opens the combo box labelled `combo` and picks `option`, as a user does with the mouse.
fn choose(h: &mut Harness<'static, PlannerView>, combo: &str, option: &str) {
    h.get_by_role_and_label(Role::ComboBox, combo).click();
    h.run();
    h.get_by_label(option).click();
    h.run();
}

#[test]
fn raising_the_batch_turns_the_verdict() {
    let mut h = harness(view(PathBuf::from("unused.toml")));
    h.run();
    h.get_by_label_contains("Fits with");
    assert!(h.query_by_label_contains("Does not fit").is_none());

    h.get_by_role_and_label(Role::Slider, "Batch size")
        .set_value_accesskit(512.0);
    h.run();
    assert_eq!(h.state().workload.run.batch, Some(512));
    h.get_by_label_contains("Does not fit,");
    assert!(h.query_by_label_contains("Fits with").is_none());
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
    h.get_by_label("LLM training").click();
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

    let h2 = reopen(file);
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
    h.get_by_label_contains("Fits with");
}

#[test]
fn an_invalid_combination_says_why_instead_of_a_verdict() {
    let mut v = view(PathBuf::from("unused.toml"));
    v.workload.run.seq = Some(1_000_000);
    let mut h = harness(v);
    h.run();
    h.get_by_label_contains("max_context");
    assert!(h.query_by_label_contains("Fits with").is_none());
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
    h.get_by_label_contains("Fits with");
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
    h.get_by_label_contains("Fits with");
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
    choose(&mut h, "Export format", "ollama");
    h.get_by_label_contains("PARAMETER num_gpu");
    assert!(h.query_by_label_contains("-ngl 999").is_none());

    choose(&mut h, "Export format", "llama.cpp");
    let node = h.get_by_label_contains("-ngl 999");
    // egui gives a label's text as the node's value (older versions: as its label).
    let preview = node
        .value()
        .or_else(|| node.accesskit_node().label())
        .unwrap();
    assert!(preview.contains("llama-server"), "{preview}");

    // Below the memory–speed chart: scrolled into view first, as a user would.
    h.get_by_label("Save export…").scroll_to_me();
    h.run();
    h.get_by_label("Save export…").click();
    h.run();
    h.get_by_label_contains("Saved");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), preview);
}

/// A view on a 12 GiB card switched to the diffusion kind through its selector.
fn diffusion_harness(dialog_path: PathBuf) -> Harness<'static, PlannerView> {
    let mut v = view(dialog_path);
    v.workload.gpu.preset = Some("rtx-3060-12gb".into());
    let mut h = harness(v);
    h.run();
    h.get_by_label("Diffusion").click();
    h.run();
    h
}

/// Picks an entry of a searchable picker by typing part of its name.
fn search_and_pick(h: &mut Harness<'static, PlannerView>, picker: &str, typed: &str, entry: &str) {
    h.get_by_role_and_label(Role::ComboBox, picker).click();
    h.run();
    h.get_by_role(Role::TextInput).focus();
    h.run();
    h.get_by_role(Role::TextInput).type_text(typed);
    h.run();
    h.get_by_label(entry).click();
    h.run();
}

fn set_slider(h: &mut Harness<'static, PlannerView>, label: &str, value: f64) {
    h.get_by_role_and_label(Role::Slider, label)
        .set_value_accesskit(value);
    h.run();
}

#[test]
fn diffusion_resolution_turns_the_verdict_and_the_plan_applies() {
    let mut h = diffusion_harness(PathBuf::from("unused.toml"));
    assert_eq!(
        h.state().workload.gpu.preset.as_deref(),
        Some("rtx-3060-12gb"),
        "switching kind keeps the GPU"
    );
    search_and_pick(
        &mut h,
        "Diffusion model",
        "xl base",
        "Stable Diffusion XL base 1.0 (1024×1024)",
    );
    assert_eq!(h.state().workload.model.preset.as_deref(), Some("sdxl"));
    h.get_by_label_contains("Fits with");
    h.get_by_label("Fits as is: no change needed.");
    h.get_by_label_contains("Largest size that fits: ");

    set_slider(&mut h, "Width", 2048.0);
    set_slider(&mut h, "Height", 2048.0);
    let run = &h.state().workload.run;
    assert_eq!((run.width, run.height), (Some(2048), Some(2048)));
    h.get_by_label_contains("Does not fit,");
    h.get_by_label_contains("Recommended plan: tiled VAE decode");
    assert_eq!(h.state().workload.run.vae_tiling, None);

    h.get_by_label("Apply plan").click();
    h.run();
    assert_eq!(h.state().workload.run.vae_tiling, Some(true));
    h.get_by_label_contains("Fits with");
    assert!(h.query_by_label("Apply plan").is_none());
}

#[test]
fn diffusion_toggles_write_the_workload() {
    let mut h = diffusion_harness(PathBuf::from("unused.toml"));
    h.get_by_label("Tiled VAE decode").click();
    h.run();
    assert_eq!(h.state().workload.run.vae_tiling, Some(true));
    choose(&mut h, "ComfyUI VRAM mode", "lowvram");
    assert_eq!(
        h.state().workload.run.vram_mode.map(|m| m.as_str()),
        Some("lowvram")
    );
    // The export section follows the kind: ComfyUI's launch line, with the chosen mode; with
    // dynamic VRAM (the default) the plan notes that the flag does nothing.
    h.get_by_label_contains("python main.py");
    let lines: Vec<String> = h
        .get_all_by_label_contains("--lowvram")
        .map(|n| format!("{:?} {:?}", n.accesskit_node().label(), n.value()))
        .collect();
    assert!(
        lines.iter().any(|l| l.contains("python main.py"))
            && lines.iter().any(|l| l.contains("--lowvram does nothing")),
        "{lines:?}"
    );
    h.get_by_role_and_label(Role::ComboBox, "Engine").click();
    h.run();
    h.get_by_label("diffusers").click();
    h.run();
    // diffusers has offloading instead of ComfyUI's VRAM modes.
    h.get_by_role_and_label(Role::ComboBox, "CPU offload");
    assert!(
        h.query_by_role_and_label(Role::ComboBox, "ComfyUI VRAM mode")
            .is_none()
    );
}

#[test]
fn switching_kinds_parks_and_restores_each_kind() {
    let mut h = harness(view(PathBuf::from("unused.toml")));
    h.run();
    set_slider(&mut h, "Batch size", 8.0);
    h.get_by_label("Game").click();
    h.run();
    assert_eq!(h.state().workload.run.batch, None);
    assert_eq!(h.state().workload.gpu.preset.as_deref(), Some("rtx-4090"));
    h.get_by_label("LLM inference").click();
    h.run();
    let w = &h.state().workload;
    assert_eq!(w.run.batch, Some(8));
    assert_eq!(w.model.preset.as_deref(), Some("llama-3.1-8b"));
}

#[test]
fn a_game_gets_advice_and_its_plan_applies() {
    let mut v = view(PathBuf::from("unused.toml"));
    v.workload.gpu.preset = Some("rtx-4060-8gb".into());
    let mut h = harness(v);
    h.run();
    h.get_by_label("Game").click();
    h.run();
    search_and_pick(&mut h, "Title", "hogwarts", "Hogwarts Legacy");
    assert_eq!(
        h.state().workload.model.preset.as_deref(),
        Some("hogwarts-legacy")
    );
    choose(&mut h, "Resolution", "1920x1080");
    h.get_by_label_contains("Within the game's budget");
    assert!(h.query_by_label("Apply plan").is_none());

    choose(&mut h, "Resolution", "3840x2160");
    choose(&mut h, "Texture quality", "ultra");
    h.get_by_label("Ray tracing").click();
    h.run();
    assert_eq!(
        h.state().workload.run.resolution.as_deref(),
        Some("3840x2160")
    );
    h.get_by_label_contains("Over budget: uses");
    h.get_by_label("Lower first (most memory for the least quality)");
    h.get_by_label("texture quality: ultra → high");
    h.get_by_label_contains("Recommended plan: texture quality: ultra → high");
    assert!(h.query_all_by_label_contains("saves ").count() >= 2);
    h.get_by_label("Apply plan").click();
    h.run();
    assert!(h.query_by_label_contains("Over budget").is_none());
    assert_ne!(
        h.state().workload.run.texture_quality.as_deref(),
        Some("ultra")
    );
}

#[test]
fn save_report_writes_the_markdown_report_for_any_kind() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.md");
    for kind in ["LLM training", "Diffusion", "Game"] {
        let mut h = harness(view(file.clone()));
        h.run();
        h.get_by_label(kind).click();
        h.run();
        h.get_by_label("Save report…").click();
        h.run();
        h.get_by_label_contains("Saved");
        let w = resolve_any(&h.state().workload, std::path::Path::new("."), None).unwrap();
        let expect = render(ExportKind::Report, &w, &plan_any(&w)).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), expect, "{kind}");
    }
}

#[test]
fn a_saved_diffusion_workload_opens_back_equal() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sdxl.toml");
    let mut h = diffusion_harness(file.clone());
    set_slider(&mut h, "Width", 1536.0);
    h.get_by_label("Tiled VAE decode").click();
    h.run();
    h.get_by_label("Save workload…").click();
    h.run();
    h.get_by_label_contains("Saved");

    let h2 = reopen(file);
    assert_eq!(h2.state().workload, h.state().workload);
    // The file's task chose the kind: the diffusion inputs are shown.
    h2.get_by_role_and_label(Role::ComboBox, "Diffusion model");
    assert_eq!(
        h2.get_by_role_and_label(Role::Slider, "Width")
            .accesskit_node()
            .numeric_value(),
        Some(1536.0)
    );
}

#[test]
fn the_gui_estimate_is_the_cli_result() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        (
            "flux.toml",
            "[gpu]\npreset = \"rtx-4060-8gb\"\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\nwidth = 1280\nbatch = 2\n",
        ),
        (
            "game.toml",
            "[gpu]\npreset = \"rtx-4060-8gb\"\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"game\"\nresolution = \"2560x1440\"\nray_tracing = true\n",
        ),
        (
            "llm.toml",
            "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nmethod = \"qlora\"\n",
        ),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let mut h = harness(view(file.clone()));
        h.run();
        h.get_by_label("Open workload…").click();
        h.run();
        let (_, gui) = h.state_mut().plan_result().unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
            .args(["plan", "--json", "--workload"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let cli = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            cli.trim_end(),
            serde_json::to_string_pretty(&gui).unwrap(),
            "{name}"
        );
        // And the verdict the tab shows is the one of that result.
        h.get_by_label(&vram_doctor::ui::planner::verdict(&gui.verdict));
        assert_eq!(
            h.state().workload,
            WorkloadFile::load(&file).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn a_diffusers_model_index_picks_its_diffusion_preset() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("FLUX.1-schnell");
    std::fs::create_dir(&folder).unwrap();
    let index = folder.join("model_index.json");
    std::fs::write(
        &index,
        r#"{"_class_name":"FluxPipeline","_diffusers_version":"0.30.0","transformer":["diffusers","FluxTransformer2DModel"],"vae":["diffusers","AutoencoderKL"]}"#,
    )
    .unwrap();
    let mut h = harness(view(index));
    h.run();
    h.get_by_label("Open model file…").click();
    h.run();
    let w = &h.state().workload;
    assert_eq!(w.run.task.map(|t| t.as_str()), Some("diffusion"));
    assert_eq!(w.model.preset.as_deref(), Some("flux-schnell"));
    h.get_by_label_contains("FluxPipeline read from");
    h.get_by_label_contains("On NVIDIA GeForce RTX 4090");
}

#[test]
fn fields_of_another_kind_open_on_that_kinds_model() {
    let mut v = view(PathBuf::from("unused.toml"));
    let fields = [("run.task", "game"), ("run.texture_quality", "high")]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into();
    v.open_fields(&fields).unwrap();
    let w = &v.workload;
    assert_eq!(w.run.task.map(|t| t.as_str()), Some("game"));
    assert_eq!(w.run.texture_quality.as_deref(), Some("high"));
    assert_eq!(w.gpu.preset.as_deref(), Some("rtx-4090"));
    resolve_any(w, std::path::Path::new("."), None).expect("a game on a game title");

    let before = v.workload.clone();
    let bad = [("run.task", "diffusion"), ("run.widht", "1024")]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into();
    assert!(v.open_fields(&bad).is_err());
    assert_eq!(v.workload, before, "a refused hand-over changes nothing");

    let mut h = harness(v);
    h.run();
    h.get_by_label("LLM inference").click();
    h.run();
    assert_eq!(
        h.state().workload.model.preset.as_deref(),
        Some("llama-3.1-8b")
    );
}

#[test]
fn the_saved_state_keeps_every_kind_and_older_states_still_load() {
    let mut h = harness(view(PathBuf::from("unused.toml")));
    h.run();
    set_slider(&mut h, "Batch size", 8.0);
    h.get_by_label("Diffusion").click();
    h.run();
    set_slider(&mut h, "Width", 1536.0);
    let json = serde_json::to_string(h.state()).unwrap();
    let back: PlannerView = serde_json::from_str(&json).unwrap();
    assert_eq!(back.workload, h.state().workload);
    assert_eq!(back.parked, h.state().parked);

    // A state saved before the kinds existed: only the workload.
    let old = r#"{"workload":{"gpu":{"preset":"rtx-4090","vram_gib":null,"count":null},"model":{"preset":"llama-3.1-8b"},"run":{"batch":4}}}"#;
    let old: PlannerView = serde_json::from_str(old).unwrap();
    assert_eq!(old.workload.run.batch, Some(4));
    assert_eq!(old.parked, Default::default());
}

/// The SDXL hires-fix workflow (tests/data/comfy/gen_workflows.py), opened through "Open ComfyUI
/// workflow…".
fn hires_fix_opened() -> Harness<'static, PlannerView> {
    let mut h = harness(view(hires_fix_png()));
    h.run();
    h.get_by_label("Open ComfyUI workflow…").click();
    h.run();
    h
}

fn hires_fix_png() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/comfy/sdxl_hires_fix.png")
}

#[test]
fn a_comfyui_workflow_opens_as_its_peak_pass() {
    let h = hires_fix_opened();
    let w = &h.state().workload;
    assert_eq!(w.model.preset.as_deref(), Some("sdxl"));
    // The hires-fix second pass: 1024 × 1.5, batch 2 (tests/data/comfy/gen_workflows.py).
    assert_eq!(
        (w.run.width, w.run.height, w.run.batch),
        (Some(1536), Some(1536), Some(2))
    );
    h.get_by_label_contains("2 sampling passes; planned at its peak, node 8");
    h.get_by_label_contains("Pass at node 11: sdxl 1536×1536, batch 2");
    h.get_by_label_contains("Not modelled: 31 SomeCustomUpscaler");
    h.get_by_label_contains("4 CheckpointLoaderSimple: sd_xl_base_1.0_0.9vae.safetensors → sdxl");
}

/// Issue 18: the workflow's lines follow the card: on a GTX 1650 (no bf16, 4 GB) the passes are
/// planned again (fp16 weights, another need), and back on the RTX 4090 they read as before.
#[test]
fn a_workflows_lines_are_planned_again_for_another_card() {
    let mut h = hires_fix_opened();
    let pass = |h: &Harness<'static, PlannerView>| {
        let n = h.get_by_label_contains("Pass at node 11:");
        let n = n.accesskit_node();
        n.label().or(n.value()).expect("the pass line has a text")
    };
    let on_4090 = pass(&h);
    h.state_mut().workload.gpu.preset = Some("gtx-1650".into());
    h.run();
    let on_1650 = pass(&h);
    assert_ne!(
        on_1650, on_4090,
        "the pass is planned again for the GTX 1650"
    );
    h.state_mut().workload.gpu.preset = Some("rtx-4090".into());
    h.run();
    assert_eq!(pass(&h), on_4090, "back on the RTX 4090");
}

/// Issue 18: "ComfyUI models folder…" next to "Open ComfyUI workflow…" picks the folder whose
/// files' headers identify a workflow's models; the choice is kept with the planner's state.
#[test]
fn the_comfyui_models_folder_is_picked_kept_and_used() {
    let dir = tempfile::tempdir().unwrap();
    // A checkpoint the workflow names, with SDXL's keys but a tenth of its size: its header
    // says it is no SDXL, which the name alone would have planned.
    let ckpt = dir
        .path()
        .join("models/checkpoints/sd_xl_base_1.0_0.9vae.safetensors");
    std::fs::create_dir_all(ckpt.parent().unwrap()).unwrap();
    let header = br#"{"model.diffusion_model.input_blocks.0.0.weight":{"dtype":"F16","shape":[1000],"data_offsets":[0,2000]},"model.diffusion_model.label_emb.0.0.weight":{"dtype":"F16","shape":[1000],"data_offsets":[2000,4000]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.resize(bytes.len() + 4000, 0);
    std::fs::write(&ckpt, bytes).unwrap();
    let mut h = harness(view(dir.path().to_path_buf()));
    h.run();
    h.get_by_label("ComfyUI models folder…").click();
    h.run();
    assert_eq!(h.state().comfy_models.as_deref(), Some(dir.path()));
    let json = serde_json::to_string(h.state()).unwrap();
    let back: PlannerView = serde_json::from_str(&json).unwrap();
    assert_eq!(back.comfy_models.as_deref(), Some(dir.path()));
    // The workflow's checkpoint is read from the folder: not SDXL-sized, so it is asked for.
    h.state_mut().dialogs = Dialogs(Box::new(Picks(hires_fix_png())));
    h.get_by_label("Open ComfyUI workflow…").click();
    h.run();
    h.get_by_label_contains("another model of that family");
    // A folder that is not ComfyUI's is refused and not kept.
    let other = tempfile::tempdir().unwrap();
    h.state_mut().dialogs = Dialogs(Box::new(Picks(other.path().to_path_buf())));
    h.get_by_label("ComfyUI models folder…").click();
    h.run();
    assert_eq!(h.state().comfy_models.as_deref(), Some(dir.path()));
    h.get_by_label_contains("no checkpoints, diffusion_models");
}

/// Issue 17: the memory–speed chart follows the knob being dragged — GPU layers of a
/// llama.cpp run, then the context once the sequence slider moves — and the plan's why still
/// shows the speed of the chosen split.
#[test]
fn the_memory_speed_chart_follows_the_dragged_knob() {
    let mut v = view(PathBuf::from("unused.toml"));
    v.workload.gpu.preset = Some("rtx-4060".into());
    v.workload.model.preset = Some("qwen2.5-14b".into());
    v.workload.run.engine = Some(vram_doctor::memory::Engine::LlamaCpp);
    v.workload.run.weights = Some("q4_k_m".into());
    v.workload.run.seq = Some(16384);
    let mut h = harness(v);
    h.run();
    h.get_by_label("Memory and speed by GPU layers");
    set_slider(&mut h, "Sequence length", 8192.0);
    assert_eq!(h.state().workload.run.seq, Some(8192));
    h.get_by_label("Memory and speed by context length");
    assert!(h.query_by_label("Memory and speed by GPU layers").is_none());
    set_slider(&mut h, "GPU layers (-ngl)", 20.0);
    assert_eq!(h.state().workload.run.gpu_layers, Some(20));
    h.get_by_label("Memory and speed by GPU layers");
    // A transformers run has no -ngl: its chart is by context whatever was dragged.
    choose(&mut h, "Engine", "transformers");
    h.get_by_label("Memory and speed by context length");
}
