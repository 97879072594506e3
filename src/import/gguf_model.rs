//! A GGUF header → the engine's `ModelArch`, the exact model buffer per tensor type, and the KV
//! cache the metadata implies.
//!
//! Key names are llama.cpp's (`src/llama-arch.cpp` `LLM_KV_NAMES`, all prefixed by
//! `general.architecture`): `block_count`, `embedding_length`, `feed_forward_length`,
//! `attention.head_count(_kv)`, `attention.key_length`/`value_length`, `context_length`,
//! `attention.sliding_window`, `expert_count`, `expert_used_count`,
//! `expert_feed_forward_length`, `expert_shared_count`, `leading_dense_block_count`,
//! `attention.kv_lora_rank`, `attention.q_lora_rank`, `rope.dimension_count`.

use super::gguf::{self, GgufHeader, MetaValue};
use super::reader::shown;
use super::{ImportedModel, SourceFormat};
use crate::import::ImportError;
use crate::memory::weights::weight_bytes;
use crate::types::arch::{Mla, Mlp, ModelArch, Moe};
use crate::types::dtype::{GgufFileType, WEIGHT_NAMES, WeightFormat};
use crate::types::message::Message;
use crate::types::options::Engine;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// GGUF facts beyond the architecture.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GgufSummary {
    pub version: u32,
    /// `general.file_type` (llama.h `llama_ftype`) and its name (`Q4_K_M` …).
    pub file_type: Option<u64>,
    pub file_type_name: Option<String>,
    pub tensor_count: usize,
    /// Shards read (`split.count`), 1 for a single file.
    pub shards: usize,
    /// `token_embd.weight`: llama.cpp keeps it in host memory (llama-model.cpp puts the input
    /// layer on the CPU buffer type).
    pub token_embd_bytes: u64,
    /// `output.weight`, absent (0) when tied to the embedding.
    pub output_bytes: u64,
    /// K+V bytes per token at f16 over all layers, from the per-layer head counts and key/value
    /// lengths of the metadata (what llama.cpp's unified cache allocates for each cell).
    pub kv_bytes_per_token_f16: u64,
    /// Every metadata entry of the first file (long strings and arrays by their length only).
    pub metadata: std::collections::BTreeMap<String, MetaValue>,
}

/// `llama_ftype` names (llama.cpp `include/llama.h`); ids 4–6 and 33–35 are retired.
const FILE_TYPES: &[(u64, &str)] = &[
    (0, "F32"),
    (1, "F16"),
    (2, "Q4_0"),
    (3, "Q4_1"),
    (7, "Q8_0"),
    (8, "Q5_0"),
    (9, "Q5_1"),
    (10, "Q2_K"),
    (11, "Q3_K_S"),
    (12, "Q3_K_M"),
    (13, "Q3_K_L"),
    (14, "Q4_K_S"),
    (15, "Q4_K_M"),
    (16, "Q5_K_S"),
    (17, "Q5_K_M"),
    (18, "Q6_K"),
    (19, "IQ2_XXS"),
    (20, "IQ2_XS"),
    (21, "Q2_K_S"),
    (22, "IQ3_XS"),
    (23, "IQ3_XXS"),
    (24, "IQ1_S"),
    (25, "IQ4_NL"),
    (26, "IQ3_S"),
    (27, "IQ3_M"),
    (28, "IQ2_S"),
    (29, "IQ2_M"),
    (30, "IQ4_XS"),
    (31, "IQ1_M"),
    (32, "BF16"),
    (36, "TQ1_0"),
    (37, "TQ2_0"),
    (38, "MXFP4_MOE"),
];

