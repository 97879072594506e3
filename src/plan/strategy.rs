//! Strategies: each changes one knob of a workload, and says what it costs in speed and quality.
//!
//! Speed factors are throughput relative to the original (1.0 = unchanged) and come from the
//! cited measurements; they are rough by nature, and the planner uses them only to rank plans.

use crate::types::dtype::{KvDtype, WeightFormat};
use crate::types::options::*;
use crate::types::workload::{Run, Workload};
use serde::{Deserialize, Serialize};

/// How much output quality a strategy risks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    None,
    Low,
    Medium,
    High,
}

/// One change to a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Strategy {
    /// Store the weights in another format (quantize).
    Weights { format: String },
    /// Quantize the KV cache.
    KvCache { dtype: KvDtype },
    /// Use a fused attention kernel (no s×s score matrix).
    FlashAttention,
    /// Recompute activations in backward.
    Checkpointing { mode: Checkpointing },
    /// Smaller micro-batch with gradient accumulation keeping the effective batch.
    MicroBatch { batch: u32, grad_accum: u32 },
    /// Smaller batch (inference: fewer concurrent sequences).
    Batch { batch: u32 },
    /// Train adapters instead of all weights.
    Method { method: Method },
    /// Pure bf16 training (no fp32 master weights).
    PureBf16,
    /// bitsandbytes 8-bit AdamW.
    Optimizer8bit,
    /// torch.optim's fused AdamW kernel: updates in place, no foreach temporaries.
    FusedOptimizer,
    /// The optimizer step fused into backward (torchtune `optimizer_in_bwd`): no full set of
    /// gradients.
    OptimizerInBwd,
    /// The checkpointed layers' inputs in host memory until their recompute (torchtune
    /// `enable_activation_offloading`, Unsloth's offloaded gradient checkpointing).
    ActivationOffload,
    /// bitsandbytes' paged optimizer: states in CUDA managed memory, evicted to host RAM when the
    /// card is short.
    PagedOptimizer,
    /// Sequence packing: the micro-batch's samples in fewer rows of `seq` tokens, no padding
    /// (TRL `packing=True`, torchtune `packed: True`); the rows hold the tokens the padded
    /// batch's samples had.
    Packing,
    /// ZeRO partitioning across the GPUs.
    Zero { stage: u32 },
    /// Move optimizer states (and parameters) to host memory.
    Offload { offload: Offload },
    /// Shorter context.
    Context { seq: u32 },
    /// Chunked (fused) cross-entropy: no full fp32 logits.
    ChunkedLoss,
    /// llama.cpp: `-ngl gpu_layers` of `total_layers` (the output head counted as the last) and
    /// the routed experts of the first `cpu_moe_layers` layers in system RAM (`--n-cpu-moe`).
    Split {
        gpu_layers: u32,
        total_layers: u32,
        cpu_moe_layers: u32,
    },
}

