//! ComfyUI's two ways of putting model weights on the GPU, which one a run gets, and where each
//! puts a diffusion pipeline's weights stage by stage (the engine's branch of
//! `memory::diffusion::residency::place`), with the rows and notes it adds to the breakdown.
//!
//! - **Dynamic VRAM** (comfy-aimdo, `comfy/model_patcher.py` `ModelPatcherDynamic`): a model's
//!   weights get a virtual address range and are paged onto the card when a layer runs; when
//!   something else needs the memory they are evicted, and what does not fit is read from system
//!   RAM every step. Nothing is "loaded partially": the question is how much stays resident and
//!   how much streams. comfy-aimdo keeps `VRAM_HEADROOM` = 256 MiB free (src/plat.h
//!   `budget_deficit`), or `--reserve-vram` instead (main.py passes it to
//!   `comfy_aimdo.control.init(simple_vram_headroom=…)`), plus `--vram-headroom` on top (main.py
//!   `init_devices((index, vram_headroom × 1024³))`, the `extra_vram_headroom` of `budget_deficit`).
//! - **Classic loading** (`ModelPatcher`, comfy/model_management.py `load_models_gpu`): a model
//!   is loaded whole when it fits next to `minimum_inference_memory()`, else partially, the rest
//!   streamed; `EXTRA_RESERVED_VRAM` is kept free (400 MB, 600 MB on Windows, 100 MB more there
//!   on cards over 15 GiB; `--reserve-vram` replaces it).
//!
//! Which one runs: comfy/cli_args.py `enables_dynamic_vram()` (on unless `--disable-dynamic-vram`,
//! `--highvram`, `--gpu-only`, `--novram` or `--cpu`; `--enable-dynamic-vram` forces it), then
//! main.py: `dynamic_vram_supported()` (NVIDIA; AMD only with ROCm ≥ 7.14) and PyTorch ≥ 2.8
//! (`torch_version_numeric < (2, 8)` falls back to the legacy patcher), both skipped by
//! `--enable-dynamic-vram`. comfy-aimdo itself loads only for CUDA and ROCm builds on Windows and
//! Linux (comfy_aimdo/control.py `init`).

use crate::memory::breakdown::{Breakdown, ComponentId, Layer};
use crate::memory::diffusion::residency::{
    HARD_ACTIVATIONS, HARD_WEIGHTS, Placement, Sizes, Stage, StageUse, stage_uses,
};
use crate::memory::diffusion::{DiffusionRun, DiffusionWorkload, VramMode};
use crate::types::gpu::Vendor;
use crate::types::message::Message;
use crate::types::options::{DynamicVram, Os};
use crate::types::workload::GpuTarget;
use crate::units::{GIB, MIB};
use serde::{Deserialize, Serialize};

/// comfy-aimdo's default headroom: src/plat.h `VRAM_HEADROOM` (256 MiB).
pub const AIMDO_HEADROOM: u64 = 256 * 1024 * 1024;
/// comfy/model_management.py `EXTRA_RESERVED_VRAM`: 400 MiB off Windows.
pub const RESERVE_LINUX: u64 = 400 * 1024 * 1024;
/// … 600 MiB on Windows ("because of the shared vram issue").
pub const RESERVE_WINDOWS: u64 = 600 * 1024 * 1024;
/// … and 100 MiB more on Windows when `total_vram > 15 * 1024` MB ("16GB+ cards").
pub const RESERVE_WINDOWS_BIG_CARD: u64 = 100 * 1024 * 1024;
/// The first PyTorch with dynamic VRAM (main.py `torch_version_numeric < (2, 8)`).
pub const DYNAMIC_MIN_TORCH: (u32, u32) = (2, 8);

/// How ComfyUI places weights; in `types` because the doctor reads it from a log too.
pub use crate::types::options::MemoryMode;