/// Reads a GGUF file (and its other shards when it is split) into an `ImportedModel`.
pub fn import(path: &Path) -> Result<ImportedModel, ImportError> {
    let mut header = gguf::read(path)?;
    let mut files = vec![path.to_path_buf()];
    let mut tensors = std::mem::take(&mut header.tensors);
    let mut data_bytes = header.file_len.saturating_sub(header.data_start);
    let shards = header
        .get("split.count")
        .and_then(MetaValue::as_u64)
        .unwrap_or(1);
    if shards > 1 {
        let mut seen = vec![same_file_key(path)];
        for (i, other) in shard_paths(path, shards)?.into_iter().enumerate() {
            let shown = other.display();
            // A shard that is another one under a second name (a link, a copy) would be
            // counted twice: refused by its identity and by the number it says it has.
            let key = same_file_key(&other);
            if key.is_some() && seen.contains(&key) {
                return Err(format!("{shown}: is the same file as an earlier shard").into());
            }
            seen.push(key);
            let h = gguf::read(&other)?;
            if let Some(no) = h.get("split.no").and_then(MetaValue::as_u64)
                && no != i as u64 + 1
            {
                return Err(format!(
                    "{shown}: says it is shard {} of the split, not shard {} (split.no {no}); a shard is repeated or misnamed",
                    no + 1,
                    i + 2
                ).into());
            }
            if (tensors.len() + h.tensors.len()) as u64 > gguf::MAX_TENSORS {
                return Err(format!(
                    "{shown}: the shards hold more than {} tensors together, more than any model has",
                    gguf::MAX_TENSORS
                ).into());
            }
            data_bytes = data_bytes.saturating_add(h.file_len.saturating_sub(h.data_start));
            tensors.extend(h.tensors);
            files.push(other);
        }
    }
    let whole = GgufHeader { tensors, ..header };
    whole
        .check_sums(data_bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let fallback = path.file_stem().and_then(|s| s.to_str()).unwrap_or("model");
    let mut m = from_header(&whole, &path.display().to_string(), fallback)?;
    if let Some(g) = m.gguf.as_mut() {
        g.shards = files.len();
    }
    m.files = files;
    Ok(m)
}

/// What tells two paths of one file apart from two files: device and inode on Unix, the
/// canonical path elsewhere.
fn same_file_key(path: &Path) -> Option<(u64, u64, PathBuf)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some((m.dev(), m.ino(), PathBuf::new()))
    }
    #[cfg(not(unix))]
    {
        Some((0, 0, std::fs::canonicalize(path).ok()?))
    }
}

/// The other shards of `name-00001-of-00003.gguf` (llama.cpp `llama_split_path` naming).
fn shard_paths(first: &Path, count: u64) -> Result<Vec<PathBuf>, ImportError> {
    let shown = first.display();
    let name = first
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let suffix = format!("-00001-of-{count:05}.gguf");
    let Some(prefix) = name.strip_suffix(&suffix) else {
        return Err(format!(
            "{shown}: split into {count} files, but its name does not end in {suffix}; open the first shard"
        ).into());
    };
    if count > 9999 {
        return Err(format!("{shown}: split.count {count} is absurd").into());
    }
    let dir = first.parent().unwrap_or(Path::new("."));
    (2..=count)
        .map(|i| {
            let p = dir.join(format!("{prefix}-{i:05}-of-{count:05}.gguf"));
            if p.is_file() {
                Ok(p)
            } else {
                Err(ImportError::from(format!(
                    "{shown}: shard {} is missing",
                    p.display()
                )))
            }
        })
        .collect()
}

