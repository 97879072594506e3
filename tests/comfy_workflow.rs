//! ComfyUI workflows in tests/data/comfy (written by gen_workflows.py from the real node
//! definitions): each one read in its three forms, UI JSON, API JSON and embedded in a PNG.

use std::path::{Path, PathBuf};
use vram_doctor::import::comfy::{self, Format, Input, Workflow};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/comfy")
        .join(name)
}

const NAMES: [&str; 9] = [
    "sd15",
    "sdxl_refiner_lora_controlnet",
    "sd35_large",
    "flux_checkpoint_fp8",
    "flux_split_loaders",
    "flux_gguf",
    "wan21_t2v",
    "hunyuan_video",
    "sdxl_hires_fix",
];

/// The graph without the frontend-only widgets (the API format does not carry them) and
/// without the widgets of unknown nodes (the UI format does not name them).
/// Node id, class type, named inputs as text.
type Graph = Vec<(String, String, Vec<(String, String)>)>;

fn canonical(w: &Workflow) -> Graph {
    w.nodes
        .values()
        .map(|n| {
            let ins = n
                .inputs
                .iter()
                .filter(|(k, v)| {
                    !matches!(k.as_str(), "control_after_generate" | "upload")
                        && (comfy::nodes::get(&n.class_type).is_some()
                            || matches!(v, Input::Link { .. }))
                })
                .map(|(k, v)| {
                    let v = match v {
                        Input::Value(v) => v.to_string(),
                        Input::Link { node, slot } => format!("{node}:{slot}"),
                    };
                    (k.clone(), v)
                })
                .collect();
            (n.id.clone(), n.class_type.clone(), ins)
        })
        .collect()
}

#[test]
fn three_forms_of_each_workflow_read_as_one_graph() {
    for name in NAMES {
        let ui = comfy::read(&data(&format!("{name}.json"))).unwrap();
        let api = comfy::read(&data(&format!("{name}.api.json"))).unwrap();
        let png = comfy::read(&data(&format!("{name}.png"))).unwrap();
        assert_eq!(ui.format, Format::Ui, "{name}");
        assert_eq!(api.format, Format::Api, "{name}");
        // The PNG's UI-format chunk is preferred.
        assert_eq!(png.format, Format::Ui, "{name}");
        assert_eq!(canonical(&ui), canonical(&api), "{name}");
        assert_eq!(canonical(&ui), canonical(&png), "{name}");
    }
}

#[test]
fn ui_widgets_are_named_by_input_types_order() {
    let w = comfy::read(&data("sdxl_refiner_lora_controlnet.json")).unwrap();
    let refiner = w.node("11").unwrap();
    assert_eq!(refiner.class_type, "KSamplerAdvanced");
    assert_eq!(
        refiner.value("start_at_step").and_then(|v| v.as_u64()),
        Some(20)
    );
    assert_eq!(refiner.value("cfg").and_then(|v| v.as_f64()), Some(7.0));
    assert_eq!(refiner.link("latent_image"), Some(("3", 0)));
    let lora = w.node("10").unwrap();
    assert_eq!(lora.text("lora_name"), Some("add-detail-xl.safetensors"));
    // A Note never runs; an unknown custom node is kept with its raw widgets.
    let h = comfy::read(&data("sdxl_hires_fix.json")).unwrap();
    assert!(h.node("30").is_none());
    assert_eq!(h.node("31").unwrap().widgets.len(), 1);
}

#[test]
fn hostile_workflow_files_are_one_line_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("empty.json", Vec::new(), "not JSON"),
        ("list.json", b"[]".to_vec(), "not an object"),
        (
            "plain.png",
            b"\x89PNG\r\n\x1a\n\0\0\0\0IEND\xae\x42\x60\x82".to_vec(),
            "no 'workflow' or 'prompt'",
        ),
        (
            "huge-chunk.png",
            [&b"\x89PNG\r\n\x1a\n\x7f\xff\xff\xfftEXt"[..], b"prompt\0{}"].concat(),
            "past the end",
        ),
    ];
    for (file, bytes, needle) in cases {
        let p = dir.path().join(file);
        std::fs::write(&p, bytes).unwrap();
        let e = comfy::read(&p).unwrap_err().to_string();
        assert!(
            e.contains(needle) && e.contains(file) && !e.contains('\n'),
            "{file}: {e}"
        );
    }
    // A folder is not read.
    assert!(
        comfy::read(dir.path())
            .unwrap_err()
            .to_string()
            .contains("not a regular file")
    );
}
