//! The plan as a report: Markdown for people (inputs, breakdown table, verdict, strategies and
//! every export that applies) and JSON for programs (the same, as data).

use super::{ExportKind, Os, kinds_for_os, render_for};
use crate::memory::ComponentId;
use crate::memory::any::{AnyWorkload, estimate_any};
use crate::plan::PlanResult;
use crate::units::human;
use serde_json::{Value, json};
use std::fmt::Write;

/// What is planned: model (or game) and card.
fn subject(w: &AnyWorkload) -> String {
    let (what, gpu) = match w {
        AnyWorkload::Llm(l) => (l.model_name.clone(), &l.gpu),
        AnyWorkload::Diffusion(d) => (d.model.name.clone(), &d.gpu),
        AnyWorkload::Game(g) => (
            g.game
                .as_ref()
                .map_or("a game".to_string(), |x| x.name.clone()),
            &g.gpu,
        ),
    };
    format!(
        "{what} on {} × {} ({})",
        gpu.count,
        gpu.name,
        human(gpu.vram_bytes)
    )
}

/// One line of the report's inputs: the run's field (as `plan --json` names it), its name in
/// words, its value with its unit, and whether the run's task and engine read it at all.
struct Setting {
    key: &'static str,
    label: &'static str,
    value: String,
    applies: bool,
}

fn setting(key: &'static str, label: &'static str, value: impl ToString, applies: bool) -> Setting {
    Setting {
        key,
        label,
        value: value.to_string(),
        applies,
    }
}

/// The memory other programs hold, a field every kind of run has.
fn others(bytes: u64) -> Setting {
    setting(
        "other_processes_bytes",
        "Memory other programs hold",
        human(bytes),
        true,
    )
}

fn on_off(v: bool) -> &'static str {
    if v { "on" } else { "off" }
}

