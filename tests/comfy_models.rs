//! `plan --workflow FILE --comfy-models DIR`: the workflow's files found in ComfyUI's models
//! folders and identified from their safetensors headers (tensor names, parameter count,
//! dtype), not their names. The model files here are sparse: a real header followed by a hole
//! as long as the data it declares, so a 12-billion-parameter file costs no disk.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use vram_doctor::import::comfy;
use vram_doctor::memory::diffusion::{Bus, DiffusionCatalog};
use vram_doctor::plan::workflow::files::Answers;
use vram_doctor::plan::workflow::headers::ModelsDir;
use vram_doctor::plan::workflow::{Launch, WorkflowPlan, plan};
use vram_doctor::types::workload::GpuTarget;

/// Writes a safetensors file holding `keys` (one element each) and one more tensor making the
/// total `params` elements, all of `dtype` (`bytes` per element).
fn model_file(path: &Path, keys: &[&str], params: u64, dtype: &str, bytes: u64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut header = serde_json::Map::new();
    let mut at = 0u64;
    let mut add = |name: &str, n: u64| {
        header.insert(
            name.into(),
            serde_json::json!({"dtype": dtype, "shape": [n], "data_offsets": [at, at + n * bytes]}),
        );
        at += n * bytes;
    };
    for k in keys {
        add(k, 1);
    }
    add("rest.weight", params - keys.len() as u64);
    let text = serde_json::to_vec(&header).unwrap();
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(&(text.len() as u64).to_le_bytes()).unwrap();
    f.write_all(&text).unwrap();
    f.set_len(8 + text.len() as u64 + at).unwrap();
}

fn catalog_params(id: &str) -> u64 {
    DiffusionCatalog::get().model(id).unwrap().params as u64
}

const FLUX_DEV: [&str; 2] = [
    "double_blocks.0.img_attn.norm.key_norm.scale",
    "guidance_in.in_layer.weight",
];

fn workflow(replace: &[(&str, &str)]) -> comfy::Workflow {
    let mut text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/comfy/flux_split_loaders.api.json"),
    )
    .unwrap();
    for (a, b) in replace {
        text = text.replace(a, b);
    }
    comfy::parse(text.as_bytes()).unwrap()
}

fn planned(w: &comfy::Workflow, models: &Path) -> Result<WorkflowPlan, String> {
    let a = Answers::default().with_models(ModelsDir::open(models)?);
    plan(
        w,
        GpuTarget::with_capacity(vram_doctor::units::gib_to_bytes(24.0), 1),
        Bus::default(),
        &Launch::default(),
        &a,
    )
}

/// A ComfyUI folder with the Flux dev model stored in fp8 under a name that says nothing.
fn comfy_folder() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().to_path_buf();
    model_file(
        &root.join("models/diffusion_models/my_merge_v3.safetensors"),
        &FLUX_DEV,
        catalog_params("flux-dev") + 1234,
        "F8_E4M3",
        1,
    );
    (d, root)
}

#[test]
fn a_file_named_anything_is_identified_from_its_header() {
    let (_d, root) = comfy_folder();
    let w = workflow(&[("flux1-dev.safetensors", "my_merge_v3.safetensors")]);
    // By its name alone it is asked for.
    let e = plan(
        &w,
        GpuTarget::with_capacity(vram_doctor::units::gib_to_bytes(24.0), 1),
        Bus::default(),
        &Launch::default(),
        &Answers::default(),
    )
    .unwrap_err();
    assert!(e.contains("--comfy-file"), "{e}");
    // From its header: Flux dev (its guidance embedding), fp8, and its exact parameters.
    let p = planned(&w, &root).unwrap();
    assert_eq!(p.passes[0].model, "flux-dev");
    assert_eq!(p.passes[0].workload.run.weights.to_string(), "fp8");
    assert_eq!(
        p.passes[0].workload.model.params as u64,
        catalog_params("flux-dev") + 1234
    );
    let unet = p.nodes.iter().find(|n| n.id == "12").unwrap();
    assert!(unet.from_header && unet.preset.as_deref() == Some("flux-dev"));
    // The files not in the folder are reported, with where they were looked for.
    for (node, file) in [("11", "t5xxl_fp16.safetensors"), ("10", "ae.safetensors")] {
        assert!(
            p.warnings
                .iter()
                .map(ToString::to_string)
                .any(|w| w.contains(&format!("node {node} "))
                    && w.contains(file)
                    && w.contains("is not in")),
            "{file}: {:?}",
            p.warnings
        );
    }
    let t5 = p.nodes.iter().find(|n| n.file == "t5xxl_fp16.safetensors");
    assert!(!t5.unwrap().from_header);
}

