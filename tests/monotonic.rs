//! Property: memory never decreases when the batch, the sequence or the precision grows.

use proptest::prelude::*;
use std::path::Path;
use vram_doctor::memory::{self, WorkloadFile};

const MODELS: &[&str] = &[
    "llama-3.1-8b",
    "qwen2.5-7b",
    "mistral-7b-v0.1",
    "gemma-2-9b",
    "mixtral-8x7b",
    "deepseek-v3",
    "qwen3-30b-a3b",
];
const ENGINES: &[&str] = &["transformers", "vllm", "llama.cpp"];
/// Weight formats from fewer to more bytes per parameter, for each engine family.
const TORCH_WEIGHTS: &[&str] = &["nf4", "fp8", "int8", "bf16", "fp32"];
const GGUF_WEIGHTS: &[&str] = &["q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k", "q8_0", "f16"];
const TRAIN: &[(&str, &str)] = &[("full", "bf16"), ("lora", "bf16"), ("qlora", "nf4")];

fn peak(model: &str, run: &str) -> u64 {
    let text = format!("[gpu]\nvram_gib = 80\n[model]\npreset = \"{model}\"\n[run]\n{run}");
    let w = WorkloadFile::parse(&text, "prop")
        .unwrap()
        .resolve(Path::new("."), None)
        .unwrap();
    let b = memory::estimate(&w);
    b.peak.tensors_bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn inference_grows_with_batch_seq_and_precision(
        m in 0..MODELS.len(), e in 0..ENGINES.len(), b in 1u32..64, s in 1u32..8192, p in 0usize..5, attn in 0..3usize,
    ) {
        let engine = ENGINES[e];
        let attention = ["eager", "sdpa", "flash"][attn];
        let list = if engine == "llama.cpp" { GGUF_WEIGHTS } else { TORCH_WEIGHTS };
        let p = p.min(list.len() - 2);
        let run = |b: u32, s: u32, wt: &str| format!(
            "engine = \"{engine}\"\nattention = \"{attention}\"\nweights = \"{wt}\"\nbatch = {b}\nseq = {s}\n"
        );
        let base = peak(MODELS[m], &run(b, s, list[p]));
        prop_assert!(peak(MODELS[m], &run(b + 1, s, list[p])) >= base);
        prop_assert!(peak(MODELS[m], &run(b, s + 1, list[p])) >= base);
        prop_assert!(peak(MODELS[m], &run(b, s, list[p + 1])) >= base);
    }

    #[test]
    fn training_grows_with_batch_and_seq(
        m in 0..MODELS.len(), t in 0..TRAIN.len(), b in 1u32..16, s in 1u32..4096, ck in 0..3usize, attn in 0..3usize,
    ) {
        let (method, weights) = TRAIN[t];
        let ckpt = ["none", "selective", "full"][ck];
        let attention = ["eager", "sdpa", "flash"][attn];
        let run = |b: u32, s: u32, precision: &str| format!(
            "task = \"training\"\nmethod = \"{method}\"\nweights = \"{weights}\"\nprecision = \"{precision}\"\ncheckpointing = \"{ckpt}\"\nattention = \"{attention}\"\nbatch = {b}\nseq = {s}\n"
        );
        let base = peak(MODELS[m], &run(b, s, "bf16"));
        prop_assert!(peak(MODELS[m], &run(b + 1, s, "bf16")) >= base);
        prop_assert!(peak(MODELS[m], &run(b, s + 1, "bf16")) >= base);
        prop_assert!(peak(MODELS[m], &run(b, s, "fp32")) >= base);
    }
}
