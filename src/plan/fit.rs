//! llama.cpp's `--fit` (on by default in llama-server and llama-cli) run on the estimate instead
//! of a trial load. The rules, from `common/fit.cpp` (`common_params_fit_impl`) and the defaults
//! of `common/common.h` (`fit_params_target` = 1024 MiB per device, `fit_params_min_ctx` =
//! 4096):
//!
//! 1. If the projected use leaves at least `--fit-target` free on the device, nothing changes.
//! 2. Only when the context was not set (`-c 0`/absent: the model's trained context), the
//!    context shrinks first: linear interpolation of memory between `--fit-ctx` and the trained
//!    context, rounded down to a multiple of 256, never below `--fit-ctx`; if even that does not
//!    fit, the context stays at `--fit-ctx` and the layers are fitted at it.
//! 3. If `-ngl` was set by the user, `--fit` gives up ("n_gpu_layers already set by user").
//! 4. Dense models: the largest number of layers, filled back to front (the output head first,
//!    `n_layer + 1` "layers" in all), whose use stays within free − target.
//! 5. MoE models: first every routed expert in system RAM ("dense-only" layers). If all dense
//!    parts fit, dense-only layers are converted back to full layers until the device is full
//!    (step 4 of the source) — in `--n-cpu-moe` terms, the fewest layers whose experts must stay
//!    on the CPU; otherwise the largest number of dense-only layers that fit.
//!
//! The source also tries to fit part of one more layer (its attention, up or gate tensors);
//! that is within one layer of what this returns.

use crate::memory::{self, Breakdown};
use crate::types::workload::Workload;

/// `fit_params_min_ctx` (`--fit-ctx`) default, `common/common.h`.
pub const FIT_MIN_CTX: u32 = 4096;

/// What `--fit` chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    /// `-ngl` (the output head counted as the last layer).
    pub gpu_layers: u32,
    /// `--n-cpu-moe`: layers whose routed experts stay in system RAM.
    pub cpu_moe_layers: u32,
    /// Whether the run as given already leaves the target free (no change).
    pub unchanged: bool,
    /// Whether the choice meets the target (false: not even one layer does).
    pub meets_target: bool,
}

/// Free memory `--fit` sees minus what the run uses: capacity less other programs, this
/// process's context and its model, KV and compute buffers (`Breakdown::required_bytes`).
fn surplus(b: &Breakdown) -> f64 {
    b.capacity_bytes as f64 - b.required_bytes() as f64
}

fn meets(w: &Workload) -> bool {
    surplus(&memory::estimate(w)) >= w.run.fit_target_bytes as f64
}

fn with(w: &Workload, gpu_layers: u32, cpu_moe_layers: u32) -> Workload {
    let mut x = w.clone();
    x.run.gpu_layers = Some(gpu_layers);
    x.run.cpu_moe_layers = cpu_moe_layers;
    x
}

/// Largest `v` in `0..=hi` with `ok(v)`, for `ok` true up to some point; `None` if not even 0.
fn largest(hi: u32, ok: impl Fn(u32) -> bool) -> Option<u32> {
    if !ok(0) {
        return None;
    }
    let (mut lo, mut hi) = (0u32, hi);
    if ok(hi) {
        return Some(hi);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) { lo = mid } else { hi = mid }
    }
    Some(lo)
}

/// `--fit` for the run's context (steps 1, 3-5).
pub fn fit(w: &Workload) -> Fit {
    let total = w.model.layers + 1;
    let l = w.model.layers;
    if meets(w) {
        return Fit {
            gpu_layers: crate::engines::llama_cpp::memory::gpu_layers(w),
            cpu_moe_layers: w.run.cpu_moe_layers,
            unchanged: true,
            meets_target: true,
        };
    }
    let moe = w.model.moe.is_some();
    if moe && meets(&with(w, total, l)) {
        // Fewest CPU-expert layers: memory falls as more experts leave, so search the count
        // of layers whose experts stay on the GPU.
        let on_gpu = largest(l, |k| meets(&with(w, total, l - k))).unwrap_or(0);
        return Fit {
            gpu_layers: total,
            cpu_moe_layers: l - on_gpu,
            unchanged: false,
            meets_target: true,
        };
    }
    let cpu_moe = if moe { l } else { w.run.cpu_moe_layers };
    match largest(total, |k| meets(&with(w, k, cpu_moe))) {
        Some(k) => Fit {
            gpu_layers: k,
            cpu_moe_layers: if k == 0 { 0 } else { cpu_moe },
            unchanged: false,
            meets_target: true,
        },
        None => Fit {
            gpu_layers: 0,
            cpu_moe_layers: 0,
            unchanged: false,
            meets_target: false,
        },
    }
}

