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
    pub(super) fn params(self, width: u128) -> u128 {
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

/// A state-space (Mamba) mixer: transformers `modeling_mamba.py` `MambaMixer` (selective scan,
/// Mamba 1) or `modeling_mamba2.py` `Mamba2Mixer` (SSD, Mamba 2; Bamba, NemotronH and
/// GraniteMoeHybrid use the same mixer). No KV cache: a fixed state per sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ssm {
    Mamba {
        inner: u32,
        state: u32,
        conv_kernel: u32,
        dt_rank: u32,
        bias: bool,
        conv_bias: bool,
        /// RMSNorms over Δ, B and C inside the mixer (Jamba `dt_layernorm`, `b_layernorm`,
        /// `c_layernorm`).
        inner_norms: bool,
    },
    Mamba2 {
        inner: u32,
        state: u32,
        conv_kernel: u32,
        heads: u32,
        head_dim: u32,
        groups: u32,
        bias: bool,
        conv_bias: bool,
    },
}

impl Ssm {
    /// Mamba: in_proj (x and gate z), the depthwise conv1d over the inner width, x_proj (Δ rank,
    /// B and C), dt_proj (with bias), A_log, D, out_proj. Mamba 2: in_proj (z, x, B, C and one
    /// Δ per head), the conv1d over x, B and C (`conv_dim = inner + 2·groups·state`),
    /// dt_bias, A_log and D per head, the gated RMSNorm over the inner width, out_proj.
    fn parts(&self, hidden: u32) -> Parts {
        let h = n(hidden);
        match *self {
            Ssm::Mamba {
                inner,
                state,
                conv_kernel,
                dt_rank,
                bias,
                conv_bias,
                inner_norms,
            } => {
                let (i, s, r) = (n(inner), n(state), n(dt_rank));
                let norms = if inner_norms { r + 2 * s } else { 0 };
                Parts {
                    linears: vec![
                        Lin::new("mixer.in_proj", h, 2 * i, bias),
                        Lin::new("mixer.x_proj", i, r + 2 * s, false),
                        Lin::new("mixer.dt_proj", r, i, true),
                        Lin::new("mixer.out_proj", i, h, bias),
                    ],
                    other: i * n(conv_kernel) + if conv_bias { i } else { 0 } + i * s + i + norms,
                }
            }
            Ssm::Mamba2 {
                inner,
                conv_kernel,
                heads,
                bias,
                conv_bias,
                ..
            } => {
                let i = n(inner);
                let conv = self.conv_channels();
                Parts {
                    linears: vec![
                        Lin::new("mixer.in_proj", h, i + conv + n(heads), bias),
                        Lin::new("mixer.out_proj", i, h, bias),
                    ],
                    other: conv * n(conv_kernel)
                        + if conv_bias { conv } else { 0 }
                        + 3 * n(heads)
                        + i,
                }
            }
        }
    }

    /// The mixer's inner width.
    pub fn inner(&self) -> u32 {
        match *self {
            Ssm::Mamba { inner, .. } | Ssm::Mamba2 { inner, .. } => inner,
        }
    }

    fn conv_channels(&self) -> u128 {
        match *self {
            Ssm::Mamba { inner, .. } => n(inner),
            Ssm::Mamba2 {
                inner,
                state,
                groups,
                ..
            } => n(inner) + 2 * n(groups) * n(state),
        }
    }

    /// State elements per sequence (transformers `cache_utils.py` `LinearAttentionLayer`, as
    /// `MambaMixer` / `Mamba2Mixer` fill it): the convolution window, `conv channels ×
    /// conv_kernel`, and the recurrent state, `inner × state` (Mamba) or `heads × head_dim ×
    /// state` (Mamba 2).
    pub fn state_elements(&self) -> u64 {
        let (kernel, recurrent) = match *self {
            Ssm::Mamba {
                inner,
                state,
                conv_kernel,
                ..
            } => (conv_kernel, n(inner) * n(state)),
            Ssm::Mamba2 {
                state,
                conv_kernel,
                heads,
                head_dim,
                ..
            } => (conv_kernel, n(heads) * n(head_dim) * n(state)),
        };
        to_u64(
            self.conv_channels()
                .saturating_mul(n(kernel))
                .saturating_add(recurrent),
        )
    }
}

