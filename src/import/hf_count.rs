//! Parameter count of a Hugging Face model from the shapes its config declares, tensor by tensor
//! as the transformers modeling files create them (named per convention in
//! `presets/hf_architectures.toml`). Checked against published exact counts in tests/import.rs.
//!
//! Sums are u128 with saturation: hostile configs give absurd counts that `ModelArch::validate`
//! then rejects, never an overflow.

use crate::types::arch::{BlockCache, Mla, Mlp};
use serde::Deserialize;

/// Expert layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MoeLayout {
    /// Mixtral: routed experts of `intermediate_size`, router without bias.
    Mixtral,
    /// Qwen-MoE: routed experts of `moe_intermediate_size`, optional one shared expert of
    /// `shared_expert_intermediate_size` with a sigmoid gate `Linear(hidden, 1)`.
    Qwen,
    /// DeepSeek: routed and `n_shared_experts` shared experts of `moe_intermediate_size`.
    Deepseek,
}

/// The parameters of one normalisation layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Norm {
    /// RMSNorm (and Cohere's bias-free LayerNorm): one weight vector.
    Rms,
    /// LayerNorm: weight and bias.
    Layer,
    /// A LayerNorm without parameters (OLMo 1: `OlmoLayerNorm`, `elementwise_affine=False`).
    None,
}

impl Norm {
    fn params(self, width: u128) -> u128 {
        match self {
            Norm::Rms => width,
            Norm::Layer => 2 * width,
            Norm::None => 0,
        }
    }
}

/// Norms on the queries and keys (weights only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum QkNorm {
    #[default]
    None,
    /// One norm of `head_dim` shared by the heads (Qwen3, Gemma 3: `q_norm = RMSNorm(head_dim)`).
    Head,
    /// One norm over all of q and one over all of k (OLMo 2: `RMSNorm(num_heads * head_dim)` and
    /// `RMSNorm(num_key_value_heads * head_dim)`; Cohere's per-head `LayerNorm((heads, head_dim))`).
    Full,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MoeSpec {
    pub layout: MoeLayout,
    pub experts: u32,
    pub active: u32,
    pub expert_intermediate: u32,
    /// Total width of the shared expert(s); 0 without.
    pub shared_intermediate: u32,
    pub shared_gate: bool,
    /// A learned bias per expert on the router (DeepSeek-V3 `e_score_correction_bias`, gpt-oss
    /// `router.bias`).
    pub router_bias: bool,
    /// The experts' projections carry biases (gpt-oss `gate_up_proj_bias`, `down_proj_bias`).
    pub expert_bias: bool,
    /// Which blocks are MoE (the rest are dense with `intermediate`).
    pub moe_layers: Vec<bool>,
}

/// A Gated DeltaNet linear-attention block (transformers `modeling_qwen3_next.py`
/// `Qwen3NextGatedDeltaNet`): no KV cache, a fixed state per sequence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinearAttention {
    pub key_heads: u32,
    pub key_dim: u32,
    pub value_heads: u32,
    pub value_dim: u32,
    pub conv_kernel: u32,
}

impl LinearAttention {
    /// Width of the causal convolution over q, k and v (`conv_dim = 2·key_dim + value_dim`).
    fn conv_channels(&self) -> u128 {
        2 * n(self.key_heads) * n(self.key_dim) + n(self.value_heads) * n(self.value_dim)
    }

    /// in_proj_qkvz (q, k, v and the output gate z), in_proj_ba (β and α per value head),
    /// conv1d (no bias), dt_bias, A_log, the gated RMSNorm over value_dim and out_proj.
    fn params(&self, hidden: u32) -> u128 {
        let h = n(hidden);
        let (kd, vd) = (
            n(self.key_heads) * n(self.key_dim),
            n(self.value_heads) * n(self.value_dim),
        );
        let nv = n(self.value_heads);
        linear(h, 2 * kd + 2 * vd, false)
            .saturating_add(linear(h, 2 * nv, false))
            .saturating_add(self.conv_channels().saturating_mul(n(self.conv_kernel)))
            .saturating_add(2 * nv + n(self.value_dim))
            .saturating_add(linear(vd, h, false))
    }

    /// State elements per sequence: the convolution window (`conv_dim × kernel`, transformers
    /// `LinearAttentionLayer` keeps `conv_kernel_size` positions) and the recurrent state
    /// (value heads × key_dim × value_dim).
    pub fn state_elements(&self) -> u64 {
        to_u64(
            self.conv_channels()
                .saturating_mul(n(self.conv_kernel))
                .saturating_add(n(self.value_heads) * n(self.key_dim) * n(self.value_dim)),
        )
    }
}

