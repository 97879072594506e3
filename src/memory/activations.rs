//! Activation memory of transformer layers, per token.
//!
//! Training counts what autograd saves for backward in transformers' decoder layers
//! (`modeling_llama.py` `LlamaDecoderLayer`: RMSNorm → q/k/v → RoPE → SDPA → o_proj → residual,
//! RMSNorm → gate/up → SiLU·up → down → residual), op by op, as the fake-tensor simulation of the
//! real step counts it (`tests/calibration/fake_train.py --top`). Korthikanti et al. 2022
//! (arXiv 2205.05198, §4.1: `sbh(34 + 5as/h)` for a GPT block) gives the same structure for
//! GPT-2-style blocks. Inference keeps nothing between layers, so only the largest transient
//! counts.

use super::lora::Adapters;
use crate::types::arch::{Mlp, ModelArch};
use crate::types::options::{Attention, Checkpointing};

/// The dtypes an activation is held in during a training step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepDtypes {
    /// Bytes per element of the residual stream: the dtype of the weights the layers are built
    /// in (fp32 master weights under autocast, 16-bit for pure bf16 and frozen LoRA bases).
    pub residual: f64,
    /// Bytes per element of the matmul outputs: 2 under autocast or pure 16-bit, 4 in fp32.
    pub compute: f64,
    /// `torch.autocast` is on: every linear casts its own input (`cached_cast` in
    /// aten/src/ATen/autocast_mode.cpp caches only leaf tensors that require grad — the
    /// weights — so each linear makes and saves a fresh 16-bit copy of a non-leaf input).
    pub autocast: bool,
}

/// What is trained: every weight (full fine-tuning) or LoRA adapters of a rank on frozen
/// linears (the modules `run.lora_targets` selects, `memory::lora::adapters`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trained {
    All,
    Lora(Adapters, u32),
}

/// Bytes one decoder layer saves for backward per token, excluding the attention score matrix.
///
/// - RMSNorm (`LlamaRMSNorm.forward`: `hidden_states.to(float32)`, `pow(2).mean`, `* rsqrt`,
///   `weight * hs.to(input_dtype)`): `pow` saves its fp32 input (4h); with a trainable norm
///   weight its `mul` also saves the normalised `hs` in the residual dtype, and the linears
///   that read the norm's output save it (one shared tensor, or one 16-bit cast per linear
///   under autocast). A frozen linear (`F.linear` of a LoRA base) saves no input: its weight
///   gradient is not needed, and `grad_input = grad · W` reads only the weight.
/// - Attention: SDPA saves q and k after RoPE, v, its output and the fp32 log-sum-exp per head
///   (`_scaled_dot_product_flash_attention` / `_efficient_attention` in
///   aten/src/ATen/native/transformers/attention.cpp; RoPE's `mul`s save only cos and sin).
/// - Gated MLP: gate and up outputs, SiLU's output (saved by the `mul`), and `act·up` when
///   `down_proj` is trained. Plain MLP: fc1's output and the activation when fc2 is trained.
/// - LoRA (peft `tuners/lora/layer.py` `Linear.forward`): each adapted linear's `lora_A` saves
///   its input (cast to the adapter dtype and back by autocast: a 16-bit copy per adapter; the
///   norm output itself without autocast), and `lora_B` saves the rank-`r` output of `lora_A`.
pub fn saved_per_token_layer(a: &ModelArch, d: StepDtypes, trained: Trained) -> f64 {
    let h = f64::from(a.hidden);
    let q = a.q_dim();
    let kv = a.kv_dim();
    let i = f64::from(a.intermediate);
    let e = d.compute;
    let gated = a.mlp == Mlp::Gated;
    // Readers of the attention norm's output (q, k, v) and of the MLP norm's (gate, up | fc1).
    let mlp_in = if gated { 2.0 } else { 1.0 };
    let attn = e * (2.0 * q + 2.0 * kv) + 4.0 * f64::from(a.heads);
    match trained {
        Trained::All => {
            let norm = |readers: f64| {
                let input_copies = if d.autocast { readers } else { 1.0 };
                4.0 * h + d.residual * h + input_copies * e * h
            };
            let mlp = if gated { 4.0 * i * e } else { 2.0 * i * e };
            norm(3.0) + norm(mlp_in) + attn + mlp
        }
        Trained::Lora(ad, rank) => {
            // The adapters' saved inputs, per block on average: one copy per adapter under
            // autocast, one per tensor read without (`Adapters::inputs_each`, `inputs_shared`).
            let layers = f64::from(a.layers.max(1));
            let in_head = if ad.head { 1.0 } else { 0.0 };
            let inputs = if d.autocast {
                ad.inputs_each
            } else {
                ad.inputs_shared
            };
            let lora = (inputs + (ad.count - in_head) * f64::from(rank)) * e / layers;
            let mlp = if gated { 3.0 * i * e } else { i * e };
            2.0 * 4.0 * h + attn + mlp + lora
        }
    }
}

