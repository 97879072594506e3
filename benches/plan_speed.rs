//! Planning speed: one estimate, and a whole plan (estimate + cheapest fitting combination +
//! largest batch + longest sequence), for workloads that fit and workloads that need a plan,
//! and llama.cpp's --fit search on its own.
//! Run: `cargo bench --bench plan_speed`.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::Path;
use vram_doctor::memory::{self, Workload, WorkloadFile};
use vram_doctor::plan;
use vram_doctor::resolve::resolve_any;

fn workload(text: &str) -> Workload {
    WorkloadFile::parse(text, "bench")
        .unwrap()
        .resolve(Path::new("."), None)
        .unwrap()
}

fn bench(c: &mut Criterion) {
    let cases = [
        (
            "inference_fits",
            "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nweights = \"q4_k_m\"\nseq = 8192\n",
        ),
        (
            "inference_needs_plan",
            "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"qwen2.5-32b\"\n[run]\nweights = \"q8_0\"\nseq = 32768\n",
        ),
        (
            "inference_needs_offload",
            "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"qwen2.5-14b\"\n[run]\nengine = \"llama-cpp\"\nweights = \"q4_k_m\"\nseq = 16384\n",
        ),
        (
            "moe_needs_cpu_experts",
            "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"qwen3-30b-a3b\"\n[run]\nengine = \"llama-cpp\"\nweights = \"q4_k_m\"\nseq = 16384\n",
        ),
        (
            "training_needs_plan",
            "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nbatch = 8\nseq = 4096\n",
        ),
        (
            "training_no_plan_fits",
            "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-70b\"\n[run]\ntask = \"training\"\nbatch = 8\nseq = 8192\n",
        ),
    ];
    for (name, text) in cases {
        let w = workload(text);
        c.bench_function(&format!("estimate/{name}"), |b| {
            b.iter(|| memory::estimate(black_box(&w)))
        });
        c.bench_function(&format!("plan/{name}"), |b| {
            b.iter(|| plan::plan(black_box(&w)))
        });
    }
    // llama.cpp's --fit search alone (plan::fit: -ngl / --n-cpu-moe / context), what the
    // planner reruns for each position of a GPU-layers or context slider.
    for (name, text) in &cases[2..4] {
        let w = workload(text);
        c.bench_function(&format!("fit/{name}"), |b| {
            b.iter(|| plan::fit::fit(black_box(&w)))
        });
    }
    // What the planner tab recomputes while a slider moves: resolve + plan_any, the path of
    // `vram-doctor plan`, for the diffusion and game kinds (the heaviest diffusion case: a
    // diffusers run that fits nowhere, so every strategy combination is tried).
    let any_cases = [
        (
            "diffusion_needs_plan",
            "[gpu]\npreset = \"rtx-4060-8gb\"\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\n",
        ),
        (
            "diffusion_fits_nowhere",
            "[gpu]\npreset = \"rtx-4060-8gb\"\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\nengine = \"diffusers\"\nwidth = 2048\nheight = 2048\nbatch = 4\n",
        ),
        (
            "game_over_budget",
            "[gpu]\npreset = \"rtx-4060-8gb\"\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"game\"\nresolution = \"4k\"\nray_tracing = true\n",
        ),
    ];
    for (name, text) in any_cases {
        let f = WorkloadFile::parse(text, "bench").unwrap();
        c.bench_function(&format!("plan_any/{name}"), |b| {
            b.iter(|| {
                let w = resolve_any(black_box(&f), Path::new("."), None).unwrap();
                plan::plan_any(&w)
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