/// The one part a block holds, where the config lists the blocks that way (NemotronH
/// `hybrid_override_pattern` "M*-E" / `layers_block_type`, modeling_nemotron_h.py
/// `NemotronHBlock`: a norm and one mixer or feed-forward).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Single {
    Mamba,
    Attention,
    Mlp,
    Moe,
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
    /// Width of the token embeddings and of the head's input (the hidden size, or OPT's
    /// `word_embed_proj_dim` with `project_in` / `project_out` between the two).
    pub embed_width: u32,
    /// Norms outside the blocks: the final one, and an embeddings norm (BLOOM); 0 for OPT
    /// without `do_layer_norm_before`.
    pub outer_norms: u32,
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
    /// The state-space mixer of the blocks whose cache is `BlockCache::None`.
    pub ssm: Option<Ssm>,
    /// Those blocks have no feed-forward (Mamba, Mamba 2: norm and mixer only).
    pub ssm_only_mixer: bool,
    /// Blocks of one part each, where the config lists them (NemotronH).
    pub single: Option<Vec<Single>>,
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

/// One `nn.Linear` of a block (or `copies` of the same shape: the routed experts), named as the
/// Llama/Qwen/DeepSeek modeling files name it within the block (`self_attn.q_proj`,
/// `mlp.experts.{e}.down_proj`), which is what quantization configs' module lists match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lin {
    pub name: &'static str,
    pub inp: u128,
    pub out: u128,
    pub bias: bool,
    pub copies: u128,
    /// A router or a shared-expert gate (not a projection).
    pub router: bool,
}

impl Lin {
    fn new(name: &'static str, inp: u128, out: u128, bias: bool) -> Self {
        Lin {
            name,
            inp,
            out,
            bias,
            copies: 1,
            router: false,
        }
    }

    fn params(&self) -> u128 {
        linear(self.inp, self.out, self.bias).saturating_mul(self.copies)
    }
}

/// A block's parameters: its linear layers and everything else (norms, convolutions, learned
/// vectors).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parts {
    pub linears: Vec<Lin>,
    pub other: u128,
}

impl Parts {
    fn params(&self) -> u128 {
        self.linears
            .iter()
            .fold(self.other, |s, l| s.saturating_add(l.params()))
    }

    fn add(&mut self, more: Parts) {
        self.linears.extend(more.linears);
        self.other = self.other.saturating_add(more.other);
    }
}

fn attention(l: &Layout) -> Parts {
    let h = n(l.hidden);
    if let Some(m) = &l.mla {
        // DeepSeek-V2 modeling: q_proj (or q_a_proj + q_a_layernorm + q_b_proj),
        // kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj.
        let heads = n(l.heads);
        let qk = n(m.qk_nope_head_dim) + n(m.qk_rope_head_dim);
        let mut p = Parts::default();
        match m.q_lora_rank {
            Some(r) => {
                p.linears
                    .push(Lin::new("self_attn.q_a_proj", h, n(r), l.qkv_bias));
                p.other += n(r);
                p.linears
                    .push(Lin::new("self_attn.q_b_proj", n(r), heads * qk, false));
            }
            None => p
                .linears
                .push(Lin::new("self_attn.q_proj", h, heads * qk, false)),
        }
        p.linears.push(Lin::new(
            "self_attn.kv_a_proj_with_mqa",
            h,
            n(m.kv_lora_rank) + n(m.qk_rope_head_dim),
            l.qkv_bias,
        ));
        p.other += n(m.kv_lora_rank);
        p.linears.push(Lin::new(
            "self_attn.kv_b_proj",
            n(m.kv_lora_rank),
            heads * (n(m.qk_nope_head_dim) + n(m.v_head_dim)),
            false,
        ));
        p.linears.push(Lin::new(
            "self_attn.o_proj",
            heads * n(m.v_head_dim),
            h,
            l.o_bias,
        ));
        return p;
    }
    let q = n(l.heads) * n(l.head_dim);
    let kv = n(l.kv_heads) * n(l.head_dim);
    let qk_norm = match l.qk_norm {
        QkNorm::None => 0,
        QkNorm::Head => 2 * n(l.head_dim),
        QkNorm::Full => q + kv,
    };
    let sinks = if l.attention_sinks { n(l.heads) } else { 0 };
    // A gated attention's q_proj also yields the gate (Qwen3-Next: `num_heads · head_dim · 2`).
    let q_out = if l.gated_attention { 2 * q } else { q };
    Parts {
        linears: vec![
            Lin::new("self_attn.q_proj", h, q_out, l.qkv_bias),
            Lin::new("self_attn.k_proj", h, kv, l.qkv_bias),
            Lin::new("self_attn.v_proj", h, kv, l.qkv_bias),
            Lin::new("self_attn.o_proj", q, h, l.o_bias),
        ],
        other: qk_norm.saturating_add(sinks),
    }
}

