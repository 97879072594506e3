//! The options a plan lists side by side, each with its memory and speed, and the choice among
//! them. For a llama.cpp run that does not fit, the planner keeps the weights and tries every
//! combination of a quantized KV cache (q8_0, q4_0) and a shorter context (halvings down to
//! `--fit`'s 4096-token floor), each with the whole model on the GPU when it then fits or else
//! with the split llama.cpp's `--fit` would choose; when none of those reaches the speed
//! threshold, each lighter weight format split the same way; and the strategy search's GPU-only
//! plan. The list keeps the trade-off: an option another beats on both quality and speed is
//! dropped.
//!
//! The default objective is the best quality that fits: options at or above
//! `run.min_tokens_per_s` (5 tokens/s by default, a comfortable reading speed for chat) first,
//! then the least quality given up (`search::points`: a q8_0 KV cache counts as none, q4_0 KV 5
//! points, 5 per halving of the context, a weight format its risk), then the fastest.
//! `objective_speed = "speed"` takes the fastest option that fits.

use super::fit;
use super::strategy::{Risk, Strategy};
use super::{Plan, quality_note};
use crate::engines::llama_cpp::memory::{self as placement, Placement};
use crate::memory::{self, Breakdown};
use crate::speed::{self, Speed};
use crate::types::dtype::KvDtype;
use crate::types::message::{Arg, Message, Sentences};
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

/// What llama.cpp does with the run after `pre`: every layer on the GPU when `--fit` would
/// change nothing (step 1 of `common/fit.cpp` `common_params_fit_impl`), else `--fit`'s split;
/// `None` when not even the output layer fits, or when `pre` is empty and nothing changes (the
/// run as given is then the plan).
fn fitted_option(w: &Workload, pre: Vec<Strategy>) -> Option<PlanOption> {
    let x = planned(w, &pre);
    let f = fit::fit(&x);
    if !f.meets_target || (f.unchanged && pre.is_empty()) {
        return None;
    }
    let mut changes = pre;
    if !f.unchanged {
        changes.push(Strategy::Split {
            gpu_layers: f.gpu_layers,
            total_layers: w.model.layers + 1,
            cpu_moe_layers: f.cpu_moe_layers,
        });
    }
    Some(option(w, label(w, &changes), changes, true))
}

/// `keep q4_k_m, q8_0 KV cache, context 8192, split GPU/CPU (--fit)`.
fn label(w: &Workload, changes: &[Strategy]) -> String {
    let mut weights = format!("keep {}", w.run.weights);
    let mut parts = Vec::new();
    let mut split = false;
    for s in changes {
        match s {
            Strategy::Weights { format } => weights = format!("{format} weights"),
            Strategy::KvCache { dtype } => {
                parts.push(format!("{} KV cache", format!("{dtype:?}").to_lowercase()))
            }
            Strategy::Context { seq } => parts.push(format!("context {seq}")),
            Strategy::Split { .. } => split = true,
            // Goes with a quantized KV cache: llama.cpp needs -fa for a quantized V cache.
            Strategy::FlashAttention => {}
            other => parts.push(other.describe()),
        }
    }
    parts.insert(0, weights);
    parts.push(if split {
        "split GPU/CPU (--fit)".into()
    } else {
        "all on the GPU".into()
    });
    parts.join(", ")
}

/// The GPU-side changes tried before `--fit` splits what is left, from the mildest: the KV
/// cache llama.cpp can quantize (`-ctk`/`-ctv` q8_0 and q4_0, with `-fa`), and the context
/// halved down to `--fit`'s own floor (`fit::FIT_MIN_CTX`, `common/common.h`
/// `fit_params_min_ctx`), each alone and combined. None of them touches the weights.
fn keep_weights_changes(w: &Workload) -> Vec<Vec<Strategy>> {
    let r = &w.run;
    let mut kv: Vec<Vec<Strategy>> = vec![Vec::new()];
    for dtype in [KvDtype::Q8_0, KvDtype::Q4_0] {
        if dtype.bytes() < r.kv_cache.bytes() {
            kv.push(vec![Strategy::KvCache { dtype }, Strategy::FlashAttention]);
        }
    }
    let mut ctx: Vec<Option<Strategy>> = vec![None];
    let mut seq = r.seq / 2;
    while seq >= fit::FIT_MIN_CTX {
        ctx.push(Some(Strategy::Context { seq }));
        seq /= 2;
    }
    let mut out = Vec::new();
    for c in &ctx {
        for k in &kv {
            let mut pre = k.clone();
            pre.extend(c.clone());
            out.push(pre);
        }
    }
    out
}

