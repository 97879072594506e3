//! DeepSpeed `ds_config.json` for the Hugging Face Trainer integration (`deepspeed=` in
//! `TrainingArguments`). Keys from the DeepSpeed configuration reference (docs "DeepSpeed
//! Configuration JSON"): batch sizes, `bf16`/`fp16`, `zero_optimization` with
//! `offload_optimizer`/`offload_param`, `optimizer`.
//!
//! DeepSpeed offloads optimizer states from ZeRO stage 1 up and parameters only at stage 3
//! (ZeRO-Offload / ZeRO-Infinity), so an offload in the plan raises the stage to what it needs
//! (`Run::zero_stage_in_effect`, which the estimate uses too).

use crate::types::options::{Offload, Optimizer, Precision};
use crate::types::workload::Workload;
use serde_json::{Value, json};

/// The config as a JSON value (the tests read it back).
pub fn config(w: &Workload) -> Value {
    let r = &w.run;
    let stage = r.zero_stage_in_effect();
    let mut zero = json!({
        "stage": stage,
        "overlap_comm": true,
        "contiguous_gradients": true,
    });
    let cpu = json!({ "device": "cpu", "pin_memory": true });
    if r.offload != Offload::None {
        zero["offload_optimizer"] = cpu.clone();
    }
    if r.offload == Offload::OptimizerParams {
        zero["offload_param"] = cpu;
    }
    if stage == 3 {
        // Lets the Trainer save a normal (consolidated) checkpoint at the end.
        zero["stage3_gather_16bit_weights_on_model_save"] = json!(true);
    }
    let mut c = json!({
        "train_micro_batch_size_per_gpu": r.batch,
        "gradient_accumulation_steps": r.grad_accum,
        "train_batch_size": u64::from(r.batch) * u64::from(r.grad_accum) * u64::from(w.gpu.count),
        "gradient_clipping": "auto",
        "zero_optimization": zero,
    });
    match r.precision {
        Precision::Bf16Mixed | Precision::Bf16 => c["bf16"] = json!({ "enabled": true }),
        // loss_scale 0 = dynamic loss scaling (DeepSpeed fp16 docs).
        Precision::Fp16Mixed => {
            c["fp16"] = json!({ "enabled": true, "loss_scale": 0, "initial_scale_power": 16 })
        }
        Precision::Fp32 => {}
    }
    // A paged optimizer is bitsandbytes', passed to DeepSpeed as the Trainer's client optimizer.
    if r.optimizer == Optimizer::AdamW && !r.paged_optimizer {
        // DeepSpeed builds AdamW itself (its CPU Adam when offloading); "auto" takes the
        // values from TrainingArguments.
        c["optimizer"] = json!({
            "type": "AdamW",
            "params": { "lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto" }
        });
    } else if r.offload != Offload::None {
        // The Trainer's own optimizer (`optim`) with an offload: DeepSpeed must be told not to
        // insist on its CPU optimizer.
        c["zero_force_ds_cpu_optimizer"] = json!(false);
    }
    c
}

pub fn render(w: &Workload) -> String {
    let mut s = serde_json::to_string_pretty(&config(w)).unwrap_or_default();
    s.push('\n');
    s
}
