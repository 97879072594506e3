//! A diffusers pipeline folder: `model_index.json` names the components (`"unet":
//! ["diffusers", "UNet2DConditionModel"]`, diffusers `DiffusionPipeline.save_pretrained`), each
//! in a subfolder with its `config.json` and weights. This lists them with the sizes their
//! safetensors headers declare, for the diffusion estimator.

use super::reader::{is_plain_file_name, read_small_text, shown};
use super::safetensors;
use crate::import::ImportError;
use crate::memory::diffusion::{DiffusionCatalog, DiffusionModel};
use crate::types::message::Message;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const MAX_JSON: u64 = 1 << 20;

/// Config keys worth showing and using later (latent size, widths, depths).
const KEPT_KEYS: &[&str] = &[
    "sample_size",
    "in_channels",
    "out_channels",
    "latent_channels",
    "block_out_channels",
    "cross_attention_dim",
    "joint_attention_dim",
    "attention_head_dim",
    "num_attention_heads",
    "num_layers",
    "num_single_layers",
    "num_hidden_layers",
    "hidden_size",
    "d_model",
    "scaling_factor",
    "model_type",
    "torch_dtype",
];

/// One component of a pipeline.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct PipelineComponent {
    /// The key in model_index.json, also the subfolder (`unet`, `text_encoder_2` …).
    pub name: String,
    /// The library that defines it (`diffusers`, `transformers`).
    pub library: String,
    pub class_name: String,
    /// Selected keys of its config.json.
    pub config: BTreeMap<String, Value>,
    /// Parameters and bytes from its safetensors headers, when the weights are there.
    pub params: Option<u64>,
    pub weight_bytes: Option<u64>,
    pub bytes_by_dtype: BTreeMap<String, u64>,
    pub files: Vec<PathBuf>,
    pub notes: Vec<Message>,
}

/// A pipeline: its class and components.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct DiffusersPipeline {
    pub name: String,
    /// `_class_name` (`StableDiffusionXLPipeline`, `FluxPipeline` …).
    pub class_name: String,
    pub diffusers_version: Option<String>,
    pub components: Vec<PipelineComponent>,
}

impl DiffusersPipeline {
    /// Bytes of all weights found.
    pub fn weight_bytes(&self) -> u64 {
        self.components
            .iter()
            .filter_map(|c| c.weight_bytes)
            .fold(0u64, u64::saturating_add)
    }
}

impl DiffusersPipeline {
    /// The diffusion preset this pipeline is: among the presets whose `pipelines` list its
    /// class, the one the folder is named after (an id, an alias, or an alias's last path
    /// segment such as `FLUX.1-schnell`), else the one nearest in parameters to the denoiser's
    /// weights when they were read, else the first listed.
    pub fn diffusion_preset(&self) -> Result<&'static DiffusionModel, ImportError> {
        let cat = DiffusionCatalog::get();
        let cands: Vec<&'static DiffusionModel> = cat
            .models
            .iter()
            .filter(|m| m.pipelines.contains(&self.class_name))
            .collect();
        let name = self.name.to_ascii_lowercase();
        let named = |m: &DiffusionModel| {
            m.id == name
                || m.aliases.iter().any(|a| {
                    let a = a.to_ascii_lowercase();
                    a == name || a.rsplit('/').next() == Some(name.as_str())
                })
        };
        let denoiser = self
            .components
            .iter()
            .find(|c| c.name == "unet" || c.name == "transformer")
            .and_then(|c| c.params)
            .filter(|p| *p > 0);
        let distance =
            |m: &DiffusionModel| denoiser.map_or(0.0, |p| (m.params / p as f64).ln().abs());
        cands
            .iter()
            .find(|m| named(m))
            .or_else(|| {
                cands
                    .iter()
                    .min_by(|a, b| distance(a).total_cmp(&distance(b)))
            })
            .copied()
            .ok_or_else(|| {
                format!(
                    "{}: pipeline class {} is not among the diffusion presets; pick the nearest model from the list (`vram-doctor presets list diffusion`)",
                    shown(&self.name),
                    shown(&self.class_name)
                )
                .into()
            })
    }
}

/// Reads a pipeline folder (or its model_index.json).
pub fn import_pipeline(path: &Path) -> Result<DiffusersPipeline, ImportError> {
    let (dir, index) = if path.is_dir() {
        (path.to_path_buf(), path.join("model_index.json"))
    } else {
        (
            path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            path.to_path_buf(),
        )
    };
    let text = read_small_text(&index, MAX_JSON)?;
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("pipeline")
        .to_string();
    let mut p = parse_index(&text, &index.display().to_string(), &name)?;
    for c in &mut p.components {
        fill_component(&dir, c)?;
    }
    Ok(p)
}

