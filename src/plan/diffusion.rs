//! Planning for diffusion workloads: the cheapest set of changes that makes a run fit (with its
//! speed and quality cost), and the largest resolution and batch that fit.
//!
//! "Fits" means the whole run stays in VRAM without streaming weights: ComfyUI's partial
//! loading runs, but every step then copies the rest of the model over PCIe, which the plan
//! counts as a speed cost like any other strategy.

use crate::engines::comfyui::memory::{ComfyMemory, MemoryMode};
use crate::memory::diffusion::residency::{Stage, place};
use crate::memory::diffusion::{CpuOffload, DiffusionWorkload, ModelKind, VramMode, estimate};
use crate::plan::verdict::{self, Fit, diffusion_fits_with_margin, streams_weights};
use crate::types::dtype::WeightFormat;
use crate::types::message::{Arg, Message, Sentences};
use crate::types::options::Engine;
use serde::{Deserialize, Serialize};

/// One change to a diffusion run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    TiledVae,
    Fp8TextEncoders,
    TextEncodersOnCpu,
    Fp8Weights,
    GgufQ8,
    GgufQ4,
    Nf4Weights,
    ModelOffload,
    SequentialOffload,
    LowVram,
    BatchOne,
}

impl Strategy {
    pub const ALL: [Strategy; 11] = [
        Strategy::TiledVae,
        Strategy::Fp8TextEncoders,
        Strategy::TextEncodersOnCpu,
        Strategy::Fp8Weights,
        Strategy::GgufQ8,
        Strategy::GgufQ4,
        Strategy::Nf4Weights,
        Strategy::ModelOffload,
        Strategy::SequentialOffload,
        Strategy::LowVram,
        Strategy::BatchOne,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Strategy::TiledVae => "tiled VAE decode",
            Strategy::Fp8TextEncoders => "fp8 text encoders",
            Strategy::TextEncodersOnCpu => "text encoders on the CPU",
            Strategy::Fp8Weights => "fp8 (e4m3) model weights",
            Strategy::GgufQ8 => "GGUF Q8_0 model weights",
            Strategy::GgufQ4 => "GGUF Q4_K_S model weights",
            Strategy::Nf4Weights => "bitsandbytes NF4 model weights",
            Strategy::ModelOffload => "enable_model_cpu_offload()",
            Strategy::SequentialOffload => "enable_sequential_cpu_offload()",
            Strategy::LowVram => "ComfyUI --lowvram",
            Strategy::BatchOne => "batch of 1",
        }
    }

    /// Quality given up, in rough "noticeable steps" (0 = none): quantization papers and the
    /// diffusers quantization blog's side-by-sides find 8-bit formats hard to tell apart and
    /// 4-bit ones visibly softer in fine detail.
    pub fn quality_cost(self) -> f64 {
        match self {
            Strategy::Fp8TextEncoders | Strategy::GgufQ8 | Strategy::Fp8Weights => 0.1,
            Strategy::GgufQ4 | Strategy::Nf4Weights => 0.5,
            Strategy::TiledVae => 0.05,
            _ => 0.0,
        }
    }

    /// Slowdown the speed model (`speed::diffusion`: FLOPs, dequantization, streaming, VAE
    /// decode, offload loads) does not see: CPU text encoding takes seconds per prompt, and a
    /// smaller batch gives up the parallelism of a larger one [derived].
    pub fn fixed_slowdown(self) -> f64 {
        match self {
            Strategy::TextEncodersOnCpu => 1.1,
            Strategy::BatchOne => 1.15,
            _ => 1.0,
        }
    }

    /// Whether the strategy applies to this run (and changes something).
    pub fn applies(self, w: &DiffusionWorkload) -> bool {
        let r = &w.run;
        let comfy = r.engine != Engine::Diffusers;
        let big_te = w.text_encoders.iter().any(|t| t.params > 1e9);
        let wt = r.weights;
        match self {
            Strategy::TiledVae => r.vae_decode && !r.vae_tiling && !r.tiny_vae,
            Strategy::Fp8TextEncoders => {
                big_te && r.text_encoder_weights.iter().any(|f| !f.is_quantized())
            }
            Strategy::TextEncodersOnCpu => !r.text_encoder_on_cpu && !w.text_encoders.is_empty(),
            Strategy::Fp8Weights => !wt.is_quantized(),
            Strategy::GgufQ8 | Strategy::GgufQ4 => {
                comfy && !wt.is_gguf() && w.model.kind != ModelKind::Unet
            }
            Strategy::Nf4Weights => !comfy && !wt.is_quantized(),
            Strategy::ModelOffload => !comfy && r.cpu_offload == CpuOffload::None,
            Strategy::SequentialOffload => !comfy && r.cpu_offload != CpuOffload::Sequential,
            // A no-op with dynamic VRAM (comfy/cli_args.py `--lowvram` help).
            Strategy::LowVram => {
                comfy
                    && r.vram_mode == VramMode::Normal
                    && w.comfy_memory()
                        .is_some_and(|m| m.mode == MemoryMode::Classic)
            }
            Strategy::BatchOne => r.batch > 1,
        }
    }

    fn weight_change(self) -> bool {
        matches!(
            self,
            Strategy::Fp8Weights | Strategy::GgufQ8 | Strategy::GgufQ4 | Strategy::Nf4Weights
        )
    }

    fn offload_change(self) -> bool {
        matches!(
            self,
            Strategy::ModelOffload | Strategy::SequentialOffload | Strategy::LowVram
        )
    }

    /// The run with this change applied.
    pub fn apply(self, w: &mut DiffusionWorkload) {
        let r = &mut w.run;
        match self {
            Strategy::TiledVae => r.vae_tiling = true,
            Strategy::Fp8TextEncoders => {
                for (f, t) in r.text_encoder_weights.iter_mut().zip(&w.text_encoders) {
                    if t.params > 1e9 {
                        *f = WeightFormat::Fp8;
                    }
                }
            }
            Strategy::TextEncodersOnCpu => r.text_encoder_on_cpu = true,
            Strategy::Fp8Weights => r.weights = WeightFormat::Fp8,
            Strategy::GgufQ8 => r.weights = "q8_0".parse().unwrap_or(WeightFormat::Fp8),
            Strategy::GgufQ4 => r.weights = "q4_k_s".parse().unwrap_or(WeightFormat::Fp8),
            Strategy::Nf4Weights => r.weights = WeightFormat::Nf4,
            Strategy::ModelOffload => r.cpu_offload = CpuOffload::Model,
            Strategy::SequentialOffload => r.cpu_offload = CpuOffload::Sequential,
            Strategy::LowVram => r.vram_mode = VramMode::Low,
            Strategy::BatchOne => r.batch = 1,
        }
    }
}

