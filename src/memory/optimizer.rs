//! Optimizer state bytes per trainable parameter, and the temporaries of its step.

use crate::types::options::{Optimizer, OptimizerStep, Precision};

/// Bytes of optimizer state per trainable parameter.
///
/// AdamW keeps two moments (m, v) in the parameter dtype: fp32 for fp32 and mixed-precision
/// master weights (HF "model memory anatomy": 8 bytes), bf16 for pure-bf16 training. bitsandbytes
/// 8-bit AdamW keeps both moments in 8 bits with one fp32 absmax per moment and 256-value block
/// (bitsandbytes `optim/optimizer.py` `Optimizer2State.init_state`: `blocksize = 256`,
/// `absmax1`/`absmax2`; block-wise quantization paper arXiv 2110.02861): 2 + 8/256 bytes.
/// Tensors under `min_8bit_size` (4096 elements: norms, biases) keep fp32 moments; they are a
/// negligible share of the parameters and charged as 8-bit here.
/// SGD with momentum and Lion keep one moment. Adafactor (Shazeer & Stern 2018) keeps factored
/// row and column second moments, about `(rows + cols)/(rows·cols)` of a full moment: we charge
/// 2/hidden of a 4-byte moment per parameter.
pub fn state_bytes(opt: Optimizer, precision: Precision, hidden: u32) -> f64 {
    let moment = match precision {
        Precision::Bf16 => 2.0,
        _ => 4.0,
    };
    match opt {
        Optimizer::AdamW => 2.0 * moment,
        Optimizer::AdamW8bit => 2.0 + 8.0 / 256.0,
        Optimizer::Sgd | Optimizer::Lion => moment,
        Optimizer::Adafactor => 4.0 * 2.0 / f64::from(hidden.max(1)),
    }
}

/// Bytes of the optimizer step's temporaries for `params` trainable parameters whose largest
/// tensor has `largest` elements (PyTorch's AdamW, `torch/optim/adam.py`):
/// - `foreach` (`_multi_tensor_adam`, the CUDA default since 2.0) computes
///   `exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)` for the whole parameter group at
///   once: one extra copy of a moment for every parameter;
/// - `for-loop` (`_single_tensor_adam`) makes `denom = (exp_avg_sq.sqrt() / bc2).add_(eps)` per
///   parameter: the `sqrt` output and the quotient, two of one parameter's size;
/// - `fused` (`_fused_adam` → `torch._fused_adamw_`) updates in place: none.
///
/// bitsandbytes, Adafactor, SGD and Lion update in place per tensor.
pub fn step_temp_bytes(
    opt: Optimizer,
    precision: Precision,
    step: OptimizerStep,
    params: f64,
    largest: f64,
) -> f64 {
    let moment = match precision {
        Precision::Bf16 => 2.0,
        _ => 4.0,
    };
    match (opt, step) {
        (Optimizer::AdamW, OptimizerStep::Foreach) => params * moment,
        (Optimizer::AdamW, OptimizerStep::ForLoop) => 2.0 * largest.min(params) * moment,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_adamw_is_hf_anatomy_8_bytes() {
        assert_eq!(
            state_bytes(Optimizer::AdamW, Precision::Bf16Mixed, 4096),
            8.0
        );
        assert_eq!(state_bytes(Optimizer::AdamW, Precision::Bf16, 4096), 4.0);
        // bitsandbytes: two uint8 moments and two fp32 absmax per 256-value block.
        assert_eq!(
            state_bytes(Optimizer::AdamW8bit, Precision::Fp32, 4096),
            2.0 + 2.0 * 4.0 / 256.0
        );
        assert_eq!(state_bytes(Optimizer::Sgd, Precision::Fp32, 4096), 4.0);
        assert!(state_bytes(Optimizer::Adafactor, Precision::Fp32, 4096) < 0.01);
    }
}
