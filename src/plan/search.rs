//! The search for the cheapest combination of strategies that fits, and for the largest batch
//! and longest sequence that fit as the workload stands.

use super::strategy::{Risk, Strategy, candidate_groups};
use crate::memory::{self, Breakdown, Workload};

pub use crate::memory::breakdown::SAFETY_MARGIN;

/// A set of strategies and what they buy.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub strategies: Vec<Strategy>,
    pub workload: Workload,
    pub speed_factor: f64,
    pub cost: f64,
}

pub(super) fn risk_points(r: Risk) -> f64 {
    match r {
        Risk::None => 0.0,
        Risk::Low => 2.0,
        Risk::Medium => 5.0,
        Risk::High => 12.0,
    }
}

/// Cost points of one strategy on its own: quality risk, or for a shorter context or smaller
/// batch 5 points per halving (the user loses capability).
pub(super) fn points(s: &Strategy, original: &Workload) -> f64 {
    match s {
        Strategy::Context { seq } => 5.0 * (f64::from(original.run.seq) / f64::from(*seq)).log2(),
        Strategy::Batch { batch } => {
            5.0 * (f64::from(original.run.batch) / f64::from(*batch)).log2()
        }
        other => risk_points(other.risk()),
    }
}

/// The cost that ranks plans: the strategies' points plus 6 points per 100% slowdown.
fn cost(points: f64, speed: f64) -> f64 {
    points + 6.0 * (1.0 / speed - 1.0).max(0.0)
}

/// Whether a breakdown fits its card with the safety margin (the verdict's rule).
pub fn fits_with_margin(b: &Breakdown) -> bool {
    super::verdict::of_breakdown(b).fit == super::verdict::Fit::Fits
}

/// The strategies of one combination applied in group order; `None` if one of them changes
/// nothing (that combination is the same as a cheaper one without it).
fn apply_all(w: &Workload, chosen: &[&Strategy]) -> Option<Workload> {
    let mut out = w.clone();
    for s in chosen {
        out.run = s.apply(&out.run)?;
    }
    Some(out)
}

/// A combination's rank as one integer: its cost's bits in total order, then how many bits its
/// choices set (the fewer first), then the choices, so that tens of thousands of combinations
/// order as plain integers.
fn rank(cost: f64, choice: u64) -> u128 {
    let bits = cost.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    };
    (u128::from(ordered) << 64)
        | (u128::from(choice.count_ones()) << CHOICE_BITS)
        | u128::from(choice)
}

/// Bits a combination's choices take: 4 per group, at most 14 groups.
const CHOICE_BITS: u32 = 56;

/// Combinations put in order at a time: the search stops long before the last of them (the
/// training plan of `benches/plan_speed.rs` estimates 4 460 of 82 944 combinations), so only
/// the cheapest few thousand are sorted, then the next.
const RANKED_AT_ONCE: usize = 2048;

