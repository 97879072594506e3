//! Issue 22: "the Chinese walk finds no English sentence". The app in 简体中文 walks each
//! planner kind with workloads that fit, stream and do not fit (so the verdict, the plan, its
//! "why" line, the estimators' warnings and the game's steps all show), a ComfyUI workflow
//! opened (its models, passes and warnings), the monitor with demo data, the doctor with a
//! pasted OOM, and the catalog; every label and value of the accessibility tree is read, and a
//! run of English words that makes a sentence fails the test. The glossary's Chinese texts
//! (the tooltips) are read from its data, each of them.
//!
//! Not English sentences, and so allowed: what the user typed (the doctor's message box), text
//! in quotes (“CUDA out of memory”, an error message as the program prints it), words joined by
//! digits or code punctuation (model and GPU names, `PYTORCH_CUDA_ALLOC_CONF`, `--n-cpu-moe`),
//! which the word rule below never counts, and the export preview: the file that "Save
//! export…" writes (a script with its comments, the Markdown report), English on purpose as
//! the command line's exports are, and the only multi-line text the app shows.

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable, by};
use std::collections::{BTreeMap, BTreeSet};
use vram_doctor::ui::glossary::Glossary;
use vram_doctor::ui::i18n::{self, Lang};
use vram_doctor::ui::{Tab, VramDoctorApp};

#[path = "common/app.rs"]
mod common_app;
use common_app::{click, read_in_doctor, wait_for};

/// The beginner's fine-tune OOM of issue 22, as PyTorch prints it.
const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 \
has a total capacity of 11.63 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this \
process has 10.60 GiB memory in use. Of the allocated memory 9.73 GiB is allocated by PyTorch, \
and 0.68 GiB is reserved by PyTorch but unallocated.";

/// A ComfyUI workflow of two models (a refiner), a LoRA and a ControlNet: its plan warns.
const WORKFLOW: &str = "tests/data/comfy/sdxl_refiner_lora_controlnet.json";

/// A workflow over an 8 GB card: its plan lists changes to its nodes.
const WORKFLOW_WITH_CHANGES: &str = "tests/data/comfy/sd35_large.json";

/// Model files the importers read with notes of their own, copied beside the workloads that
/// name them: an fp8 config whose unquantized-module list matches no module (hf_quant), a
/// vision model's config (hf_config), and a GGUF whose file type no engine format is named
/// after (gguf_model; written by [`gguf_of_unknown_type`]).
const MODEL_FILES: &[(&str, &str)] = &[
    ("fp8.json", "tests/data/configs/qwen3-30b-a3b-fp8.json"),
    ("vision.json", "tests/data/configs/gemma-3-4b-it.json"),
];

/// tests/data/gguf/tiny-llama-q8_0.gguf with its `general.file_type` (a u32 after the key, GGUF
/// value type 4) set to 24, IQ1_S, which is no engine format: the importer says how it planned it.
fn gguf_of_unknown_type(to: &std::path::Path) {
    let mut bytes = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/gguf/tiny-llama-q8_0.gguf"),
    )
    .unwrap();
    let key = b"general.file_type";
    let at = bytes
        .windows(key.len())
        .position(|w| w == key)
        .expect("the GGUF has general.file_type")
        + key.len();
    assert_eq!(bytes[at..at + 4], 4u32.to_le_bytes(), "its value is a u32");
    bytes[at + 4..at + 8].copy_from_slice(&24u32.to_le_bytes());
    std::fs::write(to, bytes).unwrap();
}

/// Every Chinese text of the glossary (the tooltips on the planner's words), named by entry.
fn glossary_zh() -> Vec<(String, String)> {
    let g = Glossary::get();
    let controls = g.control.iter().map(|c| (c.labels.join("/"), &c.text));
    let choices = g.choice.iter().map(|c| (c.values.join("/"), &c.text));
    let parts = g.part.iter().map(|p| {
        let ids: Vec<&str> = p.ids.iter().map(|i| i.as_str()).collect();
        (ids.join("/"), &p.text)
    });
    controls
        .chain(choices)
        .chain(parts)
        .map(|(what, t)| (format!("glossary {what}"), t.zh.clone()))
        .collect()
}

