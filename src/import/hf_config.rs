//! Hugging Face `config.json` → the engine's `ModelArch`, the weight format it declares, and a
//! parameter count from its shapes.
//!
//! Key names follow the transformers configuration classes (`num_hidden_layers`, or GPT-2's
//! `n_layer` …); per-`model_type` conventions (biases, norms, MLP shape, defaults the published
//! files rely on) are data in `presets/hf_architectures.toml`.

use super::hf_count::{
    self, Layout, LinearAttention, MoeLayout, MoeSpec, Norm, QkNorm, Single, Ssm,
};
use super::hf_quant;
use super::hf_vision;
use super::{ImportedModel, SourceFormat};
use crate::import::ImportError;
use crate::types::arch::{BlockCache, CacheLayout, Mla, Mlp, ModelArch, Moe};
use crate::types::dtype::WeightFormat;
use crate::types::message::Message;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

/// Real config.json files are a few KiB (a few hundred with big label maps); anything this big
/// is not one.
const MAX_CONFIG: u64 = 4 << 20;
/// The dense MLP width (GPT-2 `n_inner`, ChatGLM `ffn_hidden_size`, OPT `ffn_dim`).
const INTERMEDIATE_KEYS: [&str; 4] = ["intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim"];
/// More blocks than any model has (the deepest published decoders have a few hundred).
const MAX_LAYERS: u32 = 100_000;

/// A switch (a bias, a norm): fixed for the model type, or read from a config key (or, where
/// the configuration class maps other names onto it, the first of those that is set).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum BiasRule {
    Fixed(bool),
    Key {
        key: String,
        /// Other names of the key (InternLM3Config's `attribute_map`: `qkv_bias` is
        /// `attention_bias`).
        #[serde(default)]
        also: Vec<String>,
        default: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Sliding {
    None,
    Window,
    Flag,
}

/// One entry of `presets/hf_architectures.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Convention {
    #[allow(dead_code)]
    source: String,
    norm: Norm,
    norms_per_layer: u32,
    /// Extra norms per block when this config switch is true (HyperCLOVA X `use_post_norm`).
    #[serde(default)]
    post_norms_key: Option<String>,
    #[serde(default)]
    qk_norm: QkNorm,
    /// The config switch that turns `qk_norm` on (Cohere `use_qk_norm`); always on without one.
    #[serde(default)]
    qk_norm_key: Option<String>,
    qkv_bias: BiasRule,
    o_bias: BiasRule,
    mlp_bias: BiasRule,
    /// A bias on the output head (PhiMoE `lm_head_bias`).
    #[serde(default = "no_bias")]
    head_bias: BiasRule,
    mlp: Mlp,
    tied_default: bool,
    #[serde(default)]
    positions_key: Option<String>,
    /// Rows the learned position embedding holds beyond that count (OPT:
    /// `OPTLearnedPositionalEmbedding` adds an offset of 2).
    #[serde(default)]
    positions_offset: u32,
    /// The embeddings' width, from this key; where it differs from the hidden size,
    /// `project_in` and `project_out` (Linear without bias) map between them and the head reads
    /// that width (OPT `word_embed_proj_dim`).
    #[serde(default)]
    embed_width_key: Option<String>,
    /// A norm over the embeddings besides the final one (BLOOM `word_embeddings_layernorm`).
    #[serde(default)]
    embed_norm: bool,
    /// Whether the model ends in a final norm (OPT: only with `do_layer_norm_before`).
    #[serde(default = "with_bias")]
    final_norm: BiasRule,
    /// The norms hold parameters by this rule, none without (OPT
    /// `layer_norm_elementwise_affine`).
    #[serde(default)]
    norm_affine: Option<BiasRule>,
    #[serde(default)]
    multi_query_default: bool,
    #[serde(default)]
    intermediate_factor: Option<u32>,
    #[serde(default)]
    moe: Option<MoeLayout>,
    /// Width of one ungated shared expert MLP, from this config key (Granite-MoE-shared
    /// `shared_intermediate_size`), instead of the layout's rule.
    #[serde(default)]
    shared_width_key: Option<String>,
    /// The router holds a learned per-expert score bias (`e_score_correction_bias` as an
    /// `nn.Parameter`, ERNIE 4.5; AFMoE `expert_bias`).
    #[serde(default)]
    router_bias: bool,
    /// The routed experts' projections carry biases (gpt-oss).
    #[serde(default)]
    expert_bias: bool,
    /// Gated DeltaNet linear-attention blocks where `layer_types` says "linear_attention"
    /// (Qwen3-Next; `linear_*` config keys).
    #[serde(default)]
    linear_attention: bool,
    /// State-space blocks (`hf_count::Ssm`): which mixer, and which blocks are attention.
    #[serde(default)]
    ssm: Option<SsmRule>,
    /// q_proj also yields the attention output gate (Qwen3-Next).
    #[serde(default)]
    gated_attention: bool,
    /// One learned attention-sink logit per head and block (gpt-oss `GptOssAttention.sinks`).
    #[serde(default)]
    attention_sinks: bool,
    #[serde(default)]
    mla: bool,
    sliding: Sliding,
    #[serde(default)]
    global_every: Option<u32>,
    #[serde(default)]
    parallel_norms: bool,
    #[serde(default)]
    expanded_kv_key: Option<String>,
    /// The dense MLP blocks' width comes from this key while the experts keep
    /// `intermediate_size` (Llama 4 `intermediate_size_mlp`).
    #[serde(default)]
    dense_width_key: Option<String>,
    /// Chunked attention (Llama 4 `attention_chunk_size`): `chunked_attention` blocks keep at most
    /// one chunk of K/V, as a window of that size.
    #[serde(default)]
    chunked_attention: bool,
    #[serde(default)]
    defaults: BTreeMap<String, toml::Value>,
    /// A bidirectional encoder (BERT, RoBERTa): no KV cache, token-type embeddings and an
    /// embedding LayerNorm, and the head its `architectures` names.
    #[serde(default)]
    encoder: bool,
    /// The norms carry a bias by this rule (LayerNorm with it, weight only without: ModernBERT
    /// `norm_bias`), instead of `norm`.
    #[serde(default)]
    norm_bias: Option<BiasRule>,
    /// An encoder's token-type embeddings, `type_vocab_size` rows (BERT's; ModernBERT has none).
    #[serde(default = "yes")]
    token_types: bool,
    /// The bare encoder ends in a pooler, a dense with bias (BERT `BertPooler`; ModernBertModel
    /// has none).
    #[serde(default = "yes")]
    pooler: bool,
    /// The bias of the masked-LM head's transform dense (BERT: always; ModernBERT
    /// `classifier_bias`).
    #[serde(default = "with_bias")]
    head_dense_bias: BiasRule,
    /// The bias of the masked-LM decoder (BERT: always; ModernBERT `decoder_bias`).
    #[serde(default = "with_bias")]
    decoder_bias: BiasRule,
    /// Config switches that turn on a part this type's entry does not count, with the feature's
    /// name: a config that sets one is refused (exit 2) rather than counted without it.
    #[serde(default)]
    refuse: BTreeMap<String, String>,
    /// Other model types with this same layout (the text model of a vision-language wrapper,
    /// `qwen2_5_vl_text` is Qwen2's).
    #[serde(default)]
    also: Vec<String>,
}

