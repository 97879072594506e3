//! The planner's split against llama.cpp's own `--fit`, case by case.
//!
//! The oracle below follows `common/fit.cpp` (`common_params_fit_impl`, ggml-org/llama.cpp)
//! step by step, as the source does it — the method of false position over the projected
//! memory of trial layouts, filling layers back to front, MoE layers first "dense-only" (every
//! routed expert in system RAM) and then converted back to full layers — with the projected
//! memory of a layout taken from the planner's estimate (`memory::estimate`, what
//! `common_get_device_memory_data` measures with a no-alloc load: model + context + compute
//! buffers). `plan::fit::fit` searches differently (a bisection on the same rules), so the two
//! agreeing within one layer checks the rules, not a copy of them. Each case names the rule it
//! exercises.

use vram_doctor::memory::{self, Workload, WorkloadFile};
use vram_doctor::plan::fit::{self, Fit};

fn wl(gpu: &str, model: &str, weights: &str, seq: u32) -> Workload {
    WorkloadFile::parse(
        &format!(
            "[gpu]\n{gpu}\n[model]\npreset = '{model}'\n[run]\nengine = 'llama.cpp'\nweights = '{weights}'\nseq = {seq}\n"
        ),
        "case",
    )
    .unwrap()
    .resolve(std::path::Path::new("."), None)
    .unwrap()
}

/// Device memory a layout uses beyond what `--fit` may fill: `mem - target` in the source's
/// terms (target = free − margin), from the estimate of `-ngl ngl` with the experts of
/// `cpu_moe` layers in system RAM.
fn over(w: &Workload, ngl: u32, cpu_moe: u32) -> i64 {
    let mut x = w.clone();
    x.run.gpu_layers = Some(ngl);
    x.run.cpu_moe_layers = cpu_moe;
    let b = memory::estimate(&x);
    b.required_bytes() as i64 - (b.capacity_bytes as i64 - w.run.fit_target_bytes as i64)
}

/// `--n-cpu-moe` for `n_layer` layers on the GPU of which `n_part` are dense-only. The source
/// overrides the experts of the partial layers it places (`set_ngl_tensor_split_tbo`); the
/// planner's `--n-cpu-moe N` takes the experts of layers `0..N`, which with `-ngl n_layer`
/// covers the `n_layer_cpu = n_layer_total + 1 − n_layer` CPU layers first. Per layer the bytes
/// are the same, so the memory is.
fn cpu_moe_of(w: &Workload, n_layer: u32, n_part: u32) -> u32 {
    let total = w.model.layers + 1;
    if n_layer == 0 {
        // Nothing on the GPU: no expert override means anything.
        return 0;
    }
    (total - n_layer + n_part).min(w.model.layers)
}

/// One false-position search of the source: `lo` fits, `hi` does not; returns the largest
/// count that fits. `mem(k)` is `over` for `k`.
fn false_position(mut lo: u32, mut hi: u32, mem: impl Fn(u32) -> i64) -> u32 {
    let (mut m_lo, mut m_hi) = (mem(lo), mem(hi));
    while hi - lo > 1 {
        let delta = hi - lo;
        let headroom = m_hi - m_lo;
        let step = if headroom > 0 {
            (i64::from(delta) * (-m_lo) / headroom) as u32
        } else {
            delta - 1
        };
        let test = lo + step.clamp(1, delta - 1);
        let m = mem(test);
        if m <= 0 {
            (lo, m_lo) = (test, m);
        } else {
            (hi, m_hi) = (test, m);
        }
    }
    lo
}

