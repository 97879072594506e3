//! Which catalog model or part a workflow's file name is, and the storage format its name
//! states.
//!
//! ComfyUI loaders name files as they sit in its models folders (`ckpt_name`, `unet_name`,
//! `clip_name1` …), possibly under a subfolder (`SDXL/juggernaut.safetensors`). Release names
//! follow a few conventions (`flux1-dev-fp8`, `t5xxl_fp8_e4m3fn_scaled`, `wan2.1_t2v_1.3B_fp16`,
//! `flux1-dev-Q4_K_S.gguf`), so a name is split into tokens at every character that is not a
//! letter or digit and compared with the `comfy_files` stems of `presets/diffusion.toml`, the
//! longest match winning. A name that matches nothing is not guessed: the planner reports it
//! and asks for it (`--comfy-file NAME=PRESET`).

use crate::memory::diffusion::{DiffusionCatalog, PartKind};
use crate::types::dtype::WeightFormat;

/// What a loader input holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// A denoising model (checkpoint, UNet, GGUF).
    Model,
    TextEncoder,
    Vae,
}

impl Want {
    pub fn noun(self) -> &'static str {
        match self {
            Want::Model => "diffusion model",
            Want::TextEncoder => "text encoder",
            Want::Vae => "VAE",
        }
    }

    /// The diffusion catalog's rows of this kind, as the matchers need them: the denoising
    /// models, or the parts (text encoders, VAEs) of that kind.
    pub fn rows(self) -> Vec<CatalogRow> {
        let cat = DiffusionCatalog::get();
        let kind = match self {
            Want::Model => {
                return cat
                    .models
                    .iter()
                    .map(|m| CatalogRow {
                        id: &m.id,
                        params: m.params,
                        comfy_files: &m.comfy_files,
                        header_tensors: &m.header_tensors,
                    })
                    .collect();
            }
            Want::TextEncoder => PartKind::TextEncoder,
            Want::Vae => PartKind::Vae,
        };
        cat.parts
            .iter()
            .filter(|p| p.kind == kind)
            .map(|p| CatalogRow {
                id: &p.id,
                params: p.params,
                comfy_files: &p.comfy_files,
                header_tensors: &p.header_tensors,
            })
            .collect()
    }
}

/// What a file is matched against: a catalog row's id, size, the file-name stems ComfyUI users
/// give it, and the tensor names its header must hold.
pub struct CatalogRow {
    pub id: &'static str,
    pub params: f64,
    pub comfy_files: &'static [String],
    pub header_tensors: &'static [String],
}

/// File extensions ComfyUI's folder lists take (folder_paths.py `supported_pt_extensions`, plus
/// `.gguf` for ComfyUI-GGUF).
const EXTENSIONS: [&str; 8] = [
    ".safetensors",
    ".sft",
    ".ckpt",
    ".pt",
    ".pt2",
    ".pth",
    ".bin",
    ".gguf",
];

/// The file name without its folders and extension.
pub fn stem(name: &str) -> &str {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let lower = base.to_ascii_lowercase();
    EXTENSIONS
        .iter()
        .find(|e| lower.ends_with(*e))
        .map_or(base, |e| &base[..base.len() - e.len()])
}

