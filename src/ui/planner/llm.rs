//! LLM inference and training: the model picker, the run's knobs, and the recommended plan
//! with the largest batch and longest sequence that fit.

use crate::catalog::Catalog;
use crate::memory::{
    Attention, Checkpointing, Engine, LoraTargets, Loss, Method, Offload, Optimizer, OptimizerStep,
    Precision, Run, Task, WorkloadFile,
};
use crate::plan::Plan;
use crate::types::arch::ModelArch;
use crate::types::dtype::{KV_NAMES, KvDtype, WEIGHT_NAMES};
use crate::types::workload::{ModelSection, RunSection};
use crate::ui::i18n::{msgs, tr, tr_template, trf};
use crate::ui::widgets::{
    count_slider, explained, flag, other_programs, pick, pick_name, pick_weights, search_pick,
    text_field,
};
use crate::units::human;
use egui::{Slider, Ui};

/// Longest sequence offered when the model does not state its maximum context.
const SEQ_MAX_FALLBACK: u32 = 131_072;

/// The model and the knobs of an LLM run; `r` is the last run that resolved.
pub fn inputs_ui(
    ui: &mut Ui,
    w: &mut WorkloadFile,
    r: &Run,
    arch: Option<&ModelArch>,
    filter: &mut String,
    cap_gib: f64,
) {
    let cat = Catalog::get();
    ui.heading(tr("Model"));
    let model_text = w
        .model
        .preset
        .as_deref()
        .and_then(|p| cat.model(p).ok())
        .map_or_else(
            || {
                if let Some(f) = w.model.file.as_ref().or(w.model.hf_config.as_ref()) {
                    f.file_name().map_or(tr("model file").into(), |n| {
                        n.to_string_lossy().into_owned()
                    })
                } else if w.model.params.is_some() {
                    tr("custom architecture").into()
                } else {
                    tr("choose a model").into()
                }
            },
            |m| m.label(),
        );
    let models = cat.models.iter().map(|m| (m.id.as_str(), m.label()));
    if let Some(id) = search_pick(
        ui,
        tr("Model"),
        model_text,
        filter,
        models,
        w.model.preset.as_deref(),
    ) {
        w.model = ModelSection {
            preset: Some(id),
            ..Default::default()
        };
    }

    ui.heading(tr("Run"));
    let f = &mut w.run;
    if let Some(v) = pick_weights(ui, tr("Weights"), WEIGHT_NAMES, &r.weights.to_string()) {
        f.weights = Some(v);
    }
    if let Some(v) = pick(ui, tr("Engine"), Engine::ALL, r.engine) {
        f.engine = Some(v);
    }
    if let Some(v) = count_slider(ui, tr("Batch size"), r.batch, 1..=512, true) {
        f.batch = Some(v);
    }
    let max_seq = arch
        .and_then(|a| a.max_context)
        .unwrap_or(SEQ_MAX_FALLBACK)
        .max(16);
    if let Some(v) = count_slider(
        ui,
        tr("Sequence length"),
        r.seq.min(max_seq),
        16..=max_seq,
        true,
    ) {
        f.seq = Some(v);
        // A prompt longer than the new sequence is cut with it (it then follows the sequence
        // again), so no hidden field can refuse the length the user chose.
        if f.prompt.is_some_and(|p| p >= v) {
            f.prompt = None;
        }
    }
    if r.task == Task::Inference
        && let Some(v) = count_slider(
            ui,
            tr("Prompt length"),
            r.prompt.min(r.seq),
            1..=r.seq.max(1),
            true,
        )
    {
        // The whole sequence is the default: written only when set apart from it.
        f.prompt = (v != i64::from(r.seq)).then_some(v);
    }
    // A training step keeps no KV cache (the forward pass sees the whole sequence at once), so
    // the knob is shown for inference only (issue 22).
    if r.task == Task::Inference {
        // `KvDtype` has no Display: show the first accepted spelling that parses back to it.
        let kv_name = KV_NAMES
            .iter()
            .find(|n| n.parse::<KvDtype>() == Ok(r.kv_cache))
            .copied()
            .unwrap_or("fp16");
        if let Some(v) = pick_name(ui, tr("KV cache"), KV_NAMES, kv_name) {
            f.kv_cache = Some(v);
        }
    }
    if let Some(v) = pick(ui, tr("Attention"), Attention::ALL, r.attention) {
        f.attention = Some(v);
    }
    if r.engine == Engine::Vllm {
        let mut u = r.gpu_memory_utilization;
        let label = tr("GPU memory utilization");
        if explained(ui.add(Slider::new(&mut u, 0.1..=1.0).text(label)), label).changed() {
            f.gpu_memory_utilization = Some(u);
        }
    }
    if r.engine == Engine::LlamaCpp
        && r.task == Task::Inference
        && let Some(a) = arch
    {
        llama_split_ui(ui, f, r, a.layers, a.moe.is_some());
    }
    if let Some(v) = other_programs(ui, r.other_processes_bytes, cap_gib) {
        f.other_processes_gib = Some(v);
    }

    if r.task == Task::Training {
        ui.heading(tr("Training"));
        if let Some(v) = pick(ui, tr("Method"), Method::ALL, r.method) {
            f.method = Some(v);
        }
        if let Some(v) = pick(ui, tr("Precision"), Precision::ALL, r.precision) {
            f.precision = Some(v);
        }
        if let Some(v) = pick(ui, tr("Optimizer"), Optimizer::ALL, r.optimizer) {
            f.optimizer = Some(v);
            if !v.has_paged_variant() {
                // bitsandbytes has no paged form of it (`Workload::resolve`).
                f.paged_optimizer = None;
            }
        }
        // Shown always, greyed out where bitsandbytes has no paged form or the states are offloaded.
        let pageable = r.optimizer.has_paged_variant() && r.offload == Offload::None;
        let paged = ui.add_enabled_ui(pageable, |ui| {
            flag(ui, tr("Paged optimizer (bitsandbytes)"), r.paged_optimizer)
        });
        if let Some(v) = paged.inner {
            f.paged_optimizer = Some(v);
        }
        if matches!(r.optimizer, Optimizer::AdamW | Optimizer::Sgd)
            && let Some(v) = pick(
                ui,
                tr("Optimizer step"),
                OptimizerStep::ALL,
                r.optimizer_step,
            )
        {
            f.optimizer_step = Some(v);
        }
        if let Some(v) = flag(ui, tr("Optimizer step in backward"), r.optimizer_in_bwd) {
            f.optimizer_in_bwd = Some(v);
        }
        if let Some(v) = pick(ui, tr("Checkpointing"), Checkpointing::ALL, r.checkpointing) {
            f.checkpointing = Some(v);
            if v != Checkpointing::Full {
                // Offloading moves checkpointed layers' inputs (`Workload::resolve`).
                f.activation_offload = None;
            }
        }
        // Shown always, greyed out unless checkpointing is full (what offloading moves): a plan
        // that recommends both names a control the user can already see.
        let offload = ui.add_enabled_ui(r.checkpointing == Checkpointing::Full, |ui| {
            flag(ui, tr("Activation offloading to CPU"), r.activation_offload)
        });
        if let Some(v) = offload.inner {
            f.activation_offload = Some(v);
        }
        if let Some(v) = pick(ui, tr("Loss"), Loss::ALL, r.loss) {
            f.loss = Some(v);
        }
        if let Some(v) = flag(ui, tr("torch.compile"), r.torch_compile) {
            f.torch_compile = Some(v);
        }
        if let Some(v) = flag(ui, tr("Sequence packing"), r.packing) {
            f.packing = Some(v);
        }
        if let Some(v) = count_slider(
            ui,
            tr("Mean tokens per sample"),
            r.mean_sample_tokens(),
            1..=r.seq.max(1),
            true,
        ) {
            f.avg_seq = Some(v);
        }
        if r.method != Method::Full {
            if let Some(v) = count_slider(ui, tr("LoRA rank"), r.lora_rank, 1..=512, true) {
                f.lora_rank = Some(v);
            }
            // The keywords as a choice; any PEFT target_modules list or pattern as text.
            let current = r.lora_targets.to_string();
            let mut names: Vec<String> = LoraTargets::KEYWORDS
                .iter()
                .map(ToString::to_string)
                .collect();
            if !names.contains(&current) {
                names.push(current.clone());
            }
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let picked =
                pick_name(ui, tr("LoRA targets"), &names, &current).and_then(|t| t.parse().ok());
            let typed = text_field(
                ui,
                tr("LoRA target modules"),
                &current,
                "q_proj,v_proj | .*\\.(q|v)_proj",
            );
            if let Some(v) = picked.or(typed) {
                f.lora_targets = Some(v);
            }
        }
        if let Some(v) = count_slider(ui, tr("Gradient accumulation"), r.grad_accum, 1..=256, true)
        {
            f.grad_accum = Some(v);
        }
        if let Some(v) = count_slider(ui, tr("ZeRO stage"), r.zero_stage, 0..=3, false) {
            f.zero_stage = Some(v);
        }
        if let Some(v) = pick(ui, tr("Offload"), Offload::ALL, r.offload) {
            f.offload = Some(v);
            if v != Offload::None {
                // ZeRO-Offload keeps the states in host RAM itself (`Workload::resolve`).
                f.paged_optimizer = None;
            }
        }
    }
}

