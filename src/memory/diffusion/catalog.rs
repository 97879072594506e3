//! The diffusion presets (`presets/diffusion.toml`): pipelines and their parts with real sizes.
//! Embedded at build time; checked on parse so a bad row is a clear error, not a wrong figure.

use crate::types::error::{Shelf, UnknownPreset};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

const DIFFUSION_TOML: &str = include_str!("../../../presets/diffusion.toml");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartKind {
    TextEncoder,
    Vae,
}

/// A text encoder or VAE.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    pub id: String,
    pub kind: PartKind,
    pub name: String,
    pub params: f64,
    /// Parameters quantizers leave in 16-bit (embeddings, norms).
    #[serde(default)]
    pub unquantized_params: f64,
    /// Parameters transformers keeps in fp32 under fp16 and bitsandbytes (T5 `wo`).
    #[serde(default)]
    pub keep_fp32_params: f64,
    /// Prompt tokens (text encoders).
    #[serde(default)]
    pub tokens: u32,
    /// VAE decode peak per 2^20 output pixels (per chunk for video VAEs), GiB.
    #[serde(default)]
    pub gib_per_mpx_fp32: f64,
    #[serde(default)]
    pub gib_per_mpx_16bit: f64,
    /// Output frames a video VAE decodes at once; 0 for image VAEs.
    #[serde(default)]
    pub chunk_frames: u32,
    /// Output frames per latent frame of a video VAE (the first frame is kept on its own:
    /// `(frames - 1) / t + 1` latent frames); 0 for image VAEs.
    #[serde(default)]
    pub temporal_compression: u32,
    /// VAE decoder FLOPs per decoded 2^20 pixels, GFLOPs (0 = not known; `speed::diffusion`).
    #[serde(default)]
    pub decode_gflops_per_mpx: f64,
    /// The release file names ComfyUI users load this part from (see `comfy_files` below).
    #[serde(default)]
    pub comfy_files: Vec<String>,
    /// Tensor names a file of this part holds (see `header_tensors` below).
    #[serde(default)]
    pub header_tensors: Vec<String>,
    pub source: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    Unet,
    Dit,
    Video,
}

/// A diffusion model preset; field meanings are documented at the top of the TOML file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiffusionModel {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// diffusers pipeline classes (`_class_name` of model_index.json) that load this model.
    #[serde(default)]
    pub pipelines: Vec<String>,
    pub kind: ModelKind,
    pub params: f64,
    pub linear_share: f64,
    pub text_encoders: Vec<String>,
    pub vae: String,
    pub native_width: u32,
    pub native_height: u32,
    #[serde(default)]
    pub native_frames: u32,
    pub cfg: bool,
    pub attn_div: u32,
    pub attn_heads: u32,
    #[serde(default)]
    pub joint_text_tokens: u32,
    pub act_gib_per_mpx: f64,
    #[serde(default)]
    pub vae_force_upcast: bool,
    pub lora_mib_per_rank: f64,
    pub controlnet_params: f64,
    pub ip_adapter_params: f64,
    /// FLOPs of one denoiser forward of one sample at the native size, GFLOPs, and the part of
    /// them that grows with the square of the image tokens (self-attention); 0 = not known
    /// (`speed::diffusion`; counted by `tools/diffusion_flops.py`).
    #[serde(default)]
    pub denoise_gflops: f64,
    #[serde(default)]
    pub attention_gflops: f64,
    /// File-name stems of this model's releases as ComfyUI users load them, compared token by
    /// token with a workflow's file names (`plan::workflow::files`).
    #[serde(default)]
    pub comfy_files: Vec<String>,
    /// Tensor names every file of this model holds, as ComfyUI's model detection tells
    /// architectures apart (`plan::workflow::headers`): a file whose header has them all is
    /// of this family, its exact parameter count says which member.
    #[serde(default)]
    pub header_tensors: Vec<String>,
    pub source: String,
}

impl DiffusionModel {
    /// The step image sizes move in: a DiT patchifies 8x-downscaled latents in 2x2 patches, so
    /// sizes are multiples of 16 (diffusers Flux/SD3 pipelines round to `vae_scale_factor * 2`);
    /// a UNet halves the latent three times, so multiples of 64 avoid padding at its lowest level
    /// (diffusers StableDiffusion pipelines only require 8; 64 is the buckets' convention).
    pub fn size_step(&self) -> u32 {
        match self.kind {
            ModelKind::Unet => 64,
            ModelKind::Dit | ModelKind::Video => 16,
        }
    }
}