/// Slowdown from weights streamed over the bus every step (`speed::diffusion`).
pub fn streaming_slowdown(w: &DiffusionWorkload) -> f64 {
    let t = crate::speed::diffusion::timing_for_ranking(w);
    if t.stream_s <= 0.0 {
        return 1.0;
    }
    t.step_s() / t.compute_s.max(1e-3)
}

/// The plan for a diffusion run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiffusionPlan {
    /// The run fits as given, without streaming weights.
    pub fits_as_is: bool,
    /// The run as given still completes by streaming weights (ComfyUI partial load, offload).
    pub runs_streaming: bool,
    /// The changes, cheapest first; empty when none is needed or none helps.
    pub strategies: Vec<Strategy>,
    pub labels: Vec<String>,
    /// Run time relative to the run as given would take on a big enough card (1.0 = same).
    pub speed_factor: f64,
    pub quality_note: String,
    /// Memory the card must hold with the plan applied.
    pub required_bytes: u64,
    /// This process's peak with the plan applied (nvidia-smi's figure).
    pub process_bytes: u64,
    pub capacity_bytes: u64,
    /// Largest width × height (same aspect, multiples of 64) and batch that fit with the plan.
    pub max_width: u32,
    pub max_height: u32,
    pub max_batch: u32,
    pub why: Sentences,
    /// The stage whose memory is the peak of the run as given (text encoding, denoising or
    /// the VAE decode).
    pub peak_stage: Stage,
    /// The stage that peaks with the plan applied.
    pub planned_peak_stage: Stage,
    /// ComfyUI's memory mode the plan assumes, and why (absent for diffusers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comfyui_memory: Option<ComfyMemory>,
}

