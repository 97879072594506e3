//! ComfyUI's two ways of putting model weights on the GPU, and which one a run gets.
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

use super::{DiffusionRun, VramMode};
use crate::types::gpu::Vendor;
use crate::types::message::Message;
use crate::types::options::{DynamicVram, Os};
use crate::types::workload::GpuTarget;
use crate::units::MIB;
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
pub fn memory(run: &DiffusionRun, gpu: &GpuTarget) -> ComfyMemory {
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
        let m = memory(&run(), &g);
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
            let m = memory(&r, &g);
            assert_eq!(m.mode, MemoryMode::Classic, "{flag}");
            assert!(m.why.contains(flag), "{}", m.why);
        }
        let r = DiffusionRun {
            dynamic_vram: DynamicVram::Off,
            ..run()
        };
        assert!(memory(&r, &g).why.contains("--disable-dynamic-vram"));
        // --lowvram is not among the disabling flags: it stays dynamic, and is a no-op.
        let r = DiffusionRun {
            vram_mode: VramMode::Low,
            ..run()
        };
        let m = memory(&r, &g);
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
        let m = memory(&old, &g);
        assert_eq!(m.mode, MemoryMode::Classic);
        assert!(m.why.contains("2.7"), "{}", m.why);
        let new = DiffusionRun {
            torch: parse_torch_version("2.8.0"),
            ..run()
        };
        assert_eq!(memory(&new, &g).mode, MemoryMode::Dynamic);
        let forced = DiffusionRun {
            dynamic_vram: DynamicVram::On,
            ..old
        };
        assert_eq!(memory(&forced, &g).mode, MemoryMode::Dynamic);
        assert_eq!(parse_torch_version("two"), None);
    }

    /// main.py `dynamic_vram_supported`: AMD only `if comfy.model_management.rocm_version >=
    /// (7, 14)`, which a plan cannot know, so classic unless told; Apple/Intel never (comfy-aimdo
    /// has CUDA and ROCm builds only, comfy_aimdo/control.py `init`).
    #[test]
    fn other_vendors_run_classic_loading() {
        let amd = memory(&run(), &card(16.0, Vendor::Amd));
        assert_eq!(amd.mode, MemoryMode::Classic);
        assert!(amd.why.contains("ROCm ≥ 7.14"), "{}", amd.why);
        let forced = DiffusionRun {
            dynamic_vram: DynamicVram::On,
            ..run()
        };
        assert_eq!(
            memory(&forced, &card(16.0, Vendor::Amd)).mode,
            MemoryMode::Dynamic
        );
        assert_eq!(
            memory(&forced, &card(16.0, Vendor::Apple)).mode,
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
        let m = memory(&run(), &big);
        assert_eq!((m.reserve_bytes, m.headroom_bytes), (AIMDO_HEADROOM, 0));
        let r = DiffusionRun {
            reserve_vram_bytes: Some(gib_to_bytes(1.5)),
            vram_headroom_bytes: gib_to_bytes(2.0),
            ..run()
        };
        let m = memory(&r, &big);
        assert_eq!(
            (m.reserve_bytes, m.headroom_bytes),
            (gib_to_bytes(1.5), gib_to_bytes(2.0))
        );
        let classic = DiffusionRun {
            dynamic_vram: DynamicVram::Off,
            ..run()
        };
        assert_eq!(memory(&classic, &big).reserve_bytes, 700 * 1024 * 1024);
        assert_eq!(memory(&classic, &small).reserve_bytes, 600 * 1024 * 1024);
        let linux = DiffusionRun {
            os: Os::Linux,
            ..classic.clone()
        };
        assert_eq!(memory(&linux, &big).reserve_bytes, 400 * 1024 * 1024);
        let with_headroom = DiffusionRun {
            vram_headroom_bytes: gib_to_bytes(1.0),
            ..classic
        };
        let m = memory(&with_headroom, &big);
        assert_eq!(m.headroom_bytes, 0);
        assert!(
            m.notes
                .iter()
                .any(|n| n.to_string().contains("--vram-headroom"))
        );
    }
}
