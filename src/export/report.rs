//! The plan as a report: Markdown for people (inputs, breakdown table, verdict, strategies and
//! every export that applies) and JSON for programs (the same, as data).

use super::{ExportKind, Os, kinds_for_os, render_for};
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

/// LLM run fields that only training reads, and those only inference reads.
const TRAINING_ONLY: &[&str] = &[
    "method",
    "precision",
    "optimizer",
    "checkpointing",
    "lora_rank",
    "lora_targets",
    "grad_accum",
    "zero_stage",
    "offload",
];
const INFERENCE_ONLY: &[&str] = &["kv_cache", "gpu_memory_utilization", "ubatch", "prompt"];

/// The run's settings that matter to its task, as (name, value) pairs.
fn settings(w: &AnyWorkload) -> Vec<(String, String)> {
    let v = serde_json::to_value(w).unwrap_or(Value::Null);
    let Some(Value::Object(run)) = v.get("run") else {
        return Vec::new();
    };
    let hidden: &[&str] = match w {
        AnyWorkload::Llm(l) if l.run.task == crate::memory::Task::Training => INFERENCE_ONLY,
        AnyWorkload::Llm(_) => TRAINING_ONLY,
        _ => &[],
    };
    run.iter()
        .filter(|(k, _)| !hidden.contains(&k.as_str()))
        .map(|(k, v)| {
            let shown = match v {
                Value::String(s) => s.clone(),
                Value::Array(a) => a
                    .iter()
                    .map(|x| x.as_str().map_or(x.to_string(), str::to_string))
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            (k.clone(), shown)
        })
        .collect()
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
    for (i, (k, v)) in settings(given).iter().enumerate() {
        let p = after.get(i).map_or("", |(_, p)| p.as_str());
        let mark = if p != v { " ←" } else { "" };
        let _ = writeln!(s, "| {k} | {v} | {p}{mark} |");
    }
    let _ = writeln!(s, "\n## Memory per GPU\n");
    let _ = writeln!(s, "| Part | Given | Planned |\n|---|---:|---:|");
    // The plan's own breakdown next to the given one; parts only one side has show as "—".
    let after = estimate_any(planned);
    let mut rows: Vec<(&str, &str)> = Vec::new();
    for c in r.components.iter().chain(&after.components) {
        if !rows.iter().any(|(id, _)| *id == c.id) {
            rows.push((&c.id, &c.label));
        }
    }
    let cell = |cs: &[crate::memory::Component], id: &str| {
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
    for (label, given, planned) in peaks {
        let _ = writeln!(s, "| **{label} | {} | {} |", human(given), human(planned));
    }
    let _ = writeln!(s, "\n## Verdict\n");
    let _ = writeln!(s, "{}", {
        let mut v = format!("As given: {}.", r.verdict.describe());
        if let Some((template, values)) = r.verdict.use_template() {
            v += &format!(" {}.", crate::plan::verdict::fill(template, &values));
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
        let _ = writeln!(
            s,
            "\nSpeed {:.2}× of the run as given; quality: {}; {} per GPU with the plan.",
            p.speed_factor,
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
    let v = json!({
        "subject": subject(given),
        "run": run(given),
        "planned_run": run(planned),
        "result": r,
        "exports": ex,
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}
