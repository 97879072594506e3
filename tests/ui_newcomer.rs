//! The app as a newcomer meets it (issue 22): the paths a first-time user takes with mouse and
//! keyboard, by accessible labels, rather than the paths the views were designed around.

use egui::accesskit::Role;
use egui::{Key, Modifiers};
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use std::collections::BTreeSet;
use vram_doctor::memory::WorkloadFile;
use vram_doctor::plan::{PlanResult, Strategy};
use vram_doctor::ui::doctor::DoctorView;
use vram_doctor::ui::{Tab, VramDoctorApp};

#[path = "common/app.rs"]
mod common_app;
use common_app::app;

type App = Harness<'static, VramDoctorApp>;

/// The planner of a fresh app on the workload `toml`.
fn planner_on(toml: &str) -> App {
    let mut h = app(Some(Tab::Planner));
    h.state_mut().state.planner.workload = WorkloadFile::parse(toml, "test.toml").unwrap();
    h.run();
    h
}

fn result(h: &mut App) -> PlanResult {
    h.state_mut()
        .state
        .planner
        .plan_result()
        .expect("the workload resolves")
        .1
}

/// Types `text` one key per frame, as a person does (each keystroke is its own frame).
fn type_slowly(h: &mut App, text: &str) {
    for c in text.chars() {
        h.event(egui::Event::Text(c.to_string()));
        h.run();
    }
}

const LLAMA_8B_3060: &str =
    "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nseq = 1024\n";

#[test]
fn a_typed_sequence_length_is_taken_whole() {
    let mut h = planner_on(LLAMA_8B_3060);
    h.get_by_role_and_label(Role::SpinButton, "Sequence length")
        .click();
    h.run();
    type_slowly(&mut h, "512");
    h.key_press(Key::Enter);
    h.run();
    assert_eq!(h.state().state.planner.workload.run.seq, Some(512));
    h.get_by_role_and_label(Role::Slider, "Sequence length");
}

/// A plan that shortens the context used to write `run.prompt`, which no control showed and
/// which then refused every shorter sequence ("run.prompt = 1024 is out of range").
#[test]
fn applying_a_shorter_context_leaves_no_hidden_lock() {
    let mut h = planner_on(
        "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nseq = 131072\n",
    );
    let plan = result(&mut h).plan;
    assert!(
        plan.changes
            .iter()
            .any(|s| matches!(s, Strategy::Context { .. })),
        "this workload needs a shorter context: {:?}",
        plan.changes
    );
    h.get_by_label("Apply plan").click();
    h.run();
    assert_eq!(h.state().state.planner.workload.run.prompt, None);
    for seq in [600.0, 300.0] {
        h.get_by_role_and_label(Role::Slider, "Sequence length")
            .set_value_accesskit(seq);
        h.run();
        assert!(
            h.query_by_label("Cannot estimate this workload").is_none(),
            "sequence {seq} refused"
        );
        assert_eq!(h.state().state.planner.workload.run.seq, Some(seq as i64));
    }
}

/// A lock saved by an older version (or written by hand) is shown and lifted by the controls.
#[test]
fn a_saved_prompt_longer_than_the_new_sequence_is_cut_with_it() {
    let mut h = planner_on(
        "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nseq = 4096\nprompt = 1024\n",
    );
    let prompt = h.get_by_role_and_label(Role::Slider, "Prompt length");
    assert_eq!(prompt.accesskit_node().numeric_value(), Some(1024.0));
    h.get_by_role_and_label(Role::Slider, "Sequence length")
        .set_value_accesskit(600.0);
    h.run();
    assert!(h.query_by_label("Cannot estimate this workload").is_none());
    let run = &h.state().state.planner.workload.run;
    assert_eq!((run.seq, run.prompt), (Some(600), None));
}