/// The names of a feed-forward block's projections under one prefix.
struct MlpNames {
    gate: &'static str,
    up: &'static str,
    down: &'static str,
}

const DENSE: MlpNames = MlpNames {
    gate: "mlp.gate_proj",
    up: "mlp.up_proj",
    down: "mlp.down_proj",
};
const EXPERTS: MlpNames = MlpNames {
    gate: "mlp.experts.{e}.gate_proj",
    up: "mlp.experts.{e}.up_proj",
    down: "mlp.experts.{e}.down_proj",
};
/// Qwen-MoE's one `shared_expert`.
const SHARED_EXPERT: MlpNames = MlpNames {
    gate: "mlp.shared_expert.gate_proj",
    up: "mlp.shared_expert.up_proj",
    down: "mlp.shared_expert.down_proj",
};
/// DeepSeek's `shared_experts` (one MLP of their summed width).
const SHARED_EXPERTS: MlpNames = MlpNames {
    gate: "mlp.shared_experts.gate_proj",
    up: "mlp.shared_experts.up_proj",
    down: "mlp.shared_experts.down_proj",
};

/// A feed-forward block of width `i`, `copies` times.
fn mlp(l: &Layout, i: u32, bias: bool, names: &MlpNames, copies: u128) -> Vec<Lin> {
    let (h, i) = (n(l.hidden), n(i));
    let mut v = Vec::with_capacity(3);
    if l.mlp == Mlp::Gated {
        v.push(Lin::new(names.gate, h, i, bias));
    }
    v.push(Lin::new(names.up, h, i, bias));
    v.push(Lin::new(names.down, i, h, bias));
    for x in &mut v {
        x.copies = copies;
    }
    v
}

fn moe_block(l: &Layout, m: &MoeSpec) -> Parts {
    let h = n(l.hidden);
    let mut linears = mlp(
        l,
        m.expert_intermediate,
        m.expert_bias,
        &EXPERTS,
        n(m.experts),
    );
    linears.push(Lin {
        router: true,
        ..Lin::new("mlp.gate", h, n(m.experts), false)
    });
    if m.shared_intermediate > 0 {
        let names = match m.layout {
            MoeLayout::Deepseek => &SHARED_EXPERTS,
            _ => &SHARED_EXPERT,
        };
        linears.extend(mlp(l, m.shared_intermediate, false, names, 1));
    }
    if m.shared_gate {
        linears.push(Lin {
            router: true,
            ..Lin::new("mlp.shared_expert_gate", h, 1, false)
        });
    }
    Parts {
        linears,
        other: if m.router_bias { n(m.experts) } else { 0 },
    }
}

