//! The user's own presets on the command line: listed as "(yours)", usable by id with `plan`,
//! built-ins winning, and a bad file reported without being touched.

use std::path::Path;
use std::process::{Command, Output};
use vram_doctor::catalog::user::{DIR_ENV, FILE_NAME, UserGpu, UserModel, UserPresets, UserStore};

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .env(DIR_ENV, dir)
        .args(args)
        .output()
        .expect("runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A presets file with a 7.5 GiB card and a copy of Llama 3.1 8B renamed.
fn write_presets(dir: &Path) {
    let mut p = UserPresets::default();
    let card = UserGpu {
        name: "Lab card".into(),
        vram_gib: 7.5,
        ..Default::default()
    };
    p.put(None, card).unwrap();
    let llama = vram_doctor::catalog::Catalog::get()
        .model("llama-3.1-8b")
        .unwrap();
    let mut m = UserModel::from_builtin(llama).unwrap();
    m.name = "My Llama".into();
    p.put(None, m).unwrap();
    UserStore::open(dir.join(FILE_NAME)).save(p).unwrap();
}

#[test]
fn presets_list_marks_the_users_own() {
    let dir = tempfile::tempdir().unwrap();
    write_presets(dir.path());
    let o = run(dir.path(), &["presets", "list"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let line = |id: &str| out.lines().find(|l| l.starts_with(id)).map(str::to_string);
    let card = line("lab-card ").expect("the user's GPU is listed");
    assert!(
        card.contains("7.5 GiB") && card.ends_with("Lab card (yours)"),
        "{card}"
    );
    let model = line("my-llama ").expect("the user's model is listed");
    assert!(model.ends_with("My Llama (yours)"), "{model}");
    assert!(!line("rtx-4090").unwrap().contains("(yours)"));
}

#[test]
fn plan_takes_the_users_ids_and_gives_the_same_estimate_as_the_builtin() {
    let dir = tempfile::tempdir().unwrap();
    write_presets(dir.path());
    let json = |gpu: &str, model: &str| {
        let o = run(
            dir.path(),
            &["plan", "--gpu", gpu, "--model", model, "--json"],
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let mine = json("lab-card", "my-llama");
    assert_eq!(mine["capacity_bytes"], 8_053_063_680u64, "7.5 GiB");
    let builtin = json("lab-card", "llama-3.1-8b");
    assert_eq!(mine["components"], builtin["components"]);
}

#[test]
fn a_bad_file_is_reported_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    std::fs::write(&path, "[[gpu]]\nvram_gib = 1\n").unwrap();
    let o = run(dir.path(), &["presets", "list", "gpus"]);
    assert!(o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains(FILE_NAME) && err.contains("id"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "[[gpu]]\nvram_gib = 1\n"
    );
    // An unknown id still fails as bad input, naming the preset.
    let o = run(
        dir.path(),
        &["plan", "--gpu", "lab-card", "--model", "llama-3.1-8b"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("lab-card"));
}

/// A hand-edited file may reuse a built-in id: it still loads, and the built-in wins.
#[test]
fn a_builtin_id_in_the_users_file_loads_but_the_builtin_wins() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    std::fs::write(
        &path,
        "[[gpu]]\nid = \"rtx-4090\"\nname = \"Mine\"\nvram_gib = 7\n",
    )
    .unwrap();
    assert_eq!(user_gpus(&path), 1);
    let o = run(
        dir.path(),
        &[
            "plan",
            "--gpu",
            "rtx-4090",
            "--model",
            "llama-3.1-8b",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["capacity_bytes"], 25_769_803_776u64,
        "the built-in's 24 GiB"
    );
    assert!(path.exists(), "the file is left as it was");
}

fn user_gpus(path: &Path) -> usize {
    UserStore::open(path.to_path_buf()).presets.gpus.len()
}
