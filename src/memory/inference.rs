//! LLM inference: weights, KV cache, and the transient buffers of one forward pass, per engine;
//! each engine's own part is `engines::<engine>::memory::breakdown`.

use super::breakdown::{Breakdown, ComponentId, Layer};
use super::kv_cache::{kv_cache_bytes, state_bytes};
use crate::engines::llama_cpp::memory as llama_cpp;
use crate::engines::transformers::memory as transformers;
use crate::engines::vllm::memory as vllm;
use crate::types::options::Engine;
use crate::types::workload::Workload;

/// Per-GPU estimate of an inference workload.
pub fn estimate(w: &Workload) -> Breakdown {
    let a = &w.model;
    let r = &w.run;
    let n = f64::from(w.gpu.count.max(1));
    let mut b = Breakdown::new(w.gpu.vram_bytes);
    if r.engine == Engine::LlamaCpp {
        llama_cpp::breakdown(&mut b, w, n);
        return b;
    }
    let wb = w.weight_bytes();
    b.add(
        ComponentId::Weights,
        "Model weights",
        wb.gpu / n,
        Layer::Tensor,
    );
    let cached = transformers::cached_tokens(r);
    let kv = (kv_cache_bytes(a, r.batch, cached, r.kv_cache, r.engine, r.ubatch)
        + state_bytes(a, r.batch, r.engine))
        / n;
    match r.engine {
        Engine::Vllm => vllm::breakdown(&mut b, a, r, kv, n),
        _ => transformers::breakdown(&mut b, a, r, kv, n, wb.gpu / n),
    }
    b.devices = b.gpu_rows(w.gpu.count);
    b
}
