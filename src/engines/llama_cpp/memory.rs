//! Where llama.cpp puts a model: which layers, experts and caches sit on the GPU and which in
//! system RAM, for `-ngl N` (`--n-gpu-layers`), `--n-cpu-moe N` / `--cpu-moe` and
//! `--no-kv-offload`. The rules, from llama.cpp's source:
//!
//! - `src/llama-model.cpp`, `load_tensors`: `i_gpu_start = max(n_layer + 1 - n_gpu_layers, 0)`;
//!   layer `il` goes to the GPU when `il >= i_gpu_start`. The output head is placed with the
//!   same rule at `il = n_layer`, so `-ngl` counts it as the last "layer": `-ngl k` puts the
//!   output head and the last `k - 1` repeating layers on the GPU, `-ngl n_layer + 1` all.
//!   The input layer (`token_embd`) always stays on the CPU ("there is very little benefit to
//!   offloading the input layer").
//! - `src/llama-kv-cache.cpp`, `llama_kv_cache` constructor: each layer's K/V buffer is made on
//!   `model.dev_layer(il)` when `offload` (`--no-kv-offload` clears it), else on the CPU.
//! - `common/arg.cpp`, `--n-cpu-moe N`: a buffer override `blk\.i\.ffn_(up|down|gate)_exps` →
//!   CPU for `i < N`; `--cpu-moe` is the same for every layer (`-ot exps=CPU`). Shared experts
//!   (`ffn_*_shexp`) and attention stay on the layer's device.
//!
//! And what llama.cpp allocates on each side: [`breakdown`], the estimate `memory::inference`
//! returns for a llama.cpp run.

use crate::memory::breakdown::{Breakdown, ComponentId, Device, DeviceMemory, Layer};
use crate::memory::kv_cache::{kv_cache_bytes_of_layers, state_bytes};
use crate::memory::weights::output_head_bytes;
use crate::types::arch::ModelArch;
use crate::types::message::Message;
use crate::types::options::Engine;
use crate::types::workload::Workload;
use crate::units::MIB;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// llama.cpp/ggml: the "unaccounted" memory in `llama_memory_breakdown_print` on an RTX 4090
/// was 451 MiB (llama.cpp PR #15860); ollama budgets 457 MiB per CUDA GPU
/// (`discover/gpu.go` cudaMinimumMemory).
pub const GGML_CONTEXT_BYTES: f64 = 457.0 * MIB;

/// DESIGN.md `placement`: the split as llama.cpp's flags and its bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// `-ngl`: layers on the GPU, the output head counted as the last.
    pub gpu_layers: u32,
    /// Repeating layers + 1 (the output head).
    pub total_layers: u32,
    /// `--n-cpu-moe`: layers whose routed experts stay in system RAM.
    pub cpu_moe_layers: u32,
    /// System RAM the run holds: weights, KV cache and compute buffer left on the CPU.
    pub host_bytes: u64,
    /// Memory on each GPU (the plan's process peak).
    pub per_gpu_bytes: Vec<u64>,
}

/// The bytes of a split, whole model (not yet divided across GPUs).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Split {
    /// Repeating layers on the GPU, and whether the output head is.
    pub gpu_repeating: u32,
    pub output_on_gpu: bool,
    pub gpu_weights: f64,
    pub host_weights: f64,
    /// Weight bytes one decoded token reads from each side (MoE: the routed experts in use).
    pub gpu_weights_read: f64,
    pub host_weights_read: f64,
    pub gpu_kv: f64,
    pub host_kv: f64,
}

impl Split {
    /// Every layer and the output head on the GPU.
    pub fn full(&self, a: &ModelArch) -> bool {
        self.output_on_gpu && self.gpu_repeating == a.layers
    }
}

/// `-ngl` as the run has it: `None` means every layer (llama.cpp's default `-ngl -1`).
pub fn gpu_layers(w: &Workload) -> u32 {
    w.run
        .gpu_layers
        .unwrap_or(w.model.layers + 1)
        .min(w.model.layers + 1)
}

/// Repeating layers on the GPU for `-ngl k`: `[n_layer + 1 - k, n_layer)`.
fn gpu_range(layers: u32, ngl: u32) -> Range<u32> {
    let start = (layers + 1).saturating_sub(ngl).min(layers);
    start..layers
}

