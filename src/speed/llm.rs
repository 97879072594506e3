//! LLM speed: decode and prefill tokens per second for inference, tokens per second for training.
//!
//! Decode is memory-bound: each step reads the weights it multiplies (MoE: only the routed
//! experts in use) and the KV cache at the context length, from VRAM for what sits on the GPU
//! and from system RAM for what llama.cpp left on the CPU (`memory::placement`). Prefill is
//! compute-bound: 2 FLOPs per active parameter per token plus attention; with a partial offload
//! llama.cpp runs the CPU-resident weights' matrix multiplications on the GPU for batches of 32
//! tokens and more (ggml-cuda `ggml_backend_cuda_device_offload_op`, `min_batch_size = 32`), so
//! each ubatch also copies those weights over PCIe.

use super::Speed;
use crate::memory::placement;
use crate::types::options::{Checkpointing, Engine, Method, Offload, Task};
use crate::types::workload::Workload;

/// Share of the card's peak bandwidth llama.cpp's CUDA decode streams weights and KV cache at,
/// beside the fixed cost per layer below. Fitted with [`LAYER_OVERHEAD_S`] on the full-GPU
/// decode rows of `tests/data/speed-llama-cpp.jsonl` (RTX 4080, 4090 at 32k context, RTX 2080):
/// the large reads of sp07 run at 85% of the 4090's 1008 GB/s.
pub const GPU_DECODE_EFFICIENCY: f64 = 0.85;

/// Fixed time per repeating layer and decoded token: one token's layer is a dozen small kernels
/// (norms, rope, attention, the MLP matmuls; ggml-cuda replays them as a CUDA graph, which removes
/// the CPU launch cost but not the GPU's per-kernel start and drain). It is why small models
/// reach a lower share of bandwidth than large ones (sp11, sp14: 3-4B models at 60% on the
/// RTX 2080). Fitted on the same rows as [`GPU_DECODE_EFFICIENCY`].
pub const LAYER_OVERHEAD_S: f64 = 45e-6;

/// The same for a MoE layer, which adds the router matmul, softmax/top-k, and the expert
/// matmuls gathered by id (`ggml_mul_mat_id`): fitted on sp08 (Qwen3-30B-A3B Q4_0 on an RTX
/// 4090, 162 tokens/s where its 1.8 GB of active weights would allow 480).
pub const MOE_LAYER_OVERHEAD_S: f64 = 85e-6;

/// Share of the host RAM's theoretical bandwidth the CPU side of a llama.cpp split reads at
/// (ggml-cpu's quantized dot products; compute as much as memory on a 10-core host): fitted on
/// the split and experts-on-CPU rows of `tests/data/speed-llama-cpp.jsonl` (sp15-sp18, one
/// host: i9-10900X, quad-channel DDR4, 44-45% in each row). Held out
/// (`tests/data/speed-held-out.jsonl`, never fitted on): a dual-channel DDR4-2400 i7-8700 reads
/// a larger share, so its split and CPU-only rows come out 12-30% low (median -25%); a
/// dual-channel desktop is likely faster than this estimate.
pub const HOST_DECODE_EFFICIENCY: f64 = 0.45;

/// Prefill throughput relative to the card's dense fp16 TFLOPS (fp32 accumulate). Near 1 on
/// GeForce cards although their fp32-accumulate fp16 rate is a quarter of their int8 rate:
/// llama.cpp's quantized matmul (MMQ) runs on int8 tensor cores (PR 7676) but spends part of
/// each tile unpacking the quantized blocks. Median of the pp rows of
/// `tests/data/speed-llama-cpp.jsonl` (Q4_0 and IQ4_XS at 0.95, Q4_K_M 1.06, Q6_K and Q2_K
/// 0.7: their blocks take more unpacking).
pub const PREFILL_EFFICIENCY_QUANTIZED: f64 = 0.9;
/// The same for 16-bit weights (cuBLAS fp16 GEMM).
pub const PREFILL_EFFICIENCY_16BIT: f64 = 0.6;

/// Decode efficiency of PyTorch engines. transformers `generate` runs one Python step per token
/// with many small kernels; vLLM uses CUDA graphs and paged attention. [derived: vLLM's own
/// benchmarks reach 60-75% of bandwidth at batch 1; HF eager decoding about half of that]
pub const TRANSFORMERS_DECODE_EFFICIENCY: f64 = 0.35;
pub const VLLM_DECODE_EFFICIENCY: f64 = 0.65;

