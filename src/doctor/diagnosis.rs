//! From causes (a leaf's list, or what the evidence points at) to the answer shown: causes
//! ranked with why each fits and the evidence for it, fixes ordered by cost, and the fixes that
//! cannot help here apart, each with its reason.

use super::evidence::{Fact, Observation, Source};
use super::knowledge::{Cause, Cost, Fix, Kind, Knowledge};
use super::text::fill;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Fixes are gathered from this many top causes; further causes are listed without theirs so
/// an unlikely cause's cheap fix does not crowd out the likely one's.
const CAUSES_WITH_FIXES: usize = 3;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// Most likely first.
    pub causes: Vec<RankedCause>,
    /// Fixes that can help: the likeliest cause's first, cheapest first within a cause.
    pub fixes: Vec<FixLine>,
    /// Fixes the causes list that cannot help with this message, each with its `reason`: the
    /// figures rule them out, or they are written for another kind of workload (issue 22).
    #[serde(default)]
    pub cannot_help: Vec<FixLine>,
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
    /// Why this fix cannot help here (only in [`Diagnosis::cannot_help`]).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
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
    let kinds = message_kinds(kb, observations);
    let mut d = Diagnosis::default();
    // (rank of the first cause listing it, fix line); sorted at the end.
    let mut lines: Vec<(usize, FixLine)> = Vec::new();
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
            if let Some((_, line)) = lines.iter_mut().find(|(_, f)| &f.id == fix_id) {
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
            lines.push((
                rank,
                FixLine {
                    id: fix_id.clone(),
                    cost: f.cost,
                    text: f.text.get(lang).to_string(),
                    copy: f.copy.clone(),
                    planner,
                    for_causes: vec![(*id).clone()],
                    reason: cannot_help(kb, f, observations, kinds.as_ref(), lang),
                },
            ));
        }
    }
    // By how likely the cause is, then by cost (stable: file order within one cost); a fix that
    // cannot help is listed apart, never among those that can (issues 16, 22).
    lines.sort_by_key(|(rank, f)| (*rank, f.cost));
    (d.cannot_help, d.fixes) = lines
        .into_iter()
        .map(|(_, f)| f)
        .partition(|f| f.reason.is_some());
    d.planner = workload
        .keys()
        .any(|k| k == "run.engine")
        .then(|| workload.clone());
    d
}

/// The kinds of workload the evidence agrees the message comes from: the intersection of the
/// `kinds` of every observed fact that names some (facts.toml). `None` when no fact tells, or
/// when they disagree (a ComfyUI node running an LLM): then no fix is ruled out by kind.
fn message_kinds(kb: &Knowledge, observations: &[Observation]) -> Option<BTreeSet<Kind>> {
    let mut out: Option<BTreeSet<Kind>> = None;
    for o in observations {
        let Some(k) = kb.facts.get(&o.fact).filter(|i| !i.kinds.is_empty()) else {
            continue;
        };
        let k: BTreeSet<Kind> = k.kinds.iter().copied().collect();
        out = Some(match out {
            None => k,
            Some(prev) => prev.intersection(&k).copied().collect(),
        });
    }
    out.filter(|k| !k.is_empty())
}

/// Why `f` cannot help with this message, or `None` when it can: one of its `useless_when`
/// facts was seen (the reason is that fact's evidence line, with the message's figures), or it
/// is written only for kinds of workload the message is not from.
fn cannot_help(
    kb: &Knowledge,
    f: &Fix,
    observations: &[Observation],
    kinds: Option<&BTreeSet<Kind>>,
    lang: &str,
) -> Option<String> {
    if let Some(o) = observations
        .iter()
        .find(|o| f.useless_when.contains(&o.fact))
    {
        return Some(evidence_line(kb, o, lang));
    }
    let kinds = kinds?;
    if f.kinds.is_empty() || f.kinds.iter().any(|k| kinds.contains(k)) {
        return None;
    }
    let names = |ks: &mut dyn Iterator<Item = &Kind>| {
        ks.map(|k| kb.kind_names[k].get(lang))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let values = BTreeMap::from([
        ("fix_kinds".to_string(), names(&mut f.kinds.iter())),
        ("kinds".to_string(), names(&mut kinds.iter())),
    ]);
    fill(kb.not_for_kind.get(lang), &values)
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
