//! Model presets (`presets/models.toml`): the architecture from each model's `config.json`.

use crate::types::arch::ModelArch;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelPreset {
    pub id: String,
    pub name: String,
    /// Hugging Face repository the numbers were read from.
    #[serde(default)]
    pub hf_id: Option<String>,
    #[serde(flatten)]
    pub arch: ModelArch,
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
    }
    Ok(f.model)
}