/// A choice's spelling in the workload file, for the types that have no `Display`.
fn spelled(v: impl serde::Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Every field of the run, in words a person reads (issue 22: the report printed
/// `other_processes_bytes` and `{"height":1440,"width":2560}`); `applies` says which the task and
/// engine read. Tests check that every field `plan --json` shows has a line here.
fn settings(w: &AnyWorkload) -> Vec<Setting> {
    use crate::memory::{Engine, Method, Task};
    match w {
        AnyWorkload::Llm(l) => {
            let r = &l.run;
            let (train, infer) = (r.task == Task::Training, r.task == Task::Inference);
            let llama = r.engine == Engine::LlamaCpp;
            let lora = train && r.method != Method::Full;
            vec![
                setting("task", "Task", r.task, true),
                setting("objective", "Objective", r.objective, train),
                setting("weights", "Weights", r.weights, true),
                setting("engine", "Engine", r.engine, true),
                setting("batch", "Batch size", r.batch, true),
                setting("seq", "Sequence length (tokens)", r.seq, true),
                setting("prompt", "Prompt length (tokens)", r.prompt, infer),
                setting("kv_cache", "KV cache", spelled(r.kv_cache), infer),
                setting("attention", "Attention", r.attention, true),
                setting("method", "Method", r.method, train),
                setting("precision", "Precision", r.precision, train),
                setting("optimizer", "Optimizer", r.optimizer, train),
                setting("optimizer_step", "Optimizer step", r.optimizer_step, train),
                setting(
                    "optimizer_in_bwd",
                    "Optimizer step in backward",
                    r.optimizer_in_bwd,
                    train,
                ),
                setting(
                    "activation_offload",
                    "Activation offloading to CPU",
                    r.activation_offload,
                    train,
                ),
                setting(
                    "paged_optimizer",
                    "Paged optimizer (bitsandbytes)",
                    r.paged_optimizer,
                    train,
                ),
                setting("packing", "Sequence packing", r.packing, train),
                setting(
                    "avg_seq",
                    "Mean tokens per sample",
                    r.mean_sample_tokens(),
                    train,
                ),
                setting("torch_compile", "torch.compile", r.torch_compile, train),
                setting(
                    "checkpointing",
                    "Activation checkpointing",
                    r.checkpointing,
                    train,
                ),
                setting("loss", "Loss", r.loss, train),
                setting("lora_rank", "LoRA rank", r.lora_rank, lora),
                setting("lora_targets", "LoRA targets", &r.lora_targets, lora),
                setting("grad_accum", "Gradient accumulation", r.grad_accum, train),
                setting("zero_stage", "ZeRO stage", r.zero_stage, train),
                setting("offload", "Offload", r.offload, train),
                setting(
                    "gpu_memory_utilization",
                    "GPU memory utilization (vLLM)",
                    format!("{:.0} %", r.gpu_memory_utilization * 100.0),
                    infer && r.engine == Engine::Vllm,
                ),
                setting(
                    "ubatch",
                    "Physical batch (llama.cpp -ub)",
                    r.ubatch,
                    infer && llama,
                ),
                setting(
                    "gpu_layers",
                    "GPU layers (llama.cpp -ngl)",
                    r.gpu_layers
                        .map_or("all (or the planner's choice)".to_string(), |n| {
                            n.to_string()
                        }),
                    llama,
                ),
                setting(
                    "cpu_moe_layers",
                    "Layers with experts in system RAM (--n-cpu-moe)",
                    r.cpu_moe_layers,
                    llama,
                ),
                setting(
                    "kv_offload",
                    "KV cache on the GPU (llama.cpp)",
                    on_off(r.kv_offload),
                    llama,
                ),
                setting(
                    "fit_target_bytes",
                    "Memory llama.cpp's --fit leaves free",
                    human(r.fit_target_bytes),
                    llama,
                ),
                setting("objective_speed", "Plan for", r.objective_speed, true),
                setting(
                    "min_tokens_per_s",
                    "Slowest acceptable generation",
                    format!("{} tokens/s", r.min_tokens_per_s),
                    infer,
                ),
                others(r.other_processes_bytes),
            ]
        }
        AnyWorkload::Diffusion(d) => {
            use crate::memory::diffusion::ModelKind;
            let r = &d.run;
            let comfy = r.engine == Engine::ComfyUi;
            let encoders: Vec<String> = r
                .text_encoder_weights
                .iter()
                .map(|f| f.to_string())
                .collect();
            vec![
                setting("width", "Width (pixels)", r.width, true),
                setting("height", "Height (pixels)", r.height, true),
                setting("batch", "Batch size", r.batch, true),
                setting("steps", "Sampling steps", r.steps, true),
                setting(
                    "frames",
                    "Frames",
                    r.frames,
                    d.model.kind == ModelKind::Video,
                ),
                setting("weights", "Weights", r.weights, true),
                setting(
                    "text_encoder_weights",
                    "Text encoder weights",
                    encoders.join(", "),
                    !encoders.is_empty(),
                ),
                setting("engine", "Engine", r.engine, true),
                setting("attention", "Attention", r.attention, true),
                setting("cfg", "Classifier-free guidance", on_off(r.cfg), true),
                setting("vae_tiling", "Tiled VAE decode", on_off(r.vae_tiling), true),
                setting(
                    "vae_tile",
                    "VAE decode tile",
                    format!("{0}x{0} pixels", r.vae_tile),
                    r.vae_tiling,
                ),
                setting("vae_slicing", "VAE slicing", on_off(r.vae_slicing), !comfy),
                setting(
                    "vae_decode",
                    "VAE decode on the GPU",
                    on_off(r.vae_decode),
                    true,
                ),
                setting("tiny_vae", "Tiny VAE (TAESD)", on_off(r.tiny_vae), true),
                setting("vram_mode", "ComfyUI VRAM mode", r.vram_mode, comfy),
                setting(
                    "cpu_offload",
                    "CPU offload (diffusers)",
                    r.cpu_offload,
                    !comfy,
                ),
                setting(
                    "text_encoder_on_cpu",
                    "Text encoders on the CPU",
                    on_off(r.text_encoder_on_cpu),
                    !d.text_encoders.is_empty(),
                ),
                setting("loras", "LoRAs", r.loras, true),
                setting("lora_rank", "LoRA rank", r.lora_rank, r.loras > 0),
                setting(
                    "controlnets",
                    "ControlNets",
                    r.controlnets,
                    d.model.controlnet_params > 0.0,
                ),
                setting(
                    "ip_adapter",
                    "IP-Adapter",
                    on_off(r.ip_adapter),
                    d.model.ip_adapter_params > 0.0,
                ),
                setting(
                    "reserve_vram_bytes",
                    "Reserved VRAM (--reserve-vram)",
                    human(d.comfy_memory().map_or(0, |m| m.reserve_bytes)),
                    comfy,
                ),
                setting(
                    "dynamic_vram",
                    "ComfyUI memory mode",
                    d.comfy_memory().map_or_else(String::new, |m| m.why),
                    comfy,
                ),
                setting(
                    "vram_headroom_bytes",
                    "Dynamic VRAM headroom (--vram-headroom)",
                    human(r.vram_headroom_bytes),
                    comfy,
                ),
                setting(
                    "torch",
                    "PyTorch under ComfyUI",
                    r.torch.map_or_else(
                        || "not given (2.8 or later assumed)".to_string(),
                        |(a, b)| format!("{a}.{b}"),
                    ),
                    comfy,
                ),
                setting("os", "Operating system", r.os, comfy),
                others(r.other_processes_bytes),
            ]
        }
        AnyWorkload::Game(g) => {
            let r = &g.run;
            vec![
                setting(
                    "resolution",
                    "Resolution",
                    format!("{}×{}", r.resolution.width, r.resolution.height),
                    true,
                ),
                setting(
                    "texture_quality",
                    "Texture quality",
                    r.texture_quality,
                    true,
                ),
                setting("ray_tracing", "Ray tracing", on_off(r.ray_tracing), true),
                setting(
                    "frame_generation",
                    "Frame generation",
                    on_off(r.frame_generation),
                    true,
                ),
                setting("upscaler", "Upscaler", r.upscaler, true),
                others(r.other_processes_bytes),
            ]
        }
    }
}

/// The exports a report embeds: every applicable one except the reports themselves.
fn exports(w: &AnyWorkload, r: &PlanResult, os: Os) -> Vec<(ExportKind, String)> {
    kinds_for_os(w, r, os)
        .into_iter()
        .filter(|k| !matches!(k, ExportKind::Report | ExportKind::ReportJson))
        .filter_map(|k| render_for(k, w, r, os).ok().map(|t| (k, t)))
        .collect()
}

/// `given` is the workload as entered, `planned` with the plan applied.
pub fn markdown(given: &AnyWorkload, planned: &AnyWorkload, r: &PlanResult, os: Os) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# VRAM Doctor plan: {}\n", subject(given));
    let _ = writeln!(s, "## Inputs\n");
    let _ = writeln!(s, "| Setting | Given | Planned |\n|---|---|---|");
    let after = settings(planned);
    for (g, p) in settings(given).iter().zip(&after) {
        if !(g.applies || p.applies) {
            continue;
        }
        let mark = if p.value != g.value { " ←" } else { "" };
        let _ = writeln!(s, "| {} | {} | {}{mark} |", g.label, g.value, p.value);
    }
    let _ = writeln!(s, "\n## Memory per GPU\n");
    let _ = writeln!(s, "| Part | Given | Planned |\n|---|---:|---:|");
    // The plan's own breakdown next to the given one; parts only one side has show as "—".
    let after = estimate_any(planned);
    let mut rows: Vec<(ComponentId, &str)> = Vec::new();
    for c in r.components.iter().chain(&after.components) {
        if !rows.iter().any(|(id, _)| *id == c.id) {
            rows.push((c.id, &c.label));
        }
    }
    let cell = |cs: &[crate::memory::Component], id: ComponentId| {
        cs.iter()
            .find(|c| c.id == id)
            .map_or("—".to_string(), |c| human(c.bytes))
    };
    for (id, label) in rows {
        let _ = writeln!(
            s,
            "| {label} | {} | {} |",
            cell(&r.components, id),
            cell(&after.components, id)
        );
    }
    let peaks = [
        (
            "Peak tensors** (torch max_memory_allocated)",
            r.peak.tensors_bytes,
            after.peak.tensors_bytes,
        ),
        (
            "Peak reserved** (torch max_memory_reserved)",
            r.peak.reserved_bytes,
            after.peak.reserved_bytes,
        ),
        (
            "Peak process** (nvidia-smi)",
            r.peak.process_bytes,
            after.peak.process_bytes,
        ),
        ("GPU capacity**", r.capacity_bytes, after.capacity_bytes),
    ];
    // A game has no PyTorch allocator: its peak is the card total alone.
    let game = matches!(given, AnyWorkload::Game(_));
    for (label, given, planned) in peaks {
        if game && label.starts_with("Peak ") && !label.starts_with("Peak process") {
            continue;
        }
        let label = if game && label.starts_with("Peak process") {
            "Card total**"
        } else {
            label
        };
        let _ = writeln!(s, "| **{label} | {} | {} |", human(given), human(planned));
    }
    let _ = writeln!(s, "\n## Verdict\n");
    let _ = writeln!(s, "{}", {
        let mut v = format!("As given: {}.", r.verdict.message());
        if let Some(m) = r.verdict.use_message() {
            v += &format!(" {m}.");
        }
        v
    });
    for warn in &r.warnings {
        let _ = writeln!(s, "\n> note: {warn}");
    }
    let p = &r.plan;
    let _ = writeln!(s, "\n## Plan\n");
    if p.strategies.is_empty() {
        let _ = writeln!(s, "No change needed or none found.");
    } else {
        for st in &p.strategies {
            let _ = writeln!(s, "- {st}");
        }
        // A game's settings change what it shows, not how fast its work runs.
        let speed = if game {
            "Quality".to_string()
        } else {
            format!("Speed {:.2}× of the run as given; quality", p.speed_factor)
        };
        let _ = writeln!(
            s,
            "\n{speed}: {}; {} per GPU with the plan.",
            p.quality_note,
            human(p.process_bytes)
        );
    }
    let _ = writeln!(s, "\nWhy: {}", p.why);
    let ex = exports(given, r, os);
    if !ex.is_empty() {
        let _ = writeln!(s, "\n## Exports");
        for (k, text) in ex {
            let _ = writeln!(
                s,
                "\n### {k} (`{}`)\n\n```{}\n{}```",
                k.file_name(),
                k.fence(),
                text
            );
        }
    }
    s
}

pub fn json(given: &AnyWorkload, planned: &AnyWorkload, r: &PlanResult, os: Os) -> String {
    let ex: Vec<Value> = exports(given, r, os)
        .into_iter()
        .map(|(k, text)| json!({ "kind": k, "file_name": k.file_name(), "text": text }))
        .collect();
    // The run as given and as planned; the model and card are named in `subject` (the full
    // workload, with its model tables, is what `--workload` files and `plan --json` are for).
    let run = |w: &AnyWorkload| {
        serde_json::to_value(w)
            .ok()
            .and_then(|v| v.get("run").cloned())
            .unwrap_or(Value::Null)
    };
    // The same inputs in words as the Markdown table, for a program that shows them to people.
    let rows: Vec<Value> = settings(given)
        .into_iter()
        .zip(settings(planned))
        .filter(|(g, p)| g.applies || p.applies)
        .map(|(g, p)| json!({ "field": g.key, "label": g.label, "given": g.value, "planned": p.value }))
        .collect();
    let v = json!({
        "subject": subject(given),
        "run": run(given),
        "planned_run": run(planned),
        "settings": rows,
        "result": r,
        "exports": ex,
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::resolve_any;
    use crate::types::workload::WorkloadFile;

    fn workload(toml: &str) -> AnyWorkload {
        let f = WorkloadFile::parse(toml, "test.toml").unwrap();
        resolve_any(&f, std::path::Path::new("."), None).unwrap()
    }

    /// Every field of every kind's run has a line in words: a field added to a run without one
    /// fails here instead of reaching the report as `some_field_bytes | 1073741824`.
    #[test]
    fn every_run_field_has_words_in_the_report() {
        for toml in [
            "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"llama-3.1-8b\"\n",
            "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\n",
            "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"game\"\n",
        ] {
            let w = workload(toml);
            let json = serde_json::to_value(&w).unwrap();
            let fields: Vec<String> = json["run"].as_object().unwrap().keys().cloned().collect();
            let rows = settings(&w);
            let keys: Vec<&str> = rows.iter().map(|r| r.key).collect();
            let missing: Vec<&String> = fields
                .iter()
                .filter(|f| !keys.contains(&f.as_str()))
                .collect();
            assert!(missing.is_empty(), "{toml}: no words for {missing:?}");
            for r in &rows {
                assert!(!r.label.contains('_'), "{}: {}", r.key, r.label);
                assert!(
                    !r.value.contains('{') && !r.value.contains("null"),
                    "{}: {}",
                    r.key,
                    r.value
                );
            }
        }
    }

    #[test]
    fn a_game_report_speaks_in_words() {
        let w = workload(
            "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"game\"\nresolution = \"2560x1440\"\nray_tracing = true\n",
        );
        let r = crate::plan::plan_any(&w);
        let md = markdown(&w, &crate::export::planned(&w, &r), &r, Os::Linux);
        for raw in ["{\"", "_bytes", "torch", "Speed 1.00"] {
            assert!(!md.contains(raw), "the report shows {raw:?}:\n{md}");
        }
        assert!(md.contains("| Resolution | 2560×1440 |"), "{md}");
        assert!(md.contains("| Ray tracing | on | off ← |"), "{md}");
    }
}
