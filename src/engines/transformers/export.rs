//! transformers loading code: dtype, quantization config, attention implementation and device
//! map. Argument names are those of `from_pretrained` and `BitsAndBytesConfig` (transformers
//! docs "Quantization → bitsandbytes", "Attention interface").

use crate::export::{comments, hf_repo};
use crate::types::dtype::WeightFormat;
use crate::types::options::{Attention, Objective, Precision, Task};
use crate::types::workload::Workload;

/// The 16-bit type computations run in: bf16 where the card has it (Ampere and newer).
pub fn compute_dtype(w: &Workload) -> &'static str {
    let r = &w.run;
    if r.task == Task::Training {
        match r.precision {
            Precision::Fp16Mixed => return "torch.float16",
            Precision::Fp32 => return "torch.float32",
            _ => {}
        }
    }
    if w.gpu.bf16 {
        "torch.bfloat16"
    } else {
        "torch.float16"
    }
}

/// `dtype` for loading: the weight format for 16/32-bit weights, the compute type for
/// quantized ones (their non-quantized layers load in it).
pub fn load_dtype(w: &Workload) -> &'static str {
    match w.run.weights {
        WeightFormat::Fp32 => "torch.float32",
        WeightFormat::Fp16 => "torch.float16",
        WeightFormat::Bf16 => "torch.bfloat16",
        _ => compute_dtype(w),
    }
}

/// `attn_implementation` for the run's attention kernel.
pub fn attn_implementation(a: Attention) -> &'static str {
    match a {
        Attention::Eager => "eager",
        Attention::Sdpa => "sdpa",
        Attention::Flash => "flash_attention_2",
    }
}

/// A `BitsAndBytesConfig(...)` expression for bitsandbytes formats; `None` for the others.
/// `storage`: `bnb_4bit_quant_storage`, the type the packed 4-bit weights are stored as. FSDP
/// and ZeRO-3 flatten them together with the other parameters, which needs one type for all
/// (peft docs "Use PEFT QLoRA and FSDP", "DeepSpeed … ZeRO-3 and QLoRA"); `None` keeps
/// bitsandbytes' uint8.
pub fn bnb_config(weights: WeightFormat, compute: &str, storage: Option<&str>) -> Option<String> {
    let four = |kind: &str| {
        let storage = storage
            .map(|t| format!("    bnb_4bit_quant_storage={t},\n"))
            .unwrap_or_default();
        format!(
            "BitsAndBytesConfig(\n    load_in_4bit=True,\n    bnb_4bit_quant_type=\"{kind}\",\n    bnb_4bit_use_double_quant=True,\n    bnb_4bit_compute_dtype={compute},\n{storage})"
        )
    };
    match weights {
        WeightFormat::Int8 => Some("BitsAndBytesConfig(load_in_8bit=True)".into()),
        WeightFormat::Nf4 => Some(four("nf4")),
        WeightFormat::Fp4 => Some(four("fp4")),
        _ => None,
    }
}

/// What loading a format needs besides bitsandbytes, as a comment.
pub fn format_note(weights: WeightFormat) -> Option<String> {
    match weights {
        WeightFormat::Fp8 => Some("fp8 weights: load an FP8 checkpoint (its config.json carries the quantization_config), or pass quantization_config=FineGrainedFP8Config().".into()),
        WeightFormat::Gptq4 | WeightFormat::Gptq8 => Some("GPTQ weights: load a GPTQ checkpoint; its config.json carries the quantization_config (needs gptqmodel or auto-gptq).".into()),
        WeightFormat::W4a16 | WeightFormat::W8a8 | WeightFormat::Nvfp4 => Some(format!("{weights} weights: load the compressed-tensors / ModelOpt checkpoint; its config.json carries the quantization_config (needs the compressed-tensors package; NVFP4 kernels need a Blackwell GPU).")),
        WeightFormat::Awq4 => Some("AWQ weights: load an AWQ checkpoint; its config.json carries the quantization_config (needs autoawq).".into()),
        WeightFormat::Mxfp4 => Some("MXFP4 weights: load the MXFP4 checkpoint (its config.json carries the quantization_config); transformers keeps the experts packed only with its MXFP4 kernels (`kernels` package, a recent GPU), else it dequantizes them to bf16 on load (quantizers/quantizer_mxfp4.py).".into()),
        WeightFormat::Gguf(_) => Some("GGUF weights: transformers dequantizes them on load (gguf_file=...); run them with llama.cpp to keep them small.".into()),
        _ => None,
    }
}

/// The Auto class for the run's objective.
pub fn model_class(w: &Workload) -> &'static str {
    match w.run.objective {
        Objective::CausalLm => "AutoModelForCausalLM",
        Objective::Classification => "AutoModelForSequenceClassification",
    }
}

/// `model = AutoModelFor...from_pretrained(...)` with the run's settings; `quant` is the name of
/// a quantization config variable defined before it, if any; `device_map` `None` leaves the
/// placement to the framework (ZeRO-3 and FSDP shard the weights themselves). The type is
/// `dtype=`: `torch_dtype` is only kept for backward compatibility (transformers
/// `modeling_utils.py` `from_pretrained`, since 4.56).
pub fn load_call(w: &Workload, device_map: Option<&str>, quant: Option<&str>) -> String {
    let class = model_class(w);
    let mut s = format!(
        "model = {class}.from_pretrained(\n    \"{}\",\n    dtype={},\n",
        hf_repo(w),
        load_dtype(w)
    );
    if let Some(q) = quant {
        s.push_str(&format!("    quantization_config={q},\n"));
    }
    s.push_str(&format!(
        "    attn_implementation=\"{}\",\n",
        attn_implementation(w.run.attention)
    ));
    if let Some(d) = device_map {
        s.push_str(&format!("    device_map={d},\n"));
    }
    s.push_str(")\n");
    s
}

pub fn render(w: &Workload) -> String {
    let r = &w.run;
    let mut notes = vec![format!(
        "VRAM Doctor plan for {} on {}: batch {} × {} tokens.",
        w.model_name, w.gpu.name, r.batch, r.seq
    )];
    notes.extend(format_note(r.weights));
    if w.gpu.count > 1 {
        notes.push(format!(
            "device_map=\"auto\" splits the layers over the {} GPUs (one runs at a time).",
            w.gpu.count
        ));
    }
    let mut s = comments(&notes);
    let bnb = bnb_config(r.weights, compute_dtype(w), None);
    s.push_str("import torch\nfrom transformers import AutoTokenizer, ");
    s.push_str(model_class(w));
    if bnb.is_some() {
        s.push_str(", BitsAndBytesConfig");
    }
    s.push_str("\n\n");
    if let Some(b) = &bnb {
        s.push_str(&format!("quantization_config = {b}\n"));
    }
    let device_map = if w.gpu.count > 1 {
        "\"auto\""
    } else {
        "{\"\": 0}"
    };
    s.push_str(&load_call(
        w,
        Some(device_map),
        bnb.as_ref().map(|_| "quantization_config"),
    ));
    s.push_str(&format!(
        "tokenizer = AutoTokenizer.from_pretrained(\"{}\")\n\n",
        hf_repo(w)
    ));
    s.push_str(&format!(
        "# Keep prompt + generated tokens within {} per sequence and at most {} sequences per batch.\nMAX_LENGTH = {}\nBATCH_SIZE = {}\n",
        r.seq, r.batch, r.seq, r.batch
    ));
    s
}