impl Strategy {
    /// Applies the change to a run; `None` when it does not apply or changes nothing.
    pub fn apply(&self, r: &Run) -> Option<Run> {
        let mut n = r.clone();
        match self {
            Strategy::Weights { format } => n.weights = format.parse().ok()?,
            Strategy::KvCache { dtype } => n.kv_cache = *dtype,
            Strategy::FlashAttention => n.attention = Attention::Flash,
            Strategy::Checkpointing { mode } => n.checkpointing = *mode,
            Strategy::MicroBatch { batch, grad_accum } => {
                // A step in backward cannot accumulate gradients (`Workload::resolve`).
                if n.optimizer_in_bwd {
                    return None;
                }
                n.batch = *batch;
                n.grad_accum = *grad_accum;
            }
            Strategy::Batch { batch } => n.batch = *batch,
            Strategy::Method { method } => {
                n.method = *method;
                if *method == Method::Qlora && !n.weights.is_quantized() {
                    n.weights = WeightFormat::Nf4;
                }
            }
            Strategy::PureBf16 => n.precision = Precision::Bf16,
            Strategy::Optimizer8bit => {
                n.optimizer = Optimizer::AdamW8bit;
                // bitsandbytes has no foreach/fused switch.
                n.optimizer_step = OptimizerStep::Foreach;
            }
            Strategy::FusedOptimizer => {
                if n.optimizer != Optimizer::AdamW {
                    return None;
                }
                n.optimizer_step = OptimizerStep::Fused;
            }
            Strategy::OptimizerInBwd => {
                if n.grad_accum > 1 || n.offload != Offload::None {
                    return None;
                }
                n.optimizer_in_bwd = true;
            }
            Strategy::ActivationOffload => {
                // It offloads what full checkpointing keeps (`Workload::resolve`).
                if n.checkpointing != Checkpointing::Full {
                    return None;
                }
                n.activation_offload = true;
            }
            Strategy::PagedOptimizer => {
                // bitsandbytes' paged optimizers; ZeRO-Offload has the states in host RAM
                // already (`Workload::resolve`).
                if !n.optimizer.has_paged_variant() || n.offload != Offload::None {
                    return None;
                }
                n.paged_optimizer = true;
                // bitsandbytes has no foreach/fused switch.
                n.optimizer_step = OptimizerStep::Foreach;
            }
            Strategy::Packing => {
                if !packable(&n) {
                    return None;
                }
                let mean = n.mean_sample_tokens();
                // Rows for the batch's tokens: the same samples (on average) per micro-batch.
                let rows = (u64::from(n.batch) * u64::from(mean)).div_ceil(u64::from(n.seq));
                if rows >= u64::from(n.batch) {
                    return None;
                }
                n.packing = true;
                n.batch = rows.max(1) as u32;
            }
            Strategy::Zero { stage } => n.zero_stage = *stage,
            Strategy::Offload { offload } => {
                // ZeRO-Offload steps on the CPU, after backward; a paged optimizer keeps the
                // states on the GPU (`Workload::resolve`).
                if n.optimizer_in_bwd || n.paged_optimizer {
                    return None;
                }
                n.offload = *offload;
            }
            Strategy::ChunkedLoss => n.loss = Loss::Chunked,
            Strategy::Context { seq } => {
                n.seq = *seq;
                n.prompt = n.prompt.min(*seq);
            }
            Strategy::Split {
                gpu_layers,
                total_layers,
                cpu_moe_layers,
            } => {
                // `None` is every layer: keep the run's own spelling when the split is full.
                let full = *gpu_layers >= *total_layers;
                let was_full = n.gpu_layers.is_none_or(|g| g >= *total_layers);
                if !(full && was_full) {
                    n.gpu_layers = Some(*gpu_layers);
                }
                n.cpu_moe_layers = *cpu_moe_layers;
            }
        }
        (n != *r).then_some(n)
    }