#[test]
fn the_header_wins_over_the_name_and_legacy_folders_are_searched() {
    let d = tempfile::tempdir().unwrap();
    // Named dev, but no guidance embedding: a schnell file, in the legacy unet/ folder, bf16.
    model_file(
        &d.path().join("unet/flux1-dev.safetensors"),
        &FLUX_DEV[..1],
        catalog_params("flux-schnell"),
        "BF16",
        2,
    );
    // A T5 stored in fp8 under a name that says fp16, in the legacy clip/ folder.
    let t5 = DiffusionCatalog::get().part("t5-xxl").unwrap().params as u64;
    model_file(
        &d.path().join("clip/t5xxl_fp16.safetensors"),
        &["encoder.block.23.layer.1.DenseReluDense.wi_1.weight"],
        t5,
        "F8_E4M3",
        1,
    );
    let p = planned(&workflow(&[]), d.path()).unwrap();
    assert_eq!(p.passes[0].model, "flux-schnell");
    assert_eq!(p.passes[0].workload.run.weights.to_string(), "bf16");
    assert!(
        p.warnings
            .iter()
            .map(ToString::to_string)
            .any(|w| w.contains("named like flux-dev") && w.contains("flux-schnell")),
        "{:?}",
        p.warnings
    );
    let te = &p.passes[0].workload;
    let i = te
        .text_encoders
        .iter()
        .position(|t| t.id == "t5-xxl")
        .unwrap();
    assert_eq!(te.run.text_encoder_weights[i].to_string(), "fp8");
}

#[test]
fn a_header_that_matches_no_preset_is_asked_for() {
    let d = tempfile::tempdir().unwrap();
    // Flux's keys but a third of its size: another model of the family.
    model_file(
        &d.path()
            .join("models/diffusion_models/flux1-dev.safetensors"),
        &FLUX_DEV,
        catalog_params("flux-dev") / 3,
        "BF16",
        2,
    );
    let e = planned(&workflow(&[]), d.path()).unwrap_err();
    assert!(
        e.contains("node 12") && e.contains("flux-dev family") && e.contains("--comfy-file"),
        "{e}"
    );
    // Keys of no known model at all.
    model_file(
        &d.path()
            .join("models/diffusion_models/flux1-dev.safetensors"),
        &["some.other.arch.weight"],
        1000,
        "BF16",
        2,
    );
    let e = planned(&workflow(&[]), d.path()).unwrap_err();
    assert!(e.contains("match no diffusion model"), "{e}");
    // Answered, it plans as the answer.
    let a = Answers::parse(&["flux1-dev.safetensors=flux-dev".into()])
        .unwrap()
        .with_models(ModelsDir::open(d.path()).unwrap());
    let p = plan(
        &workflow(&[]),
        GpuTarget::with_capacity(vram_doctor::units::gib_to_bytes(24.0), 1),
        Bus::default(),
        &Launch::default(),
        &a,
    )
    .unwrap();
    assert_eq!(p.passes[0].model, "flux-dev");
}

#[test]
fn cli_takes_the_models_folder() {
    let (_d, root) = comfy_folder();
    let wf = root.join("wf.json");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/comfy/flux_split_loaders.api.json"),
    )
    .unwrap()
    .replace("flux1-dev.safetensors", "my_merge_v3.safetensors");
    std::fs::write(&wf, text).unwrap();
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
            .args([
                "plan",
                "--workflow",
                wf.to_str().unwrap(),
                "--vram-gib",
                "24",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&["--comfy-models", root.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("my_merge_v3.safetensors")
            && text.contains("flux-dev, fp8")
            && text.contains("(from its header)"),
        "{text}"
    );
    let out = run(&["--comfy-models", wf.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a folder"));
}

/// Writes a GGUF (version 3, no metadata) of Q8_0 tensors: `keys` of one 32-weight block each
/// and one more making `params` weights (a multiple of 32), ggml's 34 bytes per block.
fn gguf_q8_file(path: &Path, keys: &[&str], params: u64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut tensors: Vec<(String, u64)> = keys.iter().map(|k| (k.to_string(), 32)).collect();
    tensors.push(("rest.weight".into(), params - 32 * keys.len() as u64));
    let mut h = b"GGUF".to_vec();
    h.extend(3u32.to_le_bytes());
    h.extend((tensors.len() as u64).to_le_bytes());
    h.extend(0u64.to_le_bytes());
    let mut offset = 0u64;
    for (name, n) in &tensors {
        h.extend((name.len() as u64).to_le_bytes());
        h.extend(name.as_bytes());
        h.extend(1u32.to_le_bytes());
        h.extend(n.to_le_bytes());
        h.extend(8u32.to_le_bytes()); // GGML_TYPE_Q8_0
        h.extend(offset.to_le_bytes());
        offset += (n / 32 * 34).div_ceil(32) * 32;
    }
    let data_start = (h.len() as u64).div_ceil(32) * 32;
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(&h).unwrap();
    f.set_len(data_start + offset).unwrap();
}

#[test]
fn a_gguf_header_gives_its_quantization() {
    let d = tempfile::tempdir().unwrap();
    // Named Q4_K_S, but its tensors are Q8_0: the header's type is the one planned.
    gguf_q8_file(
        &d.path().join("models/unet/flux1-dev-Q4_K_S.gguf"),
        &FLUX_DEV,
        catalog_params("flux-dev"),
    );
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/comfy/flux_gguf.api.json"),
    )
    .unwrap();
    let w = comfy::parse(text.as_bytes()).unwrap();
    let p = planned(&w, d.path()).unwrap();
    assert_eq!(p.passes[0].model, "flux-dev");
    assert_eq!(p.passes[0].workload.run.weights.to_string(), "q8_0");
    let unet = p
        .nodes
        .iter()
        .find(|n| n.file == "flux1-dev-Q4_K_S.gguf")
        .unwrap();
    assert!(unet.from_header, "{unet:?}");
}
