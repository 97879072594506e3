//! LM Studio: the planned split as a model load through its SDK (`@lmstudio/sdk`,
//! `client.llm.load(key, { config })`), with the `lms load` command for what its CLI can set.
//!
//! Field names from lmstudio-js `packages/lms-shared-types/src/llm/LLMLoadModelConfig.ts`
//! (`LLMLoadModelConfig`, `GPUSetting`): `gpu.ratio` is the share of the layers offloaded to the
//! GPU (0-1, "max", "off"), `gpu.numCpuExpertLayersRatio` the share of layers whose expert
//! blocks are forced into CPU memory (LM Studio's "CPU expert layers"), `contextLength`,
//! `flashAttention`, `offloadKVCacheToGpu`, `llamaKCacheQuantizationType` /
//! `llamaVCacheQuantizationType`, `evalBatchSize`. `lms load` takes `--gpu` (the same ratio) and
//! `--context-length` (LM Studio docs, `lms load`).

use crate::engines::llama_cpp::export::{cache_type, flash};
use crate::types::workload::Workload;

/// A ratio as LM Studio takes it: "max", "off" or a share with three decimals.
fn ratio(part: u32, whole: u32) -> String {
    match part {
        0 => "\"off\"".into(),
        p if p >= whole => "\"max\"".into(),
        p => format!("{:.3}", f64::from(p) / f64::from(whole.max(1))),
    }
}

/// The GPU share of the plan's split: the layers on the GPU (llama.cpp's `-ngl`, the output
/// layer counted as the last) over all of them.
fn gpu_ratio(w: &Workload) -> String {
    let total = w.model.layers + 1;
    ratio(w.run.gpu_layers.unwrap_or(total).min(total), total)
}

pub fn render(w: &Workload) -> String {
    let r = &w.run;
    let total = w.model.layers + 1;
    let ngl = r.gpu_layers.unwrap_or(total).min(total);
    let gpu = gpu_ratio(w);
    let mut notes = vec![
        format!(
            "VRAM Doctor plan for {} on {}: {} weights, {} tokens of context.",
            w.model_name, w.gpu.name, r.weights, r.seq
        ),
        format!(
            "GPU offload {ngl} of {total} layers (llama.cpp -ngl {ngl}; the output layer counts as the last); LM Studio takes it as a share and rounds it to layers itself, so check its slider shows {ngl}."
        ),
    ];
    if r.batch > 1 {
        notes.push(format!(
            "The plan serves {} requests at once: set maxParallelPredictions to {}; contextLength is per request here.",
            r.batch, r.batch
        ));
    }
    notes.push("Run with: npx tsx lmstudio-load.ts (npm install @lmstudio/sdk)".into());
    notes.push(format!(
        "CLI equivalent (no KV cache type or expert setting there): lms load MODEL_KEY --gpu {} --context-length {}",
        gpu.trim_matches('"'),
        r.seq
    ));
    let mut config = vec![
        format!("contextLength: {}", r.seq),
        {
            let mut g = format!("gpu: {{ ratio: {gpu}");
            if r.cpu_moe_layers > 0 {
                g.push_str(&format!(
                    ", numCpuExpertLayersRatio: {}",
                    ratio(r.cpu_moe_layers.min(w.model.layers), w.model.layers)
                ));
            }
            g.push_str(" }");
            g
        },
        format!("flashAttention: {}", flash(w)),
        format!("offloadKVCacheToGpu: {}", r.kv_offload),
        format!("evalBatchSize: {}", r.ubatch),
    ];
    if r.batch > 1 {
        config.push(format!("maxParallelPredictions: {}", r.batch));
    }
    if r.cpu_moe_layers > 0 {
        notes.push(format!(
            "CPU expert layers: the experts of {} of {} layers in system RAM (llama.cpp --n-cpu-moe {}).",
            r.cpu_moe_layers, w.model.layers, r.cpu_moe_layers
        ));
    }
    match cache_type(r.kv_cache) {
        Some(t) => {
            config.push(format!("llamaKCacheQuantizationType: \"{t}\""));
            config.push(format!("llamaVCacheQuantizationType: \"{t}\""));
        }
        None => notes.push(format!(
            "LM Studio (llama.cpp) has no {:?} KV cache; q8_0 is its closest.",
            r.kv_cache
        )),
    }
    let mut s: String = notes.iter().map(|n| format!("// {n}\n")).collect();
    s.push_str("import { LMStudioClient } from \"@lmstudio/sdk\";\n\n");
    s.push_str("// The key `lms ls` lists for your download of this model.\n");
    s.push_str(&format!(
        "const MODEL_KEY = \"{}\";\n\n",
        crate::export::slug(&w.model_name).to_ascii_lowercase()
    ));
    s.push_str("const client = new LMStudioClient();\n");
    s.push_str("const model = await client.llm.load(MODEL_KEY, {\n  config: {\n");
    for c in &config {
        s.push_str(&format!("    {c},\n"));
    }
    s.push_str("  },\n});\nconsole.log(`loaded ${model.identifier}`);\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_lm_studios_values() {
        assert_eq!(ratio(0, 49), "\"off\"");
        assert_eq!(ratio(49, 49), "\"max\"");
        assert_eq!(ratio(60, 49), "\"max\"");
        assert_eq!(ratio(28, 49), "0.571");
    }
}