/// The state-space mixer of a convention (`hf_count::Ssm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum SsmMixer {
    Mamba,
    Mamba2,
}

/// Where a state-space model's attention blocks are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum SsmAttention {
    /// None: every block is norm + mixer (Mamba, Mamba 2).
    None,
    /// The blocks `attn_layer_indices` lists (Bamba; the others are Mamba 2 blocks, each with
    /// the MLP).
    AttnLayerIndices,
    /// Every `attn_layer_period`-th block from `attn_layer_offset` (Jamba; the others are
    /// Mamba blocks with Δ/B/C norms, each with the MLP or the experts).
    AttnLayerPeriod,
    /// One part per block, from `hybrid_override_pattern` ("M" Mamba 2, "*" attention, "-"
    /// MLP, "E" experts) or `layers_block_type` (NemotronH, configuration_nemotron_h.py); the
    /// Mamba width is heads × head_dim.
    Pattern,
    /// The blocks `layer_types` (or its older name `layers_block_type`) calls "attention" or
    /// "full_attention"; "mamba" and "linear_attention" blocks are Mamba (GraniteMoeHybrid).
    LayerTypes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct SsmRule {
    mixer: SsmMixer,
    attention: SsmAttention,
    /// RMSNorms over Δ, B and C inside a Mamba mixer (Jamba).
    #[serde(default)]
    mixer_norms: bool,
}

fn no_bias() -> BiasRule {
    BiasRule::Fixed(false)
}

fn with_bias() -> BiasRule {
    BiasRule::Fixed(true)
}

fn yes() -> bool {
    true
}

fn conventions() -> Result<&'static BTreeMap<String, Convention>, ImportError> {
    static TABLE: OnceLock<Result<BTreeMap<String, Convention>, String>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            let mut t: BTreeMap<String, Convention> =
                toml::from_str(include_str!("../../presets/hf_architectures.toml"))
                    .map_err(|e| format!("presets/hf_architectures.toml: {e}"))?;
            let aliases: Vec<(String, Convention)> = t
                .values()
                .flat_map(|c| c.also.iter().map(move |a| (a.clone(), c.clone())))
                .collect();
            for (name, c) in aliases {
                if t.insert(name.clone(), c).is_some() {
                    return Err(format!(
                        "presets/hf_architectures.toml: {name} is both a type and another's `also`"
                    ));
                }
            }
            Ok(t)
        })
        .as_ref()
        .map_err(|e| ImportError::Malformed(e.clone()))
}

/// The config object (or its `text_config`) with the class defaults behind it.
pub(super) struct Cfg<'a> {
    pub(super) v: &'a Value,
    pub(super) defaults: &'a BTreeMap<String, toml::Value>,
    pub(super) origin: &'a str,
}

impl Cfg<'_> {
    /// The first of `keys` that is set (not null), looking at the class defaults last.
    pub(super) fn raw(&self, keys: &[&str]) -> Option<(String, Value)> {
        for k in keys {
            match self.v.get(*k) {
                Some(Value::Null) | None => {}
                Some(v) => return Some((k.to_string(), v.clone())),
            }
        }
        for k in keys {
            if let Some(d) = self.defaults.get(*k) {
                return serde_json::to_value(d).ok().map(|v| (k.to_string(), v));
            }
        }
        None
    }

    pub(super) fn u32(&self, keys: &[&str]) -> Result<Option<u32>, ImportError> {
        match self.raw(keys) {
            None => Ok(None),
            Some((k, v)) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => Ok(Some(n)),
                None => Err(format!(
                    "{}: {k} must be a whole number below 2^32, not {}",
                    self.origin,
                    super::reader::shown(&v.to_string())
                )
                .into()),
            },
        }
    }

    pub(super) fn need(&self, keys: &[&str]) -> Result<u32, ImportError> {
        self.u32(keys)?
            .ok_or_else(|| format!("{}: {} is missing", self.origin, keys[0]).into())
    }

    pub(super) fn bool(&self, key: &str) -> Option<bool> {
        self.raw(&[key]).and_then(|(_, v)| v.as_bool())
    }

    pub(super) fn str(&self, key: &str) -> Option<String> {
        self.raw(&[key])
            .and_then(|(_, v)| v.as_str().map(str::to_string))
    }

    fn bias(&self, rule: &BiasRule) -> bool {
        match rule {
            BiasRule::Fixed(b) => *b,
            BiasRule::Key { key, also, default } => {
                let keys: Vec<&str> = std::iter::once(key.as_str())
                    .chain(also.iter().map(String::as_str))
                    .collect();
                self.raw(&keys)
                    .and_then(|(_, v)| v.as_bool())
                    .unwrap_or(*default)
            }
        }
    }
}

/// Reads a config.json file.
pub fn read(path: &Path) -> Result<ImportedModel, ImportError> {
    let text = super::reader::read_small_text(path, MAX_CONFIG)?;
    let mut m = parse(&text, &path.display().to_string(), &name_from_path(path))?;
    m.files.push(path.to_path_buf());
    Ok(m)
}

/// A readable model name from where the file lies: the folder, or `org/name` of a Hugging Face
/// cache snapshot (`models--org--name/snapshots/<hash>/config.json`).
fn name_from_path(path: &Path) -> String {
    let dir = path.parent();
    let folder = |p: Option<&Path>| {
        p.and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .map(str::to_string)
    };
    if let Some(snap) = dir.and_then(|d| d.parent())
        && folder(Some(snap)).as_deref() == Some("snapshots")
        && let Some(repo) = folder(snap.parent())
        && let Some(id) = repo.strip_prefix("models--")
    {
        return id.replacen("--", "/", 1);
    }
    folder(dir)
        .filter(|n| !n.is_empty() && n != ".")
        .unwrap_or_else(|| "model".to_string())
}

