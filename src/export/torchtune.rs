//! A torchtune config (`tune run <recipe> --config torchtune.yaml`). The recipe is torchtune's
//! own: `lora_finetune_single_device` / `full_finetune_single_device` on one GPU without
//! offload, else the `_distributed` ones (FSDP2; `fsdp_cpu_offload` is `CPUOffloadPolicy`).
//! Every top-level key is one the recipe reads (`cfg.key` / `cfg.get("key")` in
//! recipes/<recipe>.py), the model is the catalog model's builder (presets/torchtune.toml) with
//! the arguments it takes; `tests/export.rs` checks both against tests/data/library-keys.json,
//! read from torchtune's source by tools/library_keys.py.
//!
//! torchtune applies LoRA per module name in every layer, to q_proj, k_proj, v_proj and
//! output_proj (`lora_attn_modules`), the whole MLP (`apply_lora_to_mlp`) and the output head
//! (`apply_lora_to_output`); a plan it cannot express is refused with the reason.

use super::{accelerate_fsdp::yaml, comments, hf_repo, slug};
use crate::catalog::Catalog;
use crate::memory::lora::leaf_names;
use crate::types::dtype::WeightFormat;
use crate::types::options::{
    Attention, Checkpointing, Loss, Method, Offload, Optimizer, OptimizerStep, Precision,
};
use crate::types::workload::Workload;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::OnceLock;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    modules: Modules,
    family: BTreeMap<String, Family>,
    model: Vec<Builder>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Modules {
    /// The model's attention module names → torchtune's `lora_attn_modules` entries.
    attention: BTreeMap<String, String>,
    /// The MLP projections `apply_lora_to_mlp` adapts together.
    mlp: Vec<String>,
    /// The output head's name.
    output: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Family {
    tokenizer: String,
    tokenizer_path: String,
    #[serde(default)]
    merges_file: Option<String>,
    checkpoint_model_type: String,
    lora_to_output: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Builder {
    preset: String,
    family: String,
    full: String,
    lora: String,
}

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    // Part of the program; the unit test below and tests/export.rs read it.
    T.get_or_init(|| {
        toml::from_str(include_str!("../../presets/torchtune.toml"))
            .expect("presets/torchtune.toml is valid")
    })
}

/// The builder of the plan's model: the catalog row of that name, with its sizes.
fn builder(w: &Workload) -> Result<(&'static Builder, &'static Family), String> {
    let t = table();
    let found = Catalog::get().models.iter().find(|m| {
        m.name == w.model_name
            && (m.arch.layers, m.arch.hidden, m.arch.vocab)
                == (w.model.layers, w.model.hidden, w.model.vocab)
    });
    let b = found.and_then(|m| t.model.iter().find(|b| b.preset == m.id));
    let Some(b) = b else {
        let known: Vec<&str> = t.model.iter().map(|b| b.preset.as_str()).collect();
        return Err(format!(
            "torchtune has no model builder for {} in presets/torchtune.toml (models with one: {})",
            w.model_name,
            known.join(", ")
        ));
    };
    let f = t
        .family
        .get(&b.family)
        .ok_or_else(|| format!("presets/torchtune.toml: no family {}", b.family))?;
    Ok((b, f))
}

/// The recipe the plan runs under.
pub fn recipe(w: &Workload) -> &'static str {
    let distributed = w.gpu.count > 1 || w.run.offload != Offload::None;
    match (w.run.method == Method::Full, distributed) {
        (true, false) => "full_finetune_single_device",
        (true, true) => "full_finetune_distributed",
        (false, false) => "lora_finetune_single_device",
        (false, true) => "lora_finetune_distributed",
    }
}

