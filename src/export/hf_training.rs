//! Hugging Face `TrainingArguments`, as Python and as the command-line flags
//! `HfArgumentParser` turns into the same fields (`--field_name value`). Field names and
//! `optim` values are those of `transformers.TrainingArguments` / `OptimizerNames`
//! (transformers `training_args.py`).

use super::{command_line, comments, hf_repo};
use crate::types::options::{
    Attention, Checkpointing, Loss, Method, Optimizer, OptimizerStep, Precision,
};
use crate::types::workload::Workload;

/// `TrainingArguments.optim` for an optimizer and how its step runs (transformers
/// `OptimizerNames`; `adamw_torch_fused` passes `fused=True`, `trainer_optimizer.py`
/// `_get_adamw_torch`). The for-loop step has no name: it is noted (`notes`). Paged: the
/// bitsandbytes forms (`paged_*`; `trainer_optimizer.py` passes `is_paged = "paged" in
/// optim_name`).
pub fn optim_name(o: Optimizer, step: OptimizerStep, paged: bool) -> &'static str {
    match o {
        Optimizer::AdamW if paged => "paged_adamw_32bit",
        Optimizer::AdamW8bit if paged => "paged_adamw_8bit",
        Optimizer::Lion if paged => "paged_lion_32bit",
        Optimizer::AdamW if step == OptimizerStep::Fused => "adamw_torch_fused",
        Optimizer::AdamW => "adamw_torch",
        Optimizer::AdamW8bit => "adamw_bnb_8bit",
        Optimizer::Sgd => "sgd",
        Optimizer::Adafactor => "adafactor",
        Optimizer::Lion => "lion_32bit",
    }
}

/// Whether the run goes through DeepSpeed (ZeRO sharding or offload).
pub fn uses_deepspeed(w: &Workload) -> bool {
    w.run.zero_stage_in_effect() > 0
}

/// A value of a field: its Python literal and its command-line form (`None`: a bare switch).
struct Field {
    name: &'static str,
    python: String,
    cli: Option<String>,
}

fn field(name: &'static str, v: impl ToString) -> Field {
    let v = v.to_string();
    Field {
        name,
        python: v.clone(),
        cli: Some(v),
    }
}

fn string(name: &'static str, v: &str) -> Field {
    Field {
        name,
        python: format!("\"{v}\""),
        cli: Some(v.to_string()),
    }
}

fn switch(name: &'static str) -> Field {
    Field {
        name,
        python: "True".into(),
        cli: None,
    }
}

fn fields(w: &Workload) -> Vec<Field> {
    let r = &w.run;
    let mut f = vec![
        string("output_dir", "out"),
        field("per_device_train_batch_size", r.batch),
        field("gradient_accumulation_steps", r.grad_accum),
    ];
    match r.precision {
        Precision::Bf16Mixed | Precision::Bf16 => f.push(switch("bf16")),
        Precision::Fp16Mixed => f.push(switch("fp16")),
        Precision::Fp32 => {}
    }
    if r.checkpointing != Checkpointing::None {
        f.push(switch("gradient_checkpointing"));
    }
    f.push(string(
        "optim",
        optim_name(r.optimizer, r.optimizer_step, r.paged_optimizer),
    ));
    if r.torch_compile {
        // transformers `TrainingArguments.torch_compile` (inductor unless
        // torch_compile_backend says otherwise).
        f.push(switch("torch_compile"));
    }
    if r.loss == Loss::Chunked {
        // Liger's fused linear cross-entropy never materialises the full logits
        // (transformers `use_liger_kernel`, linkedin/Liger-Kernel README).
        f.push(switch("use_liger_kernel"));
    }
    if uses_deepspeed(w) {
        f.push(string(
            "deepspeed",
            super::ExportKind::DeepSpeed.file_name(),
        ));
    }
    f
}

/// How the examples fill a batch (`run.packing`): `TrainingArguments` has no field for it; TRL's
/// `SFTConfig` (a `TrainingArguments`) has `packing` and `max_length` (trl/trainer/sft_config.py),
/// torchtune `dataset.packed` with `tokenizer.max_seq_len`.
fn packing_note(w: &Workload) -> String {
    let (s, b) = (w.run.seq, w.run.batch);
    if w.run.packing {
        let flash = if w.run.attention == Attention::Flash {
            ""
        } else {
            " TRL warns unless the model is loaded with attn_implementation=\"flash_attention_2\"; the plan counts the mask transformers builds over the packed row without it."
        };
        format!(
            "The plan packs whole examples into rows of {s} tokens, {b} per device batch (per_device_train_batch_size counts rows): trl's SFTConfig (a TrainingArguments) with packing=True, max_length={s} (its default packing_strategy=\"bfd\" is padding-free); torchtune dataset.packed: True with tokenizer.max_seq_len: {s}.{flash}"
        )
    } else {
        format!(
            "Truncate examples to {s} tokens (trl SFTConfig max_length={s}); each batch is padded to its longest example, and the plan's peak is a batch with one of {s} tokens."
        )
    }
}