/// Bytes per token saved by the final norm and read by the LM head: the norm's fp32 input,
/// and with a trainable head the normalised `hs` and the head's input.
pub fn final_norm_per_token(a: &ModelArch, d: StepDtypes, trained: Trained) -> f64 {
    let h = f64::from(a.hidden);
    match trained {
        Trained::All => 4.0 * h + d.residual * h + d.compute * h,
        // An adapted head's `lora_A` saves its input, `lora_B` the rank-r output.
        Trained::Lora(ad, rank) if ad.head => 4.0 * h + (h + f64::from(rank)) * d.compute,
        Trained::Lora(..) => 4.0 * h,
    }
}

/// Eager attention also saves the softmax output, dropout mask and dropout output:
/// Korthikanti's `5as` bytes per token and layer (2 + 1 + 2 bytes per score in 16-bit),
/// scaled for 32-bit training. SDPA/flash kernels save only O(s·h) (log-sum-exp), like
/// selective recomputation.
pub fn eager_scores_per_token_layer(a: &ModelArch, seq: f64, elt: f64) -> f64 {
    2.5 * elt * f64::from(a.heads) * seq
}

/// Activation bytes saved for backward at the end of the forward pass of a training step, and
/// the bytes one layer re-materialises during backward under full checkpointing (0 without).
pub fn training_activations(
    a: &ModelArch,
    tokens: f64,
    seq: f64,
    d: StepDtypes,
    trained: Trained,
    attn: Attention,
    ckpt: Checkpointing,
) -> (f64, f64) {
    let layers = f64::from(a.layers);
    let saved = saved_per_token_layer(a, d, trained);
    let scores = if attn == Attention::Eager {
        eager_scores_per_token_layer(a, seq, d.compute)
    } else {
        0.0
    };
    let last = tokens * final_norm_per_token(a, d, trained);
    match ckpt {
        Checkpointing::None => (layers * tokens * (saved + scores) + last, 0.0),
        // Selective recomputation drops exactly the score-matrix terms (Korthikanti §5).
        Checkpointing::Selective => (layers * tokens * saved + last, 0.0),
        // transformers' `gradient_checkpointing_enable` wraps each decoder layer in
        // `torch.utils.checkpoint` (non-reentrant): only the layer's input is saved (the
        // residual stream), and backward re-runs one layer at a time.
        Checkpointing::Full => (
            layers * tokens * f64::from(a.hidden) * d.residual + last,
            tokens * (saved + scores),
        ),
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
    use crate::memory::lora::adapters;
    use crate::types::arch::tests::llama31_8b;
    use crate::types::options::LoraTargets;

    const MIXED: StepDtypes = StepDtypes {
        residual: 4.0,
        compute: 2.0,
        autocast: true,
    };

    #[test]
    fn full_mixed_layer_counts_each_saved_tensor() {
        // Llama-3.1-8B, bf16 autocast over fp32 weights, per token: two norms of 4h + 4h plus
        // 16-bit input casts (3 + 2)·2h, q/k after RoPE, v and the SDPA output 2·(2q + 2kv),
        // the fp32 log-sum-exp 4·heads, and gate, up, SiLU and act·up 4·2·I.
        let a = llama31_8b();
        let (h, q, kv, i) = (4096.0, 4096.0, 1024.0, 14336.0);
        let want = 2.0 * 8.0 * h + 10.0 * h + 2.0 * (2.0 * q + 2.0 * kv) + 128.0 + 8.0 * i;
        assert_eq!(saved_per_token_layer(&a, MIXED, Trained::All), want);
        // 5as per token and layer for eager attention in 16-bit.
        assert_eq!(
            eager_scores_per_token_layer(&a, 2048.0, 2.0),
            5.0 * 32.0 * 2048.0
        );
    }

    #[test]
    fn frozen_linears_save_less_than_full_fine_tuning() {
        let a = llama31_8b();
        let on = |t| Trained::Lora(adapters(&a, &t), 16);
        let lora = saved_per_token_layer(&a, MIXED, on(LoraTargets::AllLinear));
        let qv = saved_per_token_layer(&a, MIXED, on(LoraTargets::Default));
        let full = saved_per_token_layer(&a, MIXED, Trained::All);
        assert!(qv < lora && lora < full, "{qv} {lora} {full}");
    }

    #[test]
    fn checkpointing_orders_memory() {
        let a = llama31_8b();
        let f =
            |c| training_activations(&a, 4096.0, 4096.0, MIXED, Trained::All, Attention::Eager, c);
        assert!(f(Checkpointing::Full).0 < f(Checkpointing::Selective).0);
        assert!(f(Checkpointing::Selective).0 < f(Checkpointing::None).0);
        // Full: 32 fp32 layer inputs of 4096 × 4096 × 4 B = 2 GiB, plus the final norm; one
        // layer is recomputed at a time.
        let last = 4096.0 * final_norm_per_token(&a, MIXED, Trained::All);
        assert_eq!(
            f(Checkpointing::Full).0,
            32.0 * 4096.0 * 4096.0 * 4.0 + last
        );
        assert_eq!(
            f(Checkpointing::Full).1,
            4096.0
                * (saved_per_token_layer(&a, MIXED, Trained::All)
                    + eager_scores_per_token_layer(&a, 4096.0, 2.0))
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