/// The memory behaviour a plan assumes, with the reason, as the JSON and the tables show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComfyMemory {
    pub mode: MemoryMode,
    /// One line: the mode and why ComfyUI picks it for this run.
    pub why: String,
    /// VRAM ComfyUI keeps free for other programs: comfy-aimdo's headroom (dynamic) or
    /// `EXTRA_RESERVED_VRAM` (classic); `--reserve-vram` in both.
    pub reserve_bytes: u64,
    /// `--vram-headroom`: kept free beyond the reserve (dynamic only; 0 in classic mode).
    pub headroom_bytes: u64,
    /// Flags given that do nothing in this mode.
    pub notes: Vec<Message>,
}

/// Parses a PyTorch version ("2.7.1+cu128", "2.8") into (major, minor).
pub fn parse_torch_version(s: &str) -> Option<(u32, u32)> {
    let mut it = s.trim().split(['.', '+']);
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// The flag that turns dynamic VRAM off (cli_args.py `enables_dynamic_vram`), if one is given.
fn disabled_by(run: &DiffusionRun) -> Option<&'static str> {
    if run.dynamic_vram == DynamicVram::Off {
        return Some("--disable-dynamic-vram");
    }
    match run.vram_mode {
        VramMode::High => Some("--highvram"),
        VramMode::GpuOnly => Some("--gpu-only"),
        VramMode::No => Some("--novram"),
        VramMode::Normal | VramMode::Low => None,
    }
}

/// The mode ComfyUI runs this workload in, and why.
fn mode(run: &DiffusionRun, gpu: &GpuTarget) -> (MemoryMode, String) {
    use MemoryMode::{Classic, Dynamic};
    let aimdo_builds = matches!(gpu.vendor, Vendor::Nvidia | Vendor::Amd);
    if run.dynamic_vram == DynamicVram::On {
        return if aimdo_builds {
            (Dynamic, "dynamic VRAM (--enable-dynamic-vram)".into())
        } else {
            (
                Classic,
                "classic loading: comfy-aimdo, which dynamic VRAM needs, has only CUDA and ROCm builds (comfy_aimdo/control.py), so --enable-dynamic-vram falls back".into(),
            )
        };
    }
    if let Some(flag) = disabled_by(run) {
        return (
            Classic,
            format!(
                "classic loading: {flag} turns dynamic VRAM off (comfy/cli_args.py enables_dynamic_vram)"
            ),
        );
    }
    match gpu.vendor {
        Vendor::Nvidia => match run.torch {
            Some(v) if v < DYNAMIC_MIN_TORCH => (
                Classic,
                format!(
                    "classic loading: dynamic VRAM needs PyTorch ≥ 2.8, this runs {}.{} (main.py falls back to the legacy ModelPatcher)",
                    v.0, v.1
                ),
            ),
            Some(_) => (
                Dynamic,
                "dynamic VRAM (ComfyUI default on NVIDIA with PyTorch ≥ 2.8)".into(),
            ),
            None => (
                Dynamic,
                "dynamic VRAM (ComfyUI default on NVIDIA with PyTorch ≥ 2.8; PyTorch assumed ≥ 2.8, set run.torch_version otherwise)".into(),
            ),
        },
        Vendor::Amd => (
            Classic,
            "classic loading: ComfyUI turns dynamic VRAM on for AMD only with ROCm ≥ 7.14 (main.py dynamic_vram_supported); set run.dynamic_vram = \"on\" if yours is".into(),
        ),
        Vendor::Apple | Vendor::Intel => (
            Classic,
            "classic loading: dynamic VRAM is for NVIDIA and AMD ROCm GPUs (main.py dynamic_vram_supported)".into(),
        ),
    }
}

