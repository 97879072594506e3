//! Number formats for weights and the KV cache, with their exact storage cost.
//!
//! GGML block sizes are from `ggml/src/ggml-common.h` (mirrored in gguf-py
//! `GGML_QUANT_SIZES`): a block of 32 or 256 weights stored in a fixed number of bytes.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A GGML tensor type: `bytes` per block of `block` weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum GgmlType {
    F32,
    F16,
    BF16,
    Q8_0,
    Q6K,
    Q5K,
    Q5_1,
    Q5_0,
    Q4K,
    Q4_1,
    Q4_0,
    Iq4Xs,
    Iq4Nl,
    Q3K,
    Iq3S,
    Iq3Xxs,
    Q2K,
    Iq2Xxs,
}

impl GgmlType {
    /// (weights per block, bytes per block), from ggml-common.h.
    pub const fn block(self) -> (u32, u32) {
        match self {
            GgmlType::F32 => (1, 4),
            GgmlType::F16 | GgmlType::BF16 => (1, 2),
            GgmlType::Q8_0 => (32, 34),
            GgmlType::Q6K => (256, 210),
            GgmlType::Q5K => (256, 176),
            GgmlType::Q5_1 => (32, 24),
            GgmlType::Q5_0 => (32, 22),
            GgmlType::Q4K => (256, 144),
            GgmlType::Q4_1 => (32, 20),
            GgmlType::Q4_0 | GgmlType::Iq4Nl => (32, 18),
            GgmlType::Iq4Xs => (256, 136),
            GgmlType::Q3K => (256, 110),
            GgmlType::Iq3S => (256, 110),
            GgmlType::Iq3Xxs => (256, 98),
            GgmlType::Q2K => (256, 84),
            GgmlType::Iq2Xxs => (256, 66),
        }
    }

    pub fn bits_per_weight(self) -> f64 {
        let (n, b) = self.block();
        f64::from(b) * 8.0 / f64::from(n)
    }

    pub fn bytes_per_weight(self) -> f64 {
        let (n, b) = self.block();
        f64::from(b) / f64::from(n)
    }

    /// GGML's numeric type id as stored in GGUF tensor infos (`enum ggml_type`).
    pub fn from_id(id: u32) -> Option<Self> {
        Some(match id {
            0 => GgmlType::F32,
            1 => GgmlType::F16,
            2 => GgmlType::Q4_0,
            3 => GgmlType::Q4_1,
            6 => GgmlType::Q5_0,
            7 => GgmlType::Q5_1,
            8 => GgmlType::Q8_0,
            10 => GgmlType::Q2K,
            11 => GgmlType::Q3K,
            12 => GgmlType::Q4K,
            13 => GgmlType::Q5K,
            14 => GgmlType::Q6K,
            16 => GgmlType::Iq2Xxs,
            18 => GgmlType::Iq3Xxs,
            20 => GgmlType::Iq4Nl,
            21 => GgmlType::Iq3S,
            23 => GgmlType::Iq4Xs,
            30 => GgmlType::BF16,
            _ => return None,
        })
    }
}

/// How llama.cpp's `llama_model_quantize` assigns types in a "mix" (Q4_K_M …): a base type, with
/// `attn_v`/`ffn_down` of some layers and the output head bumped to more bits.
/// Rules from `src/llama-quant.cpp` (`llama_tensor_get_type`), simplified to per-tensor-kind types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GgufMix {
    pub base: GgmlType,
    pub output: GgmlType,
    /// Type of `attn_v` in the layers `use_more_bits` picks, and in the others.
    pub attn_v: (GgmlType, GgmlType),
    /// Type of `ffn_down` in the layers `use_more_bits` picks, and in the others.
    pub ffn_down: (GgmlType, GgmlType),
}