    /// Throughput relative to the original workload.
    pub fn speed_factor(&self, w: &Workload) -> f64 {
        let r = &w.run;
        match self {
            // Decoding is memory-bound: fewer bytes per weight read is not slower; bitsandbytes
            // kernels are (QLoRA paper; bnb 4-bit inference ≈ 0.6× fp16 in the transformers
            // quantization overview).
            Strategy::Weights { format } => match format.parse::<WeightFormat>() {
                Ok(WeightFormat::Nf4 | WeightFormat::Fp4) => 0.6,
                Ok(WeightFormat::Int8) => 0.5,
                _ => 1.0,
            },
            Strategy::KvCache { .. } => 0.97,
            Strategy::FlashAttention => 1.0,
            // Full recomputation re-runs the forward pass: ~33% more compute (Korthikanti et al.
            // report 36–39% overhead); selective recomputation costs 2–4%.
            Strategy::Checkpointing {
                mode: Checkpointing::Full,
            } => 0.75,
            Strategy::Checkpointing { .. } => 0.97,
            Strategy::MicroBatch { batch, .. } => {
                (f64::from(*batch) / f64::from(r.batch.max(1))).powf(0.15)
            }
            Strategy::Batch { batch } => f64::from(*batch) / f64::from(r.batch.max(1)),
            // QLoRA dequantizes every weight each pass (~30% slower than LoRA in the QLoRA paper's
            // and Unsloth's measurements); LoRA skips weight gradients (~1.2× faster).
            Strategy::Method {
                method: Method::Qlora,
            } => 0.75,
            Strategy::Method { .. } => 1.2,
            Strategy::PureBf16 => 1.05,
            Strategy::Optimizer8bit => 0.98,
            // PyTorch's AdamW docs: the fused implementation is the fastest of the three.
            Strategy::FusedOptimizer => 1.0,
            // One optimizer per parameter loses the multi-tensor kernels: a few hundred small
            // steps instead of one, a small share of a step's time. [derived]
            Strategy::OptimizerInBwd => 0.97,
            // The PCIe copies against the compute of a fully checkpointed step (`speed::llm`).
            Strategy::ActivationOffload => {
                let mut base = w.clone();
                base.run.checkpointing = Checkpointing::Full;
                base.run.activation_offload = false;
                modelled_ratio(&base, self).unwrap_or(1.0)
            }
            // The evicted states paged in and out over PCIe each optimizer step (`speed::llm`);
            // on a card of unknown speed, the states' PCIe round trip of ZeRO-Offload (its 0.6,
            // arXiv 2101.06840) without the CPU step.
            Strategy::PagedOptimizer => {
                let mut base = w.clone();
                base.run.paged_optimizer = false;
                let mut with = base.clone();
                with.run.paged_optimizer = true;
                let unknown = if crate::memory::training::paged_out_bytes(&with) > 0.0 {
                    0.6
                } else {
                    1.0
                };
                modelled_ratio(&base, self).unwrap_or(unknown)
            }
            // Training tokens per second (the samples' own, `speed::llm`) packed against padded:
            // a gain where the padding was compute; unknown where the card's rate is.
            Strategy::Packing => {
                let Some(run) = self.apply(r) else {
                    return 1.0;
                };
                let with = Workload { run, ..w.clone() };
                let rate = |x: &Workload| crate::speed::llm::speed(x).training_tokens_per_s;
                match (rate(w), rate(&with)) {
                    (Some(a), Some(b)) if a > 0.0 => b / a,
                    _ => 1.0,
                }
            }
            Strategy::Zero { stage } => 1.0 - 0.05 * f64::from(*stage),
            // The CPU optimizer step, its PCIe copies and the weights streamed in for every pass
            // against the step on the GPU (`speed::llm`); where the card's rate is not known, the
            // ZeRO-Offload paper's (arXiv 2101.06840) and ZeRO-Infinity's rough costs.
            Strategy::Offload { offload } => {
                modelled_ratio(w, self).unwrap_or(if *offload == Offload::OptimizerParams {
                    0.3
                } else {
                    0.6
                })
            }
            Strategy::Context { .. } => 1.0,
            // torchtune reports chunked CE at about the same step time.
            Strategy::ChunkedLoss => 0.98,
            // The planner computes an offload plan's speed itself (`speed::llm`).
            Strategy::Split { .. } => 1.0,
        }
    }

    pub fn risk(&self) -> Risk {
        match self {
            Strategy::Weights { format } => match format
                .parse::<WeightFormat>()
                .map(WeightFormat::quality_loss)
            {
                Ok(0) => Risk::None,
                Ok(1) => Risk::Low,
                Ok(2 | 3) => Risk::Medium,
                _ => Risk::High,
            },
            Strategy::KvCache {
                dtype: KvDtype::Q4_0,
            } => Risk::Medium,
            Strategy::KvCache { .. } => Risk::Low,
            // Adapters train far fewer weights than the user asked for.
            Strategy::Method { .. } => Risk::Medium,
            Strategy::PureBf16 => Risk::Low,
            Strategy::Optimizer8bit => Risk::Low,
            // A shorter context or a smaller batch changes what the user can do with the model.
            Strategy::Context { .. } | Strategy::Batch { .. } => Risk::Medium,
            _ => Risk::None,
        }
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        let (template, values) = self.template();
        super::verdict::fill(template, &values)
    }