/// llama.cpp's split of the model between GPU and system RAM (`-ngl`, `--n-cpu-moe`), the
/// knobs of a plan that keeps the weights by offloading layers. `layers` is the model's count;
/// the output head is the last "layer" of `-ngl` (`plan::fit`), so all of them is `layers + 1`.
fn llama_split_ui(ui: &mut Ui, f: &mut RunSection, r: &Run, layers: u32, moe: bool) {
    let total = layers + 1;
    let on_gpu = r.gpu_layers.unwrap_or(total).min(total);
    if let Some(v) = count_slider(ui, tr("GPU layers (-ngl)"), on_gpu, 0..=total, false) {
        // Every layer is llama.cpp's own default: left unset, so the planner may choose.
        f.gpu_layers = (v != i64::from(total)).then_some(v);
    }
    if moe
        && let Some(v) = count_slider(
            ui,
            tr("Layers with experts in system RAM (--n-cpu-moe)"),
            r.cpu_moe_layers.min(layers),
            0..=layers,
            false,
        )
    {
        f.cpu_moe_layers = (v != 0).then_some(v);
    }
}

/// The plan's changes in the interface language, figures kept (`Strategy::template`).
fn changes_text(p: &Plan) -> String {
    let lines: Vec<String> = p
        .changes
        .iter()
        .map(|s| {
            let (template, values) = s.template();
            tr_template(template, &values)
        })
        .collect();
    lines.join(" + ")
}

/// The recommended plan, the largest batch and longest sequence that fit; true when "Apply
/// plan" was clicked.
pub fn plan_ui(ui: &mut Ui, p: &Plan) -> bool {
    let mut apply = false;
    ui.add_space(6.0);
    if p.changes.is_empty() {
        ui.label(msgs(&p.why));
    } else {
        ui.strong(trf(
            "Recommended plan: {plan} ({speed}× speed; {quality})",
            &[
                ("plan", &changes_text(p)),
                ("speed", &format!("{:.2}", p.speed_factor)),
                ("quality", &tr(&p.quality_note)),
            ],
        ));
        ui.label(trf(
            "Peak after the plan: {peak}",
            &[("peak", &human(p.process_bytes))],
        ));
        apply = ui.button(tr("Apply plan")).clicked();
    }
    let fit = |v: Option<u32>| v.map_or(tr("none fits").to_string(), |n| n.to_string());
    ui.label(trf(
        "Largest batch that fits: {batch} · longest sequence that fits: {seq}",
        &[("batch", &fit(p.max_batch)), ("seq", &fit(p.max_seq))],
    ));
    apply
}
