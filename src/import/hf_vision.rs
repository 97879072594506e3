//! The vision half of a vision-language `config.json`: which language model a wrapper holds,
//! and the parameters of its vision tower and projector, tensor by tensor as the transformers
//! modeling files create them. The wrappers and towers known are data in
//! `presets/hf_vision.toml`; a wrapper or tower not there is refused by name, never counted as
//! text only.

use super::hf_config::Cfg;
use crate::import::ImportError;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The projector from the vision tower into the language model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Projector {
    /// The tower ends in its own merger into the text width (Qwen-VL).
    None,
    Llava,
    Mistral3,
    Internvl,
    Gemma3,
    Paligemma,
    Llama4,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Family {
    Clip,
    Siglip,
    Pixtral,
    Qwen2Vl,
    #[serde(rename = "qwen2_5_vl")]
    Qwen25Vl,
    Qwen3Vl,
    /// Qwen3.5's tower: Qwen3-VL's without the deepstack mergers.
    #[serde(rename = "qwen3_5")]
    Qwen35,
    Internvl,
    Llama4,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wrapper {
    #[allow(dead_code)]
    source: String,
    /// The language model's type when text_config does not name one.
    pub text: String,
    tower: String,
    #[serde(default)]
    tower_fixed: bool,
    projector: Projector,
    #[serde(default)]
    newline: bool,
    /// The wrapper's `tie_word_embeddings` default.
    tied_default: bool,
    /// A text config that ties ties them too (the wrappers' backward-compatibility clause in
    /// `__post_init__`, configuration_llava.py and others).
    #[serde(default)]
    tied_from_text: bool,
}

impl Wrapper {
    /// Whether the output head shares the embedding matrix. `text_tied` is the text config's
    /// own reading (its `tie_word_embeddings`, else its class default).
    ///
    /// A wrapper-level `tie_word_embeddings` decides (transformers 5
    /// `PreTrainedModel.get_expanded_tied_weights_keys` reads the model's own config), and the
    /// backward-compatibility clause of some wrappers ties when the text config does. A config
    /// that does not say and was written by transformers 4 means what transformers 4 read: the
    /// text config's flag (4.x modeling_utils.py `PreTrainedModel.tie_weights`:
    /// `config.get_text_config(decoder=True).tie_word_embeddings`). Its checkpoint holds the
    /// head accordingly, and transformers 5 does not tie a head the checkpoint stores as well
    /// (modeling_utils.py `tie_weights`: "both are present in the checkpoints with different
    /// values, so we will NOT tie them"): Mistral Small 3.1's text config (MistralConfig,
    /// untied) against Mistral3Config's default (tied). One written by transformers 5 leaves out
    /// a value equal to the wrapper's class default, which then decides.
    pub fn tied(&self, root: &Value, text_tied: bool) -> bool {
        let from_text = self.tied_from_text && text_tied;
        match root.get("tie_word_embeddings").and_then(Value::as_bool) {
            Some(t) => t || from_text,
            None if written_before_v5(root) => text_tied,
            None => self.tied_default || from_text,
        }
    }
}

/// Whether a config.json was written before transformers 5: its `transformers_version` (as
/// `PreTrainedConfig.to_json_string` records it), a file without one being older still.
fn written_before_v5(root: &Value) -> bool {
    root.get("transformers_version")
        .and_then(Value::as_str)
        .and_then(|v| v.split('.').next())
        .and_then(|major| major.parse::<u32>().ok())
        .is_none_or(|major| major < 5)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Tower {
    #[allow(dead_code)]
    source: String,
    family: Family,
    #[serde(default)]
    defaults: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    wrapper: BTreeMap<String, Wrapper>,
    tower: BTreeMap<String, Tower>,
    text_defaults: BTreeMap<String, BTreeMap<String, toml::Value>>,
}

fn table() -> Result<&'static Table, ImportError> {
    static TABLE: OnceLock<Result<Table, String>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            toml::from_str(include_str!("../../presets/hf_vision.toml"))
                .map_err(|e| format!("presets/hf_vision.toml: {e}"))
        })
        .as_ref()
        .map_err(|e| ImportError::Malformed(e.clone()))
}