/// Builds the model from a parsed header; `origin` names the file in errors.
pub fn from_header(
    h: &GgufHeader,
    origin: &str,
    fallback_name: &str,
) -> Result<ImportedModel, ImportError> {
    let arch_name = h
        .get("general.architecture")
        .and_then(MetaValue::as_str)
        .ok_or_else(|| format!("{origin}: metadata general.architecture is missing"))?
        .to_string();
    let md = Meta {
        h,
        prefix: format!("{arch_name}."),
        origin,
    };
    let layers = md.need("block_count")?;
    if layers == 0 {
        return Err(format!(
            "{origin}: metadata {} is zero (a model has at least one layer)",
            md.name("block_count")
        )
        .into());
    }
    if md.num("context_length") == Some(0) {
        return Err(format!(
            "{origin}: metadata {} is zero (a model takes at least one token)",
            md.name("context_length")
        )
        .into());
    }
    let hidden = match md.num("embedding_length") {
        Some(v) => v,
        None => md
            .shape("token_embd.weight", 0)
            .ok_or_else(|| md.missing("embedding_length"))?,
    };
    let heads_l = md
        .per_layer("attention.head_count", layers)?
        .ok_or_else(|| md.missing("attention.head_count"))?;
    let heads = heads_l.iter().copied().max().unwrap_or(0);
    if heads == 0 {
        return Err(format!("{origin}: attention.head_count is zero").into());
    }
    let kv_l = md
        .per_layer("attention.head_count_kv", layers)?
        .unwrap_or_else(|| heads_l.clone());
    let kv_heads = kv_l.iter().copied().max().unwrap_or(heads).max(1);
    let k_len = md.num("attention.key_length").unwrap_or(hidden / heads);
    let v_len = md.num("attention.value_length").unwrap_or(k_len);
    let ff = md
        .per_layer("feed_forward_length", layers)?
        .map(|v| v.into_iter().max().unwrap_or(0));
    let vocab = md
        .num("vocab_size")
        .or_else(|| {
            h.get("tokenizer.ggml.tokens").and_then(|t| {
                if let MetaValue::Array { len, .. } = t {
                    Some(*len)
                } else {
                    None
                }
            })
        })
        .or_else(|| md.shape("token_embd.weight", 1))
        .ok_or_else(|| md.missing("vocab_size"))?;
    let has = |name: &str| h.tensors.iter().any(|t| t.name == name);
    let mlp = if h.tensors.iter().any(|t| t.name.contains(".ffn_gate")) || h.tensors.is_empty() {
        Mlp::Gated
    } else {
        Mlp::Plain
    };
    let moe = match md.num("expert_count").filter(|&e| e > 0) {
        Some(experts) => {
            let expert_ff = md.num("expert_feed_forward_length").or(ff).unwrap_or(0);
            let shared = md.num("expert_shared_count").unwrap_or_else(|| {
                // Qwen-MoE stores one shared expert by its width instead of a count.
                match (md.num("expert_shared_feed_forward_length"), expert_ff) {
                    (Some(w), e) if e > 0 => w.saturating_add(e / 2) / e,
                    _ => 0,
                }
            });
            Some(Moe {
                experts: small(experts, "expert_count", origin)?,
                active: small(
                    md.num("expert_used_count").unwrap_or(1),
                    "expert_used_count",
                    origin,
                )?,
                expert_intermediate: small(expert_ff, "expert_feed_forward_length", origin)?,
                shared_experts: small(shared, "expert_shared_count", origin)?,
                dense_layers: small(
                    md.num("leading_dense_block_count").unwrap_or(0),
                    "leading_dense_block_count",
                    origin,
                )?,
                // gpt-oss: `blk.N.ffn_{gate,up,down}_exps.bias` (llama-arch.cpp LLM_TENSOR_FFN_*_EXPS).
                expert_bias: h
                    .tensors
                    .iter()
                    .any(|t| t.name.ends_with("ffn_down_exps.bias")),
            })
        }
        None => None,
    };
    let mla = match md.num("attention.kv_lora_rank").filter(|&r| r > 0) {
        Some(rank) => {
            let rope = md.num("rope.dimension_count").unwrap_or(64);
            // Files converted since llama.cpp PR #12801 keep the per-head sizes in *_mla keys.
            let k_head = md.num("attention.key_length_mla").unwrap_or(k_len);
            let v_head = md.num("attention.value_length_mla").unwrap_or(v_len);
            Some(Mla {
                kv_lora_rank: small(rank, "attention.kv_lora_rank", origin)?,
                qk_rope_head_dim: small(rope, "rope.dimension_count", origin)?,
                qk_nope_head_dim: small(
                    k_head.saturating_sub(rope),
                    "attention.key_length",
                    origin,
                )?,
                v_head_dim: small(v_head, "attention.value_length", origin)?,
                q_lora_rank: md
                    .num("attention.q_lora_rank")
                    .filter(|&r| r > 0)
                    .map(|r| small(r, "attention.q_lora_rank", origin))
                    .transpose()?,
            })
        }
        None => None,
    };
    let window = md.num("attention.sliding_window").filter(|&w| w > 0);
    let global_every = window.and_then(|_| md.swa_period(&arch_name));
    let params = h.elements();
    let head_dim = match &mla {
        Some(m) => m.qk_nope_head_dim.saturating_add(m.qk_rope_head_dim),
        None => small(k_len, "attention.key_length", origin)?,
    };
    let arch = ModelArch {
        params: params as f64,
        layers: small(layers, "block_count", origin)?,
        hidden: small(hidden, "embedding_length", origin)?,
        heads: small(heads, "attention.head_count", origin)?,
        kv_heads: small(
            if mla.is_some() { heads } else { kv_heads },
            "attention.head_count_kv",
            origin,
        )?,
        head_dim,
        intermediate: small(
            ff.or(moe.as_ref().map(|m| u64::from(m.expert_intermediate)))
                .unwrap_or(0),
            "feed_forward_length",
            origin,
        )?,
        vocab: small(vocab, "vocab_size", origin)?,
        mlp,
        tied_embeddings: !has("output.weight") && !h.tensors.is_empty(),
        max_context: md
            .num("context_length")
            .map(|c| small(c, "context_length", origin))
            .transpose()?,
        sliding_window: window
            .map(|w| small(w, "attention.sliding_window", origin))
            .transpose()?,
        global_every,
        moe,
        mla,
        transformers_kv_heads: None,
        cache: None,
        model_type: Some(arch_name.clone()),
    };
    arch.validate().map_err(|e| format!("{origin}: {e}"))?;
    let kv_per_token: u64 = kv_l
        .iter()
        .map(|&kv| {
            kv.saturating_mul(k_len.saturating_add(v_len))
                .saturating_mul(2)
        })
        .sum();
    let file_type = h.get("general.file_type").and_then(MetaValue::as_u64);
    let file_type_name = file_type
        .and_then(|f| FILE_TYPES.iter().find(|t| t.0 == f))
        .map(|t| t.1.to_string());
    let mut notes = Vec::new();
    let weights = match file_type_name.as_deref().and_then(weight_format) {
        Some(f) => Some(f),
        None => {
            let (f, note) = format_from_tensors(h, &arch, file_type_name.as_deref());
            notes.push(note);
            Some(f)
        }
    };
    let bytes_of = |name: &str| {
        h.tensors
            .iter()
            .filter(|t| t.name == name)
            .map(|t| t.bytes)
            .sum()
    };
    let name = h
        .get("general.name")
        .and_then(MetaValue::as_str)
        .filter(|n| !n.trim().is_empty())
        .unwrap_or(fallback_name)
        .to_string();
    Ok(ImportedModel {
        name,
        model_type: arch_name,
        source: SourceFormat::Gguf,
        files: Vec::new(),
        arch,
        weights,
        params_by_shape: None,
        params_in_files: Some(params),
        weight_bytes: Some(h.tensor_bytes()),
        config_weight_bytes: None,
        weight_bytes_by_dtype: h.bytes_by_type(),
        gguf: Some(GgufSummary {
            version: h.version,
            file_type,
            file_type_name,
            tensor_count: h.tensors.len(),
            shards: 1,
            token_embd_bytes: bytes_of("token_embd.weight"),
            output_bytes: bytes_of("output.weight"),
            kv_bytes_per_token_f16: kv_per_token,
            metadata: h.metadata.clone(),
        }),
        notes,
    })
}

