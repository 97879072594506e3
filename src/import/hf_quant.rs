//! The bytes a `quantization_config` stores, module by module: which `nn.Linear` layers each
//! method quantizes (its own default targets, minus its `ignore` / `modules_to_not_convert` /
//! `exclude_modules` list), and how each quantized `[out, in]` matrix is packed with its
//! scales, zero points and index tensors. Everything else stays in the model's 16-bit dtype.
//!
//! A method, packing or option this file does not model is refused by name (the importer
//! exits 2): a planner that took an unknown format for bf16 would be silently wrong by 2-4×.
//! Sources, per method:
//! - GPTQ (AutoGPTQ / GPTQModel `QuantLinear`, transformers `quantizers/quantizer_gptq.py`):
//!   `qweight` int32 `[in·bits/32, out]`, `qzeros` int32 `[⌈in/g⌉, out·bits/32]`, `scales` fp16
//!   `[⌈in/g⌉, out]`, `g_idx` int32 `[in]`; `group_size` -1 is one group per column. Only the
//!   decoder blocks' projections (GPTQModel model definitions' `layer_modules`), the head when
//!   `lm_head` is true.
//! - AWQ (AutoAWQ `WQLinear_GEMM` / `WQLinear_GEMV`): `qweight` int32 `[in, out/8]`, `qzeros`
//!   int32 `[⌈in/g⌉, out/8]`, `scales` fp16 `[⌈in/g⌉, out]`; the blocks' projections, minus
//!   `modules_to_not_convert` (a substring match, transformers `integrations/awq.py`).
//! - bitsandbytes (`bitsandbytes.functional.quantize_4bit`, `Int8Params`): 4-bit codes two per
//!   byte with one absmax per 64 weights (fp32, or with double quantization uint8 plus one fp32
//!   per 256 blocks); LLM.int8 int8 weights and one fp32 `SCB` per output row. Every linear
//!   but `llm_int8_skip_modules` (default: the output head, transformers
//!   `get_keys_to_not_convert`).
//! - fp8 (transformers `FineGrainedFP8Config`, `integrations/finegrained_fp8.py` `FP8Linear`):
//!   one byte per weight and a fp32 `weight_scale_inv` per `weight_block_size` block (default
//!   128×128; null = one per tensor), an fp32 `input_scale` with static activations;
//!   fbgemm_fp8 (`FbgemmFp8Linear`): one fp32 scale per output row.
//! - compressed-tensors (llm-compressor; `compressors/quantized_compressors/`
//!   `pack_quantized.py`, `naive_quantized.py`, `fp4_quantized.py`, scale shapes and dtypes in
//!   `quantization/lifecycle/initialize.py` `initialize_qparams`): `config_groups` with
//!   `targets` (`Linear`, `re:` regular expressions, exact names) and `ignore`.
//! - ModelOpt (NVIDIA Model Optimizer export, vLLM `quantization/modelopt.py`): `FP8` per-tensor
//!   fp32 `weight_scale` and `input_scale`; `NVFP4` two E2M1 per byte, an E4M3 scale per 16,
//!   fp32 `weight_scale_2` and `input_scale`; `exclude_modules` are shell-style patterns.

use super::hf_count::{self, Layout, Lin};
use crate::import::ImportError;
use crate::types::dtype::WeightFormat;
use crate::types::message::Message;
use regex::Regex;
use serde_json::Value;

/// The weights as the config says they are stored.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Stored {
    pub format: WeightFormat,
    /// Bytes of every weight tensor; `None` where the format's own formula applies (gpt-oss
    /// MXFP4, which `memory::weights` models).
    pub bytes: Option<u64>,
    pub notes: Vec<Message>,
}

/// How scales are laid over one `[out, in]` matrix.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scales {
    Tensor,
    /// One per output row.
    Channel,
    /// One per output row and group of `g` input columns.
    Group(u32),
    /// One per `rows × cols` block.
    Block(u32, u32),
    /// One per run of `n` weights of the flattened matrix (bitsandbytes blocks).
    Flat(u32),
}

