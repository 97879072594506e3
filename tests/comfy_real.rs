//! Real ComfyUI workflows the project did not write (from comfyanonymous/ComfyUI_examples;
//! `SOURCES.md` beside them says where each comes from): every loader and latent node is read
//! with the values ComfyUI itself recorded, every other node is either one the planner models or
//! is listed as not modelled, and each plans with the models and sizes it names, or asks for the
//! model files the catalog does not know.
//!
//! They are third-party files, so they stay out of this repository's commits and live in the
//! team's shared folder, `../shared/reference/comfy_workflows` (or `shared/reference/…` in a
//! checkout that links `shared/`). Without them each test says so and checks nothing.

use std::path::PathBuf;
use vram_doctor::import::comfy::nodes::{self, Role};
use vram_doctor::import::comfy::{self, Input, Node, Workflow};
use vram_doctor::memory::diffusion::Bus;
use vram_doctor::plan::workflow::files::Answers;
use vram_doctor::plan::workflow::{Launch, WorkflowPlan, plan, unmodelled};
use vram_doctor::types::workload::GpuTarget;

/// The folder of the real workflows, when this machine has it.
fn folder() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let found = [
        root.join("../shared/reference/comfy_workflows"),
        root.join("shared/reference/comfy_workflows"),
    ]
    .into_iter()
    .find(|d| d.join("SOURCES.md").is_file());
    if found.is_none() {
        eprintln!(
            "shared/reference/comfy_workflows not present (third-party workflows, kept out of the repository): the real-workflow checks did not run"
        );
    }
    found
}