/// ComfyUI's memory behaviour for a run on a card.
pub fn comfy_memory(run: &DiffusionRun, gpu: &GpuTarget) -> ComfyMemory {
    let (mode, why) = mode(run, gpu);
    let mut notes = Vec::new();
    let (reserve_bytes, headroom_bytes) = match mode {
        MemoryMode::Dynamic => {
            if run.vram_mode == VramMode::Low {
                notes.push(Message::new("warn.comfy.lowvram_dynamic"));
            }
            (
                run.reserve_vram_bytes.unwrap_or(AIMDO_HEADROOM),
                run.vram_headroom_bytes,
            )
        }
        MemoryMode::Classic => {
            if run.vram_headroom_bytes > 0 {
                notes.push(Message::new("warn.comfy.headroom_classic"));
            }
            let default = match run.os {
                Os::Linux => RESERVE_LINUX,
                Os::Windows if gpu.vram_bytes as f64 > 15.0 * 1024.0 * MIB => {
                    RESERVE_WINDOWS + RESERVE_WINDOWS_BIG_CARD
                }
                Os::Windows => RESERVE_WINDOWS,
            };
            (run.reserve_vram_bytes.unwrap_or(default), 0)
        }
    };
    ComfyMemory {
        mode,
        why,
        reserve_bytes,
        headroom_bytes,
        notes,
    }
}

/// ComfyUI `minimum_inference_memory()`: 0.8 GiB beyond the reserve (classic loading).
pub const MIN_INFERENCE: f64 = 0.8 * GIB;

/// ComfyUI's own estimate of a VAE decode, used to pick how many images it decodes at once:
/// 2178 × latent height × latent width × 64 × dtype size (comfy/sd.py `memory_used_decode`).
fn decode_estimate(w: &DiffusionWorkload, vae_fp32: bool) -> f64 {
    let latent = (f64::from(w.run.width) / 8.0) * (f64::from(w.run.height) / 8.0);
    2178.0 * latent * 64.0 * if vae_fp32 { 4.0 } else { 2.0 }
}

/// Images the VAE decodes at once: ComfyUI splits the batch so that its decode estimate fits in
/// `free` memory beside the VAE's weights (`probe`: the pipeline's sizes for one image).
pub fn decode_images(w: &DiffusionWorkload, free: f64, probe: &Sizes) -> f64 {
    let est = decode_estimate(w, probe.vae_fp32);
    ((free - probe.vae) / est)
        .floor()
        .clamp(1.0, f64::from(w.run.batch))
}

/// The VAE's working dtype: bf16 where the GPU has it, else fp32 (`working_dtypes = [bfloat16,
/// float32]`, comfy/sd.py); the tiny autoencoder stays 16-bit.
pub fn vae_in_fp32(w: &DiffusionWorkload) -> bool {
    !w.gpu.bf16 && !w.run.tiny_vae
}

/// Dynamic VRAM (module doc): every model stays cached on the card while all of them fit beside
/// the largest stage; else the running model's weights are resident as far as they fit beside
/// the stage's activations and the allocator's hard share, the rest streamed, and the idle
/// models are evicted on demand, so no stage holds them. The text encoders run on the GPU whatever the
/// VRAM flag (model_management.py `text_encoder_device`: `if
/// comfy.memory_management.aimdo_enabled: return get_torch_device()`). Returns the stages, the
/// denoiser bytes streamed and the text-encoder bytes streamed.
pub fn place_dynamic(
    s: &mut Sizes,
    r: &DiffusionRun,
    capacity: f64,
    free: f64,
) -> ([StageUse; 3], f64, f64) {
    // cond and uncond as one batch only when 1.5 × its memory fits in what the dynamic patcher
    // calls free, the card's total less the whole model (comfy/samplers.py `_calc_cond_batch`:
    // `memory_required(...) * 1.5 < free_memory`; model_patcher.py
    // `ModelPatcherDynamic.get_free_memory`: `get_total_memory(device) - self.model_size()`,
    // February 2026 source).
    if r.cfg && 1.5 * s.act[1] >= capacity - s.denoiser {
        s.act[1] /= 2.0;
    }
    let room = |act: f64, fixed: f64| {
        ((free - act * (1.0 + HARD_ACTIVATIONS)) / (1.0 + HARD_WEIGHTS) - fixed).max(0.0)
    };
    let te_on_gpu = !r.text_encoder_on_cpu;
    let te_total: f64 = if te_on_gpu { s.te.iter().sum() } else { 0.0 };
    let act_max = s.act.iter().cloned().fold(0.0, f64::max);
    if room(act_max, te_total + s.adapters + s.vae) >= s.denoiser {
        return (stage_uses(s, te_on_gpu, true, s.denoiser), 0.0, 0.0);
    }
    let denoiser = s.denoiser.min(room(s.act[1], s.adapters));
    let mut st = stage_uses(s, te_on_gpu, false, denoiser);
    let te_total = st[0].text_encoders;
    st[0].text_encoders = te_total.min(room(s.act[0], 0.0));
    st[2].vae = st[2].vae.min(room(s.act[2], 0.0));
    (st, s.denoiser - denoiser, te_total - st[0].text_encoders)
}