/// Weight storage formats of the workload contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WeightFormat {
    Fp32,
    Fp16,
    Bf16,
    /// fp8 e4m3 linear layers with per-tensor scales; embeddings and head stay 16-bit (vLLM/TE).
    Fp8,
    /// bitsandbytes LLM.int8().
    Int8,
    /// bitsandbytes 4-bit NormalFloat (QLoRA) with double quantization.
    Nf4,
    /// bitsandbytes 4-bit float.
    Fp4,
    /// GPTQ with group size 128.
    Gptq4,
    Gptq8,
    /// AWQ with group size 128.
    Awq4,
    /// OCP MXFP4 experts (gpt-oss): the routed experts' weights in 4-bit E2M1 with one E8M0
    /// scale per 32, everything else 16-bit.
    Mxfp4,
    /// 4-bit integer weights with 16-bit group scales, 16-bit activations (compressed-tensors
    /// `pack-quantized`, llm-compressor's W4A16; group size 128 unless the config says).
    W4a16,
    /// 8-bit integer weights with a 16-bit scale per output row (compressed-tensors
    /// `int-quantized` W8A8, or 8-bit `pack-quantized`).
    W8a8,
    /// NVIDIA NVFP4: E2M1 weights with one E4M3 scale per 16 and an fp32 scale per tensor
    /// (ModelOpt, compressed-tensors `nvfp4-pack-quantized`).
    Nvfp4,
    /// A GGUF file type (Q4_K_M, Q8_0 …).
    Gguf(GgufFileType),
}

/// GGUF "file types" users pick (the names `llama-quantize` prints).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgufFileType {
    F16,
    Q8_0,
    Q6K,
    Q5KM,
    Q5KS,
    Q5_0,
    Q5_1,
    Q4KM,
    Q4KS,
    Q4_0,
    Q4_1,
    Iq4Xs,
    Q3KL,
    Q3KM,
    Q3KS,
    Q2K,
}

const GGUF_NAMES: [(&str, GgufFileType); 16] = [
    ("f16", GgufFileType::F16),
    ("q8_0", GgufFileType::Q8_0),
    ("q6_k", GgufFileType::Q6K),
    ("q5_k_m", GgufFileType::Q5KM),
    ("q5_k_s", GgufFileType::Q5KS),
    ("q5_0", GgufFileType::Q5_0),
    ("q5_1", GgufFileType::Q5_1),
    ("q4_k_m", GgufFileType::Q4KM),
    ("q4_k_s", GgufFileType::Q4KS),
    ("q4_0", GgufFileType::Q4_0),
    ("q4_1", GgufFileType::Q4_1),
    ("iq4_xs", GgufFileType::Iq4Xs),
    ("q3_k_l", GgufFileType::Q3KL),
    ("q3_k_m", GgufFileType::Q3KM),
    ("q3_k_s", GgufFileType::Q3KS),
    ("q2_k", GgufFileType::Q2K),
];

impl GgufFileType {
    /// The per-tensor-kind types of this file type (llama-quant.cpp `llama_tensor_get_type`).
    pub fn mix(self) -> GgufMix {
        use GgmlType as T;
        let uniform = |t: T, out: T| GgufMix {
            base: t,
            output: out,
            attn_v: (t, t),
            ffn_down: (t, t),
        };
        match self {
            GgufFileType::F16 => uniform(T::F16, T::F16),
            GgufFileType::Q8_0 => uniform(T::Q8_0, T::Q8_0),
            GgufFileType::Q6K => uniform(T::Q6K, T::Q6K),
            GgufFileType::Q5_0 => uniform(T::Q5_0, T::Q6K),
            GgufFileType::Q5_1 => uniform(T::Q5_1, T::Q6K),
            GgufFileType::Q4_0 => uniform(T::Q4_0, T::Q6K),
            GgufFileType::Q4_1 => uniform(T::Q4_1, T::Q6K),
            GgufFileType::Iq4Xs => uniform(T::Iq4Xs, T::Q6K),
            GgufFileType::Q5KS => uniform(T::Q5K, T::Q6K),
            GgufFileType::Q5KM => GgufMix {
                base: T::Q5K,
                output: T::Q6K,
                attn_v: (T::Q6K, T::Q5K),
                ffn_down: (T::Q6K, T::Q5K),
            },
            GgufFileType::Q4KM => GgufMix {
                base: T::Q4K,
                output: T::Q6K,
                attn_v: (T::Q6K, T::Q4K),
                ffn_down: (T::Q6K, T::Q4K),
            },
            // Q4_K_S: attn_v of the first layers Q5_K, the rest Q4_K (simplified to Q5_K on
            // the use_more_bits layers).
            GgufFileType::Q4KS => GgufMix {
                base: T::Q4K,
                output: T::Q6K,
                attn_v: (T::Q5K, T::Q4K),
                ffn_down: (T::Q5K, T::Q4K),
            },
            GgufFileType::Q3KL => GgufMix {
                base: T::Q3K,
                output: T::Q6K,
                attn_v: (T::Q5K, T::Q5K),
                ffn_down: (T::Q5K, T::Q5K),
            },
            GgufFileType::Q3KM => GgufMix {
                base: T::Q3K,
                output: T::Q6K,
                attn_v: (T::Q4K, T::Q4K),
                ffn_down: (T::Q4K, T::Q3K),
            },
            GgufFileType::Q3KS => uniform(T::Q3K, T::Q6K),
            GgufFileType::Q2K => GgufMix {
                base: T::Q2K,
                output: T::Q6K,
                attn_v: (T::Q4K, T::Q4K),
                ffn_down: (T::Q3K, T::Q3K),
            },
        }
    }

