//! The architecture of a decoder-only transformer: the numbers every memory formula needs.
//!
//! Field names follow Hugging Face `config.json` meanings (`num_hidden_layers` → `layers`,
//! `num_key_value_heads` → `kv_heads`, …). The total parameter count is stored as published
//! (or counted from safetensors headers) rather than re-derived, because derived counts miss
//! biases, norms and odd shapes; the per-part counts below are used only to split that total.

use crate::types::message::Message;
use serde::{Deserialize, Serialize};

/// Mixture-of-experts layout (Mixtral, Qwen-MoE, DeepSeek-V2/V3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Moe {
    /// Routed experts per MoE layer (`num_local_experts` / `n_routed_experts`).
    pub experts: u32,
    /// Experts used per token (`num_experts_per_tok`).
    pub active: u32,
    /// Intermediate size of one routed expert (`moe_intermediate_size`; Mixtral: `intermediate_size`).
    pub expert_intermediate: u32,
    /// Always-on shared experts (DeepSeek, Qwen2-MoE), each of `expert_intermediate` width.
    #[serde(default)]
    pub shared_experts: u32,
    /// Leading layers that stay dense (`first_k_dense_replace`).
    #[serde(default)]
    pub dense_layers: u32,
    /// The experts' projections carry biases (gpt-oss), which idle experts leave unused too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expert_bias: bool,
}

/// Multi-head latent attention (DeepSeek-V2/V3): the KV cache holds one compressed latent of
/// `kv_lora_rank` plus the decoupled RoPE key of `qk_rope_head_dim` per token and layer
/// (DeepSeek-V2 paper, arXiv 2405.04434, §2.1.2, "(d_c + d_h^R)·l elements per token").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mla {
    pub kv_lora_rank: u32,
    pub qk_rope_head_dim: u32,
    pub qk_nope_head_dim: u32,
    pub v_head_dim: u32,
    #[serde(default)]
    pub q_lora_rank: Option<u32>,
}

/// What one block keeps between tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockCache {
    /// Keys and values of every token (full attention).
    Full,
    /// Keys and values of the last `sliding_window` tokens.
    Sliding,
    /// No per-token cache: a state-space or linear-attention block (its fixed state is in
    /// [`CacheLayout::state_elements`]) or an encoder block.
    None,
}

/// The blocks' caches where they differ in a way `sliding_window` and `global_every` cannot
/// say: an irregular `layer_types` list, hybrid attention/state-space stacks, encoders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheLayout {
    /// One entry per block.
    pub blocks: Vec<BlockCache>,
    /// Elements of fixed-size state per sequence, all blocks together: the convolution and
    /// SSM states of Mamba blocks, the recurrent state of linear-attention blocks
    /// (transformers `cache_utils.py` `LinearAttentionLayer`: `conv_states`, `recurrent_states`).
    #[serde(default)]
    pub state_elements: f64,
}

/// The MLP shape: gated (SwiGLU/GeGLU: gate, up, down = 3 matrices) or plain (up, down = 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mlp {
    #[default]
    Gated,
    Plain,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelArch {
    /// Total parameters, as published or counted from the weight files.
    pub params: f64,
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub intermediate: u32,
    pub vocab: u32,
    #[serde(default)]
    pub mlp: Mlp,
    /// Input embedding and output head share one matrix (`tie_word_embeddings`).
    #[serde(default)]
    pub tied_embeddings: bool,
    /// Longest context the model was trained for (`max_position_embeddings`).
    #[serde(default)]
    pub max_context: Option<u32>,
    /// Sliding-window attention span (`sliding_window`), if any layers use it.
    #[serde(default)]
    pub sliding_window: Option<u32>,
    /// With a sliding window: one layer in this many is global (Gemma 2: 2, Gemma 3: 6).
    /// `None` with a window means every layer is windowed (Mistral 7B v0.1).
    #[serde(default)]
    pub global_every: Option<u32>,
    #[serde(default)]
    pub moe: Option<Moe>,
    #[serde(default)]
    pub mla: Option<Mla>,
    /// K/V heads transformers caches where it differs from `kv_heads`: Falcon's
    /// `new_decoder_architecture` expands K and V to every query head before the cache update
    /// (modeling_falcon.py `FalconAttention.forward`: `num_kv_heads = self.num_heads if
    /// self.new_decoder_architecture`), while vLLM and llama.cpp keep the grouped heads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transformers_kv_heads: Option<u32>,
    /// Per-block caches, where the blocks are not all attention blocks of one regular pattern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheLayout>,
    /// The Hugging Face `model_type` (or GGUF `general.architecture`): which names its modules
    /// have, for `run.lora_targets` (presets/lora_modules.toml). `None`: described by hand, and
    /// read as a Llama-style model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_type: Option<String>,
}

