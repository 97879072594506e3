//! Property tests: diffusion memory never shrinks when the image, the batch or the video grows,
//! and a game's VRAM never shrinks when resolution or texture quality goes up.

use proptest::prelude::*;
use vram_doctor::memory::diffusion::stages::{decode_bytes, denoise_bytes};
use vram_doctor::memory::diffusion::{
    Bus, CpuOffload, DiffusionCatalog, DiffusionWorkload, VramMode, estimate,
};
use vram_doctor::memory::game::{
    GameCatalog, GameRun, GameWorkload, Resolution, TextureQuality, Upscaler,
};
use vram_doctor::types::options::{Attention, Engine};
use vram_doctor::types::workload::GpuTarget;

fn gpu(gib: f64) -> GpuTarget {
    GpuTarget::with_capacity(vram_doctor::units::gib_to_bytes(gib), 1)
}

fn model_ids() -> Vec<String> {
    DiffusionCatalog::get()
        .models
        .iter()
        .map(|m| m.id.clone())
        .collect()
}

/// A run whose placement does not depend on how full the card is, so the peak can only grow
/// with the work: diffusers without offload or with model offload, or ComfyUI --highvram. The
/// card is large enough that ComfyUI's adaptive steps (running cond and uncond one after the
/// other, loading partially) never trigger; those deliberately trade memory for time.
fn workload(model: usize, engine: u8, eager: bool, tiled: bool) -> DiffusionWorkload {
    let ids = model_ids();
    let mut w = vram_doctor::resolve::diffusion::for_preset(
        gpu(1.0e7),
        Bus::default(),
        &ids[model % ids.len()],
    )
    .unwrap();
    match engine % 3 {
        0 => w.run.engine = Engine::Diffusers,
        1 => {
            w.run.engine = Engine::Diffusers;
            w.run.cpu_offload = CpuOffload::Model;
        }
        _ => {
            w.run.engine = Engine::ComfyUi;
            w.run.vram_mode = VramMode::High;
        }
    }
    w.run.attention = if eager {
        Attention::Eager
    } else {
        Attention::Sdpa
    };
    w.run.vae_tiling = tiled;
    w.run.frames = 1;
    w
}

/// `run` at a smaller resolution.
fn run_small(run: &GameRun, w: u32, h: u32) -> GameRun {
    GameRun {
        resolution: Resolution {
            width: w,
            height: h,
        },
        ..run.clone()
    }
}

fn grown(w: &DiffusionWorkload, dw: u32, dh: u32, db: u32, df: u32) -> DiffusionWorkload {
    let mut g = w.clone();
    g.run.width += 8 * dw;
    g.run.height += 8 * dh;
    g.run.batch += db;
    if w.model.kind == vram_doctor::memory::diffusion::ModelKind::Video {
        g.run.frames += df;
    }
    g
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn diffusion_peak_never_shrinks_as_the_work_grows(
        model in 0usize..64, engine in 0u8..3, eager: bool, tiled: bool,
        w8 in 8u32..160, h8 in 8u32..160, batch in 1u32..5, frames in 0u32..40,
        dw in 0u32..40, dh in 0u32..40, db in 0u32..3, df in 0u32..20,
    ) {
        let mut w = workload(model, engine, eager, tiled);
        w.run.width = 8 * w8;
        w.run.height = 8 * h8;
        w.run.batch = batch;
        if w.model.kind == vram_doctor::memory::diffusion::ModelKind::Video {
            w.run.frames = 1 + 4 * frames;
        }
        let g = grown(&w, dw, dh, db, df);
        let (a, b) = (estimate(&w), estimate(&g));
        prop_assert!(b.peak.tensors_bytes >= a.peak.tensors_bytes, "{} → {}", a.peak.tensors_bytes, b.peak.tensors_bytes);
        prop_assert!(b.peak.reserved_bytes + 1 >= a.peak.reserved_bytes);
        // The stage activations grow for every engine and mode.
        prop_assert!(denoise_bytes(&g) >= denoise_bytes(&w));
        prop_assert!(decode_bytes(&g, f64::from(g.run.batch), false) >= decode_bytes(&w, f64::from(w.run.batch), false));
    }

    #[test]
    fn game_vram_never_shrinks_with_resolution_or_texture_quality(
        game in 0usize..64, w in 640u32..7680, h in 480u32..4320, dw in 0u32..2000, dh in 0u32..2000,
        tq in 0usize..4, up in 0usize..4, rt: bool, fg: bool,
    ) {
        let games = &GameCatalog::get().games;
        let g = games[game % games.len()].clone();
        let q = [TextureQuality::Low, TextureQuality::Medium, TextureQuality::High, TextureQuality::Ultra];
        let run = GameRun {
            resolution: Resolution { width: w, height: h },
            texture_quality: q[tq],
            ray_tracing: rt,
            frame_generation: fg,
            upscaler: [Upscaler::None, Upscaler::Quality, Upscaler::Balanced, Upscaler::Performance][up],
            other_processes_bytes: 0,
        };
        let wl = GameWorkload { gpu: gpu(16.0), game: None, run: run.clone() };
        let bigger = GameRun { resolution: Resolution { width: w + dw, height: h + dh }, ..run.clone() };
        prop_assert!(wl.parts_at(&bigger).total() >= wl.parts_at(&run).total());
        if tq < 3 {
            let better = GameRun { texture_quality: q[tq + 1], ..run.clone() };
            prop_assert!(wl.parts_at(&better).total() > wl.parts_at(&run).total());
        }
        let on = GameRun { ray_tracing: true, frame_generation: true, ..run.clone() };
        let off = GameRun { ray_tracing: false, frame_generation: false, ..run };
        prop_assert!(wl.parts_at(&on).total() > wl.parts_at(&off).total());
        // A catalog title, fitted to its review measurements, still grows with resolution.
        let titled = GameWorkload { game: Some(g), ..wl };
        prop_assert!(titled.parts_at(&bigger).total() >= titled.parts_at(&run_small(&bigger, w, h)).total() - 1e-9);
    }
}