    pub fn name(self) -> &'static str {
        GGUF_NAMES
            .iter()
            .find(|(_, t)| *t == self)
            .map_or("gguf", |(n, _)| n)
    }
}

/// llama.cpp's `use_more_bits(i_layer, n_layers)`: the first and last eighth of the layers and
/// every third one in between get the bigger type (src/llama-quant.cpp).
pub fn use_more_bits(i_layer: u32, n_layers: u32) -> bool {
    let eighth = n_layers / 8;
    // Past the first eighth, so `i_layer - eighth` cannot underflow.
    i_layer < eighth || i_layer >= 7 * n_layers / 8 || (i_layer - eighth) % 3 == 2
}

/// Fraction of layers that `use_more_bits` picks, counted without visiting each layer (every
/// estimate of a GGUF workload asks, and the planner estimates thousands): the first eighth,
/// the layers from `7n/8` on, and every third of the `7n/8 - n/8` between.
pub fn more_bits_fraction(n_layers: u32) -> f64 {
    if n_layers == 0 {
        return 0.0;
    }
    let (eighth, last) = (n_layers / 8, 7 * n_layers / 8);
    let n = eighth + (n_layers - last) + (last - eighth) / 3;
    f64::from(n) / f64::from(n_layers)
}

/// Names accepted for `run.weights`, in the order error messages list them.
pub const WEIGHT_NAMES: &[&str] = &[
    "fp32",
    "fp16",
    "bf16",
    "fp8",
    "int8",
    "nf4",
    "fp4",
    "int4",
    "gptq-4bit",
    "gptq-8bit",
    "awq-4bit",
    "mxfp4",
    "w4a16",
    "w8a8",
    "nvfp4",
    "f16",
    "q8_0",
    "q6_k",
    "q5_k_m",
    "q5_k_s",
    "q5_0",
    "q5_1",
    "q4_k_m",
    "q4_k_s",
    "q4_0",
    "q4_1",
    "iq4_xs",
    "q3_k_l",
    "q3_k_m",
    "q3_k_s",
    "q2_k",
];

impl FromStr for WeightFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let l = s.trim().to_ascii_lowercase();
        Ok(match l.as_str() {
            "fp32" | "float32" => WeightFormat::Fp32,
            "fp16" | "float16" => WeightFormat::Fp16,
            "bf16" | "bfloat16" => WeightFormat::Bf16,
            "fp8" | "fp8-e4m3" | "e4m3" => WeightFormat::Fp8,
            "int8" | "bnb-int8" | "llm.int8" => WeightFormat::Int8,
            "nf4" | "bnb-nf4" | "int4" | "bnb-4bit" => WeightFormat::Nf4,
            "fp4" | "bnb-fp4" => WeightFormat::Fp4,
            "gptq-4bit" | "gptq" | "gptq-int4" => WeightFormat::Gptq4,
            "gptq-8bit" | "gptq-int8" => WeightFormat::Gptq8,
            "awq-4bit" | "awq" => WeightFormat::Awq4,
            "mxfp4" => WeightFormat::Mxfp4,
            "w4a16" | "w4a16-int4" => WeightFormat::W4a16,
            "w8a8" | "w8a8-int8" => WeightFormat::W8a8,
            "nvfp4" => WeightFormat::Nvfp4,
            // The GGUF formats as pickers label them ("GGUF Q4_0", `WeightFormat::label`).
            other => match GGUF_NAMES
                .iter()
                .find(|(n, _)| *n == other.strip_prefix("gguf ").unwrap_or(other))
            {
                Some((_, t)) => WeightFormat::Gguf(*t),
                None => return Err(format!("unknown weight format '{s}'")),
            },
        })
    }
}