/// The wrapper entry of a config's top-level `model_type`, if it is a known one.
pub fn wrapper(model_type: &str) -> Result<Option<&'static Wrapper>, ImportError> {
    Ok(table()?.wrapper.get(model_type))
}

/// The class defaults behind a wrapper's text_config of `text_type`, over the convention's own.
pub fn text_defaults(
    text_type: &str,
    own: &BTreeMap<String, toml::Value>,
) -> Result<BTreeMap<String, toml::Value>, ImportError> {
    let mut d = table()?
        .text_defaults
        .get(text_type)
        .cloned()
        .unwrap_or_default();
    d.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(d)
}

fn n(x: u32) -> u128 {
    u128::from(x)
}

fn linear(inp: u128, out: u128, bias: bool) -> u128 {
    inp.saturating_mul(out)
        .saturating_add(if bias { out } else { 0 })
}

/// A transformer block of a vision tower: two norms, attention over the full width and an MLP.
struct Block {
    width: u128,
    mlp_width: u128,
    /// Parameters of one norm.
    norm: u128,
    qkv_bias: bool,
    o_bias: bool,
    gated: bool,
    mlp_bias: bool,
}

impl Block {
    fn params(&self) -> u128 {
        let (h, i) = (self.width, self.mlp_width);
        let attn = 3 * linear(h, h, self.qkv_bias) + linear(h, h, self.o_bias);
        let up = linear(h, i, self.mlp_bias) * if self.gated { 2 } else { 1 };
        let down = linear(i, h, self.mlp_bias);
        2 * self.norm + attn + up + down
    }
}

/// A patch merger (Qwen-VL): a norm, then `Linear(w·m², w·m²)` and `Linear(w·m², out)` with
/// biases, over `m × m` neighbouring patches.
fn merger(width: u128, merge: u32, out: u128, norm: u128) -> u128 {
    let wide = width * n(merge) * n(merge);
    norm + linear(wide, wide, true) + linear(wide, out, true)
}

/// A number or the first of a list (InternVL writes `image_size = [448, 448]`).
fn side(c: &Cfg, key: &str) -> Result<u32, ImportError> {
    match c.raw(&[key]) {
        Some((_, Value::Array(a))) => a
            .first()
            .and_then(Value::as_u64)
            .and_then(|x| u32::try_from(x).ok())
            .ok_or_else(|| format!("{}: {key} must list whole numbers", c.origin).into()),
        _ => c.need(&[key]),
    }
}