    /// [`Self::describe`] as a template with `{name}` placeholders and their values, so a front
    /// end can translate the template and keep the figures (the GUI's `ui::i18n::trf`).
    pub fn template(&self) -> (&'static str, Vec<(&'static str, String)>) {
        match self {
            Strategy::Weights { format } => {
                ("weights in {format}", vec![("format", format.clone())])
            }
            Strategy::KvCache { dtype } => (
                "kv cache in {dtype}",
                vec![("dtype", format!("{dtype:?}").to_lowercase())],
            ),
            Strategy::FlashAttention => ("flash attention (no s×s score matrix)", vec![]),
            Strategy::Checkpointing { mode } => (
                "{mode} activation checkpointing",
                vec![("mode", mode.to_string())],
            ),
            Strategy::MicroBatch { batch, grad_accum } => (
                "micro-batch {batch} × {grad_accum} gradient-accumulation steps",
                vec![
                    ("batch", batch.to_string()),
                    ("grad_accum", grad_accum.to_string()),
                ],
            ),
            Strategy::Batch { batch } => ("batch {batch}", vec![("batch", batch.to_string())]),
            Strategy::Method { method } => (
                "{method} instead of full fine-tuning",
                vec![("method", method.to_string())],
            ),
            Strategy::PureBf16 => ("pure bf16 training (no fp32 master weights)", vec![]),
            Strategy::Optimizer8bit => ("8-bit AdamW (bitsandbytes)", vec![]),
            Strategy::FusedOptimizer => (
                "fused AdamW step (fused=True: no foreach temporaries)",
                vec![],
            ),
            Strategy::OptimizerInBwd => (
                "optimizer step in the backward pass (torchtune optimizer_in_bwd: no full set of gradients)",
                vec![],
            ),
            Strategy::ActivationOffload => (
                "checkpointed layers' inputs offloaded to CPU RAM (torchtune enable_activation_offloading)",
                vec![],
            ),
            Strategy::PagedOptimizer => (
                "paged optimizer (bitsandbytes: states paged to CPU RAM when the card is short)",
                vec![],
            ),
            Strategy::Packing => (
                "sequence packing (the batch's samples in fewer full rows, no padding)",
                vec![],
            ),
            Strategy::Zero { stage } => ("ZeRO stage {stage}", vec![("stage", stage.to_string())]),
            Strategy::Offload { offload } => (
                "offload {offload} to CPU RAM",
                vec![("offload", offload.to_string())],
            ),
            Strategy::Context { seq } => ("context {seq} tokens", vec![("seq", seq.to_string())]),
            Strategy::ChunkedLoss => ("chunked cross-entropy (no full fp32 logits)", vec![]),
            Strategy::Split {
                gpu_layers,
                total_layers,
                cpu_moe_layers: 0,
            } => (
                "{gpu_layers} of {total_layers} layers on the GPU, the rest in system RAM (-ngl {gpu_layers})",
                vec![
                    ("gpu_layers", gpu_layers.to_string()),
                    ("total_layers", total_layers.to_string()),
                ],
            ),
            Strategy::Split {
                gpu_layers,
                total_layers,
                cpu_moe_layers,
            } => (
                "{gpu_layers} of {total_layers} layers on the GPU, experts of the first {cpu_moe_layers} layers in system RAM (-ngl {gpu_layers} --n-cpu-moe {cpu_moe_layers})",
                vec![
                    ("gpu_layers", gpu_layers.to_string()),
                    ("total_layers", total_layers.to_string()),
                    ("cpu_moe_layers", cpu_moe_layers.to_string()),
                ],
            ),
        }
    }
}

/// Step time of `w` over that of `w` with `s` applied, by the speed model (`speed::llm`), at most
/// 1; `None` when the model cannot tell (the card's rate unknown) or `s` changes nothing.
fn modelled_ratio(w: &Workload, s: &Strategy) -> Option<f64> {
    let mut with = w.clone();
    with.run = s.apply(&w.run)?;
    let step = |x: &Workload| crate::speed::llm::speed(x).seconds_per_step;
    match (step(w), step(&with)) {
        (Some(a), Some(b)) if b > 0.0 => Some((a / b).min(1.0)),
        _ => None,
    }
}

/// Whether packing is left to turn on: TRL packs for language modelling (`Workload::resolve`),
/// and samples as long as the rows leave nothing to pack.
fn packable(r: &Run) -> bool {
    !r.packing && r.objective == Objective::CausalLm && r.mean_sample_tokens() < r.seq
}