/// Workloads that make each kind show its verdicts, plans and warnings.
const WORKLOADS: &[(&str, &str)] = &[
    (
        "LLM inference that does not fit",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"llama-3.1-70b\"\n[run]\ntask = \"inference\"\nseq = 8192\n",
    ),
    (
        "llama.cpp split across GPU and RAM",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"llama-3.1-70b\"\n[run]\ntask = \"inference\"\nengine = \"llama.cpp\"\nweights = \"q4_k_m\"\n",
    ),
    (
        "LLM training that does not fit",
        "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nmethod = \"full\"\nseq = 1000\n",
    ),
    (
        "Diffusion that streams",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\nengine = \"comfyui\"\n",
    ),
    (
        "vLLM serving",
        "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"inference\"\nengine = \"vllm\"\n",
    ),
    (
        "LoRA training with ZeRO on one GPU",
        "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nmethod = \"lora\"\nzero_stage = 2\nseq = 1000\n",
    ),
    (
        "Diffusers with sequential offload",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\nengine = \"diffusers\"\ncpu_offload = \"sequential\"\n",
    ),
    (
        "A game that streams to its budget",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"the-last-of-us-part-2\"\n[run]\ntask = \"game\"\nresolution = \"2560x1440\"\n",
    ),
    (
        "an fp8 model's config",
        "[gpu]\npreset = \"rtx-4090\"\n[model]\nhf_config = \"fp8.json\"\n[run]\ntask = \"inference\"\n",
    ),
    (
        "a vision model's config",
        "[gpu]\npreset = \"rtx-4090\"\n[model]\nhf_config = \"vision.json\"\n[run]\ntask = \"inference\"\n",
    ),
    (
        "a GGUF of a file type no engine format is named after",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\nfile = \"odd-type.gguf\"\n[run]\ntask = \"inference\"\nengine = \"llama.cpp\"\nseq = 256\n",
    ),
    // Workloads that do not resolve: the planner says why, in the language shown.
    (
        "a sequence longer than the model's context",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nseq = 1000000\n",
    ),
    (
        "a prompt longer than the sequence",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nseq = 512\nprompt = 1024\n",
    ),
    (
        "a GPU preset misspelt",
        "[gpu]\npreset = \"rtx-4900\"\n[model]\npreset = \"llama-3.1-8b\"\n",
    ),
    (
        "a diffusion model planned as an LLM",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"inference\"\n",
    ),
    (
        "an image width that is no multiple of 8",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"sdxl\"\n[run]\ntask = \"diffusion\"\nwidth = 1001\n",
    ),
    (
        "a model file that is not there",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\nfile = \"missing.gguf\"\n[run]\nengine = \"llama.cpp\"\n",
    ),
    (
        "an architecture whose KV heads do not divide its heads",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\nparams = 1e9\nlayers = 4\nhidden = 512\nheads = 8\nkv_heads = 3\nvocab = 1000\n",
    ),
    (
        "a texture quality no game has",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"game\"\ntexture_quality = \"extreme\"\n",
    ),
    (
        "paged optimizer with ZeRO-Offload",
        "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nmethod = \"lora\"\npaged_optimizer = true\noffload = \"optimizer\"\n",
    ),
    (
        "Game over budget",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"game\"\nresolution = \"3840x2160\"\ntexture_quality = \"ultra\"\nray_tracing = true\n",
    ),
];

/// The runs of English words in `text` that read as a sentence: two or more words in a row
/// (letters only, separated by single spaces), at least two of them lower-case ("synthetic
/// data" in brackets counts: a bracket ends a run but is no part of a word). Names are
/// capitalised ("Meta Llama", "GeForce RTX") and identifiers carry digits or punctuation, so
/// neither counts; quoted text (“…”, "…", `…`) is skipped.
fn english_sentences(text: &str) -> Vec<String> {
    let mut unquoted = String::new();
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (quote, c) {
            (None, '“') => quote = Some('”'),
            (None, '"' | '`') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            // Chinese script or punctuation between words ends a run ("、" in a list of names).
            (None, _) if !c.is_ascii() => unquoted.push_str(" | "),
            (None, '(' | ')' | '[' | ']') => unquoted.push_str(" | "),
            (None, _) => unquoted.push(c),
        }
    }
    let mut out = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let mut flush = |run: &mut Vec<&str>| {
        let lower = run
            .iter()
            .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
            .count();
        if lower >= 2 {
            out.push(run.join(" "));
        }
        run.clear();
    };
    for token in unquoted.split(' ') {
        // Trailing sentence punctuation belongs to the word before it and ends the run after it.
        let word = token.trim_end_matches([',', '.', ';', ':', '!', '?']);
        let ends = word.len() != token.len();
        if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphabetic()) {
            run.push(word);
        } else {
            flush(&mut run);
        }
        if ends {
            flush(&mut run);
        }
    }
    flush(&mut run);
    out
}

