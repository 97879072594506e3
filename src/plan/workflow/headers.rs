//! The model files of a workflow identified exactly from their headers in ComfyUI's models
//! folder (`plan --workflow FILE --comfy-models DIR`), instead of from their names.
//!
//! A loader's file name is relative to one of ComfyUI's model folders (folder_paths.py
//! `folder_names_and_paths`: checkpoints; diffusion_models with the legacy unet; text_encoders
//! with the legacy clip; vae; loras; controlnet with t2i_adapter; clip_vision; upscale_models;
//! ComfyUI-GGUF adds `.gguf` files to the same diffusion_models / text_encoders lists). Only the
//! header is read (`import::safetensors` / `import::gguf`): its tensor names say the family
//! (the `header_tensors` of `presets/diffusion.toml`, ComfyUI's own detection keys), its
//! parameter count which member, and its dtypes the storage format. A file that is not there
//! or that matches no preset is reported, never guessed.

use super::files::{CatalogRow, Want};
use crate::import::comfy::nodes::Role;
use crate::types::dtype::WeightFormat;
use std::path::{Path, PathBuf};

/// How far a file's parameter count may be from its preset's and still be that preset: the
/// catalog's counts are the released files' (pruned of EMA and buffers), so a real file of the
/// preset is within a fraction of a percent; 10% leaves room for fine-tunes that add a few
/// layers and none for another member of the family (the nearest two, SD 1.5 and 2.1, differ
/// in kind by their keys' shapes, not caught here, but by 0.7% in count, and nearest wins).
const PARAM_TOLERANCE: f64 = 0.10;

/// A checkpoint's denoiser tensors (ComfyUI model_detection.py `unet_prefix_from_state_dict`,
/// the ldm/sgm layout).
const CHECKPOINT_DENOISER: &str = "model.diffusion_model.";

/// The ComfyUI models folder of a workflow's files.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelsDir {
    /// The `models` folder itself.
    pub root: PathBuf,
}

/// What a file's header says it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Identified {
    pub path: PathBuf,
    /// The catalog preset (model or part) it is.
    pub id: String,
    /// The storage format most of its weight bytes are in.
    pub weights: WeightFormat,
    /// Parameters of the part identified (a checkpoint's denoiser alone).
    pub params: u64,
    pub bytes: u64,
}

/// The folders under `models/` a loader role reads, in ComfyUI's search order.
fn folders(role: Role, want: Want) -> &'static [&'static str] {
    match (role, want) {
        (Role::Checkpoint, _) => &["checkpoints"],
        (Role::Unet | Role::UnetGguf, _) => &["diffusion_models", "unet"],
        (Role::Clip, _) => &["text_encoders", "clip"],
        (Role::Vae, _) => &["vae"],
        (Role::Lora, _) => &["loras"],
        (Role::Controlnet, _) => &["controlnet", "t2i_adapter"],
        (Role::ClipVision, _) => &["clip_vision"],
        (Role::UpscaleModel, _) => &["upscale_models"],
        _ => &[],
    }
}

impl ModelsDir {
    /// The folder given: ComfyUI's own folder (with `models/` in it) or its `models` folder.
    pub fn open(dir: &Path) -> Result<Self, String> {
        if !dir.is_dir() {
            return Err(format!(
                "--comfy-models {}: not a folder (give ComfyUI's folder or its models folder)",
                dir.display()
            ));
        }
        let inner = dir.join("models");
        let root = if inner.is_dir() {
            inner
        } else {
            dir.to_path_buf()
        };
        let known = [
            "checkpoints",
            "diffusion_models",
            "unet",
            "text_encoders",
            "clip",
            "vae",
        ];
        if !known.iter().any(|f| root.join(f).is_dir()) {
            return Err(format!(
                "--comfy-models {}: no checkpoints, diffusion_models, unet, text_encoders, clip or vae folder in it (ComfyUI's models folder has them)",
                dir.display()
            ));
        }
        Ok(ModelsDir { root })
    }

