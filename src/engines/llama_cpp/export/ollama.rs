//! An ollama Modelfile. `FROM` and `PARAMETER` lines from ollama `docs/modelfile.md`;
//! `num_ctx`, `num_gpu` (layers on the GPU) and `num_batch` are runner options of its API
//! (`docs/api.md`, "options"). Flash attention, the KV cache type and the number of parallel
//! requests are server settings (`OLLAMA_FLASH_ATTENTION`, `OLLAMA_KV_CACHE_TYPE`,
//! `OLLAMA_NUM_PARALLEL`, ollama FAQ), so they are written as comments to set before
//! `ollama serve`.

use crate::engines::llama_cpp::export::{cache_type, flash, gguf_file, ngl};
use crate::export::comments;
use crate::types::dtype::KvDtype;
use crate::types::workload::Workload;

pub fn render(w: &Workload) -> String {
    let r = &w.run;
    let mut notes = vec![
        format!(
            "VRAM Doctor plan for {} on {}: {} weights, {} tokens per request.",
            w.model_name, w.gpu.name, r.weights, r.seq
        ),
        "Create with: ollama create my-model -f Modelfile".into(),
        "Server settings (environment of `ollama serve`):".into(),
    ];
    if flash(w) {
        notes.push("  OLLAMA_FLASH_ATTENTION=1".into());
    }
    if let Some(t) = cache_type(r.kv_cache).filter(|_| r.kv_cache != KvDtype::Fp16) {
        notes.push(format!("  OLLAMA_KV_CACHE_TYPE={t}"));
    }
    notes.push(format!(
        "  OLLAMA_NUM_PARALLEL={} (each parallel request gets its own num_ctx of KV cache)",
        r.batch
    ));
    if r.cpu_moe_layers > 0 {
        notes.push(format!(
            "The plan keeps the experts of the first {} layers in system RAM (llama.cpp --n-cpu-moe); ollama has no such setting, use llama-server for it.",
            r.cpu_moe_layers
        ));
    }
    let mut s = comments(&notes);
    s.push_str(&format!("FROM ./{}\n", gguf_file(w)));
    s.push_str(&format!("PARAMETER num_ctx {}\n", r.seq));
    // num_gpu is llama.cpp's -ngl; ollama has no --n-cpu-moe, so a MoE split is noted.
    s.push_str(&format!("PARAMETER num_gpu {}\n", ngl(w)));
    s.push_str(&format!("PARAMETER num_batch {}\n", r.ubatch));
    s
}