#[test]
fn the_sentence_rule_finds_english_and_passes_names() {
    assert_eq!(
        english_sentences("Fits with 3.00 GiB to spare: needs 5.00 GiB of 8.00 GiB"),
        ["GiB to spare"]
    );
    assert_eq!(
        english_sentences("no setting needs to change"),
        ["no setting needs to change"]
    );
    assert_eq!(
        english_sentences("装得下：需要 5.00 GiB，显卡共 8.00 GiB"),
        Vec::<String>::new()
    );
    assert!(english_sentences("Meta Llama 3.1 8B Instruct · NVIDIA GeForce RTX 4060").is_empty());
    assert!(english_sentences("粘贴 “CUDA out of memory” 的 traceback").is_empty());
    assert!(
        english_sentences("设置 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True 后重试")
            .is_empty()
    );
    assert_eq!(
        english_sentences("原因：running out shows as: stutter"),
        ["running out shows as"]
    );
    assert_eq!(
        english_sentences("GPU 0: DEMO RTX 4090 (synthetic data)"),
        ["synthetic data"]
    );
    assert!(english_sentences("GPU 0：RTX 4090（演示，合成数据）").is_empty());
}

/// What the walk saw: each label and value with the step it was first seen at, and the ids of
/// the estimators' warnings of the plans shown (so the walk is known to have met them).
#[derive(Default)]
struct Seen {
    shown: BTreeMap<String, String>,
    warnings: BTreeSet<&'static str>,
}

/// Every label and value now in the tree; the text boxes' contents (what the user typed) left
/// out.
fn look(h: &mut Harness<'static, VramDoctorApp>, step: &str, seen: &mut Seen) {
    if let Ok((_, r)) = h.state_mut().state.planner.plan_result() {
        seen.warnings.extend(r.warnings.iter().map(|m| m.id));
    }
    let shown = &mut seen.shown;
    for n in h.query_all(by().predicate(|_| true)) {
        let node = n.accesskit_node();
        let typed = matches!(node.role(), Role::TextInput | Role::MultilineTextInput);
        // The rows of a wrapped text are read joined, with the text they belong to (a row alone
        // may cut a quote in two); those of a multi-line text (the export preview) and of what
        // the user typed (the pasted message) are left out with it.
        if node.role() == Role::TextRun {
            continue;
        }
        let rows: String = node
            .children()
            .filter(|c| c.role() == Role::TextRun)
            .filter_map(|c| c.value())
            .collect();
        let texts = [
            node.label(),
            (!typed).then(|| node.value()).flatten(),
            (!typed && !rows.is_empty()).then_some(rows),
        ];
        for t in texts.into_iter().flatten().filter(|t| !t.contains('\n')) {
            shown.entry(t).or_insert_with(|| step.to_string());
        }
    }
}

#[test]
fn the_chinese_walk_finds_no_english_sentence() {
    let mut h = common_app::app_with(
        Harness::builder().with_size([1400.0, 1000.0]),
        Some(Tab::Planner),
        Lang::SimplifiedChinese,
        None,
    );
    h.run();
    let mut seen = Seen::default();
    look(&mut h, "planner at start", &mut seen);
    for kind in ["LLM training", "Diffusion", "Game", "LLM inference"] {
        click(&mut h, kind);
        look(&mut h, kind, &mut seen);
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, from) in MODEL_FILES {
        std::fs::copy(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(from),
            dir.path().join(name),
        )
        .unwrap();
    }
    gguf_of_unknown_type(&dir.path().join("odd-type.gguf"));
    let cannot = i18n::tr_in(Lang::SimplifiedChinese, "Cannot estimate this workload");
    let mut refused = 0;
    for (i, (what, toml)) in WORKLOADS.iter().enumerate() {
        let path = dir.path().join(format!("w{i}.toml"));
        std::fs::write(&path, toml).unwrap();
        h.state_mut().open_file(&path);
        h.run();
        assert!(
            h.state().state.planner.path.as_deref() == Some(path.as_path()),
            "{what}: the workload opened"
        );
        refused += usize::from(h.query_by_label(cannot).is_some());
        look(&mut h, what, &mut seen);
    }
    assert_eq!(refused, 9, "the workloads that do not resolve showed why");
    h.state_mut()
        .open_file(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(WORKFLOW));
    h.run();
    wait_for(
        &mut h,
        i18n::tr_in(Lang::SimplifiedChinese, "Models the workflow loads:"),
    );
    look(&mut h, "ComfyUI workflow opened", &mut seen);
    open_workflow_with_changes(&mut h);
    look(&mut h, "ComfyUI workflow with changes opened", &mut seen);
    click(&mut h, "Monitor");
    click(&mut h, "Show demo data");
    wait_for(&mut h, "GPU 0");
    h.run();
    look(&mut h, "monitor with demo data", &mut seen);
    click(&mut h, "Doctor");
    read_in_doctor(&mut h, OOM);
    look(&mut h, "doctor after a pasted OOM", &mut seen);
    click(&mut h, "Catalog");
    for shelf in ["Models", "Games", "GPUs"] {
        click(&mut h, shelf);
        look(&mut h, shelf, &mut seen);
    }
    // The catalog's form refuses a card of 5000 GiB, saying why.
    click(&mut h, "Add GPU…");
    for (field, text) in [("Name", "Lab card"), ("Memory (GiB)", "5000")] {
        let label = i18n::tr_in(Lang::SimplifiedChinese, field);
        h.get_by_role_and_label(Role::TextInput, label).focus();
        h.run();
        h.get_by_role_and_label(Role::TextInput, label)
            .type_text(text);
        h.run();
    }
    click(&mut h, "Save");
    wait_for(&mut h, "4096");
    look(&mut h, "the catalog form refusing a value", &mut seen);
    assert!(
        seen.shown.len() > 200,
        "the walk saw the app: {} texts",
        seen.shown.len()
    );
    assert!(
        seen.warnings.len() >= 5,
        "the walk's workloads show warnings: {:?}",
        seen.warnings
    );
    // The importers' notes on the model files opened (hf_quant, hf_config, gguf_model).
    for id in [
        "import.quant.unmatched_skip.more",
        "import.config.vision_tower",
        "import.gguf.main_type",
    ] {
        assert!(
            seen.warnings.contains(id),
            "{id} shown: {:?}",
            seen.warnings
        );
    }
    eprintln!(
        "the walk read {} texts; the plans shown warned {:?}",
        seen.shown.len(),
        seen.warnings
    );
    for (what, text) in glossary_zh() {
        seen.shown.entry(text).or_insert(what);
    }
    no_english(&seen);
}