/// The control that sets what a strategy changes, by its accessible label and role.
fn control(s: &Strategy) -> &'static [(Role, &'static str)] {
    match s {
        Strategy::Weights { .. } => &[(Role::ComboBox, "Weights")],
        Strategy::KvCache { .. } => &[(Role::ComboBox, "KV cache")],
        Strategy::FlashAttention => &[(Role::ComboBox, "Attention")],
        Strategy::Checkpointing { .. } => &[(Role::ComboBox, "Checkpointing")],
        Strategy::MicroBatch { .. } => &[
            (Role::Slider, "Batch size"),
            (Role::Slider, "Gradient accumulation"),
        ],
        Strategy::Batch { .. } => &[(Role::Slider, "Batch size")],
        Strategy::Method { .. } => &[(Role::ComboBox, "Method")],
        Strategy::PureBf16 => &[(Role::ComboBox, "Precision")],
        Strategy::Optimizer8bit => &[(Role::ComboBox, "Optimizer")],
        Strategy::FusedOptimizer => &[(Role::ComboBox, "Optimizer step")],
        Strategy::OptimizerInBwd => &[(Role::CheckBox, "Optimizer step in backward")],
        Strategy::ActivationOffload => &[(Role::CheckBox, "Activation offloading to CPU")],
        Strategy::PagedOptimizer => &[(Role::CheckBox, "Paged optimizer (bitsandbytes)")],
        Strategy::Packing => &[
            (Role::CheckBox, "Sequence packing"),
            (Role::Slider, "Batch size"),
        ],
        Strategy::Zero { .. } => &[(Role::Slider, "ZeRO stage")],
        Strategy::Offload { .. } => &[(Role::ComboBox, "Offload")],
        Strategy::Context { .. } => &[(Role::Slider, "Sequence length")],
        Strategy::ChunkedLoss => &[(Role::ComboBox, "Loss")],
        Strategy::Split {
            cpu_moe_layers: 0, ..
        } => &[(Role::Slider, "GPU layers (-ngl)")],
        Strategy::Split { .. } => &[
            (Role::Slider, "GPU layers (-ngl)"),
            (
                Role::Slider,
                "Layers with experts in system RAM (--n-cpu-moe)",
            ),
        ],
    }
}