impl Scales {
    fn count(self, inp: f64, out: f64) -> f64 {
        let cdiv = |a: f64, b: u32| (a / f64::from(b.max(1))).ceil();
        match self {
            Scales::Tensor => 1.0,
            Scales::Channel => out,
            Scales::Group(g) => out * cdiv(inp, g),
            Scales::Block(r, c) => cdiv(out, r) * cdiv(inp, c),
            Scales::Flat(n) => cdiv(inp * out, n),
        }
    }
}

/// The storage of one quantized linear layer.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Packing {
    bits: u32,
    /// Codes packed into int32 words along each row (GPTQ, AWQ, compressed-tensors
    /// pack-quantized): a row of `in` codes takes ⌈in·bits/32⌉ words.
    int32: bool,
    scales: Scales,
    scale_bytes: f64,
    /// Bytes of zero point per scale (0 for symmetric schemes).
    zero_bytes: f64,
    /// A second level of scales: one of `bytes` per `n` first-level scales (bitsandbytes
    /// double quantization).
    nested: Option<(u32, f64)>,
    /// Bytes per input column (GPTQ and act-order `g_idx`).
    per_input: f64,
    /// Bytes per tensor (global and activation scales, the stored shape).
    per_tensor: f64,
}

impl Packing {
    fn new(bits: u32, scales: Scales, scale_bytes: f64) -> Self {
        Packing {
            bits,
            int32: false,
            scales,
            scale_bytes,
            zero_bytes: 0.0,
            nested: None,
            per_input: 0.0,
            per_tensor: 0.0,
        }
    }

    fn bytes(&self, inp: f64, out: f64) -> f64 {
        let bits = f64::from(self.bits);
        let codes = if self.int32 {
            out * (inp * bits / 32.0).ceil() * 4.0
        } else {
            (inp * out * bits / 8.0).ceil()
        };
        let scales = self.scales.count(inp, out);
        let nested = self
            .nested
            .map_or(0.0, |(n, b)| (scales / f64::from(n.max(1))).ceil() * b);
        codes
            + scales * (self.scale_bytes + self.zero_bytes)
            + nested
            + inp * self.per_input
            + self.per_tensor
    }
}

/// How a method's module list is matched against module names.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Match {
    /// transformers' `key in module_name` (AWQ, bitsandbytes, fp8 `modules_to_not_convert`).
    Substring,
    /// compressed-tensors `match_name`: `re:` + a Python `re.match` pattern, else the exact name.
    CompressedTensors,
    /// Shell-style `*` / `?` patterns or exact names (ModelOpt `exclude_modules`, `fnmatch`).
    Glob,
}

/// One entry of a module list.
struct Pattern {
    text: String,
    re: Option<Regex>,
    used: bool,
}

fn patterns(v: Option<&Value>, how: Match, key: &str) -> Result<Vec<Pattern>, ImportError> {
    let list = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(other) => {
            return Err(format!(
                "quantization_config.{key} must be a list of module names, not {}",
                super::reader::shown(&other.to_string())
            )
            .into());
        }
    };
    if list.len() > MAX_PATTERNS {
        return Err(format!(
            "quantization_config.{key} lists {} modules (at most {MAX_PATTERNS} are read)",
            list.len()
        )
        .into());
    }
    list.iter()
        .map(|p| {
            let text = p.as_str().ok_or_else(|| {
                format!(
                    "quantization_config.{key} holds {}, not a module name",
                    super::reader::shown(&p.to_string())
                )
            })?;
            let re = match how {
                Match::Substring => None,
                Match::CompressedTensors => match text.strip_prefix("re:") {
                    Some(r) => Some(anchored(r, key)?),
                    None => None,
                },
                Match::Glob if text.contains(['*', '?']) => {
                    let r: String = text
                        .chars()
                        .map(|c| match c {
                            '*' => ".*".to_string(),
                            '?' => ".".to_string(),
                            c => regex::escape(&c.to_string()),
                        })
                        .collect();
                    Some(anchored(&format!("{r}$"), key)?)
                }
                Match::Glob => None,
            };
            Ok(Pattern {
                text: text.to_string(),
                re,
                used: false,
            })
        })
        .collect()
}

/// A pattern that must match from the start of the name, as Python's `re.match`.
fn anchored(r: &str, key: &str) -> Result<Regex, ImportError> {
    Regex::new(&format!("^(?:{r})")).map_err(|_| {
        format!(
            "quantization_config.{key}: the pattern {} is not a regular expression this program reads",
            super::reader::shown(r)
        )
        .into()
    })
}

