//! The precision a run's matrix multiplications execute in, and the card's tensor rate for it.
//!
//! A card's presets carry one dense rate per input precision (`presets/gpus.toml`:
//! `fp16_tflops`, `fp8_tflops`, `int8_tops`, `fp4_tflops`); a speed estimate takes the one the
//! engine really multiplies in. Where the card's preset lacks that figure, the 16-bit rate
//! stands in, the estimate says so in its basis, and the plan warns ([`fallback_warning`]).

use crate::types::dtype::{GgufFileType, WeightFormat};
use crate::types::gpu::TensorRates;
use crate::types::message::Message;
use crate::types::options::{Engine, Task};
use crate::types::workload::Workload;

/// Input precision of a run's matrix multiplications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatmulPrecision {
    /// fp16 or bf16 inputs, fp32 accumulate.
    Fp16,
    Fp8,
    Int8,
    Fp4,
}

impl MatmulPrecision {
    pub fn name(self) -> &'static str {
        match self {
            MatmulPrecision::Fp16 => "fp16",
            MatmulPrecision::Fp8 => "fp8",
            MatmulPrecision::Int8 => "int8",
            MatmulPrecision::Fp4 => "fp4",
        }
    }

    fn rate(self, r: &TensorRates) -> Option<f64> {
        match self {
            MatmulPrecision::Fp16 => r.fp16_tflops,
            MatmulPrecision::Fp8 => r.fp8_tflops,
            MatmulPrecision::Int8 => r.int8_tops,
            MatmulPrecision::Fp4 => r.fp4_tflops,
        }
    }
}

/// The precision an LLM run's matmuls execute in.
///
/// - llama.cpp with a quantized GGUF type: int8. ggml-cuda `ggml_cuda_should_use_mmq` (mmq.cu)
///   takes the MMQ kernels for every quantized type on Turing and later
///   (`turing_mma_available`); they quantize the activations to q8_1 (`quantize_mmq_q8_1_cuda`)
///   and multiply int8 by int8 on the tensor cores (`mma.cuh`), so the weights are not
///   dequantized to fp16 for these matmuls (batch-1 decode takes the dot-product kernels of
///   mmvq.cu, which are bandwidth-bound and do not use this rate). F16 GGUF files are not an
///   MMQ type: cuBLAS in fp16.
/// - Other engines: fp8 weights on a card with fp8 units multiply in fp8 (vLLM's W8A8 fp8
///   `cutlass_scaled_mm`, sm89 and later; on older cards vLLM's fp8 Marlin kernel dequantizes
///   to 16-bit), compressed-tensors W8A8 in int8 (`cutlass_scaled_mm`, int8 on sm75 and
///   later), NVFP4 in fp4 on a card with fp8 units (`cutlass_scaled_fp4_mm`, Blackwell; the
///   preset of a card without fp4 units has no fp4 figure, and the fallback says so);
///   everything else (AWQ/GPTQ/W4A16 Marlin, bitsandbytes, MXFP4 experts) dequantizes to
///   16-bit before its matmuls.
/// - Training multiplies in 16-bit (mixed or pure bf16/fp16).
pub fn llm(w: &Workload) -> MatmulPrecision {
    let r = &w.run;
    if r.task == Task::Training {
        return MatmulPrecision::Fp16;
    }
    match (r.engine, r.weights) {
        (Engine::LlamaCpp, WeightFormat::Gguf(GgufFileType::F16)) => MatmulPrecision::Fp16,
        (Engine::LlamaCpp, WeightFormat::Gguf(_)) => MatmulPrecision::Int8,
        (Engine::LlamaCpp, _) => MatmulPrecision::Fp16,
        (_, WeightFormat::Fp8) if w.gpu.fp8 => MatmulPrecision::Fp8,
        (_, WeightFormat::W8a8) => MatmulPrecision::Int8,
        (_, WeightFormat::Nvfp4) if w.gpu.fp8 => MatmulPrecision::Fp4,
        _ => MatmulPrecision::Fp16,
    }
}

/// The card's rate for a run, TFLOPS (TOPS for int8).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub tflops: f64,
    /// The precision the rate is of.
    pub used: MatmulPrecision,
    /// The precision the run multiplies in; differs from `used` when the card's preset lacks it.
    pub wanted: MatmulPrecision,
}

impl Rate {
    pub fn fell_back(&self) -> bool {
        self.used != self.wanted
    }

    /// `int8` or `fp16 (the preset has no int8 figure)`, for a speed basis.
    pub fn describe(&self) -> String {
        if self.fell_back() {
            format!(
                "{} (the card's preset has no {} figure)",
                self.used.name(),
                self.wanted.name()
            )
        } else {
            self.used.name().to_string()
        }
    }
}

/// The rate for `wanted`, or the 16-bit rate when the card's preset lacks it; `None` when the
/// preset has no 16-bit rate either.
pub fn rate(rates: &TensorRates, wanted: MatmulPrecision) -> Option<Rate> {
    match wanted.rate(rates) {
        Some(t) => Some(Rate {
            tflops: t,
            used: wanted,
            wanted,
        }),
        None => rates.fp16_tflops.map(|t| Rate {
            tflops: t,
            used: MatmulPrecision::Fp16,
            wanted,
        }),
    }
}

/// The rate an LLM workload's compute-bound speeds use.
pub fn llm_rate(w: &Workload) -> Option<Rate> {
    rate(&w.gpu.speed.tensor, llm(w))
}

/// The plan's warning when a speed is estimated at the 16-bit rate because the card's preset
/// has no figure for the precision the run multiplies in.
pub fn fallback_warning(card: &str, r: &Rate) -> Option<Message> {
    r.fell_back().then(|| {
        Message::new("speed.precision_fallback")
            .text("card", card.to_string())
            .text("wanted", r.wanted.name())
            .text("used", r.used.name())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_precision_falls_back_to_the_16_bit_rate_and_says_so() {
        let rates = TensorRates {
            fp16_tflops: Some(100.0),
            int8_tops: Some(400.0),
            ..Default::default()
        };
        let int8 = rate(&rates, MatmulPrecision::Int8).unwrap();
        assert_eq!((int8.tflops, int8.fell_back()), (400.0, false));
        assert!(fallback_warning("card", &int8).is_none());
        let fp8 = rate(&rates, MatmulPrecision::Fp8).unwrap();
        assert_eq!((fp8.tflops, fp8.used), (100.0, MatmulPrecision::Fp16));
        assert!(
            fp8.describe().contains("no fp8 figure"),
            "{}",
            fp8.describe()
        );
        let m = fallback_warning("card", &fp8).unwrap();
        assert_eq!(m.id, "speed.precision_fallback");
        assert!(rate(&TensorRates::default(), MatmulPrecision::Fp16).is_none());
    }
}
