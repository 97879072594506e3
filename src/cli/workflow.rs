//! `vram-doctor plan --workflow FILE`: a ComfyUI workflow planned pass by pass on a card.

use super::CliError;
use super::out::{out, outln};
use super::plan::{PlanArgs, render, title};
use crate::import::comfy;
use crate::memory::any::AnyWorkload;
use crate::plan::workflow::files::Answers;
use crate::plan::workflow::headers::ModelsDir;
use crate::plan::workflow::{Launch, WorkflowPlan};
use crate::plan::{PlanResult, plan_any};
use crate::resolve::diffusion::bus_for;
use crate::units::human;
use serde::Serialize;
use std::path::Path;

/// The JSON result of a workflow plan: the plan of its peak pass with the `workflow` object
/// (DESIGN.md).
#[derive(Serialize)]
struct WorkflowResult<'a> {
    #[serde(flatten)]
    result: &'a PlanResult,
    workflow: &'a WorkflowPlan,
}

/// Flags a workflow states itself: refused with one line rather than silently overridden.
fn refuse_run_flags(a: &PlanArgs) -> Result<(), String> {
    let given = [
        ("--model", a.model.is_some()),
        ("--model-file", a.model_file.is_some()),
        ("--workload", a.workload.is_some()),
        ("--game", a.game.is_some()),
        ("--width", a.run.width.is_some()),
        ("--height", a.run.height.is_some()),
        ("--frames", a.run.frames.is_some()),
        ("--batch", a.run.batch.is_some()),
        ("--weights", a.run.weights.is_some()),
        ("--export", !a.export.is_empty()),
    ];
    match given.iter().find(|(_, on)| *on) {
        Some((flag, _)) => Err(format!(
            "{flag} does not go with --workflow: the workflow's own nodes say what runs (change them in ComfyUI, or plan a preset without --workflow)"
        )),
        None => Ok(()),
    }
}

pub fn run(a: &PlanArgs, path: &Path) -> Result<(), CliError> {
    refuse_run_flags(a)?;
    let mut answers = Answers::parse(&a.comfy_file)?;
    if let Some(dir) = &a.comfy_models {
        answers = answers.with_models(ModelsDir::open(dir)?);
    }
    let wf = comfy::read(path)?;
    let f = a.workload_file()?;
    let gpu = f.gpu.resolve()?;
    let bus = bus_for(&gpu);
    let launch = Launch::from_fields(&f.run)?;
    let wp = crate::plan::workflow::plan(&wf, gpu, bus, &launch, &answers)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let peak = AnyWorkload::Diffusion(wp.peak().workload.clone());
    let mut result = plan_any(&peak);
    result.warnings.extend(wp.warnings.iter().cloned());
    if a.json {
        let out = WorkflowResult {
            result: &result,
            workflow: &wp,
        };
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        )?;
    } else {
        out!("{}", describe(path, &wp))?;
        outln!()?;
        out!("{}", render(&title(&peak), &result))?;
    }
    Ok(())
}

/// The workflow part of the table: loaders with their files, passes and the peak.
fn describe(path: &Path, wp: &WorkflowPlan) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Workflow {} ({} format): {} sampling pass{}; peak at node {} ({}) in pass {}",
        crate::printable::printable(&path.display().to_string()),
        match wp.format {
            comfy::Format::Ui => "UI",
            comfy::Format::Api => "API",
        },
        wp.passes.len(),
        if wp.passes.len() == 1 { "" } else { "es" },
        wp.peak_node,
        wp.peak_stage.replace('_', " "),
        wp.peak_pass + 1
    );
    let _ = writeln!(s, "Models loaded:");
    for n in &wp.nodes {
        let what = match (&n.preset, &n.weights, n.bytes) {
            (Some(p), Some(w), Some(b)) if n.from_header => {
                format!("{p}, {w}, {} (from its header)", human(b))
            }
            (Some(p), Some(w), Some(b)) => format!("{p}, {w}, {}", human(b)),
            (None, None, Some(b)) => human(b),
            _ => "not identified".into(),
        };
        let _ = writeln!(
            s,
            "  node {:<4} {:<24} {}  → {what}",
            n.id,
            n.class_type,
            crate::printable::printable_cut(&n.file, 60)
        );
    }
    let _ = writeln!(s, "Passes:");
    for (i, p) in wp.passes.iter().enumerate() {
        let size = if p.frames > 1 {
            format!("{}×{}×{} frames", p.width, p.height, p.frames)
        } else {
            format!("{}×{}", p.width, p.height)
        };
        let _ = writeln!(
            s,
            "  {}{}. node {} {}: {} at {size}, batch {}{}{}; peak {} (node {}), needs {}",
            if i == wp.peak_pass { "*" } else { " " },
            i + 1,
            p.node,
            p.class_type,
            p.model,
            p.batch,
            if p.cfg { ", cfg (uncond batch)" } else { "" },
            match (&p.decode_node, p.vae_tile) {
                (Some(d), Some(t)) => format!(", tiled VAE decode (tile {t}) at node {d}"),
                (Some(d), None) => format!(", VAE decode at node {d}"),
                (None, _) => String::new(),
            },
            p.peak_stage.replace('_', " "),
            p.peak_node,
            human(p.need_bytes)
        );
    }
    if !wp.changes.is_empty() {
        let _ = writeln!(s, "Changes to the workflow (the plan below, node by node):");
        for c in &wp.changes {
            let _ = writeln!(s, "  - {}: {}", c.change, change_cost(c));
        }
    }
    if !wp.unmodelled_nodes.is_empty() {
        let _ = writeln!(s, "Not modelled: {}", wp.unmodelled_nodes.join(", "));
    }
    let _ = writeln!(s, "Assumes: {}", wp.assumes);
    s
}

/// "saves 5.2 GiB, 1.10× the time" for one workflow change.
fn change_cost(c: &crate::plan::workflow::changes::WorkflowChange) -> String {
    format!(
        "saves {}, {:.2}× the time",
        human(c.saves_bytes),
        c.speed_factor
    )
}
