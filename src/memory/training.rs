//! LLM training: weights, gradients, optimizer states, activations and the logits/loss buffers,
//! with LoRA/QLoRA, ZeRO partitioning and CPU offload.
//!
//! Peak model (PyTorch ≥ 2.0, `zero_grad(set_to_none=True)`): the largest of three moments of a
//! step, as the fake-tensor simulation of the real step finds them
//! (`tests/calibration/fake_train.py`, `peak_phase` and `peak_components` of each row):
//! - the end of the forward, inside the loss, still under `torch.autocast`: autocast's cache
//!   holds the 16-bit copy of every trainable weight until the autocast context exits, even
//!   under checkpointing; the logits, their fp32 upcast and the log-softmax output are alive;
//! - the loss's backward, the first node of backward: every saved activation is alive, plus the
//!   loss buffers; gradients exist only from earlier micro-batches (gradient accumulation);
//! - under full checkpointing, one layer re-run during backward, with the gradients so far;
//! - the optimizer step: every gradient plus the step's temporaries.
//!
//! With the optimizer step fused into backward (torchtune `optimizer_in_bwd`,
//! `torchtune/training/memory.py` `register_optim_in_bwd_hooks`: one optimizer per parameter,
//! stepped and `zero_grad`-ed by a `register_post_accumulate_grad_hook` as soon as that
//! parameter's gradient is complete) there is no step moment: at most one parameter's gradient
//! and its step's temporaries exist at a time, during backward.
//!
//! With activation offloading (full checkpointing only; see `offloaded_activation_bytes`) the
//! checkpointed layers' inputs live in host memory: the forward keeps only what the final norm
//! and the output head saved, and each recomputed layer brings its input back.
//!
//! Sharding and CPU offload apply to adapters over a frozen base as to full fine-tuning: ZeRO-3
//! and FSDP's FULL_SHARD shard every parameter, frozen ones too, and gather a layer's before it
//! runs (`GATHERED_LAYERS`); parameter offload (DeepSpeed `offload_param`, FSDP2
//! `CPUOffloadPolicy`) keeps the shards in host RAM, so only the gathered layers are on the GPU.
//! What goes to the host is `host_bytes`.
//!
//! With a paged optimizer (bitsandbytes `is_paged=True`; see `paged_states`) the states of its
//! large tensors live in CUDA managed memory, outside PyTorch's allocator: they count on the
//! card but not in `memory_allocated()`, and when the card runs short the driver moves them to
//! host RAM; each optimizer step pages them back one parameter at a time.
//!
//! A micro-batch is `batch × seq` tokens with packing or without (see `attention_mask_elements`):
//! unpacked, its worst batch holds a sample of `seq` tokens and the others are padded to it;
//! packed, every row is `seq` tokens of whole samples. What differs is the attention mask
//! transformers builds for it and how much of the compute is padding (`speed::llm`).

use super::activations::{StepDtypes, Trained, training_activations};
use super::breakdown::{Breakdown, ComponentId, Layer};
use super::lora;
use super::optimizer::{state_bytes, step_temp_bytes};
use super::overhead;
use crate::types::arch::ModelArch;
use crate::types::dtype::WeightFormat;
use crate::types::message::Message;
use crate::types::options::*;
use crate::types::workload::{Run, Workload};

/// Bytes per vocabulary entry per token alive at the loss's backward. transformers
/// `ForCausalLMLoss` (`loss/loss_utils.py`) upcasts the logits (`logits.float()`) and calls
/// `cross_entropy` = `log_softmax` + `nll_loss`: the fp32 log-softmax output is saved (4), and
/// backward makes `nll_loss_backward`'s fp32 gradient (4) and `_log_softmax_backward_data`'s
/// (4) while it is still alive. The 16-bit logits and their fp32 copy are freed after the
/// forward (no backward formula needs them), whatever the training precision.
pub const LOGITS_BYTES_PER_VOCAB_TOKEN: f64 = 12.0;

/// Chunked cross-entropy keeps the bf16 logits (2 bytes) and upcasts one chunk of eight at a
/// time (torchtune `CEWithChunkedOutputLoss`, 8 chunks: 16/8 bytes of fp32 buffers).
pub const CHUNKED_LOGITS_BYTES_PER_VOCAB_TOKEN: f64 = 2.0 + 16.0 / 8.0;

/// Bytes per vocabulary entry per token alive at the end of the forward, inside
/// `ForCausalLMLoss`: the LM head's 16-bit output (2, still referenced by the model's output),
/// its fp32 upcast (4, `logits.float()`) and the saved fp32 `log_softmax` output (4). Measured
/// by `tests/calibration/fake_train.py` (`peak_phase` "logits": `mm`, `_to_copy`,
/// `_log_softmax`). The upcast dies when the loss returns, before backward.
pub const FORWARD_END_LOGITS_BYTES_PER_VOCAB_TOKEN: f64 = 10.0;

/// Caching-allocator slack per byte of logits/loss buffers in training: the ms-swift benchmark
/// rows (Qwen-1.8B/7B/14B LoRA, GC + flash attention, `max_memory_reserved`) grow by the same
/// ~3.6 GiB per 512 tokens whatever the model size, i.e. ~47 B per vocabulary entry and token,
/// of which 18 B were counted as live tensors before the loss was modelled op by op (12 B):
/// variable-length batches leave differently sized cached blocks.
pub const LOGITS_RESERVED_SLACK: f64 = 47.0 / LOGITS_BYTES_PER_VOCAB_TOKEN - 1.0;

/// Layer inputs on the device while backward recomputes a layer under activation offloading:
/// torchtune `OffloadActivations.unpack_tensor_with_streams` brings a tensor back for its
/// autograd node and frees it in the hook of the next node (`prev_node_ids`), so the input of the
/// layer being recomputed and the one of the layer before it are alive together.
pub const OFFLOAD_BACKWARD_LAYER_INPUTS: f64 = 2.0;

/// Bytes one micro-batch's activation offloading copies to host memory (and back in backward):
/// every saved tensor of at least 1 KiB that is not a parameter (torchtune
/// `training/_activation_offloading.py` `OffloadActivations.pack_tensor`, `min_offload_size`),
/// which under full checkpointing is each checkpointed layer's input (torch.utils.checkpoint's
/// non-reentrant `_NoopSaveInputs` saves the layer's inputs with `save_for_backward`, outside the
/// recompute hooks). The output head runs under `NoOpManager` (`get_act_offloading_ctx_manager`):
/// its input stays. Unsloth's offloaded checkpointing (`Unsloth_Offloaded_Gradient_Checkpointer`:
/// `hidden_states.to("cpu", non_blocking=True)` in forward, back in backward) moves the same layer
/// inputs. 0 when the run does not offload activations.
pub fn offloaded_activation_bytes(w: &Workload) -> f64 {
    let r = &w.run;
    if !r.activation_offload {
        return 0.0;
    }
    let tokens = f64::from(r.batch) * f64::from(r.seq);
    f64::from(w.model.layers) * tokens * f64::from(w.model.hidden) * step_dtypes(r).residual
}