/// The cheapest candidate that fits with the margin, with its estimate.
///
/// Combinations are ranked by cost from per-option figures alone (indices, no workloads), and
/// estimated cheapest first until one fits. Each group lists its options from mild to strong, so
/// if the strongest option of every group together does not fit, nothing does, and the search
/// stops after one estimate.
pub fn cheapest_fit(w: &Workload) -> Option<(Candidate, Breakdown)> {
    let groups = candidate_groups(&w.run, w.gpu.count, w.gpu.fp8);
    let strongest: Vec<&Strategy> = groups.iter().filter_map(|g| g.last()).collect();
    let mut probe = w.clone();
    // `strict`: a strategy that changes nothing voids the combination (a cheaper one without it
    // exists); otherwise it is skipped. `host`: what the plan offloads must also fit the host's
    // RAM where it is known (the strongest options offload the most, so the quick check below
    // leaves the host out: a weaker offload may still fit it).
    let mut fits = |chosen: &[&Strategy], strict: bool, host: bool| -> Option<Breakdown> {
        let mut run = w.run.clone();
        for s in chosen {
            match s.apply(&run) {
                Some(r) => run = r,
                None if strict => return None,
                None => {}
            }
        }
        probe.run = run;
        let b = memory::estimate(&probe);
        (fits_with_margin(&b) && (!host || memory::training::host_fits(&probe))).then_some(b)
    };
    if !strongest.is_empty() && fits(&strongest, false, false).is_none() {
        return None;
    }
    // Each option's points and speed factor once per plan, not once per combination: a speed
    // factor may run the speed model (offload, paged states).
    let priced: Vec<Vec<(f64, f64)>> = groups
        .iter()
        .map(|g| {
            g.iter()
                .map(|s| (points(s, w), s.speed_factor(w)))
                .collect()
        })
        .collect();
    // The choices: 4 bits per group, 0 = none, i + 1 = option i.
    debug_assert!(groups.len() * 4 <= CHOICE_BITS as usize && groups.iter().all(|g| g.len() < 16));
    // (group, option) of each group a combination takes something of, in group order.
    let picks = |choice: u64| {
        (0..groups.len()).filter_map(move |gi| match (choice >> (4 * gi)) & 0xf {
            0 => None,
            i => Some((gi, i as usize - 1)),
        })
    };
    // (points, speed, choices) of every combination, group by group in order.
    let mut combos: Vec<(f64, f64, u64)> = vec![(0.0, 1.0, 0)];
    for (gi, options) in priced.iter().enumerate() {
        let mut next = Vec::with_capacity(combos.len() * (options.len() + 1));
        for &(pts, speed, choice) in &combos {
            next.push((pts, speed, choice));
            for (i, &(op, of)) in options.iter().enumerate() {
                next.push((pts + op, speed * of, choice | ((i as u64 + 1) << (4 * gi))));
            }
        }
        combos = next;
    }
    let mut ranks: Vec<u128> = combos
        .iter()
        .map(|&(pts, speed, choice)| rank(cost(pts, speed), choice))
        .collect();
    let mut rest: &mut [u128] = &mut ranks;
    while !rest.is_empty() {
        let n = RANKED_AT_ONCE.min(rest.len());
        if n < rest.len() {
            rest.select_nth_unstable(n - 1);
        }
        let (head, tail) = rest.split_at_mut(n);
        head.sort_unstable();
        for &r in head.iter() {
            let choice = (r as u64) & ((1 << CHOICE_BITS) - 1);
            let chosen: Vec<&Strategy> = picks(choice).map(|(g, i)| &groups[g][i]).collect();
            let Some(b) = fits(&chosen, true, true) else {
                continue;
            };
            let Some(workload) = apply_all(w, &chosen) else {
                continue;
            };
            // The same sums in the same order as when ranked.
            let (pts, speed) = picks(choice).fold((0.0, 1.0), |(p, sp), (g, i)| {
                let (op, of) = priced[g][i];
                (p + op, sp * of)
            });
            return Some((
                Candidate {
                    strategies: chosen.into_iter().cloned().collect(),
                    workload,
                    speed_factor: speed,
                    cost: cost(pts, speed),
                },
                b,
            ));
        }
        rest = tail;
    }
    None
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

    /// The least cost of a fitting combination, every combination estimated: what the search
    /// must find, whatever order it takes them in and wherever it stops early.
    fn cheapest_by_brute_force(w: &Workload) -> Option<f64> {
        let groups = candidate_groups(&w.run, w.gpu.count, w.gpu.fp8);
        let mut all: Vec<Vec<&Strategy>> = vec![Vec::new()];
        for g in &groups {
            all = all
                .iter()
                .flat_map(|c| {
                    std::iter::once(c.clone()).chain(g.iter().map(|s| {
                        let mut c = c.clone();
                        c.push(s);
                        c
                    }))
                })
                .collect();
        }
        assert!(all.len() <= 60_000, "{} combinations", all.len());
        all.iter()
            .filter_map(|chosen| {
                let x = apply_all(w, chosen)?;
                let b = memory::estimate(&x);
                (fits_with_margin(&b) && memory::training::host_fits(&x)).then(|| {
                    let p: f64 = chosen.iter().map(|s| points(s, w)).sum();
                    let speed: f64 = chosen.iter().map(|s| s.speed_factor(w)).product();
                    cost(p, speed)
                })
            })
            .min_by(f64::total_cmp)
    }

    #[test]
    fn the_search_finds_the_cheapest_fitting_combination() {
        for text in [
            "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nmethod = \"lora\"\nbatch = 2\nseq = 2048\n",
            "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"llama-3.2-3b\"\n[run]\ntask = \"training\"\nbatch = 2\nseq = 1024\n",
            "[gpu]\npreset = \"rtx-4090\"\nhost_ram_gib = 64\n[model]\npreset = \"llama-3.1-70b\"\n[run]\ntask = \"training\"\nmethod = \"qlora\"\nseq = 4096\n",
            "[gpu]\npreset = \"a100-40gb\"\ncount = 4\n[model]\npreset = \"qwen2.5-7b\"\n[run]\ntask = \"training\"\nmethod = \"lora\"\nseq = 8192\noptimizer = \"sgd\"\n",
        ] {
            let w = wl(text);
            let found = cheapest_fit(&w).map(|(c, b)| {
                assert!(fits_with_margin(&b));
                c.cost
            });
            let best = cheapest_by_brute_force(&w);
            match (found, best) {
                (Some(f), Some(b)) => assert!((f - b).abs() < 1e-9, "{f} vs {b}: {text}"),
                (f, b) => assert_eq!(f.is_some(), b.is_some(), "{f:?} vs {b:?}: {text}"),
            }
        }
    }

    #[test]
    fn ranks_order_by_cost_then_fewer_choices() {
        assert!(rank(1.0, 0xfff) < rank(2.0, 0));
        assert!(rank(-1.0, 0) < rank(0.0, 0) && rank(0.0, 0) < rank(f64::INFINITY, 0));
        assert!(rank(3.0, 0b1000) < rank(3.0, 0b11));
        assert!(rank(3.0, 0b01) < rank(3.0, 0b10));
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
    fn an_offload_plan_fits_the_host_s_ram() {
        // A 70B LoRA on one 24 GiB card: the bf16 base (141 GB) can go to a 512 GiB host, not
        // to a 64 GiB one, where the plan must find another way.
        let plan = |ram: u32| {
            let w = wl(&format!(
                "[gpu]\npreset = \"rtx-4090\"\nhost_ram_gib = {ram}\n[model]\npreset = \"llama-3.1-70b\"\n[run]\ntask = \"training\"\nmethod = \"lora\"\nseq = 1024\ncheckpointing = \"full\"\n"
            ));
            let (c, _) = cheapest_fit(&w).expect("some plan fits");
            assert!(
                memory::training::host_fits(&c.workload),
                "{:?}",
                c.strategies
            );
            c
        };
        let big = plan(512);
        assert_eq!(big.workload.run.offload, memory::Offload::OptimizerParams);
        let small = plan(64);
        assert!(
            small.workload.run.offload != memory::Offload::OptimizerParams
                || small.workload.run.method == memory::Method::Qlora,
            "{:?}",
            small.strategies
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
