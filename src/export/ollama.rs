//! An ollama Modelfile. `FROM` and `PARAMETER` lines from ollama `docs/modelfile.md`;
//! `num_ctx`, `num_gpu` (layers on the GPU) and `num_batch` are runner options of its API
//! (`docs/api.md`, "options"). Flash attention, the KV cache type and the number of parallel
//! requests are server settings (`OLLAMA_FLASH_ATTENTION`, `OLLAMA_KV_CACHE_TYPE`,
//! `OLLAMA_NUM_PARALLEL`, ollama FAQ), so they are written as comments to set before
//! `ollama serve`.

use super::comments;
use super::llama_cpp::{cache_type, flash, gguf_file};
use crate::memory::dtype::KvDtype;
use crate::memory::workload::Workload;

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
    let mut s = comments(&notes);
    s.push_str(&format!("FROM ./{}\n", gguf_file(w)));
    s.push_str(&format!("PARAMETER num_ctx {}\n", r.seq));
    s.push_str("PARAMETER num_gpu 999\n");
    s.push_str(&format!("PARAMETER num_batch {}\n", r.ubatch));
    s
}