/// Model FLOPs utilisation of training on one GPU (bf16, PyTorch): 40%, the middle of what
/// Megatron-LM and torchtitan report for dense models (arXiv 2104.04473 Table 1: 44-52% on
/// A100 clusters; single consumer cards reach less). [derived]
pub const TRAINING_MFU: f64 = 0.40;

/// Speed of an LLM workload.
pub fn speed(w: &Workload) -> Speed {
    match w.run.task {
        Task::Training => training(w),
        _ => inference(w),
    }
}

/// FLOPs of one token's forward pass at `ctx` tokens of context: 2 per active parameter outside
/// the embedding, plus QKᵀ and AV (`4 · layers · q_dim · ctx`).
fn forward_flops(w: &Workload, ctx: f64) -> f64 {
    let a = &w.model;
    2.0 * (a.active_params() - a.embedding_params()).max(0.0)
        + 4.0 * f64::from(a.layers) * a.q_dim() * ctx
}

/// llama.cpp's fixed time per decode step: [`LAYER_OVERHEAD_S`] per dense layer,
/// [`MOE_LAYER_OVERHEAD_S`] per MoE layer.
fn layer_overhead(a: &crate::types::arch::ModelArch) -> f64 {
    let moe = a.moe_layers();
    let moe_n = f64::from(moe.end - moe.start);
    (f64::from(a.layers) - moe_n) * LAYER_OVERHEAD_S + moe_n * MOE_LAYER_OVERHEAD_S
}

fn inference(w: &Workload) -> Speed {
    let r = &w.run;
    let g = &w.gpu.speed;
    let a = &w.model;
    let n = f64::from(w.gpu.count.max(1));
    if g.bandwidth_gbs <= 0.0 {
        return Speed {
            basis: "speed unknown: the card has no bandwidth figure (give gpu.preset)".into(),
            ..Default::default()
        };
    }
    let batch = f64::from(r.batch.max(1));
    let gpu_bw = g.bandwidth_gbs * 1e9 * n;
    let host_bw = w.gpu.host.ram_gbps * 1e9 * HOST_DECODE_EFFICIENCY;
    let (gpu_read, host_read, host_weights, eff, overhead) = if r.engine == Engine::LlamaCpp {
        let s = placement::split(w);
        // The embedding is one row per token, not a whole read.
        let host_w = s.host_weights - w.weight_bytes().host;
        (
            s.gpu_weights_read + s.gpu_kv,
            s.host_weights_read + s.host_kv,
            host_w.max(0.0),
            GPU_DECODE_EFFICIENCY,
            layer_overhead(a),
        )
    } else {
        let active = a.active_params() / a.params.max(1.0);
        let kv = crate::memory::kv_cache::kv_cache_bytes(
            a, r.batch, r.seq, r.kv_cache, r.engine, r.ubatch,
        );
        let eff = if r.engine == Engine::Vllm {
            VLLM_DECODE_EFFICIENCY
        } else {
            TRANSFORMERS_DECODE_EFFICIENCY
        };
        (w.weight_bytes().gpu * active + kv, 0.0, 0.0, eff, 0.0)
    };
    let tflops = g.fp16_tflops.map(|t| t * 1e12 * n);
    let quantized = r.weights.is_quantized() || r.weights.is_gguf();
    let prefill_eff = if quantized {
        PREFILL_EFFICIENCY_QUANTIZED
    } else {
        PREFILL_EFFICIENCY_16BIT
    };
    // One decode step: memory time of both sides, or compute time at large batches.
    let step_memory = gpu_read / (gpu_bw * eff) + host_read / host_bw + overhead;
    let step_compute = tflops.map_or(0.0, |t| {
        batch * forward_flops(w, f64::from(r.seq)) / (t * prefill_eff)
    });
    let decode = batch / step_memory.max(step_compute).max(1e-9);
    // Prefill: one ubatch of the prompt at half the prompt's context on average.
    let prompt = f64::from(r.prompt.max(1));
    let ub = if r.engine == Engine::LlamaCpp {
        f64::from(r.ubatch).min(prompt)
    } else {
        prompt * batch
    };
    let prefill = tflops.map(|t| {
        let compute = ub * forward_flops(w, prompt / 2.0) / (t * prefill_eff);
        let pcie = if ub >= 32.0 && host_weights > 0.0 && g.pcie_gbs > 0.0 {
            host_weights / (g.pcie_gbs * 1e9)
        } else if host_weights > 0.0 {
            // Small batches run the CPU layers on the CPU: bounded by reading them.
            host_weights / host_bw
        } else {
            0.0
        };
        ub / (compute + pcie)
    });
    let mut basis = format!(
        "decode at {} tokens of context, batch {}: {:.1} GB read from VRAM at {:.0}% of {:.0} GB/s",
        r.seq,
        r.batch,
        gpu_read / 1e9,
        100.0 * eff,
        g.bandwidth_gbs * n
    );
    if overhead > 0.0 {
        basis.push_str(&format!(
            " + {:.1} ms of per-layer kernel overhead",
            overhead * 1e3
        ));
    }
    if host_read > 0.0 {
        basis.push_str(&format!(
            " + {:.1} GB from system RAM at {:.0}% of {:.1} GB/s ({})",
            host_read / 1e9,
            100.0 * HOST_DECODE_EFFICIENCY,
            w.gpu.host.ram_gbps,
            w.gpu.host.source
        ));
    }
    match g.fp16_tflops {
        Some(t) => {
            basis.push_str(&format!("; prefill from FLOPs at {:.0} fp16 TFLOPS", t * n));
            if host_weights > 0.0 {
                basis.push_str(&format!(
                    " + {:.1} GB of CPU-side weights over PCIe ({:.0} GB/s) per {}-token ubatch",
                    host_weights / 1e9,
                    g.pcie_gbs,
                    ub
                ));
            }
        }
        None => basis.push_str("; prefill unknown: the card's preset has no fp16_tflops"),
    }
    Speed {
        decode_tokens_per_s: Some(decode),
        prefill_tokens_per_s: prefill,
        basis,
        ..Default::default()
    }
}

