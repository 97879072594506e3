//! The error-message reader: finds the PyTorch OOM figures (pytorch.rs), classifies them
//! (classify.rs), recognises every other known message by the signatures in
//! `assets/doctor/signatures.toml`, and picks up the figures other tools print (llama.cpp buffer
//! sizes, ollama's RAM demand, vLLM's KV tokens, the DXGI budget).

use super::classify::{Classification, LiveSnapshot, classify};
use super::evidence::{Fact, Observation};
use super::knowledge::Knowledge;
use super::pytorch::{self, OomFigures};
use super::size;
use crate::units::human;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The most text the reader accepts (a long traceback with its log fits easily; more is not an
/// error message but a whole log, and is refused rather than scanned).
pub const MAX_INPUT_BYTES: usize = 1 << 20;

/// Characters of context kept around a recognised pattern for the evidence line.
const SNIPPET_CHARS: usize = 160;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    pub figures: Option<OomFigures>,
    pub classification: Option<Classification>,
    /// Ids of the signatures that matched, in file order.
    pub signatures: Vec<String>,
    /// Everything established, most telling first (the classes in rank order lead).
    pub observations: Vec<Observation>,
}

impl Reading {
    pub fn recognised(&self) -> bool {
        !self.observations.is_empty()
    }

    pub fn facts(&self) -> Vec<Fact> {
        self.observations.iter().map(|o| o.fact).collect()
    }
}

/// Reads `text`; `Err` only for input too large to be a message.
pub fn read(text: &str, kb: &Knowledge, live: Option<&LiveSnapshot>) -> Result<Reading, String> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(format!(
            "the text is {} long; the reader takes at most {} — paste only the error and the lines around it",
            human(text.len() as u64),
            human(MAX_INPUT_BYTES as u64)
        ));
    }
    let mut r = Reading::default();
    let mut values = tool_figures(text);
    if let Some(f) = pytorch::parse(text) {
        let c = classify(&f, live);
        values.extend(figure_values(&f, &c));
        for class in &c.classes {
            r.observations.push(obs(Fact::from(*class), &values));
        }
        r.figures = Some(f);
        r.classification = Some(c);
    }
    let lower = text.to_lowercase();
    for s in &kb.signatures {
        let hit = s.any.iter().find_map(|p| lower.find(&p.to_lowercase()));
        let blocked = s.unless.iter().any(|p| lower.contains(&p.to_lowercase()));
        let Some(at) = hit.filter(|_| !blocked) else {
            continue;
        };
        r.signatures.push(s.id.clone());
        let mut v = values.clone();
        v.insert("matched".into(), snippet(text, &lower, at));
        for fact in &s.facts {
            if !r.observations.iter().any(|o| o.fact == *fact) {
                r.observations.push(obs(*fact, &v));
            }
        }
    }
    Ok(r)
}

fn obs(fact: Fact, values: &BTreeMap<String, String>) -> Observation {
    Observation {
        fact,
        source: "message".into(),
        values: values.clone(),
    }
}