/// Module lists longer than this are refused (a config is at most a few MiB; real ones list a
/// few hundred modules).
const MAX_PATTERNS: usize = 20_000;
/// Module-name comparisons an import may make (layers × linears × patterns).
const MAX_MATCHES: u128 = 200_000_000;

impl Pattern {
    fn hits(&self, name: &str, how: Match) -> bool {
        match (&self.re, how) {
            (Some(re), _) => re.is_match(name),
            (None, Match::Substring) => name.contains(self.text.as_str()),
            (None, _) => name == self.text,
        }
    }
}

/// Does any pattern of `list` name this module (under any of its names)? Marks the ones that do.
fn listed(list: &mut [Pattern], names: &[String], how: Match) -> bool {
    let mut hit = false;
    for p in list.iter_mut() {
        if names.iter().any(|n| p.hits(n, how)) {
            p.used = true;
            hit = true;
        }
    }
    hit
}

/// Where a block's modules sit in the model's module tree: a decoder's `model.layers.N`, a
/// vision-language wrapper's language model (transformers ≥ 4.52 `model.language_model.layers.N`,
/// earlier `language_model.model.layers.N`).
const BLOCK_PREFIXES: [&str; 3] = [
    "model.layers.",
    "model.language_model.layers.",
    "language_model.model.layers.",
];
const HEAD_NAMES: [&str; 3] = ["lm_head", "language_model.lm_head", "model.lm_head"];
/// Names of vision towers and projectors in the wrappers transformers ships (Qwen2-VL `visual`,
/// LLaVA / Mistral 3 / Gemma 3 `vision_tower` + `multi_modal_projector`, Llama 4 `vision_model`,
/// InternVL `mlp1`), with and without the `model.` prefix: a list naming any of them keeps the
/// tower in 16-bit.
const VISION_NAMES: [&str; 12] = [
    "visual.blocks.0.attn.qkv",
    "model.visual.blocks.0.attn.qkv",
    "visual.merger.mlp.0",
    "model.visual.merger.mlp.0",
    "vision_tower.vision_model.encoder.layers.0.self_attn.q_proj",
    "model.vision_tower.vision_model.encoder.layers.0.self_attn.q_proj",
    "multi_modal_projector.linear_1",
    "model.multi_modal_projector.linear_1",
    "vision_model.model.layers.0.self_attn.q_proj",
    "model.vision_model.model.layers.0.self_attn.q_proj",
    "vision_model.encoder.layers.0.attn.qkv",
    "mlp1.1",
];

/// The module prefixes of those towers and projectors.
const VISION_PREFIXES: [&str; 9] = [
    "visual.",
    "model.visual.",
    "vision_tower.",
    "model.vision_tower.",
    "multi_modal_projector.",
    "model.multi_modal_projector.",
    "vision_model.",
    "model.vision_model.",
    "mlp1.",
];

/// Other spellings of a block's module names (Mixtral `block_sparse_moe` with `w1`/`w3`/`w2`,
/// Llama 4 `feed_forward`).
fn aliases(name: &str) -> Vec<String> {
    let mut v = vec![name.to_string()];
    if let Some(rest) = name.strip_prefix("mlp.") {
        v.push(format!("feed_forward.{rest}"));
        let mixtral = rest
            .replace("gate_proj", "w1")
            .replace("up_proj", "w3")
            .replace("down_proj", "w2");
        v.push(format!("block_sparse_moe.{mixtral}"));
    }
    v
}

/// The full names of a block's module, for expert `e` where the name has one.
fn full_names(layer: usize, lin: &Lin, e: u32) -> Vec<String> {
    let local = lin.name.replace("{e}", &e.to_string());
    aliases(&local)
        .iter()
        .flat_map(|a| {
            BLOCK_PREFIXES
                .iter()
                .map(move |p| format!("{p}{layer}.{a}"))
        })
        .collect()
}

/// Which modules a method quantizes before its skip list.
#[derive(Debug, Clone, PartialEq)]
enum Targets {
    /// Every `nn.Linear` (transformers' layer-replacing quantizers, compressed-tensors `Linear`).
    AllLinear,
    /// The decoder blocks' projections, not routers (GPTQ, AWQ), the head when `head`.
    BlockProjections { head: bool },
    /// Only the modules its `named` patterns match (compressed-tensors targets by name).
    Named,
}