/// The format to plan a GGUF with when `general.file_type` is absent or names a type the engine
/// does not model (IQ1_S, MXFP4_MOE …): the file type whose main tensor type holds most of the
/// file's bytes (Q4_K → Q4_K_M, as `llama-quantize` names its mixes), else the modelled type
/// whose size by formula is nearest the file's. Either way the plan takes the exact sum of the
/// tensors' sizes (headers only), and the note says which name was used and why.
fn format_from_tensors(
    h: &GgufHeader,
    arch: &ModelArch,
    declared: Option<&str>,
) -> (WeightFormat, Message) {
    let total = h.tensor_bytes();
    let by_type = h.bytes_by_type();
    let main = by_type
        .iter()
        .max_by_key(|(_, b)| **b)
        .map_or("none", |(t, _)| t.as_str());
    // The note opens with why the file type gave no format: one it names, or none.
    let note = |id_named: &'static str, id_none: &'static str| match declared {
        Some(n) => Message::new(id_named).text("file_type", n),
        None => Message::new(id_none),
    };
    let gib = total as f64 / f64::from(1u32 << 30);
    let named = match main {
        "Q4_K" => "Q4_K_M",
        "Q5_K" => "Q5_K_M",
        "Q3_K" => "Q3_K_M",
        t => t,
    };
    if let Some(f) = weight_format(named) {
        return (
            f,
            note(
                "import.gguf.main_type",
                "import.gguf.main_type.no_file_type",
            )
            .text("main", main)
            .text("format", f.to_string())
            .fixed("gib", gib, 2),
        );
    }
    let size = |f: WeightFormat| {
        let b = weight_bytes(arch, f, Engine::LlamaCpp);
        b.gpu + b.host
    };
    let nearest = WEIGHT_NAMES
        .iter()
        .filter_map(|n| n.parse::<WeightFormat>().ok())
        .filter(|f| matches!(f, WeightFormat::Gguf(_)))
        .min_by(|a, b| {
            (size(*a) - total as f64)
                .abs()
                .total_cmp(&(size(*b) - total as f64).abs())
        })
        .unwrap_or(WeightFormat::Gguf(GgufFileType::Q8_0));
    (
        nearest,
        note("import.gguf.nearest", "import.gguf.nearest.no_file_type")
            .text("main", shown(main))
            .text("format", nearest.to_string())
            .fixed("gib", gib, 2),
    )
}