impl ModelArch {
    /// Parameters of the token embedding (vocab × hidden).
    pub fn embedding_params(&self) -> f64 {
        f64::from(self.vocab) * f64::from(self.hidden)
    }

    /// Parameters of the output head; zero when tied to the embedding.
    pub fn lm_head_params(&self) -> f64 {
        if self.tied_embeddings {
            0.0
        } else {
            self.embedding_params()
        }
    }

    /// Elements of the model's largest parameter tensor: the embedding or head, a projection,
    /// or a MoE layer's fused expert tensor (transformers 5 `MixtralExperts`: one 3-D
    /// `gate_up_proj` of experts × 2·intermediate × hidden). What a per-parameter optimizer
    /// step holds at most at once.
    pub fn largest_param_elements(&self) -> f64 {
        let h = f64::from(self.hidden);
        let dense = f64::from(self.intermediate).max(self.q_dim()) * h;
        let experts = self.routed_expert_params_per_layer() * (self.mlp_matrices() - 1.0).max(1.0)
            / self.mlp_matrices().max(1.0);
        self.embedding_params().max(dense).max(experts)
    }

    /// Width of the attention output (heads × head_dim); differs from `hidden` for Gemma/Qwen3.
    pub fn q_dim(&self) -> f64 {
        f64::from(self.heads) * f64::from(self.head_dim)
    }

    /// Width of K (and V) per token and layer (kv_heads × head_dim): the GQA saving.
    pub fn kv_dim(&self) -> f64 {
        f64::from(self.kv_heads) * f64::from(self.head_dim)
    }

    /// Per-layer attention projection parameters (q, k, v, o), by shape.
    pub fn attn_params_per_layer(&self) -> f64 {
        let h = f64::from(self.hidden);
        match &self.mla {
            Some(m) => {
                // DeepSeek-V2 §2.1: q path (optionally low-rank), joint KV down-projection,
                // K/V up-projections from the latent, output projection.
                let qk_head = f64::from(m.qk_nope_head_dim + m.qk_rope_head_dim);
                let heads = f64::from(self.heads);
                let q = match m.q_lora_rank {
                    Some(r) => h * f64::from(r) + f64::from(r) * heads * qk_head,
                    None => h * heads * qk_head,
                };
                let kv_down = h * f64::from(m.kv_lora_rank + m.qk_rope_head_dim);
                let kv_up = f64::from(m.kv_lora_rank)
                    * heads
                    * f64::from(m.qk_nope_head_dim + m.v_head_dim);
                let o = heads * f64::from(m.v_head_dim) * h;
                q + kv_down + kv_up + o
            }
            None => h * (2.0 * self.q_dim() + 2.0 * self.kv_dim()),
        }
    }

    fn mlp_matrices(&self) -> f64 {
        match self.mlp {
            Mlp::Gated => 3.0,
            Mlp::Plain => 2.0,
        }
    }

    /// Per-layer MLP parameters of a dense layer.
    pub fn dense_mlp_params(&self) -> f64 {
        self.mlp_matrices() * f64::from(self.hidden) * f64::from(self.intermediate)
    }

    /// Parameters of the `ffn_down` matrices across all layers (llama.cpp's K-quant mixes give
    /// these more bits), by shape.
    pub fn ffn_down_params(&self) -> f64 {
        let h = f64::from(self.hidden);
        match &self.moe {
            Some(m) => {
                let moe_layers = f64::from(self.layers.saturating_sub(m.dense_layers));
                let dense_layers = f64::from(m.dense_layers.min(self.layers));
                let per_moe =
                    f64::from(m.experts + m.shared_experts) * f64::from(m.expert_intermediate) * h;
                moe_layers * per_moe + dense_layers * f64::from(self.intermediate) * h
            }
            None => f64::from(self.layers) * f64::from(self.intermediate) * h,
        }
    }

    /// Parameters of the `attn_v` matrices across all layers, by shape.
    pub fn attn_v_params(&self) -> f64 {
        match &self.mla {
            Some(_) => 0.0,
            None => f64::from(self.layers) * f64::from(self.hidden) * self.kv_dim(),
        }
    }

    /// Parameters that sit in the repeated blocks (everything but embedding and head).
    pub fn block_params(&self) -> f64 {
        (self.params - self.embedding_params() - self.lm_head_params()).max(0.0)
    }

    /// Parameters of the routed experts of one MoE layer (llama.cpp's `ffn_{gate,up,down}_exps`
    /// tensors); zero for a dense model. Shared experts are not counted: llama.cpp keeps them in
    /// `ffn_*_shexp`, which `--n-cpu-moe` leaves on the GPU.
    pub fn routed_expert_params_per_layer(&self) -> f64 {
        match &self.moe {
            Some(m) => {
                f64::from(m.experts)
                    * self.mlp_matrices()
                    * f64::from(self.hidden)
                    * f64::from(m.expert_intermediate)
            }
            None => 0.0,
        }
    }