/// The quality an option gives up, in the strategy search's points (`search::points`: risk
/// points, 5 per halving of the context); a q8_0 KV cache alone counts as none (its risk is
/// Low, no measurable loss in llama.cpp's perplexity tables, PR 7412).
fn quality_cost(w: &Workload, o: &PlanOption) -> f64 {
    let c: f64 = o.changes.iter().map(|s| super::search::points(s, w)).sum();
    if c <= super::search::risk_points(Risk::Low) {
        0.0
    } else {
        c
    }
}

fn decode(o: &PlanOption) -> f64 {
    o.speed.decode_tokens_per_s.unwrap_or(0.0)
}

/// The order of the quality objective: options at or above the speed threshold first, then the
/// least quality given up, then the fastest, then the least in system RAM (cards known only by
/// their capacity have no speed).
fn quality_order(w: &Workload, a: &PlanOption, b: &PlanOption) -> std::cmp::Ordering {
    let threshold = w.run.min_tokens_per_s;
    let host = |o: &PlanOption| o.placement.as_ref().map_or(0, |p| p.host_bytes);
    (decode(a) < threshold)
        .cmp(&(decode(b) < threshold))
        .then(quality_cost(w, a).total_cmp(&quality_cost(w, b)))
        .then(decode(b).total_cmp(&decode(a)))
        .then(host(a).cmp(&host(b)))
}

/// The index of the recommended option among those that fit.
fn choose(w: &Workload, opts: &[PlanOption]) -> Option<usize> {
    let fitting = opts.iter().enumerate().filter(|(_, o)| o.fits);
    match w.run.objective_speed {
        ObjectiveSpeed::Speed => fitting
            .max_by(|a, b| decode(a.1).total_cmp(&decode(b.1)))
            .map(|(i, _)| i),
        ObjectiveSpeed::Quality => fitting
            .min_by(|a, b| quality_order(w, a.1, b.1))
            .map(|(i, _)| i),
    }
}

/// Drops the options another fitting option beats on quality, speed and system RAM at once
/// (all equal: the first is kept), so the list is the trade-off itself. `keep` (what `--fit`
/// does with the run as it is) stays as the reference.
fn frontier(w: &Workload, opts: Vec<PlanOption>, keep: Option<usize>) -> Vec<PlanOption> {
    let host = |o: &PlanOption| o.placement.as_ref().map_or(0, |p| p.host_bytes);
    let key = |o: &PlanOption| (quality_cost(w, o), -decode(o), host(o) as f64);
    let dominated = |i: usize| {
        let a = key(&opts[i]);
        opts.iter().enumerate().any(|(j, p)| {
            let b = key(p);
            let no_worse = b.0 <= a.0 && b.1 <= a.1 && b.2 <= a.2;
            j != i && p.fits && no_worse && (b != a || j < i)
        })
    };
    let drop: Vec<bool> = (0..opts.len())
        .map(|i| Some(i) != keep && dominated(i))
        .collect();
    opts.into_iter()
        .zip(drop)
        .filter_map(|(o, d)| (!d).then_some(o))
        .collect()
}

/// Every option the planner compares for a llama.cpp run that does not fit: the weights kept
/// with each KV cache and context of [`keep_weights_changes`] on the GPU or split by `--fit`;
/// when none of those reaches the speed threshold, each lighter weight format split the same
/// way; and the strategy search's GPU-only plan. Returns the options and the index of the
/// plain `--fit` split of the run, if any.
fn candidates(w: &Workload, p: &Plan, current: PlanOption) -> (Vec<PlanOption>, Option<usize>) {
    let mut opts: Vec<PlanOption> = keep_weights_changes(w)
        .into_iter()
        .filter_map(|pre| fitted_option(w, pre))
        .collect();
    let plain = opts
        .iter()
        .position(|o| o.changes.len() == 1 && matches!(o.changes[0], Strategy::Split { .. }));
    let fast_enough = opts
        .iter()
        .any(|o| o.fits && decode(o) >= w.run.min_tokens_per_s);
    if !fast_enough || w.run.objective_speed == ObjectiveSpeed::Speed {
        let formats = super::strategy::candidate_groups(&w.run, w.gpu.count, w.gpu.fp8)
            .into_iter()
            .find(|g| matches!(g.first(), Some(Strategy::Weights { .. })))
            .unwrap_or_default();
        opts.extend(
            formats
                .into_iter()
                .filter_map(|s| fitted_option(w, vec![s])),
        );
    }
    if p.fits && !p.changes.is_empty() {
        let mut o = current;
        o.label = format!("{} (strategy search)", label(w, &o.changes));
        opts.push(o);
    }
    (opts, plain)
}