/// What the arguments cannot say: how to load the model and launch the run.
fn notes(w: &Workload) -> Vec<String> {
    let r = &w.run;
    let mut n = vec![
        format!(
            "VRAM Doctor plan for {} on {} × {}.",
            w.model_name, w.gpu.count, w.gpu.name
        ),
        packing_note(w),
    ];
    if r.method != Method::Full {
        // Adapters: the base weights stay as loaded, AMP keeps the adapters in fp32.
    } else if r.precision == Precision::Bf16 {
        n.push("Pure bf16: load the model with dtype=torch.bfloat16, so weights and optimizer states stay bf16 (no fp32 master copy).".into());
    } else if r.precision == Precision::Bf16Mixed || r.precision == Precision::Fp16Mixed {
        n.push("Mixed precision: load the model in fp32 (the default) so AMP keeps fp32 master weights, as the plan assumes.".into());
    }
    if r.precision == Precision::Bf16 && uses_deepspeed(w) {
        n.push("DeepSpeed's bf16 mode keeps an fp32 master copy of the weights (sharded by ZeRO), which the plan's pure-bf16 figure leaves out.".into());
    }
    if r.checkpointing == Checkpointing::Selective {
        n.push("The plan assumes selective recomputation; the Trainer's gradient_checkpointing recomputes whole layers (less memory, ~25% slower).".into());
    }
    if r.optimizer == Optimizer::AdamW && r.optimizer_step == OptimizerStep::ForLoop {
        n.push("The plan's optimizer steps one tensor at a time: `optim` has no name for it; pass optimizers=(torch.optim.AdamW(model.parameters(), foreach=False), None) to the Trainer.".into());
    }
    if r.optimizer_in_bwd {
        n.push("The plan steps the optimizer inside the backward pass (torchtune optimizer_in_bwd); the Trainer cannot: its peak holds every gradient. Use the torchtune recipe, or register_post_accumulate_grad_hook steps as in PyTorch's \"optimizer step in backward\" tutorial.".into());
    }
    if r.activation_offload {
        n.push("The plan offloads the checkpointed layers' inputs to CPU RAM; TrainingArguments has no switch for it: use trl's SFTConfig (a TrainingArguments) with activation_offloading=True, torchtune's enable_activation_offloading: True, or Unsloth's use_gradient_checkpointing=\"unsloth\". DeepSpeed's activation_checkpointing.cpu_checkpointing covers only deepspeed.checkpointing, not the Trainer's gradient checkpointing.".into());
    }
    if r.paged_optimizer {
        n.push("The paged optimizer's states live in CUDA managed memory (bitsandbytes): on Linux the driver moves them to CPU RAM when the card is short, at the cost of PCIe traffic each step. torchtune: optimizer._component_: bitsandbytes.optim.PagedAdamW8bit (or PagedAdamW, PagedLion); Unsloth and TRL take the same optim name.".into());
    }
    if r.torch_compile {
        n.push("torch_compile=True compiles the model with inductor (torchtune: compile: True); the plan's memory is eager mode's, which compiled training usually stays under.".into());
    }
    if r.loss == Loss::Chunked {
        n.push("use_liger_kernel needs `pip install liger-kernel` and a model family it patches (Llama, Mistral, Qwen, Gemma …).".into());
    }
    if r.attention == Attention::Flash {
        n.push("Load the model with attn_implementation=\"flash_attention_2\".".into());
    }
    if r.method != Method::Full {
        n.push(format!(
            "{} adapters: wrap the model as in the PEFT export ({}).",
            r.method,
            super::ExportKind::Peft.file_name()
        ));
    }
    if w.gpu.count > 1 {
        n.push(format!(
            "Launch on all {} GPUs: {}.",
            w.gpu.count,
            launcher(w)
        ));
    }
    n
}

/// The command that starts the training script.
fn launcher(w: &Workload) -> String {
    match (w.gpu.count, uses_deepspeed(w)) {
        (1, false) => "python train.py".into(),
        (n, true) => format!("deepspeed --num_gpus {n} train.py"),
        (n, false) => format!("torchrun --nproc_per_node {n} train.py"),
    }
}

/// The arguments as Python for the model repository the plan is for.
pub fn python(w: &Workload) -> String {
    let mut s = comments(&notes(w));
    s.push_str(&format!("# Model: {}\n", hf_repo(w)));
    s.push_str(
        "from transformers import TrainingArguments\n\ntraining_args = TrainingArguments(\n",
    );
    for f in fields(w) {
        s.push_str(&format!("    {}={},\n", f.name, f.python));
    }
    s.push_str(")\n");
    s
}

/// The same arguments as flags of a script that parses `TrainingArguments` with
/// `HfArgumentParser`.
pub fn cli(w: &Workload) -> String {
    let fs = fields(w);
    let flags: Vec<(String, Option<String>)> = fs
        .iter()
        .map(|f| (format!("--{}", f.name), f.cli.clone()))
        .collect();
    let refs: Vec<(&str, Option<String>)> =
        flags.iter().map(|(f, v)| (f.as_str(), v.clone())).collect();
    let mut s = comments(&notes(w));
    s.push_str(&command_line(&launcher(w), &refs));
    s
}
