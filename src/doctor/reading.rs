//! The error-message reader: finds the PyTorch OOM figures (pytorch.rs), classifies them
//! (classify.rs), recognises every other known message by the signatures in
//! `assets/doctor/signatures.toml`, and picks up the figures other tools print (tools.rs:
//! llama.cpp buffer sizes and the device total, ollama's demand, vLLM's KV cache, the DXGI
//! budget). Matching works on the flattened, lowercased text (flat.rs), so wrapped lines, case
//! and log prefixes do not matter.

use super::DoctorError;
use super::classify::{Classification, LiveSnapshot, classify};
use super::comfy_log::{self, ComfyLog};
use super::evidence::{Fact, Observation, Source};
use super::flat::{self, Flat};
use super::knowledge::Knowledge;
use super::pytorch::{self, Format, OomFigures};
use super::tools;
use crate::units::human;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The most text the reader accepts (a long traceback with its log fits easily; more is not an
/// error message but a whole log, and is refused rather than scanned).
pub const MAX_INPUT_BYTES: usize = 1 << 20;

/// Characters of context kept around a recognised pattern for the evidence line.
const SNIPPET_CHARS: usize = 160;
/// …of which at most this many before the match.
const SNIPPET_BEFORE: usize = 40;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    pub figures: Option<OomFigures>,
    pub classification: Option<Classification>,
    /// Ids of the signatures that matched, in file order.
    pub signatures: Vec<String>,
    /// Everything established, most telling first (the classes in rank order lead).
    pub observations: Vec<Observation>,
    /// What ComfyUI's console lines in the text show (comfy_log.rs); absent when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comfy_log: Option<ComfyLog>,
}

impl Reading {
    pub fn recognised(&self) -> bool {
        !self.observations.is_empty()
    }
}

/// Reads `text`; `Err` only for input too large to be a message.
pub fn read(
    text: &str,
    kb: &Knowledge,
    live: Option<&LiveSnapshot>,
) -> Result<Reading, DoctorError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(DoctorError::TooLong {
            bytes: text.len(),
            max: MAX_INPUT_BYTES,
        });
    }
    let mut r = Reading::default();
    // Wrapped lines and doubled spaces read as one line; matching is case-insensitive.
    let flat = Flat::new(text, false);
    let lower = Flat::new(text, true);
    let tool = tools::read(&lower.text);
    let mut values = tool.values.clone();
    if let Some(f) = pytorch::parse(&flat.text) {
        let c = classify(&f, live);
        values.extend(figure_values(&f, &c));
        match f.format {
            // Its figures cannot separate the async pool from the rest; the allocator in use
            // is the most telling thing the message shows.
            Format::MallocAsync => r.observations.push(obs(Fact::MallocAsync, &values)),
            // On unified memory the watermark, not a card, is the limit.
            Format::Mps => r.observations.push(obs(Fact::Mps, &values)),
            Format::Modern | Format::Legacy => {}
        }
        for class in &c.classes {
            r.observations.push(obs(Fact::from(*class), &values));
        }
        if let (Some(free), Some(u)) = (f.free, f.unallocated)
            && free.saturating_add(u) < f.requested
        {
            r.observations.push(obs(Fact::DefragInsufficient, &values));
        }
        r.figures = Some(f);
        r.classification = Some(c);
    }
    // A single buffer larger than the whole card: no setting of the rest can make it fit
    // (issue 16; llama.cpp prints the failed size and the device's total, tools.rs).
    if let (Some(b), Some(total)) = (tool.failed_buffer, tool.card_total)
        && b > total
    {
        r.observations
            .insert(0, obs(Fact::LlmBufferTooBig, &values));
    }
    // ComfyUI's own lines, read by their format strings: ahead of the signatures, whose facts
    // for the same lines (partial load, dynamic VRAM) then add nothing.
    if let Some(log) = comfy_log::read(text, comfy_log::Lines::get()) {
        r.observations.extend(comfy_log::observe(&log, &values));
        r.comfy_log = Some(log);
    }
    for s in &kb.signatures {
        let hit = s
            .any
            .iter()
            .find_map(|p| lower.text.find(&flat::pattern(p)));
        let blocked = s
            .unless
            .iter()
            .any(|p| lower.text.contains(&flat::pattern(p)));
        let Some(at) = hit.filter(|_| !blocked) else {
            continue;
        };
        r.signatures.push(s.id.clone());
        let mut v = values.clone();
        v.insert(
            "matched".into(),
            snippet(text, lower.origin(at).unwrap_or(0)),
        );
        for fact in &s.facts {
            if !r.observations.iter().any(|o| o.fact == *fact) {
                r.observations.push(obs(*fact, &v));
            }
        }
    }
    // A1111's status line ("A: … R: … Sys: used/total"): the run's peaks. At the card's size the
    // run filled the card, which on Windows means the driver spilled into system memory.
    if let Some((used, total)) = tool.webui_sys
        && lower.text.contains("a: ")
        && lower.text.contains("r: ")
    {
        for fact in [Fact::WebuiStatus, Fact::EngineA1111] {
            if !r.observations.iter().any(|o| o.fact == fact) {
                r.observations.push(obs(fact, &values));
            }
        }
        if total > 0 && used as f64 >= 0.95 * total as f64 {
            // Behind an OOM with figures, whose classes say more, it comes after them.
            let at = if r.figures.is_some() {
                r.observations.len()
            } else {
                0
            };
            r.observations.insert(at, obs(Fact::VramPeakFull, &values));
        }
    }
    if r.observations.is_empty() {
        fallback(&lower.text, kb, &values, &mut r);
    }
    Ok(r)
}

