//! LLM speed: decode and prefill tokens per second for inference, tokens per second for training.
//!
//! Decode is memory-bound: each step reads the weights it multiplies (MoE: only the routed
//! experts in use) and the KV cache at the context length, from VRAM for what sits on the GPU
//! and from system RAM for what llama.cpp left on the CPU (`engines::llama_cpp::memory`). Prefill is
//! compute-bound: 2 FLOPs per active parameter per token plus attention; with a partial offload
//! llama.cpp runs the CPU-resident weights' matrix multiplications on the GPU for batches of 32
//! tokens and more (ggml-cuda `ggml_backend_cuda_device_offload_op`, `min_batch_size = 32`), so
//! each ubatch also copies those weights over PCIe.

use super::Speed;
use super::precision::{self, MatmulPrecision};
use crate::engines::llama_cpp::memory as placement;
use crate::engines::llama_cpp::speed as llama_cpp;
use crate::types::options::{Attention, Checkpointing, Engine, Method, Offload, Precision, Task};
use crate::types::workload::{Run, Workload};

/// Share of the card's peak bandwidth llama.cpp's CUDA decode streams weights and KV cache at,
/// beside its fixed cost per layer (`engines::llama_cpp::speed::LAYER_OVERHEAD_S`, fitted with
/// it; training's memory passes use the same share). Fitted on the full-GPU decode rows of
/// `tests/data/speed-llama-cpp.jsonl` (RTX 4080, 4090 at 32k context, RTX 2080): the large reads of sp07 run at 85% of the 4090's 1008 GB/s.
pub const GPU_DECODE_EFFICIENCY: f64 = 0.85;

/// Share of the host RAM's theoretical bandwidth the CPU side of a llama.cpp split reads at
/// (ggml-cpu's quantized dot products; compute as much as memory on a 10-core host): fitted on
/// the split and experts-on-CPU rows of `tests/data/speed-llama-cpp.jsonl` (sp15-sp18, one
/// host: i9-10900X, quad-channel DDR4, 44-45% in each row). Held out
/// (`tests/data/speed-held-out.jsonl`, never fitted on): a dual-channel DDR4-2400 i7-8700 reads
/// a larger share, so its split and CPU-only rows come out 12-30% low (median -25%); a
/// dual-channel desktop is likely faster than this estimate.
pub const HOST_DECODE_EFFICIENCY: f64 = 0.45;

/// Prefill throughput, as llama.cpp's MMQ (`engines::llama_cpp::speed::PREFILL_EFFICIENCY_MMQ`),
/// of other quantized weights that are dequantized to 16-bit before their matmuls
/// (AWQ/GPTQ Marlin kernels, bitsandbytes), relative to the 16-bit rate: the value the MMQ rows
/// gave against the 16-bit rate before MMQ was counted at its int8 rate [derived: no rows].
pub const PREFILL_EFFICIENCY_QUANTIZED: f64 = 0.9;
/// The same for 16-bit weights (cuBLAS fp16 GEMM), and for fp8, int8 and fp4 GEMMs relative to
/// their own rate (the same libraries' GEMMs) [derived: no rows of those precisions yet].
pub const PREFILL_EFFICIENCY_16BIT: f64 = 0.6;

/// Share of the card's 16-bit tensor rate (`fp16_tflops`: the data sheet's dense rate with
/// fp32 accumulate, or the measured matmul rate where lower, `types::gpu::Gpu::sustained_tflops`)
/// a training step's matrix multiplications run at, counting every FLOP the step does (the
/// recomputation of checkpointed layers included: llm-foundry's "HFU", not its MFU). The median
/// of what the in-sample rows of `tests/data/speed-training.jsonl` imply under [`training`]'s
/// count of FLOPs and memory passes: torchtune's README table on one RTX 4090 (Llama 3.1 8B full
/// 64%, QLoRA 72%, LoRA 88%; torch.compile on) and llm-foundry's MPT-7B benchmarks on 8
/// A100-80GB (of the 264.5 TFLOPS an A100 SXM4 80GB measures: 74% at 2k tokens, 80% at 4k and
/// 89% at 1k with checkpointing). Held out (`tests/data/speed-training-held-out.jsonl`): the
/// A100-40GB rows imply 82-86% and torchtune's compiled Llama 3.2 3B on an A100 68-81%, but the
/// same run without torch.compile 58%, and the H100 rows 56-69% of its measured 797.5 TFLOPS,
/// so an uncompiled run or an H100 comes out up to a third faster than measured.
pub const TRAINING_EFFICIENCY: f64 = 0.77;

