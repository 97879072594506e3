//! An accelerate config (`accelerate launch --config_file accelerate_fsdp.yaml train.py`) for
//! PyTorch FSDP. Keys are those `accelerate config` writes for FSDP (accelerate
//! `commands/config/cluster.py`, docs "Fully Sharded Data Parallel").
//!
//! ZeRO stages map onto FSDP sharding strategies as the accelerate docs pair them: stage 3 →
//! FULL_SHARD, stages 1–2 → SHARD_GRAD_OP, no ZeRO → NO_SHARD. FSDP offloads parameters,
//! gradients and optimizer states together (`fsdp_offload_params`), so any offload in the plan
//! turns it on.

use crate::types::options::{Checkpointing, Offload, Precision};
use crate::types::workload::Workload;
use serde_json::{Value, json};

/// The config as a JSON value; `render` writes it as YAML (the tests read that back).
pub fn config(w: &Workload) -> Value {
    let r = &w.run;
    let sharding = match r.zero_stage_in_effect() {
        0 => "NO_SHARD",
        1 | 2 => "SHARD_GRAD_OP",
        _ => "FULL_SHARD",
    };
    let mixed = match r.precision {
        Precision::Bf16Mixed | Precision::Bf16 => "bf16",
        Precision::Fp16Mixed => "fp16",
        Precision::Fp32 => "no",
    };
    json!({
        "compute_environment": "LOCAL_MACHINE",
        "debug": false,
        "distributed_type": "FSDP",
        "downcast_bf16": "no",
        "fsdp_config": {
            "fsdp_activation_checkpointing": r.checkpointing != Checkpointing::None,
            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_backward_prefetch": "BACKWARD_PRE",
            "fsdp_cpu_ram_efficient_loading": true,
            "fsdp_forward_prefetch": false,
            "fsdp_offload_params": r.offload != Offload::None,
            "fsdp_sharding_strategy": sharding,
            "fsdp_state_dict_type": "SHARDED_STATE_DICT",
            "fsdp_sync_module_states": true,
            "fsdp_use_orig_params": true,
        },
        "machine_rank": 0,
        "main_training_function": "main",
        "mixed_precision": mixed,
        "num_machines": 1,
        "num_processes": w.gpu.count,
        "rdzv_backend": "static",
        "same_network": true,
        "use_cpu": false,
    })
}

pub fn render(w: &Workload) -> String {
    let mut s = format!(
        "# accelerate FSDP config for {} on {} × {} (VRAM Doctor plan).\n",
        w.model_name, w.gpu.count, w.gpu.name
    );
    if w.run.checkpointing != Checkpointing::None {
        s.push_str("# FSDP does the activation checkpointing: leave the Trainer's gradient_checkpointing off.\n");
    }
    if w.run.offload == Offload::Optimizer {
        s.push_str("# FSDP has no optimizer-only offload: fsdp_offload_params moves the parameters and gradients to the CPU too (less GPU memory than the plan, slower).\n");
    }
    yaml(&config(w), 0, &mut s);
    s
}

/// A YAML block mapping of a JSON object of scalars, lists of scalars (as flow sequences) and
/// nested objects (all the exported configs hold). Strings that YAML would read as something
/// else (`no`, `true`, numbers) are double-quoted.
pub fn yaml(v: &Value, indent: usize, out: &mut String) {
    let Value::Object(map) = v else {
        return;
    };
    for (k, v) in map {
        out.push_str(&" ".repeat(indent));
        out.push_str(k);
        out.push(':');
        match v {
            Value::Object(_) => {
                out.push('\n');
                yaml(v, indent + 2, out);
            }
            Value::Array(items) => {
                let items: Vec<String> = items.iter().map(scalar).collect();
                out.push_str(&format!(" [{}]\n", items.join(", ")));
            }
            other => {
                out.push(' ');
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => {
            let plain = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !matches!(
                    s.to_ascii_lowercase().as_str(),
                    "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
                );
            if plain {
                s.clone()
            } else {
                // A JSON string is a valid YAML double-quoted scalar.
                Value::String(s.clone()).to_string()
            }
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_quotes_what_yaml_would_misread() {
        let mut s = String::new();
        yaml(
            &json!({"a": "no", "b": "FSDP", "c": {"d": 2, "e": true}, "f": "1x", "g": ["q_proj", "no"], "h": null}),
            0,
            &mut s,
        );
        assert_eq!(
            s,
            "a: \"no\"\nb: FSDP\nc:\n  d: 2\n  e: true\nf: \"1x\"\ng: [q_proj, \"no\"]\nh: null\n"
        );
    }
}