impl fmt::Display for WeightFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            WeightFormat::Fp32 => "fp32",
            WeightFormat::Fp16 => "fp16",
            WeightFormat::Bf16 => "bf16",
            WeightFormat::Fp8 => "fp8",
            WeightFormat::Int8 => "int8",
            WeightFormat::Nf4 => "nf4",
            WeightFormat::Fp4 => "fp4",
            WeightFormat::Gptq4 => "gptq-4bit",
            WeightFormat::Gptq8 => "gptq-8bit",
            WeightFormat::Awq4 => "awq-4bit",
            WeightFormat::Mxfp4 => "mxfp4",
            WeightFormat::W4a16 => "w4a16",
            WeightFormat::W8a8 => "w8a8",
            WeightFormat::Nvfp4 => "nvfp4",
            WeightFormat::Gguf(t) => t.name(),
        };
        f.write_str(s)
    }
}

impl Serialize for WeightFormat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for WeightFormat {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl WeightFormat {
    /// The format as people know it: the GGUF file types by their container and upper-case
    /// type name, as llama.cpp's `llama-quantize --help` and ComfyUI-GGUF's file names spell them
    /// ("GGUF Q4_0"), the others by their spelling in workload files. It parses back.
    pub fn label(self) -> String {
        match self {
            WeightFormat::Gguf(t) => format!("GGUF {}", t.name().to_ascii_uppercase()),
            other => other.to_string(),
        }
    }

    pub fn is_gguf(self) -> bool {
        matches!(self, WeightFormat::Gguf(_))
    }

    /// Quantized formats whose base weights cannot be trained directly (adapters only).
    pub fn is_quantized(self) -> bool {
        !matches!(
            self,
            WeightFormat::Fp32 | WeightFormat::Fp16 | WeightFormat::Bf16
        )
    }

    /// A rough rank of how much quality the format gives up (0 = none), used to order plans.
    pub fn quality_loss(self) -> u32 {
        match self {
            WeightFormat::Fp32 | WeightFormat::Fp16 | WeightFormat::Bf16 => 0,
            WeightFormat::Fp8 | WeightFormat::Int8 | WeightFormat::Gptq8 | WeightFormat::W8a8 => 1,
            WeightFormat::Gguf(GgufFileType::F16) => 0,
            WeightFormat::Gguf(GgufFileType::Q8_0 | GgufFileType::Q6K) => 1,
            WeightFormat::Gguf(
                GgufFileType::Q5KM | GgufFileType::Q5KS | GgufFileType::Q5_0 | GgufFileType::Q5_1,
            ) => 2,
            WeightFormat::Nf4
            | WeightFormat::Fp4
            | WeightFormat::Gptq4
            | WeightFormat::Awq4
            | WeightFormat::Mxfp4
            | WeightFormat::W4a16
            | WeightFormat::Nvfp4 => 3,
            WeightFormat::Gguf(
                GgufFileType::Q4KM
                | GgufFileType::Q4KS
                | GgufFileType::Q4_0
                | GgufFileType::Q4_1
                | GgufFileType::Iq4Xs,
            ) => 3,
            WeightFormat::Gguf(GgufFileType::Q3KL | GgufFileType::Q3KM | GgufFileType::Q3KS) => 5,
            WeightFormat::Gguf(GgufFileType::Q2K) => 8,
        }
    }
}

/// KV cache element formats (`run.kv_cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum KvDtype {
    Fp32,
    #[default]
    Fp16,
    Bf16,
    Fp8,
    Q8_0,
    Q4_0,
}

impl KvDtype {
    /// Bytes per element: llama.cpp stores q8_0/q4_0 KV in 32-element blocks of 34/18 bytes.
    pub fn bytes(self) -> f64 {
        match self {
            KvDtype::Fp32 => 4.0,
            KvDtype::Fp16 | KvDtype::Bf16 => 2.0,
            KvDtype::Fp8 => 1.0,
            KvDtype::Q8_0 => GgmlType::Q8_0.bytes_per_weight(),
            KvDtype::Q4_0 => GgmlType::Q4_0.bytes_per_weight(),
        }
    }
}

