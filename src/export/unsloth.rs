//! Unsloth: `FastLanguageModel.from_pretrained` and `FastLanguageModel.get_peft_model` with the
//! plan's settings. Argument names from unsloth/models/loader.py
//! (`FastLanguageModel.from_pretrained`: max_seq_length, dtype, load_in_4bit, load_in_8bit,
//! full_finetuning) and unsloth/models/llama.py (`FastLlamaModel.get_peft_model`: r,
//! target_modules, lora_alpha, lora_dropout, use_gradient_checkpointing); `tests/export.rs`
//! checks them against tests/data/library-keys.json, read from Unsloth's source.
//!
//! `use_gradient_checkpointing="unsloth"` is Unsloth's offloaded checkpointing (the
//! checkpointed layers' inputs in CPU RAM, `run.activation_offload`); `True` is plain
//! checkpointing. Unsloth's `get_peft_model` iterates `target_modules` as a list of names, so a
//! selection that is not one per name (`memory::lora::leaf_names`) is refused.

use super::{ExportKind, comments, hf_repo};
use crate::memory::lora::leaf_names;
use crate::types::dtype::WeightFormat;
use crate::types::options::{Checkpointing, Loss, Method, Precision};
use crate::types::workload::Workload;

/// The Python, or why Unsloth cannot run the plan.
pub fn render(w: &Workload) -> Result<String, String> {
    let r = &w.run;
    if w.gpu.count > 1 || r.zero_stage_in_effect() > 0 {
        return Err(format!(
            "Unsloth trains on one GPU without ZeRO or FSDP sharding and offload; the plan uses {} GPU(s) at ZeRO stage {} (use the DeepSpeed or accelerate exports)",
            w.gpu.count,
            r.zero_stage_in_effect()
        ));
    }
    if r.optimizer_in_bwd {
        return Err("run.optimizer_in_bwd: Unsloth's trainers step the optimizer after backward (use the torchtune export)".into());
    }
    let dtype = match r.precision {
        Precision::Bf16 | Precision::Bf16Mixed => "torch.bfloat16",
        Precision::Fp16Mixed => "torch.float16",
        Precision::Fp32 => {
            return Err("run.precision = 'fp32': Unsloth loads the model in 16 bits (dtype float16 or bfloat16); plan with bf16-mixed or fp16-mixed".into());
        }
    };
    let (load_4bit, load_8bit) = match (r.method, r.weights) {
        (Method::Qlora, WeightFormat::Nf4) => (true, false),
        (Method::Qlora, WeightFormat::Int8) => (false, true),
        (Method::Qlora, f) => {
            return Err(format!(
                "run.weights = '{f}': Unsloth's quantized LoRA loads bitsandbytes NF4 (load_in_4bit) or int8 (load_in_8bit)"
            ));
        }
        _ => (false, false),
    };
    let gc = match (r.checkpointing, r.activation_offload) {
        (_, true) => "\"unsloth\"",
        (Checkpointing::None, false) => "False",
        _ => "True",
    };
    let mut notes = vec![format!(
        "VRAM Doctor plan for {} on {}; train with trl's SFTTrainer and the TrainingArguments export ({}: SFTConfig takes the same fields).",
        w.model_name,
        w.gpu.name,
        ExportKind::HfTraining.file_name()
    )];
    if r.loss == Loss::Standard {
        notes.push("Unsloth computes the loss with its fused cross-entropy (no full fp32 logits), so it holds less than the plan's standard loss.".into());
    }
    if r.checkpointing == Checkpointing::Full && !r.activation_offload {
        notes.push("use_gradient_checkpointing=\"unsloth\" also moves the checkpointed layers' inputs to CPU RAM: less GPU memory than this plan.".into());
    }
    if r.checkpointing == Checkpointing::Selective {
        notes.push("The plan assumes selective recomputation; Unsloth's checkpointing recomputes whole layers (less memory, slower).".into());
    }
    if r.packing {
        notes.push(format!(
            "The plan packs examples: pass packing=True, max_length={} in the SFTConfig (TRL packs whole examples into rows of max_length tokens, padding-free).",
            r.seq
        ));
    }
    if r.method == Method::Qlora {
        notes.push("Unsloth does not upcast the non-quantized parameters to fp32 as PEFT's prepare_model_for_kbit_training (which the plan assumes) does: a little less memory.".into());
    }
    let mut s = comments(&notes);
    s.push_str(&format!(
        "import torch\nfrom unsloth import FastLanguageModel\n\nmodel, tokenizer = FastLanguageModel.from_pretrained(\n    model_name=\"{}\",\n    max_seq_length={},\n    dtype={dtype},\n    load_in_4bit={},\n    load_in_8bit={},\n    full_finetuning={},\n    use_gradient_checkpointing={gc},\n)\n",
        hf_repo(w),
        r.seq,
        py(load_4bit),
        py(load_8bit),
        py(r.method == Method::Full),
    ));
    if r.method == Method::Full {
        return Ok(s);
    }
    let names = leaf_names(&w.model, &r.lora_targets).ok_or_else(|| {
        format!(
            "run.lora_targets = '{}': Unsloth's get_peft_model takes module names applied to every layer, and this selection is not one (some layers only, routed experts, or modules the model lacks)",
            r.lora_targets
        )
    })?;
    let list: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    s.push_str(&format!(
        "model = FastLanguageModel.get_peft_model(\n    model,\n    r={},\n    lora_alpha={},\n    lora_dropout=0,\n    target_modules=[{}],\n    use_gradient_checkpointing={gc},\n)\n",
        r.lora_rank,
        2 * r.lora_rank,
        list.join(", ")
    ));
    Ok(s)
}

fn py(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}