    /// Parameters of all routed experts (`ffn_{gate,up,down}_exps` of every MoE layer), and of
    /// their down projections alone (`ffn_down_exps`).
    pub fn routed_expert_params(&self) -> (f64, f64) {
        let all = self.routed_expert_params_per_layer() * self.moe_layers().len() as f64;
        (all, all / self.mlp_matrices())
    }

    /// Layers with routed experts: all but the leading dense ones (`first_k_dense_replace`).
    pub fn moe_layers(&self) -> std::ops::Range<u32> {
        match &self.moe {
            Some(m) => m.dense_layers.min(self.layers)..self.layers,
            None => self.layers..self.layers,
        }
    }

    /// Parameters a single token actually multiplies through (MoE: only the routed experts).
    pub fn active_params(&self) -> f64 {
        match &self.moe {
            Some(m) if m.experts > 0 => {
                let moe_layers = f64::from(self.layers.saturating_sub(m.dense_layers));
                let (h, i) = (f64::from(self.hidden), f64::from(m.expert_intermediate));
                let bias = if m.expert_bias {
                    (self.mlp_matrices() - 1.0) * i + h
                } else {
                    0.0
                };
                let per_expert = self.mlp_matrices() * h * i + bias;
                let idle = moe_layers * f64::from(m.experts.saturating_sub(m.active)) * per_expert;
                (self.params - idle).max(0.0)
            }
            _ => self.params,
        }
    }

    /// Checks that the numbers describe a buildable model; names the first bad field.
    pub fn validate(&self) -> Result<(), Message> {
        let positive = [
            ("layers", self.layers),
            ("hidden", self.hidden),
            ("heads", self.heads),
            ("kv_heads", self.kv_heads),
            ("head_dim", self.head_dim),
            ("intermediate", self.intermediate),
            ("vocab", self.vocab),
        ];
        for (name, v) in positive {
            if v == 0 {
                return Err(Message::new("model.at_least_one").text("field", name));
            }
        }
        if self.max_context == Some(0) {
            return Err(Message::new("model.max_context_zero"));
        }
        if !(self.params.is_finite() && self.params >= 1.0 && self.params < 1e14) {
            return Err(Message::new("model.params_range"));
        }
        if self.kv_heads > self.heads || !self.heads.is_multiple_of(self.kv_heads) {
            return Err(Message::new("model.kv_heads")
                .int("kv_heads", self.kv_heads)
                .int("heads", self.heads));
        }
        if let Some(c) = &self.cache {
            if c.blocks.len() != self.layers as usize {
                return Err(Message::new("model.cache_blocks")
                    .int("blocks", c.blocks.len() as u64)
                    .int("layers", self.layers));
            }
            if self.sliding_window.is_none() && c.blocks.contains(&BlockCache::Sliding) {
                return Err(Message::new("model.cache_sliding"));
            }
            if !(c.state_elements.is_finite() && c.state_elements >= 0.0) {
                return Err(Message::new("model.cache_state"));
            }
        }
        if let Some(m) = &self.moe
            && (m.active == 0 || m.active > m.experts)
        {
            return Err(Message::new("model.moe_active"));
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Llama-3.1-8B from its config.json (8,030,261,248 parameters).
    pub(crate) fn llama31_8b() -> ModelArch {
        ModelArch {
            params: 8_030_261_248.0,
            layers: 32,
            hidden: 4096,
            heads: 32,
            kv_heads: 8,
            head_dim: 128,
            intermediate: 14336,
            vocab: 128_256,
            mlp: Mlp::Gated,
            tied_embeddings: false,
            max_context: Some(131_072),
            sliding_window: None,
            global_every: None,
            moe: None,
            mla: None,
            transformers_kv_heads: None,
            cache: None,
            model_type: None,
        }
    }

    #[test]
    fn llama_shapes_add_up_to_the_published_count() {
        let a = llama31_8b();
        // 32 × (attn 4096·(2·4096 + 2·1024) + mlp 3·4096·14336) + 2·128256·4096 + norms
        let by_shape = f64::from(a.layers) * (a.attn_params_per_layer() + a.dense_mlp_params())
            + a.embedding_params()
            + a.lm_head_params();
        let norms = (2.0 * 32.0 + 1.0) * 4096.0;
        assert_eq!(by_shape + norms, a.params);
        assert_eq!(a.kv_dim(), 1024.0);
    }

    #[test]
    fn validate_names_the_field() {
        let mut a = llama31_8b();
        a.kv_heads = 5;
        assert!(a.validate().unwrap_err().to_string().contains("kv_heads"));
        a.kv_heads = 8;
        a.layers = 0;
        assert!(
            a.validate()
                .unwrap_err()
                .to_string()
                .contains("model.layers")
        );
    }
}