/// One quantization scheme over the modules its targets select.
struct Scheme {
    packing: Packing,
    format: WeightFormat,
    targets: Targets,
    /// compressed-tensors `targets`: names and patterns, besides the `Linear` class.
    named: Vec<Pattern>,
}

/// Reads `quantization_config` for a model of this `layout` with `total` parameters (`vision`
/// of them in a vision tower and projector), whose 16-bit parts are in `dtype_bytes` per
/// weight.
pub(super) fn read(
    q: &Value,
    layout: &Layout,
    total: u64,
    vision: u64,
    dtype_bytes: f64,
) -> Result<Stored, ImportError> {
    let method = q
        .get("quant_method")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    let unknown = |what: String| {
        Err(ImportError::Malformed(format!(
            "quantization_config {what} is not a weight format this program models (the methods it does: gptq, awq, bitsandbytes, fp8, fbgemm_fp8, compressed-tensors, modelopt, mxfp4), so the weights' size cannot be planned"
        )))
    };
    let int = |k: &str| q.get(k).and_then(Value::as_i64);
    let mut notes = Vec::new();
    let (schemes, mut skip, how) = match method.as_str() {
        // gpt-oss keeps its own formula (memory::weights: the routed experts in MXFP4).
        "mxfp4" => {
            return Ok(Stored {
                format: WeightFormat::Mxfp4,
                bytes: None,
                notes,
            });
        }
        "gptq" => {
            let bits = int("bits").unwrap_or(4);
            let format = match bits {
                4 => WeightFormat::Gptq4,
                8 => WeightFormat::Gptq8,
                b => return unknown(format!("gptq with bits = {b}")),
            };
            match q.get("checkpoint_format").and_then(Value::as_str) {
                None | Some("gptq" | "gptq_v2") => {}
                Some(f) => return unknown(format!("gptq checkpoint_format {f:?}")),
            }
            if q.get("dynamic")
                .is_some_and(|d| d.as_object().is_some_and(|o| !o.is_empty()))
            {
                return unknown("gptq with per-module overrides (dynamic)".into());
            }
            if q.get("modules_in_block_to_quantize")
                .is_some_and(|m| !m.is_null())
            {
                return unknown("gptq modules_in_block_to_quantize".into());
            }
            let packing = Packing {
                int32: true,
                zero_bytes: bits as f64 / 8.0,
                per_input: 4.0,
                ..Packing::new(bits as u32, group(int("group_size"), 128)?, 2.0)
            };
            let head = q.get("lm_head").and_then(Value::as_bool).unwrap_or(false);
            (
                vec![Scheme {
                    packing,
                    format,
                    targets: Targets::BlockProjections { head },
                    named: Vec::new(),
                }],
                Vec::new(),
                Match::Substring,
            )
        }
        "awq" => {
            let bits = int("bits").or_else(|| int("w_bit")).unwrap_or(4);
            if bits != 4 {
                return unknown(format!("awq with bits = {bits}"));
            }
            let version = q
                .get("version")
                .and_then(Value::as_str)
                .unwrap_or("gemm")
                .to_ascii_lowercase();
            if !matches!(version.as_str(), "gemm" | "gemv" | "exllama") {
                return unknown(format!("awq version {version:?}"));
            }
            let g = int("group_size").or_else(|| int("q_group_size"));
            let packing = Packing {
                int32: true,
                zero_bytes: 0.5,
                ..Packing::new(4, group(g, 128)?, 2.0)
            };
            (
                vec![Scheme {
                    packing,
                    format: WeightFormat::Awq4,
                    targets: Targets::BlockProjections { head: false },
                    named: Vec::new(),
                }],
                patterns(
                    q.get("modules_to_not_convert"),
                    Match::Substring,
                    "modules_to_not_convert",
                )?,
                Match::Substring,
            )
        }
        "bitsandbytes" => {
            let flag = |k: &str| q.get(k).and_then(Value::as_bool).unwrap_or(false);
            let (packing, format) = if flag("load_in_4bit") {
                let double = flag("bnb_4bit_use_double_quant");
                let packing = if double {
                    Packing {
                        nested: Some((256, 4.0)),
                        ..Packing::new(4, Scales::Flat(64), 1.0)
                    }
                } else {
                    Packing::new(4, Scales::Flat(64), 4.0)
                };
                let format = match q.get("bnb_4bit_quant_type").and_then(Value::as_str) {
                    Some("fp4") => WeightFormat::Fp4,
                    None | Some("nf4") => WeightFormat::Nf4,
                    Some(t) => return unknown(format!("bitsandbytes bnb_4bit_quant_type {t:?}")),
                };
                (packing, format)
            } else if flag("load_in_8bit") {
                (Packing::new(8, Scales::Channel, 4.0), WeightFormat::Int8)
            } else {
                return unknown("bitsandbytes with neither load_in_4bit nor load_in_8bit".into());
            };
            let skip = default_head(
                patterns(
                    q.get("llm_int8_skip_modules"),
                    Match::Substring,
                    "llm_int8_skip_modules",
                )?,
                q.get("llm_int8_skip_modules"),
            );
            (vec![all_linear(packing, format)], skip, Match::Substring)
        }
        "fp8" | "fbgemm_fp8" => {
            let mut packing = if method == "fbgemm_fp8" {
                Packing::new(8, Scales::Channel, 4.0)
            } else {
                match q.get("weight_block_size") {
                    None => Packing::new(8, Scales::Block(128, 128), 4.0),
                    Some(Value::Null) => Packing::new(8, Scales::Tensor, 4.0),
                    Some(v) => match v
                        .as_array()
                        .map(|a| a.iter().map(Value::as_u64).collect::<Vec<_>>())
                    {
                        Some(b)
                            if b.len() == 2
                                && b.iter()
                                    .all(|x| x.is_some_and(|x| (1..=1 << 20).contains(&x))) =>
                        {
                            let (r, c) = (b[0].unwrap_or(1) as u32, b[1].unwrap_or(1) as u32);
                            Packing::new(8, Scales::Block(r, c), 4.0)
                        }
                        _ => {
                            return unknown(format!(
                                "fp8 weight_block_size {}",
                                super::reader::shown(&v.to_string())
                            ));
                        }
                    },
                }
            };
            if q.get("activation_scheme").and_then(Value::as_str) == Some("static") {
                packing.per_tensor = 4.0;
            }
            let skip = default_head(
                patterns(
                    q.get("modules_to_not_convert"),
                    Match::Substring,
                    "modules_to_not_convert",
                )?,
                q.get("modules_to_not_convert"),
            );
            (
                vec![all_linear(packing, WeightFormat::Fp8)],
                skip,
                Match::Substring,
            )
        }
        "compressed-tensors" => {
            let schemes = compressed_tensors(q, dtype_bytes, &mut notes)?;
            (
                schemes,
                patterns(q.get("ignore"), Match::CompressedTensors, "ignore")?,
                Match::CompressedTensors,
            )
        }
        "modelopt" => {
            let algo = q
                .get("quant_algo")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_ascii_uppercase();
            let (packing, format) = match algo.as_str() {
                "FP8" => (
                    Packing {
                        per_tensor: 8.0,
                        ..Packing::new(8, Scales::Tensor, 4.0)
                    },
                    WeightFormat::Fp8,
                ),
                "NVFP4" => (
                    Packing {
                        per_tensor: 8.0,
                        ..Packing::new(4, Scales::Group(positive(int("group_size"), 16)?), 1.0)
                    },
                    WeightFormat::Nvfp4,
                ),
                a => return unknown(format!("modelopt quant_algo {a:?}")),
            };
            let key = if q.get("exclude_modules").is_some() {
                "exclude_modules"
            } else {
                "ignore"
            };
            (
                vec![all_linear(packing, format)],
                patterns(q.get(key), Match::Glob, key)?,
                Match::Glob,
            )
        }
        "" => return unknown("without a quant_method".into()),
        m => return unknown(format!("quant_method {}", super::reader::shown(m))),
    };
    let mut schemes = schemes;
    let (bytes, format) = stored_bytes(
        &Model {
            layout,
            total,
            vision,
            dtype_bytes,
        },
        &mut schemes,
        &mut skip,
        how,
        &mut notes,
    )?;
    let unmatched: Vec<String> = skip
        .iter()
        .filter(|p| !p.used)
        .map(|p| super::reader::shown(&p.text))
        .collect();
    if !unmatched.is_empty() {
        let shown: Vec<&str> = unmatched.iter().take(5).map(String::as_str).collect();
        let note = match unmatched.len() - shown.len() {
            0 => Message::new("import.quant.unmatched_skip"),
            more => Message::new("import.quant.unmatched_skip.more").int("more", more as u64),
        };
        notes.push(note.text("modules", shown.join(", ")));
    }
    Ok(Stored {
        format,
        bytes: Some(bytes),
        notes,
    })
}