/// The engine's format for a GGUF file type name, where it models one.
fn weight_format(name: &str) -> Option<WeightFormat> {
    match name {
        "F32" => Some(WeightFormat::Fp32),
        "BF16" => Some(WeightFormat::Bf16),
        n => n.to_ascii_lowercase().parse().ok(),
    }
}

fn small(v: u64, key: &str, origin: &str) -> Result<u32, ImportError> {
    u32::try_from(v).map_err(|_| format!("{origin}: metadata {key} = {v} is absurd").into())
}

/// Metadata of one architecture.
struct Meta<'a> {
    h: &'a GgufHeader,
    prefix: String,
    origin: &'a str,
}

impl Meta<'_> {
    fn get(&self, key: &str) -> Option<&MetaValue> {
        self.h.get(&format!("{}{key}", self.prefix))
    }

    /// The full key, fit for a message (the prefix comes from the file).
    fn name(&self, key: &str) -> String {
        shown(&format!("{}{key}", self.prefix))
    }

    fn missing(&self, key: &str) -> String {
        format!("{}: metadata {} is missing", self.origin, self.name(key))
    }

    /// A scalar, or the largest entry of a per-layer array.
    fn num(&self, key: &str) -> Option<u64> {
        match self.get(key)? {
            MetaValue::Array { values, .. } => {
                values.iter().filter_map(|&v| u64::try_from(v).ok()).max()
            }
            v => v.as_u64(),
        }
    }

    fn need(&self, key: &str) -> Result<u64, ImportError> {
        self.num(key).ok_or_else(|| self.missing(key).into())
    }

    /// A value per layer: a scalar for all, or an array with one entry per layer.
    fn per_layer(&self, key: &str, layers: u64) -> Result<Option<Vec<u64>>, ImportError> {
        match self.get(key) {
            None => Ok(None),
            Some(MetaValue::Array { len, values }) => {
                if *len != layers || values.len() as u64 != layers {
                    return Err(format!(
                        "{}: {} has {len} entries for {layers} layers",
                        self.origin,
                        self.name(key)
                    )
                    .into());
                }
                Ok(Some(
                    values
                        .iter()
                        .map(|&v| u64::try_from(v).unwrap_or(0))
                        .collect(),
                ))
            }
            Some(v) => {
                let x = v.as_u64().ok_or_else(|| {
                    format!("{}: {} is not a whole number", self.origin, self.name(key))
                })?;
                if layers > 1 << 20 {
                    return Err(format!(
                        "{}: {} {layers} is absurd",
                        self.origin,
                        self.name("block_count")
                    )
                    .into());
                }
                Ok(Some(vec![x; layers as usize]))
            }
        }
    }

    /// Dimension `i` of a tensor.
    fn shape(&self, tensor: &str, i: usize) -> Option<u64> {
        self.h
            .tensors
            .iter()
            .find(|t| t.name == tensor)
            .and_then(|t| t.dims.get(i).copied())
    }

    /// One layer in how many is global: `attention.sliding_window_pattern` (a period, or a
    /// per-layer bool array where true marks a windowed layer), else llama.cpp's fixed patterns
    /// (`llama-model.cpp`: Gemma 2 alternates, Gemma 3 uses 5 local then 1 global).
    fn swa_period(&self, arch: &str) -> Option<u32> {
        match self.get("attention.sliding_window_pattern") {
            Some(MetaValue::Array { values, .. }) if !values.is_empty() => {
                let n = values.iter().position(|&v| v == 0)? + 1;
                let regular = values
                    .iter()
                    .enumerate()
                    .all(|(i, &v)| (v == 0) == ((i + 1) % n == 0));
                regular.then_some(n as u32)
            }
            Some(v) => v
                .as_u64()
                .and_then(|p| u32::try_from(p).ok())
                .filter(|&p| p > 0),
            None => match arch {
                "gemma2" => Some(2),
                "gemma3" => Some(6),
                _ => None,
            },
        }
    }
}