/// Tokens of the row attention spans: a packed micro-batch reaches the model as one row of
/// `batch × seq` tokens (TRL's default `packing_strategy="bfd"` turns `padding_free` on,
/// trl/trainer/sft_trainer.py `SFTTrainer.__init__`, and `DataCollatorForLanguageModeling
/// .torch_call` then concatenates the packed rows into one, `position_ids` restarting at each
/// sample, no `attention_mask`), an unpacked one as rows of `seq`.
pub fn attention_row_tokens(r: &Run) -> f64 {
    if r.packing {
        f64::from(r.batch) * f64::from(r.seq)
    } else {
        f64::from(r.seq)
    }
}

/// Elements of the boolean attention mask transformers builds for the worst micro-batch under
/// SDPA (transformers masking_utils.py `sdpa_mask`: a `(batch, 1, q, kv)` tensor), 0 where
/// SDPA runs causal without one (`_ignore_causal_mask_sdpa`: no padding, one sample per row):
/// - unpacked rows shorter than `seq` are padded (`attention_mask` zeros): `batch · seq²`;
/// - a packed row of several samples (`_preprocess_mask_arguments` →
///   `find_packed_sequence_indices` over the restarting `position_ids`, then
///   `packed_sequence_mask_function`): the row's length squared. That check runs only without
///   a cache, which TRL ensures (`SFTTrainer.compute_loss` sets `use_cache=False`).
///
/// Checked with transformers 5.24 on a small Llama (SDPA, 4 samples of 32 tokens): unpadded
/// rows and a single sample get no mask, padded rows a `(4, 1, 32, 32)` boolean one, the
/// samples as one packed row with `use_cache=False` a `(1, 1, 128, 128)` one.
///
/// Flash attention takes no mask (varlen kernels over the `position_ids`,
/// modeling_flash_attention_utils.py `prepare_fa_kwargs_from_position_ids`); eager attention's
/// scores span the row instead (`attention_row_tokens`).
pub fn attention_mask_elements(r: &Run) -> f64 {
    let several = r.mean_sample_tokens() < r.seq;
    if r.attention != Attention::Sdpa {
        return 0.0;
    }
    if r.packing && (r.batch > 1 || several) {
        attention_row_tokens(r).powi(2)
    } else if !r.packing && r.batch > 1 && several {
        f64::from(r.batch) * f64::from(r.seq).powi(2)
    } else {
        0.0
    }
}

/// Layers whose unsharded parameters are on each GPU at once under ZeRO-3 / FSDP FULL_SHARD:
/// the one computing and the one gathered ahead of it. FSDP2 all-gathers the next parameter
/// group while the current one computes, freeing the current one's output after the next
/// copy-in (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py
/// `FSDPParamGroup.wait_for_unshard`, "[Note: Overlapping all-gather copy-in and all-gather]"),
/// and in backward prefetches the previous group in forward order (`_backward_prefetch`); with
/// `CPUOffloadPolicy` the shard is copied host-to-device just before its all-gather
/// (`_fsdp_param.py` `FSDPParam.all_gather_inputs`). DeepSpeed sizes the same thing as
/// `largest_layer_memory = 4 × largest_layer_params` bytes (runtime/zero/stage3.py
/// `estimate_zero3_model_states_mem_needs`): two 16-bit copies.
pub const GATHERED_LAYERS: f64 = 2.0;

/// Bytes the run keeps in host RAM, all GPUs of the node together (each rank's shard of what it
/// offloads, plus its offloaded activations). With optimizer offload the optimizer's fp32
/// master weights, gradients and states of what is trained live there; DeepSpeed's
/// `estimate_zero3_model_states_mem_needs` (runtime/zero/stage3.py) counts 16 bytes per
/// parameter for Adam, 18 with the parameters offloaded too (their 16-bit copies), before its
/// `additional_buffer_factor` of 1.5. With parameter offload the frozen base of LoRA/QLoRA goes
/// there as loaded (FSDP2 `CPUOffloadPolicy` moves every sharded parameter,
/// `FSDPParam._init_sharded_param`: `padded_sharded_param.cpu()`, pinned).
pub fn host_bytes(w: &Workload) -> f64 {
    let r = &w.run;
    let a = &w.model;
    let activations = f64::from(w.gpu.count.max(1)) * offloaded_activation_bytes(w);
    if r.offload == Offload::None {
        return activations;
    }
    let (trained, params16) = match r.method {
        Method::Full => (a.params, 2.0 * a.params),
        Method::Lora | Method::Qlora => (
            lora::adapters(a, &r.lora_targets).params(r.lora_rank),
            frozen_base_bytes(a, r, w.weight_bytes().gpu),
        ),
    };
    let states = state_bytes(r.optimizer, Precision::Fp32, a.hidden);
    let params = if r.offload == Offload::OptimizerParams {
        params16
    } else {
        0.0
    };
    activations + trained * (8.0 + states) + params
}

/// Whether the host RAM, when known, holds what the run offloads (`host_bytes`).
pub fn host_fits(w: &Workload) -> bool {
    w.gpu
        .host
        .ram_bytes
        .is_none_or(|ram| host_bytes(w) <= ram as f64)
}

/// Tensors of at least this many elements get paged state buffers (bitsandbytes
/// `optim/optimizer.py` `Optimizer8bit.get_state_buffer`: `p.numel() < 1e5` keeps
/// `torch.zeros_like`, larger ones `F.get_paged`, i.e. `cudaMallocManaged`
/// (csrc/pythonInterface.cpp `cget_managed_ptr`)).
pub const PAGED_MIN_ELEMENTS: f64 = 1e5;

/// The optimizer-state bytes per parameter of a paged optimizer's large tensors: bitsandbytes
/// keeps `state1`/`state2` in fp32 for its 32-bit optimizers whatever the training precision
/// (`Optimizer2State.init_state`, `get_state_buffer(p, dtype=torch.float32)`) and in uint8
/// for the 8-bit ones, whose fp32 `absmax1`/`absmax2` are ordinary tensors (not paged).
fn paged_bytes_per_param(o: Optimizer) -> f64 {
    match o {
        Optimizer::AdamW => 8.0,
        Optimizer::AdamW8bit => 2.0,
        Optimizer::Lion => 4.0,
        // Refused when the workload is resolved (`Optimizer::has_paged_variant`).
        Optimizer::Sgd | Optimizer::Adafactor => 0.0,
    }
}