/// Parses model_index.json text into the list of components (no files read).
pub fn parse_index(text: &str, origin: &str, name: &str) -> Result<DiffusersPipeline, ImportError> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("{origin}: not valid JSON: {e}"))?;
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{origin}: not a model_index.json (not a JSON object)"))?;
    let class_name = obj
        .get("_class_name")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{origin}: no _class_name (not a diffusers model_index.json)"))?
        .to_string();
    let mut components = Vec::new();
    for (key, val) in obj {
        if key.starts_with('_') {
            continue;
        }
        // ["library", "Class"], or [null, null] for a component left out.
        let Some([lib, class]) = val
            .as_array()
            .map(Vec::as_slice)
            .and_then(|a| <&[Value; 2]>::try_from(a).ok())
        else {
            continue;
        };
        let (Some(lib), Some(class)) = (lib.as_str(), class.as_str()) else {
            continue;
        };
        if !is_plain_file_name(key) {
            return Err(format!(
                "{origin}: component name {} is not a plain folder name",
                shown(key)
            )
            .into());
        }
        components.push(PipelineComponent {
            name: key.clone(),
            library: lib.to_string(),
            class_name: class.to_string(),
            ..Default::default()
        });
    }
    Ok(DiffusersPipeline {
        name: name.to_string(),
        class_name,
        diffusers_version: obj
            .get("_diffusers_version")
            .and_then(Value::as_str)
            .map(str::to_string),
        components,
    })
}

fn fill_component(dir: &Path, c: &mut PipelineComponent) -> Result<(), ImportError> {
    let sub = dir.join(&c.name);
    if !sub.is_dir() {
        c.notes
            .push(Message::new("import.diffusers.folder_missing").text("folder", &c.name));
        return Ok(());
    }
    let config = sub.join("config.json");
    if config.is_file() {
        let text = read_small_text(&config, MAX_JSON)?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not valid JSON: {e}", config.display()))?;
        for k in KEPT_KEYS {
            if let Some(x) = v.get(*k) {
                c.config.insert((*k).to_string(), x.clone());
            }
        }
        c.files.push(config);
    }
    for stem in [
        "diffusion_pytorch_model",
        "model",
        "diffusion_pytorch_model.fp16",
        "model.fp16",
    ] {
        if let Some(w) = safetensors::find_in(&sub, stem)? {
            c.params = Some(w.params(None));
            c.weight_bytes = Some(w.total_bytes);
            c.bytes_by_dtype = w.bytes_by_dtype;
            c.files.extend(w.files);
            c.notes.extend(w.notes);
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_listed_and_empty_slots_skipped() {
        let text = r#"{"_class_name":"StableDiffusionPipeline","_diffusers_version":"0.6.0",
            "feature_extractor":["transformers","CLIPImageProcessor"],"safety_checker":[null,null],
            "scheduler":["diffusers","PNDMScheduler"],"unet":["diffusers","UNet2DConditionModel"],
            "vae":["diffusers","AutoencoderKL"],"requires_safety_checker":false}"#;
        let p = parse_index(text, "model_index.json", "sd").unwrap();
        let names: Vec<&str> = p.components.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["feature_extractor", "scheduler", "unet", "vae"]);
        assert_eq!(p.class_name, "StableDiffusionPipeline");
        let bad = r#"{"_class_name":"X","../../etc":["diffusers","UNet2DConditionModel"]}"#;
        assert!(
            parse_index(bad, "m.json", "x")
                .unwrap_err()
                .to_string()
                .contains("not a plain folder name")
        );
        assert!(
            parse_index("{}", "m.json", "x")
                .unwrap_err()
                .to_string()
                .contains("_class_name")
        );
    }

    #[test]
    fn a_pipeline_finds_its_preset_by_folder_then_size() {
        let flux = r#"{"_class_name":"FluxPipeline","transformer":["diffusers","FluxTransformer2DModel"]}"#;
        let p = parse_index(flux, "model_index.json", "FLUX.1-schnell").unwrap();
        assert_eq!(p.diffusion_preset().unwrap().id, "flux-schnell");
        let p = parse_index(flux, "model_index.json", "snapshot-3f2a").unwrap();
        assert_eq!(p.diffusion_preset().unwrap().id, "flux-dev");
        let sd3 = r#"{"_class_name":"StableDiffusion3Pipeline","transformer":["diffusers","SD3Transformer2DModel"]}"#;
        let mut p = parse_index(sd3, "model_index.json", "my-copy").unwrap();
        for (params, id) in [
            (8_000_000_000u64, "sd35-large"),
            (2_030_000_000, "sd3-medium"),
        ] {
            p.components[0].params = Some(params);
            assert_eq!(p.diffusion_preset().unwrap().id, id);
        }
        let other = r#"{"_class_name":"KandinskyPipeline"}"#;
        let e = parse_index(other, "model_index.json", "k")
            .unwrap()
            .diffusion_preset()
            .unwrap_err()
            .to_string();
        assert!(e.contains("KandinskyPipeline") && !e.contains('\n'), "{e}");
    }
}
