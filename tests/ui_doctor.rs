//! Doctor tab: paste a message, let the evidence answer what it can, walk to a fix.

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use vram_doctor::ui::doctor::DoctorView;

const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. \
GPU 0 has a total capacity of 23.65 GiB of which 1.05 GiB is free. Including non-PyTorch memory, \
this process has 22.58 GiB memory in use. Of the allocated memory 20.10 GiB is allocated by \
PyTorch, and 1.90 GiB is reserved by PyTorch but unallocated.";

fn harness() -> Harness<'static, DoctorView> {
    Harness::builder()
        .with_size([1200.0, 1000.0])
        .with_context_setup(vram_doctor::ui::install_fonts)
        .build_ui_state(|ui, v: &mut DoctorView| v.ui(ui), DoctorView::default())
}

/// Answers with the first option until the wizard shows its result (bounded).
fn walk_to_result(h: &mut Harness<'static, DoctorView>) {
    for _ in 0..20 {
        if h.query_by_label("Fixes, for the likeliest cause first")
            .is_some()
            && h.query_by_label("What the evidence points at so far")
                .is_none()
        {
            return;
        }
        let Some(w) = h.state().wizard.clone() else {
            panic!("the wizard did not start")
        };
        let mut probe = w.clone();
        let kb = vram_doctor::doctor::Knowledge::get();
        let Ok(vram_doctor::doctor::View::Question { options, .. }) = probe.view(kb, "en") else {
            return;
        };
        h.get_by_label(&options[0]).click();
        h.run();
        probe.answer(kb, 0).unwrap();
        assert_eq!(
            h.state().wizard.as_ref().unwrap().node,
            probe.node,
            "the click answered"
        );
    }
    panic!("no result after 20 answers");
}

#[test]
fn a_pasted_oom_message_is_read_and_leads_to_fixes() {
    let mut h = harness();
    h.run();
    h.get_by_role(Role::MultilineTextInput).focus();
    h.run();
    h.get_by_role(Role::MultilineTextInput).type_text(OOM);
    h.run();
    h.get_by_label("Read message").click();
    h.run();
    h.get_by_label_contains("Recognised:");
    h.get_by_label("Evidence");
    let w = h.state().wizard.clone().unwrap();
    assert!(
        w.path.iter().any(|s| s.auto),
        "the message answered at least one step"
    );
    h.get_all_by_label_contains("answered from the evidence")
        .next()
        .unwrap();
    walk_to_result(&mut h);
    h.get_by_label("Likely causes");
    h.get_by_label("Fixes, for the likeliest cause first");
}

#[test]
fn back_and_restart_without_a_message() {
    let mut h = harness();
    h.run();
    h.get_by_label("Start without a message").click();
    h.run();
    let start = h.state().wizard.clone().unwrap();
    assert!(start.path.is_empty());
    let kb = vram_doctor::doctor::Knowledge::get();
    let Ok(vram_doctor::doctor::View::Question { options, .. }) = start.view(kb, "en") else {
        panic!("the root is a question")
    };
    h.get_by_label(&options[0]).click();
    h.run();
    assert_ne!(h.state().wizard.as_ref().unwrap().node, start.node);
    h.get_by_label("Back").click();
    h.run();
    assert_eq!(h.state().wizard.as_ref().unwrap().node, start.node);
    h.get_by_label("Restart").click();
    h.run();
    assert!(h.state().wizard.is_none());
}

/// A llama.cpp log opens the planner on llama.cpp with the card the log states (issue 16).
#[test]
fn a_llama_cpp_message_opens_the_planner_on_its_engine_and_card() {
    let log = "ggml_cuda_init: found 1 CUDA devices (Total VRAM: 12287 MiB):\n\
load_tensors:        CUDA0 model buffer size =  4403.49 MiB\n\
ggml_backend_cuda_buffer_type_alloc_buffer: allocating 32768.00 MiB on device 0: cudaMalloc failed: out of memory\n\
llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache";
    let mut h = harness();
    h.run();
    h.get_by_role(Role::MultilineTextInput).focus();
    h.run();
    h.get_by_role(Role::MultilineTextInput).type_text(log);
    h.run();
    h.get_by_label("Read message").click();
    h.run();
    assert!(h.state().open_in_planner.is_none());
    h.get_by_label("Open the message's workload in the planner")
        .click();
    h.run();
    let fields = h
        .state()
        .open_in_planner
        .clone()
        .expect("the button hands the workload to the app");
    assert_eq!(
        fields.get("run.engine").map(String::as_str),
        Some("llama.cpp")
    );
    assert_eq!(
        fields.get("gpu.vram_gib").map(String::as_str),
        Some("12.00")
    );
}

/// The newcomer's fine-tune OOM (issue 22), pasted as it came, with its traceback: the
/// allocator settings that cannot serve 1.96 GiB from 1.02 GiB free and 0.68 GiB reserved, and
/// the diffusers offload (this is training), are under "Cannot help here", each with its reason;
/// the fixes above them can help.
#[test]
fn fixes_that_cannot_help_are_listed_apart_with_their_reason() {
    let message = "Traceback (most recent call last):
  File \"/home/me/venv/lib/python3.11/site-packages/transformers/trainer.py\", line 2474, in _inner_training_loop
    self.accelerator.backward(loss)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total \
capacity of 11.76 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process \
has 10.72 GiB memory in use. Of the allocated memory 9.87 GiB is allocated by PyTorch, and \
0.68 GiB is reserved by PyTorch but unallocated.";
    let mut h = harness();
    h.run();
    h.get_by_role(Role::MultilineTextInput).focus();
    h.run();
    h.get_by_role(Role::MultilineTextInput).type_text(message);
    h.run();
    h.get_by_label("Read message").click();
    h.run();
    walk_to_result(&mut h);
    h.get_by_label("Cannot help here");
    let reasons: Vec<String> = h
        .query_all_by_label_contains("why not: ")
        .filter_map(|n| n.accesskit_node().value())
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("(1.70 GiB)") && r.contains("1.96 GiB requested")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("Written for image generation (diffusion)")),
        "{reasons:?}"
    );
    // What is listed as a fix is not also under "Cannot help here", and the order on screen is
    // fixes first.
    let y = |label: &str| h.get_by_label(label).rect().min.y;
    assert!(y("Fixes, for the likeliest cause first") < y("Cannot help here"));
    let expandable = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
    assert!(
        h.query_by_label(expandable).is_none(),
        "expandable_segments is offered with a Copy button"
    );
    assert!(
        y("Cannot help here")
            < h.get_by_label_contains("Let PyTorch grow memory segments")
                .rect()
                .min
                .y
    );
    h.get_by_label_contains("Recompute activations in the backward pass");
}
