//! Planning the ComfyUI workflows of tests/data/comfy (gen_workflows.py writes them from the
//! real node definitions): every form of each plans with the models its loaders name, the
//! sizes its latent nodes make, and the peak at a stage and node of the workflow.

use std::path::{Path, PathBuf};
use std::process::Command;
use vram_doctor::import::comfy;
use vram_doctor::memory::diffusion::{Bus, VramMode};
use vram_doctor::plan::workflow::files::Answers;
use vram_doctor::plan::workflow::{Launch, Pass, WorkflowPlan, plan};
use vram_doctor::types::workload::GpuTarget;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/comfy")
        .join(name)
}

fn gpu(gib: f64) -> GpuTarget {
    GpuTarget::with_capacity(vram_doctor::units::gib_to_bytes(gib), 1)
}

/// The plan of every form of a workflow, checked to be the same.
fn planned(name: &str, gib: f64) -> WorkflowPlan {
    let mut plans = Vec::new();
    for file in [
        format!("{name}.json"),
        format!("{name}.api.json"),
        format!("{name}.png"),
    ] {
        let w = comfy::read(&data(&file)).unwrap();
        let p = plan(
            &w,
            gpu(gib),
            Bus::default(),
            &Launch::default(),
            &Answers::default(),
        )
        .unwrap_or_else(|e| panic!("{file}: {e}"));
        plans.push(p);
    }
    for p in &plans[1..] {
        assert_eq!(p.passes, plans[0].passes, "{name}: forms differ");
        assert_eq!(p.nodes, plans[0].nodes, "{name}: forms differ");
    }
    plans.remove(0)
}

/// (sampler node, model, width, height, frames, batch, cfg, decode node, tiled).
type Expect<'a> = (
    &'a str,
    &'a str,
    u32,
    u32,
    u32,
    u32,
    bool,
    Option<&'a str>,
    bool,
);

fn check(p: &Pass, e: Expect) {
    let got = (
        p.node.as_str(),
        p.model.as_str(),
        p.width,
        p.height,
        p.frames,
        p.batch,
        p.cfg,
        p.decode_node.as_deref(),
        p.vae_tiled,
    );
    assert_eq!(got, e);
    // The peak node is the node of the peak stage.
    match p.peak_stage {
        "sampling" => assert_eq!(p.peak_node, p.node),
        "vae_decode" => assert_eq!(Some(p.peak_node.as_str()), p.decode_node.as_deref()),
        "text_encode" => assert_ne!(p.peak_node, p.node),
        s => panic!("stage {s}"),
    }
}

fn te_ids(p: &Pass) -> Vec<&str> {
    p.workload
        .text_encoders
        .iter()
        .map(|t| t.id.as_str())
        .collect()
}

#[test]
fn image_workflows_plan_with_their_models_and_sizes() {
    let p = planned("sd15", 24.0);
    check(
        &p.passes[0],
        ("3", "sd15", 512, 512, 1, 1, true, Some("8"), false),
    );
    // At 512² the UNet's activations are small beside the VAE decode's.
    assert_eq!(p.peak_stage, "vae_decode");
    assert_eq!(p.peak_node, "8");

    let p = planned("sd35_large", 24.0);
    check(
        &p.passes[0],
        ("3", "sd35-large", 1024, 1024, 1, 1, true, Some("8"), false),
    );
    assert_eq!(te_ids(&p.passes[0]), ["clip-l", "openclip-g", "t5-xxl"]);

    // cfg 1.0: ComfyUI skips the uncond pass.
    let p = planned("flux_checkpoint_fp8", 24.0);
    check(
        &p.passes[0],
        ("3", "flux-dev", 1024, 1024, 1, 1, false, Some("8"), false),
    );
    assert_eq!(p.passes[0].workload.run.weights.to_string(), "fp8");

    // BasicGuider has no uncond; the 22 GiB bf16 model makes sampling the peak.
    let p = planned("flux_split_loaders", 24.0);
    check(
        &p.passes[0],
        ("13", "flux-dev", 1024, 1024, 1, 1, false, Some("8"), false),
    );
    // DualCLIPLoader lists T5 first; the formats follow the catalog's order (CLIP-L, T5).
    assert_eq!(te_ids(&p.passes[0]), ["clip-l", "t5-xxl"]);
    assert_eq!(
        p.passes[0].workload.run.text_encoder_weights[1].to_string(),
        "fp16"
    );
    assert_eq!(p.peak_stage, "sampling");

    let p = planned("flux_gguf", 24.0);
    check(
        &p.passes[0],
        ("3", "flux-dev", 1024, 1024, 1, 1, false, Some("8"), true),
    );
    let r = &p.passes[0].workload.run;
    assert_eq!(r.weights.to_string(), "q4_k_s");
    assert_eq!(r.text_encoder_weights[1].to_string(), "fp8");
}