/// All diffusion presets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiffusionCatalog {
    #[serde(rename = "part", default)]
    pub parts: Vec<Part>,
    #[serde(rename = "model", default)]
    pub models: Vec<DiffusionModel>,
}

static CATALOG: OnceLock<DiffusionCatalog> = OnceLock::new();

impl DiffusionCatalog {
    /// The embedded catalog. The file is part of the build and checked by tests, so a parse
    /// failure here is a build defect.
    pub fn get() -> &'static DiffusionCatalog {
        CATALOG.get_or_init(|| {
            parse(DIFFUSION_TOML).expect("presets/diffusion.toml is valid (checked by tests)")
        })
    }

    pub fn model(&self, id: &str) -> Result<&DiffusionModel, UnknownPreset> {
        let key = id.trim().to_ascii_lowercase();
        self.models
            .iter()
            .find(|m| m.id == key || m.aliases.iter().any(|a| a.eq_ignore_ascii_case(&key)))
            .ok_or_else(|| {
                let names = self.models.iter().map(|m| m.id.as_str());
                UnknownPreset::new(Shelf::Diffusion, id, names)
            })
    }

    pub fn part(&self, id: &str) -> Option<&Part> {
        self.parts.iter().find(|p| p.id == id)
    }
}

/// The `presets list diffusion` table: models with their parts and native size.
pub fn listing() -> String {
    let c = DiffusionCatalog::get();
    let mut out = format!(
        "{:<18} {:>8} {:>10}  {:<28} NAME\n",
        "DIFFUSION MODEL", "PARAMS", "NATIVE", "TEXT ENCODERS + VAE"
    );
    for m in &c.models {
        let size = if m.native_frames > 0 {
            format!("{}x{}x{}", m.native_width, m.native_height, m.native_frames)
        } else {
            format!("{}x{}", m.native_width, m.native_height)
        };
        let parts = format!("{} + {}", m.text_encoders.join(","), m.vae);
        out += &format!(
            "{:<18} {:>7.2}B {:>10}  {:<28} {}\n",
            m.id,
            m.params / 1e9,
            size,
            parts,
            m.name
        );
    }
    out
}

fn positive(what: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(format!("{what} must be a positive number, got {v}"))
    }
}

