//! The memory–speed curve of one knob: for each value of the GPU layers (`-ngl`) or the
//! context length, the GPU memory the run takes and its decode speed, everything else as
//! given. The planner tab draws it against the card's capacity, so the user sees where the
//! curve crosses the card and what each step costs.

use crate::memory;
use crate::speed;
use crate::types::workload::Workload;
use serde::{Deserialize, Serialize};

/// The knob on the x axis.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Knob {
    /// llama.cpp `-ngl`, 0 to every layer and the output head.
    #[default]
    GpuLayers,
    /// Tokens of context (`run.seq`).
    Context,
}

/// One point of the curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: u32,
    /// Peak per GPU (what nvidia-smi shows for the process).
    pub process_bytes: u64,
    /// Decode tokens per second; `None` when the card has no bandwidth figure.
    pub decode_tokens_per_s: Option<f64>,
}

/// At most this many points: a smooth line at a few milliseconds per frame in a debug build.
const MAX_POINTS: u32 = 64;

/// The x values of a knob for a workload: every `-ngl` (a 100-layer model is sampled), or the
/// context from 512 tokens to the model's trained context in even steps.
fn xs(w: &Workload, knob: Knob) -> Vec<u32> {
    let (lo, hi) = match knob {
        Knob::GpuLayers => (0, w.model.layers + 1),
        Knob::Context => (
            512.min(w.run.seq),
            w.model.max_context.unwrap_or(w.run.seq).max(w.run.seq),
        ),
    };
    let n = (hi - lo).clamp(1, MAX_POINTS - 1);
    let mut v: Vec<u32> = (0..=n)
        .map(|i| lo + ((u64::from(hi - lo) * u64::from(i)) / u64::from(n)) as u32)
        .collect();
    v.dedup();
    v
}

/// The curve of `knob` for `w`.
pub fn curve(w: &Workload, knob: Knob) -> Vec<Point> {
    xs(w, knob)
        .into_iter()
        .map(|x| {
            let mut p = w.clone();
            match knob {
                Knob::GpuLayers => p.run.gpu_layers = Some(x),
                Knob::Context => {
                    p.run.seq = x;
                    p.run.prompt = p.run.prompt.min(x);
                }
            }
            Point {
                x,
                process_bytes: memory::estimate(&p).peak.process_bytes,
                decode_tokens_per_s: speed::llm::speed(&p).decode_tokens_per_s,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::WorkloadFile;
    use std::path::Path;

    fn wl() -> Workload {
        WorkloadFile::parse(
            "[gpu]\npreset = 'rtx-4060'\n[model]\npreset = 'qwen2.5-14b'\n[run]\nengine = 'llama.cpp'\nweights = 'q4_k_m'\nseq = 16384\n",
            "t",
        )
        .unwrap()
        .resolve(Path::new("."), None)
        .unwrap()
    }

    /// More layers on the GPU: more VRAM and a faster decode; the curve crosses the 8 GB card.
    #[test]
    fn gpu_layers_trade_memory_for_speed() {
        let w = wl();
        let c = curve(&w, Knob::GpuLayers);
        assert_eq!(c.len(), 50);
        assert_eq!((c[0].x, c[49].x), (0, 49));
        for p in c.windows(2) {
            assert!(p[1].process_bytes >= p[0].process_bytes);
            assert!(p[1].decode_tokens_per_s >= p[0].decode_tokens_per_s);
        }
        let cap = w.gpu.vram_bytes;
        assert!(c[0].process_bytes < cap && c[49].process_bytes > cap);
    }

    /// A longer context: more VRAM (the KV cache) and a slower decode; sampled, not every token.
    #[test]
    fn context_costs_memory_and_speed() {
        let c = curve(&wl(), Knob::Context);
        assert!(c.len() <= MAX_POINTS as usize && c.len() > 10);
        assert_eq!(c[0].x, 512);
        assert_eq!(c.last().unwrap().x, 32768);
        assert!(c.last().unwrap().process_bytes > c[0].process_bytes);
        assert!(c.last().unwrap().decode_tokens_per_s < c[0].decode_tokens_per_s);
    }
}