/// Fits whole in VRAM with the safety margin free (the verdict's rule), or, when `streamed`
/// bytes per step may be streamed, runs streaming no more than that: a run that streams fills
/// what ComfyUI finds free by design, so its margin is ComfyUI's own reserve.
fn fits_streaming_at_most(w: &DiffusionWorkload, streamed: f64) -> bool {
    if !streams_weights(streamed) {
        return diffusion_fits_with_margin(w);
    }
    estimate(w).fits() && !streams_weights(place(w).streamed_bytes - streamed)
}

/// Seconds per image of `planned`, the run with the strategies `set` applied
/// (`speed::diffusion`, times the slowdowns it does not model).
pub fn run_seconds(planned: &DiffusionWorkload, set: &[Strategy]) -> f64 {
    let t = crate::speed::diffusion::timing_for_ranking(planned);
    crate::speed::diffusion::seconds_per_image(&t, planned)
        * set.iter().map(|s| s.fixed_slowdown()).product::<f64>()
}

/// Seconds per image of the run as given on a card that holds it whole: no weights streamed or
/// loaded per call.
fn ideal_seconds(base: &DiffusionWorkload) -> f64 {
    let t = crate::speed::diffusion::Timing {
        stream_s: 0.0,
        load_s: 0.0,
        ..crate::speed::diffusion::timing_for_ranking(base)
    };
    crate::speed::diffusion::seconds_per_image(&t, base)
}

/// Slowdown (against the run as given on a big enough card) and quality cost of a set of
/// strategies applied to `base`.
fn cost(base: &DiffusionWorkload, set: &[Strategy]) -> (DiffusionWorkload, f64, f64) {
    let w = planned(base, set);
    let speed = run_seconds(&w, set) / ideal_seconds(base).max(1e-9);
    let quality = set.iter().map(|s| s.quality_cost()).sum::<f64>();
    (w, speed, quality)
}

/// The run with a plan's strategies applied.
pub fn planned(base: &DiffusionWorkload, set: &[Strategy]) -> DiffusionWorkload {
    let mut w = base.clone();
    for s in set {
        s.apply(&mut w);
    }
    w
}

/// The largest scale of the run's width and height (multiples of 64) that fits as planned,
/// streaming no more weights than the plan does.
fn max_size(w: &DiffusionWorkload) -> (u32, u32) {
    let streamed = place(w).streamed_bytes;
    let aspect = f64::from(w.run.height) / f64::from(w.run.width);
    let at = |width: u32| {
        let mut t = w.clone();
        t.run.width = width;
        t.run.height = ((f64::from(width) * aspect / 64.0).round() as u32).max(1) * 64;
        t
    };
    let (mut lo, mut hi) = (0u32, 16384 / 64);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits_streaming_at_most(&at(mid * 64), streamed) {
            lo = mid
        } else {
            hi = mid - 1
        }
    }
    if lo == 0 {
        return (0, 0);
    }
    let t = at(lo * 64);
    (t.run.width, t.run.height)
}

fn max_batch(w: &DiffusionWorkload) -> u32 {
    let streamed = place(w).streamed_bytes;
    let at = |b: u32| {
        let mut t = w.clone();
        t.run.batch = b;
        t
    };
    let (mut lo, mut hi) = (0u32, 256u32);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits_streaming_at_most(&at(mid), streamed) {
            lo = mid
        } else {
            hi = mid - 1
        }
    }
    lo
}