    /// The folders a loader's file is looked for in, as shown to the user.
    pub fn looked_in(&self, role: Role, want: Want) -> String {
        folders(role, want)
            .iter()
            .map(|f| self.root.join(f).display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Where a loader's file is: its name under the first of the role's folders that has it.
    /// A name that climbs out of the folder (`..`, an absolute path) is not followed, as
    /// folder_paths.py `get_full_path` normalises it under the folder.
    pub fn find(&self, role: Role, want: Want, name: &str) -> Option<PathBuf> {
        let rel = Path::new(name);
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return None;
        }
        folders(role, want)
            .iter()
            .map(|f| self.root.join(f).join(rel))
            .find(|p| p.is_file())
    }
}

/// Tensor name, elements, bytes and storage type of a header's tensors.
struct Tensor {
    name: String,
    elements: u64,
    bytes: u64,
    format: Option<WeightFormat>,
}

fn safetensors_format(dtype: &str) -> Option<WeightFormat> {
    match dtype {
        "F8_E4M3" | "F8_E5M2" => Some(WeightFormat::Fp8),
        "BF16" => Some(WeightFormat::Bf16),
        "F16" => Some(WeightFormat::Fp16),
        "F32" => Some(WeightFormat::Fp32),
        _ => None,
    }
}

/// A GGUF tensor type (ggml `ggml_type` names) as a storage format. The k-quant tensor types
/// stand for their "S" file types, whose matrices are all of that type (llama.cpp
/// src/llama-quant.cpp: the "M" types give some layers the next larger type).
fn gguf_format(type_name: &str) -> Option<WeightFormat> {
    match type_name.to_ascii_lowercase().as_str() {
        "f32" => Some(WeightFormat::Fp32),
        "f16" => Some(WeightFormat::Fp16),
        "bf16" => Some(WeightFormat::Bf16),
        "q4_k" => "q4_k_s".parse().ok(),
        "q5_k" => "q5_k_s".parse().ok(),
        other => other.parse().ok().filter(|f: &WeightFormat| f.is_gguf()),
    }
}

fn tensors(path: &Path) -> Result<Vec<Tensor>, String> {
    let gguf = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"));
    if gguf {
        let h = crate::import::gguf::read(path)?;
        return Ok(h
            .tensors
            .into_iter()
            .map(|t| Tensor {
                format: gguf_format(&t.type_name),
                name: t.name,
                elements: t.elements,
                bytes: t.bytes,
            })
            .collect());
    }
    let h = crate::import::safetensors::read(path)?;
    Ok(h.tensors
        .into_iter()
        .map(|t| Tensor {
            format: safetensors_format(&t.dtype),
            name: t.name,
            elements: t.elements,
            bytes: t.bytes,
        })
        .collect())
}

/// The format holding most of the bytes; a GGUF's F32/F16 norms and biases do not count
/// against its quantized matrices.
fn dominant(ts: &[&Tensor]) -> Option<WeightFormat> {
    let mut by: Vec<(WeightFormat, u64)> = Vec::new();
    for t in ts {
        let Some(f) = t.format else { continue };
        match by.iter_mut().find(|(g, _)| *g == f) {
            Some((_, b)) => *b += t.bytes,
            None => by.push((f, t.bytes)),
        }
    }
    if let Some(q) = by
        .iter()
        .filter(|(f, _)| f.is_gguf())
        .max_by_key(|(_, b)| *b)
    {
        return Some(q.0);
    }
    by.into_iter().max_by_key(|(_, b)| *b).map(|(f, _)| f)
}

/// Identifies the file at `path` as a preset of the wanted kind from its header.
pub fn identify(path: &Path, want: Want) -> Result<Identified, String> {
    let all = tensors(path)?;
    // A checkpoint holds the denoiser, text encoders and VAE; the denoiser is under its prefix.
    let has_prefix = all.iter().any(|t| t.name.starts_with(CHECKPOINT_DENOISER));
    let mine: Vec<&Tensor> = all
        .iter()
        .filter(|t| want != Want::Model || !has_prefix || t.name.starts_with(CHECKPOINT_DENOISER))
        .collect();
    let params: u64 = mine.iter().map(|t| t.elements).sum();
    let bytes: u64 = mine.iter().map(|t| t.bytes).sum();
    let has = |key: &str| mine.iter().any(|t| t.name.ends_with(key));
    let rows = want.rows();
    let family: Vec<&CatalogRow> = rows
        .iter()
        .filter(|r| !r.header_tensors.is_empty() && r.header_tensors.iter().all(|k| has(k)))
        .collect();
    let most = family
        .iter()
        .map(|r| r.header_tensors.len())
        .max()
        .unwrap_or(0);
    let distance = |p: f64| (p / params.max(1) as f64).ln().abs();
    let best = family
        .iter()
        .filter(|r| r.header_tensors.len() == most)
        .min_by(|a, b| distance(a.params).total_cmp(&distance(b.params)));
    let shown = path.display();
    let Some(CatalogRow {
        id,
        params: preset_params,
        ..
    }) = best
    else {
        return Err(format!(
            "{shown}: its tensors match no {} the planner knows",
            want.noun()
        ));
    };
    let off = (params as f64 / preset_params - 1.0).abs();
    if off > PARAM_TOLERANCE {
        return Err(format!(
            "{shown}: a {} of the {id} family, but with {params} parameters ({:+.0}% from {id}'s {preset_params:.0}): another model of that family",
            want.noun(),
            (params as f64 / preset_params - 1.0) * 100.0
        ));
    }
    let weights = dominant(&mine)
        .ok_or_else(|| format!("{shown}: no tensor of a weight type the planner knows"))?;
    Ok(Identified {
        path: path.to_path_buf(),
        id: id.to_string(),
        weights,
        params,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_climb_out_are_not_followed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("models/vae")).unwrap();
        std::fs::write(d.path().join("models/vae/a.safetensors"), b"x").unwrap();
        let m = ModelsDir::open(d.path()).unwrap();
        assert_eq!(m.root, d.path().join("models"));
        assert!(m.find(Role::Vae, Want::Vae, "a.safetensors").is_some());
        assert!(
            m.find(Role::Vae, Want::Vae, "../vae/a.safetensors")
                .is_none()
        );
        assert!(m.find(Role::Unet, Want::Model, "a.safetensors").is_none());
        let e = ModelsDir::open(&d.path().join("models/vae")).unwrap_err();
        assert!(e.contains("no checkpoints"), "{e}");
    }
}
