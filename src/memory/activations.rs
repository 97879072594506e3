//! Activation memory of transformer layers, per token.
//!
//! Training follows Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
//! Transformer Models", arXiv 2205.05198, §4.1: `sbh(34 + 5as/h)` bytes per layer for a GPT block
//! in 16-bit), adapted to modern decoders: no dropout, GQA (K and V are `kv_dim` wide, Q and the
//! attention output `q_dim`), and gated MLPs that keep gate, up and act(gate)·up (3·I) instead of
//! GeLU's 2·4h. Inference keeps nothing between layers, so only the largest transient counts.

use crate::types::arch::{Mlp, ModelArch};
use crate::types::options::{Attention, Checkpointing};

/// Bytes one layer saves for backward per token, excluding the attention score matrix:
/// two norm inputs (2h), the QKV input (h), Q, K, V (q + 2kv), the o_proj input (q),
/// the MLP input (h) and its intermediates (3I gated, 2I plain), each `elt` bytes.
pub fn saved_per_token_layer(a: &ModelArch, elt: f64) -> f64 {
    let h = f64::from(a.hidden);
    let i = f64::from(a.intermediate);
    let mlp = match a.mlp {
        Mlp::Gated => 3.0 * i,
        Mlp::Plain => 2.0 * i,
    };
    elt * (4.0 * h + 2.0 * a.q_dim() + 2.0 * a.kv_dim() + mlp)
}

/// Eager attention also saves the softmax output, dropout mask and dropout output:
/// Korthikanti's `5as` bytes per token and layer (2 + 1 + 2 bytes per score in 16-bit),
/// scaled for 32-bit training. SDPA/flash kernels save only O(s·h) (log-sum-exp), like
/// selective recomputation.
pub fn eager_scores_per_token_layer(a: &ModelArch, seq: f64, elt: f64) -> f64 {
    2.5 * elt * f64::from(a.heads) * seq
}

/// Activation bytes held at the end of the forward pass of a training step.
pub fn training_activations(
    a: &ModelArch,
    tokens: f64,
    seq: f64,
    elt: f64,
    attn: Attention,
    ckpt: Checkpointing,
) -> f64 {
    let layers = f64::from(a.layers);
    let saved = saved_per_token_layer(a, elt);
    let scores = if attn == Attention::Eager {
        eager_scores_per_token_layer(a, seq, elt)
    } else {
        0.0
    };
    match ckpt {
        Checkpointing::None => layers * tokens * (saved + scores),
        // Selective recomputation drops exactly the score-matrix terms (Korthikanti §5).
        Checkpointing::Selective => layers * tokens * saved,
        // Full recomputation keeps each layer's input (2sbh) and re-materialises one layer at a
        // time during backward.
        Checkpointing::Full => {
            layers * tokens * f64::from(a.hidden) * elt + tokens * (saved + scores)
        }
    }
}

/// Largest transient of an inference forward pass over `tokens` tokens (`prompt` per sequence),
/// 16-bit activations: the MLP intermediates, or for eager attention the score matrix of one
/// layer (fp16 scores + fp32 softmax, as transformers' eager attention computes them).
pub fn inference_peak(a: &ModelArch, batch: f64, prompt: f64, attn: Attention) -> f64 {
    let tokens = batch * prompt;
    let h = f64::from(a.hidden);
    let mlp_width = match a.mlp {
        Mlp::Gated => 3.0 * f64::from(a.intermediate),
        Mlp::Plain => 2.0 * f64::from(a.intermediate),
    };
    let mlp = tokens * 2.0 * mlp_width;
    let scores = match attn {
        Attention::Eager => batch * f64::from(a.heads) * prompt * prompt * 6.0,
        _ => 0.0,
    };
    // Residual stream, norm output, Q/K/V and attention output stay alive around the peak.
    let stream = tokens * 2.0 * (3.0 * h + a.q_dim() + 2.0 * a.kv_dim());
    stream + mlp.max(scores)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::arch::tests::llama31_8b;

    #[test]
    fn korthikanti_gpt_block_without_dropout() {
        // A GPT block (plain 4h MLP, MHA) in 16-bit: 2·(4h + 2h + 2h + 8h) = 32h per token,
        // which is Korthikanti's 34h less the two 1-byte dropout masks.
        let mut a = llama31_8b();
        a.mlp = Mlp::Plain;
        a.kv_heads = 32;
        a.intermediate = 4 * 4096;
        assert_eq!(saved_per_token_layer(&a, 2.0), 32.0 * 4096.0);
        // 5as per token and layer for eager attention in 16-bit.
        assert_eq!(
            eager_scores_per_token_layer(&a, 2048.0, 2.0),
            5.0 * 32.0 * 2048.0
        );
    }

    #[test]
    fn checkpointing_orders_memory() {
        let a = llama31_8b();
        let f = |c| training_activations(&a, 4096.0, 4096.0, 2.0, Attention::Eager, c);
        assert!(f(Checkpointing::Full) < f(Checkpointing::Selective));
        assert!(f(Checkpointing::Selective) < f(Checkpointing::None));
        // Full: 32 layer inputs of 4096 × 4096 × 2 B = 1 GiB, plus one layer recomputed.
        let one_layer = 4096.0
            * (saved_per_token_layer(&a, 2.0) + eager_scores_per_token_layer(&a, 4096.0, 2.0));
        assert_eq!(
            f(Checkpointing::Full),
            32.0 * 4096.0 * 4096.0 * 2.0 + one_layer
        );
    }

    #[test]
    fn eager_inference_peak_is_quadratic() {
        let a = llama31_8b();
        let e1 = inference_peak(&a, 1.0, 8192.0, Attention::Eager);
        let f1 = inference_peak(&a, 1.0, 8192.0, Attention::Flash);
        // 32 heads × 8192² × 6 B = 12 GiB of scores against 8192 × 86 KB of MLP.
        assert!(e1 > 12.0 * 1024.0 * 1024.0 * 1024.0);
        assert!(f1 < 1.5 * 1024.0 * 1024.0 * 1024.0);
    }
}