/// Training tokens per second: 6 FLOPs per parameter per token (forward 2, backward 4; adapters
/// skip the weight gradients: 4), plus one more forward (2) with full recomputation, over the
/// card's fp16 peak at [`TRAINING_MFU`]; optimizer offload adds the states' PCIe round trip
/// per step, parameter offload the weights' every pass (ZeRO-Offload, arXiv 2101.06840).
fn training(w: &Workload) -> Speed {
    let r = &w.run;
    let a = &w.model;
    let g = &w.gpu.speed;
    let n = f64::from(w.gpu.count.max(1));
    let Some(tflops) = g.fp16_tflops else {
        return Speed {
            basis: "training speed unknown: the card's preset has no fp16_tflops".into(),
            ..Default::default()
        };
    };
    let per_param = match r.method {
        Method::Full => 6.0,
        _ => 4.0,
    } + if r.checkpointing == Checkpointing::Full {
        2.0
    } else {
        0.0
    };
    let tokens = f64::from(r.batch) * f64::from(r.seq) * f64::from(r.grad_accum) * n;
    let flops = tokens
        * (per_param * a.active_params()
            + 6.0 * f64::from(a.layers) * a.q_dim() * f64::from(r.seq));
    let compute = flops / (tflops * 1e12 * n * TRAINING_MFU);
    let pcie = g.pcie_gbs.max(0.1) * 1e9;
    let offload = match r.offload {
        Offload::None => 0.0,
        // fp32 gradients down, fp32 weights up, once per optimizer step.
        Offload::Optimizer => 8.0 * a.params / n / pcie,
        // + 16-bit weights streamed in for forward and backward of every micro-batch.
        Offload::OptimizerParams => {
            8.0 * a.params / n / pcie + 4.0 * a.params * f64::from(r.grad_accum) / n / pcie
        }
    };
    let step = compute + offload;
    Speed {
        seconds_per_step: Some(step),
        training_tokens_per_s: Some(tokens / step),
        basis: format!(
            "{per_param:.0}·params FLOPs per token at {:.0}% of {:.0} fp16 TFLOPS{}",
            100.0 * TRAINING_MFU,
            tflops * n,
            if offload > 0.0 {
                format!(" + {offload:.2} s of offload traffic per step over PCIe")
            } else {
                String::new()
            }
        ),
        ..Default::default()
    }
}