/// A paged optimizer's states: what lives in managed memory, and the least of it that must be
/// on the card, the states of the largest parameter (`Optimizer8bit.step` prefetches each
/// parameter's states, `prefetch_state` → `cudaMemPrefetchAsync`, right before its update).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Paged {
    bytes: f64,
    working_set: f64,
}

/// The paged part of a workload's optimizer states (zero without a paged optimizer).
fn paged_states(w: &Workload) -> Paged {
    let (a, r) = (&w.model, &w.run);
    if !r.paged_optimizer {
        return Paged::default();
    }
    let per = paged_bytes_per_param(r.optimizer);
    let (params, largest) = match r.method {
        // Norm weights and biases (under 1e5 elements) keep ordinary buffers: a few millionths
        // of the parameters, counted as paged here.
        Method::Full => (a.params, a.largest_param_elements()),
        Method::Lora | Method::Qlora => {
            let ad = lora::adapters(a, &r.lora_targets);
            let p =
                lora::params_in_matrices_of(a, &r.lora_targets, r.lora_rank, PAGED_MIN_ELEMENTS);
            (p, (f64::from(r.lora_rank) * ad.widest).min(p))
        }
    };
    let n = f64::from(w.gpu.count.max(1));
    let div = if r.method == Method::Full && r.zero_stage >= 1 {
        n
    } else {
        1.0
    };
    Paged {
        bytes: params * per / div,
        working_set: largest * per / div,
    }
}

/// Optimizer-state bytes a paged optimizer leaves in host RAM because the card is short (0 when
/// everything fits, or without a paged optimizer).
pub fn paged_out_bytes(w: &Workload) -> f64 {
    estimate_paged(w).1
}

/// The precision of the optimizer's moments: the training precision for torch.optim, fp32 for
/// bitsandbytes' paged 32-bit optimizers whatever the training precision (see
/// `paged_bytes_per_param`).
pub fn state_precision(r: &Run) -> Precision {
    if r.paged_optimizer {
        Precision::Fp32
    } else {
        r.precision
    }
}

/// Model-state bytes per parameter: (weights, gradients).
pub fn full_state_bytes(p: Precision, zero: u32) -> (f64, f64) {
    match (p, zero) {
        (Precision::Fp32, _) => (4.0, 4.0),
        (Precision::Bf16, _) => (2.0, 2.0),
        // ZeRO/DeepSpeed mixed precision: 16-bit weights and gradients on the GPU, fp32 master
        // copy inside the optimizer state (ZeRO paper §3: 2Ψ + 2Ψ + 12Ψ).
        (_, z) if z > 0 => (2.0, 2.0),
        // Plain AMP: fp32 weights and gradients; autocast's 16-bit weight copies are saved
        // activations (see `estimate`).
        _ => (4.0, 4.0),
    }
}

/// Whether PEFT's `prepare_model_for_kbit_training` (peft `utils/other.py`) casts the model's
/// 16-bit parameters (embedding, head, norms) to fp32: it does for bitsandbytes and AWQ bases
/// and skips GPTQ ones (`is_gptq_quantized`, as it skips AQLM, EETQ, HQQ and torchao).
fn kbit_upcast(w: WeightFormat) -> bool {
    matches!(
        w,
        WeightFormat::Nf4 | WeightFormat::Fp4 | WeightFormat::Int8 | WeightFormat::Awq4
    )
}

/// The dtypes of a step's activations (see `StepDtypes`).
fn step_dtypes(r: &Run) -> StepDtypes {
    let mixed = matches!(r.precision, Precision::Fp16Mixed | Precision::Bf16Mixed);
    // DeepSpeed's bf16/fp16 modes run the model in 16-bit without autocast.
    let deepspeed_16 = mixed && r.zero_stage_in_effect() > 0 && r.method == Method::Full;
    let compute = if r.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    };
    let residual = match r.method {
        Method::Full if mixed && !deepspeed_16 => 4.0,
        Method::Full => compute,
        // PEFT's `prepare_model_for_kbit_training` casts every non-quantized parameter to fp32
        // (the embedding too), so the residual stream is fp32 — except on GPTQ bases.
        Method::Qlora if kbit_upcast(r.weights) => 4.0,
        Method::Qlora => compute,
        Method::Lora => compute,
    };
    StepDtypes {
        residual,
        compute,
        autocast: mixed && !deepspeed_16,
    }
}

/// Per-GPU estimate of a training workload.
pub fn estimate(w: &Workload) -> Breakdown {
    estimate_paged(w).0
}