#[test]
fn refiner_lora_controlnet_and_hires_fix_passes() {
    let p = planned("sdxl_refiner_lora_controlnet", 24.0);
    assert_eq!(p.passes.len(), 2);
    check(
        &p.passes[0],
        ("3", "sdxl", 1024, 1024, 1, 1, true, None, false),
    );
    check(
        &p.passes[1],
        (
            "11",
            "sdxl-refiner",
            1024,
            1024,
            1,
            1,
            true,
            Some("8"),
            false,
        ),
    );
    assert_eq!(p.passes[0].lora_nodes, ["10"]);
    assert_eq!(p.passes[0].workload.run.controlnets, 1);
    assert_eq!(p.passes[0].controlnet_nodes, ["20"]);
    let cn = p.nodes.iter().find(|n| n.id == "20").unwrap();
    assert!(
        cn.bytes.unwrap() > 2 << 30,
        "an SDXL ControlNet is 2.5 GB in 16-bit: {cn:?}"
    );
    assert_eq!(p.passes[1].workload.run.loras, 0);
    assert_eq!(te_ids(&p.passes[1]), ["openclip-g"]);
    assert!(
        p.warnings
            .iter()
            .map(ToString::to_string)
            .any(|w| w.contains("2 models"))
    );

    // The second pass runs at the upscaled latent (1024 × 1.5) and holds the decode.
    let p = planned("sdxl_hires_fix", 24.0);
    check(
        &p.passes[0],
        ("3", "sdxl", 1024, 1024, 1, 2, true, None, false),
    );
    check(
        &p.passes[1],
        ("11", "sdxl", 1536, 1536, 1, 2, true, Some("8"), false),
    );
    assert_eq!(p.peak_pass, 1);
    assert!(p.passes[1].need_bytes > p.passes[0].need_bytes);
    // The custom node is reported by id and class, never dropped; the Note is editor-only.
    assert_eq!(p.unmodelled_nodes, ["31 SomeCustomUpscaler"]);
    assert!(
        p.warnings
            .iter()
            .map(ToString::to_string)
            .any(|w| w.contains("SomeCustomUpscaler"))
    );
}

