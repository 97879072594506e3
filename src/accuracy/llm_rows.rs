//! Reference rows of LLM workloads (inference, training, runtime overhead) as workload files.
//!
//! Each row's `mode`, `metric`, `quant` and `extras` say how it was run and what was measured;
//! the mapping below reads them and picks the matching figure.

use super::{Case, Figure};
use crate::memory::{ComponentId, WorkloadFile};
use crate::types::arch::Mlp;
use crate::types::options::*;
use serde_json::Value;

fn s<'a>(row: &'a Value, key: &str) -> &'a str {
    row[key].as_str().unwrap_or("")
}

/// Capacity of the GPU a row names (only used for the verdict, not the figure).
fn gpu_gib(row: &Value) -> f64 {
    let g = format!(
        "{} {}",
        row["extras"]["gpu"].as_str().unwrap_or(""),
        s(row, "source")
    );
    if g.contains("4090") {
        24.0
    } else if g.contains("V100") {
        16.0
    } else {
        80.0
    }
}

/// All integers in a string ("prefill 2048 + decode 2048" → [2048, 2048]).
fn numbers(text: &str) -> Vec<i64> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter_map(|t| t.parse().ok())
        .collect()
}

fn int_field(row: &Value, key: &str) -> Option<i64> {
    match &row[key] {
        Value::Number(n) => n.as_i64(),
        Value::String(t) => numbers(t).first().copied(),
        _ => None,
    }
}

/// Presets for rows whose `arch` lacks fields the engine needs.
fn preset_for(model: &str) -> Option<&'static str> {
    let m = model.to_ascii_lowercase();
    [
        ("vicuna 7b", "llama-2-7b"),
        ("falcon 7b", "falcon-7b"),
        ("mpt 7b", "mpt-7b"),
    ]
    .into_iter()
    .find(|(k, _)| m.contains(k))
    .map(|(_, p)| p)
}

fn model_section(f: &mut WorkloadFile, row: &Value) -> Result<(), String> {
    let a = &row["arch"];
    let model = s(row, "model");
    let complete = [
        "params",
        "layers",
        "hidden",
        "heads",
        "vocab",
        "intermediate",
    ]
    .iter()
    .all(|k| a[k].is_number());
    if !complete {
        let p = preset_for(model)
            .ok_or("the row's architecture is incomplete and no preset matches")?;
        f.model.preset = Some(p.into());
        return Ok(());
    }
    let u = |k: &str| a[k].as_f64().map(|v| v as u32);
    let m = &mut f.model;
    m.params = a["params"].as_f64();
    m.layers = u("layers");
    m.hidden = u("hidden");
    m.heads = u("heads");
    m.kv_heads = u("kv_heads");
    m.head_dim = u("head_dim");
    m.intermediate = u("intermediate");
    m.vocab = u("vocab");
    if model.to_ascii_lowercase().contains("bert") {
        // BERT: GeLU MLP, no LM head on a classifier.
        m.mlp = Some(Mlp::Plain);
        m.tied_embeddings = Some(true);
    }
    Ok(())
}

pub(super) fn case(row: &Value) -> Result<Case, String> {
    let kind = s(row, "workload");
    let mode = s(row, "mode");
    let metric = s(row, "metric");
    let quant = row["quant"].as_str().unwrap_or("");
    let extras = &row["extras"];
    let mut f = WorkloadFile::default();
    f.gpu.vram_gib = Some(gpu_gib(row));

    if mode == "cuda_context" {
        f.model.preset = Some("llama-3.1-8b".into());
        f.run.seq = Some(1);
        return Ok(Case {
            workload: f,
            figure: Figure::Components(vec![ComponentId::CudaContext]),
        });
    }
    model_section(&mut f, row)?;
    let r = &mut f.run;
    let figure = match kind {
        "llm_inference" if mode == "weights_load" => {
            r.task = Some(Task::Inference);
            r.weights = Some(s(row, "dtype").to_string());
            r.seq = Some(1);
            if metric.contains("nvidia-smi") {
                Figure::Components(vec![ComponentId::Weights, ComponentId::CudaContext])
            } else {
                Figure::Components(vec![ComponentId::Weights])
            }
        }
        "llm_inference" if mode == "inference_server" => {
            r.engine = Some(Engine::Vllm);
            r.weights = Some(s(row, "dtype").to_string());
            // vLLM V0 profiles one batch of max_num_batched_tokens = max_model_len (8192 here).
            r.seq = Some(8192);
            if let Some(tp) = extras["tp"].as_u64() {
                f.gpu.count = Some(tp as u32);
            }
            if metric.contains("activation") {
                Figure::Components(vec![ComponentId::Activations])
            } else {
                Figure::Components(vec![ComponentId::Weights])
            }
        }
        "llm_inference" if mode.contains("AutoAWQ") => {
            r.engine = Some(Engine::AutoAwq);
            r.weights = Some("awq-4bit".into());
            r.attention = Some(Attention::Eager);
            r.batch = int_field(row, "batch");
            let lens = numbers(s(row, "seq"));
            r.seq = Some(lens.iter().sum());
            r.prompt = lens.first().copied();
            Figure::Tensors
        }
        "llm_inference_gguf" => {
            r.engine = Some(Engine::LlamaCpp);
            let q = quant.split_whitespace().next().unwrap_or("");
            r.weights = Some(q.to_ascii_lowercase());
            r.seq = numbers(s(row, "seq")).first().copied();
            r.ubatch = numbers(&row["batch"].to_string()).first().copied();
            // 2023 llama.cpp builds: no flash attention.
            r.attention = Some(Attention::Eager);
            Figure::Tensors
        }
        "llm_training_full" | "llm_training_lora" | "llm_training_qlora" => {
            r.task = Some(Task::Training);
            r.batch = int_field(row, "batch");
            r.seq = int_field(row, "seq");
            if metric.contains("ms-swift") {
                swift_run(&mut f, row, kind, quant)?;
                Figure::Reserved
            } else {
                trainer_run(&mut f, row)?;
                Figure::Process
            }
        }
        _ => return Err(format!("mode '{mode}' is not modelled")),
    };
    Ok(Case {
        workload: f,
        figure,
    })
}

