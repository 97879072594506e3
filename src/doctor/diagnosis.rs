//! From causes (a leaf's list, or what the evidence points at) to the answer shown: causes
//! ranked with why each fits and the evidence for it, and fixes ordered by cost.

use super::evidence::Observation;
use super::knowledge::{Cost, Knowledge};
use super::text::fill;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Fixes are gathered from this many top causes; further causes are listed without theirs so
/// an unlikely cause's cheap fix does not crowd out the likely one's.
const CAUSES_WITH_FIXES: usize = 3;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub causes: Vec<RankedCause>,
    pub fixes: Vec<FixLine>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankedCause {
    pub id: String,
    pub title: String,
    pub why: String,
    /// What the doctor saw that supports this cause.
    pub evidence: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixLine {
    pub id: String,
    pub cost: Cost,
    pub text: String,
    pub copy: Option<String>,
    /// Workload fields to open the planner with; absent when the fix has no planner effect.
    pub planner: Option<BTreeMap<String, String>>,
    /// The causes (ids) this fix addresses.
    pub for_causes: Vec<String>,
}

/// One evidence line for an observation: the fact's template filled with its figures, or its
/// label and the recognised text.
pub fn evidence_line(kb: &Knowledge, o: &Observation, lang: &str) -> String {
    let Some(info) = kb.facts.get(&o.fact) else {
        return o.fact.name();
    };
    let said = info
        .says
        .as_ref()
        .and_then(|t| fill(t.get(lang), &o.values));
    match (said, o.values.get("matched")) {
        (Some(s), _) => s,
        (None, Some(m)) => format!("{}: “{m}”", info.label.get(lang)),
        (None, None) => info.label.get(lang).to_string(),
    }
}

/// The causes the evidence points at, most telling observation first (for a message read
/// without the wizard).
pub fn causes_for(kb: &Knowledge, observations: &[Observation]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for o in observations {
        for (id, c) in &kb.causes {
            if c.signs.contains(&o.fact) && !out.contains(id) {
                out.push(id.clone());
            }
        }
    }
    out
}

/// Ranks `candidates` (a leaf's order is the prior): those the evidence supports first, in
/// the order of their strongest evidence, then the rest as given. Causes a pasted message
/// points at but the leaf does not list are added, so a secondary finding (say, large
/// non-PyTorch memory beside fragmentation) is not lost.
pub fn diagnose(
    kb: &Knowledge,
    candidates: &[String],
    observations: &[Observation],
    lang: &str,
) -> Diagnosis {
    let from_message: Vec<Observation> = observations
        .iter()
        .filter(|o| o.source == "message")
        .cloned()
        .collect();
    let mut candidates = candidates.to_vec();
    for c in causes_for(kb, &from_message) {
        if !candidates.contains(&c) {
            candidates.push(c);
        }
    }
    let support = |id: &str| -> Option<usize> {
        let c = kb.causes.get(id)?;
        observations.iter().position(|o| c.signs.contains(&o.fact))
    };
    let mut ranked: Vec<(usize, usize, &String)> = candidates
        .iter()
        .enumerate()
        .filter(|(_, id)| kb.causes.contains_key(*id))
        .map(|(i, id)| (support(id).unwrap_or(usize::MAX), i, id))
        .collect();
    ranked.sort();
    ranked.dedup_by(|a, b| a.2 == b.2);
    let planner_gpu = gpu_from(observations);
    let mut d = Diagnosis::default();
    for (rank, (_, _, id)) in ranked.iter().enumerate() {
        let c = &kb.causes[*id];
        let evidence = observations
            .iter()
            .filter(|o| c.signs.contains(&o.fact))
            .map(|o| evidence_line(kb, o, lang))
            .collect();
        d.causes.push(RankedCause {
            id: (*id).clone(),
            title: c.title.get(lang).to_string(),
            why: c.why.get(lang).to_string(),
            evidence,
        });
        if rank >= CAUSES_WITH_FIXES {
            continue;
        }
        for fix_id in &c.fixes {
            if let Some(line) = d.fixes.iter_mut().find(|f| &f.id == fix_id) {
                line.for_causes.push((*id).clone());
                continue;
            }
            let f = &kb.fixes[fix_id];
            let planner = (!f.planner.is_empty()).then(|| {
                let mut p = f.planner.clone();
                if let Some(g) = &planner_gpu {
                    p.entry("gpu.vram_gib".into()).or_insert_with(|| g.clone());
                }
                p
            });
            d.fixes.push(FixLine {
                id: fix_id.clone(),
                cost: f.cost,
                text: f.text.get(lang).to_string(),
                copy: f.copy.clone(),
                planner,
                for_causes: vec![(*id).clone()],
            });
        }
    }
    // Stable: within one cost, the likelier cause's fixes stay first.
    d.fixes.sort_by_key(|f| f.cost);
    d
}

/// The card's size from a PyTorch message, as the planner's `gpu.vram_gib`.
fn gpu_from(observations: &[Observation]) -> Option<String> {
    observations
        .iter()
        .filter(|o| o.source == "message")
        .find_map(|o| o.values.get("total_gib").cloned())
}
