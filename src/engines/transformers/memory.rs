//! transformers' memory at inference (`generate`), and AutoAWQ's, which runs on it.

use crate::memory::activations::inference_peak;
use crate::memory::breakdown::{Breakdown, ComponentId, Layer};
use crate::memory::overhead;
use crate::memory::weights::weight_bytes;
use crate::types::arch::ModelArch;
use crate::types::options::Engine;
use crate::types::workload::Run;

/// AutoAWQ `from_quantized(max_seq_len=2048)`: the fused layers' cache length.
const AUTOAWQ_MAX_SEQ_LEN: u32 = 2048;

/// Tokens a sequence keeps in its KV cache: AutoAWQ's fused layers keep a rolling cache of
/// `max_seq_len` tokens (2048 by default in `from_quantized`; `WindowedCache` rolls once a
/// sequence passes it); every other engine the whole sequence.
pub fn cached_tokens(r: &Run) -> u32 {
    if r.engine == Engine::AutoAwq {
        r.seq.min(AUTOAWQ_MAX_SEQ_LEN)
    } else {
        r.seq
    }
}

/// transformers `generate` and AutoAWQ: KV cache for batch × seq, the prefill's largest
/// transient, and the logits. transformers ≥ 4.45 computes prefill logits for the last token
/// only (`logits_to_keep`); AutoAWQ's benchmark (transformers 4.35) computes them for the whole
/// prompt and upcasts with `.float()` (2 + 4 bytes per entry).
pub fn breakdown(b: &mut Breakdown, a: &ModelArch, r: &Run, kv: f64, n: f64, weights: f64) {
    b.add(ComponentId::KvCache, "KV cache", kv, Layer::Tensor);
    let batch = f64::from(r.batch);
    let act = inference_peak(a, batch, f64::from(r.prompt), r.attention) / n;
    b.add(
        ComponentId::Activations,
        "Activations (prefill)",
        act,
        Layer::Tensor,
    );
    let logit_tokens = if r.engine == Engine::AutoAwq {
        batch * f64::from(r.prompt)
    } else {
        batch
    };
    let logits = logit_tokens * f64::from(a.vocab) * 6.0 / n;
    b.add(ComponentId::Logits, "Logits", logits, Layer::Tensor);
    if r.engine == Engine::AutoAwq {
        // AutoAWQ's `fuse_layers` builds one QKV layer by concatenating the q, k and v packed
        // weights (`awq/modules/fused`, `fuse_qkv`: torch.cat of qweight/qzeros/scales), while the
        // original projections stay referenced: the QKV weights are held twice. Matches the
        // short-prompt rows of its benchmark (Vicuna-7B +0.8 GiB, Llama-2-13B +1.6, CodeLlama-34B
        // +2.0, Mistral-7B +0.45 over weights alone).
        let qkv = f64::from(a.layers) * f64::from(a.hidden) * (a.q_dim() + 2.0 * a.kv_dim());
        let per_param = weight_bytes(a, r.weights, r.engine).gpu / a.params.max(1.0);
        b.add(
            ComponentId::FusedQkv,
            "Fused QKV copy (AutoAWQ)",
            qkv * per_param / n,
            Layer::Tensor,
        );
    }
    let slack = overhead::allocator_slack(weights, act + logits + kv);
    overhead::add_torch_overheads(
        b,
        slack,
        overhead::context_bytes(r.engine),
        r.other_processes_bytes,
    );
}