/// `common_params_fit_impl` for one device: (`-ngl`, `--n-cpu-moe`), or `None` when nothing
/// changes (step 1).
fn oracle(w: &Workload) -> Option<(u32, u32)> {
    let total = w.model.layers + 1;
    // Step 1: the initial parameters (every layer) leave the margin free.
    if over(w, total, 0) <= 0 {
        return None;
    }
    let moe = w.model.moe.is_some();
    if !moe {
        // Step 3, dense: fill full layers back to front.
        return Some((false_position(0, total, |k| over(w, k, 0)), 0));
    }
    // Step 3, MoE: dense-only layers back to front (the output layer always full, so
    // n_part = n_layer − 1 for the last device).
    let dense_only = |k: u32| over(w, k, cpu_moe_of(w, k, k.saturating_sub(1)));
    let n_layer = if dense_only(total) <= 0 {
        total
    } else {
        false_position(0, total, dense_only)
    };
    // The surplus with every expert in system RAM decides whether step 4 runs.
    if n_layer < total || over(w, total, w.model.layers) > 0 {
        return Some((n_layer, cpu_moe_of(w, n_layer, n_layer.saturating_sub(1))));
    }
    // Step 4: convert dense-only layers to full layers until the device is full.
    let full = |n_full: u32| over(w, total, cpu_moe_of(w, total, total - n_full));
    let n_full = if full(total) <= 0 {
        total
    } else {
        false_position(1, total, full)
    };
    Some((total, cpu_moe_of(w, total, total - n_full)))
}

fn check(w: &Workload, rule: &str) -> Fit {
    let f = fit::fit(w);
    match oracle(w) {
        None => assert!(f.unchanged, "{rule}: --fit changes nothing, planner {f:?}"),
        Some((ngl, cpu_moe)) => {
            assert!(!f.unchanged, "{rule}: --fit would split, planner {f:?}");
            assert!(
                f.gpu_layers.abs_diff(ngl) <= 1 && f.cpu_moe_layers.abs_diff(cpu_moe) <= 1,
                "{rule}: --fit -ngl {ngl} --n-cpu-moe {cpu_moe}, planner {f:?}"
            );
        }
    }
    f
}

/// Step 1 (`common_params_fit_impl`: "will leave … >= … MiB of free device memory, no changes
/// needed"): a model that fits with the 1024 MiB `--fit-target` is left alone.
#[test]
fn step_1_a_run_that_leaves_the_margin_is_unchanged() {
    for (gpu, model, weights, seq) in [
        ("preset = 'rtx-4090'", "llama-3.1-8b", "q4_k_m", 8192),
        ("preset = 'rtx-3060-12gb'", "qwen2.5-7b", "q4_k_m", 4096),
        ("preset = 'rtx-4090'", "qwen3-30b-a3b", "q4_k_m", 4096),
    ] {
        let f = check(&wl(gpu, model, weights, seq), "step 1");
        assert!(f.unchanged && f.cpu_moe_layers == 0);
    }
}

/// Step 3, dense ("filling dense layers back-to-front"; the output layer is the last and is
/// placed first, `-ngl` counts it): several cards and contexts.
#[test]
fn step_3_dense_layers_fill_back_to_front() {
    let mut seen = Vec::new();
    for (gpu, model, weights, seq) in [
        ("preset = 'rtx-4060'", "qwen2.5-14b", "q4_k_m", 4096),
        ("preset = 'rtx-4060'", "qwen2.5-14b", "q4_k_m", 16384),
        ("preset = 'rtx-4060'", "qwen2.5-14b", "q4_k_m", 32768),
        ("preset = 'rtx-2060'", "llama-3.1-8b", "q8_0", 8192),
        ("preset = 'rtx-3060-12gb'", "qwen2.5-32b", "q4_k_m", 8192),
        ("preset = 'rtx-4090'", "llama-3.3-70b", "q4_k_m", 16384),
        ("vram_gib = 10", "gemma-2-27b", "q4_k_m", 8192),
    ] {
        let w = wl(gpu, model, weights, seq);
        let f = check(&w, "step 3 dense");
        assert!(f.gpu_layers < w.model.layers + 1 && f.cpu_moe_layers == 0);
        seen.push(f.gpu_layers);
    }
    // A longer context leaves fewer layers on the same card (its KV cache grows per layer).
    assert!(seen[0] > seen[1] && seen[1] > seen[2], "{seen:?}");
}

