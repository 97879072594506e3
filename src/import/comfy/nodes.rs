//! The ComfyUI node types the planner understands (`presets/comfyui_nodes.toml`): each one's
//! role for memory and the order of its widgets in the UI format.

use crate::import::ImportError;
use serde::Deserialize;
use std::sync::OnceLock;

const NODES_TOML: &str = include_str!("../../../presets/comfyui_nodes.toml");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Checkpoint,
    Unet,
    UnetGguf,
    Clip,
    Vae,
    Lora,
    Controlnet,
    ClipVision,
    UpscaleModel,
    Latent,
    LatentUpscale,
    LatentUpscaleBy,
    LatentRepeat,
    Sampler,
    SamplerCustom,
    Guider,
    Decode,
    DecodeTiled,
    Encode,
    Other,
    Frontend,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeType {
    pub class: String,
    pub role: Role,
    /// Widget input names in INPUT_TYPES order (the UI format's `widgets_values` order).
    pub widgets: Vec<String>,
    /// The input whose MODEL or LATENT the node passes on.
    #[serde(default)]
    pub through: Option<String>,
    /// The LATENT output of a latent-making node.
    #[serde(default)]
    pub latent_slot: u32,
    /// Pixels per latent cell along each side, and frames per latent frame (video).
    #[serde(default)]
    pub spatial: u32,
    #[serde(default)]
    pub temporal: u32,
    pub source: String,
}

#[derive(Debug, Deserialize)]
struct File {
    node: Vec<NodeType>,
}

static NODES: OnceLock<Vec<NodeType>> = OnceLock::new();

/// Parses and checks the node table.
pub fn parse(text: &str) -> Result<Vec<NodeType>, ImportError> {
    let f: File = toml::from_str(text)
        .map_err(|e| format!("presets/comfyui_nodes.toml: {}", e.message().trim()))?;
    let mut seen = std::collections::BTreeSet::new();
    for n in &f.node {
        if !seen.insert(n.class.as_str()) {
            return Err(
                format!("presets/comfyui_nodes.toml: '{}' is listed twice", n.class).into(),
            );
        }
        if n.role == Role::Latent && n.spatial == 0 {
            return Err(format!(
                "presets/comfyui_nodes.toml: {}: a latent node needs its spatial compression",
                n.class
            )
            .into());
        }
    }
    Ok(f.node)
}

/// All node types (embedded; checked by tests).
pub fn all() -> &'static [NodeType] {
    NODES.get_or_init(|| parse(NODES_TOML).expect("presets/comfyui_nodes.toml is valid"))
}

/// The node type of `class`, if the planner knows it.
pub fn get(class: &str) -> Option<&'static NodeType> {
    all().iter().find(|n| n.class == class)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_parses_and_seeds_take_two_widget_slots() {
        let k = get("KSampler").unwrap();
        assert_eq!(k.role, Role::Sampler);
        assert_eq!(k.widgets[1], "control_after_generate");
        assert_eq!(k.widgets.iter().position(|w| w == "cfg"), Some(3));
        assert_eq!(
            get("UNETLoader").unwrap().widgets,
            ["unet_name", "weight_dtype"]
        );
        assert_eq!(get("EmptyLTXVLatentVideo").unwrap().spatial, 32);
        assert!(get("SomeCustomNode").is_none());
        let e = parse("[[node]]\nclass=\"A\"\nrole=\"other\"\nwidgets=[]\nsource=\"x\"\n[[node]]\nclass=\"A\"\nrole=\"other\"\nwidgets=[]\nsource=\"x\"\n").unwrap_err().to_string();
        assert!(e.contains("twice"), "{e}");
    }
}