/// Nothing known matched. Text that still speaks of the GPU is a GPU problem of some kind —
/// out of memory when it says so, otherwise an error the doctor does not know — never "not a
/// GPU error" (issue 16). The word lists are data (`signatures.toml`).
fn fallback(lower: &str, kb: &Knowledge, values: &BTreeMap<String, String>, r: &mut Reading) {
    let gpu = kb.gpu_words.iter().any(|w| flat::contains_word(lower, w));
    if !gpu {
        return;
    }
    let memory = kb
        .memory_words
        .iter()
        .any(|w| flat::contains_word(lower, w));
    let fact = if memory {
        Fact::CudaOomNoFigures
    } else {
        Fact::GpuUnrecognised
    };
    r.observations.push(obs(fact, values));
}

fn obs(fact: Fact, values: &BTreeMap<String, String>) -> Observation {
    Observation {
        fact,
        source: Source::Message,
        values: values.clone(),
    }
}

/// The line around a match (`at` is a byte offset into `text`, on a character boundary), cut
/// to a window around it on long lines.
fn snippet(text: &str, at: usize) -> String {
    let src = text;
    let at = at.min(src.len());
    let line_start = src[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = src[at..].find('\n').map_or(src.len(), |i| at + i);
    // Up to SNIPPET_BEFORE characters before the match, the rest after it.
    let start = src[line_start..at]
        .char_indices()
        .rev()
        .nth(SNIPPET_BEFORE - 1)
        .map_or(line_start, |(i, _)| line_start + i);
    let end = src[at..line_end]
        .char_indices()
        .nth(SNIPPET_CHARS - SNIPPET_BEFORE)
        .map_or(line_end, |(i, _)| at + i);
    let mut out = String::new();
    if start > line_start {
        out.push('…');
    }
    out.push_str(src[start..end].trim());
    if end < line_end {
        out.push('…');
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_oversized_input() {
        let big = "x".repeat(MAX_INPUT_BYTES + 1);
        assert!(
            read(&big, Knowledge::get(), None)
                .unwrap_err()
                .to_string()
                .contains("at most")
        );
    }

    #[test]
    fn wrapped_and_lowercased_messages_are_read() {
        let wrapped = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a\n  total capacity of 23.65 GiB of which 1.05 GiB is free. Of the allocated\n  memory 20.10 GiB is allocated by PyTorch, and 1.90 GiB is reserved by PyTorch but\n  unallocated.";
        let r = read(wrapped, Knowledge::get(), None).unwrap();
        let f = r.figures.as_ref().expect("the wrapped message parses");
        assert_eq!(
            f.unallocated,
            Some((1.90 * crate::units::GIB).round() as u64)
        );
        let r = read(
            "ERROR: cuda ERROR:   Out Of\nMemory",
            Knowledge::get(),
            None,
        )
        .unwrap();
        assert!(
            r.signatures.contains(&"cuda_error_oom".to_string()),
            "{:?}",
            r.signatures
        );
    }

    #[test]
    fn gpu_text_without_a_known_message_is_still_a_gpu_problem() {
        let kb = Knowledge::get();
        let facts = |t: &str| -> Vec<Fact> {
            read(t, kb, None)
                .unwrap()
                .observations
                .iter()
                .map(|o| o.fact)
                .collect()
        };
        assert_eq!(
            facts("my NVIDIA card makes a strange noise"),
            vec![Fact::GpuUnrecognised]
        );
        assert_eq!(
            facts("the GPU ran out of memory again"),
            vec![Fact::CudaOomNoFigures]
        );
        assert!(facts("the build failed: missing semicolon").is_empty());
        assert!(
            facts("it jumps over the lazy dog").is_empty(),
            "mps inside a word"
        );
    }

    #[test]
    fn a_buffer_larger_than_the_card_is_an_impossible_request() {
        let r = read(
            "ggml_cuda_init: found 1 CUDA devices (Total VRAM: 24123 MiB):\nggml_backend_cuda_buffer_type_alloc_buffer: allocating 30720.00 MiB on device 0: cudaMalloc failed: out of memory\nllama_kv_cache_init: failed to allocate buffer for kv cache",
            Knowledge::get(),
            None,
        )
        .unwrap();
        assert_eq!(r.observations[0].fact, Fact::LlmBufferTooBig);
        assert_eq!(r.observations[0].values["buffer"], "30.00 GiB");
    }

    #[test]
    fn snippet_on_a_long_line_keeps_the_match() {
        let text = format!(
            "{}Got an OOM, unloading all loaded models.{}",
            "x".repeat(500),
            "y".repeat(500)
        );
        let at = text.find("Got an OOM").unwrap();
        let s = snippet(&text, at);
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(
            s.contains("Got an OOM, unloading all loaded models."),
            "{s}"
        );
        assert!(s.chars().count() <= SNIPPET_CHARS + 2);
    }

    #[test]
    fn snippet_is_the_matched_line() {
        let text = "line one\nERROR: CUDA error: out of memory\nline three";
        let at = text.find("CUDA error").unwrap();
        assert_eq!(snippet(text, at), "ERROR: CUDA error: out of memory");
    }
}