/// Parses config.json text; `origin` names the file in errors, `fallback_name` is used when
/// the config does not name its model.
pub fn parse(text: &str, origin: &str, fallback_name: &str) -> Result<ImportedModel, ImportError> {
    let root: Value = serde_json::from_str(&python_json(text))
        .map_err(|e| format!("{origin}: not valid JSON: {e}"))?;
    if !root.is_object() {
        return Err(
            format!("{origin}: not a config.json (the top level is not a JSON object)").into(),
        );
    }
    let table = conventions()?;
    let top_type = root
        .get("model_type")
        .and_then(|t| t.as_str())
        .unwrap_or_default()
        .to_string();
    let mut notes = Vec::new();
    // Multimodal configs (Gemma 3, LLaVA, Mistral 3 …) nest the language model in text_config;
    // Qwen2-VL and Qwen2.5-VL as published keep its fields at the top level next to
    // vision_config.
    let vision_v = root.get("vision_config").filter(|v| v.is_object());
    let wrapper = match vision_v {
        Some(_) => Some(hf_vision::wrapper(&top_type)?.ok_or_else(|| {
            format!(
                "{origin}: the vision-language wrapper {} (its vision tower and projector) is not modelled by this program (the known ones are in presets/hf_vision.toml), so its memory cannot be planned",
                super::reader::shown(&top_type)
            )
        })?),
        None => None,
    };
    let text_v = root
        .get("text_config")
        .filter(|t| t.is_object())
        .unwrap_or(&root);
    let nested = !std::ptr::eq(text_v, &root);
    let text_type = match (text_v.get("model_type").and_then(|t| t.as_str()), wrapper) {
        (Some(t), _) if nested => t.to_string(),
        (_, Some(w)) => w.text.clone(),
        _ if nested && table.contains_key(&format!("{top_type}_text")) => {
            format!("{top_type}_text")
        }
        _ => top_type.clone(),
    };
    if top_type.is_empty() && text_type.is_empty() && root.get("architectures").is_none() {
        return Err(format!(
            "{origin}: not a Hugging Face config.json (no model_type or architectures)"
        )
        .into());
    }
    // Gemma 3's single-modality checkpoints say model_type "gemma3_text" at the top level.
    // A type not in the table is refused, never counted as some other type: its biases, norms,
    // experts and attention are what the table records per type.
    let Some(conv) = table.get(&text_type) else {
        return Err(format!(
            "{origin}: model_type {} is not one this program knows how to count (the known ones are in presets/hf_architectures.toml); describe the model by hand in a workload file ([model] params, layers, hidden, heads, kv_heads, vocab)",
            super::reader::shown(&text_type)
        ).into());
    };
    let defaults = if nested && wrapper.is_some() {
        hf_vision::text_defaults(&text_type, &conv.defaults)?
    } else {
        conv.defaults.clone()
    };
    let cfg = Cfg {
        v: text_v,
        defaults: &defaults,
        origin,
    };
    unmodelled(&root, &cfg, conv)
        .map_err(|feature| format!("{origin}: {feature} is not modelled by this program, so its memory cannot be planned (exit rather than a wrong figure)"))?;
    let mut layout = layout(&cfg, conv, &text_type)?;
    if let Some(ssm) = layout.ssm {
        notes.push(
            Message::new("import.config.state_space")
                .int("state", ssm.state_elements())
                .int("width", ssm.inner()),
        );
    }
    if let Some(w) = wrapper.filter(|_| nested) {
        layout.tied = w.tied(&root, layout.tied);
    }
    let vision_params = match (wrapper, vision_v) {
        (Some(w), Some(vc)) => {
            let top = Cfg {
                v: &root,
                defaults: &BTreeMap::new(),
                origin,
            };
            notes.push(Message::new("import.config.vision_tower"));
            hf_vision::params(w, &top, vc, layout.hidden)?
        }
        _ => 0,
    };
    let encoder_params = if conv.encoder {
        encoder(&root, &cfg, conv, &mut layout, &mut notes)?
    } else {
        0
    };
    let count = hf_count::count(&layout)
        .saturating_add(vision_params)
        .saturating_add(encoder_params);
    if cfg.u32(&["num_nextn_predict_layers"])?.unwrap_or(0) > 0 {
        notes.push(Message::new("import.config.mtp_layers"));
    }
    let mut arch = to_arch(&layout, count, &cfg, conv)?;
    arch.model_type = Some(text_type.clone());
    let stored = stored(&root, text_v, &layout, count, vision_params)
        .map_err(|e| format!("{origin}: {e}"))?;
    let (weights, config_weight_bytes) = match stored {
        Some(s) => {
            notes.extend(s.notes);
            (Some(s.format), s.bytes)
        }
        None => (None, None),
    };
    let name = root
        .get("_name_or_path")
        .and_then(|n| n.as_str())
        .filter(|n| {
            !n.is_empty() && !n.starts_with('/') && !n.starts_with('.') && !n.contains('\\')
        })
        .map_or_else(|| fallback_name.to_string(), str::to_string);
    Ok(ImportedModel {
        name,
        model_type: if top_type.is_empty() {
            text_type
        } else {
            top_type
        },
        source: SourceFormat::HfConfig,
        files: Vec::new(),
        arch,
        weights,
        params_by_shape: Some(count),
        params_in_files: None,
        weight_bytes: None,
        config_weight_bytes,
        weight_bytes_by_dtype: BTreeMap::new(),
        gguf: None,
        notes,
    })
}

/// The parts of a BERT-style encoder beyond the blocks `hf_count::count` sums (its final norm
/// stands for the embeddings' LayerNorm): token-type embeddings and the head of the class
/// `architectures` names (modeling_bert.py `BertModel` with its `BertPooler`, or
/// `BertForMaskedLM` with `BertLMPredictionHead`: transform dense + LayerNorm, a decoder tied
/// to the word embeddings, and its bias; RoBERTa's `RobertaLMHead` has the same shapes;
/// ModernBERT's `ModernBertPredictionHead` and decoder take their biases from the config, and
/// its bare model has no pooler). Its blocks cache nothing.
fn encoder(
    root: &Value,
    cfg: &Cfg,
    conv: &Convention,
    layout: &mut Layout,
    notes: &mut Vec<Message>,
) -> Result<u64, ImportError> {
    let h = u64::from(layout.hidden);
    let types = if conv.token_types {
        u64::from(cfg.u32(&["type_vocab_size"])?.unwrap_or(2))
    } else {
        0
    };
    let class = root
        .get("architectures")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str);
    let head = match class {
        Some(c) if c.ends_with("ForMaskedLM") => None,
        Some(c) if c.ends_with("Model") => Some(if conv.pooler { h * h + h } else { 0 }),
        Some(c) => {
            return Err(format!(
                "{}: the encoder head {} is not modelled by this program (only the bare model and the masked-LM head are), so its memory cannot be planned",
                cfg.origin,
                super::reader::shown(c)
            ).into());
        }
        None => {
            notes.push(Message::new("import.config.no_architecture"));
            None
        }
    };
    let head = match head {
        Some(pooler) => {
            // The bare model has no output matrix.
            layout.tied = true;
            pooler
        }
        None => {
            let bias = |rule| if cfg.bias(rule) { 1 } else { 0 };
            h * h
                + bias(&conv.head_dense_bias) * h
                + u64::try_from(layout.norm.params(u128::from(h))).unwrap_or(u64::MAX)
                + bias(&conv.decoder_bias) * u64::from(layout.vocab)
        }
    };
    layout.blocks = Some(vec![BlockCache::None; layout.layers as usize]);
    notes.push(Message::new("import.config.encoder"));
    Ok((types * h).saturating_add(head))
}

