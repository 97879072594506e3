//! `vllm serve` flags. Names from vLLM's engine arguments (`vllm serve --help`, docs
//! "Engine Arguments"): `--dtype`, `--quantization`, `--max-model-len`, `--max-num-seqs`,
//! `--gpu-memory-utilization`, `--kv-cache-dtype`, `--tensor-parallel-size`.

use crate::export::{command_line, comments, hf_repo};
use crate::types::dtype::{KvDtype, WeightFormat};
use crate::types::workload::Workload;

/// `--quantization` for a weight format (vLLM's quantization method names).
pub fn quantization(f: WeightFormat) -> Option<&'static str> {
    match f {
        WeightFormat::Fp8 => Some("fp8"),
        WeightFormat::Gptq4 | WeightFormat::Gptq8 => Some("gptq"),
        WeightFormat::Awq4 => Some("awq"),
        // vLLM `model_executor/layers/quantization/mxfp4.py` (`Mxfp4Config.get_name`).
        WeightFormat::Mxfp4 => Some("mxfp4"),
        WeightFormat::Int8 | WeightFormat::Nf4 | WeightFormat::Fp4 => Some("bitsandbytes"),
        WeightFormat::Gguf(_) => Some("gguf"),
        _ => None,
    }
}

pub fn render(w: &Workload) -> String {
    let r = &w.run;
    let mut notes = vec![format!(
        "VRAM Doctor plan for {} on {} × {}: {} weights, up to {} sequences of {} tokens.",
        w.model_name, w.gpu.count, w.gpu.name, r.weights, r.batch, r.seq
    )];
    let mut flags: Vec<(&str, Option<String>)> = Vec::new();
    // GPTQ, AWQ and compressed-tensors / ModelOpt checkpoints name their method in
    // config.json, from which vLLM picks its fastest kernel (Marlin where it can); GPTQ and AWQ
    // kernels take fp16 activations.
    let fp16_kernels = matches!(
        r.weights,
        WeightFormat::Gptq4 | WeightFormat::Gptq8 | WeightFormat::Awq4
    );
    let prequantized = fp16_kernels
        || matches!(
            r.weights,
            WeightFormat::W4a16 | WeightFormat::W8a8 | WeightFormat::Nvfp4
        );
    let dtype = match r.weights {
        WeightFormat::Fp32 => "float32",
        WeightFormat::Fp16 => "float16",
        WeightFormat::Bf16 => "bfloat16",
        _ if fp16_kernels || !w.gpu.bf16 => "float16",
        _ => "bfloat16",
    };
    flags.push(("--dtype", Some(dtype.into())));
    if prequantized {
        notes.push(format!(
            "Serve a {} checkpoint of the model: vLLM reads the method from its quantization_config (it does not quantize).",
            r.weights
        ));
    } else if let Some(q) = quantization(r.weights) {
        flags.push(("--quantization", Some(q.into())));
        if r.weights.is_gguf() {
            notes.push("GGUF: pass the .gguf file instead of the repository, and --tokenizer with the original repository.".into());
        }
    }
    flags.push(("--max-model-len", Some(r.seq.to_string())));
    flags.push(("--max-num-seqs", Some(r.batch.to_string())));
    flags.push((
        "--gpu-memory-utilization",
        Some(format!("{:.2}", r.gpu_memory_utilization)),
    ));
    // Always said, so the command holds the cache the plan counted: `auto` is the model's
    // dtype (2 bytes per value, or 4 with --dtype float32); the resolver refuses the types
    // vLLM lacks (`types::dtype::kv_types_of`).
    let kv = match r.kv_cache {
        KvDtype::Fp8 => "fp8",
        KvDtype::Bf16 if dtype == "bfloat16" => "auto",
        KvDtype::Bf16 => "bfloat16",
        _ => "auto",
    };
    flags.push(("--kv-cache-dtype", Some(kv.into())));
    if w.gpu.count > 1 {
        flags.push(("--tensor-parallel-size", Some(w.gpu.count.to_string())));
    }
    let mut s = comments(&notes);
    let model = if prequantized {
        format!(
            "REPLACE-with-a-{}-repo-of-{}",
            r.weights,
            crate::export::slug(&w.model_name)
        )
    } else {
        hf_repo(w)
    };
    s.push_str(&command_line(&format!("vllm serve {model}"), &flags));
    s
}