/// The bytes of the model's weights by kind, for llama.cpp (whole model).
struct Parts {
    /// Everything of one repeating layer but its routed experts (uniform across layers).
    dense_per_layer: f64,
    /// The routed experts of one MoE layer.
    experts_per_moe_layer: f64,
    output: f64,
    embedding: f64,
}

fn parts(w: &Workload) -> Parts {
    let a = &w.model;
    let wb = w.weight_bytes();
    let output = output_head_bytes(w);
    let blocks = (wb.gpu - output).max(0.0);
    let moe = a.moe_layers();
    let moe_count = f64::from(moe.end - moe.start);
    let expert_share = (a.routed_expert_params_per_layer() * moe_count / a.block_params().max(1.0))
        .clamp(0.0, 1.0);
    let experts_total = blocks * expert_share;
    Parts {
        dense_per_layer: (blocks - experts_total) / f64::from(a.layers.max(1)),
        experts_per_moe_layer: if moe_count > 0.0 {
            experts_total / moe_count
        } else {
            0.0
        },
        output,
        embedding: wb.host,
    }
}

/// The bytes on each side for the run's `-ngl`, `--n-cpu-moe` and KV offload.
pub fn split(w: &Workload) -> Split {
    let a = &w.model;
    let r = &w.run;
    let ngl = gpu_layers(w);
    let on_gpu = gpu_range(a.layers, ngl);
    let p = parts(w);
    let moe = a.moe_layers();
    let active = a
        .moe
        .as_ref()
        .map_or(1.0, |m| f64::from(m.active) / f64::from(m.experts.max(1)));
    let mut s = Split {
        gpu_repeating: on_gpu.end - on_gpu.start,
        output_on_gpu: ngl >= 1,
        ..Default::default()
    };
    for il in 0..a.layers {
        let gpu_layer = on_gpu.contains(&il);
        let experts = if moe.contains(&il) {
            p.experts_per_moe_layer
        } else {
            0.0
        };
        let experts_on_gpu = gpu_layer && il >= r.cpu_moe_layers;
        let (dense_side, dense_read) = if gpu_layer {
            (&mut s.gpu_weights, &mut s.gpu_weights_read)
        } else {
            (&mut s.host_weights, &mut s.host_weights_read)
        };
        *dense_side += p.dense_per_layer;
        *dense_read += p.dense_per_layer;
        if experts_on_gpu {
            s.gpu_weights += experts;
            s.gpu_weights_read += experts * active;
        } else {
            s.host_weights += experts;
            s.host_weights_read += experts * active;
        }
    }
    if s.output_on_gpu {
        s.gpu_weights += p.output;
        s.gpu_weights_read += p.output;
    } else {
        s.host_weights += p.output;
        s.host_weights_read += p.output;
    }
    // The token embedding: on the host, one row read per token.
    s.host_weights += p.embedding;
    let kv = |layers: Range<u32>| {
        kv_cache_bytes_of_layers(
            a,
            r.batch,
            r.seq,
            r.kv_cache,
            Engine::LlamaCpp,
            r.ubatch,
            layers,
        )
    };
    let all_kv = kv(0..a.layers);
    s.gpu_kv = if r.kv_offload { kv(on_gpu) } else { 0.0 };
    s.host_kv = all_kv - s.gpu_kv;
    s
}

/// The compute buffers of a llama.cpp run: (GPU, host). ollama's graph-size formulas for
/// llama-style models (`fs/ggml/ggml.go`, `GraphSize`, "llama" case): a full offload keeps the
/// larger of the attention working set `4·ub·(1 + 4·embd + ctx·(1 + heads))` (the fp32 K·Q matrix
/// is `ctx × ub × heads`) and the output working set `4·ub·(embd + vocab)`; a partial offload
/// `4·ub·embd + max(4·ub·(1 + embd + max(ctx, embd)) + embd²·9/16 + 4·ctx·(ub·heads +
/// head_dim·kv_heads), 4·ub·(embd + vocab) + embd·vocab·105/128)` on the GPU. Flash attention
/// never materialises K·Q (llama.cpp#11332), so the `ctx·heads` terms drop. The host side holds
/// the CPU layers' graph (the partial figure) or, with a full offload, the input embeddings and
/// output logits (`4·ub·(embd + vocab)`).
pub fn compute_buffers(w: &Workload, s: &Split) -> (f64, f64) {
    let a = &w.model;
    let r = &w.run;
    let ctx = f64::from(r.batch) * f64::from(r.seq);
    let ub = f64::from(r.ubatch).min(ctx);
    let embd = f64::from(a.hidden);
    let vocab = f64::from(a.vocab);
    let heads = f64::from(a.heads);
    let flash = r.attention == crate::types::options::Attention::Flash;
    let kq = if flash { 0.0 } else { ctx * (1.0 + heads) };
    let out = 4.0 * ub * (embd + vocab);
    if s.full(a) {
        let attn = 4.0 * ub * (1.0 + 4.0 * embd + kq);
        return (attn.max(out), out);
    }
    let kq_partial = if flash { 0.0 } else { 4.0 * ctx * ub * heads };
    let partial = 4.0 * ub * embd
        + (4.0 * ub * (1.0 + embd + ctx.max(embd))
            + embd * embd * 9.0 / 16.0
            + kq_partial
            + 4.0 * ctx * a.kv_dim())
        .max(out + embd * vocab * 105.0 / 128.0);
    (partial, partial)
}