/// The tower's parameters and its output width.
fn tower_params(family: Family, c: &Cfg) -> Result<(u128, u32), ImportError> {
    let layer_norm = |w: u128| 2 * w;
    let patches = || -> Result<u128, ImportError> {
        let patch = side(c, "patch_size")?.max(1);
        Ok(n(side(c, "image_size")? / patch).saturating_pow(2))
    };
    let conv = |channels: u32, temporal: u32, patch: u32, out: u128, bias: bool| {
        linear(n(channels) * n(temporal) * n(patch) * n(patch), out, bias)
    };
    Ok(match family {
        // CLIPVisionEmbeddings: class_embedding, patch_embedding Conv2d(bias=False),
        // position_embedding of patches + 1; pre_layrnorm, CLIPEncoderLayer (LayerNorm,
        // q/k/v/out_proj and fc1/fc2 with biases), post_layernorm (modeling_clip.py).
        Family::Clip => {
            let h = c.need(&["hidden_size"])?;
            let w = n(h);
            let block = Block {
                width: w,
                mlp_width: n(c.need(&["intermediate_size"])?),
                norm: layer_norm(w),
                qkv_bias: true,
                o_bias: true,
                gated: false,
                mlp_bias: true,
            };
            let embed =
                w + conv(
                    c.need(&["num_channels"])?,
                    1,
                    c.need(&["patch_size"])?,
                    w,
                    false,
                ) + (patches()? + 1) * w;
            let layers = n(c.need(&["num_hidden_layers"])?) * block.params();
            (embed + 2 * layer_norm(w) + layers, h)
        }
        // SiglipVisionEmbeddings: patch_embedding Conv2d with bias, position_embedding of the
        // patches; SiglipEncoderLayer as CLIP's; post_layernorm; with vision_use_head the
        // SiglipMultiheadAttentionPoolingHead (probe, nn.MultiheadAttention, LayerNorm, MLP)
        // (modeling_siglip.py).
        Family::Siglip => {
            let h = c.need(&["hidden_size"])?;
            let (w, i) = (n(h), n(c.need(&["intermediate_size"])?));
            let block = Block {
                width: w,
                mlp_width: i,
                norm: layer_norm(w),
                qkv_bias: true,
                o_bias: true,
                gated: false,
                mlp_bias: true,
            };
            let embed = conv(
                c.need(&["num_channels"])?,
                1,
                c.need(&["patch_size"])?,
                w,
                true,
            ) + patches()? * w;
            let mut total =
                embed + n(c.need(&["num_hidden_layers"])?) * block.params() + layer_norm(w);
            if c.bool("vision_use_head").unwrap_or(true) {
                let mlp = linear(w, i, true) + linear(i, w, true);
                total += w + linear(w, 3 * w, true) + linear(w, w, true) + layer_norm(w) + mlp;
            }
            (total, h)
        }
        // PixtralVisionModel: patch_conv Conv2d(bias=False), ln_pre RMSNorm, PixtralAttentionLayer
        // (attention_norm and ffn_norm RMSNorm, q/k/v/o_proj without bias, gated MLP without
        // bias); rotary positions, no final norm (modeling_pixtral.py).
        Family::Pixtral => {
            let h = c.need(&["hidden_size"])?;
            let w = n(h);
            let block = Block {
                width: w,
                mlp_width: n(c.need(&["intermediate_size"])?),
                norm: w,
                qkv_bias: false,
                o_bias: false,
                gated: true,
                mlp_bias: false,
            };
            let embed = conv(
                c.need(&["num_channels"])?,
                1,
                c.need(&["patch_size"])?,
                w,
                false,
            ) + w;
            (
                embed + n(c.need(&["num_hidden_layers"])?) * block.params(),
                h,
            )
        }
        // Qwen2VisionTransformerPretrainedModel: PatchEmbed Conv3d(bias=False) over
        // temporal_patch_size × patch_size², Qwen2VLVisionBlock (LayerNorm, fused qkv and proj
        // with biases, fc1/fc2 of embed_dim·mlp_ratio with biases), PatchMerger(dim=hidden_size,
        // context_dim=embed_dim) with LayerNorm ln_q (modeling_qwen2_vl.py).
        Family::Qwen2Vl => {
            let e = n(c.need(&["embed_dim"])?);
            let ratio = c
                .raw(&["mlp_ratio"])
                .and_then(|(_, v)| v.as_f64())
                .unwrap_or(4.0);
            let block = Block {
                width: e,
                mlp_width: (e as f64 * ratio) as u128,
                norm: layer_norm(e),
                qkv_bias: true,
                o_bias: true,
                gated: false,
                mlp_bias: true,
            };
            let out = c.need(&["hidden_size"])?;
            let embed = conv(
                c.need(&["in_channels"])?,
                c.need(&["temporal_patch_size"])?,
                c.need(&["patch_size"])?,
                e,
                false,
            );
            let merge = merger(e, c.need(&["spatial_merge_size"])?, n(out), layer_norm(e));
            (embed + n(c.need(&["depth"])?) * block.params() + merge, out)
        }
        // Qwen2_5_VisionTransformerPretrainedModel: PatchEmbed Conv3d(bias=False),
        // Qwen2_5_VLVisionBlock (RMSNorm, fused qkv and proj with biases, gated
        // Qwen2_5_VLMLP(bias=True) of intermediate_size), Qwen2_5_VLPatchMerger(dim=
        // out_hidden_size, context_dim=hidden_size) with RMSNorm ln_q (modeling_qwen2_5_vl.py).
        Family::Qwen25Vl => {
            let w = n(c.need(&["hidden_size"])?);
            let block = Block {
                width: w,
                mlp_width: n(c.need(&["intermediate_size"])?),
                norm: w,
                qkv_bias: true,
                o_bias: true,
                gated: true,
                mlp_bias: true,
            };
            let out = c.need(&["out_hidden_size"])?;
            let embed = conv(
                c.need(&["in_channels"])?,
                c.need(&["temporal_patch_size"])?,
                c.need(&["patch_size"])?,
                w,
                false,
            );
            let merge = merger(w, c.need(&["spatial_merge_size"])?, n(out), w);
            (embed + n(c.need(&["depth"])?) * block.params() + merge, out)
        }
        // Qwen3VLVisionModel: PatchEmbed Conv3d(bias=True), pos_embed
        // Embedding(num_position_embeddings, hidden), Qwen3VLVisionBlock (LayerNorm, qkv and
        // proj with biases, linear_fc1/fc2 with biases), merger (LayerNorm over hidden) and one
        // deepstack merger per deepstack_visual_indexes entry (LayerNorm over hidden·m²)
        // (modeling_qwen3_vl.py Qwen3VLVisionPatchMerger). Qwen3_5VisionModel is the same
        // without the deepstack mergers (modeling_qwen3_5.py).
        Family::Qwen3Vl | Family::Qwen35 => {
            let w = n(c.need(&["hidden_size"])?);
            let block = Block {
                width: w,
                mlp_width: n(c.need(&["intermediate_size"])?),
                norm: layer_norm(w),
                qkv_bias: true,
                o_bias: true,
                gated: false,
                mlp_bias: true,
            };
            let out = c.need(&["out_hidden_size"])?;
            let m = c.need(&["spatial_merge_size"])?;
            let embed = conv(
                c.need(&["in_channels"])?,
                c.need(&["temporal_patch_size"])?,
                c.need(&["patch_size"])?,
                w,
                true,
            ) + n(c.need(&["num_position_embeddings"])?) * w;
            let deepstack = match c.raw(&["deepstack_visual_indexes"]) {
                Some((_, Value::Array(a))) if family == Family::Qwen3Vl => a.len() as u128,
                _ => 0,
            };
            let wide = w * n(m) * n(m);
            let merges =
                merger(w, m, n(out), layer_norm(w)) + deepstack * merger(w, m, n(out), 2 * wide);
            (
                embed + n(c.need(&["depth"])?) * block.params() + merges,
                out,
            )
        }
        // Llama4VisionModel: class_embedding, positional_embedding_vlm of patches + 1,
        // Llama4UnfoldConvolution linear (channels · patch² → hidden, bias=False), layernorm_pre
        // and layernorm_post, Llama4VisionEncoderLayer (LayerNorm, q/k/v/o_proj and fc1/fc2 with
        // biases), vision_adapter Llama4VisionMLP2 (fc1 intermediate_size → projector_input_dim,
        // fc2 projector_output_dim², no biases); it hands vision_output_dim to the projector
        // (modeling_llama4.py).
        Family::Llama4 => {
            let w = n(c.need(&["hidden_size"])?);
            let i = c.need(&["intermediate_size"])?;
            let block = Block {
                width: w,
                mlp_width: n(i),
                norm: layer_norm(w),
                qkv_bias: true,
                o_bias: true,
                gated: false,
                mlp_bias: true,
            };
            let embed = w
                + (patches()? + 1) * w
                + conv(
                    c.need(&["num_channels"])?,
                    1,
                    c.need(&["patch_size"])?,
                    w,
                    false,
                );
            let p_out = n(c.need(&["projector_output_dim"])?);
            let adapter = linear(n(i), n(c.need(&["projector_input_dim"])?), false)
                + linear(p_out, p_out, false);
            (
                embed
                    + 2 * layer_norm(w)
                    + n(c.need(&["num_hidden_layers"])?) * block.params()
                    + adapter,
                c.need(&["vision_output_dim"])?,
            )
        }
        // InternVLVisionModel: cls_token, patch_embeddings Conv2d with bias, position_embeddings
        // of patches + 1 (use_absolute_position_embeddings), mask_token (use_mask_token);
        // InternVLVisionLayer: layernorm_before/after (norm_type: LayerNorm or RMSNorm),
        // q/k/v_proj (attention_bias), projection_layer with bias, q_norm/k_norm RMSNorm over
        // the width (use_qk_norm), fc1/fc2 with biases, lambda_1 and lambda_2; a final LayerNorm
        // unless use_mean_pooling (modeling_internvl.py).
        Family::Internvl => {
            let h = c.need(&["hidden_size"])?;
            let w = n(h);
            let norm = match c.str("norm_type").as_deref() {
                Some("rms_norm") => w,
                _ => layer_norm(w),
            };
            let block = Block {
                width: w,
                mlp_width: n(c.need(&["intermediate_size"])?),
                norm,
                qkv_bias: c.bool("attention_bias").unwrap_or(false),
                o_bias: true,
                gated: false,
                mlp_bias: true,
            };
            let qk_norm = if c.bool("use_qk_norm").unwrap_or(false) {
                2 * w
            } else {
                0
            };
            let flag = |k: &str, v: u128| if c.bool(k).unwrap_or(false) { v } else { 0 };
            let embed =
                w + conv(
                    c.need(&["num_channels"])?,
                    1,
                    side(c, "patch_size")?,
                    w,
                    true,
                ) + flag("use_absolute_position_embeddings", (patches()? + 1) * w)
                    + flag("use_mask_token", w);
            let layer = block.params() + qk_norm + 2 * w;
            let post = if c.bool("use_mean_pooling").unwrap_or(true) {
                0
            } else {
                layer_norm(w)
            };
            (embed + n(c.need(&["num_hidden_layers"])?) * layer + post, h)
        }
    })
}