#[test]
fn video_workflows_use_each_vae_temporal_factor() {
    let p = planned("wan21_t2v", 24.0);
    check(
        &p.passes[0],
        (
            "3",
            "wan21-t2v-1.3b",
            832,
            480,
            33,
            1,
            true,
            Some("8"),
            false,
        ),
    );
    let w = &p.passes[0].workload;
    assert_eq!(w.vae.id, "wan-vae");
    assert_eq!(w.latent_frames(), 9.0, "(33 - 1) / 4 + 1");

    let p = planned("hunyuan_video", 24.0);
    check(
        &p.passes[0],
        (
            "13",
            "hunyuan-video",
            848,
            480,
            73,
            1,
            false,
            Some("73"),
            true,
        ),
    );
    let w = &p.passes[0].workload;
    assert_eq!(w.vae.id, "hunyuan-video-vae");
    assert_eq!(w.latent_frames(), 19.0, "(73 - 1) / 4 + 1");
    // UNETLoader weight_dtype fp8_e4m3fn stores the bf16 file in fp8.
    assert_eq!(w.run.weights.to_string(), "fp8");
    assert_eq!(te_ids(&p.passes[0]), ["clip-l", "llava-llama3"]);
    // VAEDecodeTiled's tile_size widget (256 here, gen_workflows.py) is the tile planned, and
    // a smaller tile decodes in less memory than ComfyUI's default 512.
    assert_eq!(p.passes[0].vae_tile, Some(256));
    let mut at512 = w.clone();
    at512.run.vae_tile = 512;
    let decode = |w: &vram_doctor::memory::diffusion::DiffusionWorkload| {
        vram_doctor::memory::diffusion::stages::decode_bytes(w, 1.0, false)
    };
    assert!(
        decode(w) < decode(&at512),
        "{} vs {}",
        decode(w),
        decode(&at512)
    );
}