/// The shapes of a decoder as its config declares them.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub intermediate: u32,
    pub vocab: u32,
    /// Rows of a learned position embedding (GPT-2 `wpe`), 0 for rotary models.
    pub positions: u32,
    pub tied: bool,
    pub norm: Norm,
    pub norms_per_layer: u32,
    pub qk_norm: QkNorm,
    pub qkv_bias: bool,
    pub o_bias: bool,
    pub mlp_bias: bool,
    pub head_bias: bool,
    /// One learned attention-sink logit per head (gpt-oss `self_attn.sinks`).
    pub attention_sinks: bool,
    pub mlp: Mlp,
    pub moe: Option<MoeSpec>,
    pub mla: Option<Mla>,
    /// The attention output is gated: q_proj also yields a gate of the same width (Qwen3-Next
    /// `Qwen3NextAttention`: `q_proj` of `num_heads · head_dim · 2`).
    pub gated_attention: bool,
    /// The linear-attention blocks' shapes (the blocks whose cache is `BlockCache::None`).
    pub linear: Option<LinearAttention>,
    /// What each block caches, where the config says it block by block.
    pub blocks: Option<Vec<BlockCache>>,
    /// Elements of fixed-size state per sequence (state-space and linear-attention blocks).
    pub state_elements: u64,
}

fn n(x: u32) -> u128 {
    u128::from(x)
}

fn to_u64(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

/// A linear layer `inp → out`, with bias or not.
fn linear(inp: u128, out: u128, bias: bool) -> u128 {
    inp.saturating_mul(out)
        .saturating_add(if bias { out } else { 0 })
}

fn attention(l: &Layout) -> u128 {
    let h = n(l.hidden);
    if let Some(m) = &l.mla {
        // DeepSeek-V2 modeling: q_proj (or q_a_proj + q_a_layernorm + q_b_proj),
        // kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj.
        let heads = n(l.heads);
        let qk = n(m.qk_nope_head_dim) + n(m.qk_rope_head_dim);
        let q = match m.q_lora_rank {
            Some(r) => linear(h, n(r), l.qkv_bias) + n(r) + linear(n(r), heads * qk, false),
            None => linear(h, heads * qk, false),
        };
        let kv_a =
            linear(h, n(m.kv_lora_rank) + n(m.qk_rope_head_dim), l.qkv_bias) + n(m.kv_lora_rank);
        let kv_b = linear(
            n(m.kv_lora_rank),
            heads * (n(m.qk_nope_head_dim) + n(m.v_head_dim)),
            false,
        );
        let o = linear(heads * n(m.v_head_dim), h, l.o_bias);
        return q
            .saturating_add(kv_a)
            .saturating_add(kv_b)
            .saturating_add(o);
    }
    let q = n(l.heads) * n(l.head_dim);
    let kv = n(l.kv_heads) * n(l.head_dim);
    let qk_norm = match l.qk_norm {
        QkNorm::None => 0,
        QkNorm::Head => 2 * n(l.head_dim),
        QkNorm::Full => q + kv,
    };
    let sinks = if l.attention_sinks { n(l.heads) } else { 0 };
    let gate = if l.gated_attention {
        linear(h, q, l.qkv_bias)
    } else {
        0
    };
    linear(h, q + 2 * kv, l.qkv_bias)
        .saturating_add(gate)
        .saturating_add(linear(q, h, l.o_bias))
        .saturating_add(qk_norm)
        .saturating_add(sinks)
}

/// A feed-forward block of width `i`.
fn mlp(l: &Layout, i: u32, bias: bool) -> u128 {
    let (h, i) = (n(l.hidden), n(i));
    let up = linear(h, i, bias);
    let down = linear(i, h, bias);
    match l.mlp {
        Mlp::Gated => up.saturating_mul(2).saturating_add(down),
        Mlp::Plain => up.saturating_add(down),
    }
}

fn moe_block(l: &Layout, m: &MoeSpec) -> u128 {
    let h = n(l.hidden);
    let experts = mlp(l, m.expert_intermediate, m.expert_bias).saturating_mul(n(m.experts));
    let router = linear(h, n(m.experts), false) + if m.router_bias { n(m.experts) } else { 0 };
    let shared = if m.shared_intermediate > 0 {
        mlp(l, m.shared_intermediate, false)
    } else {
        0
    };
    let gate = if m.shared_gate { h } else { 0 };
    experts
        .saturating_add(router)
        .saturating_add(shared)
        .saturating_add(gate)
}

/// Parameters of the whole decoder: embeddings, blocks, final norm, head.
pub fn count(l: &Layout) -> u64 {
    let h = n(l.hidden);
    let norm = l.norm.params(h);
    let attn = attention(l);
    let linear_attn = l.linear.map_or(0, |la| la.params(l.hidden));
    let dense = mlp(l, l.intermediate, l.mlp_bias);
    let moe = l.moe.as_ref().map(|m| (moe_block(l, m), &m.moe_layers));
    let mut blocks: u128 = 0;
    for layer in 0..l.layers as usize {
        let mixer = match (&l.blocks, l.linear) {
            (Some(b), Some(_)) if b.get(layer) == Some(&BlockCache::None) => linear_attn,
            _ => attn,
        };
        let ffn = match &moe {
            Some((block, which)) if which.get(layer).copied().unwrap_or(false) => *block,
            _ => dense,
        };
        blocks = blocks
            .saturating_add(mixer)
            .saturating_add(ffn)
            .saturating_add(norm * n(l.norms_per_layer));
    }
    let embed = n(l.vocab).saturating_mul(h);
    let head = if l.tied { 0 } else { embed } + if l.head_bias { n(l.vocab) } else { 0 };
    let positions = n(l.positions).saturating_mul(h);
    to_u64(
        blocks
            .saturating_add(embed)
            .saturating_add(head)
            .saturating_add(positions)
            .saturating_add(norm),
    )
}