/// Lower-case tokens of a name: split at every character that is not an ASCII letter or digit.
pub fn tokens(name: &str) -> Vec<String> {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Whether `needle` occurs in `hay` as consecutive whole tokens.
fn contains(hay: &[String], needle: &[String]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// The catalog id of a file name: a model or a part of the wanted kind whose `comfy_files`
/// stem occurs in the name, the longest (in tokens, then characters) winning.
pub fn identify(name: &str, want: Want) -> Option<&'static str> {
    let hay = tokens(stem(name));
    want.rows()
        .into_iter()
        .flat_map(|r| {
            r.comfy_files
                .iter()
                .map(move |f| (r.id, tokens(f), f.len()))
        })
        .filter(|(_, t, _)| contains(&hay, t))
        .max_by_key(|(_, t, chars)| (t.len(), *chars))
        .map(|(id, _, _)| id)
}

/// The storage format a file name states: `fp8` / `e4m3fn` / `e5m2`, `fp16`, `bf16`, `fp32`,
/// `nf4`, or for a `.gguf` the GGUF type in its name (`Q4_K_S`, `Q8_0`, `IQ4_XS`).
pub fn format_in_name(name: &str) -> Option<WeightFormat> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let t = tokens(stem(name));
    if base.to_ascii_lowercase().ends_with(".gguf") {
        // The longest run of tokens that reads as a GGUF type, starting where one starts.
        for i in 0..t.len() {
            for n in (1..=3).rev() {
                if i + n <= t.len() {
                    let joined = t[i..i + n].join("_");
                    if let Ok(f @ WeightFormat::Gguf(_)) = joined.parse::<WeightFormat>() {
                        return Some(f);
                    }
                }
            }
        }
        return None;
    }
    let has = |s: &str| t.iter().any(|x| x == s);
    if has("fp8") || has("e4m3fn") || has("e5m2") || t.iter().any(|x| x.starts_with("fp8e")) {
        Some(WeightFormat::Fp8)
    } else if has("nf4") {
        Some(WeightFormat::Nf4)
    } else if has("bf16") {
        Some(WeightFormat::Bf16)
    } else if has("fp16") || has("f16") {
        Some(WeightFormat::Fp16)
    } else if has("fp32") || has("f32") {
        Some(WeightFormat::Fp32)
    } else {
        None
    }
}

/// What the user says about a workflow's files: `NAME=PRESET` pairs for names the catalog does
/// not know (`--comfy-file`, the name compared without folders, case-insensitively), and the
/// ComfyUI models folder whose files' headers say exactly what each is (`--comfy-models`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answers {
    pairs: Vec<(String, String)>,
    pub models: Option<super::headers::ModelsDir>,
}

impl Answers {
    /// Parses `NAME=PRESET` pairs; each preset must be a diffusion model or part id.
    pub fn parse(pairs: &[String]) -> Result<Self, String> {
        let cat = DiffusionCatalog::get();
        let mut out = Vec::new();
        for p in pairs {
            let Some((name, id)) = p.rsplit_once('=') else {
                return Err(format!(
                    "--comfy-file '{}': write it as FILE=PRESET (e.g. 'my_flux.safetensors=flux-dev')",
                    crate::printable::printable_cut(p, 80)
                ));
            };
            let id = id.trim();
            let known = cat.model(id).map(|m| m.id.clone()).ok().or_else(|| {
                cat.part(&id.to_ascii_lowercase())
                    .map(|part| part.id.clone())
            });
            let Some(id) = known else {
                return Err(format!(
                    "--comfy-file '{}': '{}' is not a diffusion model or part id (see `vram-doctor presets list diffusion`)",
                    crate::printable::printable_cut(p, 80),
                    crate::printable::printable_cut(id, 40)
                ));
            };
            out.push((stem(name.trim()).to_ascii_lowercase(), id));
        }
        Ok(Answers {
            pairs: out,
            models: None,
        })
    }

    /// The same answers with the files looked up in a ComfyUI models folder.
    pub fn with_models(mut self, dir: super::headers::ModelsDir) -> Self {
        self.models = Some(dir);
        self
    }