/// A group size: absent = `default`, -1 = one group per row (per channel).
fn group(g: Option<i64>, default: u32) -> Result<Scales, ImportError> {
    match g {
        Some(-1) => Ok(Scales::Channel),
        None => Ok(Scales::Group(default)),
        Some(g) if (1..=1 << 24).contains(&g) => Ok(Scales::Group(g as u32)),
        Some(g) => Err(format!("quantization_config group_size {g} is out of range").into()),
    }
}

fn positive(g: Option<i64>, default: u32) -> Result<u32, ImportError> {
    match group(g, default)? {
        Scales::Group(g) => Ok(g),
        _ => Err("quantization_config group_size must be positive".into()),
    }
}

fn all_linear(packing: Packing, format: WeightFormat) -> Scheme {
    Scheme {
        packing,
        format,
        targets: Targets::AllLinear,
        named: Vec::new(),
    }
}

/// transformers adds the output head to a skip list the config leaves out
/// (`HfQuantizer.get_modules_to_not_convert` with `get_keys_to_not_convert`).
fn default_head(mut list: Vec<Pattern>, given: Option<&Value>) -> Vec<Pattern> {
    if given.is_none_or(Value::is_null) {
        list.push(Pattern {
            text: "lm_head".into(),
            re: None,
            used: true,
        });
    }
    list
}