/// The parameters of a wrapper's projector, from the tower's output width to the text width.
fn projector_params(
    p: Projector,
    root: &Cfg,
    vc: &Cfg,
    vision: u32,
    text: u32,
) -> Result<u128, ImportError> {
    let (v, t) = (n(vision), n(text));
    // `vision_feature_layer` as a list concatenates that many layers' features.
    let feature_layers = match root.raw(&["vision_feature_layer"]) {
        Some((_, Value::Array(a))) => a.len().max(1) as u128,
        _ => 1,
    };
    let bias = |default: bool| root.bool("multimodal_projector_bias").unwrap_or(default);
    Ok(match p {
        Projector::None => 0,
        // LlavaMultiModalProjector: linear_1 (vision · feature layers → text), linear_2
        // (text → text), multimodal_projector_bias default True (configuration_llava.py).
        Projector::Llava => {
            let b = bias(true);
            linear(v * feature_layers, t, b) + linear(t, t, b)
        }
        // Mistral3MultiModalProjector: RMSNorm(vision), Mistral3PatchMerger merging_layer
        // Linear(vision · spatial_merge_size², vision, bias=False), linear_1, linear_2 with
        // multimodal_projector_bias (default False, configuration_mistral3.py).
        Projector::Mistral3 => {
            let m = n(root.u32(&["spatial_merge_size"])?.unwrap_or(2));
            let b = bias(false);
            v + linear(v * m * m, v, false) + linear(v * feature_layers, t, b) + linear(t, t, b)
        }
        // InternVLMultiModalProjector: LayerNorm(vision · (1/downsample_ratio)²), linear_1
        // (that width → text), linear_2 (text → text), with biases.
        Projector::Internvl => {
            let ratio = root
                .raw(&["downsample_ratio"])
                .and_then(|(_, x)| x.as_f64())
                .unwrap_or(0.5);
            if !(ratio > 0.0 && ratio <= 1.0) {
                return Err(format!(
                    "{}: downsample_ratio must be in (0, 1], not {ratio}",
                    root.origin
                )
                .into());
            }
            let k = (1.0 / ratio) as u128;
            let wide = v * k * k;
            2 * wide + linear(wide, t, true) + linear(t, t, true)
        }
        // Gemma3MultiModalProjector: mm_input_projection_weight [vision, text] and
        // mm_soft_emb_norm (RMS over vision) (modeling_gemma3.py).
        Projector::Gemma3 => v * t + v,
        // PaliGemmaMultiModalProjector: Linear(vision, projection_dim, bias=True)
        // (modeling_paligemma.py); SiglipVisionConfig projection_dim defaults to 2048.
        // Llama4MultiModalProjector: linear_1 (vision_output_dim → text, bias=False).
        Projector::Llama4 => linear(v, t, false),
        Projector::Paligemma => {
            let p = n(vc.u32(&["projection_dim"])?.unwrap_or(2048));
            linear(v, p, true)
        }
    })
}