/// Step 3 then step 4, MoE ("with only dense weights in device memory there is a total
/// surplus", then "converting dense-only layers to full layers"): every layer on the GPU and
/// the fewest layers' experts in system RAM.
#[test]
fn step_4_moe_keeps_layers_and_moves_the_fewest_experts() {
    for (gpu, model, weights, seq) in [
        (
            "preset = 'rtx-4060-ti-16gb'",
            "qwen3-30b-a3b",
            "q4_k_m",
            16384,
        ),
        ("preset = 'rtx-4060'", "qwen3-30b-a3b", "q4_k_m", 8192),
        ("preset = 'rtx-3060-12gb'", "qwen3-30b-a3b", "q8_0", 32768),
        ("preset = 'rtx-4090'", "mixtral-8x7b", "q4_k_m", 8192),
    ] {
        let w = wl(gpu, model, weights, seq);
        let f = check(&w, "step 4 MoE");
        assert_eq!(f.gpu_layers, w.model.layers + 1, "{model} on {gpu}: {f:?}");
        assert!(f.cpu_moe_layers > 0 && f.cpu_moe_layers <= w.model.layers);
    }
}

/// Step 3, MoE with a deficit even dense-only ("there is still a total deficit"): the source
/// stops after filling dense-only layers, so layers leave the GPU with their experts already in
/// system RAM.
#[test]
fn step_3_moe_without_room_for_the_dense_parts_drops_layers() {
    let mut partial = 0;
    for (gpu, model, seq) in [
        ("vram_gib = 2", "qwen3-30b-a3b", 32768),
        ("vram_gib = 4", "qwen3-30b-a3b", 32768),
        ("preset = 'rtx-4060'", "qwen3-235b-a22b", 8192),
    ] {
        let w = wl(gpu, model, "q4_k_m", seq);
        let f = check(&w, "step 3 MoE deficit");
        assert!(f.gpu_layers < w.model.layers + 1, "{f:?}");
        partial += usize::from(f.gpu_layers > 0);
    }
    assert!(partial > 0, "no case kept some layers on the GPU");
}

/// `--fit-target` (`common/common.h` `fit_params_target`, 1024 MiB by default; `-fitt`): a
/// wider margin leaves fewer layers, and the oracle agrees at each margin.
#[test]
fn fit_target_moves_the_split() {
    let mut w = wl("preset = 'rtx-4060'", "qwen2.5-14b", "q4_k_m", 8192);
    let base = check(&w, "--fit-target 1024").gpu_layers;
    w.run.fit_target_bytes = 3 << 30;
    let wide = check(&w, "--fit-target 3072").gpu_layers;
    assert!(wide < base, "{wide} vs {base}");
}

/// Step 2 ("try reducing memory use by reducing the context size", only when `-c` is unset):
/// llama.cpp starts from the trained context and interpolates down to what fits, in steps of
/// 256, never below `--fit-ctx` (4096); the planner says so, and at that context the whole
/// model meets the target while 2048 more tokens would not.
#[test]
fn step_2_context_shrinks_first_when_c_is_unset() {
    let w = wl("preset = 'rtx-4090'", "llama-3.1-8b", "q8_0", 8192);
    let ctx = fit::auto_context(&w).expect("131072 tokens of KV do not fit 24 GiB");
    assert!(ctx.is_multiple_of(256) && ctx >= fit::FIT_MIN_CTX, "{ctx}");
    let at = |c: u32| {
        let mut x = w.clone();
        x.run.seq = c;
        x
    };
    assert!(
        oracle(&at(ctx)).is_none(),
        "the shrunk context needs no split"
    );
    assert!(oracle(&at(ctx + 2048)).is_some());
    // A model too large for any context: the context stays at --fit-ctx and the layers are
    // fitted there (the source goes on to step 3).
    let big = wl("preset = 'rtx-4060'", "qwen2.5-14b", "q4_k_m", 8192);
    assert_eq!(fit::auto_context(&big), Some(fit::FIT_MIN_CTX));
    let mut min_ctx = big.clone();
    min_ctx.run.seq = fit::FIT_MIN_CTX;
    check(&min_ctx, "step 2 then 3");
}