pub const KV_NAMES: &[&str] = &["fp16", "bf16", "fp32", "fp8", "q8_0", "q4_0"];

/// The KV cache types an inference engine can be told to use, so that its export carries the
/// one the plan counted; `None` where the engine is not one we export a cache setting for.
/// - vLLM `--kv-cache-dtype`: `auto` (the model's dtype: fp16, bf16, fp32), `bfloat16`, `fp8`
///   (`vllm/config/cache.py`, `CacheDType`); no integer block types.
/// - llama.cpp `--cache-type-k/-v`: f32, f16, bf16, q8_0, q4_0 among others (`common/arg.cpp`,
///   `kv_cache_types`); no fp8.
/// - transformers and AutoAWQ: the model's dtype (our exports set no quantized cache).
pub fn kv_types_of(engine: super::options::Engine) -> Option<&'static [KvDtype]> {
    use super::options::Engine;
    use KvDtype::*;
    match engine {
        Engine::Vllm => Some(&[Fp16, Bf16, Fp32, Fp8]),
        Engine::LlamaCpp => Some(&[Fp16, Bf16, Fp32, Q8_0, Q4_0]),
        Engine::Transformers | Engine::AutoAwq => Some(&[Fp16, Bf16, Fp32]),
        Engine::ComfyUi | Engine::Diffusers => None,
    }
}

impl FromStr for KvDtype {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "fp16" | "f16" | "auto" => KvDtype::Fp16,
            "bf16" => KvDtype::Bf16,
            "fp32" | "f32" => KvDtype::Fp32,
            "fp8" | "fp8_e4m3" | "fp8_e5m2" => KvDtype::Fp8,
            "q8_0" => KvDtype::Q8_0,
            "q4_0" => KvDtype::Q4_0,
            _ => return Err(format!("unknown KV cache type '{s}'")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ggml_bits_per_weight_match_the_block_layouts() {
        assert_eq!(GgmlType::Q4_0.bits_per_weight(), 4.5);
        assert_eq!(GgmlType::Q8_0.bits_per_weight(), 8.5);
        assert_eq!(GgmlType::Q4K.bits_per_weight(), 4.5);
        assert_eq!(GgmlType::Q6K.bits_per_weight(), 6.5625);
        assert_eq!(GgmlType::Q2K.bits_per_weight(), 2.625);
        assert_eq!(GgmlType::Q3K.bits_per_weight(), 3.4375);
    }

    #[test]
    fn more_bits_fraction_counts_what_use_more_bits_picks() {
        for n in 1..=512 {
            let picked = (0..n).filter(|&i| use_more_bits(i, n)).count();
            assert_eq!(
                more_bits_fraction(n),
                picked as f64 / f64::from(n),
                "{n} layers"
            );
        }
        assert_eq!(more_bits_fraction(0), 0.0);
    }

    #[test]
    fn use_more_bits_picks_sixteen_of_32_layers() {
        // OpenLLaMA-7B Q4_K_M: 33 q6_K tensors = 16 attn_v + 16 ffn_down + output.
        let n = (0..32).filter(|&i| use_more_bits(i, 32)).count();
        assert_eq!(n, 16);
        assert_eq!(more_bits_fraction(32), 0.5);
    }

    #[test]
    fn every_listed_name_parses_and_round_trips() {
        for name in WEIGHT_NAMES {
            let f: WeightFormat = name.parse().unwrap();
            let back: WeightFormat = f.to_string().parse().unwrap();
            assert_eq!(f, back, "{name}");
            assert_eq!(f.label().parse::<WeightFormat>(), Ok(f), "{name}");
            assert_eq!(f.is_gguf(), f.label().starts_with("GGUF "), "{name}");
        }
        assert!("q9_k".parse::<WeightFormat>().is_err());
    }

    #[test]
    fn kv_block_types() {
        assert_eq!(KvDtype::Q8_0.bytes(), 34.0 / 32.0);
        assert_eq!(KvDtype::Q4_0.bytes(), 18.0 / 32.0);
        assert_eq!("q4_0".parse::<KvDtype>().unwrap(), KvDtype::Q4_0);
    }
}