/// Parameters of the vision tower, the projector and the wrapper's own vectors of a
/// vision-language config whose text model is `text_hidden` wide.
pub fn params(
    w: &Wrapper,
    root: &Cfg,
    vision_config: &Value,
    text_hidden: u32,
) -> Result<u64, ImportError> {
    let t = table()?;
    let named = vision_config.get("model_type").and_then(Value::as_str);
    let ty = match named {
        Some(ty) if !w.tower_fixed => ty,
        _ => w.tower.as_str(),
    };
    let Some(tower) = t.tower.get(ty) else {
        return Err(format!(
            "{}: the vision tower (vision_config model_type {}) is not modelled by this program (the known ones are in presets/hf_vision.toml), so its memory cannot be planned",
            root.origin,
            super::reader::shown(ty)
        ).into());
    };
    let vc = Cfg {
        v: vision_config,
        defaults: &tower.defaults,
        origin: root.origin,
    };
    let (tower_params, out) = tower_params(tower.family, &vc)?;
    let proj = projector_params(w.projector, root, &vc, out, text_hidden)?;
    let newline = if w.newline { n(text_hidden) } else { 0 };
    Ok(
        u64::try_from(tower_params.saturating_add(proj).saturating_add(newline))
            .unwrap_or(u64::MAX),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wrapper_names_a_known_tower() {
        let t = table().unwrap();
        for (name, w) in &t.wrapper {
            assert!(t.tower.contains_key(&w.tower), "{name}: {}", w.tower);
        }
    }

    #[test]
    fn siglip_tower_with_and_without_its_pooling_head() {
        // hidden 4, intermediate 8, 1 layer, 3 channels, patch 2, image 4 (4 patches).
        let v: Value = serde_json::from_str(
            r#"{"hidden_size":4,"intermediate_size":8,"num_hidden_layers":1,"num_channels":3,"patch_size":2,"image_size":4,"vision_use_head":false}"#,
        )
        .unwrap();
        let none = BTreeMap::new();
        let c = Cfg {
            v: &v,
            defaults: &none,
            origin: "t",
        };
        let patch_embed = 3 * 2 * 2 * 4 + 4;
        let positions = 4 * 4;
        let layer = 2 * 8 + 4 * (16 + 4) + (32 + 8) + (32 + 4);
        let post_norm = 8;
        let (got, out) = tower_params(Family::Siglip, &c).unwrap();
        assert_eq!(out, 4);
        assert_eq!(got, patch_embed + positions + layer + post_norm);
        // Head: probe 4, in_proj 3·16 + 12, out_proj 16 + 4, norm 8, MLP 40 + 36.
        let mut with_head = v.clone();
        with_head["vision_use_head"] = Value::Bool(true);
        let c = Cfg { v: &with_head, ..c };
        let head = 4 + 60 + 20 + 8 + 76;
        assert_eq!(
            tower_params(Family::Siglip, &c).unwrap().0,
            patch_embed + positions + layer + post_norm + head
        );
    }
}
