//! LoRA adapters (Hu et al. 2021, arXiv 2106.09685): each adapted `d_in → d_out` linear layer
//! gets `A: r×d_in` and `B: d_out×r`, i.e. `r·(d_in + d_out)` trainable parameters.

use crate::types::arch::{Mlp, ModelArch};
use crate::types::options::LoraTargets;

/// Trainable LoRA parameters for rank `r` on `targets`.
pub fn lora_params(a: &ModelArch, r: u32, targets: LoraTargets) -> f64 {
    let h = f64::from(a.hidden);
    let q = a.q_dim();
    let kv = a.kv_dim();
    let i = f64::from(a.intermediate);
    let qv = (h + q) + (h + kv);
    let attn = qv + (h + kv) + (q + h);
    let mlp = match a.mlp {
        Mlp::Gated => 3.0 * (h + i),
        Mlp::Plain => 2.0 * (h + i),
    };
    let per_layer = match targets {
        LoraTargets::Qv => qv,
        LoraTargets::Attention => attn,
        LoraTargets::AllLinear => attn + mlp,
    };
    f64::from(r) * f64::from(a.layers) * per_layer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::arch::tests::llama31_8b;

    #[test]
    fn llama_8b_rank_16_all_linear() {
        // PEFT prints 41,943,040 trainable parameters for Llama-3-8B, r=16, all linear layers:
        // 16 × 32 × [(4096+4096)+(4096+1024)·2+(4096+4096) + 3·(4096+14336)].
        assert_eq!(
            lora_params(&llama31_8b(), 16, LoraTargets::AllLinear),
            41_943_040.0
        );
        assert_eq!(
            lora_params(&llama31_8b(), 8, LoraTargets::Qv),
            8.0 * 32.0 * (8192.0 + 5120.0)
        );
    }
}
