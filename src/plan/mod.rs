//! Planning: strategies that change a workload, their cost, and the search for the cheapest
//! plan that fits; the JSON result of `vram-doctor plan`.

pub mod curve;
pub mod diffusion;
pub mod fit;
pub mod game;
pub mod options;
pub mod search;
pub mod strategy;
pub mod verdict;
pub mod workflow;

use crate::memory::any::AnyWorkload;
use crate::memory::{self, Breakdown, Component, DeviceMemory, Peak, Workload};
use crate::types::message::{Arg, Message, Sentences};
use serde::{Deserialize, Serialize};
pub use strategy::{Risk, Strategy};

/// The recommended plan (DESIGN.md `plan` object).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Human-readable changes, cheapest plan first; empty when the workload fits as it is.
    pub strategies: Vec<String>,
    /// Throughput relative to the workload as given.
    pub speed_factor: f64,
    pub quality_note: String,
    /// Whether the plan fits the card with the safety margin.
    pub fits: bool,
    /// Peak per GPU after the plan.
    pub process_bytes: u64,
    /// Largest batch and longest sequence that fit as the workload stands.
    pub max_batch: Option<u32>,
    pub max_seq: Option<u32>,
    /// Why this plan (the JSON's English text).
    pub why: Sentences,
    /// The strategies as data, for the GUI and exports (LLM workloads).
    pub changes: Vec<Strategy>,
    /// The task's own plan in full (none for LLM workloads, whose plan is the fields above).
    #[serde(default, skip_serializing_if = "Details::is_llm")]
    pub details: Details,
    /// Where llama.cpp puts the planned run (DESIGN.md `placement`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::engines::llama_cpp::memory::Placement>,
    /// How fast the planned run goes (DESIGN.md `speed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<crate::speed::Speed>,
    /// The options compared, each with memory and speed (llama.cpp runs that do not fit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<options::PlanOption>,
}

/// The task's own plan, by workload kind. In JSON it is the plan's object as it stands (no
/// tag; the kind is told by its fields), with its keys sorted as a `serde_json` map sorts them:
/// the `details` object `plan --json` has always printed.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Details {
    /// An LLM plan: everything is in `Plan` itself.
    #[default]
    Llm,
    Diffusion(Box<diffusion::DiffusionPlan>),
    Game(Box<game::GameAdvice>),
}

impl Details {
    pub fn is_llm(&self) -> bool {
        matches!(self, Details::Llm)
    }

    /// The diffusion plan, for diffusion workloads.
    pub fn diffusion(&self) -> Option<&diffusion::DiffusionPlan> {
        match self {
            Details::Diffusion(p) => Some(p),
            _ => None,
        }
    }
}

impl Serialize for Details {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = match self {
            Details::Llm => return s.serialize_none(),
            Details::Diffusion(p) => serde_json::to_value(p),
            Details::Game(a) => serde_json::to_value(a),
        };
        v.map_err(serde::ser::Error::custom)?.serialize(s)
    }
}

/// The quality note of a plan whose riskiest change is `worst`.
pub fn quality_note(worst: Risk, unchanged: bool) -> String {
    if unchanged {
        return "unchanged".into();
    }
    match worst {
        Risk::None => "no quality change".into(),
        Risk::Low => "small quality risk (8-bit or adapter training)".into(),
        Risk::Medium => "noticeable trade-off: check quality or capability on your task".into(),
        Risk::High => "large quality loss likely".into(),
    }
}

/// The JSON result of `vram-doctor plan` (DESIGN.md "JSON result").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanResult {
    pub capacity_bytes: u64,
    /// Whether the workload as given runs (`verdict` says how: whole in VRAM with the safety
    /// margin, or by streaming weights from system RAM).
    pub fits: bool,
    /// The one verdict every front end shows (`verdict::Verdict`).
    pub verdict: verdict::Verdict,
    pub peak: Peak,
    pub components: Vec<Component>,
    /// The run's memory per GPU and on the host, as llama.cpp prints it (LLM inference only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceMemory>,
    pub warnings: Vec<Message>,
    pub plan: Plan,
}

impl PlanResult {
    /// The estimate the result was made from (a result holds all of a `Breakdown`'s fields).
    pub fn breakdown(&self) -> Breakdown {
        Breakdown {
            capacity_bytes: self.capacity_bytes,
            components: self.components.clone(),
            devices: self.devices.clone(),
            peak: self.peak,
            warnings: self.warnings.clone(),
        }
    }
}

/// Estimates a workload and plans how to make it fit, with the speed of the plan and, for
/// llama.cpp, the GPU/CPU split options.
pub fn plan(w: &Workload) -> (Breakdown, Plan) {
    let (mut b, mut p) = plan_memory(w);
    options::add(w, &b, &mut p);
    let precision = crate::speed::precision::llm_rate(w);
    if let Some(m) =
        precision.and_then(|r| crate::speed::precision::fallback_warning(&w.gpu.name, &r))
    {
        b.warnings.push(m);
    }
    (b, p)
}

