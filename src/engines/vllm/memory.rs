//! vLLM's memory: what `vllm serve` reserves up front and how it fills it.

use crate::memory::activations::inference_peak;
use crate::memory::breakdown::{Breakdown, ComponentId, Layer};
use crate::memory::overhead;
use crate::types::arch::ModelArch;
use crate::types::message::Message;
use crate::types::options::Attention;
use crate::types::workload::Run;
use crate::units::GIB;

/// vLLM's sampler keeps fp32 logits for up to `max_num_seqs` (256) sequences during the profile
/// run, plus a probability copy (`vllm/v1/sample/sampler.py`).
const VLLM_MAX_NUM_SEQS: f64 = 256.0;

/// vLLM's non-torch memory (NCCL, cuBLAS workspaces, custom all-reduce) on one GPU: 1.79 GiB in
/// the profiling log of vLLM PR #10511 (reference row gt009).
pub const VLLM_NON_TORCH_BYTES: f64 = 1.79 * GIB;

/// vLLM: the engine takes `gpu_memory_utilization × total` up front. Inside it: weights, the
/// profile run's activation peak, non-torch memory, and a KV pool made of all the rest
/// (`gpu_worker.determine_available_memory`; block bytes as in `memory::kv_cache`).
pub fn breakdown(b: &mut Breakdown, a: &ModelArch, r: &Run, needed_kv: f64, n: f64) {
    // The profile run is one batch of max_num_batched_tokens, which defaults to max_model_len
    // (at least 2048) without chunked prefill.
    let tokens = f64::from(r.seq).max(2048.0);
    let act = (inference_peak(a, 1.0, tokens, Attention::Flash)
        + 2.0 * VLLM_MAX_NUM_SEQS * f64::from(a.vocab) * 4.0)
        / n;
    b.add(
        ComponentId::Activations,
        "Activations (profile run)",
        act,
        Layer::Tensor,
    );
    let budget = (r.gpu_memory_utilization * b.capacity_bytes as f64).round();
    let non_torch = VLLM_NON_TORCH_BYTES.round();
    // From the rounded components already added, so the parts add up to the budget exactly.
    let pool = budget - b.peak.tensors_bytes as f64 - non_torch;
    b.add(
        ComponentId::KvCache,
        "KV cache pool (pre-allocated)",
        pool.max(needed_kv),
        Layer::Tensor,
    );
    b.add(
        ComponentId::Workspace,
        "Non-torch memory (NCCL, cuBLAS)",
        non_torch,
        Layer::Process,
    );
    b.add(
        ComponentId::CudaContext,
        "CUDA context and kernels",
        overhead::TORCH_CONTEXT_BYTES * 0.5,
        Layer::Process,
    );
    if pool < needed_kv {
        b.warn(
            Message::new("warn.vllm.kv_short")
                .bytes("pool", pool.max(0.0) as u64)
                .int("batch", r.batch)
                .int("seq", r.seq)
                .bytes("need", needed_kv as u64),
        );
    } else {
        let per_seq = needed_kv / f64::from(r.batch.max(1));
        b.warn(
            Message::new("warn.vllm.preallocates")
                .fixed("percent", 100.0 * r.gpu_memory_utilization, 0)
                .fixed("fits", (pool / per_seq).floor(), 0)
                .int("seq", r.seq),
        );
    }
}