/// Classic loading (comfy/model_management.py `load_models_gpu`): models stay loaded after use
/// while everything fits ("smart memory"); when the next model needs room, the others are
/// unloaded; if the denoiser itself does not fit next to `MIN_INFERENCE` plus the reserve, it is
/// "loaded partially" and the rest of its weights are streamed from system RAM every step.
/// Returns the stages, the denoiser bytes streamed and whether ComfyUI logs "loaded partially".
pub fn place_classic(s: &mut Sizes, r: &DiffusionRun, free: f64) -> ([StageUse; 3], f64, bool) {
    let te_on_gpu = match r.vram_mode {
        VramMode::GpuOnly => true,
        VramMode::Low | VramMode::No => false,
        _ => !r.text_encoder_on_cpu,
    };
    let te_total: f64 = if te_on_gpu { s.te.iter().sum() } else { 0.0 };
    // ComfyUI runs cond and uncond as one batch only when that fits (comfy/samplers.py
    // `calc_cond_batch` checks free memory); otherwise one after the other.
    if r.cfg && s.denoiser + s.adapters + s.act[1] + MIN_INFERENCE > free {
        s.act[1] /= 2.0;
    }
    let act_max = s.act.iter().cloned().fold(0.0, f64::max);
    let everything = te_total + s.denoiser + s.adapters + s.vae + act_max + MIN_INFERENCE;
    let keep_all = matches!(r.vram_mode, VramMode::High | VramMode::GpuOnly)
        || (r.vram_mode == VramMode::Normal && everything <= free);
    let room = free - s.act[1] - s.adapters - MIN_INFERENCE;
    let on_gpu = if r.vram_mode == VramMode::No {
        0.0
    } else if keep_all || s.denoiser <= room {
        s.denoiser
    } else {
        room.max(0.0)
    };
    let mut streamed = 0.0;
    let mut partially_loaded = false;
    if on_gpu < s.denoiser {
        streamed = s.denoiser - on_gpu;
        partially_loaded = r.vram_mode != VramMode::No;
    }
    let mut st = stage_uses(s, te_on_gpu, keep_all, on_gpu);
    // Text encoders are model patchers too: loaded partially when they do not fit.
    let te_room = (free - s.act[0] - MIN_INFERENCE).max(0.0);
    if !keep_all && st[0].text_encoders > te_room {
        st[0].text_encoders = te_room;
        partially_loaded = true;
    }
    (st, streamed, partially_loaded)
}

/// The VRAM ComfyUI keeps free, as rows of the breakdown, and the notes on flags that do
/// nothing in its mode.
pub fn kept_free(b: &mut Breakdown, m: &ComfyMemory) {
    let label = match m.mode {
        MemoryMode::Dynamic => "Kept free by dynamic VRAM (comfy-aimdo headroom, --reserve-vram)",
        MemoryMode::Classic => "Kept free by ComfyUI (--reserve-vram)",
    };
    b.add(
        ComponentId::ReservedVram,
        label,
        m.reserve_bytes as f64,
        Layer::External,
    );
    if m.headroom_bytes > 0 {
        b.add(
            ComponentId::VramHeadroom,
            "Kept free by dynamic VRAM (--vram-headroom)",
            m.headroom_bytes as f64,
            Layer::External,
        );
    }
    b.warnings.extend(m.notes.iter().cloned());
}

