//! diffusers pipeline code with the plan's memory calls: `enable_model_cpu_offload()`,
//! `enable_sequential_cpu_offload()`, `vae.enable_tiling()`, `vae.enable_slicing()`,
//! `enable_layerwise_casting()` for fp8 storage and `PipelineQuantizationConfig` for
//! bitsandbytes (diffusers docs "Reduce memory usage", "Quantization → bitsandbytes").

use crate::export::{comments, slug};
use crate::memory::diffusion::{CpuOffload, DiffusionWorkload, ModelKind};
use crate::types::dtype::WeightFormat;

/// The pipeline attribute holding the denoiser.
fn denoiser(d: &DiffusionWorkload) -> &'static str {
    if d.model.kind == ModelKind::Unet {
        "unet"
    } else {
        "transformer"
    }
}

/// The pipeline attribute of the i-th text encoder (`text_encoder`, `text_encoder_2`, …).
fn text_encoder(i: usize) -> String {
    if i == 0 {
        "text_encoder".into()
    } else {
        format!("text_encoder_{}", i + 1)
    }
}

pub fn render(d: &DiffusionWorkload) -> String {
    let r = &d.run;
    let dtype = if r.weights == WeightFormat::Fp32 {
        "torch.float32"
    } else if d.gpu.bf16 {
        "torch.bfloat16"
    } else {
        "torch.float16"
    };
    let mut notes = vec![format!(
        "VRAM Doctor plan for {} on {}: {}×{}, batch {}.",
        d.model.name, d.gpu.name, r.width, r.height, r.batch
    )];
    let bnb = match r.weights {
        WeightFormat::Nf4 => Some((
            "bitsandbytes_4bit",
            format!(
                "{{\"load_in_4bit\": True, \"bnb_4bit_quant_type\": \"nf4\", \"bnb_4bit_compute_dtype\": {dtype}}}"
            ),
        )),
        WeightFormat::Fp4 => Some((
            "bitsandbytes_4bit",
            format!(
                "{{\"load_in_4bit\": True, \"bnb_4bit_quant_type\": \"fp4\", \"bnb_4bit_compute_dtype\": {dtype}}}"
            ),
        )),
        WeightFormat::Int8 => Some(("bitsandbytes_8bit", "{\"load_in_8bit\": True}".to_string())),
        _ => None,
    };
    if r.weights.is_gguf() {
        notes.push(format!(
            "{} weights: load the {} from a GGUF file with GGUFQuantizationConfig and pass it to the pipeline.",
            r.weights, denoiser(d)
        ));
    }
    if r.text_encoder_on_cpu {
        notes.push("Text encoders on the CPU: run pipe.encode_prompt on a CPU copy of the pipeline and pass prompt_embeds (and pooled_prompt_embeds) here.".into());
    }
    if r.tiny_vae {
        notes.push(
            "Tiny VAE: set pipe.vae = AutoencoderTiny.from_pretrained(<the TAESD of this family>)."
                .into(),
        );
    }
    let mut s = comments(&notes);
    s.push_str("import torch\nfrom diffusers import DiffusionPipeline");
    if bnb.is_some() {
        s.push_str(", PipelineQuantizationConfig");
    }
    s.push_str("\n\npipe = DiffusionPipeline.from_pretrained(\n");
    s.push_str(&format!(
        "    \"REPLACE-with-the-repo-of-{}\",\n    torch_dtype={dtype},\n",
        slug(&d.model.name)
    ));
    if let Some((backend, kwargs)) = &bnb {
        s.push_str(&format!(
            "    quantization_config=PipelineQuantizationConfig(\n        quant_backend=\"{backend}\",\n        quant_kwargs={kwargs},\n        components_to_quantize=[\"{}\"],\n    ),\n",
            denoiser(d)
        ));
    }
    s.push_str(")\n");
    // fp8 storage with 16-bit compute; must come before offloading hooks are attached.
    let cast = |attr: &str| {
        format!(
            "pipe.{attr}.enable_layerwise_casting(storage_dtype=torch.float8_e4m3fn, compute_dtype={dtype})\n"
        )
    };
    if r.weights == WeightFormat::Fp8 {
        s.push_str(&cast(denoiser(d)));
    }
    for (i, f) in r.text_encoder_weights.iter().enumerate() {
        if *f == WeightFormat::Fp8 {
            s.push_str(&cast(&text_encoder(i)));
        }
    }
    s.push_str(match r.cpu_offload {
        CpuOffload::None => "pipe.to(\"cuda\")\n",
        CpuOffload::Model => "pipe.enable_model_cpu_offload()\n",
        CpuOffload::Sequential => "pipe.enable_sequential_cpu_offload()\n",
    });
    if r.vae_tiling {
        s.push_str("pipe.vae.enable_tiling()\n");
    }
    if r.vae_slicing {
        s.push_str("pipe.vae.enable_slicing()\n");
    }
    let frames = if d.model.kind == ModelKind::Video {
        format!("\n    num_frames={},", r.frames)
    } else {
        String::new()
    };
    let (per_prompt, out) = if d.model.kind == ModelKind::Video {
        ("num_videos_per_prompt", "frames")
    } else {
        ("num_images_per_prompt", "images")
    };
    s.push_str(&format!(
        "\nresult = pipe(\n    prompt=\"a photo of a cat\",\n    width={},\n    height={},{frames}\n    {per_prompt}={},\n).{out}\n",
        r.width, r.height, r.batch
    ));
    s
}
