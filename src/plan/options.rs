//! The options a plan lists side by side, each with its memory and speed, and the choice among
//! them: for llama.cpp, keeping the quality by splitting the model between GPU and system RAM
//! (what `--fit` would choose), the same with a q8_0 KV cache, or the GPU-only plan of the
//! strategy search (quantize, shorten the context).
//!
//! The default objective is the best quality that fits: a split that keeps the weights is
//! preferred to a quality loss while its decode speed stays at or above `run.min_tokens_per_s`
//! (5 tokens/s by default, a comfortable reading speed for chat); among options without a real
//! quality loss (unchanged, or a q8_0 KV cache) the fastest is taken. `objective_speed =
//! "speed"` takes the fastest option that fits.

use super::fit;
use super::strategy::{Risk, Strategy};
use super::{Plan, quality_note};
use crate::memory::placement::{self, Placement};
use crate::memory::{self, Breakdown};
use crate::speed::{self, Speed};
use crate::types::dtype::KvDtype;
use crate::types::options::{Engine, ObjectiveSpeed, Task};
use crate::types::workload::{Run, Workload};
use crate::units::human;
use serde::{Deserialize, Serialize};

/// One option: its changes, memory and speed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanOption {
    pub label: String,
    pub strategies: Vec<String>,
    pub changes: Vec<Strategy>,
    pub quality_note: String,
    pub risk: Risk,
    /// Fits the card (and the host's RAM, where known).
    pub fits: bool,
    /// Peak per GPU.
    pub process_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    pub speed: Speed,
    /// Whether the recommendation is this option.
    pub chosen: bool,
}

fn apply(run: &Run, changes: &[Strategy]) -> Run {
    changes
        .iter()
        .fold(run.clone(), |r, s| s.apply(&r).unwrap_or(r))
}

fn planned(w: &Workload, changes: &[Strategy]) -> Workload {
    let mut x = w.clone();
    x.run = apply(&w.run, changes);
    x
}

fn worst(changes: &[Strategy]) -> Risk {
    changes
        .iter()
        .map(Strategy::risk)
        .max()
        .unwrap_or(Risk::None)
}

/// The placement of a planned llama.cpp workload with its per-GPU peak.
fn placement_of(x: &Workload, b: &Breakdown) -> Placement {
    let mut p = placement::placement(x);
    p.per_gpu_bytes = vec![b.peak.process_bytes; x.gpu.count.max(1) as usize];
    p
}

/// Memory the host keeps for the OS and other programs before llama.cpp's share: 2 GiB.
/// [derived: a desktop session idles at 1.5-3 GiB]
pub const HOST_RESERVE_BYTES: u64 = 2 << 30;

fn host_fits(w: &Workload, p: &Placement) -> bool {
    w.gpu
        .host
        .ram_bytes
        .is_none_or(|ram| p.host_bytes + HOST_RESERVE_BYTES <= ram)
}

fn option(w: &Workload, label: String, changes: Vec<Strategy>, fits: bool) -> PlanOption {
    let x = planned(w, &changes);
    let b = memory::estimate(&x);
    let llama = x.run.engine == Engine::LlamaCpp && x.run.task != Task::Training;
    let placement = llama.then(|| placement_of(&x, &b));
    let host_ok = placement.as_ref().is_none_or(|p| host_fits(&x, p));
    let risk = worst(&changes);
    PlanOption {
        label,
        strategies: changes.iter().map(Strategy::describe).collect(),
        quality_note: quality_note(risk, changes.is_empty()),
        risk,
        fits: fits && host_ok,
        process_bytes: b.peak.process_bytes,
        placement,
        speed: speed::llm::speed(&x),
        changes,
        chosen: false,
    }
}

/// `--fit`'s split of the run after `pre`, as an option; `None` when not even the output
/// layer fits.
fn split_option(w: &Workload, pre: Vec<Strategy>, label: &str) -> Option<PlanOption> {
    let x = planned(w, &pre);
    let f = fit::fit(&x);
    // Not even the output layer fits, or no split is needed after `pre` (then the GPU-only
    // option says the same).
    if !f.meets_target || f.unchanged {
        return None;
    }
    let mut changes = pre;
    changes.push(Strategy::Split {
        gpu_layers: f.gpu_layers,
        total_layers: w.model.layers + 1,
        cpu_moe_layers: f.cpu_moe_layers,
    });
    Some(option(w, label.to_string(), changes, true))
}

fn decode(o: &PlanOption) -> f64 {
    o.speed.decode_tokens_per_s.unwrap_or(0.0)
}