    /// The catalog id given for `name` that is of the wanted kind.
    pub fn get(&self, name: &str, want: Want) -> Option<&str> {
        let key = stem(name).to_ascii_lowercase();
        let cat = DiffusionCatalog::get();
        self.pairs
            .iter()
            .filter(|(n, _)| *n == key)
            .map(|(_, id)| id.as_str())
            .find(|id| match want {
                Want::Model => cat.models.iter().any(|m| m.id == *id),
                Want::TextEncoder => cat
                    .part(id)
                    .is_some_and(|p| p.kind == PartKind::TextEncoder),
                Want::Vae => cat.part(id).is_some_and(|p| p.kind == PartKind::Vae),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_names_map_to_the_catalog() {
        for (name, want, id) in [
            ("v1-5-pruned-emaonly-fp16.safetensors", Want::Model, "sd15"),
            (
                "SDXL/sd_xl_base_1.0_0.9vae.safetensors",
                Want::Model,
                "sdxl",
            ),
            ("sd_xl_refiner_1.0.safetensors", Want::Model, "sdxl-refiner"),
            (
                "sd3.5_large_fp8_scaled.safetensors",
                Want::Model,
                "sd35-large",
            ),
            ("flux1-dev-Q4_K_S.gguf", Want::Model, "flux-dev"),
            ("flux1-schnell-fp8.safetensors", Want::Model, "flux-schnell"),
            (
                "wan2.1_t2v_1.3B_fp16.safetensors",
                Want::Model,
                "wan21-t2v-1.3b",
            ),
            (
                "hunyuan_video_t2v_720p_bf16.safetensors",
                Want::Model,
                "hunyuan-video",
            ),
            ("t5xxl_fp8_e4m3fn.safetensors", Want::TextEncoder, "t5-xxl"),
            (
                "umt5_xxl_fp8_e4m3fn_scaled.safetensors",
                Want::TextEncoder,
                "umt5-xxl",
            ),
            ("clip_l.safetensors", Want::TextEncoder, "clip-l"),
            ("clip_g.safetensors", Want::TextEncoder, "openclip-g"),
            ("ae.safetensors", Want::Vae, "sd3-vae"),
            ("wan_2.1_vae.safetensors", Want::Vae, "wan-vae"),
            (
                "hunyuan_video_vae_bf16.safetensors",
                Want::Vae,
                "hunyuan-video-vae",
            ),
        ] {
            assert_eq!(identify(name, want), Some(id), "{name}");
        }
        // Whole tokens only: "ae" is not inside "hunyuan_video_vae", a UNet name is no VAE.
        assert_eq!(identify("my_vae.safetensors", Want::Vae), None);
        assert_eq!(identify("juggernautXL_v9.safetensors", Want::Model), None);
        assert_eq!(identify("flux1-dev.safetensors", Want::Vae), None);
    }

    #[test]
    fn formats_stated_in_names() {
        let f = |n: &str| format_in_name(n).map(|f| f.to_string());
        assert_eq!(
            f("t5xxl_fp8_e4m3fn_scaled.safetensors").as_deref(),
            Some("fp8")
        );
        assert_eq!(f("flux1-dev-Q4_K_S.gguf").as_deref(), Some("q4_k_s"));
        assert_eq!(f("flux1-dev-Q8_0.gguf").as_deref(), Some("q8_0"));
        assert_eq!(
            f("wan2.1_t2v_1.3B_fp16.safetensors").as_deref(),
            Some("fp16")
        );
        assert_eq!(
            f("hunyuan_video_vae_bf16.safetensors").as_deref(),
            Some("bf16")
        );
        assert_eq!(f("flux1-dev.safetensors"), None);
        assert_eq!(f("model.gguf"), None);
    }

    #[test]
    fn answers_name_presets_of_the_right_kind() {
        let a = Answers::parse(&["models/My_Flux.safetensors=flux-dev".into()]).unwrap();
        assert_eq!(a.get("My_Flux.safetensors", Want::Model), Some("flux-dev"));
        assert_eq!(a.get("My_Flux.safetensors", Want::Vae), None);
        assert!(
            Answers::parse(&["x.safetensors".into()])
                .unwrap_err()
                .contains("FILE=PRESET")
        );
        assert!(
            Answers::parse(&["x=nope".into()])
                .unwrap_err()
                .contains("presets list diffusion")
        );
    }
}