/// The strategy search alone: the cheapest change that fits on the GPU.
fn plan_memory(w: &Workload) -> (Breakdown, Plan) {
    let b = memory::estimate(w);
    let max_batch = search::max_batch(w);
    let max_seq = search::max_seq(w);
    let mut p = Plan {
        speed_factor: 1.0,
        max_batch,
        max_seq,
        ..Default::default()
    };
    let (biggest_id, biggest) = b
        .components
        .iter()
        .max_by_key(|c| c.bytes)
        .map(|c| (c.label.clone(), c.bytes))
        .unwrap_or_default();
    let needs = |id| {
        Message::new(id)
            .bytes("need", b.required_bytes())
            .bytes("cap", b.capacity_bytes)
    };
    if search::fits_with_margin(&b) {
        p.fits = true;
        p.process_bytes = b.peak.process_bytes;
        p.quality_note = "unchanged".into();
        p.why = Sentences::one(
            needs("plan.why.fits")
                .bytes("free", b.headroom_bytes().max(0) as u64)
                .with("part", Arg::Part(biggest_id))
                .bytes("part_bytes", biggest),
        );
        return (b, p);
    }
    match search::cheapest_fit(w) {
        Some((c, after)) => {
            p.fits = true;
            p.strategies = c.strategies.iter().map(Strategy::describe).collect();
            p.speed_factor = c.speed_factor;
            p.process_bytes = after.peak.process_bytes;
            let worst = c
                .strategies
                .iter()
                .map(Strategy::risk)
                .max()
                .unwrap_or(Risk::None);
            p.quality_note = quality_note(worst, false);
            p.why = Sentences::one(
                needs("plan.why.cheapest")
                    .with("part", Arg::Part(biggest_id))
                    .bytes("part_bytes", biggest)
                    .fixed("margin", 100.0 * search::SAFETY_MARGIN, 0)
                    .with("changes", Arg::Text(p.strategies.join(" + ")))
                    .bytes("after", after.required_bytes())
                    .fixed("speed", c.speed_factor, 2),
            );
            p.changes = c.strategies;
        }
        None => {
            p.quality_note = "no plan found".into();
            p.why = Sentences::one(needs("plan.why.none"));
        }
    }
    (b, p)
}

/// The JSON result from an estimate, its verdict and its plan.
fn result(b: Breakdown, verdict: verdict::Verdict, plan: Plan) -> PlanResult {
    PlanResult {
        capacity_bytes: b.capacity_bytes,
        fits: verdict.runs(),
        verdict,
        peak: b.peak,
        warnings: b.warnings.clone(),
        components: b.components,
        devices: b.devices,
        plan,
    }
}

/// The whole JSON result for an LLM workload.
pub fn plan_result(w: &Workload) -> PlanResult {
    let (b, plan) = plan(w);
    let v = verdict::of_breakdown(&b);
    result(b, v, plan)
}

/// The JSON result for a workload of any task, in one shape.
pub fn plan_any(w: &AnyWorkload) -> PlanResult {
    match w {
        AnyWorkload::Llm(w) => plan_result(w),
        AnyWorkload::Diffusion(d) => {
            let p = diffusion::plan(d);
            let plan = Plan {
                strategies: p.labels.clone(),
                speed_factor: p.speed_factor,
                quality_note: p.quality_note.clone(),
                fits: p.fits_as_is || !p.labels.is_empty() || p.runs_streaming,
                process_bytes: p.required_bytes,
                max_batch: (p.max_batch > 0).then_some(p.max_batch),
                max_seq: None,
                why: p.why.clone(),
                changes: Vec::new(),
                details: Details::Diffusion(Box::new(p.clone())),
                speed: Some(crate::speed::diffusion::speed(&diffusion::planned(
                    d,
                    &p.strategies,
                ))),
                ..Default::default()
            };
            result(memory::any::estimate_any(w), verdict::of_diffusion(d), plan)
        }
        AnyWorkload::Game(g) => {
            let a = game::advise(g);
            let v = verdict::of_game(&a);
            let fits = v.runs();
            let plan = Plan {
                strategies: a
                    .to_fit
                    .iter()
                    .map(|c| format!("{}: {} → {}", c.setting, c.from, c.to))
                    .collect(),
                speed_factor: 1.0,
                quality_note: if a.to_fit.is_empty() {
                    "unchanged".into()
                } else {
                    "lower settings".into()
                },
                fits: fits || !a.to_fit.is_empty(),
                // What the game uses once the steps are taken (the settings as given when
                // none is needed), as for every other kind's plan.
                process_bytes: if a.to_fit.is_empty() {
                    a.use_bytes
                } else {
                    let fitted = crate::memory::game::GameWorkload {
                        run: game::fitted(g),
                        ..g.clone()
                    };
                    game::advise(&fitted).use_bytes
                },
                max_batch: None,
                max_seq: None,
                why: Sentences::one({
                    let m = Message::new(if fits {
                        "plan.why.game.fits"
                    } else {
                        "plan.why.game.short"
                    })
                    .bytes("use", a.use_bytes)
                    .bytes("budget", a.budget_bytes)
                    .bytes("cap", a.capacity_bytes);
                    if fits {
                        m
                    } else {
                        m.with("signs", Arg::Terms(a.signs.clone(), "; "))
                    }
                }),
                changes: Vec::new(),
                details: Details::Game(Box::new(a.clone())),
                ..Default::default()
            };
            result(memory::any::estimate_any(w), v, plan)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::WorkloadFile;
    use std::path::Path;

    fn warnings(gpu: &str) -> Vec<&'static str> {
        let text = format!(
            "[gpu]\npreset = \"{gpu}\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nengine = \"llama.cpp\"\nweights = \"q4_k_m\"\n"
        );
        let w = WorkloadFile::parse(&text, "t")
            .unwrap()
            .resolve(Path::new("."), None)
            .unwrap();
        plan_result(&w).warnings.iter().map(|m| m.id).collect()
    }

    #[test]
    fn a_card_without_the_runs_precision_is_planned_with_a_warning() {
        // llama.cpp's Q4_K_M matmuls run in int8 (MMQ); the RX 7900 XTX preset has its 16-bit
        // WMMA rate only, so its prefill is estimated at that rate and the plan says so.
        assert!(
            warnings("rx-7900-xtx").contains(&"speed.precision_fallback"),
            "{:?}",
            warnings("rx-7900-xtx")
        );
        assert!(!warnings("rtx-4090").contains(&"speed.precision_fallback"));
    }
}