/// The cheapest plan that fits: every combination of up to three applicable strategies (one
/// weight format, one offload mode at most), ranked by slowdown plus quality given up.
pub fn plan(w: &DiffusionWorkload) -> DiffusionPlan {
    let base_b = estimate(w);
    let capacity = w.gpu.vram_bytes;
    // The verdict on the run as given: fits with the margin, runs only by streaming weights
    // (not merely inside the safety margin), or neither.
    let as_is = verdict::of_diffusion(w).fit;
    let fits_as_is = as_is == Fit::Fits;
    let runs_streaming = matches!(as_is, Fit::Streams { .. });
    let mut best: Option<(Vec<Strategy>, DiffusionWorkload, f64, f64)> = None;
    if fits_as_is {
        best = Some((Vec::new(), w.clone(), 1.0, 0.0));
    } else {
        let cands: Vec<Strategy> = Strategy::ALL.into_iter().filter(|s| s.applies(w)).collect();
        // Running as is, streaming weights, competes with the changes on its slowdown.
        let mut sets: Vec<Vec<Strategy>> = if runs_streaming {
            vec![Vec::new()]
        } else {
            Vec::new()
        };
        let n = cands.len();
        for i in 0..n {
            sets.push(vec![cands[i]]);
            for j in i + 1..n {
                sets.push(vec![cands[i], cands[j]]);
                for k in j + 1..n {
                    sets.push(vec![cands[i], cands[j], cands[k]]);
                }
            }
        }
        for set in sets {
            if set.iter().filter(|s| s.weight_change()).count() > 1
                || set.iter().filter(|s| s.offload_change()).count() > 1
            {
                continue;
            }
            let (t, speed, quality) = cost(w, &set);
            let streams = place(&t).streamed_bytes;
            let ok = fits_streaming_at_most(&t, streams);
            if !ok {
                continue;
            }
            let score = (speed - 1.0) + quality;
            if best
                .as_ref()
                .is_none_or(|b| score < (b.2 - 1.0) + b.3 - 1e-9)
            {
                best = Some((set, t, speed, quality));
            }
        }
    }
    let Some((set, planned, speed, quality)) = best else {
        let (mw, mh) = max_size(w);
        return DiffusionPlan {
            capacity_bytes: capacity,
            required_bytes: base_b.required_bytes(),
            process_bytes: base_b.peak.process_bytes,
            speed_factor: 1.0,
            max_width: mw,
            max_height: mh,
            max_batch: max_batch(w),
            why: Sentences::one(Message::new("diffusion.why.none")),
            peak_stage: place(w).peak,
            planned_peak_stage: place(w).peak,
            comfyui_memory: w.comfy_memory(),
            ..Default::default()
        };
    };
    let (mw, mh) = max_size(&planned);
    let quality_note = if quality == 0.0 {
        "no quality change".to_string()
    } else if quality < 0.3 {
        "8-bit weights: differences are hard to see".to_string()
    } else {
        "4-bit weights: fine detail can soften".to_string()
    };
    let why = Sentences::one(if set.is_empty() && fits_as_is {
        Message::new("diffusion.why.fits")
    } else if set.is_empty() {
        Message::new("diffusion.why.streams")
            .bytes("streamed", place(w).streamed_bytes as u64)
            .fixed("speed", speed, 2)
    } else {
        Message::new("diffusion.why.plan")
            .with(
                "changes",
                Arg::Terms(set.iter().map(|s| s.label().to_string()).collect(), " + "),
            )
            .bytes("peak", estimate(&planned).required_bytes())
            .bytes("cap", capacity)
    });
    DiffusionPlan {
        fits_as_is,
        runs_streaming,
        labels: set.iter().map(|s| s.label().to_string()).collect(),
        strategies: set,
        speed_factor: speed,
        quality_note,
        required_bytes: estimate(&planned).required_bytes(),
        process_bytes: estimate(&planned).peak.process_bytes,
        capacity_bytes: capacity,
        max_width: mw,
        max_height: mh,
        max_batch: max_batch(&planned),
        why,
        peak_stage: place(w).peak,
        planned_peak_stage: place(&planned).peak,
        comfyui_memory: planned.comfy_memory(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::diffusion::Bus;
    use crate::types::workload::GpuTarget;

    fn wl(model: &str, gib: f64, engine: Engine) -> DiffusionWorkload {
        let gpu = GpuTarget::with_capacity(crate::units::gib_to_bytes(gib), 1);
        let mut w = crate::resolve::diffusion::for_preset(gpu, Bus::default(), model).unwrap();
        w.run.engine = engine;
        w
    }

    #[test]
    fn sdxl_on_a_big_card_needs_nothing() {
        let p = plan(&wl("sdxl", 24.0, Engine::ComfyUi));
        assert!(p.fits_as_is && p.strategies.is_empty() && p.speed_factor == 1.0);
        assert!(p.max_width > 1024 && p.max_batch >= 2, "{p:?}");
    }

    #[test]
    fn flux_on_12_gb_prefers_quantized_weights_over_streaming() {
        let w = wl("flux-dev", 12.0, Engine::ComfyUi);
        assert!(place(&w).streamed_bytes > 0.0);
        let p = plan(&w);
        assert!(!p.fits_as_is && p.runs_streaming);
        assert!(p.strategies.iter().any(|s| s.weight_change()), "{p:?}");
        assert!(p.required_bytes <= p.capacity_bytes);
        assert!(
            p.speed_factor < streaming_slowdown(&w),
            "the plan must beat streaming: {p:?}"
        );
    }

    #[test]
    fn diffusers_sdxl_batch_on_8_gb_uses_cheap_steps_first() {
        let mut w = wl("sdxl", 10.0, Engine::Diffusers);
        w.run.batch = 4;
        let p = plan(&w);
        assert!(!p.fits_as_is);
        assert!(
            !p.strategies.contains(&Strategy::SequentialOffload),
            "sequential offload is the last resort: {p:?}"
        );
        assert!(p.required_bytes <= p.capacity_bytes);
    }

    /// `--lowvram` "Doesn't do anything if dynamic vram is enabled" (comfy/cli_args.py): never
    /// offered then; with `--disable-dynamic-vram` it is. The plan names the mode it assumes.
    #[test]
    fn lowvram_is_offered_only_with_classic_loading() {
        let w = wl("sdxl", 8.0, Engine::ComfyUi);
        assert!(!Strategy::LowVram.applies(&w));
        let m = plan(&w)
            .comfyui_memory
            .expect("a ComfyUI plan names its mode");
        assert_eq!(m.mode, MemoryMode::Dynamic);
        assert!(m.why.contains("ComfyUI default on NVIDIA"), "{}", m.why);
        let mut c = w.clone();
        c.run.dynamic_vram = crate::types::options::DynamicVram::Off;
        assert!(Strategy::LowVram.applies(&c));
        assert_eq!(
            plan(&c).comfyui_memory.map(|m| m.mode),
            Some(MemoryMode::Classic)
        );
        assert_eq!(
            plan(&wl("sdxl", 8.0, Engine::Diffusers)).comfyui_memory,
            None
        );
    }

    #[test]
    fn streaming_costs_time_in_proportion_to_bytes() {
        let mut w = wl("flux-dev", 12.0, Engine::ComfyUi);
        let s12 = streaming_slowdown(&w);
        w.gpu.vram_bytes = crate::units::gib_to_bytes(16.0);
        let s16 = streaming_slowdown(&w);
        assert!(s12 > s16 && s16 > 1.0, "{s12} {s16}");
        assert!(crate::speed::diffusion::timing_for_ranking(&w).compute_s > 0.0);
    }
}