/// compressed-tensors `config_groups`: one scheme per group.
fn compressed_tensors(
    q: &Value,
    dtype_bytes: f64,
    notes: &mut Vec<Message>,
) -> Result<Vec<Scheme>, ImportError> {
    let unsupported = |what: String| {
        Err(ImportError::Malformed(format!(
            "quantization_config compressed-tensors {what} is not a storage this program models, so the weights' size cannot be planned"
        )))
    };
    for key in ["sparsity_config", "transform_config"] {
        if q.get(key)
            .is_some_and(|v| !v.is_null() && v.as_object().is_none_or(|o| !o.is_empty()))
        {
            return unsupported(format!("with {key}"));
        }
    }
    if q.get("kv_cache_scheme").is_some_and(|v| !v.is_null()) {
        notes.push(Message::new("import.quant.kv_cache_scheme"));
    }
    let global_format = q.get("format").and_then(Value::as_str);
    let Some(groups) = q.get("config_groups").and_then(Value::as_object) else {
        return unsupported("without config_groups".into());
    };
    if groups.is_empty() {
        return unsupported("with no config_groups".into());
    }
    let mut schemes = Vec::new();
    for (name, g) in groups {
        let w = match g.get("weights") {
            Some(w) if w.is_object() => w,
            _ => return unsupported(format!("group {name:?} without weight quantization")),
        };
        let bits = w.get("num_bits").and_then(Value::as_u64).unwrap_or(0) as u32;
        let kind = w.get("type").and_then(Value::as_str).unwrap_or("int");
        let strategy = w
            .get("strategy")
            .and_then(Value::as_str)
            .unwrap_or("tensor");
        let gsize = w.get("group_size").and_then(Value::as_i64);
        let symmetric = w.get("symmetric").and_then(Value::as_bool).unwrap_or(true);
        let format = g
            .get("format")
            .and_then(Value::as_str)
            .or(global_format)
            .unwrap_or_default();
        let scales = match strategy {
            "tensor" => Scales::Tensor,
            "channel" => Scales::Channel,
            "group" | "tensor_group" => Scales::Group(positive(gsize, 0).and_then(|g| {
                if g == 0 {
                    Err(format!("quantization_config group {name:?} has no group_size").into())
                } else {
                    Ok(g)
                }
            })?),
            "block" => match w.get("block_structure").and_then(Value::as_array) {
                Some(b) if b.len() == 2 => {
                    let d = |i: usize| b[i].as_u64().filter(|x| (1..=1 << 20).contains(x));
                    match (d(0), d(1)) {
                        (Some(r), Some(c)) => Scales::Block(r as u32, c as u32),
                        _ => return unsupported(format!("block_structure of group {name:?}")),
                    }
                }
                _ => {
                    return unsupported(format!(
                        "block strategy without block_structure in group {name:?}"
                    ));
                }
            },
            s => return unsupported(format!("weight strategy {s:?}")),
        };
        let zero = |b: f64| if symmetric { 0.0 } else { b };
        let (mut packing, wf) = match (format, kind, bits) {
            ("pack-quantized", "int", 4 | 8) => (
                Packing {
                    int32: true,
                    zero_bytes: zero(f64::from(bits) / 8.0),
                    // weight_shape: an int64 pair per module.
                    per_tensor: 16.0,
                    ..Packing::new(bits, scales, dtype_bytes)
                },
                if bits == 4 {
                    WeightFormat::W4a16
                } else {
                    WeightFormat::W8a8
                },
            ),
            ("int-quantized" | "naive-quantized", "int", 1..=8) => (
                Packing {
                    zero_bytes: zero(1.0),
                    ..Packing::new(8, scales, dtype_bytes)
                },
                if bits == 8 {
                    WeightFormat::W8a8
                } else {
                    return unsupported(format!("{format} with {bits}-bit integers"));
                },
            ),
            ("float-quantized" | "naive-quantized", "float", 8) => {
                (Packing::new(8, scales, dtype_bytes), WeightFormat::Fp8)
            }
            // NVFP4: E4M3 group scales and one fp32 global scale per tensor.
            ("nvfp4-pack-quantized", "float", 4) => (
                Packing {
                    per_tensor: 4.0,
                    ..Packing::new(4, scales, 1.0)
                },
                WeightFormat::Nvfp4,
            ),
            // MXFP4: E8M0 (one byte) group scales.
            ("mxfp4-pack-quantized", "float", 4) => {
                (Packing::new(4, scales, 1.0), WeightFormat::Mxfp4)
            }
            (f, k, b) => {
                return unsupported(format!("format {f:?} with {b}-bit {k} weights"));
            }
        };
        // act-order "group" stores a g_idx (int32 per input column).
        if w.get("actorder").and_then(Value::as_str) == Some("group") {
            packing.per_input = 4.0;
        }
        // Activation quantization stores an fp32 input global scale for FP4 groups (also when
        // locally dynamic), and an input scale in the model's dtype when static
        // (`initialize_qparams`); fully dynamic activations store nothing.
        if let Some(a) = g.get("input_activations").filter(|a| a.is_object())
            && a.get("dynamic").and_then(Value::as_bool) != Some(true)
        {
            packing.per_tensor +=
                if a.get("strategy").and_then(Value::as_str) == Some("tensor_group") {
                    4.0
                } else {
                    dtype_bytes
                };
        }
        let targets = g
            .get("targets")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut all = false;
        let mut named = Vec::new();
        for t in &targets {
            match t.as_str() {
                Some("Linear") => all = true,
                Some(s) if s.starts_with("re:") || s.contains('.') || s == "lm_head" => {
                    named.push(Value::String(s.to_string()));
                }
                Some(s) => return unsupported(format!("target {}", super::reader::shown(s))),
                None => return unsupported("a target that is not a name".into()),
            }
        }
        if !all && named.is_empty() {
            return unsupported(format!("group {name:?} without targets"));
        }
        let named = patterns(
            Some(&Value::Array(named)),
            Match::CompressedTensors,
            "targets",
        )?;
        schemes.push(Scheme {
            packing,
            format: wf,
            targets: if all {
                Targets::AllLinear
            } else {
                Targets::Named
            },
            named: if all { Vec::new() } else { named },
        });
    }
    Ok(schemes)
}

