//! From causes (a leaf's list, or what the evidence points at) to the answer shown: causes
//! ranked with why each fits and the evidence for it, and fixes ordered by cost.

use super::evidence::{Fact, Observation, Source};
use super::knowledge::{Cause, Cost, Fix, Knowledge};
use super::text::fill;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Fixes are gathered from this many top causes; further causes are listed without theirs so
/// an unlikely cause's cheap fix does not crowd out the likely one's.
const CAUSES_WITH_FIXES: usize = 3;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// Most likely first.
    pub causes: Vec<RankedCause>,
    /// The likeliest cause's fixes first, cheapest first within a cause; fixes the figures
    /// show cannot help come last.
    pub fixes: Vec<FixLine>,
    /// The workload the message describes, as planner fields (engine, card size, context),
    /// when it names the program; for "open in planner" on the message itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planner: Option<BTreeMap<String, String>>,
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
    /// The figures show this fix cannot help (it is listed last).
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub cannot_help: bool,
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

/// The causes the evidence points at, most telling observation first and, for one
/// observation, in causes.toml's order (for a message read without the wizard).
pub fn causes_for(kb: &Knowledge, observations: &[Observation]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for o in observations {
        for id in &kb.cause_order {
            if supports(&kb.causes[id], o, observations) && !out.contains(id) {
                out.push(id.clone());
            }
        }
    }
    out
}

/// Whether observation `o` supports `cause`: it is one of its signs, and the message came from
/// one of the programs the cause is about (when it names any).
fn supports(cause: &Cause, o: &Observation, all: &[Observation]) -> bool {
    cause.signs.contains(&o.fact)
        && (cause.engines.is_empty() || all.iter().any(|other| cause.engines.contains(&other.fact)))
}

/// Ranks `candidates` (a leaf's order is the prior): those the evidence supports first, in
/// the order of their strongest evidence, then the rest as given. Causes a pasted message (or
/// a watched run's timeline) points at but the leaf does not list are added, so a secondary finding (say, large
/// non-PyTorch memory beside fragmentation) is not lost.
pub fn diagnose(
    kb: &Knowledge,
    candidates: &[String],
    observations: &[Observation],
    lang: &str,
) -> Diagnosis {
    // What a message or a watched run's timeline showed is specific enough to add its causes.
    let from_message: Vec<Observation> = observations
        .iter()
        .filter(|o| matches!(o.source, Source::Message | Source::Timeline))
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
        observations
            .iter()
            .position(|o| supports(c, o, observations))
    };
    let mut ranked: Vec<(usize, usize, &String)> = candidates
        .iter()
        .enumerate()
        .filter(|(_, id)| kb.causes.contains_key(*id))
        .map(|(i, id)| (support(id).unwrap_or(usize::MAX), i, id))
        .collect();
    ranked.sort();
    ranked.dedup_by(|a, b| a.2 == b.2);
    let workload = planner_context(kb, observations);
    let seen = |f: &Fact| observations.iter().any(|o| o.fact == *f);
    let any_engine = observations
        .iter()
        .any(|o| o.fact.name().starts_with("engine_"));
    let mut d = Diagnosis::default();
    // (rank of the first cause listing it, cannot help, fix line); sorted at the end.
    let mut lines: Vec<(usize, bool, FixLine)> = Vec::new();
    for (rank, (_, _, id)) in ranked.iter().enumerate() {
        let c = &kb.causes[*id];
        let evidence = observations
            .iter()
            .filter(|o| supports(c, o, observations))
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
        // Fixes for the program that printed the message; with no program known, a cause
        // whose every fix is program-specific keeps them all (each names its program).
        let generic = |f: &Fix| f.engines.is_empty() && !f.not_with.iter().any(seen);
        let keep_specific = !any_engine && !c.fixes.iter().any(|f| generic(&kb.fixes[f]));
        for fix_id in &c.fixes {
            if let Some((_, _, line)) = lines.iter_mut().find(|(_, _, f)| &f.id == fix_id) {
                line.for_causes.push((*id).clone());
                continue;
            }
            let f = &kb.fixes[fix_id];
            let for_this_program = if f.engines.is_empty() {
                !f.not_with.iter().any(seen)
            } else {
                f.engines.iter().any(seen) || keep_specific
            };
            if !for_this_program {
                continue;
            }
            let planner = (!f.planner.is_empty()).then(|| {
                let mut p = f.planner.clone();
                for (k, v) in &workload {
                    p.entry(k.clone()).or_insert_with(|| v.clone());
                }
                p
            });
            let cannot_help = f.useless_when.iter().any(seen);
            lines.push((
                rank,
                cannot_help,
                FixLine {
                    id: fix_id.clone(),
                    cost: f.cost,
                    text: f.text.get(lang).to_string(),
                    copy: f.copy.clone(),
                    planner,
                    for_causes: vec![(*id).clone()],
                    cannot_help,
                },
            ));
        }
    }
    // By how likely the cause is, then by cost (stable: file order within one cost); a fix the
    // figures rule out never comes before one that can help (issue 16).
    lines.sort_by_key(|(rank, useless, f)| (*useless, *rank, f.cost));
    d.fixes = lines.into_iter().map(|(_, _, f)| f).collect();
    d.planner = workload
        .keys()
        .any(|k| k == "run.engine")
        .then(|| workload.clone());
    d
}

/// What the evidence says about the workload, as planner fields: the card's size from a
/// PyTorch message, and the fields observed facts name in facts.toml (the engine).
fn planner_context(kb: &Knowledge, observations: &[Observation]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let from_message = || observations.iter().filter(|o| o.source == Source::Message);
    if let Some(total) = from_message().find_map(|o| o.values.get("total_gib")) {
        out.insert("gpu.vram_gib".to_string(), total.clone());
    }
    // The context the message names: vLLM's max seq len, llama.cpp's n_ctx.
    if let Some(seq) =
        from_message().find_map(|o| o.values.get("max_seq").or(o.values.get("n_ctx")))
    {
        out.insert("run.seq".to_string(), seq.clone());
    }
    for o in observations {
        for (k, v) in kb
            .facts
            .get(&o.fact)
            .map(|f| &f.planner)
            .into_iter()
            .flatten()
        {
            out.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    out
}
