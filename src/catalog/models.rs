//! Model presets (`presets/models.toml`): the architecture from each model's `config.json`.

use crate::types::arch::ModelArch;
use crate::types::dtype::WeightFormat;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelPreset {
    pub id: String,
    pub name: String,
    /// Hugging Face repository the numbers were read from.
    #[serde(default)]
    pub hf_id: Option<String>,
    /// The format the published weights are stored in (`quantization_config` of the model's
    /// config.json: fp8, mxfp4 …), the default for `run.weights` as a model file's own format
    /// is (`resolve`); absent for 16-bit checkpoints. Which parts it covers is the format's own
    /// rule, as for an imported model (`WeightFormat::Mxfp4`: the routed experts only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<WeightFormat>,
    /// Published files in other formats (GGUF quantizations), with their exact sizes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<PublishedFile>,
    #[serde(flatten)]
    pub arch: ModelArch,
}

impl ModelPreset {
    /// The name as pickers show it: with the published weights' format where it is not the
    /// 16-bit default ("gpt-oss 20B · mxfp4").
    pub fn label(&self) -> String {
        match self.format {
            Some(f) => format!("{} · {}", self.name, f.label()),
            None => self.name.clone(),
        }
    }
}

/// One published weight file (or set of shards) of a model and its size on disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedFile {
    pub format: WeightFormat,
    /// Bytes of the file, all shards together, as the repository lists them.
    pub bytes: u64,
    /// Repository and file name the size was read from.
    pub source: String,
}

pub(super) fn parse(text: &str) -> Result<Vec<ModelPreset>, String> {
    #[derive(Deserialize)]
    struct File {
        model: Vec<ModelPreset>,
    }
    let f: File = toml::from_str(text).map_err(|e| format!("presets/models.toml: {e}"))?;
    for m in &f.model {
        m.arch
            .validate()
            .map_err(|e| format!("presets/models.toml: {}: {e}", m.id))?;
        if let Some(f) = m
            .files
            .iter()
            .find(|f| f.bytes == 0 || f.source.trim().is_empty())
        {
            return Err(format!(
                "presets/models.toml: {}: the {} file needs its bytes and its source",
                m.id, f.format
            ));
        }
    }
    Ok(f.model)
}