/// What the inference run as given costs where the driver lets it spill into shared system
/// memory instead of failing (Windows, `speed::llm::spilled_decode_tokens_per_s`), when it is
/// over the card: one sentence of the plan's why. llama.cpp's `--fit` keeps a run off shared
/// memory by splitting, unless `-ngl` is set.
fn spill_note(w: &Workload, b: &Breakdown, p: &mut Plan) {
    let need = b.required_bytes();
    let over = need.saturating_sub(b.capacity_bytes);
    if w.run.task != Task::Inference
        || over == 0
        || (w.run.engine == Engine::LlamaCpp && w.run.gpu_layers.is_none())
    {
        return;
    }
    let share = over as f64 / need as f64;
    let full = speed::llm::speed(w).decode_tokens_per_s;
    if let (Some(full), Some(spilled)) = (full, speed::llm::spilled_decode_tokens_per_s(w, share)) {
        p.why.push(
            Message::new("plan.why.spill")
                .bytes("over", over)
                .fixed("pcie", w.gpu.speed.pcie_gbs, 0)
                .fixed("vram", w.gpu.speed.bandwidth_gbs, 0)
                .fixed("spill", spilled, 1)
                .fixed("full", full, 1),
        );
    }
}

/// Adds speed, placement and the side-by-side options to a plan made by the strategy search,
/// and for llama.cpp makes the recommendation the best option.
pub fn add(w: &Workload, b: &Breakdown, p: &mut Plan) {
    let current = option(w, "recommended".into(), p.changes.clone(), p.fits);
    p.speed = Some(current.speed.clone());
    p.placement = current.placement.clone();
    spill_note(w, b, p);
    if w.run.engine != Engine::LlamaCpp || w.run.task == Task::Training {
        return;
    }
    if p.fits && p.changes.is_empty() {
        return;
    }
    if w.run.gpu_layers.is_some() {
        p.why.push(Message::new("plan.why.ngl_set"));
        return;
    }
    let (opts, plain) = candidates(w, p, current);
    let mut opts = frontier(w, opts, plain);
    let Some(i) = choose(w, &opts) else {
        p.options = opts;
        return;
    };
    opts[i].chosen = true;
    let c = opts[i].clone();
    if c.changes != p.changes {
        let tps = decode(&c);
        let full_speed = speed::llm::speed(&planned(w, &[])).decode_tokens_per_s;
        p.fits = true;
        p.strategies = c.strategies.clone();
        p.changes = c.changes.clone();
        p.quality_note = c.quality_note.clone();
        p.process_bytes = c.process_bytes;
        p.speed_factor = full_speed.map_or(1.0, |f| (tps / f.max(1e-9)).min(1.0));
        p.placement = c.placement.clone();
        p.speed = Some(c.speed.clone());
        let threshold = w.run.min_tokens_per_s;
        let above = if c.speed.decode_tokens_per_s.is_none() {
            format!("speed unknown ({})", c.speed.basis)
        } else {
            format!(
                "about {tps:.1} tokens/s decode{}, {}",
                c.speed
                    .prefill_tokens_per_s
                    .map_or(String::new(), |t| format!(", {t:.0} tokens/s prefill")),
                if tps >= threshold {
                    format!("at or above the {threshold} tokens/s threshold")
                } else {
                    format!(
                        "below the {threshold} tokens/s threshold, which no option that fits reaches"
                    )
                }
            )
        };
        let pl = c.placement.clone().unwrap_or_default();
        let place = if pl.gpu_layers < pl.total_layers || pl.cpu_moe_layers > 0 {
            format!(
                "llama.cpp's --fit would put {} of {} layers on the GPU{} ({} there) and {} in system RAM",
                pl.gpu_layers,
                pl.total_layers,
                if pl.cpu_moe_layers > 0 {
                    format!(" with the experts of {} in system RAM", pl.cpu_moe_layers)
                } else {
                    String::new()
                },
                human(c.process_bytes),
                human(pl.host_bytes),
            )
        } else {
            format!("all of it fits on the GPU ({})", human(c.process_bytes))
        };
        p.why = Sentences::one(
            Message::new("plan.why.option")
                .bytes("need", b.required_bytes())
                .bytes("cap", b.capacity_bytes)
                .with("option", Arg::Text(c.label.clone()))
                .with("place", Arg::Text(place))
                .with("speed", Arg::Text(above)),
        );
    }
    if let Some(ctx) = fit::auto_context(w)
        && ctx < w.model.max_context.unwrap_or(u32::MAX)
    {
        p.why.push(
            Message::new("plan.why.auto_context")
                .fixed("trained", f64::from(w.model.max_context.unwrap_or(0)), 0)
                .fixed("ctx", f64::from(ctx), 0),
        );
    }
    if opts.iter().any(|o| !o.fits && o.placement.is_some())
        && let Some(ram) = w.gpu.host.ram_bytes
    {
        {
            p.why.push(
                Message::new("plan.why.host_ram")
                    .bytes("ram", ram)
                    .bytes("reserve", HOST_RESERVE_BYTES),
            );
        }
    }
    p.options = opts;
}