impl LinearAttention {
    /// in_proj_qkvz (q, k, v and the output gate z), in_proj_ba (β and α per value head),
    /// conv1d (no bias), dt_bias, A_log, the gated RMSNorm over value_dim and out_proj.
    fn parts(&self, hidden: u32) -> Parts {
        let h = n(hidden);
        let (kd, vd) = (
            n(self.key_heads) * n(self.key_dim),
            n(self.value_heads) * n(self.value_dim),
        );
        let nv = n(self.value_heads);
        Parts {
            linears: vec![
                Lin::new("linear_attn.in_proj_qkvz", h, 2 * kd + 2 * vd, false),
                Lin::new("linear_attn.in_proj_ba", h, 2 * nv, false),
                Lin::new("linear_attn.out_proj", vd, h, false),
            ],
            other: self
                .conv_channels()
                .saturating_mul(n(self.conv_kernel))
                .saturating_add(2 * nv + n(self.value_dim)),
        }
    }
}

/// The parameters of block `layer`: its mixer (attention or linear attention), its
/// feed-forward (dense or MoE) and its norms.
pub fn block(l: &Layout, layer: usize) -> Parts {
    let norms = l.norm.params(n(l.hidden)) * n(l.norms_per_layer);
    if let Some(kind) = l.single.as_ref().and_then(|s| s.get(layer)) {
        let mut p = match kind {
            Single::Mamba => l.ssm.map(|s| s.parts(l.hidden)).unwrap_or_default(),
            Single::Attention => attention(l),
            Single::Mlp => Parts {
                linears: mlp(l, l.intermediate, l.mlp_bias, &DENSE, 1),
                other: 0,
            },
            Single::Moe => l.moe.as_ref().map(|m| moe_block(l, m)).unwrap_or_default(),
        };
        p.other = p.other.saturating_add(norms);
        return p;
    }
    let recurrent = l
        .blocks
        .as_ref()
        .is_some_and(|b| b.get(layer) == Some(&BlockCache::None));
    let mut p = match (recurrent, l.linear, l.ssm) {
        (true, Some(la), _) => la.parts(l.hidden),
        (true, None, Some(ssm)) => ssm.parts(l.hidden),
        _ => attention(l),
    };
    if recurrent && l.ssm.is_some() && l.ssm_only_mixer {
        p.other = p
            .other
            .saturating_add(l.norm.params(n(l.hidden)) * n(l.norms_per_layer));
        return p;
    }
    match &l.moe {
        Some(m) if m.moe_layers.get(layer).copied().unwrap_or(false) => p.add(moe_block(l, m)),
        _ => p
            .linears
            .extend(mlp(l, l.intermediate, l.mlp_bias, &DENSE, 1)),
    }
    p.other = p
        .other
        .saturating_add(l.norm.params(n(l.hidden)) * n(l.norms_per_layer));
    p
}

/// The output head, when it is a matrix of its own (not tied to the embedding).
pub fn head(l: &Layout) -> Option<Lin> {
    (!l.tied).then(|| Lin::new("lm_head", n(l.embed_width), n(l.vocab), l.head_bias))
}

/// Parameters of the whole decoder: embeddings, blocks, final norm, head.
pub fn count(l: &Layout) -> u64 {
    let h = n(l.hidden);
    let blocks =
        (0..l.layers as usize).fold(0u128, |s, layer| s.saturating_add(block(l, layer).params()));
    let e = n(l.embed_width);
    let embed = n(l.vocab).saturating_mul(e);
    // OPT's project_in and project_out (modeling_opt.py OPTDecoder, Linear without bias).
    let projections = if e == h { 0 } else { h.saturating_mul(e) * 2 };
    let head = match head(l) {
        Some(lin) => lin.params(),
        // A tied head can still carry its own bias.
        None if l.head_bias => n(l.vocab),
        None => 0,
    };
    let positions = n(l.positions).saturating_mul(h);
    to_u64(
        blocks
            .saturating_add(embed)
            .saturating_add(projections)
            .saturating_add(head)
            .saturating_add(positions)
            .saturating_add(l.norm.params(h).saturating_mul(n(l.outer_norms))),
    )
}