/// The choices the search may combine for a run, grouped so that one option per group is taken.
pub fn candidate_groups(r: &Run, gpus: u32, fp8: bool) -> Vec<Vec<Strategy>> {
    let mut groups: Vec<Vec<Strategy>> = Vec::new();
    let w = |f: &str| Strategy::Weights {
        format: f.to_string(),
    };
    if r.task == Task::Training {
        // Each group lists only options that save memory against the run as it is, mild to strong.
        groups.push(match r.method {
            Method::Full => vec![
                Strategy::Method {
                    method: Method::Lora,
                },
                Strategy::Method {
                    method: Method::Qlora,
                },
            ],
            Method::Lora => vec![Strategy::Method {
                method: Method::Qlora,
            }],
            Method::Qlora => vec![],
        });
        groups.push(match r.checkpointing {
            Checkpointing::None => vec![
                Strategy::Checkpointing {
                    mode: Checkpointing::Selective,
                },
                Strategy::Checkpointing {
                    mode: Checkpointing::Full,
                },
            ],
            Checkpointing::Selective => vec![Strategy::Checkpointing {
                mode: Checkpointing::Full,
            }],
            Checkpointing::Full => vec![],
        });
        // After the checkpointing group: it applies once full checkpointing is chosen.
        if !r.activation_offload {
            groups.push(vec![Strategy::ActivationOffload]);
        }
        groups.push(vec![Strategy::FlashAttention]);
        groups.push(vec![Strategy::ChunkedLoss]);
        // One optimizer choice: the fused kernel (no temporaries), then 8-bit states.
        let mut opt = Vec::new();
        if r.optimizer == Optimizer::AdamW && r.optimizer_step != OptimizerStep::Fused {
            opt.push(Strategy::FusedOptimizer);
        }
        if matches!(
            r.optimizer,
            Optimizer::AdamW | Optimizer::Sgd | Optimizer::Lion
        ) {
            opt.push(Strategy::Optimizer8bit);
        }
        groups.push(opt);
        groups.push(vec![Strategy::PureBf16]);
        let mut micro = Vec::new();
        let mut b = r.batch / 2;
        while b >= 1 {
            micro.push(Strategy::MicroBatch {
                batch: b,
                grad_accum: r.grad_accum * (r.batch / b),
            });
            b /= 2;
        }
        groups.push(micro);
        // After the micro-batches: it packs the micro-batch they leave.
        if packable(r) {
            groups.push(vec![Strategy::Packing]);
        }
        let mut dist = Vec::new();
        if gpus > 1 {
            dist.extend((r.zero_stage + 1..=3).map(|stage| Strategy::Zero { stage }));
        }
        if r.offload == Offload::None {
            dist.push(Strategy::Offload {
                offload: Offload::Optimizer,
            });
        }
        if r.offload != Offload::OptimizerParams {
            dist.push(Strategy::Offload {
                offload: Offload::OptimizerParams,
            });
        }
        groups.push(dist);
        // After the micro-batches and the offloads, which it excludes (`apply` declines after
        // them), so that the strongest combination `cheapest_fit` probes first keeps them.
        if !r.optimizer_in_bwd {
            groups.push(vec![Strategy::OptimizerInBwd]);
        }
        // Last: after the optimizer choice (8-bit states page too) and the offloads it excludes.
        if !r.paged_optimizer {
            groups.push(vec![Strategy::PagedOptimizer]);
        }
    } else {
        let formats: &[&str] = if r.weights.is_gguf() || r.engine == Engine::LlamaCpp {
            &["q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k"]
        } else if r.engine == Engine::Vllm {
            if fp8 {
                &["fp8", "awq-4bit"]
            } else {
                &["gptq-8bit", "awq-4bit"]
            }
        } else if fp8 {
            &["fp8", "int8", "nf4"]
        } else {
            &["int8", "nf4"]
        };
        let current = r.weights.quality_loss();
        groups.push(
            formats
                .iter()
                .filter(|f| {
                    f.parse::<WeightFormat>()
                        .is_ok_and(|t| t.quality_loss() >= current && t != r.weights)
                })
                .map(|f| w(f))
                .collect(),
        );
        let kv: &[KvDtype] = match r.engine {
            Engine::LlamaCpp => &[KvDtype::Q8_0, KvDtype::Q4_0],
            Engine::Vllm => &[KvDtype::Fp8],
            _ => &[],
        };
        groups.push(
            kv.iter()
                .filter(|d| d.bytes() < r.kv_cache.bytes())
                .map(|d| Strategy::KvCache { dtype: *d })
                .collect(),
        );
        groups.push(vec![Strategy::FlashAttention]);
        let mut batches = Vec::new();
        let mut b = r.batch / 2;
        while b >= 1 {
            batches.push(Strategy::Batch { batch: b });
            b /= 2;
        }
        groups.push(batches);
    }
    // Shorter contexts, halving down to 512 tokens.
    let mut ctx = Vec::new();
    let mut s = r.seq / 2;
    while s >= 512 {
        ctx.push(Strategy::Context { seq: s });
        s /= 2;
    }
    groups.push(ctx);
    groups.retain(|g| !g.is_empty());
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::WorkloadFile;
    use std::path::Path;

    fn lora(run: &str) -> Workload {
        let text = format!(
            "[gpu]\npreset = 'rtx-4090'\n[model]\npreset = 'llama-3.1-8b'\n[run]\ntask = 'training'\nmethod = 'lora'\n{run}"
        );
        WorkloadFile::parse(&text, "t")
            .unwrap()
            .resolve(Path::new("."), None)
            .unwrap()
    }

    #[test]
    fn packing_fits_the_padded_batch_into_fewer_rows_after_the_micro_batches() {
        let padded = lora("seq = 2048\nbatch = 8\navg_seq = 600\nattention = 'flash'\n");
        // 8 samples of 600 tokens: 4800 tokens, three rows of 2048.
        let packed = Strategy::Packing.apply(&padded.run).unwrap();
        assert!(packed.packing && packed.batch == 3, "{packed:?}");
        assert!(Strategy::Packing.apply(&packed).is_none());
        // Samples as long as the rows, or one sample a batch: nothing to pack.
        for run in [
            "seq = 2048\nbatch = 8\n",
            "seq = 2048\nbatch = 1\navg_seq = 600\n",
            "seq = 2048\nbatch = 8\navg_seq = 600\nobjective = 'classification'\n",
        ] {
            assert!(Strategy::Packing.apply(&lora(run).run).is_none(), "{run}");
        }
        // The padding was compute: packed, the samples train faster.
        let f = Strategy::Packing.speed_factor(&padded);
        assert!(f > 2.0, "{f}");
        let groups = candidate_groups(&padded.run, 1, false);
        let at = |s: &Strategy| groups.iter().position(|g| g.contains(s));
        let micro = groups
            .iter()
            .position(|g| matches!(g.first(), Some(Strategy::MicroBatch { .. })));
        assert!(
            at(&Strategy::Packing) > micro && micro.is_some(),
            "{groups:?}"
        );
        assert!(
            !candidate_groups(&lora("batch = 8\n").run, 1, false)
                .iter()
                .any(|g| g.contains(&Strategy::Packing))
        );
    }

    #[test]
    fn activation_offload_needs_full_checkpointing_and_costs_pcie_time() {
        let none = lora("seq = 8192\n");
        assert!(Strategy::ActivationOffload.apply(&none.run).is_none());
        let full = lora("seq = 8192\ncheckpointing = 'full'\n");
        assert!(
            Strategy::ActivationOffload
                .apply(&full.run)
                .is_some_and(|r| r.activation_offload)
        );
        // Over a PCIe 4.0 x16 link the copies hide behind the compute of a step.
        let fast = Strategy::ActivationOffload.speed_factor(&full);
        assert!(fast > 0.99 && fast <= 1.0, "{fast}");
        // Over a link a hundred times slower they do not.
        let mut slow = full.clone();
        slow.gpu.speed.pcie_gbs /= 100.0;
        let f = Strategy::ActivationOffload.speed_factor(&slow);
        assert!(f < 0.9, "{f}");
        // In the search it comes after the checkpointing group, whose full mode it needs.
        let groups = candidate_groups(&none.run, 1, false);
        let ckpt = groups.iter().position(|g| {
            g.contains(&Strategy::Checkpointing {
                mode: Checkpointing::Full,
            })
        });
        let off = groups
            .iter()
            .position(|g| g.contains(&Strategy::ActivationOffload));
        assert!(ckpt.is_some() && off.is_some() && ckpt < off, "{groups:?}");
    }

    #[test]
    fn offload_costs_what_the_speed_model_says() {
        // LoRA: the CPU steps only the adapters, so optimizer offload costs little; full
        // fine-tuning steps 8B parameters on the CPU and pays for it.
        let opt = Strategy::Offload {
            offload: Offload::Optimizer,
        };
        let params = Strategy::Offload {
            offload: Offload::OptimizerParams,
        };
        let l = lora("seq = 2048\ncheckpointing = 'full'\n");
        let mut full = l.clone();
        full.run.method = Method::Full;
        let (lo, fo) = (opt.speed_factor(&l), opt.speed_factor(&full));
        assert!(lo > 0.9 && lo <= 1.0, "{lo}");
        assert!(fo < 0.5, "{fo}");
        // Parameter offload copies the base in for every pass: slower, more so on a slow link.
        let lp = params.speed_factor(&l);
        assert!(lp < lo, "{lp} {lo}");
        let mut slow = l.clone();
        slow.gpu.speed.pcie_gbs /= 8.0;
        assert!(params.speed_factor(&slow) < lp);
    }

    #[test]
    fn paged_optimizer_needs_a_bitsandbytes_form_and_costs_paging_time() {
        let adamw = lora("optimizer = 'adamw'\nseq = 256\ncheckpointing = 'full'\n");
        assert!(
            Strategy::PagedOptimizer
                .apply(&adamw.run)
                .is_some_and(|r| r.paged_optimizer)
        );
        for run in [
            "optimizer = 'sgd'\n",
            "optimizer = 'adafactor'\n",
            "offload = 'optimizer'\n",
        ] {
            assert!(
                Strategy::PagedOptimizer.apply(&lora(run).run).is_none(),
                "{run}"
            );
        }
        let paged = Strategy::PagedOptimizer.apply(&adamw.run).unwrap();
        assert!(
            Strategy::Offload {
                offload: Offload::Optimizer
            }
            .apply(&paged)
            .is_none()
        );
        // Nothing is paged out where the run fits: no cost.
        assert_eq!(Strategy::PagedOptimizer.speed_factor(&adamw), 1.0);
        // Full fine-tuning of 8B in pure bf16 on 24 GB: states are paged out every step.
        let text = "[gpu]\npreset = 'rtx-4090'\n[model]\npreset = 'llama-3.1-8b'\n[run]\ntask = 'training'\nprecision = 'bf16'\noptimizer = 'adamw-8bit'\ncheckpointing = 'full'\nseq = 512\n";
        let full = WorkloadFile::parse(text, "t")
            .unwrap()
            .resolve(Path::new("."), None)
            .unwrap();
        let f = Strategy::PagedOptimizer.speed_factor(&full);
        assert!(f > 0.0 && f < 0.9, "{f}");
        // After the optimizer choice and the offloads it excludes.
        let groups = candidate_groups(&adamw.run, 1, false);
        let at = |s: &Strategy| groups.iter().position(|g| g.contains(s));
        let paged = at(&Strategy::PagedOptimizer);
        assert!(
            paged.is_some() && at(&Strategy::Optimizer8bit) < paged,
            "{groups:?}"
        );
        let offload = at(&Strategy::Offload {
            offload: Offload::Optimizer,
        });
        assert!(offload < paged, "{groups:?}");
    }

    #[test]
    fn describe_fills_the_template() {
        let kv = Strategy::KvCache {
            dtype: KvDtype::Q8_0,
        };
        assert_eq!(kv.describe(), "kv cache in q8_0");
        let mb = Strategy::MicroBatch {
            batch: 2,
            grad_accum: 8,
        };
        assert_eq!(
            mb.describe(),
            "micro-batch 2 × 8 gradient-accumulation steps"
        );
        let (template, values) = mb.template();
        assert!(template.contains("{batch}") && template.contains("{grad_accum}"));
        assert_eq!(values.len(), 2);
        assert_eq!(
            Strategy::FlashAttention.describe(),
            "flash attention (no s×s score matrix)"
        );
    }
}