/// Parses and checks the catalog text: sizes positive, shares in range, references resolve.
pub fn parse(text: &str) -> Result<DiffusionCatalog, String> {
    let c: DiffusionCatalog = toml::from_str(text)
        .map_err(|e| format!("presets/diffusion.toml: {}", e.message().trim()))?;
    let err = |id: &str, e: String| format!("presets/diffusion.toml: {id}: {e}");
    for p in &c.parts {
        positive("params", p.params).map_err(|e| err(&p.id, e))?;
        if p.unquantized_params + p.keep_fp32_params > p.params
            || p.unquantized_params < 0.0
            || p.keep_fp32_params < 0.0
        {
            return Err(err(
                &p.id,
                "unquantized_params + keep_fp32_params exceed params".into(),
            ));
        }
        match p.kind {
            PartKind::TextEncoder if p.tokens == 0 => {
                return Err(err(&p.id, "a text encoder needs tokens".into()));
            }
            PartKind::Vae => {
                positive("gib_per_mpx_fp32", p.gib_per_mpx_fp32).map_err(|e| err(&p.id, e))?;
                positive("gib_per_mpx_16bit", p.gib_per_mpx_16bit).map_err(|e| err(&p.id, e))?;
                if (p.chunk_frames > 0) != (p.temporal_compression > 0) {
                    return Err(err(
                        &p.id,
                        "a video VAE (chunk_frames) needs its temporal_compression, and only it"
                            .into(),
                    ));
                }
            }
            _ => {}
        }
    }
    for m in &c.models {
        positive("params", m.params).map_err(|e| err(&m.id, e))?;
        positive("act_gib_per_mpx", m.act_gib_per_mpx).map_err(|e| err(&m.id, e))?;
        if !(0.0..=1.0).contains(&m.linear_share) {
            return Err(err(
                &m.id,
                format!("linear_share {} is not within 0..=1", m.linear_share),
            ));
        }
        if m.attn_div == 0 || m.attn_heads == 0 || m.native_width == 0 || m.native_height == 0 {
            return Err(err(
                &m.id,
                "attn_div, attn_heads and the native size must be positive".into(),
            ));
        }
        if (m.kind == ModelKind::Video) != (m.native_frames > 0) {
            return Err(err(
                &m.id,
                "video models (and only they) give native_frames".into(),
            ));
        }
        for te in &m.text_encoders {
            match c.part(te) {
                Some(p) if p.kind == PartKind::TextEncoder => {}
                _ => {
                    return Err(err(
                        &m.id,
                        format!("text encoder '{te}' is not a [[part]] of kind text_encoder"),
                    ));
                }
            }
        }
        match c.part(&m.vae) {
            Some(p) if p.kind == PartKind::Vae => {}
            _ => {
                return Err(err(
                    &m.id,
                    format!("vae '{}' is not a [[part]] of kind vae", m.vae),
                ));
            }
        }
        if (m.kind == ModelKind::Video) != c.part(&m.vae).is_some_and(|v| v.chunk_frames > 0) {
            return Err(err(
                &m.id,
                "video models need a video VAE (chunk_frames) and image models an image VAE".into(),
            ));
        }
    }
    let mut ids: Vec<&str> = c
        .models
        .iter()
        .map(|m| m.id.as_str())
        .chain(c.parts.iter().map(|p| p.id.as_str()))
        .collect();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("presets/diffusion.toml: duplicate id '{}'", w[0]));
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalog_parses_with_the_issue_families() {
        let c = DiffusionCatalog::get();
        for id in [
            "sd15",
            "sd21",
            "sdxl",
            "sdxl-refiner",
            "sd35-medium",
            "sd35-large",
            "flux-dev",
            "flux-schnell",
        ] {
            assert!(c.model(id).is_ok(), "{id}");
        }
        assert!(c.models.iter().any(|m| m.kind == ModelKind::Video));
        for id in ["clip-l", "openclip-g", "t5-xxl", "sd-vae", "sd3-vae"] {
            assert!(c.part(id).is_some(), "{id}");
        }
        // Flux.1-dev transformer is 23.8 GB in bf16 (diffusers quantization blog).
        let flux = c.model("black-forest-labs/FLUX.1-dev").unwrap();
        assert!((flux.params * 2.0 / 1e9 - 23.8).abs() < 0.01);
    }

    #[test]
    fn listing_names_every_model() {
        let l = listing();
        assert!(
            DiffusionCatalog::get()
                .models
                .iter()
                .all(|m| l.contains(&m.id))
        );
        assert!(l.contains("clip-l,t5-xxl + sd3-vae"), "{l}");
    }

    #[test]
    fn unknown_model_suggests_near_ids() {
        let e = DiffusionCatalog::get().model("flux-schnel").unwrap_err();
        assert!(e.near.iter().any(|n| n == "flux-schnell"), "{e}");
        assert!(e.to_string().contains("presets list diffusion"), "{e}");
    }

    #[test]
    fn bad_rows_are_clear_errors() {
        let ok = "[[part]]\nid=\"v\"\nkind=\"vae\"\nname=\"v\"\nparams=1.0\ngib_per_mpx_fp32=1.0\ngib_per_mpx_16bit=1.0\nsource=\"x\"\n";
        assert!(parse(ok).is_ok());
        let e = parse(&ok.replace("params=1.0", "params=-1.0")).unwrap_err();
        assert!(e.contains("v:") && e.contains("params"), "{e}");
        let e = parse(&ok.replace("kind=\"vae\"", "kind=\"unet\"")).unwrap_err();
        assert!(e.contains("presets/diffusion.toml"), "{e}");
        let model = "[[model]]\nid=\"m\"\nname=\"m\"\nkind=\"unet\"\nparams=1.0\nlinear_share=0.5\ntext_encoders=[\"nope\"]\nvae=\"v\"\nnative_width=8\nnative_height=8\ncfg=true\nattn_div=8\nattn_heads=1\nact_gib_per_mpx=1.0\nlora_mib_per_rank=1.0\ncontrolnet_params=0.0\nip_adapter_params=0.0\nsource=\"x\"\n";
        let e = parse(&format!("{ok}{model}")).unwrap_err();
        assert!(e.contains("'nope'"), "{e}");
        let e = parse(&format!(
            "{ok}{}",
            model
                .replace("[\"nope\"]", "[]")
                .replace("linear_share=0.5", "linear_share=1.5")
        ))
        .unwrap_err();
        assert!(e.contains("linear_share"), "{e}");
        assert!(parse(&format!("{ok}{}", model.replace("[\"nope\"]", "[]"))).is_ok());
    }
}