fn read_in(dir: &std::path::Path, name: &str) -> Workflow {
    comfy::read(&dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Workflows whose PNG held both the UI format (`NAME.json`) and the API format ComfyUI ran
/// (`NAME.api.json`).
const PAIRS: [&str; 7] = [
    "sd3.5_simple_example",
    "sd3.5_large_canny_controlnet_example",
    "sdxl_refiner_prompt_example",
    "hiresfix_latent_workflow",
    "flux_dev_example",
    "flux_dev_checkpoint_example",
    "controlnet_example",
];

/// Workflows kept as the editor saved them, UI format only.
const UI_ONLY: [&str; 5] = [
    "text_to_video_wan",
    "hunyuan_video_text_to_video",
    "ltxv_text_to_video",
    "text_to_video_wan22_5B",
    "text_to_video_cosmos_7B",
];

/// Whether a node loads a model or makes or resizes a latent: the nodes whose values decide
/// the plan.
fn decides(n: &Node) -> bool {
    matches!(
        nodes::get(&n.class_type).map(|t| t.role),
        Some(
            Role::Checkpoint
                | Role::Unet
                | Role::UnetGguf
                | Role::Clip
                | Role::Vae
                | Role::Lora
                | Role::Controlnet
                | Role::ClipVision
                | Role::UpscaleModel
                | Role::Latent
                | Role::LatentUpscale
                | Role::LatentUpscaleBy
                | Role::LatentRepeat
                | Role::DecodeTiled
        )
    )
}

fn literals(n: &Node) -> Vec<(String, serde_json::Value)> {
    n.inputs
        .iter()
        .filter_map(|(k, v)| match v {
            Input::Value(v) => Some((k.clone(), v.clone())),
            Input::Link { .. } => None,
        })
        .collect()
}

/// Every node is one the planner models or is listed by id and class; a node whose class
/// says it loads something or makes a latent is never among the unknown ones (a loader or
/// latent node the table lacks would be planned without its memory).
fn nothing_dropped(name: &str, w: &Workflow) {
    let listed = unmodelled(w);
    for n in w.nodes.values() {
        let known = nodes::get(&n.class_type).is_some();
        let entry = format!("{} {}", n.id, n.class_type);
        assert!(
            known != listed.contains(&entry),
            "{name}: node {entry} is neither modelled nor listed"
        );
        assert!(
            known || !(n.class_type.contains("Loader") || n.class_type.contains("Latent")),
            "{name}: {entry} loads a model or makes a latent and is not modelled"
        );
    }
}

#[test]
fn loader_and_latent_nodes_read_as_comfyui_recorded_them() {
    let Some(dir) = folder() else { return };
    for name in PAIRS {
        let ui = read_in(&dir, &format!("{name}.json"));
        let api = read_in(&dir, &format!("{name}.api.json"));
        let mut checked = 0;
        for (id, a) in &api.nodes {
            if !decides(a) {
                continue;
            }
            let u = ui
                .node(id)
                .unwrap_or_else(|| panic!("{name}: node {id} missing from the UI read"));
            assert_eq!(u.class_type, a.class_type, "{name}: node {id}");
            assert_eq!(
                literals(u),
                literals(a),
                "{name}: node {id} ({}) read from the UI format differs from what ComfyUI ran",
                a.class_type
            );
            checked += 1;
        }
        // Every one of the UI read's deciding nodes is in what ran, and there is one at least.
        let ui_deciding = ui.nodes.values().filter(|n| decides(n)).count();
        assert_eq!(checked, ui_deciding, "{name}");
        assert!(checked >= 2, "{name}: {checked} loader/latent nodes");
        nothing_dropped(name, &ui);
        nothing_dropped(name, &api);
    }
}

/// (workflow, node, class, the values its widgets hold in the file): read off each file's
/// `widgets_values` by the node's INPUT_TYPES in ComfyUI (nodes.py, comfy_extras/nodes_*.py),
/// by hand, independently of presets/comfyui_nodes.toml.
type Expected = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

const UI_VALUES: &[Expected] = &[
    (
        "text_to_video_wan",
        "37",
        "UNETLoader",
        &[
            ("unet_name", "\"wan2.1_t2v_1.3B_fp16.safetensors\""),
            ("weight_dtype", "\"default\""),
        ],
    ),
    (
        "text_to_video_wan",
        "38",
        "CLIPLoader",
        &[
            ("clip_name", "\"umt5_xxl_fp8_e4m3fn_scaled.safetensors\""),
            ("type", "\"wan\""),
            ("device", "\"default\""),
        ],
    ),
    (
        "text_to_video_wan",
        "39",
        "VAELoader",
        &[("vae_name", "\"wan_2.1_vae.safetensors\"")],
    ),
    (
        "text_to_video_wan",
        "40",
        "EmptyHunyuanLatentVideo",
        &[
            ("width", "832"),
            ("height", "480"),
            ("length", "33"),
            ("batch_size", "1"),
        ],
    ),
    (
        "hunyuan_video_text_to_video",
        "10",
        "VAELoader",
        &[("vae_name", "\"hunyuan_video_vae_bf16.safetensors\"")],
    ),
    (
        "hunyuan_video_text_to_video",
        "11",
        "DualCLIPLoader",
        &[
            ("clip_name1", "\"clip_l.safetensors\""),
            ("clip_name2", "\"llava_llama3_fp8_scaled.safetensors\""),
            ("type", "\"hunyuan_video\""),
        ],
    ),
    (
        "hunyuan_video_text_to_video",
        "12",
        "UNETLoader",
        &[
            ("unet_name", "\"hunyuan_video_t2v_720p_bf16.safetensors\""),
            ("weight_dtype", "\"default\""),
        ],
    ),
    (
        "hunyuan_video_text_to_video",
        "45",
        "EmptyHunyuanLatentVideo",
        &[
            ("width", "848"),
            ("height", "480"),
            ("length", "73"),
            ("batch_size", "1"),
        ],
    ),
    (
        "hunyuan_video_text_to_video",
        "73",
        "VAEDecodeTiled",
        &[("tile_size", "256"), ("overlap", "64")],
    ),
    (
        "ltxv_text_to_video",
        "38",
        "CLIPLoader",
        &[
            ("clip_name", "\"t5xxl_fp16.safetensors\""),
            ("type", "\"ltxv\""),
        ],
    ),
    (
        "ltxv_text_to_video",
        "44",
        "CheckpointLoaderSimple",
        &[("ckpt_name", "\"ltx-video-2b-v0.9.safetensors\"")],
    ),
    (
        "ltxv_text_to_video",
        "70",
        "EmptyLTXVLatentVideo",
        &[
            ("width", "768"),
            ("height", "512"),
            ("length", "97"),
            ("batch_size", "1"),
        ],
    ),
    (
        "text_to_video_wan22_5B",
        "37",
        "UNETLoader",
        &[
            ("unet_name", "\"wan2.2_ti2v_5B_fp16.safetensors\""),
            ("weight_dtype", "\"default\""),
        ],
    ),
    (
        "text_to_video_wan22_5B",
        "38",
        "CLIPLoader",
        &[
            ("clip_name", "\"umt5_xxl_fp8_e4m3fn_scaled.safetensors\""),
            ("type", "\"wan\""),
            ("device", "\"default\""),
        ],
    ),
    (
        "text_to_video_wan22_5B",
        "39",
        "VAELoader",
        &[("vae_name", "\"wan2.2_vae.safetensors\"")],
    ),
    (
        "text_to_video_wan22_5B",
        "55",
        "Wan22ImageToVideoLatent",
        &[
            ("width", "1280"),
            ("height", "704"),
            ("length", "41"),
            ("batch_size", "1"),
        ],
    ),
    (
        "text_to_video_cosmos_7B",
        "37",
        "UNETLoader",
        &[
            (
                "unet_name",
                "\"Cosmos-1_0-Diffusion-7B-Text2World.safetensors\"",
            ),
            ("weight_dtype", "\"default\""),
        ],
    ),
    (
        "text_to_video_cosmos_7B",
        "38",
        "CLIPLoader",
        &[
            ("clip_name", "\"oldt5_xxl_fp8_e4m3fn_scaled.safetensors\""),
            ("type", "\"cosmos\""),
            ("device", "\"default\""),
        ],
    ),
    (
        "text_to_video_cosmos_7B",
        "39",
        "VAELoader",
        &[("vae_name", "\"cosmos_cv8x8x8_1.0.safetensors\"")],
    ),
    (
        "text_to_video_cosmos_7B",
        "78",
        "EmptyCosmosLatentVideo",
        &[
            ("width", "1280"),
            ("height", "704"),
            ("length", "121"),
            ("batch_size", "1"),
        ],
    ),
];

#[test]
fn ui_only_workflows_read_every_loader_and_latent_node() {
    let Some(dir) = folder() else { return };
    for name in UI_ONLY {
        let w = read_in(&dir, &format!("{name}.json"));
        let rows: Vec<_> = UI_VALUES.iter().filter(|r| r.0 == name).collect();
        for (_, id, class, values) in &rows {
            let n = w
                .node(id)
                .unwrap_or_else(|| panic!("{name}: node {id} ({class}) not read"));
            assert_eq!(n.class_type, *class, "{name}: node {id}");
            let got: Vec<(String, String)> = literals(n)
                .into_iter()
                .map(|(k, v)| (k, v.to_string()))
                .collect();
            let want: Vec<(String, String)> = {
                let mut v: Vec<_> = values
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                v.sort();
                v
            };
            assert_eq!(got, want, "{name}: node {id} ({class})");
        }
        // The table above holds every deciding node of the workflow, none left unchecked.
        let mut deciding: Vec<&str> = w
            .nodes
            .values()
            .filter(|n| decides(n))
            .map(|n| n.id.as_str())
            .collect();
        let mut listed: Vec<&str> = rows.iter().map(|r| r.1).collect();
        deciding.sort();
        listed.sort();
        assert_eq!(deciding, listed, "{name}");
        nothing_dropped(name, &w);
    }
}

fn gpu() -> GpuTarget {
    GpuTarget::with_capacity(vram_doctor::units::gib_to_bytes(24.0), 1)
}

fn plan_of(w: &Workflow, answers: &Answers) -> Result<WorkflowPlan, String> {
    plan(w, gpu(), Bus::default(), &Launch::default(), answers)
}

/// A pass's (sampler, model, width, height, frames, batch, cfg, weights).
type Row = (String, String, u32, u32, u32, u32, bool, String);

fn pass_row(p: &WorkflowPlan, i: usize) -> Row {
    let x = &p.passes[i];
    (
        x.node.clone(),
        x.model.clone(),
        x.width,
        x.height,
        x.frames,
        x.batch,
        x.cfg,
        x.workload.run.weights.to_string(),
    )
}

fn row(
    node: &str,
    model: &str,
    (w, h, f, b): (u32, u32, u32, u32),
    cfg: bool,
    weights: &str,
) -> Row {
    (node.into(), model.into(), w, h, f, b, cfg, weights.into())
}

/// The peak is at a node of the workflow that does the peak stage.
fn peak_is_a_node_of_its_stage(name: &str, p: &WorkflowPlan) {
    let pass = &p.passes[p.peak_pass];
    let at = match p.peak_stage {
        "sampling" => pass.node.clone(),
        "vae_decode" => pass.decode_node.clone().expect("a decode"),
        "text_encode" => p.peak_node.clone(),
        s => panic!("{name}: stage {s}"),
    };
    assert_eq!(p.peak_node, at, "{name}");
}

#[test]
fn real_workflows_plan_with_their_models_and_sizes() {
    let Some(dir) = folder() else { return };
    let none = Answers::default();
    let planned = |name: &str| {
        let p = plan_of(&read_in(&dir, &format!("{name}.json")), &none)
            .unwrap_or_else(|e| panic!("{e}"));
        // The API format ComfyUI ran plans the same.
        if PAIRS.contains(&name) {
            let a = plan_of(&read_in(&dir, &format!("{name}.api.json")), &none).unwrap();
            assert_eq!(a.passes, p.passes, "{name}");
        }
        peak_is_a_node_of_its_stage(name, &p);
        p
    };
    let p = planned("sd3.5_simple_example");
    assert_eq!(
        pass_row(&p, 0),
        row("3", "sd35-large", (1024, 1024, 1, 1), true, "fp8")
    );
    let p = planned("sd3.5_large_canny_controlnet_example");
    assert_eq!(
        pass_row(&p, 0),
        row("3", "sd35-large", (1024, 1024, 1, 1), true, "fp8")
    );
    assert_eq!(p.passes[0].controlnet_nodes, ["46"]);
    assert_eq!(p.unmodelled_nodes, Vec::<String>::new());

    // Checkpoints whose names state no format are planned in the card's 16-bit dtype (bf16
    // here: ComfyUI's unet_dtype where the card supports it).
    let p = planned("sdxl_refiner_prompt_example");
    assert_eq!(p.passes.len(), 2);
    assert_eq!(
        pass_row(&p, 0),
        row("10", "sdxl", (1024, 1024, 1, 1), true, "bf16")
    );
    assert_eq!(
        pass_row(&p, 1),
        row("11", "sdxl-refiner", (1024, 1024, 1, 1), true, "bf16")
    );
    assert_eq!(p.passes[1].decode_node.as_deref(), Some("17"));

    // The second pass runs on the LatentUpscale's 1152² and is the larger.
    let p = planned("hiresfix_latent_workflow");
    assert_eq!(
        pass_row(&p, 0),
        row("3", "sd21", (768, 768, 1, 1), true, "bf16")
    );
    assert_eq!(
        pass_row(&p, 1),
        row("11", "sd21", (1152, 1152, 1, 1), true, "bf16")
    );
    assert_eq!(p.peak_pass, 1);

    let p = planned("flux_dev_example");
    assert_eq!(
        pass_row(&p, 0),
        row("13", "flux-dev", (1024, 1024, 1, 1), false, "bf16")
    );
    let tes: Vec<&str> = p.passes[0]
        .workload
        .text_encoders
        .iter()
        .map(|t| t.id.as_str())
        .collect();
    assert_eq!(tes, ["clip-l", "t5-xxl"]);
    assert_eq!(p.peak_stage, "sampling");

    // KSampler with cfg 1: no uncond batch.
    let p = planned("flux_dev_checkpoint_example");
    assert_eq!(
        pass_row(&p, 0),
        row("31", "flux-dev", (1024, 1024, 1, 1), false, "fp8")
    );

    let p = planned("text_to_video_wan");
    assert_eq!(
        pass_row(&p, 0),
        row("3", "wan21-t2v-1.3b", (832, 480, 33, 1), true, "fp16")
    );
    assert_eq!(p.passes[0].workload.vae.id, "wan-vae");

    // The plain VAEDecode is muted; the tiled one at 256 decodes.
    let p = planned("hunyuan_video_text_to_video");
    assert_eq!(
        pass_row(&p, 0),
        row("13", "hunyuan-video", (848, 480, 73, 1), false, "bf16")
    );
    assert_eq!(p.passes[0].decode_node.as_deref(), Some("73"));
    assert_eq!(p.passes[0].vae_tile, Some(256));
    assert!(
        p.warnings
            .iter()
            .map(ToString::to_string)
            .any(|w| w.contains("node 8 (VAEDecode) is muted"))
    );
}

#[test]
fn models_the_catalog_lacks_are_asked_for_by_node_and_file() {
    let Some(dir) = folder() else { return };
    for (name, node, file) in [
        ("controlnet_example", "14", "Anything-V3.0.ckpt"),
        ("ltxv_text_to_video", "44", "ltx-video-2b-v0.9"),
        ("text_to_video_wan22_5B", "37", "wan2.2_ti2v_5B_fp16"),
        (
            "text_to_video_cosmos_7B",
            "37",
            "Cosmos-1_0-Diffusion-7B-Text2World",
        ),
    ] {
        let e = plan_of(&read_in(&dir, &format!("{name}.json")), &Answers::default()).unwrap_err();
        assert!(
            e.contains(&format!("node {node}")) && e.contains(file) && e.contains("--comfy-file"),
            "{name}: {e}"
        );
    }
    // Answered, the SD1.5 fine-tune plans with its ControlNet at its 512² latent.
    let a = Answers::parse(&["Anything-V3.0.ckpt=sd15".into()]).unwrap();
    let p = plan_of(&read_in(&dir, "controlnet_example.json"), &a).unwrap();
    assert_eq!(
        pass_row(&p, 0),
        row("3", "sd15", (512, 512, 1, 1), true, "bf16")
    );
    assert_eq!(p.passes[0].controlnet_nodes, ["12"]);
    // The separate VAELoader's file is the one decoding.
    assert_eq!(p.passes[0].workload.vae.id, "sd-vae");
}