/// The estimate, and the optimizer-state bytes paged out to host RAM.
fn estimate_paged(w: &Workload) -> (Breakdown, f64) {
    let a = &w.model;
    let r = &w.run;
    let n = f64::from(w.gpu.count.max(1));
    let mut b = Breakdown::new(w.gpu.vram_bytes);
    let d = step_dtypes(r);

    let (weights, grads, mut states, temp, mut adapters) = match r.method {
        Method::Full => full_model_states(a, r, n),
        Method::Lora | Method::Qlora => adapter_model_states(a, r, w.weight_bytes().gpu, n),
    };
    // A paged optimizer's large states leave the allocator's tensors (added after the overheads).
    let paged = paged_states(w);
    match r.method {
        Method::Full => states -= paged.bytes,
        Method::Lora | Method::Qlora => adapters -= paged.bytes,
    }
    let trained = match r.method {
        Method::Full => Trained::All,
        Method::Lora | Method::Qlora => {
            let ad = lora::adapters(a, &r.lora_targets);
            if ad.experts {
                b.warn(Message::new("warn.training.lora_experts"));
            }
            Trained::Lora(ad, r.lora_rank)
        }
    };

    let tokens = f64::from(r.batch) * f64::from(r.seq);
    let (acts, recompute) = training_activations(
        a,
        tokens,
        attention_row_tokens(r),
        d,
        trained,
        r.attention,
        r.checkpointing,
    );
    // Autocast casts each trainable weight to 16 bits once per forward (`cached_cast`) and the
    // linear saves the copy for backward; the LM head's copy lives until the head's backward.
    let (copies, head_copy) = if d.autocast && r.method == Method::Full {
        let head = a.lm_head_params().max(a.embedding_params());
        let layers = (a.params - a.embedding_params() - a.lm_head_params()).max(0.0);
        (2.0 * layers, 2.0 * head)
    } else {
        (0.0, 0.0)
    };
    // Checkpointed layers save no weight copy; each recomputed layer casts its own again
    // (`torch.utils.checkpoint` re-enters autocast for the recompute).
    let (layer_copies, mut recompute) = if r.checkpointing == Checkpointing::Full {
        (0.0, recompute + copies / f64::from(a.layers.max(1)))
    } else {
        (copies, 0.0)
    };
    // Activation offloading: the layer inputs wait in host memory; backward holds two of them.
    let offloaded = offloaded_activation_bytes(w);
    let mut acts = acts - offloaded;
    if offloaded > 0.0 {
        recompute += OFFLOAD_BACKWARD_LAYER_INPUTS * offloaded / f64::from(a.layers.max(1));
    }
    // SDPA's mask: the model's forward builds the boolean mask once (`create_causal_mask`) and
    // each layer's SDPA turns it into an additive bias of the query's dtype (aten
    // attention.cpp `scaled_dot_product_attention` → `convert_boolean_attn_mask`), which the
    // memory-efficient kernel saves for its backward (derivatives.yaml
    // `_scaled_dot_product_efficient_attention`: its backward takes `attn_bias`): one bias a
    // layer; with checkpointing the boolean mask is a saved layer input and only the layer
    // being recomputed holds its bias (selective: a transient of the recomputed attention).
    let mask = attention_mask_elements(r);
    let bias = mask * d.compute;
    match r.checkpointing {
        Checkpointing::None => acts += f64::from(a.layers) * bias,
        Checkpointing::Selective => acts += mask,
        Checkpointing::Full => {
            acts += mask;
            recompute += bias;
        }
    }
    let (logits, forward_logits) = match r.objective {
        Objective::CausalLm => {
            let (per, forward) = match r.loss {
                Loss::Standard => (
                    LOGITS_BYTES_PER_VOCAB_TOKEN,
                    FORWARD_END_LOGITS_BYTES_PER_VOCAB_TOKEN,
                ),
                Loss::Chunked => (
                    CHUNKED_LOGITS_BYTES_PER_VOCAB_TOKEN,
                    CHUNKED_LOGITS_BYTES_PER_VOCAB_TOKEN,
                ),
            };
            let vt = tokens * f64::from(a.vocab);
            (vt * per + head_copy, vt * forward + head_copy)
        }
        Objective::Classification => (0.0, 0.0),
    };
    // Gradients alive at the loss's backward: those of earlier micro-batches.
    let early_grads = if r.grad_accum > 1 { grads } else { 0.0 };
    // autocast's weight cache (`cached_cast` in aten/src/ATen/autocast_mode.cpp) is cleared
    // only when the outermost autocast context exits (`torch.autocast.__exit__` →
    // `clear_autocast_cache`), after the loss is computed: every copy is alive at the end of
    // the forward, checkpointed or not.
    let at_forward_end = early_grads + acts + copies + forward_logits;
    let at_loss = early_grads + acts + layer_copies + logits;
    // The step's temporaries run inside backward when the step is fused into it.
    let bwd_temp = if r.optimizer_in_bwd { temp } else { 0.0 };
    let at_layer = grads + bwd_temp + acts + recompute;
    let at_step = if r.optimizer_in_bwd {
        0.0
    } else {
        grads + temp
    };
    let (grads, acts, logits, temp) = if at_forward_end > at_loss.max(at_layer).max(at_step) {
        (early_grads, acts + copies, forward_logits, 0.0)
    } else if at_loss >= at_layer.max(at_step) {
        (early_grads, acts + layer_copies, logits, 0.0)
    } else if at_layer >= at_step {
        (grads, acts + recompute, 0.0, bwd_temp)
    } else {
        (grads, 0.0, 0.0, temp)
    };
    b.add(
        ComponentId::Weights,
        "Model weights",
        weights,
        Layer::Tensor,
    );
    b.add(
        ComponentId::Adapters,
        "LoRA adapters (weights, grads, optimizer)",
        adapters,
        Layer::Tensor,
    );
    b.add(ComponentId::Gradients, "Gradients", grads, Layer::Tensor);
    b.add(
        ComponentId::OptimizerStates,
        "Optimizer states",
        states,
        Layer::Tensor,
    );
    b.add(ComponentId::Activations, "Activations", acts, Layer::Tensor);
    b.add(
        ComponentId::Logits,
        "Logits and loss",
        logits,
        Layer::Tensor,
    );
    b.add(
        ComponentId::Workspace,
        "Optimizer step temporaries",
        temp,
        Layer::Tensor,
    );

    let slack = overhead::allocator_slack(weights, acts) + LOGITS_RESERVED_SLACK * logits;
    overhead::add_torch_overheads(
        &mut b,
        slack,
        overhead::context_bytes(r.engine),
        r.other_processes_bytes,
    );
    // Managed memory is outside the caching allocator; the driver evicts it to host RAM when
    // the card runs short (QLoRA paper, arXiv 2305.14314 §2 "Paged Optimizers"), down to the
    // states of the parameter being stepped. It is evicted until the plan's margin is free.
    let limit = b
        .capacity_bytes
        .saturating_sub(super::breakdown::margin_bytes(b.capacity_bytes));
    let over = (b.required_bytes() as f64 + paged.bytes - limit as f64).max(0.0);
    let paged_out = over.min((paged.bytes - paged.working_set).max(0.0));
    b.add(
        ComponentId::OptimizerStates,
        "Optimizer states (paged, CUDA managed memory)",
        paged.bytes - paged_out,
        Layer::Process,
    );
    if paged_out > 0.0 {
        b.warn(
            Message::new("warn.training.paged_out")
                .bytes("paged_out", paged_out as u64)
                .bytes("paged", paged.bytes as u64),
        );
    }
    let torch_step = matches!(r.optimizer, Optimizer::AdamW | Optimizer::Sgd) && !r.paged_optimizer;
    if r.optimizer_step != OptimizerStep::Foreach && !torch_step {
        let optimizer = if r.paged_optimizer {
            format!("bitsandbytes' paged {}", r.optimizer)
        } else {
            r.optimizer.to_string()
        };
        b.warn(
            Message::new("warn.training.optimizer_step")
                .text("step", r.optimizer_step.to_string())
                .text("optimizer", optimizer),
        );
    }
    if r.zero_stage > 0 && w.gpu.count == 1 {
        b.warn(Message::new("warn.training.zero_one_gpu"));
    }
    // torch.compile's AOTAutograd splits the joint forward-backward graph with a min cut that
    // decides what forward saves, recomputing cheap fusible ops in backward
    // (torch/_functorch/partitioners.py `min_cut_rematerialization_partition`; config.py
    // `activation_memory_budget` = 1.0, "the default runtime-optimized strategy"), and inductor
    // reuses buffers within a graph: no published rule relates that to eager's saved set, so
    // the figure stays eager's, and the plan says so.
    if r.torch_compile {
        b.warn(Message::new("warn.training.compile_as_eager"));
    }
    // TRL warns that only flash attention handles a packed (padding-free) batch reliably
    // (`SFTTrainer.__init__`: "You are using packing, but the attention implementation is not
    // set to a supported Flash Attention variant").
    if r.packing && r.attention != Attention::Flash {
        b.warn(
            Message::new("warn.training.packing_without_flash")
                .text("attention", r.attention.to_string())
                .int("tokens", attention_row_tokens(r) as u64),
        );
    }
    // torchtune warns past 60% of host memory in use (`OffloadActivations`,
    // `virtual_memory_safe_pct`); the offloaded layers are pinned host memory.
    if let Some(ram) = w.gpu.host.ram_bytes
        && offloaded > 0.6 * ram as f64
    {
        b.warn(
            Message::new("warn.training.activation_offload_ram")
                .bytes("offloaded", offloaded as u64)
                .bytes("ram", ram),
        );
    }
    // ZeRO-Offload / FSDP CPU offload: what host RAM must hold, checked where it is known.
    if r.offload != Offload::None {
        let host = host_bytes(w) as u64;
        match w.gpu.host.ram_bytes {
            Some(ram) if !host_fits(w) => b.warn(
                Message::new("warn.training.offload_ram_short")
                    .bytes("host", host)
                    .bytes("ram", ram),
            ),
            Some(_) => {}
            None => b.warn(Message::new("warn.training.offload_ram_unknown").bytes("host", host)),
        }
    }
    (b, paged_out)
}

