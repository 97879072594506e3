//! LLM training: weights, gradients, optimizer states, activations, logits.

use super::breakdown::{Breakdown, Layer};
use super::overhead;
use super::workload::Workload;

/// Per-GPU estimate of a training workload.
pub fn estimate(w: &Workload) -> Breakdown {
    let a = &w.model;
    let mut b = Breakdown::new(w.gpu.vram_bytes);
    b.add("weights", "Model weights", a.params * 2.0, Layer::Tensor);
    b.add("cuda_context", "CUDA context", overhead::context_bytes(w.run.engine), Layer::Process);
    b
}