/// Python's `json` module (what transformers writes config.json with) writes `float('inf')` and
/// `float('nan')` as bare `Infinity`, `-Infinity` and `NaN`, and reads them back; serde_json
/// refuses them. Outside strings they become the largest finite double and `null`.
fn python_json(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("Infinity") && !text.contains("NaN") {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if let Some((word, with)) = [
            ("-Infinity", "-1.7976931348623157e308"),
            ("Infinity", "1.7976931348623157e308"),
            ("NaN", "null"),
        ]
        .into_iter()
        .find(|(w, _)| rest.starts_with(w))
        {
            out.push_str(with);
            rest = &rest[word.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out.into()
}

/// Config keys that declare a part of the model this program does not count or cache, with the
/// feature's name: a config holding one (set, not null, not zero or false) is refused.
/// Names from the transformers configuration classes (configuration_<type>.py).
const UNMODELLED_KEYS: [(&str, &str); 17] = [
    (
        "moe_latent_size",
        "latent projections around the experts (moe_latent_size)",
    ),
    (
        "is_encoder_decoder",
        "an encoder-decoder model (is_encoder_decoder)",
    ),
    (
        "attention_chunk_size",
        "chunked attention (attention_chunk_size)",
    ),
    (
        "interleave_moe_layer_step",
        "interleaved MoE layers (interleave_moe_layer_step)",
    ),
    (
        "intermediate_size_mlp",
        "a separate dense-MLP width (intermediate_size_mlp)",
    ),
    (
        "linear_num_value_heads",
        "linear attention (linear_num_value_heads)",
    ),
    (
        "linear_conv_kernel_dim",
        "linear attention (linear_conv_kernel_dim)",
    ),
    (
        "full_attention_interval",
        "hybrid linear/full attention (full_attention_interval)",
    ),
    (
        "ssm_state_size",
        "a state-space (Mamba) block (ssm_state_size)",
    ),
    (
        "mamba_d_state",
        "a state-space (Mamba) block (mamba_d_state)",
    ),
    (
        "mamba_n_heads",
        "a state-space (Mamba) block (mamba_n_heads)",
    ),
    (
        "attn_layer_indices",
        "a hybrid attention/Mamba stack (attn_layer_indices)",
    ),
    ("audio_config", "an audio tower (audio_config)"),
    (
        "kv_sharing_modes",
        "KV sharing between layers (kv_sharing_modes)",
    ),
    (
        "num_kv_shared_layers",
        "KV sharing between layers (num_kv_shared_layers)",
    ),
    (
        "altup_num_inputs",
        "AltUp per-layer inputs (altup_num_inputs)",
    ),
    (
        "n_group_shared_experts",
        "grouped shared experts (n_group_shared_experts)",
    ),
];

/// The keys of a state-space stack, modelled where the convention has `ssm`.
const SSM_KEYS: [&str; 4] = [
    "ssm_state_size",
    "mamba_d_state",
    "mamba_n_heads",
    "attn_layer_indices",
];

/// The keys of a Gated DeltaNet stack, modelled where the convention has `linear_attention`.
const LINEAR_ATTENTION_KEYS: [&str; 3] = [
    "linear_num_value_heads",
    "linear_conv_kernel_dim",
    "full_attention_interval",
];

/// The first part of the config this program would count wrong, named; `Ok` when every part
/// the config declares is one the convention of its type models.
fn unmodelled(root: &Value, cfg: &Cfg, conv: &Convention) -> Result<(), ImportError> {
    let set = |v: &Value| match v {
        Value::Null | Value::Bool(false) => false,
        Value::Number(n) => n.as_f64() != Some(0.0),
        _ => true,
    };
    let modelled_here = |key: &str| {
        conv.ssm.is_some() && SSM_KEYS.contains(&key)
            || conv.linear_attention && LINEAR_ATTENTION_KEYS.contains(&key)
            || conv.chunked_attention && key == "attention_chunk_size"
            || conv.dense_width_key.as_deref() == Some(key)
            || conv.moe.is_some() && key == "interleave_moe_layer_step"
    };
    let refused = UNMODELLED_KEYS
        .into_iter()
        .filter(|(key, _)| !modelled_here(key))
        .chain(conv.refuse.iter().map(|(k, f)| (k.as_str(), f.as_str())));
    for (key, feature) in refused {
        if let Some(v) = cfg.v.get(key).or_else(|| root.get(key))
            && set(v)
        {
            return Err(feature.to_string().into());
        }
    }
    let ssm_layer_types = conv
        .ssm
        .is_some_and(|r| r.attention == SsmAttention::LayerTypes);
    let pattern = conv
        .ssm
        .is_some_and(|r| r.attention == SsmAttention::Pattern);
    if let Some((_, Value::Array(types))) = cfg
        .raw(&["layer_types", "layers_block_type"])
        .filter(|_| !pattern)
    {
        for t in &types {
            let t = t.as_str().unwrap_or("?");
            let modelled = match t {
                "full_attention" => true,
                // A chunked-attention convention reads its window from attention_chunk_size.
                "sliding_attention" => !conv.chunked_attention,
                "linear_attention" => conv.linear_attention || ssm_layer_types,
                "mamba" | "attention" => ssm_layer_types,
                "chunked_attention" => conv.chunked_attention,
                _ => false,
            };
            if !modelled {
                return Err(format!("layer_types {} layers", super::reader::shown(t)).into());
            }
        }
    }
    if conv.moe.is_none()
        && let Some((key, v)) = cfg.raw(&[
            "num_experts",
            "n_routed_experts",
            "moe_num_experts",
            "num_local_experts",
        ])
        && set(&v)
    {
        return Err(format!(
            "routed experts ({key}) in a model_type whose expert layout is not in presets/hf_architectures.toml"
        ).into());
    }
    if !conv.mla && cfg.raw(&["kv_lora_rank"]).is_some() {
        return Err("multi-head latent attention (kv_lora_rank) in a model_type that is not known to use it".into());
    }
    Ok(())
}

fn layout(cfg: &Cfg, conv: &Convention, model_type: &str) -> Result<Layout, ImportError> {
    // BLOOM's legacy `n_embed` (configuration_bloom.py), MPT's `n_heads` / `n_layers`
    // (configuration_mpt.py attribute_map).
    let hidden = cfg.need(&["hidden_size", "n_embd", "d_model", "n_embed"])?;
    let single = single_blocks(cfg, conv)?;
    let layers = match &single {
        // NemotronHConfig: the pattern's length is the layer count.
        Some(s) => s.len() as u32,
        None => cfg.need(&["num_hidden_layers", "n_layer", "num_layers", "n_layers"])?,
    };
    let attention_free = conv.ssm.is_some_and(|r| r.attention == SsmAttention::None);
    let heads = if attention_free {
        // No attention block: one placeholder head (the blocks cache no K/V).
        1
    } else {
        cfg.need(&["num_attention_heads", "n_head", "num_heads", "n_heads"])?
    };
    if heads == 0 || hidden == 0 || layers == 0 {
        return Err(format!(
            "{}: hidden size, layer count and head count must be at least 1",
            cfg.origin
        )
        .into());
    }
    // The per-layer tables below must not be sized by a hostile number.
    if layers > MAX_LAYERS {
        return Err(format!(
            "{}: num_hidden_layers {layers} is absurd (at most {MAX_LAYERS})",
            cfg.origin
        )
        .into());
    }
    let kv_heads = match cfg.u32(&["num_key_value_heads", "num_kv_heads", "n_head_kv"])? {
        Some(k)
            if model_type != "falcon" || cfg.bool("new_decoder_architecture").unwrap_or(false) =>
        {
            k
        }
        _ if cfg.bool("multi_query").unwrap_or(conv.multi_query_default) => 1,
        _ => heads,
    };
    let head_dim = match attention_free {
        true => 1,
        false => cfg.u32(&["head_dim"])?.unwrap_or(hidden / heads),
    };
    let ssm = match conv.ssm {
        Some(rule) => Some(ssm(cfg, rule, hidden)?),
        None => None,
    };
    let intermediate = match (cfg.u32(&INTERMEDIATE_KEYS)?, conv.intermediate_factor) {
        // A Mamba model's only width is its mixer's (its activations are planned with it).
        _ if attention_free => ssm.map_or(hidden, |s| s.inner()),
        (Some(i), _) => i,
        (None, Some(f)) => hidden.saturating_mul(f),
        // A model whose every block is MoE (Solar Open) has no dense width; the expert width
        // stands in, and is refused below if a dense block needs it.
        (None, None) if conv.moe.is_some() => cfg.need(&["moe_intermediate_size"])?,
        (None, None) => return Err(format!("{}: intermediate_size is missing", cfg.origin).into()),
    };
    // Llama 4: experts of intermediate_size, dense blocks of intermediate_size_mlp
    // (modeling_llama4.py Llama4TextDecoderLayer).
    let dense = match &conv.dense_width_key {
        Some(k) => cfg.need(&[k.as_str()])?,
        None => intermediate,
    };
    let vocab = cfg.need(&["vocab_size", "padded_vocab_size"])?;
    let positions = match &conv.positions_key {
        Some(k) => cfg
            .u32(&[k.as_str(), "max_position_embeddings"])?
            .map_or(0, |p| p.saturating_add(conv.positions_offset)),
        None => 0,
    };
    let embed_width = match &conv.embed_width_key {
        Some(k) => cfg.u32(&[k.as_str()])?.unwrap_or(hidden),
        None => hidden,
    };
    let norms_per_layer = if conv.parallel_norms {
        if cfg.bool("new_decoder_architecture").unwrap_or(false) {
            cfg.u32(&["num_ln_in_parallel_attn"])?.unwrap_or(2)
        } else if cfg.bool("parallel_attn").unwrap_or(true) {
            1
        } else {
            2
        }
    } else {
        conv.norms_per_layer
    } + match &conv.post_norms_key {
        Some(k) if cfg.bool(k).unwrap_or(false) => 2,
        _ => 0,
    };
    let mla = if conv.mla { Some(mla(cfg)?) } else { None };
    let blocks = match (conv.ssm, &single) {
        (_, Some(s)) => Some(
            s.iter()
                .map(|k| match k {
                    Single::Attention => BlockCache::Full,
                    _ => BlockCache::None,
                })
                .collect(),
        ),
        (Some(rule), None) => Some(ssm_blocks(cfg, rule.attention, layers)?),
        (None, None) => layer_types(cfg, conv)?,
    };
    let linear = if conv.linear_attention
        && blocks
            .as_ref()
            .is_some_and(|b| b.contains(&BlockCache::None))
    {
        Some(LinearAttention {
            key_heads: cfg.need(&["linear_num_key_heads"])?,
            key_dim: cfg.need(&["linear_key_head_dim"])?,
            value_heads: cfg.need(&["linear_num_value_heads"])?,
            value_dim: cfg.need(&["linear_value_head_dim"])?,
            conv_kernel: cfg.need(&["linear_conv_kernel_dim"])?,
        })
    } else {
        None
    };
    let mut moe = match conv.moe {
        Some(l) => moe(cfg, conv, l, layers, intermediate)?,
        None => None,
    };
    if let (Some(m), Some(s)) = (moe.as_mut(), &single) {
        m.moe_layers = s.iter().map(|k| *k == Single::Moe).collect();
    }
    if moe.is_none() && single.as_ref().is_some_and(|s| s.contains(&Single::Moe)) {
        return Err(format!(
            "{}: the block pattern has expert blocks (E) but the config declares no experts (n_routed_experts)",
            cfg.origin
        ).into());
    }
    if cfg.raw(&INTERMEDIATE_KEYS).is_none()
        && !attention_free
        && conv.intermediate_factor.is_none()
        && moe.as_ref().is_none_or(|m| m.moe_layers.contains(&false))
    {
        return Err(format!(
            "{}: intermediate_size (the width of the dense MLP blocks) is missing",
            cfg.origin
        )
        .into());
    }
    Ok(Layout {
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim: if mla.is_some() { 0 } else { head_dim },
        intermediate: dense,
        vocab,
        positions,
        embed_width,
        tied: cfg.bool("tie_word_embeddings").unwrap_or(conv.tied_default),
        norm: match (&conv.norm_affine, &conv.norm_bias) {
            (Some(rule), _) if !cfg.bias(rule) => Norm::None,
            (_, Some(rule)) if cfg.bias(rule) => Norm::Layer,
            (_, Some(_)) => Norm::Rms,
            _ => conv.norm,
        },
        outer_norms: u32::from(cfg.bias(&conv.final_norm)) + u32::from(conv.embed_norm),
        norms_per_layer,
        qk_norm: match &conv.qk_norm_key {
            Some(k) if !cfg.bool(k).unwrap_or(false) => QkNorm::None,
            _ => conv.qk_norm,
        },
        qkv_bias: cfg.bias(&conv.qkv_bias),
        o_bias: cfg.bias(&conv.o_bias),
        mlp_bias: cfg.bias(&conv.mlp_bias),
        head_bias: cfg.bias(&conv.head_bias),
        attention_sinks: conv.attention_sinks,
        mlp: conv.mlp,
        moe,
        mla,
        gated_attention: conv.gated_attention,
        linear,
        state_elements: {
            let per_block = linear
                .map(|la| la.state_elements())
                .or(ssm.map(|s| s.state_elements()))
                .unwrap_or(0);
            let recurrent = match &single {
                Some(s) => s.iter().filter(|k| **k == Single::Mamba).count(),
                None => blocks
                    .as_ref()
                    .map_or(0, |b| b.iter().filter(|c| **c == BlockCache::None).count()),
            };
            per_block.saturating_mul(recurrent as u64)
        },
        ssm,
        ssm_only_mixer: attention_free,
        single,
        blocks,
    })
}

/// A state-space mixer's shapes, under the key names of its configuration class
/// (configuration_mamba.py, configuration_mamba2.py; Bamba's `mamba_*` keys,
/// configuration_bamba.py). The inner width is `expand · hidden` where the class derives it.
fn ssm(cfg: &Cfg, rule: SsmRule, hidden: u32) -> Result<Ssm, ImportError> {
    let mixer = rule.mixer;
    let expand = cfg.u32(&["mamba_expand", "expand"])?.unwrap_or(2);
    let state = cfg.need(&["mamba_d_state", "ssm_state_size", "state_size"])?;
    let conv_kernel = cfg.need(&["mamba_d_conv", "conv_kernel"])?;
    let bias = cfg
        .bool("mamba_proj_bias")
        .or(cfg.bool("use_bias"))
        .unwrap_or(false);
    let conv_bias = cfg
        .bool("mamba_conv_bias")
        .or(cfg.bool("use_conv_bias"))
        .unwrap_or(true);
    let heads = match mixer {
        SsmMixer::Mamba2 => cfg.need(&["mamba_n_heads", "mamba_num_heads", "num_heads"])?,
        SsmMixer::Mamba => 0,
    };
    // NemotronHMamba2Mixer: intermediate_size = mamba_num_heads × mamba_head_dim.
    let inner = match rule.attention {
        SsmAttention::Pattern => heads.saturating_mul(cfg.need(&["mamba_head_dim"])?),
        _ => expand.saturating_mul(hidden),
    };
    Ok(match mixer {
        SsmMixer::Mamba => {
            // MambaConfig keeps the mixer's width in intermediate_size; in a hybrid (Jamba) that
            // key is the MLP's and the mixer is mamba_expand × hidden.
            let inner = match cfg.u32(&["intermediate_size"])? {
                Some(i) if rule.attention == SsmAttention::None => i,
                _ => inner,
            };
            // MambaConfig / JambaConfig: a time-step rank of "auto" is ⌈hidden / 16⌉.
            let dt_rank = match cfg.raw(&["mamba_dt_rank", "time_step_rank"]) {
                Some((_, Value::String(a))) if a == "auto" => hidden.div_ceil(16),
                _ => cfg.need(&["mamba_dt_rank", "time_step_rank"])?,
            };
            Ssm::Mamba {
                inner,
                state,
                conv_kernel,
                dt_rank,
                bias,
                conv_bias,
                inner_norms: rule.mixer_norms,
            }
        }
        SsmMixer::Mamba2 => Ssm::Mamba2 {
            inner,
            state,
            conv_kernel,
            heads,
            // GraniteMoeHybridConfig: mamba_d_head "auto" is the inner width over the heads.
            head_dim: match cfg.raw(&["mamba_d_head"]) {
                Some((_, Value::String(a))) if a == "auto" => inner / heads.max(1),
                _ => cfg.need(&["mamba_d_head", "mamba_head_dim", "head_dim"])?,
            },
            groups: cfg.need(&["mamba_n_groups", "n_groups"])?,
            bias,
            conv_bias,
        },
    })
}

/// The blocks of a one-part-per-block convention (`SsmAttention::Pattern`), `None` for any
/// other.
fn single_blocks(cfg: &Cfg, conv: &Convention) -> Result<Option<Vec<Single>>, ImportError> {
    if conv
        .ssm
        .is_none_or(|r| r.attention != SsmAttention::Pattern)
    {
        return Ok(None);
    }
    let bad = |what: String| {
        Err(ImportError::Malformed(format!(
            "{}: {what} is not a block type of this model (Mamba, attention, MLP or experts)",
            cfg.origin
        )))
    };
    let kinds: Vec<Single> = match cfg.raw(&["hybrid_override_pattern", "layers_block_type"]) {
        Some((_, Value::String(p))) => {
            let mut v = Vec::with_capacity(p.len());
            for c in p.chars() {
                v.push(match c {
                    'M' => Single::Mamba,
                    '*' => Single::Attention,
                    '-' => Single::Mlp,
                    'E' => Single::Moe,
                    c => return bad(format!("hybrid_override_pattern letter {c:?}")),
                });
            }
            v
        }
        Some((_, Value::Array(a))) => {
            let mut v = Vec::with_capacity(a.len());
            for t in &a {
                v.push(match t.as_str() {
                    Some("mamba" | "linear_attention") => Single::Mamba,
                    Some("attention" | "full_attention") => Single::Attention,
                    Some("mlp") => Single::Mlp,
                    Some("moe") => Single::Moe,
                    _ => {
                        return bad(format!(
                            "layers_block_type {}",
                            super::reader::shown(&t.to_string())
                        ));
                    }
                });
            }
            v
        }
        _ => {
            return Err(format!(
                "{}: hybrid_override_pattern (or layers_block_type) is missing",
                cfg.origin
            )
            .into());
        }
    };
    if kinds.is_empty() || kinds.len() > MAX_LAYERS as usize {
        return Err(format!(
            "{}: the block pattern lists {} blocks (1 to {MAX_LAYERS})",
            cfg.origin,
            kinds.len()
        )
        .into());
    }
    Ok(Some(kinds))
}

/// Which blocks of a state-space model are Mamba blocks (`BlockCache::None`) and which
/// attention blocks (`Full`).
fn ssm_blocks(
    cfg: &Cfg,
    attention: SsmAttention,
    layers: u32,
) -> Result<Vec<BlockCache>, ImportError> {
    let layers = layers.min(MAX_LAYERS) as usize;
    match attention {
        SsmAttention::None => Ok(vec![BlockCache::None; layers]),
        SsmAttention::AttnLayerIndices => {
            let mut blocks = vec![BlockCache::None; layers];
            match cfg.raw(&["attn_layer_indices"]) {
                None | Some((_, Value::Null)) => {}
                Some((_, Value::Array(a))) => {
                    for v in a {
                        match v.as_u64().filter(|i| (*i as usize) < layers) {
                            Some(i) => blocks[i as usize] = BlockCache::Full,
                            None => {
                                return Err(format!(
                                    "{}: attn_layer_indices holds {}, not a layer index below {layers}",
                                    cfg.origin,
                                    super::reader::shown(&v.to_string())
                                ).into());
                            }
                        }
                    }
                }
                Some((_, v)) => {
                    return Err(format!(
                        "{}: attn_layer_indices must be a list of layer indices, not {}",
                        cfg.origin,
                        super::reader::shown(&v.to_string())
                    )
                    .into());
                }
            }
            Ok(blocks)
        }
        // Read by `single_blocks`, which gives the blocks before this is asked.
        SsmAttention::Pattern => Ok(vec![BlockCache::None; layers]),
        SsmAttention::AttnLayerPeriod => {
            // configuration_jamba.py `layers_block_type`.
            let period = cfg.need(&["attn_layer_period"])?.max(1) as usize;
            let offset = cfg.need(&["attn_layer_offset"])? as usize;
            Ok((0..layers)
                .map(|l| {
                    if l % period == offset {
                        BlockCache::Full
                    } else {
                        BlockCache::None
                    }
                })
                .collect())
        }
        SsmAttention::LayerTypes => match cfg.raw(&["layer_types", "layers_block_type"]) {
            // configuration_granitemoehybrid.py: no list is every block Mamba.
            None | Some((_, Value::Null)) => Ok(vec![BlockCache::None; layers]),
            Some((_, Value::Array(a))) if a.len() == layers => Ok(a
                .iter()
                .map(|t| match t.as_str() {
                    Some("attention" | "full_attention") => BlockCache::Full,
                    _ => BlockCache::None,
                })
                .collect()),
            Some((k, v)) => Err(format!(
                "{}: {k} must list one block type per layer ({layers}), not {}",
                cfg.origin,
                super::reader::shown(&v.to_string())
            )
            .into()),
        },
    }
}

fn mla(cfg: &Cfg) -> Result<Mla, ImportError> {
    Ok(Mla {
        kv_lora_rank: cfg.need(&["kv_lora_rank"])?,
        qk_rope_head_dim: cfg.need(&["qk_rope_head_dim"])?,
        qk_nope_head_dim: cfg.need(&["qk_nope_head_dim"])?,
        v_head_dim: cfg.need(&["v_head_dim"])?,
        q_lora_rank: cfg.u32(&["q_lora_rank"])?,
    })
}

fn moe(
    cfg: &Cfg,
    conv: &Convention,
    layout: MoeLayout,
    layers: u32,
    intermediate: u32,
) -> Result<Option<MoeSpec>, ImportError> {
    // Key names of the transformers configuration classes: Mixtral `num_local_experts`, Qwen-MoE
    // `num_experts`, DeepSeek `n_routed_experts`, ERNIE 4.5 `moe_num_experts` / `moe_k`.
    let experts = cfg
        .u32(&[
            "num_local_experts",
            "num_experts",
            "n_routed_experts",
            "moe_num_experts",
        ])?
        .unwrap_or(0);
    if experts == 0 {
        return Ok(None);
    }
    let active = cfg.need(&["num_experts_per_tok", "moe_k"])?;
    let expert_intermediate = match layout {
        MoeLayout::Mixtral => intermediate,
        _ => cfg.need(&["moe_intermediate_size"])?,
    };
    let (shared_intermediate, shared_gate) = match (&conv.shared_width_key, layout) {
        (Some(k), _) => (cfg.u32(&[k.as_str()])?.unwrap_or(0), false),
        (None, MoeLayout::Mixtral) => (0, false),
        (None, MoeLayout::Qwen) => {
            let s = cfg.u32(&["shared_expert_intermediate_size"])?.unwrap_or(0);
            (s, s > 0)
        }
        (None, MoeLayout::Deepseek) => (
            cfg.u32(&[
                "n_shared_experts",
                "num_shared_experts",
                "moe_num_shared_experts",
            ])?
            .unwrap_or(0)
            .saturating_mul(expert_intermediate),
            false,
        ),
    };
    // Which blocks hold experts, by every rule the configuration classes use (a key that is
    // absent allows every block): Qwen-MoE `mlp_only_layers` and `decoder_sparse_step`
    // (modeling_qwen2_moe.py), DeepSeek `first_k_dense_replace` and `moe_layer_freq`, AFMoE
    // `num_dense_layers`, ERNIE 4.5 `moe_layer_start_index` / `moe_layer_end_index` /
    // `moe_layer_interval` (modeling_ernie4_5_moe.py `Ernie4_5_MoeDecoderLayer`).
    let mlp_only: Vec<u64> = cfg
        .raw(&["mlp_only_layers"])
        .and_then(|(_, v)| {
            v.as_array()
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
        })
        .unwrap_or_default();
    // Llama 4 `interleave_moe_layer_step` (configuration_llama4.py: experts in blocks
    // step-1, 2·step-1, …) is Qwen-MoE's decoder_sparse_step rule; its `moe_layers`, when the
    // config lists them, name the blocks outright.
    let step = cfg
        .u32(&["decoder_sparse_step", "interleave_moe_layer_step"])?
        .unwrap_or(1)
        .max(1);
    let listed: Option<Vec<u64>> = cfg.raw(&["moe_layers"]).and_then(|(_, v)| {
        v.as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
    });
    let first_dense = cfg
        .u32(&[
            "first_k_dense_replace",
            "num_dense_layers",
            "moe_layer_start_index",
        ])?
        .unwrap_or(0);
    let freq = cfg.u32(&["moe_layer_freq"])?.unwrap_or(1).max(1);
    let interval = cfg.u32(&["moe_layer_interval"])?.unwrap_or(1).max(1);
    // Jamba `layers_num_experts`: experts where l % expert_layer_period == expert_layer_offset.
    let period = cfg.u32(&["expert_layer_period"])?.unwrap_or(1).max(1);
    let offset = cfg.u32(&["expert_layer_offset"])?.unwrap_or(0);
    // ERNIE writes -1 for "to the last layer".
    let last = match cfg.raw(&["moe_layer_end_index"]) {
        Some((_, v)) if v.as_i64().is_some_and(|n| n < 0) => u32::MAX,
        _ => cfg.u32(&["moe_layer_end_index"])?.unwrap_or(u32::MAX),
    };
    let moe_layers: Vec<bool> = (0..layers)
        .map(|l| {
            listed.as_ref().is_none_or(|m| m.contains(&u64::from(l)))
                && !mlp_only.contains(&u64::from(l))
                && (l + 1) % step == 0
                && l >= first_dense
                && l % freq == 0
                && l <= last
                && (l + 1) % interval == 0
                && l % period == offset
        })
        .collect();
    let router_bias = conv.router_bias
        || (layout == MoeLayout::Deepseek && cfg.str("topk_method").as_deref() == Some("noaux_tc"));
    Ok(Some(MoeSpec {
        layout,
        experts,
        active,
        expert_intermediate,
        shared_intermediate,
        shared_gate,
        router_bias,
        expert_bias: conv.expert_bias,
        moe_layers,
    }))
}

fn to_arch(
    l: &Layout,
    params: u64,
    cfg: &Cfg,
    conv: &Convention,
) -> Result<ModelArch, ImportError> {
    let window = match conv.sliding {
        // A config that states its own window pattern (the spelling of Gemma 3 and Cohere2
        // before layer_types) is windowed whatever its type's convention says.
        Sliding::None if cfg.raw(&["sliding_window_pattern"]).is_some() => {
            Some(cfg.u32(&["sliding_window"])?.ok_or_else(|| {
                format!(
                    "{}: sliding_window_pattern is set but sliding_window is missing",
                    cfg.origin
                )
            })?)
        }
        Sliding::None => None,
        Sliding::Window => cfg.u32(&["sliding_window"])?,
        Sliding::Flag if cfg.bool("use_sliding_window").unwrap_or(false) => {
            cfg.u32(&["sliding_window"])?
        }
        Sliding::Flag => None,
    };
    // layer_types, where the config lists it, says which blocks are windowed for any model type;
    // a layout without a regular period is kept block by block.
    let (window, global_every, cache) = match &l.blocks {
        Some(blocks) => {
            let key = if conv.chunked_attention {
                "attention_chunk_size"
            } else {
                "sliding_window"
            };
            let window = if blocks.contains(&BlockCache::Sliding) {
                Some(cfg.u32(&[key])?.ok_or_else(|| {
                    format!(
                        "{}: layer_types lists windowed layers but {key} is missing",
                        cfg.origin
                    )
                })?)
            } else {
                None
            };
            match regular_period(blocks) {
                Some(every) if l.state_elements == 0 => (window, every, None),
                _ => (
                    window,
                    None,
                    Some(CacheLayout {
                        blocks: blocks.clone(),
                        state_elements: l.state_elements as f64,
                    }),
                ),
            }
        }
        None => (
            window,
            cfg.u32(&["sliding_window_pattern"])?.or(conv.global_every),
            None,
        ),
    };
    let mla_head = l
        .mla
        .as_ref()
        .map(|m| m.qk_nope_head_dim.saturating_add(m.qk_rope_head_dim));
    let arch = ModelArch {
        params: params as f64,
        layers: l.layers,
        hidden: l.hidden,
        heads: l.heads,
        kv_heads: l.kv_heads,
        head_dim: mla_head.unwrap_or(l.head_dim),
        intermediate: l.intermediate,
        vocab: l.vocab,
        mlp: l.mlp,
        tied_embeddings: l.tied,
        max_context: cfg.u32(&[
            "max_position_embeddings",
            "n_positions",
            "seq_length",
            "max_sequence_length",
        ])?,
        sliding_window: window,
        global_every: if window.is_some() { global_every } else { None },
        moe: l.moe.as_ref().map(|m| Moe {
            experts: m.experts,
            active: m.active,
            expert_intermediate: m.expert_intermediate,
            shared_experts: match m.expert_intermediate {
                0 => 0,
                e => m.shared_intermediate.saturating_add(e / 2) / e,
            },
            dense_layers: m.moe_layers.iter().filter(|x| !**x).count() as u32,
            expert_bias: m.expert_bias,
        }),
        mla: l.mla.clone(),
        transformers_kv_heads: (conv.expanded_kv_key.as_deref())
            .filter(|k| cfg.bool(k).unwrap_or(false))
            .map(|_| l.heads),
        cache,
        model_type: None,
    };
    arch.validate()
        .map_err(|e| format!("{}: {e}", cfg.origin))?;
    Ok(arch)
}

/// The blocks of a windowed layout in the engine's regular form: `Some(None)` when every
/// attention block is windowed (or none is), `Some(Some(n))` when one in every `n` is full and
/// it is the last of each `n` (Gemma 2/3), `None` for any other mix.
fn regular_period(blocks: &[BlockCache]) -> Option<Option<u32>> {
    if blocks.contains(&BlockCache::None) {
        return None;
    }
    let full: Vec<bool> = blocks.iter().map(|b| *b == BlockCache::Full).collect();
    let Some(first) = full.iter().position(|f| *f) else {
        return Some(None);
    };
    if full.iter().all(|f| *f) {
        return Some(None);
    }
    let n = first + 1;
    full.iter()
        .enumerate()
        .all(|(i, f)| *f == ((i + 1) % n == 0))
        .then_some(Some(n as u32))
}

/// `layer_types` (["sliding_attention", …, "full_attention"]) as block caches. A chunked
/// attention convention without the list derives it as configuration_llama4.py does: a block is
/// chunked where `no_rope_layers` says it uses RoPE (1), by default all but every
/// `no_rope_layer_interval`-th, while `attention_chunk_size` is set. A linear-attention
/// convention without the list derives it as configuration_qwen3_next.py (and qwen3_5,
/// qwen3_5_moe) `__post_init__` does: every `full_attention_interval`-th block (default 4) is
/// full attention, the others linear — the published Qwen3-Next config.json files give only
/// the interval.
fn layer_types(cfg: &Cfg, conv: &Convention) -> Result<Option<Vec<BlockCache>>, ImportError> {
    let Some((_, Value::Array(types))) = cfg.raw(&["layer_types"]) else {
        if conv.linear_attention {
            let layers = cfg.need(&["num_hidden_layers"])?.min(MAX_LAYERS);
            let interval = cfg.u32(&["full_attention_interval"])?.unwrap_or(4);
            if interval == 0 {
                return Err(format!("{}: full_attention_interval is 0", cfg.origin).into());
            }
            return Ok(Some(
                (0..layers)
                    .map(|l| {
                        if (l + 1) % interval == 0 {
                            BlockCache::Full
                        } else {
                            BlockCache::None
                        }
                    })
                    .collect(),
            ));
        }
        // An explicit null turns chunking off (Llama4TextConfig `attention_chunk_size: int | None`).
        if !conv.chunked_attention
            || cfg.v.get("attention_chunk_size") == Some(&Value::Null)
            || cfg.u32(&["attention_chunk_size"])?.is_none()
        {
            return Ok(None);
        }
        let layers = cfg.need(&["num_hidden_layers"])?.min(MAX_LAYERS);
        let listed: Vec<u64> = match cfg.raw(&["no_rope_layers"]) {
            Some((_, Value::Array(a))) => a.iter().filter_map(Value::as_u64).collect(),
            _ => Vec::new(),
        };
        let interval = cfg.u32(&["no_rope_layer_interval"])?.unwrap_or(4).max(1);
        return Ok(Some(
            (0..layers)
                .map(|l| {
                    let rope = match listed.get(l as usize) {
                        Some(r) if !listed.is_empty() => *r != 0,
                        _ => (l + 1) % interval != 0,
                    };
                    if rope {
                        BlockCache::Sliding
                    } else {
                        BlockCache::Full
                    }
                })
                .collect(),
        ));
    };
    Ok(Some(
        types
            .iter()
            .map(|t| match t.as_str() {
                Some("sliding_attention" | "chunked_attention") => BlockCache::Sliding,
                Some("linear_attention") => BlockCache::None,
                _ => BlockCache::Full,
            })
            .collect(),
    ))
}

/// The 16-bit dtype a config declares (`torch_dtype`, `dtype` in newer files), its own or
/// its text model's.
fn declared_dtype(root: &Value, text: &Value) -> Option<WeightFormat> {
    let dtype = root
        .get("torch_dtype")
        .or_else(|| root.get("dtype"))
        .or_else(|| text.get("torch_dtype"))
        .or_else(|| text.get("dtype"));
    match dtype.and_then(|d| d.as_str()) {
        Some("bfloat16") => Some(WeightFormat::Bf16),
        Some("float16") => Some(WeightFormat::Fp16),
        Some("float32") => Some(WeightFormat::Fp32),
        _ => None,
    }
}

/// The weights as the config says they are stored: its `quantization_config` read module by
/// module (`hf_quant`), else its dtype.
fn stored(
    root: &Value,
    text: &Value,
    layout: &Layout,
    total: u64,
    vision: u64,
) -> Result<Option<hf_quant::Stored>, ImportError> {
    let dtype = declared_dtype(root, text);
    let q = root
        .get("quantization_config")
        .or_else(|| text.get("quantization_config"));
    match q {
        Some(q) if q.is_object() => {
            let dtype_bytes = if dtype == Some(WeightFormat::Fp32) {
                4.0
            } else {
                2.0
            };
            hf_quant::read(q, layout, total, vision, dtype_bytes).map(Some)
        }
        Some(Value::Null) | None => Ok(dtype.map(|format| hf_quant::Stored {
            format,
            bytes: None,
            notes: Vec::new(),
        })),
        Some(other) => Err(format!(
            "quantization_config must be an object, not {}",
            super::reader::shown(&other.to_string())
        )
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_convention_parses() {
        let t = conventions().unwrap();
        for ty in [
            "llama",
            "mistral",
            "mixtral",
            "qwen2",
            "qwen2_moe",
            "qwen3",
            "qwen3_moe",
            "gemma",
            "gemma2",
        ] {
            assert!(t.contains_key(ty), "{ty}");
        }
        assert_eq!(
            t["gemma3_text"].defaults["vocab_size"].as_integer(),
            Some(262_208)
        );
    }

    #[test]
    fn cache_snapshot_paths_name_the_repository() {
        let p = Path::new(
            "/home/u/.cache/huggingface/hub/models--Qwen--Qwen3-8B/snapshots/abc123/config.json",
        );
        assert_eq!(name_from_path(p), "Qwen/Qwen3-8B");
        assert_eq!(
            name_from_path(Path::new("/m/Llama-3.1-8B/config.json")),
            "Llama-3.1-8B"
        );
        assert_eq!(name_from_path(Path::new("config.json")), "model");
    }
}