/// Full fine-tuning: (weights, grads, states, step temporaries, adapters) per GPU, with ZeRO
/// stage s over n GPUs (ZeRO paper §5: P_os divides states, P_os+g also gradients, P_os+g+p also
/// weights) and DeepSpeed offload (states, then also parameters, in host memory).
fn full_model_states(a: &ModelArch, r: &Run, n: f64) -> (f64, f64, f64, f64, f64) {
    let p = a.params;
    let z = r.zero_stage_in_effect();
    let (wb, gb) = full_state_bytes(r.precision, z);
    let mut states = state_bytes(r.optimizer, state_precision(r), a.hidden);
    if z > 0 && matches!(r.precision, Precision::Fp16Mixed | Precision::Bf16Mixed) {
        states += 4.0; // fp32 master weights live with the optimizer under ZeRO
    }
    let largest = a.largest_param_elements();
    let div = |stage: u32| if z >= stage { n } else { 1.0 };
    let mut weights = p * wb / div(3);
    let mut st = p * states / div(1);
    // Stepped in backward: one parameter's gradient and its own optimizer's temporaries.
    let (grads, mut tmp) = if r.optimizer_in_bwd {
        (
            largest * gb / div(2),
            step_temp_bytes(r.optimizer, r.precision, r.optimizer_step, largest, largest) / div(1),
        )
    } else {
        (
            p * gb / div(2),
            step_temp_bytes(r.optimizer, r.precision, r.optimizer_step, p, largest) / div(1),
        )
    };
    if r.offload != Offload::None {
        st = 0.0;
        tmp = 0.0;
    }
    if r.paged_optimizer {
        tmp = 0.0; // bitsandbytes updates in place, one parameter at a time
    }
    if z >= 3 {
        // ZeRO-3 gathers each layer's 16-bit weights before use (`GATHERED_LAYERS`).
        let layer = p / f64::from(a.layers.max(1));
        let gathered = GATHERED_LAYERS * wb * layer.max(a.embedding_params());
        weights = if r.offload == Offload::OptimizerParams {
            gathered
        } else {
            weights + gathered
        };
    }
    (weights, grads, st, tmp, 0.0)
}

/// The frozen base of LoRA/QLoRA as it sits in memory: `base` (the loaded weights) plus PEFT's
/// `prepare_model_for_kbit_training` upcast of the remaining 16-bit parameters (embeddings,
/// head, norms) to fp32 (see `kbit_upcast`).
fn frozen_base_bytes(a: &ModelArch, r: &Run, base: f64) -> f64 {
    if kbit_upcast(r.weights) {
        base + 2.0 * (a.embedding_params() + a.lm_head_params())
    } else {
        base
    }
}

