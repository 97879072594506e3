//! ComfyUI launch flags and the nodes to use. Flags from ComfyUI `comfy/cli_args.py`: the VRAM
//! modes (`--lowvram`, `--novram`, `--highvram`, `--gpu-only`), dynamic VRAM
//! (`--enable-dynamic-vram`, `--disable-dynamic-vram`, `--vram-headroom`), `--reserve-vram`, VAE
//! precision (`--bf16-vae`, `--fp32-vae`), fp8 storage (`--fp8_e4m3fn-unet`,
//! `--fp8_e4m3fn-text-enc`). Node names are ComfyUI's built-ins (`VAEDecodeTiled`,
//! `CLIPLoader`'s device input, `EmptyLatentImage`) and city96/ComfyUI-GGUF's `UnetLoaderGGUF`.

use crate::export::{command_line, comments};
use crate::memory::diffusion::{DiffusionWorkload, DynamicVram, VramMode};
use crate::types::dtype::WeightFormat;

pub fn render(d: &DiffusionWorkload) -> String {
    let r = &d.run;
    let mut flags: Vec<(&str, Option<String>)> = Vec::new();
    match r.vram_mode {
        VramMode::Normal => {}
        VramMode::Low => flags.push(("--lowvram", None)),
        VramMode::No => flags.push(("--novram", None)),
        VramMode::High => flags.push(("--highvram", None)),
        VramMode::GpuOnly => flags.push(("--gpu-only", None)),
    }
    match r.dynamic_vram {
        DynamicVram::Auto => {}
        DynamicVram::On => flags.push(("--enable-dynamic-vram", None)),
        DynamicVram::Off => flags.push(("--disable-dynamic-vram", None)),
    }
    // Only what the plan was given: ComfyUI's own default differs by mode and OS.
    if let Some(b) = r.reserve_vram_bytes {
        flags.push((
            "--reserve-vram",
            Some(format!("{:.2}", crate::units::gib(b))),
        ));
    }
    if r.vram_headroom_bytes > 0 {
        flags.push((
            "--vram-headroom",
            Some(format!("{:.2}", crate::units::gib(r.vram_headroom_bytes))),
        ));
    }
    if r.weights == WeightFormat::Fp8 {
        flags.push(("--fp8_e4m3fn-unet", None));
    }
    if r.text_encoder_weights.contains(&WeightFormat::Fp8) {
        flags.push(("--fp8_e4m3fn-text-enc", None));
    }
    // bf16 has fp32's exponent range, so VAEs that overflow in fp16 (SDXL's, config
    // `force_upcast`) decode correctly at half fp32's memory.
    if r.weights == WeightFormat::Fp32 {
        flags.push(("--fp32-vae", None));
    } else if d.gpu.bf16 {
        flags.push(("--bf16-vae", None));
    }
    let mut notes = vec![
        format!(
            "VRAM Doctor plan for {} on {}: {}×{}, batch {}.",
            d.model.name, d.gpu.name, r.width, r.height, r.batch
        ),
        "Nodes:".into(),
        format!(
            "  EmptyLatentImage (Empty Latent Image): width {}, height {}, batch_size {}.",
            r.width, r.height, r.batch
        ),
    ];
    if r.weights.is_gguf() {
        notes.push(format!(
            "  UnetLoaderGGUF (Unet Loader (GGUF), from city96/ComfyUI-GGUF) with a {} file of the model.",
            r.weights.to_string().to_ascii_uppercase()
        ));
    } else if r.weights == WeightFormat::Nf4 {
        notes.push("  CheckpointLoaderNF4 (from comfyanonymous/ComfyUI_bitsandbytes_NF4) with an NF4 checkpoint.".into());
    } else if r.weights == WeightFormat::Fp8 {
        notes.push(
            "  Load Diffusion Model: weight_dtype fp8_e4m3fn (same as --fp8_e4m3fn-unet).".into(),
        );
    }
    if r.text_encoder_on_cpu {
        notes.push(
            "  CLIPLoader / DualCLIPLoader: device cpu (text encoders run on the CPU).".into(),
        );
    }
    if r.vae_tiling {
        notes.push(format!(
            "  VAEDecodeTiled (VAE Decode (Tiled)) instead of VAE Decode: tile_size {}.",
            r.vae_tile
        ));
    }
    if r.tiny_vae {
        notes.push(
            "  Load VAE: the TAESD decoder of the model family (taesd, taesdxl, taesd3, taef1)."
                .into(),
        );
    }
    let mut s = comments(&notes);
    s.push_str(&command_line("python main.py", &flags));
    s
}
