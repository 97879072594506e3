//! llama-server flags. Flag names from llama.cpp `tools/server/README.md`: `-m`, `-ngl`
//! (`--n-gpu-layers`), `-c` (`--ctx-size`, the total context shared by all slots), `-np`
//! (`--parallel`, slots), `-fa` (`--flash-attn on|off|auto`), `--cache-type-k/-v`, `-b`
//! (`--batch-size`, logical) and `-ub` (`--ubatch-size`, physical).

pub mod lm_studio;
pub mod ollama;

use crate::export::{command_line, comments, slug};
use crate::types::dtype::KvDtype;
use crate::types::options::Attention;
use crate::types::workload::Workload;

/// llama.cpp's name for a KV cache type (`--cache-type-k` values); `None` for types it lacks.
pub fn cache_type(k: KvDtype) -> Option<&'static str> {
    match k {
        KvDtype::Fp32 => Some("f32"),
        KvDtype::Fp16 => Some("f16"),
        KvDtype::Bf16 => Some("bf16"),
        KvDtype::Q8_0 => Some("q8_0"),
        KvDtype::Q4_0 => Some("q4_0"),
        KvDtype::Fp8 => None,
    }
}

/// A file name for the model in the planned format.
pub fn gguf_file(w: &Workload) -> String {
    format!(
        "{}-{}.gguf",
        slug(&w.model_name),
        w.run.weights.to_string().to_ascii_uppercase()
    )
}

/// Whether the run needs flash attention: chosen by the plan, or required because llama.cpp
/// only quantizes the V cache with flash attention on.
pub fn flash(w: &Workload) -> bool {
    w.run.attention == Attention::Flash
        || !matches!(
            w.run.kv_cache,
            KvDtype::Fp16 | KvDtype::Bf16 | KvDtype::Fp32
        )
}

/// `-ngl` as planned: `999` (every layer) unless the plan splits the model.
pub fn ngl(w: &Workload) -> String {
    match w.run.gpu_layers {
        Some(n) if n <= w.model.layers => n.to_string(),
        _ => "999".into(),
    }
}

/// What the planned split means, one comment line.
pub fn split_note(w: &Workload) -> String {
    match w.run.gpu_layers {
        Some(n) if n <= w.model.layers => format!(
            "-ngl {n} of {} puts the output layer and the last {} layers on the GPU, the rest in system RAM (as llama.cpp's --fit would); -c is the context of all slots together.",
            w.model.layers + 1,
            n.saturating_sub(1)
        ),
        _ => "-ngl 999 keeps every layer on the GPU, as the plan counts them; -c is the context of all slots together.".into(),
    }
}

pub fn render(w: &Workload) -> String {
    let r = &w.run;
    let mut notes = vec![
        format!(
            "VRAM Doctor plan for {} on {}: {} weights, {} slot(s) × {} tokens.",
            w.model_name, w.gpu.name, r.weights, r.batch, r.seq
        ),
        split_note(w),
    ];
    let mut flags: Vec<(&str, Option<String>)> = vec![
        ("-m", Some(gguf_file(w))),
        ("-ngl", Some(ngl(w))),
        (
            "-c",
            Some((u64::from(r.seq) * u64::from(r.batch)).to_string()),
        ),
        ("-np", Some(r.batch.to_string())),
    ];
    if w.run.cpu_moe_layers > 0 {
        flags.push(("--n-cpu-moe", Some(w.run.cpu_moe_layers.to_string())));
    }
    if !w.run.kv_offload {
        flags.push(("--no-kv-offload", None));
    }
    if flash(w) {
        flags.push(("-fa", Some("on".into())));
        notes.push("Older builds take -fa without a value.".into());
    }
    // Always said (f16 is llama.cpp's default, but a command that states it holds the cache
    // the plan counted whatever the build's default); the resolver refuses the types llama.cpp
    // lacks (`types::dtype::kv_types_of`).
    match cache_type(r.kv_cache) {
        Some(t) => {
            flags.push(("--cache-type-k", Some(t.into())));
            flags.push(("--cache-type-v", Some(t.into())));
        }
        None => notes.push(format!(
            "llama.cpp has no {:?} KV cache; q8_0 is its closest.",
            r.kv_cache
        )),
    }
    flags.push(("-b", Some(r.ubatch.max(2048).to_string())));
    flags.push(("-ub", Some(r.ubatch.to_string())));
    let mut s = comments(&notes);
    s.push_str(&command_line("llama-server", &flags));
    s
}