/// The model the bytes are counted for.
struct Model<'a> {
    layout: &'a Layout,
    total: u64,
    vision: u64,
    dtype_bytes: f64,
}

/// The scheme that quantizes a module with these names, if any: one that names it (a
/// compressed-tensors name or `re:` target, which wins over the `Linear` class, as
/// `compressed_tensors.utils.match` orders them), else the first whose targets select it.
fn scheme_for(schemes: &mut [Scheme], names: &[String], router: bool, head: bool) -> Option<usize> {
    let mut by_name = None;
    for (i, s) in schemes.iter_mut().enumerate() {
        if s.targets == Targets::Named
            && listed(&mut s.named, names, Match::CompressedTensors)
            && by_name.is_none()
        {
            by_name = Some(i);
        }
    }
    by_name.or_else(|| {
        schemes.iter().position(|s| match s.targets {
            Targets::AllLinear => true,
            Targets::BlockProjections { head: h } => {
                if head {
                    h
                } else {
                    !router
                }
            }
            Targets::Named => false,
        })
    })
}

/// Bytes of all weights, and the format that holds most of the quantized weights.
fn stored_bytes(
    m: &Model,
    schemes: &mut [Scheme],
    skip: &mut [Pattern],
    how: Match,
    notes: &mut Vec<Message>,
) -> Result<(u64, WeightFormat), ImportError> {
    let l = m.layout;
    let patterns = skip.len() + schemes.iter().map(|s| s.named.len()).sum::<usize>();
    if u128::from(l.layers) * 64 * patterns as u128 > MAX_MATCHES {
        return Err(format!(
            "quantization_config lists {patterns} module patterns for {} layers: too many to match",
            l.layers
        )
        .into());
    }
    // Quantized bytes and weight elements per scheme.
    let mut tally = vec![(0.0f64, 0.0f64); schemes.len()];
    let mut count = |schemes: &mut [Scheme],
                     skip: &mut [Pattern],
                     names: &[String],
                     lin: &Lin,
                     head: bool|
     -> bool {
        let skipped = listed(skip, names, how);
        let Some(i) = scheme_for(schemes, names, lin.router, head) else {
            return skipped;
        };
        if !skipped {
            let p = schemes[i].packing;
            let (inp, out) = (lin.inp as f64, lin.out as f64);
            tally[i].0 += p.bytes(inp, out) * lin.copies as f64;
            tally[i].1 += inp * out * lin.copies as f64;
        }
        skipped
    };
    for layer in 0..l.layers as usize {
        for lin in hf_count::block(l, layer).linears {
            let skipped = count(schemes, skip, &full_names(layer, &lin, 0), &lin, false);
            // One expert named apart from the others is not modelled.
            if lin.name.contains("{e}") && listed(skip, &full_names(layer, &lin, 1), how) != skipped
            {
                return Err(format!(
                    "quantization_config keeps single experts of layer {layer} unquantized, which this program does not model"
                ).into());
            }
        }
    }
    if let Some(head) = hf_count::head(l) {
        let names: Vec<String> = HEAD_NAMES.iter().map(|s| s.to_string()).collect();
        count(schemes, skip, &names, &head, true);
    }
    if m.vision > 0 {
        let names: Vec<String> = VISION_NAMES.iter().map(|s| s.to_string()).collect();
        let skipped = listed(skip, &names, how);
        // Lists name the tower's modules one by one (`model.visual.blocks.7.attn.qkv` …); the
        // tower is counted as a whole, so every entry under its prefix belongs to it.
        for p in skip.iter_mut() {
            let t = p.text.strip_prefix("re:").unwrap_or(&p.text);
            if VISION_PREFIXES.iter().any(|v| t.starts_with(v)) {
                p.used = true;
            }
        }
        if let (Some(i), false) = (scheme_for(schemes, &names, false, false), skipped) {
            // The tower's modules are not enumerated: its parameters at the scheme's bytes
            // per weight of a square matrix of the text model's width.
            let h = f64::from(l.hidden.max(1));
            let v = m.vision as f64;
            tally[i].0 += v * schemes[i].packing.bytes(h, h) / (h * h);
            tally[i].1 += v;
            notes.push(Message::new("import.quant.vision_tower"));
        }
    }
    let quantized: f64 = tally.iter().map(|t| t.1).sum();
    let bytes: f64 = tally.iter().map(|t| t.0).sum::<f64>()
        + (m.total as f64 - quantized).max(0.0) * m.dtype_bytes;
    let main = tally
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.1.total_cmp(&b.1.1))
        .map_or(0, |(i, _)| i);
    Ok((bytes as u64, schemes[main].format))
}