/// The `model:` section: the builder and, for adapters, where LoRA goes.
fn model_section(w: &Workload, b: &Builder, f: &Family) -> Result<Value, String> {
    let r = &w.run;
    if r.method == Method::Full {
        return Ok(json!({ "_component_": b.full }));
    }
    let m = &table().modules;
    let names = leaf_names(&w.model, &r.lora_targets).ok_or_else(|| {
        format!(
            "run.lora_targets = '{}': torchtune applies LoRA by module name in every layer, and this selection is not one (some layers only, routed experts, or modules the model lacks)",
            r.lora_targets
        )
    })?;
    let mut attn = Vec::new();
    let mut mlp = Vec::new();
    let mut output = false;
    for n in &names {
        if let Some(t) = m.attention.get(n) {
            attn.push(t.clone());
        } else if m.mlp.contains(n) {
            mlp.push(n.as_str());
        } else if *n == m.output {
            output = true;
        } else {
            return Err(format!(
                "run.lora_targets = '{}': torchtune applies LoRA only to {}, the MLP ({}, together) and the output head ({}); '{n}' is none of them",
                r.lora_targets,
                m.attention.keys().cloned().collect::<Vec<_>>().join(", "),
                m.mlp.join(", "),
                m.output
            ));
        }
    }
    if !mlp.is_empty() && mlp.len() < m.mlp.len() {
        return Err(format!(
            "run.lora_targets = '{}': torchtune's apply_lora_to_mlp adapts {} together; the targets name only {}",
            r.lora_targets,
            m.mlp.join(", "),
            mlp.join(", ")
        ));
    }
    if output && !f.lora_to_output {
        return Err(format!(
            "run.lora_targets = '{}': torchtune's {} builder takes no apply_lora_to_output (tied embeddings), so it cannot adapt {}",
            r.lora_targets, b.lora, m.output
        ));
    }
    if r.method == Method::Qlora && r.weights != WeightFormat::Nf4 {
        return Err(format!(
            "run.weights = '{}': torchtune's QLoRA quantizes the base to NF4 (quantize_base, torchao NF4Tensor); plan with nf4 weights",
            r.weights
        ));
    }
    let mut model = json!({
        "_component_": b.lora,
        "lora_attn_modules": attn,
        "apply_lora_to_mlp": !mlp.is_empty(),
        "lora_rank": r.lora_rank,
        // alpha = 2r as torchtune's own configs set it; it changes no memory.
        "lora_alpha": 2 * r.lora_rank,
        "lora_dropout": 0.0,
    });
    if f.lora_to_output {
        model["apply_lora_to_output"] = json!(output);
    }
    if r.method == Method::Qlora {
        model["quantize_base"] = json!(true);
    }
    Ok(model)
}

/// The optimizer as a torchtune component (`config.instantiate` builds any importable class).
fn optimizer(w: &Workload) -> Value {
    let r = &w.run;
    let lr = 3e-4;
    match r.optimizer {
        Optimizer::AdamW => {
            let mut o =
                json!({ "_component_": "torch.optim.AdamW", "lr": lr, "weight_decay": 0.01 });
            match r.optimizer_step {
                OptimizerStep::Fused => o["fused"] = json!(true),
                OptimizerStep::ForLoop => o["foreach"] = json!(false),
                OptimizerStep::Foreach => o["foreach"] = json!(true),
            }
            o
        }
        Optimizer::AdamW8bit => json!({ "_component_": "bitsandbytes.optim.AdamW8bit", "lr": lr }),
        Optimizer::Sgd => json!({ "_component_": "torch.optim.SGD", "lr": lr }),
        Optimizer::Adafactor => json!({ "_component_": "torch.optim.Adafactor", "lr": lr }),
        Optimizer::Lion => json!({ "_component_": "bitsandbytes.optim.Lion", "lr": lr }),
    }
}

/// The config as a JSON value (`render` writes it as YAML), or why torchtune cannot run the plan.
pub fn config(w: &Workload) -> Result<Value, String> {
    let r = &w.run;
    let (b, f) = builder(w)?;
    let dtype = match r.precision {
        Precision::Bf16 | Precision::Bf16Mixed => "bf16",
        Precision::Fp32 => "fp32",
        Precision::Fp16Mixed => {
            return Err("run.precision = 'fp16-mixed': torchtune's recipes refuse fp16 (recipes/lora_finetune_single_device.py: \"ValueError: If dtype is set to fp16\"); plan with bf16".into());
        }
    };
    if r.optimizer_in_bwd && r.method != Method::Full {
        return Err("run.optimizer_in_bwd: torchtune's LoRA recipes have no optimizer_in_bwd (only full_finetune_single_device and full_finetune_distributed read it)".into());
    }
    let dir = format!("/tmp/{}", slug(&w.model_name));
    let out = format!("/tmp/torchtune/{}", slug(&w.model_name));
    let mut tokenizer = json!({
        "_component_": f.tokenizer,
        "path": format!("{dir}/{}", f.tokenizer_path),
        "max_seq_len": r.seq,
    });
    if let Some(m) = &f.merges_file {
        tokenizer["merges_file"] = json!(format!("{dir}/{m}"));
    }
    let recipe = recipe(w);
    let mut c = json!({
        "output_dir": out,
        "model": model_section(w, b, f)?,
        "tokenizer": tokenizer,
        "checkpointer": {
            "_component_": "torchtune.training.FullModelHFCheckpointer",
            "checkpoint_dir": dir,
            "checkpoint_files": [format!("REPLACE-with-the-safetensors-files-in-{dir}")],
            "recipe_checkpoint": null,
            "output_dir": out,
            "model_type": f.checkpoint_model_type,
        },
        "resume_from_checkpoint": false,
        // torchtune `PackedDataset` packs to `tokenizer.max_seq_len`; `batch_size` counts packs.
        "dataset": { "_component_": "torchtune.datasets.alpaca_cleaned_dataset", "packed": r.packing },
        "seed": null,
        "shuffle": true,
        "batch_size": r.batch,
        "optimizer": optimizer(w),
        "lr_scheduler": {
            "_component_": "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup",
            "num_warmup_steps": 100,
        },
        "loss": {
            // The fused linear cross-entropy of torchtune's configs computes the head and the
            // loss chunk by chunk; the standard loss gets the full logits (the recipe's
            // `_loss_step` takes a plain loss module, "third party loss functions").
            "_component_": match r.loss {
                Loss::Chunked => "torchtune.modules.loss.LinearCrossEntropyLoss",
                Loss::Standard => "torch.nn.CrossEntropyLoss",
            },
        },
        "epochs": 1,
        "max_steps_per_epoch": null,
        "gradient_accumulation_steps": r.grad_accum,
        "clip_grad_norm": null,
        "compile": r.torch_compile,
        "metric_logger": {
            "_component_": "torchtune.training.metric_logging.DiskLogger",
            "log_dir": format!("{out}/logs"),
        },
        "log_every_n_steps": 1,
        "log_peak_memory_stats": true,
        "log_level": "INFO",
        "device": "cuda",
        "dtype": dtype,
        "enable_activation_checkpointing": r.checkpointing != Checkpointing::None,
        "enable_activation_offloading": r.activation_offload,
    });
    if r.method == Method::Full {
        c["optimizer_in_bwd"] = json!(r.optimizer_in_bwd);
    }
    if recipe.ends_with("_distributed") {
        c["fsdp_cpu_offload"] = json!(r.offload != Offload::None);
        // FULL_SHARD frees each layer's gathered parameters after its forward; SHARD_GRAD_OP
        // (ZeRO-2) keeps them to the backward.
        c["fsdp_reshard_after_forward"] = json!(r.zero_stage_in_effect() >= 3);
    }
    Ok(c)
}

