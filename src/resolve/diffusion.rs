//! A workload file with `task = "diffusion"` → a checked `DiffusionWorkload`.

use super::{ResolveError, int_in};
use crate::engines::comfyui::memory::parse_torch_version;
use crate::memory::diffusion::parts::quantized_bytes_per_param;
use crate::memory::diffusion::{
    Bus, DiffusionCatalog, DiffusionRun, DiffusionWorkload, ModelKind, Part,
};
use crate::types::dtype::WeightFormat;
use crate::types::error::BadField;
use crate::types::message::Message;
use crate::types::options::Engine;
use crate::types::workload::{GpuTarget, WorkloadFile};
use crate::units::gib_to_bytes;

fn format_for_diffusion(field: &str, s: &str) -> Result<WeightFormat, BadField> {
    let said = |id| Message::new(id).text("field", field).text("value", s);
    let f: WeightFormat = s
        .parse()
        .map_err(|_| said("resolve.diffusion.weights_unknown"))?;
    if quantized_bytes_per_param(f).is_none() {
        return Err(said("resolve.diffusion.weights_llm_only").into());
    }
    Ok(f)
}

/// The memory and bus bandwidth the diffusion speed model reads, from the resolved card (which
/// carries its preset's figures). Unified-memory and SXM parts have no PCIe hop for offloaded
/// weights (`pcie_gbs` 0): memory speed is used. A card known only by its capacity has no
/// figures, and the bus assumed is `Bus::default()`.
pub fn bus_for(gpu: &GpuTarget) -> Bus {
    let s = gpu.speed;
    if s.bandwidth_gbs <= 0.0 {
        return Bus::default();
    }
    Bus {
        bandwidth_gbs: s.bandwidth_gbs,
        pcie_gbs: if s.pcie_gbs > 0.0 {
            s.pcie_gbs
        } else {
            s.bandwidth_gbs
        },
    }
}

/// A size field in GiB, checked to 0..=4096; `None` when absent.
pub fn gib_field(field: &str, v: Option<f64>) -> Result<Option<u64>, BadField> {
    match v {
        None => Ok(None),
        Some(x) if x.is_finite() && (0.0..=4096.0).contains(&x) => Ok(Some(gib_to_bytes(x))),
        Some(x) => Err(BadField(
            Message::new("field.range.gib")
                .text("field", field)
                .text("value", x.to_string()),
        )),
    }
}

/// `run.torch_version` ("2.7.1+cu128") as (major, minor); `None` when absent.
pub fn torch_field(v: Option<&str>) -> Result<Option<(u32, u32)>, BadField> {
    v.map(|v| {
        parse_torch_version(v).ok_or_else(|| {
            BadField(Message::new("resolve.diffusion.torch_version").text("value", v))
        })
    })
    .transpose()
}

/// A workload for a diffusion preset with default knobs at the model's native size: the model,
/// its text encoders and its VAE looked up in the catalog, once, here.
pub fn for_preset(
    gpu: GpuTarget,
    bus: Bus,
    model_id: &str,
) -> Result<DiffusionWorkload, ResolveError> {
    let cat = DiffusionCatalog::get();
    let model = cat.model(model_id)?.clone();
    let text_encoders: Vec<Part> = model
        .text_encoders
        .iter()
        .filter_map(|t| cat.part(t).cloned())
        .collect();
    let vae = cat
        .part(&model.vae)
        .cloned()
        .ok_or_else(|| format!("{}: VAE '{}' missing", model.id, model.vae))?;
    let weights = if gpu.bf16 {
        WeightFormat::Bf16
    } else {
        WeightFormat::Fp16
    };
    let run = DiffusionRun {
        width: model.native_width,
        height: model.native_height,
        frames: model.native_frames.max(1),
        weights,
        text_encoder_weights: vec![weights; text_encoders.len()],
        cfg: model.cfg,
        ..Default::default()
    };
    Ok(DiffusionWorkload {
        gpu,
        bus,
        model,
        text_encoders,
        vae,
        run,
    })
}