/// ms-swift `sft` benchmark rows (docs/source_en/LLM/Benchmark.md): defaults gradient
/// checkpointing on, flash attention on, LoRA rank 8 on `c_attn`; full fine-tuning in pure bf16
/// with AdamW; reports `torch.cuda.max_memory_reserved`.
fn swift_run(f: &mut WorkloadFile, row: &Value, kind: &str, quant: &str) -> Result<(), String> {
    let e = &row["extras"];
    let mode = s(row, "mode");
    let r = &mut f.run;
    r.engine = Some(Engine::Transformers);
    let fa = e["use_flash_attn"].as_bool().unwrap_or(true);
    let gc = e["gradient_checkpointing"].as_bool().unwrap_or(true);
    r.attention = Some(if fa {
        Attention::Flash
    } else {
        Attention::Eager
    });
    r.checkpointing = Some(if gc {
        Checkpointing::Full
    } else {
        Checkpointing::None
    });
    r.optimizer = Some(Optimizer::AdamW);
    if kind == "llm_training_full" {
        r.method = Some(Method::Full);
        r.precision = Some(Precision::Bf16);
        r.weights = Some("bf16".into());
        return Ok(());
    }
    r.precision = Some(Precision::Bf16Mixed);
    let rank = e["lora_rank"].as_i64().or_else(|| {
        mode.split_whitespace()
            .find_map(|w| w.strip_prefix('r').and_then(|n| n.parse().ok()))
    });
    r.lora_rank = rank.or(Some(8));
    r.lora_targets = Some(if mode.contains("ALL") {
        LoraTargets::AllLinear
    } else {
        LoraTargets::Attention
    });
    if kind == "llm_training_qlora" {
        r.method = Some(Method::Qlora);
        let q = quant.to_ascii_lowercase();
        r.weights = Some(
            if q.contains("gptq") && q.contains("int8") {
                "gptq-8bit"
            } else if q.contains("gptq") {
                "gptq-4bit"
            } else {
                "nf4"
            }
            .into(),
        );
    } else {
        r.method = Some(Method::Lora);
        r.weights = Some("bf16".into());
    }
    Ok(())
}

/// HF Trainer rows of transformers' "efficient training on one GPU" guide (bert-large,
/// sequence classification, nvidia-smi after training).
fn trainer_run(f: &mut WorkloadFile, row: &Value) -> Result<(), String> {
    let e = &row["extras"];
    let r = &mut f.run;
    r.engine = Some(Engine::Transformers);
    r.objective = Some(Objective::Classification);
    r.attention = Some(Attention::Eager);
    r.method = Some(Method::Full);
    r.weights = Some("fp32".into());
    r.precision = Some(if s(row, "dtype").contains("fp16") {
        Precision::Fp16Mixed
    } else {
        Precision::Fp32
    });
    let opt = e["optimizer"]
        .as_str()
        .unwrap_or("AdamW")
        .to_ascii_lowercase();
    r.optimizer = Some(if opt.contains("8bit") {
        Optimizer::AdamW8bit
    } else if opt.contains("adafactor") {
        Optimizer::Adafactor
    } else {
        Optimizer::AdamW
    });
    r.grad_accum = e["gradient_accumulation_steps"].as_i64();
    let gc = e["gradient_checkpointing"].as_bool().unwrap_or(false);
    r.checkpointing = Some(if gc {
        Checkpointing::Full
    } else {
        Checkpointing::None
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awq_row_sums_prefill_and_decode() {
        let row: Value = serde_json::from_str(
            r#"{"id":"x","workload":"llm_inference","model":"Mistral 7B","arch":{"params":7.24e9,"layers":32,"hidden":4096,"heads":32,"kv_heads":8,"head_dim":128,"vocab":32000,"intermediate":14336},"dtype":"fp16","quant":"AWQ","batch":8,"seq":"prefill 2048 + decode 2048","mode":"inference (AutoAWQ fused layers)","extras":{"gpu":"RTX 4090"},"measured_gib":16.82,"metric":"m"}"#,
        )
        .unwrap();
        let c = case(&row).unwrap();
        assert_eq!(c.workload.run.seq, Some(4096));
        assert_eq!(c.workload.run.batch, Some(8));
        assert_eq!(c.workload.run.engine, Some(Engine::AutoAwq));
        assert_eq!(c.workload.gpu.vram_gib, Some(24.0));
        assert_eq!(c.figure, Figure::Tensors);
    }
}