/// Speed of an LLM workload.
pub fn speed(w: &Workload) -> Speed {
    match w.run.task {
        Task::Training => training(w),
        _ => inference(w),
    }
}

/// FLOPs of one token's forward pass at `ctx` tokens of context: 2 per active parameter of a
/// matrix multiplication ([`matmul_params`]), plus QKᵀ and AV (`4 · layers · q_dim · ctx`).
fn forward_flops(w: &Workload, ctx: f64) -> f64 {
    let a = &w.model;
    2.0 * matmul_params(a) + 4.0 * f64::from(a.layers) * a.q_dim() * ctx
}

/// Active parameters a token is multiplied by: the token embedding is a lookup, not a matrix
/// multiplication, but the output head is one, and a tied head is the embedding itself (Kaplan
/// et al. 2020, arXiv 2001.08361 §2.1: C ≈ 2N per token forward, N without the embedding).
fn matmul_params(a: &crate::types::arch::ModelArch) -> f64 {
    let head = if a.tied_embeddings {
        a.embedding_params()
    } else {
        0.0
    };
    (a.active_params() - a.embedding_params() + head).max(0.0)
}

/// Prefill efficiency of the matmuls at `rate`: llama.cpp's MMQ kernels against the int8 rate;
/// where the card's preset has no int8 figure, the estimate takes the 16-bit rate as if the
/// weights were dequantized for cuBLAS (what ggml-cuda does where MMQ is not taken,
/// `ggml_cuda_op_mul_mat_cublas`); other quantized weights dequantize to 16-bit.
fn prefill_efficiency(w: &Workload, rate: &precision::Rate) -> f64 {
    match (rate.used, w.run.engine) {
        (MatmulPrecision::Int8, Engine::LlamaCpp) => llama_cpp::PREFILL_EFFICIENCY_MMQ,
        (MatmulPrecision::Fp16, _) if w.run.weights.is_quantized() => PREFILL_EFFICIENCY_QUANTIZED,
        _ => PREFILL_EFFICIENCY_16BIT,
    }
}

fn inference(w: &Workload) -> Speed {
    inference_spilling(w, 0.0)
}

/// Decode tokens per second of an inference run of which the share `spilled` (0 to 1) of its
/// GPU memory does not fit the card but runs anyway from shared system memory, or `None` when
/// the card's figures are unknown. Windows' CUDA driver places what does not fit in system RAM
/// instead of failing (NVIDIA driver 536.40 and later, "CUDA - Sysmem Fallback Policy", default
/// "Prefer Sysmem Fallback": NVIDIA support answer 5490); the GPU then reads that share of what
/// a decode step reads (weights and KV cache) over PCIe every token, at the link's rate
/// (`types::gpu::pcie_gbs`) instead of VRAM's. Which allocations the driver moves is not known:
/// the spilled share of the memory is taken as the same share of the bytes each token reads.
pub fn spilled_decode_tokens_per_s(w: &Workload, spilled: f64) -> Option<f64> {
    if w.gpu.speed.pcie_gbs <= 0.0 {
        return None;
    }
    inference_spilling(w, spilled.clamp(0.0, 1.0)).decode_tokens_per_s
}