/// Resolves `[model] preset` against the diffusion catalog and checks the `[run]` fields.
pub fn resolve(file: &WorkloadFile, gpu: GpuTarget) -> Result<DiffusionWorkload, ResolveError> {
    let preset = file
        .model
        .preset
        .as_deref()
        .ok_or_else(|| Message::new("resolve.diffusion.preset_missing"))?;
    let mut w = for_preset(gpu.clone(), bus_for(&gpu), preset)?;
    let r = &file.run;
    w.run.engine = match r.engine {
        None => Engine::ComfyUi,
        Some(e @ (Engine::ComfyUi | Engine::Diffusers)) => e,
        Some(e) => {
            return Err(Message::new("resolve.diffusion.engine")
                .text("engine", e.to_string())
                .into());
        }
    };
    if let Some(s) = &r.weights {
        w.run.weights = format_for_diffusion("run.weights", s)?;
    }
    // Text encoders follow a 16-bit model; a quantized model keeps them 16-bit unless told.
    let default_te = if w.run.weights.is_quantized() {
        w.run_default_16bit()
    } else {
        w.run.weights
    };
    let n_te = w.text_encoders.len();
    let model_id = w.model.id.clone();
    let run = &mut w.run;
    run.text_encoder_weights = match &r.text_encoder_weights {
        None => vec![default_te; n_te],
        Some(s) => {
            let list: Vec<WeightFormat> = s
                .split(',')
                .map(|x| format_for_diffusion("run.text_encoder_weights", x.trim()))
                .collect::<Result<_, _>>()?;
            match list.len() {
                1 => vec![list[0]; n_te],
                n if n == n_te => list,
                n => {
                    return Err(Message::new("resolve.diffusion.text_encoder_count")
                        .int("n", n as u64)
                        .text("model", &model_id)
                        .int("encoders", n_te as u64)
                        .into());
                }
            }
        }
    };
    let native = (w.model.native_width, w.model.native_height);
    run.width = int_in("run.width", r.width, native.0, 64, 16384)?;
    run.height = int_in("run.height", r.height, native.1, 64, 16384)?;
    for (f, v) in [("run.width", run.width), ("run.height", run.height)] {
        if v % 8 != 0 {
            return Err(Message::new("resolve.diffusion.multiple_of_8")
                .text("field", f)
                .int("value", v)
                .int("near", v / 8 * 8)
                .into());
        }
    }
    run.batch = int_in("run.batch", r.batch, 1, 1, 4096)?;
    // ComfyUI's KSampler allows 1..=10000 steps (nodes.py `KSampler.INPUT_TYPES`).
    run.steps = int_in("run.steps", r.steps, run.steps, 1, 10_000)?;
    let video = w.model.kind == ModelKind::Video;
    run.frames = int_in(
        "run.frames",
        r.frames,
        w.model.native_frames.max(1),
        1,
        10_000,
    )?;
    if !video && run.frames != 1 {
        return Err(Message::new("resolve.diffusion.frames")
            .text("model", &w.model.id)
            .into());
    }
    if let Some(a) = r.attention {
        run.attention = a;
    }
    if let Some(c) = r.cfg {
        run.cfg = c;
    }
    let flag = |v: Option<bool>, d: bool| v.unwrap_or(d);
    run.vae_tiling = flag(r.vae_tiling, false);
    // ComfyUI's VAEDecodeTiled allows tile_size 64..=4096 (nodes.py INPUT_TYPES).
    run.vae_tile = int_in("run.vae_tile", r.vae_tile, run.vae_tile, 64, 4096)?;
    run.vae_slicing = flag(r.vae_slicing, false);
    run.vae_decode = flag(r.vae_decode, true);
    run.tiny_vae = flag(r.tiny_vae, false);
    run.text_encoder_on_cpu = flag(r.text_encoder_on_cpu, false);
    run.ip_adapter = flag(r.ip_adapter, false);
    if let Some(m) = r.vram_mode {
        run.vram_mode = m;
    }
    if let Some(o) = r.cpu_offload {
        run.cpu_offload = o;
    }
    run.loras = int_in("run.loras", r.loras, 0, 0, 64)?;
    run.lora_rank = int_in("run.lora_rank", r.lora_rank, run.lora_rank, 1, 4096)?;
    run.controlnets = int_in("run.controlnets", r.controlnets, 0, 0, 16)?;
    if run.controlnets > 0 && w.model.controlnet_params <= 0.0 {
        return Err(Message::new("resolve.diffusion.controlnet")
            .text("model", &w.model.id)
            .into());
    }
    if run.ip_adapter && w.model.ip_adapter_params <= 0.0 {
        return Err(Message::new("resolve.diffusion.ip_adapter")
            .text("model", &w.model.id)
            .into());
    }
    run.reserve_vram_bytes = gib_field("run.reserve_vram_gib", r.reserve_vram_gib)?;
    run.vram_headroom_bytes = gib_field("run.vram_headroom_gib", r.vram_headroom_gib)?.unwrap_or(0);
    if let Some(d) = r.dynamic_vram {
        run.dynamic_vram = d;
    }
    if let Some(o) = r.os {
        run.os = o;
    }
    run.torch = torch_field(r.torch_version.as_deref())?;
    run.other_processes_bytes =
        gib_field("run.other_processes_gib", r.other_processes_gib)?.unwrap_or(0);
    Ok(w)
}