#[test]
fn launch_flags_and_unknown_files() {
    let w = comfy::read(&data("flux_split_loaders.json")).unwrap();
    let low = Launch {
        vram_mode: VramMode::Low,
        ..Launch::default()
    };
    let p = plan(&w, gpu(12.0), Bus::default(), &low, &Answers::default()).unwrap();
    assert!(p.assumes.contains("--lowvram"));
    assert_eq!(p.peak().workload.run.vram_mode, VramMode::Low);
    // The plan names the memory mode it assumes and why (comfy/cli_args.py
    // `enables_dynamic_vram`, main.py `dynamic_vram_supported`).
    let p = plan(
        &w,
        gpu(12.0),
        Bus::default(),
        &Launch::default(),
        &Answers::default(),
    )
    .unwrap();
    assert!(
        p.assumes
            .contains("dynamic VRAM (ComfyUI default on NVIDIA with PyTorch ≥ 2.8"),
        "{}",
        p.assumes
    );
    let high = Launch {
        vram_mode: VramMode::High,
        ..Launch::default()
    };
    let p = plan(&w, gpu(12.0), Bus::default(), &high, &Answers::default()).unwrap();
    assert!(
        p.assumes.contains("--highvram turns dynamic VRAM off"),
        "{}",
        p.assumes
    );

    // A model file the catalog does not know is asked for, naming the node and the file.
    let text = std::fs::read_to_string(data("flux_split_loaders.api.json"))
        .unwrap()
        .replace("flux1-dev.safetensors", "my_merge_v3.safetensors");
    let w = comfy::parse(text.as_bytes()).unwrap();
    let e = plan(
        &w,
        gpu(24.0),
        Bus::default(),
        &Launch::default(),
        &Answers::default(),
    )
    .unwrap_err();
    assert!(
        e.contains("node 12") && e.contains("my_merge_v3") && e.contains("--comfy-file"),
        "{e}"
    );
    // Answered, it plans as that preset.
    let a = Answers::parse(&["my_merge_v3.safetensors=flux-dev".into()]).unwrap();
    let p = plan(&w, gpu(24.0), Bus::default(), &Launch::default(), &a).unwrap();
    assert_eq!(p.passes[0].model, "flux-dev");
}

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn cli_plans_a_workflow_and_refuses_what_it_cannot() {
    let f = data("sdxl_hires_fix.png");
    let out = cli(&[
        "plan",
        "--workflow",
        f.to_str().unwrap(),
        "--vram-gib",
        "12",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let wf = &v["workflow"];
    assert_eq!(wf["unmodelled_nodes"][0], "31 SomeCustomUpscaler");
    assert_eq!(wf["nodes"][0]["class_type"], "CheckpointLoaderSimple");
    assert!(wf["nodes"][0]["bytes"].as_u64().unwrap() > 4 << 30);
    assert_eq!(wf["passes"][1]["width"], 1536);
    assert!(v["capacity_bytes"].as_u64().is_some() && v["components"].is_array());

    let out = cli(&[
        "plan",
        "--workflow",
        f.to_str().unwrap(),
        "--vram-gib",
        "12",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Not modelled: 31 SomeCustomUpscaler"),
        "{text}"
    );
    assert!(text.contains("1536×1536"), "{text}");

    let out = cli(&[
        "plan",
        "--workflow",
        f.to_str().unwrap(),
        "--vram-gib",
        "12",
        "--width",
        "512",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--width"));
}

#[test]
fn fixes_are_changes_to_named_nodes_of_the_workflow() {
    // Flux dev in bf16 with a 16-bit T5 does not fit 12 GiB: the plan swaps nodes.
    let w = comfy::read(&data("flux_split_loaders.json")).unwrap();
    let p = plan(
        &w,
        gpu(12.0),
        Bus::default(),
        &Launch::default(),
        &Answers::default(),
    )
    .unwrap();
    assert!(!p.changes.is_empty(), "{:?}", p.passes[0].need_bytes);
    for c in &p.changes {
        // Each names a node of the workflow by its class, or is a launch flag.
        if let Some(id) = &c.node {
            let n = w.node(id).unwrap();
            assert_eq!(c.class_type.as_deref(), Some(n.class_type.as_str()));
            assert!(
                c.change.to_string().contains(&format!("(node {id})")),
                "{c:?}"
            );
        } else {
            assert!(c.change.to_string().contains("--"), "{c:?}");
        }
        assert!(c.speed_factor > 0.0, "{c:?}");
    }
    let weights = p
        .changes
        .iter()
        .find(|c| c.node.as_deref() == Some("12"))
        .expect("a change to the UNETLoader");
    assert!(
        weights.change.to_string().contains("UNETLoader (node 12)")
            && (weights.change.to_string().contains("UnetLoaderGGUF")
                || weights.change.to_string().contains("weight_dtype")),
        "{weights:?}"
    );
    assert!(weights.saves_bytes > 4 << 30, "{weights:?}");
    // The CLI says them under the workflow, the JSON carries them.
    let f = data("flux_split_loaders.json");
    let out = cli(&[
        "plan",
        "--workflow",
        f.to_str().unwrap(),
        "--vram-gib",
        "12",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Changes to the workflow") && text.contains(&weights.change.to_string()),
        "{text}"
    );
    let out = cli(&[
        "plan",
        "--workflow",
        f.to_str().unwrap(),
        "--vram-gib",
        "12",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["workflow"]["changes"];
    assert!(c.as_array().is_some_and(|a| !a.is_empty()), "{c}");
    assert!(c[0]["saves_bytes"].as_u64().is_some() && c[0]["strategy"].is_string());
    // A workflow that fits needs no change.
    let p = planned("sd15", 24.0);
    assert!(p.changes.is_empty(), "{:?}", p.changes);
}

#[test]
fn a_big_decode_is_fixed_on_its_vae_decode_node() {
    // SD 3.5 Large on 4 GiB: the plan tiles the decode, saying so on the VAEDecode node.
    let w = comfy::read(&data("sd35_large.json")).unwrap();
    let p = plan(
        &w,
        gpu(4.0),
        Bus::default(),
        &Launch::default(),
        &Answers::default(),
    )
    .unwrap();
    let tiled = p
        .changes
        .iter()
        .find(|c| c.change.to_string().contains("VAEDecodeTiled"))
        .unwrap_or_else(|| panic!("{:#?}", p.changes));
    assert_eq!(tiled.node.as_deref(), Some("8"));
    assert_eq!(tiled.class_type.as_deref(), Some("VAEDecode"));
    assert_eq!(
        tiled.change.to_string(),
        "replace VAEDecode (node 8) with VAEDecodeTiled, tile_size 512"
    );
    assert!(
        tiled.saves_bytes > 0 && tiled.speed_factor >= 1.0,
        "{tiled:?}"
    );
}