fn inference_spilling(w: &Workload, spilled: f64) -> Speed {
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
            llama_cpp::layer_overhead(a),
        )
    } else {
        let active = a.active_params() / a.params.max(1.0);
        let kv = crate::memory::kv_cache::kv_cache_bytes(
            a, r.batch, r.seq, r.kv_cache, r.engine, r.ubatch,
        );
        let eff = if r.engine == Engine::Vllm {
            crate::engines::vllm::speed::DECODE_EFFICIENCY
        } else {
            crate::engines::transformers::speed::DECODE_EFFICIENCY
        };
        (w.weight_bytes().gpu * active + kv, 0.0, 0.0, eff, 0.0)
    };
    let rate = precision::llm_rate(w);
    let tflops = rate.map(|r| r.tflops * 1e12 * n);
    let prefill_eff = rate.map_or(PREFILL_EFFICIENCY_16BIT, |p| prefill_efficiency(w, &p));
    // One decode step: memory time of both sides, or compute time at large batches.
    let spilled = spilled * gpu_read;
    let step_memory = (gpu_read - spilled) / (gpu_bw * eff)
        + spilled / (g.pcie_gbs.max(0.1) * 1e9)
        + host_read / host_bw
        + overhead;
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
    match rate {
        Some(p) => {
            basis.push_str(&format!(
                "; prefill from FLOPs at {:.0} {} T{}",
                p.tflops * n,
                p.describe(),
                if p.used == MatmulPrecision::Int8 {
                    "OPS"
                } else {
                    "FLOPS"
                }
            ));
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

/// Training tokens per second and seconds per optimizer step. A micro-batch costs
/// - its FLOPs, per token: 2 per matmul parameter for the forward, 2 for the activation
///   gradients, 2 more for the weight gradients of a full fine-tune (adapters have none worth
///   counting), 2 more when checkpointed layers run their forward again (Korthikanti et al.
///   2022, arXiv 2205.05198 §4: full recomputation costs one forward); attention's QKᵀ and AV
///   (causal: half the square) 2 · layers · q_dim · seq forward, twice that backward, and once
///   more recomputed with full or selective checkpointing (selective recomputes only this core
///   attention, §5); over the card's rate at [`TRAINING_EFFICIENCY`];
/// - with QLoRA, the dequantization of the 4-bit base weights before each of their matmuls
///   (bitsandbytes `autograd/_functions.py` `MatMul4Bit`: `F.dequantize_4bit` in forward and
///   again in backward; recomputed layers dequantize once more): the packed weights read and
///   a 16-bit copy written, at [`GPU_DECODE_EFFICIENCY`] of the bandwidth;
///
/// and an optimizer step adds, once per `grad_accum` micro-batches, its pass over the weights,
/// gradients and states on the GPU (read and write weights and states, read gradients; the
/// GPU's share under ZeRO-1 and up). With optimizer offload the step runs on the CPU instead:
/// the 16-bit gradients go down and the 16-bit parameters come back over PCIe, 4 bytes per
/// trained parameter (ZeRO-Offload, arXiv 2101.06840 §4.1: 2M each way), and the CPU passes
/// over the fp32 master weights, states and gradients at the host's RAM bandwidth (read and
/// write weights and states, read gradients) at [`HOST_DECODE_EFFICIENCY`] [derived]. With
/// parameter offload every micro-batch also copies its shard of the weights to the GPU for
/// the forward and again for the backward (the recompute of a checkpointed layer uses the
/// copy its backward gathers), 16-bit for full fine-tuning and the frozen base as loaded for
/// LoRA/QLoRA, added to the micro-batch's time: DeepSpeed prefetches only
/// `stage3_prefetch_bucket_size` = 5e7 elements ahead (deepspeed/runtime/zero/config.py), and
/// on cards without peer-to-peer the all-gather shares the PCIe link with these copies
/// [derived: not overlapped]. Several GPUs each run their
/// micro-batches at the same rate; communication is not modelled (it is inside the measured
/// rates of the llm-foundry rows, which train with FSDP).
/// A micro-batch's tokens: (computed, the samples' own among them, attention's span per token).
/// - unpacked: rows padded to the batch's longest sample (transformers
///   `DataCollatorWithPadding`, TRL `DataCollatorForLanguageModeling` without `padding_free`),
///   taken as `seq` when a batch holds several [derived: an upper bound; `group_by_length`
///   lowers it]; a batch of one is its own sample, unpadded;
/// - packed: `batch` rows of `seq` tokens of whole samples, no padding (TRL `pack_dataset`,
///   trl/data_utils.py, best-fit decreasing; torchtune `PackedDataset`). Flash attention
///   attends within each sample (varlen over the `position_ids`), the others over the whole
///   packed row (`memory::training::attention_row_tokens`) with a mask.
fn batch_tokens(r: &Run) -> (f64, f64, f64) {
    let (b, s) = (f64::from(r.batch), f64::from(r.seq));
    let mean = f64::from(r.mean_sample_tokens());
    match (r.packing, r.batch > 1) {
        (true, _) if r.attention == Attention::Flash => (b * s, b * s, mean),
        (true, _) => (
            b * s,
            b * s,
            crate::memory::training::attention_row_tokens(r),
        ),
        (false, true) => (b * s, b * mean, s),
        (false, false) => (mean, mean, mean),
    }
}

fn training(w: &Workload) -> Speed {
    let r = &w.run;
    let a = &w.model;
    let g = &w.gpu.speed;
    let n = f64::from(w.gpu.count.max(1));
    let Some(tflops) = g.tensor.fp16_tflops else {
        return Speed {
            basis: "training speed unknown: the card's preset has no fp16_tflops".into(),
            ..Default::default()
        };
    };
    let recompute = r.checkpointing == Checkpointing::Full;
    let per_param = match r.method {
        Method::Full => 6.0,
        _ => 4.0,
    } + if recompute { 2.0 } else { 0.0 };
    let attention_passes = 3.0
        + if r.checkpointing == Checkpointing::None {
            0.0
        } else {
            1.0
        };
    let (micro_tokens, useful_tokens, span) = batch_tokens(r);
    let flops_per_token = per_param * matmul_params(a)
        + attention_passes * 2.0 * f64::from(a.layers) * a.q_dim() * span;
    let rate = tflops * 1e12 * TRAINING_EFFICIENCY;
    let bandwidth = g.bandwidth_gbs.max(1.0) * 1e9 * GPU_DECODE_EFFICIENCY;
    let dequant = if r.method == Method::Qlora {
        let uses = if recompute { 3.0 } else { 2.0 };
        let quantized = (a.params - a.embedding_params() - a.lm_head_params()).max(0.0);
        uses * (w.weight_bytes().gpu + 2.0 * quantized) / bandwidth
    } else {
        0.0
    };
    let micro = micro_tokens * flops_per_token / rate + dequant;
    let pcie = g.pcie_gbs.max(0.1) * 1e9;
    // What this GPU's optimizer steps: every parameter or the adapters, its shard under ZeRO.
    let trained = match r.method {
        Method::Full => a.params,
        _ => crate::memory::lora::adapters(a, &r.lora_targets).params(r.lora_rank),
    } / if r.zero_stage_in_effect() >= 1 {
        n
    } else {
        1.0
    };
    let (optimizer_step, offload) = match r.offload {
        Offload::None => {
            // PEFT keeps adapters, their gradients and states in fp32 (memory::training).
            let (precision, (wb, gb)) = match r.method {
                Method::Full => (
                    crate::memory::training::state_precision(r),
                    crate::memory::training::full_state_bytes(r.precision, r.zero_stage),
                ),
                _ => (Precision::Fp32, (4.0, 4.0)),
            };
            let states = crate::memory::optimizer::state_bytes(r.optimizer, precision, a.hidden);
            (trained * (2.0 * (wb + states) + gb) / bandwidth, 0.0)
        }
        Offload::Optimizer | Offload::OptimizerParams => {
            let host = w.gpu.host.ram_gbps.max(0.1) * 1e9 * HOST_DECODE_EFFICIENCY;
            let states =
                crate::memory::optimizer::state_bytes(r.optimizer, Precision::Fp32, a.hidden);
            (
                0.0,
                4.0 * trained / pcie + trained * (2.0 * (4.0 + states) + 4.0) / host,
            )
        }
    };
    let weights_in = if r.offload == Offload::OptimizerParams {
        let weights = match r.method {
            Method::Full => 2.0 * a.params,
            _ => w.weight_bytes().gpu,
        };
        2.0 * weights / n / pcie
    } else {
        0.0
    };
    // Activation offloading copies the layer inputs out in forward and back in backward on a
    // second CUDA stream that overlaps the compute (torchtune `OffloadActivations`,
    // `use_streams=True` by default, as in TRL): only copies longer than a micro-batch's compute
    // cost time. [derived: full overlap assumed]
    let copies = 2.0 * crate::memory::training::offloaded_activation_bytes(w) / pcie;
    // A paged optimizer's evicted states come back for the step (`prefetch_state`,
    // cudaMemPrefetchAsync) and are pushed out again by the next forward's allocations: twice
    // their bytes over PCIe per optimizer step, not overlapped (the step synchronizes on each
    // parameter, `sync_gpu`). [derived: migration at the link's rate; fault-driven eviction is
    // slower]
    let paging = 2.0 * crate::memory::training::paged_out_bytes(w) / pcie;
    let step = f64::from(r.grad_accum) * (micro.max(copies) + weights_in)
        + optimizer_step
        + offload
        + paging;
    let tokens = useful_tokens * f64::from(r.grad_accum) * n;
    let mut basis = format!(
        "{:.0} GFLOPs per token ({per_param:.0}·params + attention) at {:.0}% of {:.0} fp16 \
         TFLOPS per GPU",
        flops_per_token / 1e9,
        100.0 * TRAINING_EFFICIENCY,
        tflops
    );
    if dequant > 0.0 {
        basis.push_str(&format!(
            " + {:.0} ms dequantizing the 4-bit weights per micro-batch",
            dequant * 1e3
        ));
    }
    if optimizer_step > 0.0 {
        basis.push_str(&format!(" + {:.0} ms optimizer step", optimizer_step * 1e3));
    }
    if offload > 0.0 {
        basis.push_str(&format!(
            " + {offload:.2} s per step for the optimizer step on the CPU and its PCIe copies"
        ));
    }
    if weights_in > 0.0 {
        basis.push_str(&format!(
            " + {weights_in:.2} s per micro-batch copying the offloaded weights in over PCIe"
        ));
    }
    if copies > 0.0 {
        basis.push_str(&format!(
            "; {copies:.2} s of activation copies per micro-batch over PCIe, overlapped with compute"
        ));
    }
    if paging > 0.0 {
        basis.push_str(&format!(
            " + {paging:.2} s per step paging optimizer states over PCIe"
        ));
    }
    if r.torch_compile {
        basis.push_str("; torch.compile's speed-up is not modelled (eager mode's rate)");
    }
    if useful_tokens < micro_tokens {
        basis.push_str(&format!(
            "; {:.0}% of the tokens computed are padding (rows padded to run.seq = {}, samples of {} tokens on average; run.packing removes it)",
            100.0 * (1.0 - useful_tokens / micro_tokens),
            r.seq,
            r.mean_sample_tokens()
        ));
    }
    Speed {
        seconds_per_step: Some(step),
        training_tokens_per_s: Some(tokens / step),
        basis,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::WorkloadFile;
    use std::path::Path;

    /// The speed of Llama-3.1-8B training on an RTX 4090 with this `[run]` section.
    fn trained_with(run: &str) -> Speed {
        let text = format!(
            "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\n{run}"
        );
        let w = WorkloadFile::parse(&text, "t")
            .unwrap()
            .resolve(Path::new("."), None)
            .unwrap();
        speed(&w)
    }

    fn train(run: &str) -> Speed {
        trained_with(&format!("batch = 1\nseq = 1024\n{run}"))
    }

    #[test]
    fn padding_costs_compute_that_packing_gives_to_samples() {
        let at = |run: &str| {
            trained_with(&format!(
                "method = \"lora\"\nattention = \"flash\"\nseq = 2048\n{run}"
            ))
        };
        let full = at("batch = 8\n");
        let padded = at("batch = 8\navg_seq = 512\n");
        // Rows padded to 2048 compute what full rows do; a quarter of it is the samples'.
        assert_eq!(padded.seconds_per_step, full.seconds_per_step);
        let rate = |s: &Speed| s.training_tokens_per_s.unwrap();
        assert!((rate(&padded) - rate(&full) / 4.0).abs() < 1e-6 * rate(&full));
        assert!(
            padded
                .basis
                .contains("75% of the tokens computed are padding"),
            "{}",
            padded.basis
        );
        // Two packed rows carry the same samples in a quarter of the compute, attending within
        // each sample: faster per token than full rows of 2048.
        let packed = at("batch = 2\navg_seq = 512\npacking = true\n");
        assert!(
            rate(&packed) > 3.0 * rate(&padded),
            "{} vs {}",
            rate(&packed),
            rate(&padded)
        );
        assert!(rate(&packed) > rate(&full));
        assert!(!packed.basis.contains("padding"), "{}", packed.basis);
        // A batch of one is its own sample: no padding.
        let one = at("batch = 1\navg_seq = 512\n");
        assert!(one.seconds_per_step < at("batch = 1\n").seconds_per_step);
    }

    #[test]
    fn training_pays_its_optimizer_step_once_per_step_and_qlora_its_dequantization() {
        let one = train("grad_accum = 1");
        let four = train("grad_accum = 4");
        let (s1, s4) = (
            one.seconds_per_step.unwrap(),
            four.seconds_per_step.unwrap(),
        );
        // Four micro-batches share one optimizer step: less than four times the time.
        assert!(s4 < 4.0 * s1 && s4 > 2.0 * s1, "{s1} {s4}");
        assert!(one.basis.contains("optimizer step"), "{}", one.basis);
        // A full fine-tune's AdamW step reads and writes fp32 weights and moments: slower per
        // token than the 8-bit optimizer's.
        let eight = train("optimizer = \"adamw-8bit\"");
        assert!(eight.training_tokens_per_s > one.training_tokens_per_s);
        // QLoRA: the same FLOPs as LoRA, plus the 4-bit weights dequantized for each matmul.
        let lora = train("method = \"lora\"");
        let qlora = train("method = \"qlora\"");
        assert!(
            qlora.training_tokens_per_s < lora.training_tokens_per_s,
            "{qlora:?} {lora:?}"
        );
        assert!(qlora.basis.contains("dequantizing"), "{}", qlora.basis);
    }

    fn llama_cpp(gpu: &str, weights: &str) -> Workload {
        let text = format!(
            "[gpu]\npreset = \"{gpu}\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nengine = \"llama.cpp\"\nweights = \"{weights}\"\nseq = 4096\n"
        );
        WorkloadFile::parse(&text, "t")
            .unwrap()
            .resolve(Path::new("."), None)
            .unwrap()
    }

    #[test]
    fn llama_cpp_quantized_prefill_runs_at_the_int8_rate_and_falls_back_out_loud() {
        // A GeForce card's int8 rate is 4x its fp32-accumulate fp16 rate: MMQ at 0.225 of it
        // is the 0.9 of the fp16 rate the rows were first fitted at.
        let w = llama_cpp("rtx-4090", "q4_k_m");
        let p = precision::llm_rate(&w).unwrap();
        assert_eq!((p.used, p.fell_back()), (MatmulPrecision::Int8, false));
        let s = speed(&w);
        assert!(s.basis.contains("int8 TOPS"), "{}", s.basis);
        let via_int8 = s.prefill_tokens_per_s.unwrap();
        // The same card without an int8 figure: the fp16 rate, said in the basis.
        let mut bare = w.clone();
        bare.gpu.speed.tensor.int8_tops = None;
        let p = precision::llm_rate(&bare).unwrap();
        assert!(p.fell_back() && p.used == MatmulPrecision::Fp16);
        let s = speed(&bare);
        assert!(s.basis.contains("no int8 figure"), "{}", s.basis);
        let via_fp16 = s.prefill_tokens_per_s.unwrap();
        assert!(
            (via_fp16 / via_int8 - 1.0).abs() < 0.01,
            "{via_fp16} {via_int8}"
        );
        // F16 files are not an MMQ type: cuBLAS at the fp16 rate, no fallback.
        let f16 = precision::llm_rate(&llama_cpp("rtx-4090", "f16")).unwrap();
        assert_eq!((f16.used, f16.fell_back()), (MatmulPrecision::Fp16, false));
        // A datacenter card's int8 rate is twice its fp16 rate, not four times: MMQ there is
        // faster than the 16-bit rate alone would say.
        let a100 = speed(&llama_cpp("a100-80gb", "q4_k_m"));
        assert!(a100.basis.contains("int8 TOPS"), "{}", a100.basis);
    }

    #[test]
    fn fp8_weights_multiply_in_fp8_on_cards_with_fp8_units() {
        let run = |gpu: &str| {
            let text = format!(
                "[gpu]\npreset = \"{gpu}\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nengine = \"vllm\"\nweights = \"fp8\"\n"
            );
            let w = WorkloadFile::parse(&text, "t")
                .unwrap()
                .resolve(Path::new("."), None)
                .unwrap();
            precision::llm_rate(&w).unwrap()
        };
        assert_eq!(run("h100-80gb").used, MatmulPrecision::Fp8);
        // Ampere has no fp8 units: vLLM's fp8 Marlin kernel multiplies in 16-bit.
        let a100 = run("a100-80gb");
        assert_eq!(
            (a100.used, a100.fell_back()),
            (MatmulPrecision::Fp16, false)
        );
    }

    #[test]
    fn a_tied_output_head_is_a_matmul() {
        let w = WorkloadFile::parse(
            "[gpu]\nvram_gib = 24\n[model]\npreset = \"llama-3.2-3b\"\n",
            "t",
        )
        .unwrap()
        .resolve(Path::new("."), None)
        .unwrap();
        let mut a = w.model.clone();
        assert!(a.tied_embeddings);
        assert_eq!(matmul_params(&a), a.params);
        a.tied_embeddings = false;
        assert!((a.params - matmul_params(&a) - a.embedding_params()).abs() < 1.0);
    }
}