impl DiffusionWorkload {
    /// The 16-bit format this GPU computes in: bf16 where supported, else fp16.
    pub fn run_default_16bit(&self) -> WeightFormat {
        if self.gpu.bf16 {
            WeightFormat::Bf16
        } else {
            WeightFormat::Fp16
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn resolve_text(t: &str) -> Result<DiffusionWorkload, String> {
        let f = WorkloadFile::parse(t, "w.toml")?;
        let gpu = f.gpu.resolve()?;
        let _ = Path::new(".");
        Ok(resolve(&f, gpu)?)
    }

    #[test]
    fn issue_example_resolves_with_defaults() {
        let w = resolve_text(
            "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"sdxl\"\n[run]\ntask = \"diffusion\"\nwidth = 1024\nheight = 1024\n",
        );
        let w = match w {
            Ok(w) => w,
            // The GPU catalog may not carry this card yet; a bare capacity must work regardless.
            Err(_) => resolve_text(
                "[gpu]\nvram_gib = 12\n[model]\npreset = \"sdxl\"\n[run]\ntask = \"diffusion\"\n",
            )
            .unwrap(),
        };
        assert_eq!((w.run.width, w.run.height, w.run.batch), (1024, 1024, 1));
        assert_eq!(w.run.engine, Engine::ComfyUi);
        assert_eq!(w.text_encoders.len(), 2);
    }

    #[test]
    fn bad_fields_name_themselves() {
        let base =
            "[gpu]\nvram_gib = 12\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\n";
        for (extra, needle) in [
            ("width = 1001\n", "multiple of 8"),
            ("width = 0\n", "run.width"),
            ("frames = 5\n", "run.frames"),
            ("weights = \"awq-4bit\"\n", "LLM-only"),
            ("weights = \"q9\"\n", "run.weights"),
            ("engine = \"vllm\"\n", "comfyui or diffusers"),
            (
                "text_encoder_weights = \"fp8,fp8,fp8\"\n",
                "2 text encoders",
            ),
            ("vram_mode = \"tiny\"\n", "run.vram_mode"),
            ("reserve_vram_gib = -1\n", "run.reserve_vram_gib"),
            ("vram_headroom_gib = -2\n", "run.vram_headroom_gib"),
            ("dynamic_vram = \"maybe\"\n", "run.dynamic_vram"),
            ("torch_version = \"latest\"\n", "run.torch_version"),
            ("os = \"beos\"\n", "run.os"),
        ] {
            let e = resolve_text(&format!("{base}{extra}")).unwrap_err();
            assert!(e.contains(needle), "{extra}: {e}");
        }
        let e = resolve_text("[gpu]\nvram_gib = 12\n[model]\npreset = \"fluxx\"\n").unwrap_err();
        assert!(e.contains("flux"), "{e}");
    }

    /// The ComfyUI launch flags as fields: `--disable-dynamic-vram`, `--vram-headroom`,
    /// `--reserve-vram`, the PyTorch version and the OS decide the memory mode and the reserve.
    #[test]
    fn launch_fields_reach_the_memory_mode() {
        use crate::engines::comfyui::memory::MemoryMode;
        let base =
            "[gpu]\nvram_gib = 24\n[model]\npreset = \"sdxl\"\n[run]\ntask = \"diffusion\"\n";
        let w = resolve_text(base).unwrap();
        let m = w.comfy_memory().unwrap();
        assert_eq!(m.mode, MemoryMode::Dynamic);
        assert_eq!(w.run.reserve_vram_bytes, None);
        let w = resolve_text(&format!(
            "{base}dynamic_vram = \"off\"\nos = \"linux\"\nvram_headroom_gib = 1\n"
        ))
        .unwrap();
        let m = w.comfy_memory().unwrap();
        assert_eq!((m.mode, m.reserve_bytes), (MemoryMode::Classic, 400 << 20));
        assert_eq!(w.run.vram_headroom_bytes, 1 << 30);
        let w = resolve_text(&format!(
            "{base}torch_version = \"2.7.1+cu126\"\nreserve_vram_gib = 1.5\n"
        ))
        .unwrap();
        let m = w.comfy_memory().unwrap();
        assert_eq!(m.mode, MemoryMode::Classic);
        assert_eq!(m.reserve_bytes, 3 << 29);
    }

    #[test]
    fn per_encoder_formats_and_quantized_defaults() {
        let w = resolve_text("[gpu]\nvram_gib = 24\n[model]\npreset = \"sd3-medium\"\n[run]\nweights = \"fp8\"\ntext_encoder_weights = \"fp8, fp16, fp8\"\n").unwrap();
        assert_eq!(
            w.run.text_encoder_weights,
            vec![WeightFormat::Fp8, WeightFormat::Fp16, WeightFormat::Fp8]
        );
        let w = resolve_text(
            "[gpu]\nvram_gib = 24\n[model]\npreset = \"flux-dev\"\n[run]\nweights = \"q4_0\"\n",
        )
        .unwrap();
        assert_eq!(w.run.text_encoder_weights, vec![WeightFormat::Bf16; 2]);
        assert!(!w.run.cfg, "Flux dev is guidance-distilled");
    }
}