/// The strategy's `kind` as `plan --json` spells it.
fn kind(s: &Strategy) -> String {
    serde_json::to_value(s).unwrap()["kind"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Workloads whose plans, together, recommend every LLM strategy there is.
const LLM_PLANS: &[&str] = &[
    // weights + context
    "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nseq = 131072\n",
    // kv cache + flash attention + a GPU/CPU split
    "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"qwen2.5-14b\"\n[run]\nengine = \"llama.cpp\"\nweights = \"q4_k_m\"\nseq = 16384\n",
    // a split that moves MoE experts
    "[gpu]\npreset = \"rtx-4060-ti-16gb\"\n[model]\npreset = \"qwen3-30b-a3b\"\n[run]\nengine = \"llama.cpp\"\nweights = \"q4_k_m\"\nseq = 16384\n",
    // method + checkpointing + activation offloading + chunked loss + context
    "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\n",
    // micro-batch
    "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nmethod = \"qlora\"\nbatch = 8\n",
    // 8-bit optimizer (a full fine-tune whose optimizer states dominate once checkpointing and
    // chunked loss are on; the QLoRA run that used to show it stopped recommending it when the
    // training peak became the largest of its moments, f72451c)
    "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"llama-3.2-3b\"\n[run]\ntask = \"training\"\nmethod = \"full\"\nseq = 512\ncheckpointing = \"full\"\nloss = \"chunked\"\n",
    // 8-bit optimizer where gradient accumulation rules out the step in backward (the LoRA run
    // on the 3060 that used to show it takes activation offloading instead since 93d8bdd: no
    // quality risk at about the same speed)
    "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"llama-3.2-3b\"\n[run]\ntask = \"training\"\nmethod = \"full\"\nseq = 512\ncheckpointing = \"full\"\nloss = \"chunked\"\nprecision = \"bf16\"\ngrad_accum = 2\n",
    // pure bf16 + ZeRO
    "[gpu]\npreset = \"rtx-4090\"\ncount = 4\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nbatch = 4\nseq = 2048\n",
    // a smaller batch
    "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nbatch = 128\nseq = 600\nweights = \"nf4\"\nattention = \"flash\"\n",
    // the optimizer step in backward (no full set of gradients)
    "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"llama-3.2-1b\"\n[run]\ntask = \"training\"\nseq = 512\nmethod = \"full\"\ncheckpointing = \"full\"\nloss = \"chunked\"\nprecision = \"bf16\"\noptimizer = \"adamw-8bit\"\n",
    // sequence packing (samples of a quarter of the sequence: the padded batch of 8 is two
    // packed rows)
    "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nmethod = \"qlora\"\nattention = \"flash\"\nbatch = 8\nseq = 2048\navg_seq = 512\n",
    // optimizer offload (gradient accumulation rules out the step in backward)
    "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"llama-3.2-1b\"\n[run]\ntask = \"training\"\nseq = 512\nmethod = \"full\"\ncheckpointing = \"full\"\nloss = \"chunked\"\nprecision = \"bf16\"\noptimizer = \"adamw-8bit\"\ngrad_accum = 2\n",
];

/// Every strategy a plan recommends has a control, and one press of "Apply plan" reaches the
/// peak the plan promised, with nothing left to apply (issue 22: chunked cross-entropy had no
/// control and was never written back, so the plan never finished).
#[test]
fn every_recommended_strategy_has_a_control_and_apply_reaches_the_promised_peak() {
    let mut seen = BTreeSet::new();
    for toml in LLM_PLANS {
        let mut h = planner_on(toml);
        let promised = result(&mut h).plan;
        assert!(!promised.changes.is_empty(), "{toml}: no plan to apply");
        for s in &promised.changes {
            seen.insert(kind(s));
            for (role, label) in control(s) {
                assert!(
                    h.query_by_role_and_label(*role, label).is_some(),
                    "{toml}: no control '{label}' for {s:?}"
                );
            }
        }
        h.get_by_label("Apply plan").click();
        h.run();
        let after = result(&mut h);
        assert_eq!(
            after.peak.process_bytes, promised.process_bytes,
            "{toml}: the applied plan's peak is not the promised one"
        );
        assert!(
            after.plan.changes.is_empty(),
            "{toml}: still recommends {:?} after applying",
            after.plan.changes
        );
        assert!(h.query_by_label("Apply plan").is_none(), "{toml}");
    }
    let every = [
        "weights",
        "kv_cache",
        "flash_attention",
        "checkpointing",
        "micro_batch",
        "batch",
        "method",
        "pure_bf16",
        "optimizer8bit",
        "optimizer_in_bwd",
        "activation_offload",
        "packing",
        "zero",
        "offload",
        "context",
        "chunked_loss",
        "split",
    ];
    let missing: Vec<_> = every.iter().filter(|k| !seen.contains(**k)).collect();
    assert!(
        missing.is_empty(),
        "no workload here recommends {missing:?}"
    );
}

/// The GPU list opens with its search focused: typing filters at once and Enter takes the first
/// match; a click into the search keeps the list open.
#[test]
fn the_gpu_search_has_the_keyboard_when_the_list_opens() {
    let mut h = app(Some(Tab::Planner));
    h.run();
    h.get_by_role_and_label(Role::ComboBox, "GPU").click();
    h.run();
    let search = h.get_by_role(Role::TextInput);
    assert!(search.is_focused(), "the search has the keyboard");
    search.click();
    h.run();
    assert!(
        h.query_by_role(Role::TextInput).is_some(),
        "a click into the search keeps the list open"
    );
    type_slowly(&mut h, "3060");
    assert!(
        h.query_by_label_contains("RTX 4080").is_none(),
        "the list is filtered"
    );
    h.get_all_by_label_contains("3060").next().unwrap();
    h.key_press(Key::Enter);
    h.run();
    let preset = h.state().state.planner.workload.gpu.preset.clone();
    assert!(
        preset.as_deref().is_some_and(|p| p.contains("3060")),
        "{preset:?}"
    );
    assert!(
        h.query_by_role(Role::TextInput).is_none(),
        "the list closed"
    );
}

const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. \
GPU 0 has a total capacity of 11.76 GiB of which 1.05 GiB is free.";

/// The message box gives the keyboard back: Tab leaves it, Ctrl+Enter reads the message.
#[test]
fn the_message_box_reads_with_ctrl_enter_and_tab_leaves_it() {
    let mut h = Harness::builder()
        .with_size([1200.0, 900.0])
        .with_context_setup(vram_doctor::ui::install_fonts)
        .build_ui_state(|ui, v: &mut DoctorView| v.ui(ui), DoctorView::default());
    h.run();
    h.get_by_role(Role::MultilineTextInput).focus();
    h.run();
    h.get_by_role(Role::MultilineTextInput).type_text(OOM);
    h.run();
    h.key_press_modifiers(Modifiers::COMMAND, Key::Enter);
    h.run();
    assert!(h.state().wizard.is_some(), "Ctrl+Enter read the message");
    h.get_by_label_contains("Recognised:");
    assert!(!h.state().message.contains('\n'));

    h.get_by_role(Role::MultilineTextInput).focus();
    h.run();
    h.key_press(Key::Tab);
    h.run();
    assert!(!h.get_by_role(Role::MultilineTextInput).is_focused());
    assert!(!h.state().message.contains('\t'), "Tab did not indent");
}

/// The headline verdict, as the planner shows it.
fn headline(h: &App) -> String {
    let starts = ["Fits with ", "Fits only by streaming ", "Does not fit, "];
    let labels: Vec<String> = starts
        .iter()
        .flat_map(|s| h.query_all_by_label_contains(s))
        // A label's text is its accesskit value.
        .filter_map(|n| n.accesskit_node().value())
        .filter(|l| starts.iter().any(|s| l.starts_with(s)))
        .collect();
    assert_eq!(labels.len(), 1, "one verdict: {labels:?}");
    labels[0].clone()
}

/// One verdict in the words a beginner reads the same way, never "fits" with nothing to spare,
/// and never at odds with the largest batch and sequence that fit (issue 22 item 2).
#[test]
fn the_verdict_is_one_of_three_and_agrees_with_the_limits() {
    let mut h = planner_on(
        "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nseq = 4096\n",
    );
    assert!(headline(&h).starts_with("Fits with "), "{}", headline(&h));
    // The same run on a card it fills to 98 %: inside the safety margin is not "fits".
    let r = result(&mut h);
    let tight_gib = r.verdict.need_bytes as f64 / 0.98 / (1u64 << 30) as f64;
    h.state_mut().state.planner.workload.gpu.vram_gib = Some((tight_gib * 100.0).round() / 100.0);
    h.run();
    let v = headline(&h);
    assert!(v.starts_with("Does not fit, "), "{v}");
    let r = result(&mut h);
    assert!(!r.fits && r.verdict.short_bytes() > 0);
    let run = &h.state().state.planner.workload.run;
    let (batch, seq) = (run.batch.unwrap_or(1), run.seq.unwrap());
    assert!(
        r.plan.max_batch.is_none_or(|b| i64::from(b) < batch)
            || r.plan.max_seq.is_none_or(|s| i64::from(s) < seq),
        "a verdict of 'does not fit' with limits above the run: {:?} {:?}",
        r.plan.max_batch,
        r.plan.max_seq
    );
    h.get_by_label("Apply plan");
}

/// ComfyUI's cache and partial loading fill the card: what it would use is shown apart from
/// what the run needs, and the need is the same on every card.
#[test]
fn comfyui_needs_the_same_on_every_card_and_streams_when_short() {
    let comfy = |gib: u32, model: &str| {
        format!(
            "[gpu]\nvram_gib = {gib}\n[model]\npreset = \"{model}\"\n[run]\ntask = \"diffusion\"\nengine = \"comfyui\"\n"
        )
    };
    let mut needs = Vec::new();
    for gib in [16, 24, 48] {
        let mut h = planner_on(&comfy(gib, "sdxl"));
        assert!(headline(&h).starts_with("Fits with "), "{}", headline(&h));
        let v = result(&mut h).verdict;
        needs.push(v.need_bytes);
        if v.use_bytes != v.need_bytes {
            h.get_by_label_contains("The engine would use");
        }
    }
    assert!(needs.windows(2).all(|n| n[0] == n[1]), "{needs:?}");

    let mut h = planner_on(&comfy(12, "flux-dev"));
    let v = headline(&h);
    assert!(v.starts_with("Fits only by streaming "), "{v}");
    assert!(v.contains("slower"), "{v}");
    assert!(result(&mut h).fits);
}

/// Ctrl+Z and the Undo button step back over every kind of change: a knob, "Apply plan",
/// "Open workload…" and the top bar's GPU picker (issue 22 item 5).
#[test]
fn undo_steps_back_over_knobs_apply_open_and_the_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("game.toml");
    std::fs::write(
        &file,
        "[gpu]\nvram_gib = 8\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"game\"\n",
    )
    .unwrap();
    let mut h = planner_on(LLAMA_8B_3060);
    h.state_mut().state.planner.dialogs =
        vram_doctor::ui::files::Dialogs(Box::new(common_app::Picks(file)));
    let start = h.state().state.planner.workload.clone();
    assert!(
        h.get_by_label("Undo").accesskit_node().is_disabled(),
        "nothing to undo yet"
    );

    h.get_by_role_and_label(Role::Slider, "Batch size")
        .set_value_accesskit(8.0);
    h.run();
    let knob = h.state().state.planner.workload.clone();
    assert_eq!(knob.run.batch, Some(8));
    h.get_by_label("Apply plan").click();
    h.run();
    let applied = h.state().state.planner.workload.clone();
    assert_ne!(applied, knob);
    h.get_by_label("Open workload…").click();
    h.run();
    let opened = h.state().state.planner.workload.clone();
    assert_eq!(opened.run.task, Some(vram_doctor::memory::Task::Game));
    h.get_by_role_and_label(Role::ComboBox, "GPU").click();
    h.run();
    type_slowly(&mut h, "4090");
    h.key_press(Key::Enter);
    h.run();
    assert_ne!(h.state().state.planner.workload.gpu, opened.gpu);

    // Back, newest first: the keyboard twice, the button twice.
    h.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    h.run();
    assert_eq!(h.state().state.planner.workload, opened);
    h.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    h.run();
    assert_eq!(h.state().state.planner.workload, applied);
    h.get_by_label("Undo").click();
    h.run();
    assert_eq!(h.state().state.planner.workload, knob);
    h.get_by_label("Undo").click();
    h.run();
    assert_eq!(h.state().state.planner.workload, start);
    assert!(h.get_by_label("Undo").accesskit_node().is_disabled());
}

/// The doctor's "Open in planner" opens the workload the message is about, whatever kind the
/// planner showed: a training fix opens LLM training, the card the size the message reports
/// (not a preset of another size under that size), and one Ctrl+Z brings the planner back.
#[test]
fn open_in_planner_opens_the_messages_workload_and_is_undone() {
    let mut h = planner_on(
        "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\n",
    );
    let flux = h.state().state.planner.workload.clone();
    let fields: std::collections::BTreeMap<String, String> = [
        ("run.checkpointing", "full"),
        ("gpu.vram_gib", "11.76"),
        ("run.engine", "transformers"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let s = &mut h.state_mut().state;
    s.tab = Tab::Doctor;
    s.doctor.open_in_planner = Some(fields);
    h.run();
    let s = &h.state().state;
    assert_eq!(s.tab, Tab::Planner);
    let w = &s.planner.workload;
    assert_eq!(w.run.task, Some(vram_doctor::memory::Task::Training));
    assert_ne!(w.model, flux.model, "an LLM, not the Flux model");
    assert_eq!(
        (w.gpu.preset.as_deref(), w.gpu.vram_gib),
        (None, Some(11.76))
    );
    let shown = h
        .get_by_role_and_label(Role::ComboBox, "GPU")
        .accesskit_node()
        .value()
        .unwrap_or_default();
    assert!(
        shown.contains("11.76 GiB") && !shown.contains("4090"),
        "the picker shows {shown:?}"
    );
    h.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    h.run();
    assert_eq!(h.state().state.planner.workload, flux);

    // Fields that name no kind keep the one shown; a card size close to the preset's keeps it.
    let mut h = planner_on(LLAMA_8B_3060);
    let fields = [("run.batch", "1"), ("gpu.vram_gib", "11.76")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    h.state_mut().state.tab = Tab::Doctor;
    h.state_mut().state.doctor.open_in_planner = Some(fields);
    h.run();
    let w = &h.state().state.planner.workload;
    assert_eq!(w.run.task, None);
    assert_eq!(w.gpu.preset.as_deref(), Some("rtx-3060-12gb"));
}

fn comfy_on(gib: u32, model: &str, extra: &str) -> App {
    planner_on(&format!(
        "[gpu]\nvram_gib = {gib}\n[model]\npreset = \"{model}\"\n[run]\ntask = \"diffusion\"\nengine = \"comfyui\"\n{extra}"
    ))
}

/// The line beside the bar that says what streams from system RAM, when something does.
fn streamed_line(h: &App) -> Option<String> {
    let lines: Vec<String> = h
        .query_all_by_label_contains("streamed from system RAM each step, not held in VRAM")
        .filter_map(|n| n.accesskit_node().label().or(n.accesskit_node().value()))
        .collect();
    lines.first().cloned()
}

/// Picks `choice` in the combo box `label` with the mouse, as a newcomer does.
fn choose(h: &mut App, label: &str, choice: &str) {
    h.get_by_role_and_label(Role::ComboBox, label).click();
    h.run();
    // A long list scrolls: bring the choice into view first, as a person scrolls to it.
    h.get_by_role_and_label(Role::Button, choice).scroll_to_me();
    h.run();
    h.get_by_role_and_label(Role::Button, choice).click();
    h.run();
    h.run();
}

/// Issue 22 item 8: fp8, a Q4_0 GGUF and `--lowvram` showed the same bar, and "Fits" while most
/// of the model streamed. Each weight format picked from the list (GGUF ones labelled as GGUF)
/// changes what streams from system RAM, said beside the bar with the time it costs, and a
/// streaming run's headline says so.
#[test]
fn comfyui_weight_changes_show_what_streams() {
    let mut h = comfy_on(12, "flux-dev", "");
    let v = headline(&h);
    assert!(v.starts_with("Fits only by streaming "), "{v}");
    let bf16 = streamed_line(&h).expect("Flux bf16 on 12 GiB streams");
    let fit = result(&mut h).verdict.fit;
    let vram_doctor::plan::verdict::Fit::Streams { streamed_bytes, .. } = fit else {
        panic!("{fit:?}")
    };
    assert!(
        bf16.starts_with(&vram_doctor::units::human(streamed_bytes)),
        "{bf16} / {streamed_bytes}"
    );

    choose(&mut h, "Weights", "fp8");
    assert_eq!(
        h.state().state.planner.workload.run.weights.as_deref(),
        Some("fp8")
    );
    let fp8 = streamed_line(&h);
    assert_ne!(fp8.as_deref(), Some(bf16.as_str()), "fp8 changes nothing");

    // The GGUF file types are listed as GGUF, not as a bare "q4_0".
    h.get_by_role_and_label(Role::ComboBox, "Weights").click();
    h.run();
    assert!(
        h.query_by_label("q4_0").is_none(),
        "a bare q4_0 in the list"
    );
    h.key_press(Key::Escape);
    h.run();
    choose(&mut h, "Weights", "GGUF Q4_0");
    assert_eq!(
        h.state().state.planner.workload.run.weights.as_deref(),
        Some("q4_0")
    );
    let shown = h
        .get_by_role_and_label(Role::ComboBox, "Weights")
        .accesskit_node()
        .value();
    assert_eq!(
        shown.as_deref(),
        Some("GGUF Q4_0"),
        "the picker shows the pick"
    );
    // A 4-bit Flux (6.4 GiB) sits whole on 12 GiB: nothing streams and the verdict says fits.
    let q4 = headline(&h);
    assert!(q4.starts_with("Fits with "), "{q4}");
    assert_eq!(streamed_line(&h), None);
}

/// The words beside the slowdown agree with its factor: "barely slower" under 1.1×, "much
/// slower" from 2×, neither between (plan::verdict BARELY_SLOWER, MUCH_SLOWER), on every
/// streaming run a ComfyUI user meets on 8 and 12 GiB cards.
#[test]
fn the_slowdown_words_agree_with_the_factor() {
    let mut seen = 0;
    for (gib, model) in [
        (8, "sdxl"),
        (8, "flux-dev"),
        (12, "flux-dev"),
        (16, "flux-dev"),
    ] {
        for extra in ["", "width = 1536\nheight = 1536\n"] {
            let h = comfy_on(gib, model, extra);
            let Some(line) = streamed_line(&h) else {
                continue;
            };
            seen += 1;
            let factor: f64 = line
                .split("about ")
                .nth(1)
                .and_then(|t| t.split('×').next())
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("no factor in {line}"));
            assert_eq!(line.ends_with("barely slower"), factor < 1.1, "{line}");
            assert_eq!(line.ends_with("much slower"), factor >= 2.0, "{line}");
            assert!(!line.contains("slowly"), "{line}");
            let v = headline(&h);
            assert!(
                v.contains(&format!("about {factor:.2}× slower")),
                "{v} / {line}"
            );
            let warnings = h.query_all_by_label_contains("it runs, but slowly").count();
            assert_eq!(warnings, 0, "'runs, but slowly' beside {factor}×");
        }
    }
    assert!(seen >= 2, "too few streaming runs to check: {seen}");
}

/// The stage whose memory is the peak is named: denoising for Flux at its native size, the
/// VAE decode for SDXL at 1536² batch 2 with classic loading (residency tests), and the
/// plan's own peak when the plan moves it.
#[test]
fn the_peak_stage_is_named() {
    let h = comfy_on(24, "flux-dev", "");
    h.get_by_label("Peak memory: during denoising");
    let h = comfy_on(
        8,
        "sdxl",
        "width = 1536\nheight = 1536\nbatch = 2\ndynamic_vram = \"off\"\n",
    );
    h.get_by_label("Peak memory: during VAE decode");
}

/// The export says which settings it shows, and the user picks: the recommended plan (fp8
/// weights for Flux on 12 GiB) or the current settings (bf16 as set).
#[test]
fn the_export_says_and_picks_current_settings_or_the_plan() {
    let mut h = comfy_on(12, "flux-dev", "");
    let preview = |h: &App| -> String {
        h.query_all_by_label_contains("python main.py")
            .filter_map(|n| n.accesskit_node().value().or(n.accesskit_node().label()))
            .next()
            .expect("a ComfyUI export preview")
    };
    let plan = preview(&h);
    assert!(plan.contains("--fp8_e4m3fn-unet"), "{plan}");
    h.get_by_role_and_label(Role::RadioButton, "current settings")
        .click();
    h.run();
    h.run();
    let current = preview(&h);
    assert!(!current.contains("fp8"), "{current}");
    h.get_by_role_and_label(Role::RadioButton, "recommended plan")
        .click();
    h.run();
    h.run();
    assert_eq!(preview(&h), plan);
    // A run the plan leaves alone says so instead of offering the pick.
    let h = comfy_on(24, "sdxl", "");
    h.get_by_label("Shows the current settings (the plan changes nothing)");
    assert!(h.query_by_label("current settings").is_none());
}

/// Every text painted in the last frame (labels, plot axes, hover tips), nested shapes included.
fn painted_texts(h: &App) -> Vec<String> {
    fn walk(s: &egui::Shape, out: &mut Vec<String>) {
        match s {
            egui::Shape::Text(t) => out.push(t.galley.text().to_string()),
            egui::Shape::Vec(v) => v.iter().for_each(|s| walk(s, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for c in &h.output().shapes {
        walk(&c.shape, &mut out);
    }
    out
}

/// The monitor's demo plays what the newcomer planned (issue 22 item 9): a game planned on an
/// 8 GB card in the planner, then "Show demo data" on the monitor of a machine without a GPU,
/// shows that card with 8 GB and the game's process, a full history from the first frame (not a
/// flat start), a time axis counted back from the latest reading with no negative label, and a
/// hover that names a line's value near it and shows nothing over empty space.
#[test]
fn the_monitors_demo_plays_the_planned_game_on_the_planned_card() {
    let mut h = app(Some(Tab::Planner));
    h.run();
    h.get_by_label("Game").click();
    h.run();
    h.get_by_role_and_label(Role::ComboBox, "GPU").click();
    h.run();
    type_slowly(&mut h, "rtx 4060");
    h.get_by_label_contains("GeForce RTX 4060 (8 GiB)").click();
    h.run();
    h.get_by_role_and_label(Role::ComboBox, "Title").click();
    h.run();
    h.get_by_role(Role::TextInput).focus();
    h.run();
    h.get_by_role(Role::TextInput).type_text("cyberpunk");
    h.run();
    h.get_by_label("Cyberpunk 2077").click();
    h.run();
    let w = &h.state().state.planner.workload;
    assert_eq!(w.gpu.preset.as_deref(), Some("rtx-4060"));
    assert_eq!(w.model.preset.as_deref(), Some("cyberpunk-2077"));

    h.get_by_label("Monitor").click();
    h.run();
    h.get_by_label("Show demo data").click();
    h.run();
    // The first frame after the click: the card, its size, the game's process, found by name.
    h.get_by_label("GPU 0: DEMO NVIDIA GeForce RTX 4060 (synthetic data)");
    h.get_by_label_contains("of 8.00 GiB in use");
    h.get_by_label("Cyberpunk2077.exe (the game)");
    assert!(
        h.query_by_label_contains("the process holding the most memory")
            .is_none(),
        "the game's process is recognised by its name"
    );
    assert!(h.query_by_label_contains("ComfyUI").is_none());
    let ctx = h.ctx.clone();
    let session = h.state_mut().state.monitor.current(&ctx);
    let key = session.latest().unwrap().gpus[0].key();
    let points: Vec<_> = session.history().gpu(&key).unwrap().points().collect();
    assert!(
        points.len() >= 300,
        "the 5 min window is full: {}",
        points.len()
    );
    let first_minute: BTreeSet<Option<u64>> = points[..60].iter().map(|p| p.used).collect();
    assert!(first_minute.len() > 2, "not flat: {first_minute:?}");

    // The time axis: minutes:seconds before the latest reading, "0:00" at it, none negative.
    h.run();
    let texts = painted_texts(&h);
    let times: Vec<&String> = texts
        .iter()
        .filter(|t| {
            let t = t.trim_start_matches('-');
            t.split_once(':')
                .is_some_and(|(m, s)| m.parse::<u32>().is_ok() && s.len() == 2)
        })
        .collect();
    assert!(times.iter().any(|t| *t == "0:00"), "{times:?}");
    assert!(times.iter().any(|t| *t == "1:00"), "{times:?}");
    assert!(times.iter().all(|t| !t.starts_with('-')), "{times:?}");
    assert!(
        texts
            .iter()
            .any(|t| t == "time before the latest reading (min:s)")
    );

    // Hovering down through the memory plot: a tip only near a line, and it names the line.
    let top = h
        .get_by_label_contains("of 8.00 GiB in use")
        .rect()
        .bottom();
    let x = 600.0;
    let (mut named, mut silent) = (0, 0);
    for dy in (10..200).step_by(6) {
        h.hover_at(egui::pos2(x, top + dy as f32));
        h.run();
        let tips: Vec<String> = painted_texts(&h)
            .into_iter()
            .filter(|t| t.contains('\n') && t.ends_with(" GiB"))
            .collect();
        match tips.first() {
            None => silent += 1,
            Some(t) => {
                let line = t.lines().next().unwrap();
                assert!(
                    [
                        "in use",
                        "reserved by the driver",
                        "total",
                        "planner's peak"
                    ]
                    .contains(&line),
                    "a tip over empty space: {t:?}"
                );
                assert!(t.contains(" ago\n"), "{t:?}");
                named += 1;
            }
        }
    }
    assert!(
        named > 0 && silent > 0,
        "{named} tips near lines, {silent} positions without"
    );
}
