//! The search for the cheapest combination of strategies that fits, and for the largest batch
//! and longest sequence that fit as the workload stands.

use super::strategy::{Risk, Strategy, candidate_groups};
use crate::memory::{self, Breakdown, Workload};

/// Share of the card a plan leaves free: allocator fragmentation, a display, a driver update.
pub const SAFETY_MARGIN: f64 = 0.05;

/// A set of strategies and what they buy.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub strategies: Vec<Strategy>,
    pub workload: Workload,
    pub speed_factor: f64,
    pub cost: f64,
}

fn risk_points(r: Risk) -> f64 {
    match r {
        Risk::None => 0.0,
        Risk::Low => 2.0,
        Risk::Medium => 5.0,
        Risk::High => 12.0,
    }
}

/// The cost that ranks plans: quality risk points, plus 6 points per 100% slowdown, plus for a
/// shorter context or smaller batch 5 points per halving (the user loses capability).
fn cost(strategies: &[Strategy], original: &Workload, speed: f64) -> f64 {
    let mut c = 6.0 * (1.0 / speed - 1.0).max(0.0);
    for s in strategies {
        c += match s {
            Strategy::Context { seq } => {
                5.0 * (f64::from(original.run.seq) / f64::from(*seq)).log2()
            }
            Strategy::Batch { batch } => {
                5.0 * (f64::from(original.run.batch) / f64::from(*batch)).log2()
            }
            other => risk_points(other.risk()),
        };
    }
    c
}

/// Whether a breakdown fits its card with the safety margin.
pub fn fits_with_margin(b: &Breakdown) -> bool {
    (b.required_bytes() as f64) <= b.capacity_bytes as f64 * (1.0 - SAFETY_MARGIN)
}

/// Every combination (at most one strategy per group), cheapest first.
pub fn candidates(w: &Workload) -> Vec<Candidate> {
    let groups = candidate_groups(&w.run, w.gpu.count, w.gpu.fp8);
    let mut out = vec![Candidate {
        strategies: vec![],
        workload: w.clone(),
        speed_factor: 1.0,
        cost: 0.0,
    }];
    for g in &groups {
        let mut next = Vec::with_capacity(out.len() * (g.len() + 1));
        for c in &out {
            next.push(c.clone());
            for s in g {
                if let Some(run) = s.apply(&c.workload.run) {
                    let mut strategies = c.strategies.clone();
                    strategies.push(s.clone());
                    let speed = c.speed_factor * s.speed_factor(&c.workload.run);
                    let workload = Workload {
                        run,
                        ..c.workload.clone()
                    };
                    next.push(Candidate {
                        cost: cost(&strategies, w, speed),
                        strategies,
                        workload,
                        speed_factor: speed,
                    });
                }
            }
        }
        out = next;
    }
    out.sort_by(|a, b| {
        a.cost
            .total_cmp(&b.cost)
            .then(a.strategies.len().cmp(&b.strategies.len()))
    });
    out
}

/// The cheapest candidate that fits with the margin, with its estimate.
pub fn cheapest_fit(w: &Workload) -> Option<(Candidate, Breakdown)> {
    candidates(w).into_iter().find_map(|c| {
        let b = memory::estimate(&c.workload);
        fits_with_margin(&b).then_some((c, b))
    })
}

/// Largest value in `1..=hi` for which `fits` holds, assuming it is monotone; `None` if even 1
/// does not fit.
fn largest(hi: u32, fits: impl Fn(u32) -> bool) -> Option<u32> {
    if !fits(1) {
        return None;
    }
    let (mut lo, mut hi) = (1u32, hi.max(1));
    if fits(hi) {
        return Some(hi);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) { lo = mid } else { hi = mid }
    }
    Some(lo)
}

/// Largest batch that fits with the margin, everything else as given (capped at 65 536).
pub fn max_batch(w: &Workload) -> Option<u32> {
    largest(65_536, |b| {
        let mut x = w.clone();
        x.run.batch = b;
        fits_with_margin(&memory::estimate(&x))
    })
}

/// Longest sequence that fits with the margin, up to the model's trained context.
pub fn max_seq(w: &Workload) -> Option<u32> {
    let cap = w.model.max_context.unwrap_or(1 << 20);
    largest(cap, |s| {
        let mut x = w.clone();
        x.run.seq = s;
        x.run.prompt = s;
        fits_with_margin(&memory::estimate(&x))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::WorkloadFile;
    use std::path::Path;

    fn wl(text: &str) -> Workload {
        WorkloadFile::parse(text, "t")
            .unwrap()
            .resolve(Path::new("."), None)
            .unwrap()
    }

    #[test]
    fn largest_binary_search() {
        assert_eq!(largest(100, |x| x <= 37), Some(37));
        assert_eq!(largest(100, |_| true), Some(100));
        assert_eq!(largest(100, |_| false), None);
    }

    #[test]
    fn full_finetune_of_8b_on_24gb_finds_a_plan() {
        let w = wl(
            "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nbatch = 4\nseq = 2048\n",
        );
        assert!(!memory::estimate(&w).fits());
        let (c, b) = cheapest_fit(&w).expect("some plan fits");
        assert!(fits_with_margin(&b));
        assert!(!c.strategies.is_empty());
        // 8B full fine-tuning needs ≥ 16 B/param; only adapters fit 24 GiB.
        assert!(
            c.strategies
                .iter()
                .any(|s| matches!(s, Strategy::Method { .. })),
            "{:?}",
            c.strategies
        );
    }

    #[test]
    fn max_batch_and_seq_fit_and_one_more_does_not() {
        let w = wl(
            "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nweights = \"q4_k_m\"\nseq = 8192\n",
        );
        let b = max_batch(&w).unwrap();
        let mut x = w.clone();
        x.run.batch = b;
        assert!(fits_with_margin(&memory::estimate(&x)));
        x.run.batch = b + 1;
        assert!(!fits_with_margin(&memory::estimate(&x)));
        let s = max_seq(&w).unwrap();
        assert!(s >= 8192);
    }
}