/// LoRA/QLoRA: the frozen base (`frozen_base_bytes`), plus fp32 adapters with their gradients
/// and states. Under ZeRO stage s over n GPUs the adapters' states (s ≥ 1), gradients (s ≥ 2)
/// and weights (s = 3) are divided, and at stage 3 the frozen base too, each GPU holding its
/// shard plus the gathered layers (`GATHERED_LAYERS`); with optimizer offload the states and the
/// step live in host RAM, with parameter offload the base's shards as well (`host_bytes`).
fn adapter_model_states(a: &ModelArch, r: &Run, base: f64, n: f64) -> (f64, f64, f64, f64, f64) {
    let base = frozen_base_bytes(a, r, base);
    let z = r.zero_stage_in_effect();
    let div = |stage: u32| if z >= stage { n } else { 1.0 };
    // The largest unit gathered: one block, or the embedding or head with their bytes per
    // parameter (16-bit beside quantized blocks, fp32 after the k-bit upcast).
    let end_bytes = if r.weights.is_quantized() {
        2.0
    } else {
        base / a.params.max(1.0)
    } + if kbit_upcast(r.weights) { 2.0 } else { 0.0 };
    let ends = end_bytes * (a.embedding_params() + a.lm_head_params());
    let layer = (base - ends).max(0.0) / f64::from(a.layers.max(1));
    let gathered = GATHERED_LAYERS * layer.max(end_bytes * a.embedding_params());
    let weights = match (r.offload, z) {
        (Offload::OptimizerParams, _) => gathered.min(base),
        (_, 3) => (base / n + gathered).min(base),
        _ => base,
    };
    let ad = lora::adapters(a, &r.lora_targets);
    let lp = ad.params(r.lora_rank);
    // The largest adapter matrix: rank × the widest input or output of an adapted module.
    let largest = (f64::from(r.lora_rank) * ad.widest).min(lp);
    // PEFT keeps adapter weights in fp32 (`autocast_adapter_dtype=True`), so gradients and
    // AdamW moments are fp32 too.
    let states = state_bytes(r.optimizer, Precision::Fp32, a.hidden);
    let step = |n: f64| {
        if r.paged_optimizer {
            0.0 // bitsandbytes updates in place, one parameter at a time
        } else {
            step_temp_bytes(r.optimizer, Precision::Fp32, r.optimizer_step, n, largest)
        }
    };
    if r.optimizer_in_bwd {
        return (
            weights,
            0.0,
            0.0,
            step(largest),
            lp * (4.0 + states) + 4.0 * largest,
        );
    }
    let (states, temp) = if r.offload == Offload::None {
        (lp * states / div(1), step(lp) / div(1))
    } else {
        (0.0, 0.0)
    };
    let adapters = 4.0 * lp / div(3) + 4.0 * lp / div(2) + states;
    (weights, 0.0, 0.0, temp, adapters)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::WorkloadFile;
    use crate::units::GIB;
    use std::path::Path;

    fn resolved(run: &str) -> Workload {
        let text = format!(
            "[gpu]\nvram_gib = 80\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\n{run}"
        );
        WorkloadFile::parse(&text, "t")
            .unwrap()
            .resolve(Path::new("."), None)
            .unwrap()
    }

    fn est(run: &str) -> Breakdown {
        estimate(&resolved(run))
    }

    #[test]
    fn mixed_adamw_step_is_20_bytes_per_param() {
        // At the step of a short sequence: fp32 weights (4), grads (4), AdamW moments (8) and
        // foreach AdamW's `_foreach_sqrt` temporary (4).
        let b = est("precision = \"bf16-mixed\"\nseq = 16\n");
        let p = 8_030_261_248.0;
        let states = (b.get(ComponentId::Weights)
            + b.get(ComponentId::Gradients)
            + b.get(ComponentId::OptimizerStates)
            + b.get(ComponentId::Workspace)) as f64;
        assert!((states - 20.0 * p).abs() < 16.0, "{states}");
    }

    #[test]
    fn the_step_implementation_sets_the_temporaries() {
        // torch.optim AdamW at a short sequence (the step is the peak): foreach makes one fp32
        // moment per parameter, fused none, the for-loop two of the largest tensor.
        let run = |step: &str| {
            est(&format!(
                "precision = \"bf16-mixed\"\nseq = 16\noptimizer_step = \"{step}\"\n"
            ))
        };
        let p = 8_030_261_248.0;
        let largest = crate::types::arch::tests::llama31_8b().largest_param_elements();
        assert_eq!(largest, 128_256.0 * 4096.0);
        assert!((run("foreach").get(ComponentId::Workspace) as f64 - 4.0 * p).abs() < 16.0);
        assert_eq!(run("fused").get(ComponentId::Workspace), 0);
        let looped = run("for-loop");
        assert!((looped.get(ComponentId::Workspace) as f64 - 8.0 * largest).abs() < 16.0);
        assert!(looped.peak.tensors_bytes < run("foreach").peak.tensors_bytes);
    }

    #[test]
    fn a_step_in_backward_holds_one_gradient() {
        let all = est("precision = \"bf16-mixed\"\nseq = 16\n");
        let b = est("precision = \"bf16-mixed\"\nseq = 16\noptimizer_in_bwd = true\n");
        let largest = crate::types::arch::tests::llama31_8b().largest_param_elements();
        // At most one fp32 gradient and its own foreach temporary, during backward (here the
        // end of the forward, with autocast's weight copies, is the peak).
        assert!(b.get(ComponentId::Gradients) as f64 <= 4.0 * largest + 16.0);
        assert!(b.get(ComponentId::Workspace) as f64 <= 4.0 * largest + 16.0);
        assert_eq!(
            b.get(ComponentId::OptimizerStates),
            all.get(ComponentId::OptimizerStates)
        );
        assert!(b.peak.tensors_bytes + (7 << 30) < all.peak.tensors_bytes);
    }

    fn on_card(vram_gib: u32, run: &str) -> Workload {
        let text = format!(
            "[gpu]\nvram_gib = {vram_gib}\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\n{run}"
        );
        WorkloadFile::parse(&text, "t")
            .unwrap()
            .resolve(Path::new("."), None)
            .unwrap()
    }

    #[test]
    fn paged_states_leave_the_allocator_and_page_out_when_the_card_is_short() {
        // Pure bf16 full fine-tuning with 8-bit AdamW: 16 GB weights, 16 GB gradients, 16 GB
        // of uint8 moments (the paged part) + their fp32 absmax.
        let run = "precision = \"bf16\"\noptimizer = \"adamw-8bit\"\ncheckpointing = \"full\"\nseq = 512\n";
        let paged_run = format!("{run}paged_optimizer = true\n");
        let moments = 2.0 * on_card(80, run).model.params;
        // On a card with room: the moments are on the card but not in memory_allocated().
        let (kept, paged) = (
            estimate(&on_card(80, run)),
            estimate(&on_card(80, &paged_run)),
        );
        let left = kept.peak.tensors_bytes as f64 - paged.peak.tensors_bytes as f64;
        assert!((left - moments).abs() < 1e6, "{left} vs {moments}");
        assert!(kept.required_bytes().abs_diff(paged.required_bytes()) < 1 << 20);
        assert_eq!(paged_out_bytes(&on_card(80, &paged_run)), 0.0);
        // On 40 GiB it is short; paged, the driver evicts moments until the margin is free.
        assert!(!estimate(&on_card(40, run)).fits());
        let short = on_card(40, &paged_run);
        let b = estimate(&short);
        let out = paged_out_bytes(&short);
        assert!(out > 4.0 * GIB && out < moments, "{out}");
        let margin = crate::memory::breakdown::margin_bytes(b.capacity_bytes);
        assert!(b.required_bytes() + margin <= b.capacity_bytes, "{b:?}");
        assert!(b.warnings.iter().any(|m| m.id == "warn.training.paged_out"));
        // On 24 GiB weights and gradients alone do not fit: all but the largest parameter's
        // moments (the embedding, 128256 × 4096) are paged out and it is still short.
        let tiny = on_card(24, &paged_run);
        let working = 128_256.0 * 4096.0 * 2.0;
        assert!((paged_out_bytes(&tiny) - (moments - working)).abs() < 1e6);
        assert!(!estimate(&tiny).fits());
    }

    #[test]
    fn packing_holds_the_tokens_of_its_rows_and_sdpa_masks_padded_or_packed_rows() {
        let lora = "method = \"lora\"\nseq = 2048\n";
        let at = |run: &str| estimate(&on_card(80, &format!("{lora}{run}")));
        let tensors = |run: &str| at(run).peak.tensors_bytes as f64;
        let layers = 32.0;
        // Flash attention takes no mask: batch × seq tokens hold the same, packed or not, and
        // two packed rows hold what two unpadded rows do, far less than eight padded ones.
        let flash = "attention = \"flash\"\navg_seq = 512\n";
        assert_eq!(
            tensors(&format!("{flash}batch = 2\npacking = true\n")),
            tensors(&format!("{flash}batch = 2\n"))
        );
        assert!(
            2.5 * tensors(&format!("{flash}batch = 2\npacking = true\n"))
                < tensors(&format!("{flash}batch = 8\n"))
        );
        // SDPA, eight rows padded to 2048: each layer saves a bf16 bias of the mask (the boolean
        // mask itself is not saved for backward without checkpointing).
        let padded = tensors("batch = 8\navg_seq = 512\n") - tensors("batch = 8\n");
        let mask = 8.0 * 2048.0 * 2048.0;
        assert!((padded - mask * 2.0 * layers).abs() < 1e6, "{padded}");
        // One sample per row, unpadded: SDPA runs causal, no mask.
        assert_eq!(
            tensors("batch = 1\navg_seq = 512\n"),
            tensors("batch = 1\n")
        );
        // Packed, the two rows reach the model as one of 4096 tokens: its mask is 4096².
        let packed = at("batch = 2\navg_seq = 512\npacking = true\n");
        let row = 4096.0 * 4096.0;
        let extra = packed.peak.tensors_bytes as f64 - tensors("batch = 2\n");
        assert!((extra - row * 2.0 * layers).abs() < 1e6, "{extra}");
        assert!(
            packed
                .warnings
                .iter()
                .any(|m| m.id == "warn.training.packing_without_flash")
        );
        assert!(
            !at(&format!("{flash}batch = 2\npacking = true\n"))
                .warnings
                .iter()
                .any(|m| m.id == "warn.training.packing_without_flash")
        );
        // Eager attention scores every token of the packed row against the whole row (4096, not
        // the 2048 of an unpacked row): 2.5 score-sized tensors of bf16 per head, layer, token.
        let eager = "attention = \"eager\"\nbatch = 2\navg_seq = 512\n";
        let wider = tensors(&format!("{eager}packing = true\n")) - tensors(eager);
        let scores = layers * 4096.0 * 2.5 * 2.0 * 32.0 * (4096.0 - 2048.0);
        assert!((wider - scores).abs() < 1e6, "{wider} vs {scores}");
        // Full checkpointing saves the boolean mask as a layer input; only the recomputed layer
        // holds a bias, and the peak here is the loss's backward (the logits), before any.
        let ckpt = "checkpointing = \"full\"\nbatch = 2\n";
        let kept = tensors(&format!("{ckpt}avg_seq = 512\npacking = true\n")) - tensors(ckpt);
        assert!((kept - row).abs() < 1e6, "{kept}");
    }

    #[test]
    fn torch_compile_is_estimated_as_eager_and_says_so() {
        let run = "method = \"lora\"\nseq = 1024\n";
        let eager = estimate(&on_card(80, run));
        let compiled = estimate(&on_card(80, &format!("{run}torch_compile = true\n")));
        assert_eq!(compiled.peak, eager.peak);
        let says = |b: &Breakdown| {
            b.warnings
                .iter()
                .any(|m| m.id == "warn.training.compile_as_eager")
        };
        assert!(says(&compiled) && !says(&eager));
    }

    #[test]
    fn paged_lora_pages_only_matrices_of_1e5_elements() {
        // Llama 3.1 8B, rank 16 on q and v: every lora_A is 16 × 4096 = 65,536 elements and
        // every lora_B 4096 × 16 or 1024 × 16: none reaches bitsandbytes' 1e5, nothing is paged.
        let qv = "method = \"lora\"\nlora_targets = \"qv\"\n";
        assert_eq!(
            paged_states(&on_card(80, &format!("{qv}paged_optimizer = true\n"))),
            Paged::default()
        );
        // All linear layers: the MLP's lora_A of down_proj (16 × 14336) and lora_B of gate/up
        // (14336 × 16) are paged: 3 × 229,376 elements a layer, 8 B of fp32 moments each.
        let all = on_card(80, "method = \"lora\"\npaged_optimizer = true\n");
        let p = paged_states(&all);
        assert_eq!(p.bytes, 32.0 * 3.0 * 229_376.0 * 8.0);
        assert_eq!(p.working_set, 229_376.0 * 8.0);
    }

    #[test]
    fn activation_offload_moves_the_layer_inputs_to_the_host() {
        // LoRA on a bf16 base (no optimizer-step peak): the loss's backward is the peak.
        let run = "method = \"lora\"\nprecision = \"bf16-mixed\"\ncheckpointing = \"full\"\nbatch = 4\nseq = 4096\nloss = \"chunked\"\n";
        let kept = est(run);
        let off = est(&format!("{run}activation_offload = true\n"));
        // 32 bf16 layer inputs of 4 × 4096 × 4096 go to the host: 4 GiB.
        let inputs = 32.0 * 4.0 * 4096.0 * 4096.0 * 2.0;
        let saved = kept.peak.tensors_bytes as f64 - off.peak.tensors_bytes as f64;
        assert!(saved > 0.5 * inputs && saved <= inputs, "{saved}");
        assert_eq!(
            offloaded_activation_bytes(&resolved(&format!("{run}activation_offload = true\n"))),
            inputs
        );
    }

    #[test]
    fn zero3_divides_model_states() {
        let one = est("precision = \"bf16-mixed\"\nseq = 16\n");
        let text = "[gpu]\nvram_gib = 80\ncount = 8\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nprecision = \"bf16-mixed\"\nseq = 16\nzero_stage = 3\n";
        let w = WorkloadFile::parse(text, "t")
            .unwrap()
            .resolve(Path::new("."), None)
            .unwrap();
        let z3 = estimate(&w);
        // ZeRO paper: (2 + 2 + 12)Ψ / N_d, plus the gathered layer.
        let p = 8_030_261_248.0;
        let states = (z3.get(ComponentId::Gradients) + z3.get(ComponentId::OptimizerStates)) as f64;
        assert!((states - 14.0 * p / 8.0).abs() < 16.0);
        assert!(z3.peak.tensors_bytes < one.peak.tensors_bytes / 4);
    }

    fn on_gpus(gpus: u32, gpu: &str, run: &str) -> Workload {
        let text = format!(
            "[gpu]\n{gpu}\ncount = {gpus}\n[model]\npreset = \"llama-3.1-70b\"\n[run]\ntask = \"training\"\nseq = 2048\ncheckpointing = \"full\"\nattention = \"flash\"\n{run}"
        );
        WorkloadFile::parse(&text, "t")
            .unwrap()
            .resolve(Path::new("."), None)
            .unwrap()
    }

    #[test]
    fn zero3_and_fsdp_shard_a_frozen_base() {
        // A 70B LoRA on 8 GPUs: ZeRO-3 / FULL_SHARD holds an eighth of the bf16 base and the
        // two gathered layers; data parallelism keeps the whole base on each GPU.
        let gpu = "vram_gib = 80";
        let lora = "method = \"lora\"\n";
        let dp = estimate(&on_gpus(8, gpu, lora));
        let z3 = estimate(&on_gpus(8, gpu, &format!("{lora}zero_stage = 3\n")));
        let a = on_gpus(8, gpu, lora).model;
        let base = 2.0 * a.params;
        assert!((dp.get(ComponentId::Weights) as f64 - base).abs() < 16.0);
        // The largest unit gathered is a block or the embedding (here the 1.05B embedding).
        let layer = 2.0 * a.block_params() / f64::from(a.layers);
        let unit = layer.max(2.0 * a.embedding_params());
        assert!(unit > layer);
        let shard = base / 8.0 + GATHERED_LAYERS * unit;
        assert!(
            (z3.get(ComponentId::Weights) as f64 - shard).abs() < 16.0,
            "{} {shard}",
            z3.get(ComponentId::Weights)
        );
        // The adapters' states, gradients and weights are sharded too.
        assert!(z3.get(ComponentId::Adapters) * 7 < dp.get(ComponentId::Adapters));
        assert!(dp.peak.tensors_bytes > (140u64 << 30) && z3.peak.tensors_bytes < (40u64 << 30));
    }

    #[test]
    fn parameter_offload_keeps_the_base_in_host_ram() {
        // One 24 GiB card, a 70B QLoRA base offloaded (DeepSpeed offload_param, FSDP2
        // CPUOffloadPolicy): only the gathered layers are on the GPU.
        let gpu = "preset = \"rtx-4090\"\nhost_ram_gib = 64";
        let run = "method = \"qlora\"\noffload = \"optimizer+params\"\n";
        let w = on_gpus(1, gpu, run);
        let b = estimate(&w);
        let kept = on_gpus(1, gpu, "method = \"qlora\"\n");
        let base = kept.weight_bytes().gpu + 2.0 * 2.0 * kept.model.embedding_params();
        assert!(estimate(&kept).get(ComponentId::Weights) as f64 > 0.99 * base);
        assert!(
            (b.get(ComponentId::Weights) as f64) < base / 4.0,
            "{}",
            b.get(ComponentId::Weights)
        );
        // The host holds the base and the optimizer's share; 64 GiB holds a 4-bit 70B.
        let host = host_bytes(&w);
        assert!(host > base && host < base + 4.0 * GIB, "{host} {base}");
        assert!(host_fits(&w));
        // A 16-bit 70B base does not fit 64 GiB: the estimate says so.
        let bf16 = on_gpus(
            1,
            gpu,
            "method = \"lora\"\noffload = \"optimizer+params\"\n",
        );
        assert!(!host_fits(&bf16));
        let warned = estimate(&bf16)
            .warnings
            .iter()
            .any(|m| m.id == "warn.training.offload_ram_short");
        assert!(warned, "{:?}", estimate(&bf16).warnings);
    }

    #[test]
    fn optimizer_offload_moves_the_adapters_states() {
        let gpu = "vram_gib = 80";
        let lora = "method = \"lora\"\n";
        let kept = estimate(&on_gpus(1, gpu, lora));
        let off = estimate(&on_gpus(
            1,
            gpu,
            &format!("{lora}offload = \"optimizer\"\n"),
        ));
        let a = on_gpus(1, gpu, lora).model;
        let lp = lora::adapters(&a, &LoraTargets::AllLinear).params(16);
        // AdamW's two fp32 moments leave the GPU; the fp32 weights and gradients stay.
        assert_eq!(
            kept.get(ComponentId::Adapters) - off.get(ComponentId::Adapters),
            (8.0 * lp) as u64
        );
        assert_eq!(
            off.get(ComponentId::Weights),
            kept.get(ComponentId::Weights)
        );
    }

    #[test]
    fn qlora_is_far_below_full() {
        let q = est(
            "method = \"qlora\"\nseq = 2048\ncheckpointing = \"full\"\nattention = \"flash\"\n",
        );
        let f =
            est("method = \"full\"\nseq = 2048\ncheckpointing = \"full\"\nattention = \"flash\"\n");
        assert!(
            q.get(ComponentId::Weights) as f64 > 5.0 * GIB
                && (q.get(ComponentId::Weights) as f64) < 9.0 * GIB
        );
        assert!(q.peak.tensors_bytes * 4 < f.peak.tensors_bytes);
        assert!(q.get(ComponentId::Adapters) > 0);
    }

    #[test]
    fn autocast_cache_peaks_at_the_end_of_a_checkpointed_forward() {
        // Checkpointing, a small optimizer state and earlier micro-batches' gradients: the peak
        // is the end of the forward, where autocast still caches every 16-bit weight copy.
        let b = est(
            "precision = \"bf16-mixed\"\noptimizer = \"adafactor\"\ncheckpointing = \"full\"\ngrad_accum = 4\nseq = 1024\n",
        );
        let a = crate::types::arch::tests::llama31_8b();
        let head = a.lm_head_params().max(a.embedding_params());
        let copies = 2.0 * (a.params - a.embedding_params() - a.lm_head_params());
        let acts = b.get(ComponentId::Activations) as f64;
        assert!(
            acts > copies && acts < copies + 2.0 * GIB,
            "{acts} {copies}"
        );
        assert_eq!(
            b.get(ComponentId::Logits) as f64,
            1024.0 * 128_256.0 * FORWARD_END_LOGITS_BYTES_PER_VOCAB_TOKEN + 2.0 * head
        );
        assert!(b.get(ComponentId::Gradients) > 0);
        // Without autocast (pure bf16) nothing is cached.
        let pure = est(
            "precision = \"bf16\"\noptimizer = \"adafactor\"\ncheckpointing = \"full\"\ngrad_accum = 4\nseq = 1024\n",
        );
        assert!((pure.get(ComponentId::Activations) as f64) < copies / 4.0);
    }

    #[test]
    fn logits_are_vocab_times_tokens() {
        let b = est(
            "method = \"lora\"\nseq = 1024\nbatch = 2\nattention = \"flash\"\ncheckpointing = \"full\"\n",
        );
        assert_eq!(
            b.get(ComponentId::Logits) as f64,
            2048.0 * 128_256.0 * LOGITS_BYTES_PER_VOCAB_TOKEN
        );
    }
}
