//! LLM inference: weights, KV cache, and the transient buffers of one forward pass, per engine.

use super::breakdown::{Breakdown, Layer};
use super::kv_cache::kv_cache_bytes;
use super::options::{Attention, Engine};
use super::overhead;
use super::weights::weight_bytes;
use super::workload::Workload;

/// Per-GPU estimate of an inference workload.
pub fn estimate(w: &Workload) -> Breakdown {
    let a = &w.model;
    let r = &w.run;
    let n = f64::from(w.gpu.count.max(1));
    let mut b = Breakdown::new(w.gpu.vram_bytes);
    let wb = weight_bytes(a, r.weights, r.engine);
    b.add("weights", "Model weights", wb.gpu / n, Layer::Tensor);
    let kv = kv_cache_bytes(a, r.batch, r.seq, r.kv_cache, r.engine, r.ubatch) / n;
    b.add("kv_cache", "KV cache", kv, Layer::Tensor);
    let tokens = f64::from(r.batch) * f64::from(r.seq);
    let act = match r.attention {
        Attention::Eager => f64::from(a.heads) * f64::from(r.seq) * tokens * 6.0,
        _ => tokens * f64::from(a.intermediate) * 2.0 * 3.0,
    };
    b.add("activations", "Activations (prefill)", act / n, Layer::Tensor);
    b.add("allocator_overhead", "Allocator cache", overhead::allocator_slack(wb.gpu / n, act / n), Layer::Allocator);
    b.add("cuda_context", "CUDA context", overhead::context_bytes(r.engine), Layer::Process);
    if r.engine == Engine::Vllm {
        b.warn("vLLM pre-allocates gpu_memory_utilization × total memory");
    }
    b
}