/// The line around a match (lowercasing can shift byte offsets for non-ASCII text, so the
/// offset is used only if it lands on a boundary of the original).
fn snippet(text: &str, lower: &str, at: usize) -> String {
    let src = if lower.len() == text.len() && text.is_char_boundary(at) {
        text
    } else {
        lower
    };
    let start = src[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = src[at..].find('\n').map_or(src.len(), |i| at + i);
    let line = src[start..end].trim();
    if line.chars().count() > SNIPPET_CHARS {
        let cut: String = line.chars().take(SNIPPET_CHARS).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

fn figure_values(f: &OomFigures, c: &Classification) -> BTreeMap<String, String> {
    let mut v = BTreeMap::new();
    let mut put = |k: &str, b: Option<u64>| {
        if let Some(b) = b {
            v.insert(k.to_string(), human(b));
        }
    };
    put("requested", Some(f.requested));
    put("total", f.total);
    put("free", f.free);
    put("allocated", f.allocated);
    put("unallocated", f.unallocated);
    put("reserved", c.derived.reserved);
    put("allowed", f.allowed);
    put("this_process", f.this_process);
    put("in_process_other", c.derived.in_process_other);
    put("other_allocations", f.other_allocations);
    put("foreign", Some(c.derived.foreign));
    if let (Some(free), Some(u)) = (f.free, f.unallocated) {
        put("free_plus_unallocated", Some(free.saturating_add(u)));
    }
    if let Some(t) = f.total {
        v.insert(
            "total_gib".into(),
            format!("{:.2}", t as f64 / crate::units::GIB),
        );
    }
    v.insert("backend".into(), f.backend.clone());
    if let Some(g) = f.gpu {
        v.insert("gpu".into(), g.to_string());
    }
    v
}

/// Figures printed by tools other than PyTorch (oom_messages.txt sections 8–11).
fn tool_figures(text: &str) -> BTreeMap<String, String> {
    let mut v = BTreeMap::new();
    let size_after = |anchor: &str| -> Option<u64> {
        let at = text.find(anchor)? + anchor.len();
        size::leading(&text[at..])?.0.bytes()
    };
    let number_after = |anchor: &str| -> Option<f64> {
        let at = text.find(anchor)? + anchor.len();
        Some(size::leading_number(text[at..].trim_start())?.0)
    };
    // llama.cpp: "allocating 144817.04 MiB on device 0", "buffer of size 151851674624",
    // pinned host memory, and DefaultCPUAllocator's "you tried to allocate N bytes".
    let buffer = size_after("allocating ")
        .or_else(|| number_after("buffer of size ").map(|b| b as u64))
        .or_else(|| size_after("failed to allocate "))
        .or_else(|| size_after("you tried to allocate "));
    if let Some(b) = buffer {
        v.insert("buffer".into(), human(b));
    }
    // ollama: "model requires more system memory (164.8 GiB) than is available (13.4 GiB)".
    if let Some(n) = size_after("more system memory (") {
        v.insert("needed".into(), human(n));
    }
    if let Some(a) = size_after("than is available (") {
        v.insert("available".into(), human(a));
    }
    // vLLM: "max seq len (4096) is larger than … stored in KV cache (3664)".
    if let Some(n) = number_after("max seq len (") {
        v.insert("max_seq".into(), format!("{n:.0}"));
    }
    if let Some(n) = number_after("stored in KV cache (") {
        v.insert("kv_tokens".into(), format!("{n:.0}"));
    }
    // D3D12 budget dump: "BudgetBytes": 3540794471, "UsageBytes": 4229804032.
    if let Some(b) = number_after("\"BudgetBytes\":") {
        v.insert("budget".into(), human(b as u64));
    }
    if let Some(u) = number_after("\"UsageBytes\":") {
        v.insert("usage".into(), human(u as u64));
    }
    // llama.cpp info lines: "KV buffer size =  1472.00 MiB", "KV self size  = 2560.00 MiB".
    if let Some(kv) = size_after("KV buffer size =").or_else(|| size_after("KV self size  =")) {
        v.insert("kv".into(), human(kv));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_oversized_input() {
        let big = "x".repeat(MAX_INPUT_BYTES + 1);
        assert!(
            read(&big, Knowledge::get(), None)
                .unwrap_err()
                .contains("at most")
        );
    }

    #[test]
    fn tool_figures_are_picked_up() {
        let v = tool_figures(
            "Error: model requires more system memory (164.8 GiB) than is available (13.4 GiB)",
        );
        assert_eq!(v["needed"], "164.80 GiB");
        assert_eq!(v["available"], "13.40 GiB");
        let v = tool_figures(
            "The model's max seq len (4096) is larger than the maximum number of tokens that can be stored in KV cache (3664).",
        );
        assert_eq!(
            (v["max_seq"].as_str(), v["kv_tokens"].as_str()),
            ("4096", "3664")
        );
        let v = tool_figures(
            "alloc_tensor_range: failed to allocate CUDA0 buffer of size 151851674624",
        );
        assert_eq!(v["buffer"], "141.42 GiB");
    }

    #[test]
    fn snippet_is_the_matched_line() {
        let text = "line one\nERROR: CUDA error: out of memory\nline three";
        let lower = text.to_lowercase();
        let at = lower.find("cuda error").unwrap();
        assert_eq!(
            snippet(text, &lower, at),
            "ERROR: CUDA error: out of memory"
        );
    }
}