/// What ComfyUI does with the placement, as notes on the finished breakdown: weights streamed
/// by dynamic VRAM, models "loaded partially" by classic loading, and the tiled decode it
/// retries with when a decode runs out of memory.
pub fn warnings(b: &mut Breakdown, m: &ComfyMemory, p: &Placement, r: &DiffusionRun) {
    let dynamic = m.mode == MemoryMode::Dynamic;
    if dynamic && p.streamed_bytes > 0.0 {
        let denoiser = p.stages[Stage::Denoise as usize].denoiser + p.streamed_bytes;
        b.warn(
            Message::new("warn.comfy.dynamic_streams")
                .bytes("resident", (denoiser - p.streamed_bytes) as u64)
                .bytes("model", denoiser as u64)
                .bytes("streamed", p.streamed_bytes as u64),
        );
    }
    if dynamic && p.encoders_streamed_bytes > 0.0 {
        b.warn(
            Message::new("warn.comfy.dynamic_encoders_stream")
                .bytes("streamed", p.encoders_streamed_bytes as u64),
        );
    }
    if p.partially_loaded && p.streamed_bytes <= 0.0 {
        // Only the text encoders did not fit next to the encode (`place_classic`).
        b.warn(Message::new("warn.comfy.encoders_partial"));
    } else if p.partially_loaded {
        // The streamed weights are the denoiser's, whatever stage peaks: its whole size is what
        // the denoising stage holds plus what it streams (not the peak stage's share, which is
        // nothing when the decode peaks after the denoiser was unloaded).
        let denoiser = p.stages[Stage::Denoise as usize].denoiser + p.streamed_bytes;
        b.warn(
            Message::new("warn.comfy.model_partial")
                .bytes("streamed", p.streamed_bytes as u64)
                .bytes("model", denoiser as u64),
        );
    }
    if !r.vae_tiling && p.peak == Stage::Decode && !b.fits() {
        b.warn(Message::new("warn.comfy.tiled_retry"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::gib_to_bytes;

    fn card(gib: f64, vendor: Vendor) -> GpuTarget {
        GpuTarget {
            vendor,
            ..GpuTarget::with_capacity(gib_to_bytes(gib), 1)
        }
    }

    fn run() -> DiffusionRun {
        DiffusionRun::default()
    }

    /// cli_args.py `enables_dynamic_vram`: `return not args.disable_dynamic_vram and not
    /// args.highvram and not args.gpu_only and not args.novram and not args.cpu`; main.py
    /// `dynamic_vram_supported`: `if comfy.model_management.is_nvidia(): return True`.
    #[test]
    fn dynamic_is_the_default_on_nvidia_and_each_disabling_flag_turns_it_off() {
        let g = card(12.0, Vendor::Nvidia);
        let m = comfy_memory(&run(), &g);
        assert_eq!(m.mode, MemoryMode::Dynamic);
        assert!(
            m.why.starts_with("dynamic VRAM (ComfyUI default on NVIDIA"),
            "{}",
            m.why
        );
        for (mode, flag) in [
            (VramMode::High, "--highvram"),
            (VramMode::GpuOnly, "--gpu-only"),
            (VramMode::No, "--novram"),
        ] {
            let r = DiffusionRun {
                vram_mode: mode,
                ..run()
            };
            let m = comfy_memory(&r, &g);
            assert_eq!(m.mode, MemoryMode::Classic, "{flag}");
            assert!(m.why.contains(flag), "{}", m.why);
        }
        let r = DiffusionRun {
            dynamic_vram: DynamicVram::Off,
            ..run()
        };
        assert!(comfy_memory(&r, &g).why.contains("--disable-dynamic-vram"));
        // --lowvram is not among the disabling flags: it stays dynamic, and is a no-op.
        let r = DiffusionRun {
            vram_mode: VramMode::Low,
            ..run()
        };
        let m = comfy_memory(&r, &g);
        assert_eq!(m.mode, MemoryMode::Dynamic);
        assert!(
            m.notes
                .iter()
                .any(|n| n.to_string().contains("--lowvram does nothing"))
        );
    }

    /// main.py: `if (not args.enable_dynamic_vram) and (torch_version_numeric < (2, 8))` warns
    /// "Unsupported Pytorch detected" and keeps the legacy ModelPatcher; `--enable-dynamic-vram`
    /// skips that check.
    #[test]
    fn pytorch_before_2_8_falls_back_unless_forced() {
        let g = card(24.0, Vendor::Nvidia);
        let old = DiffusionRun {
            torch: parse_torch_version("2.7.1+cu128"),
            ..run()
        };
        let m = comfy_memory(&old, &g);
        assert_eq!(m.mode, MemoryMode::Classic);
        assert!(m.why.contains("2.7"), "{}", m.why);
        let new = DiffusionRun {
            torch: parse_torch_version("2.8.0"),
            ..run()
        };
        assert_eq!(comfy_memory(&new, &g).mode, MemoryMode::Dynamic);
        let forced = DiffusionRun {
            dynamic_vram: DynamicVram::On,
            ..old
        };
        assert_eq!(comfy_memory(&forced, &g).mode, MemoryMode::Dynamic);
        assert_eq!(parse_torch_version("two"), None);
    }

    /// main.py `dynamic_vram_supported`: AMD only `if comfy.model_management.rocm_version >=
    /// (7, 14)`, which a plan cannot know, so classic unless told; Apple/Intel never (comfy-aimdo
    /// has CUDA and ROCm builds only, comfy_aimdo/control.py `init`).
    #[test]
    fn other_vendors_run_classic_loading() {
        let amd = comfy_memory(&run(), &card(16.0, Vendor::Amd));
        assert_eq!(amd.mode, MemoryMode::Classic);
        assert!(amd.why.contains("ROCm ≥ 7.14"), "{}", amd.why);
        let forced = DiffusionRun {
            dynamic_vram: DynamicVram::On,
            ..run()
        };
        assert_eq!(
            comfy_memory(&forced, &card(16.0, Vendor::Amd)).mode,
            MemoryMode::Dynamic
        );
        assert_eq!(
            comfy_memory(&forced, &card(16.0, Vendor::Apple)).mode,
            MemoryMode::Classic
        );
    }

    /// Dynamic: src/plat.h `#define VRAM_HEADROOM (256 * 1024 * 1024)`, replaced by
    /// `--reserve-vram` (main.py `simple_vram_headroom = int(args.reserve_vram * 1024 ** 3)`),
    /// and `--vram-headroom` on top. Classic: model_management.py `EXTRA_RESERVED_VRAM = 400 *
    /// 1024 * 1024`, `600 * 1024 * 1024` on Windows, `+= 100 * 1024 * 1024` when `total_vram >
    /// (15 * 1024)`.
    #[test]
    fn reserves_follow_the_mode_the_os_and_the_card() {
        let big = card(24.0, Vendor::Nvidia);
        let small = card(12.0, Vendor::Nvidia);
        let m = comfy_memory(&run(), &big);
        assert_eq!((m.reserve_bytes, m.headroom_bytes), (AIMDO_HEADROOM, 0));
        let r = DiffusionRun {
            reserve_vram_bytes: Some(gib_to_bytes(1.5)),
            vram_headroom_bytes: gib_to_bytes(2.0),
            ..run()
        };
        let m = comfy_memory(&r, &big);
        assert_eq!(
            (m.reserve_bytes, m.headroom_bytes),
            (gib_to_bytes(1.5), gib_to_bytes(2.0))
        );
        let classic = DiffusionRun {
            dynamic_vram: DynamicVram::Off,
            ..run()
        };
        assert_eq!(
            comfy_memory(&classic, &big).reserve_bytes,
            700 * 1024 * 1024
        );
        assert_eq!(
            comfy_memory(&classic, &small).reserve_bytes,
            600 * 1024 * 1024
        );
        let linux = DiffusionRun {
            os: Os::Linux,
            ..classic.clone()
        };
        assert_eq!(comfy_memory(&linux, &big).reserve_bytes, 400 * 1024 * 1024);
        let with_headroom = DiffusionRun {
            vram_headroom_bytes: gib_to_bytes(1.0),
            ..classic
        };
        let m = comfy_memory(&with_headroom, &big);
        assert_eq!(m.headroom_bytes, 0);
        assert!(
            m.notes
                .iter()
                .any(|n| n.to_string().contains("--vram-headroom"))
        );
    }
}
