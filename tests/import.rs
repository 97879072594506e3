//! Model import from real config.json files and generated GGUF/safetensors files.

use std::path::Path;

use vram_doctor::import as imp;

fn config(name: &str) -> imp::ImportedModel {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/configs")
        .join(name);
    imp::import_model(&p).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn print_counts() {
    for e in
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/configs")).unwrap()
    {
        let n = e.unwrap().file_name().into_string().unwrap();
        let m = config(&n);
        println!("{n}: {:?} {:?} {:?}", m.params_by_shape, m.weights, m.notes);
    }
}