/// What the config does differently from the plan, and how to run it.
fn notes(w: &Workload) -> Vec<String> {
    let r = &w.run;
    let recipe = recipe(w);
    let launch = if recipe.ends_with("_distributed") {
        format!("tune run --nproc_per_node {} {recipe}", w.gpu.count)
    } else {
        format!("tune run {recipe}")
    };
    let mut n = vec![
        format!(
            "VRAM Doctor plan for {} on {} × {}: {launch} --config torchtune.yaml",
            w.model_name, w.gpu.count, w.gpu.name
        ),
        format!(
            "Get the weights with `tune download {} --output-dir /tmp/{}` and list its *.safetensors files in checkpointer.checkpoint_files.",
            hf_repo(w),
            slug(&w.model_name)
        ),
        if r.packing {
            // torchtune/data/_collate.py `padded_collate_packed` → `packed_block_causal_mask`:
            // flex attention's compressed BlockMask where it is supported.
            "The dataset is a placeholder (alpaca_cleaned_dataset); packed: true packs whole examples into rows of max_seq_len tokens (batch_size counts rows) and masks them apart with flex attention's block mask, so no mask over the row as the plan's SDPA or eager attention has.".into()
        } else {
            "The dataset is a placeholder (alpaca_cleaned_dataset); packed: false pads each batch to its longest example, at most max_seq_len tokens.".into()
        },
    ];
    if r.precision == Precision::Bf16Mixed {
        n.push("torchtune trains in pure bf16 (dtype: bf16: weights, gradients and optimizer states in bf16); the plan assumed mixed precision with fp32 master weights, so torchtune holds less.".into());
    }
    if r.method != Method::Full {
        n.push("torchtune keeps the adapters in the training dtype (the plan counts PEFT's fp32 adapters), so it holds a little less.".into());
    }
    if r.method == Method::Qlora {
        n.push("torchtune does not upcast the base's non-quantized parameters to fp32 as PEFT's prepare_model_for_kbit_training (which the plan assumes) does: a little less again.".into());
    }
    if r.checkpointing == Checkpointing::Selective {
        n.push("The plan assumes selective recomputation; enable_activation_checkpointing recomputes whole layers (less memory, ~25% slower).".into());
    }
    if r.offload == Offload::Optimizer {
        n.push("fsdp_cpu_offload (FSDP2 CPUOffloadPolicy) moves the parameters and gradients to the CPU with the optimizer states: less GPU memory than the plan's optimizer-only offload, and slower.".into());
    }
    if w.gpu.count > 1 && r.zero_stage_in_effect() == 0 {
        n.push("torchtune's distributed recipes always shard with FSDP; the plan assumed every GPU holds the whole model (data parallel), so each holds less.".into());
    }
    if r.attention == Attention::Eager {
        n.push("torchtune's attention uses PyTorch's scaled_dot_product_attention (no s×s score matrix where a fused kernel runs); the plan assumed eager attention.".into());
    }
    n
}

pub fn render(w: &Workload) -> Result<String, String> {
    let c = config(w)?;
    let mut s = comments(&notes(w));
    yaml(&c, 0, &mut s);
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_names_a_catalog_model_and_a_family() {
        let t = table();
        let catalog = Catalog::get();
        for b in &t.model {
            assert!(t.family.contains_key(&b.family), "{}", b.family);
            assert!(
                catalog.models.iter().any(|m| m.id == b.preset),
                "{} is not a catalog model",
                b.preset
            );
        }
    }
}