/// The placement of a llama.cpp run (per-GPU bytes are filled by the planner from the estimate).
pub fn placement(w: &Workload) -> Placement {
    let s = split(w);
    let (_, host_compute) = compute_buffers(w, &s);
    Placement {
        gpu_layers: gpu_layers(w),
        total_layers: w.model.layers + 1,
        cpu_moe_layers: w.run.cpu_moe_layers.min(w.model.layers),
        host_bytes: (s.host_weights + s.host_kv + host_compute).round() as u64,
        per_gpu_bytes: Vec::new(),
    }
}

/// llama.cpp: model buffer, KV buffer for `batch` parallel slots of `seq` tokens, and the
/// compute buffer, for the layers the run puts on the GPU ([`split`]). With several GPUs
/// llama.cpp splits the layers; each GPU keeps a full compute buffer.
pub fn breakdown(b: &mut Breakdown, w: &Workload, n: f64) {
    let s = split(w);
    let (gpu_compute, host_compute) = compute_buffers(w, &s);
    b.add(
        ComponentId::Weights,
        "Model weights",
        s.gpu_weights / n,
        Layer::Tensor,
    );
    let state = state_bytes(&w.model, w.run.batch, Engine::LlamaCpp);
    b.add(
        ComponentId::KvCache,
        "KV cache",
        (s.gpu_kv + state) / n,
        Layer::Tensor,
    );
    b.add(
        ComponentId::Activations,
        "Compute buffer",
        gpu_compute,
        Layer::Tensor,
    );
    b.add(
        ComponentId::CudaContext,
        "CUDA context and kernels",
        GGML_CONTEXT_BYTES,
        Layer::Process,
    );
    let p = placement(w);
    b.devices = b.gpu_rows(w.gpu.count);
    b.devices.push(DeviceMemory {
        device: Device::Host,
        model_bytes: s.host_weights.round() as u64,
        context_bytes: s.host_kv.round() as u64,
        compute_bytes: host_compute.round() as u64,
        layers: Some(p.total_layers - p.gpu_layers),
    });
    if s.full(&w.model) {
        b.warn(
            Message::new("warn.llama_cpp.embedding_in_ram")
                .bytes("bytes", w.weight_bytes().host as u64),
        );
    } else {
        b.warn(
            Message::new("warn.llama_cpp.split")
                .int("gpu_layers", p.gpu_layers)
                .int("layers", p.total_layers)
                .bytes("host", p.host_bytes),
        );
    }
    if let Some(ram) = w.gpu.host.ram_bytes
        && p.host_bytes > ram
    {
        b.warn(
            Message::new("warn.host_ram_short")
                .bytes("need", p.host_bytes)
                .bytes("ram", ram),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::WorkloadFile;
    use std::path::Path;

    fn wl(extra: &str) -> Workload {
        WorkloadFile::parse(
            &format!(
                "[gpu]\npreset = 'rtx-4060'\n[model]\npreset = 'qwen2.5-14b'\n[run]\nweights = 'q4_k_m'\nseq = 16384\n{extra}"
            ),
            "t",
        )
        .unwrap()
        .resolve(Path::new("."), None)
        .unwrap()
    }

    #[test]
    fn ngl_counts_the_output_head_as_the_last_layer() {
        // llama-model.cpp load_tensors: i_gpu_start = n_layer + 1 - n_gpu_layers.
        let all = split(&wl(""));
        assert_eq!((all.gpu_repeating, all.output_on_gpu), (48, true));
        let one = split(&wl("gpu_layers = 1"));
        assert_eq!((one.gpu_repeating, one.output_on_gpu), (0, true));
        let n = split(&wl("gpu_layers = 48"));
        assert_eq!((n.gpu_repeating, n.output_on_gpu), (47, true));
        let none = split(&wl("gpu_layers = 0"));
        assert_eq!((none.gpu_repeating, none.output_on_gpu), (0, false));
        // The weights only move between the sides; the embedding is on the host throughout.
        let total = |s: &Split| s.gpu_weights + s.host_weights;
        assert!((total(&all) - total(&none)).abs() < 1.0);
        assert!(all.host_weights > 0.0 && all.host_weights < 1e9);
        // -ngl 999 is read as "all".
        assert_eq!(split(&wl("gpu_layers = 999")), all);
    }

    #[test]
    fn kv_follows_its_layer_unless_kv_offload_is_off() {
        let half = split(&wl("gpu_layers = 25"));
        let total = half.gpu_kv + half.host_kv;
        assert!((half.gpu_kv / total - 24.0 / 48.0).abs() < 1e-9);
        let no = split(&wl("kv_offload = false"));
        assert_eq!(no.gpu_kv, 0.0);
        assert!((no.host_kv - total).abs() < 1.0);
    }

    #[test]
    fn the_estimate_has_a_row_per_gpu_and_one_for_the_host() {
        use crate::memory::{ComponentId, Device, estimate};
        let w = wl("gpu_layers = 25");
        let b = estimate(&w);
        let [gpu, host] = b.devices.as_slice() else {
            panic!("{:?}", b.devices)
        };
        assert_eq!((gpu.device, host.device), (Device::Gpu(0), Device::Host));
        // The GPU row is what llama.cpp allocates there; the host row the placement's RAM.
        let buffers = [
            ComponentId::Weights,
            ComponentId::KvCache,
            ComponentId::Activations,
        ];
        assert_eq!(
            gpu.self_bytes(),
            buffers.iter().map(|&c| b.get(c)).sum::<u64>()
        );
        assert!(host.self_bytes().abs_diff(placement(&w).host_bytes) <= 2);
        assert_eq!(host.layers, Some(49 - 25));
        // Two GPUs share the GPU side (each with its own compute buffer); the host is the same.
        let mut two = w.clone();
        two.gpu.count = 2;
        let rows = estimate(&two).devices;
        assert_eq!(rows.len(), 3);
        assert!(rows[0].model_bytes.abs_diff(gpu.model_bytes / 2) <= 1);
        assert_eq!((rows[1].compute_bytes, &rows[2]), (gpu.compute_bytes, host));
        // vLLM's tensor-parallel shares: four GPUs, nothing on the host.
        let mut tp = w.clone();
        tp.run.engine = Engine::Vllm;
        tp.gpu.count = 4;
        let b = estimate(&tp);
        assert_eq!(b.devices.len(), 4);
        assert!(b.devices.iter().all(|d| d.device != Device::Host
            && d.model_bytes == b.get(ComponentId::Weights)
            && d.context_bytes == b.get(ComponentId::KvCache)));
    }

    #[test]
    fn cpu_moe_moves_only_routed_experts() {
        let moe = |extra: &str| {
            let w = WorkloadFile::parse(
                &format!("[gpu]\npreset = 'rtx-4090'\n[model]\npreset = 'qwen3-30b-a3b'\n[run]\nweights = 'q4_k_m'\n{extra}"),
                "t",
            )
            .unwrap()
            .resolve(Path::new("."), None)
            .unwrap();
            split(&w)
        };
        let gpu = moe("");
        let all = moe("cpu_moe_layers = 999");
        let some = moe("cpu_moe_layers = 12");
        assert!(all.gpu_weights < some.gpu_weights && some.gpu_weights < gpu.gpu_weights);
        // Experts are most of a MoE model; attention and norms stay.
        assert!(all.gpu_weights < 0.2 * gpu.gpu_weights, "{all:?}");
        // Every layer's KV stays on the GPU: --n-cpu-moe moves no layer.
        assert_eq!(all.gpu_kv, gpu.gpu_kv);
        // Decode reads only the experts in use: 8 of 128.
        assert!(all.host_weights_read < 0.1 * all.host_weights);
    }
}