/// Opens [`WORKFLOW_WITH_CHANGES`] on the card being planned for (an 8 GB one) and waits for its
/// changes to show.
fn open_workflow_with_changes(h: &mut Harness<'static, VramDoctorApp>) {
    h.state_mut()
        .open_file(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(WORKFLOW_WITH_CHANGES));
    h.run();
    let heading = "Changes to the workflow that make it fit:";
    let shown = i18n::tr_in(h.state().state.lang, heading).to_string();
    wait_for(h, &shown);
}

/// Fails naming each English sentence seen, and where.
fn no_english(seen: &Seen) {
    let english: Vec<String> = seen
        .shown
        .iter()
        .flat_map(|(text, step)| {
            english_sentences(text)
                .into_iter()
                .map(move |s| format!("{s:?} in {text:?} (at: {step})"))
        })
        .collect();
    assert!(
        english.is_empty(),
        "{} English sentence(s) in the Chinese app (build them as a types::message::Message, or \
         translate the label in assets/i18n/):\n{}",
        english.len(),
        english.join("\n")
    );
}

/// Chinese picked with a plan, a workflow's lines and the status line, the doctor's reading of a
/// message and the monitor's demo already shown in English: each is said again in Chinese, not
/// only what is planned or read after the switch.
#[test]
fn switching_to_chinese_says_what_is_shown_again() {
    let mut h = common_app::app_with(
        Harness::builder().with_size([1400.0, 1000.0]),
        Some(Tab::Planner),
        Lang::English,
        None,
    );
    h.run();
    h.state_mut().state.planner.workload.gpu = vram_doctor::types::workload::GpuSection {
        preset: Some("rtx-4060".into()),
        ..Default::default()
    };
    h.run();
    open_workflow_with_changes(&mut h);
    let mut seen = Seen::default();
    look(&mut h, "in English, before the switch", &mut seen);
    assert!(
        seen.shown.keys().any(|t| !english_sentences(t).is_empty()),
        "the English app shows sentences (the walk can tell)"
    );
    let en = |h: &mut Harness<'static, VramDoctorApp>, label: &str| {
        h.get_by_label(label).click();
        h.run();
    };
    en(&mut h, "Doctor");
    read_in_doctor(&mut h, OOM);
    en(&mut h, "Monitor");
    en(&mut h, "Show demo data");
    wait_for(&mut h, "GPU 0");
    h.get_by_label(Lang::SimplifiedChinese.endonym()).click();
    h.run();
    h.run();
    assert_eq!(h.state().state.lang, Lang::SimplifiedChinese);
    let mut seen = Seen::default();
    look(&mut h, "monitor after switching to Chinese", &mut seen);
    click(&mut h, "Doctor");
    look(&mut h, "doctor after switching to Chinese", &mut seen);
    click(&mut h, "Planner");
    look(&mut h, "planner after switching to Chinese", &mut seen);
    no_english(&seen);
}
