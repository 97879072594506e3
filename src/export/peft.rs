//! PEFT `LoraConfig` (and bitsandbytes `BitsAndBytesConfig` for QLoRA) with the loading code
//! around them. Argument names from peft `LoraConfig` and `prepare_model_for_kbit_training`
//! (peft docs "LoRA", "Quantization"); QLoRA's NF4 + double quantization + 16-bit compute is
//! the QLoRA paper's recipe (Dettmers et al. 2023).

use super::{ExportKind, comments};
use crate::engines::transformers::export::{
    bnb_config, compute_dtype, format_note, load_call, model_class,
};
use crate::memory::lora::{PeftTargets, peft_targets};
use crate::types::options::{Checkpointing, Method, Objective};
use crate::types::workload::Workload;

/// `target_modules` as Python: the model's own module names for a keyword
/// (`memory::lora::peft_targets`), a pattern as a string literal (JSON's escapes are Python's).
pub fn target_modules(w: &Workload) -> String {
    match peft_targets(&w.model, &w.run.lora_targets) {
        PeftTargets::AllLinear => "\"all-linear\"".to_string(),
        PeftTargets::List(n) => format!(
            "[{}]",
            n.iter()
                .map(|x| format!("\"{x}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        PeftTargets::Pattern(p) => serde_json::Value::from(p).to_string(),
    }
}

pub fn render(w: &Workload) -> String {
    let r = &w.run;
    let mut notes = vec![format!(
        "VRAM Doctor plan for {} on {}: {} with rank {}; train with the TrainingArguments export ({}).",
        w.model_name,
        w.gpu.name,
        r.method,
        r.lora_rank,
        ExportKind::HfTraining.file_name()
    )];
    notes.extend(format_note(r.weights));
    // ZeRO-3 and FSDP's FULL_SHARD (the stage-3 plans) shard the weights as they load.
    let sharded = r.zero_stage_in_effect() == 3;
    if sharded {
        notes.push(format!(
            "Sharded (ZeRO-3 / FSDP): create the TrainingArguments ({}) before loading, so the weights load sharded, and give no device_map (transformers refuses one under ZeRO-3).",
            ExportKind::HfTraining.file_name()
        ));
    }
    let mut s = comments(&notes);
    let compute = compute_dtype(w);
    let bnb = if r.method == Method::Qlora {
        bnb_config(r.weights, compute, sharded.then_some(compute))
    } else {
        None
    };
    // One process per GPU under a launcher: each loads onto its own GPU (LOCAL_RANK, set by
    // torchrun, deepspeed and accelerate launch), not all onto GPU 0.
    let device_map = match (sharded, w.gpu.count) {
        (true, _) => None,
        (false, 1) => Some("{\"\": 0}"),
        (false, _) => Some("{\"\": int(os.environ.get(\"LOCAL_RANK\", \"0\"))}"),
    };
    s.push_str(&format!(
        "{}import torch\nfrom peft import LoraConfig, get_peft_model{}\nfrom transformers import {}{}\n\n",
        if device_map.is_some_and(|d| d.contains("os.environ")) {
            "import os\n"
        } else {
            ""
        },
        if bnb.is_some() {
            ", prepare_model_for_kbit_training"
        } else {
            ""
        },
        model_class(w),
        if bnb.is_some() { ", BitsAndBytesConfig" } else { "" }
    ));
    if let Some(b) = &bnb {
        s.push_str(&format!("bnb_config = {b}\n"));
    }
    s.push_str(&load_call(
        w,
        device_map,
        bnb.as_ref().map(|_| "bnb_config"),
    ));
    let ckpt = if r.checkpointing == Checkpointing::None {
        "False"
    } else {
        "True"
    };
    if bnb.is_some() {
        s.push_str(&format!(
            "model = prepare_model_for_kbit_training(model, use_gradient_checkpointing={ckpt})\n"
        ));
    }
    let task = match r.objective {
        Objective::CausalLm => "CAUSAL_LM",
        Objective::Classification => "SEQ_CLS",
    };
    // lora_alpha = 2r and dropout 0.05 are the common starting points (Raschka's LoRA
    // experiments, QLoRA's scripts use dropout 0.05–0.1); neither changes memory.
    s.push_str(&format!(
        "\nlora_config = LoraConfig(\n    r={},\n    lora_alpha={},\n    lora_dropout=0.05,\n    target_modules={},\n    task_type=\"{task}\",\n)\nmodel = get_peft_model(model, lora_config)\nmodel.print_trainable_parameters()\n",
        r.lora_rank,
        2 * r.lora_rank,
        target_modules(w)
    ));
    s
}