/// Step 2: the context `--fit` picks when `-c` is not given (llama.cpp then starts from the
/// model's trained context); `None` when the trained context is unknown or already fits.
pub fn auto_context(w: &Workload) -> Option<u32> {
    let max = w.model.max_context?;
    let at = |ctx: u32| {
        let mut x = w.clone();
        x.run.seq = ctx;
        x.run.prompt = x.run.prompt.min(ctx);
        x
    };
    let full = at(max);
    if meets(&full) || max <= FIT_MIN_CTX {
        return None;
    }
    let used = |x: &Workload| memory::estimate(x).required_bytes() as f64;
    let target = w.gpu.vram_bytes as f64 - w.run.fit_target_bytes as f64;
    let (u_max, u_min) = (used(&full), used(&at(FIT_MIN_CTX)));
    if target <= u_min || u_max <= u_min {
        return Some(FIT_MIN_CTX);
    }
    let span = f64::from(max - FIT_MIN_CTX);
    let ctx = FIT_MIN_CTX + (span * (target - u_min) / (u_max - u_min)) as u32;
    Some((ctx - ctx % 256).max(FIT_MIN_CTX))
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

    fn free_after(w: &Workload, f: &Fit) -> f64 {
        surplus(&memory::estimate(&with(w, f.gpu_layers, f.cpu_moe_layers)))
    }

    /// Step 4 of common_params_fit_impl: the largest -ngl within free − target, and one more
    /// layer would not be.
    #[test]
    fn dense_fills_layers_up_to_the_target() {
        let w = wl(
            "[gpu]\npreset = 'rtx-4060'\n[model]\npreset = 'qwen2.5-14b'\n[run]\nweights = 'q4_k_m'\nseq = 16384\n",
        );
        let f = fit(&w);
        assert!(f.meets_target && !f.unchanged);
        assert!(f.gpu_layers > 10 && f.gpu_layers < 49, "{f:?}");
        assert!(free_after(&w, &f) >= (1024 << 20) as f64);
        let one_more = Fit {
            gpu_layers: f.gpu_layers + 1,
            ..f
        };
        assert!(free_after(&w, &one_more) < (1024 << 20) as f64);
        // A larger --fit-target leaves fewer layers.
        let mut wide = w.clone();
        wide.run.fit_target_bytes = 3 << 30;
        assert!(fit(&wide).gpu_layers < f.gpu_layers);
    }

    /// Step 1: nothing changes when the target is already met.
    #[test]
    fn a_run_that_fits_is_left_alone() {
        let w = wl(
            "[gpu]\npreset = 'rtx-4090'\n[model]\npreset = 'llama-3.1-8b'\n[run]\nweights = 'q4_k_m'\nseq = 8192\n",
        );
        let f = fit(&w);
        assert!(f.unchanged && f.gpu_layers == 33 && f.cpu_moe_layers == 0);
    }

    /// Step 5: a MoE model keeps every layer on the GPU and moves experts first, the fewest
    /// layers' worth that meet the target.
    #[test]
    fn moe_moves_experts_before_layers() {
        let w = wl(
            "[gpu]\npreset = 'rtx-4060-ti-16gb'\n[model]\npreset = 'qwen3-30b-a3b'\n[run]\nweights = 'q4_k_m'\nseq = 16384\n",
        );
        let f = fit(&w);
        assert_eq!(f.gpu_layers, 49, "{f:?}");
        assert!(f.cpu_moe_layers > 0 && f.cpu_moe_layers < 48, "{f:?}");
        assert!(free_after(&w, &f) >= (1024 << 20) as f64);
        let one_less = Fit {
            cpu_moe_layers: f.cpu_moe_layers - 1,
            ..f
        };
        assert!(free_after(&w, &one_less) < (1024 << 20) as f64);
    }

    /// Step 5, second branch: when even the dense parts of every layer do not fit, layers go
    /// to the CPU with their experts already there.
    #[test]
    fn moe_on_a_small_card_drops_layers_with_experts_on_the_cpu() {
        let w = wl(
            "[gpu]\nvram_gib = 2\n[model]\npreset = 'qwen3-30b-a3b'\n[run]\nweights = 'q4_k_m'\nseq = 32768\n",
        );
        let f = fit(&w);
        assert!(f.gpu_layers < 49, "{f:?}");
        assert!(f.gpu_layers == 0 || f.cpu_moe_layers == 48, "{f:?}");
    }

    /// Step 2: with -c unset, the trained context shrinks (multiple of 256, ≥ --fit-ctx).
    #[test]
    fn auto_context_interpolates_and_rounds() {
        let w = wl(
            "[gpu]\npreset = 'rtx-4090'\n[model]\npreset = 'llama-3.1-8b'\n[run]\nweights = 'q8_0'\nseq = 4096\n",
        );
        let c = auto_context(&w).expect("131072 tokens of KV do not fit 24 GiB");
        assert!(
            (FIT_MIN_CTX..131_072).contains(&c) && c.is_multiple_of(256),
            "{c}"
        );
        let mut x = w.clone();
        x.run.seq = c;
        // Linear interpolation of a linear cost lands at most one alignment step short.
        assert!(meets(&x));
        x.run.seq = c + 2048;
        assert!(!meets(&x));
    }
}