/// The index of the recommended option among those that fit.
fn choose(w: &Workload, opts: &[PlanOption]) -> Option<usize> {
    let threshold = w.run.min_tokens_per_s;
    let fitting = opts.iter().enumerate().filter(|(_, o)| o.fits);
    match w.run.objective_speed {
        ObjectiveSpeed::Speed => fitting
            .max_by(|a, b| decode(a.1).total_cmp(&decode(b.1)))
            .map(|(i, _)| i),
        // Options at or above the threshold first, then those without a real quality loss
        // (none or low: a q8_0 KV cache), then the least risk, then speed.
        ObjectiveSpeed::Quality => fitting
            .min_by(|a, b| {
                let key = |o: &PlanOption| (decode(o) < threshold, o.risk.max(Risk::Low));
                // Without speed figures (a card known only by its capacity), the option that
                // leaves the least in system RAM.
                let host = |o: &PlanOption| o.placement.as_ref().map_or(0, |p| p.host_bytes);
                key(a.1)
                    .cmp(&key(b.1))
                    .then(decode(b.1).total_cmp(&decode(a.1)))
                    .then(host(a.1).cmp(&host(b.1)))
            })
            .map(|(i, _)| i),
    }
}

/// Adds speed, placement and the side-by-side options to a plan made by the strategy search,
/// and for llama.cpp makes the recommendation the best option.
pub fn add(w: &Workload, b: &Breakdown, p: &mut Plan) {
    let current = option(w, "recommended".into(), p.changes.clone(), p.fits);
    p.speed = Some(current.speed.clone());
    p.placement = current.placement.clone();
    if w.run.engine != Engine::LlamaCpp || w.run.task == Task::Training {
        return;
    }
    if p.fits && p.changes.is_empty() {
        return;
    }
    if w.run.gpu_layers.is_some() {
        p.why.push_str(
            "; -ngl is set, so llama.cpp's --fit would not change the split (it stops with \"n_gpu_layers already set by user\")",
        );
        return;
    }
    let weights = w.run.weights.to_string();
    let mut opts = Vec::new();
    opts.extend(split_option(
        w,
        Vec::new(),
        &format!("keep {weights}, split GPU/CPU (what --fit picks)"),
    ));
    if w.run.kv_cache.bytes() > KvDtype::Q8_0.bytes() {
        opts.extend(split_option(
            w,
            vec![
                Strategy::KvCache {
                    dtype: KvDtype::Q8_0,
                },
                Strategy::FlashAttention,
            ],
            &format!("keep {weights}, q8_0 KV cache, split GPU/CPU"),
        ));
    }
    if p.fits && !p.changes.is_empty() {
        let mut o = current;
        o.label = "GPU only (strategy search)".into();
        opts.push(o);
    }
    let Some(i) = choose(w, &opts) else {
        p.options = opts;
        return;
    };
    opts[i].chosen = true;
    let c = opts[i].clone();
    let full_speed = speed::llm::speed(&planned(w, &[])).decode_tokens_per_s;
    let split_chosen = c
        .changes
        .iter()
        .any(|s| matches!(s, Strategy::Split { .. }));
    if split_chosen {
        let pl = c.placement.clone().unwrap_or_default();
        let tps = decode(&c);
        p.fits = true;
        p.strategies = c.strategies.clone();
        p.changes = c.changes.clone();
        p.quality_note = c.quality_note.clone();
        p.process_bytes = c.process_bytes;
        p.speed_factor = full_speed.map_or(1.0, |f| (tps / f.max(1e-9)).min(1.0));
        p.placement = c.placement.clone();
        p.speed = Some(c.speed.clone());
        let above = if tps >= w.run.min_tokens_per_s {
            format!(
                "at or above the {} tokens/s threshold",
                w.run.min_tokens_per_s
            )
        } else {
            format!(
                "below the {} tokens/s threshold, but nothing faster fits",
                w.run.min_tokens_per_s
            )
        };
        let above = if c.speed.decode_tokens_per_s.is_none() {
            format!("speed unknown ({})", c.speed.basis)
        } else {
            format!(
                "about {tps:.1} tokens/s decode{}, {above}",
                c.speed
                    .prefill_tokens_per_s
                    .map_or(String::new(), |t| format!(", {t:.0} tokens/s prefill"))
            )
        };
        p.why = format!(
            "needs {} of {} on the GPU alone; keeping {weights}, llama.cpp's --fit would put {} of {} layers on the GPU ({} there) and {} in system RAM: {above}",
            human(b.required_bytes()),
            human(b.capacity_bytes),
            pl.gpu_layers,
            pl.total_layers,
            human(c.process_bytes),
            human(pl.host_bytes),
        );
    }
    if let Some(ctx) = fit::auto_context(w)
        && ctx < w.model.max_context.unwrap_or(u32::MAX)
    {
        p.why.push_str(&format!(
            ". With -c unset llama.cpp starts from the trained context ({}) and --fit would first shrink it to {ctx}",
            w.model.max_context.unwrap_or(0)
        ));
    }
    if opts.iter().any(|o| !o.fits && o.placement.is_some())
        && let Some(ram) = w.gpu.host.ram_bytes
    {
        {
            p.why.push_str(&format!(
                "; an option that needs more than the host's {} of RAM (less {} for the system) is marked as not fitting",
                human(ram),
                human(HOST_RESERVE_BYTES)
            ));
        }
    }
    p.options = opts;
}
