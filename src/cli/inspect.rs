//! `vram-doctor inspect PATH [--json]`: what the importers read from a model file or folder.

use super::CliError;
use super::out::outln;
use crate::import::{self, DiffusersPipeline, Imported, ImportedModel};
use crate::memory::{Engine, KvDtype, kv_cache::kv_cache_bytes};
use crate::units::human;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// A config.json, *.safetensors, *.safetensors.index.json, *.gguf, model_index.json, or a
    /// model/pipeline folder.
    pub path: PathBuf,
    /// Print everything that was read as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &InspectArgs) -> Result<(), CliError> {
    let imported = import::import(&a.path)?;
    if a.json {
        let text = serde_json::to_string_pretty(&imported)
            .map_err(|e| format!("cannot write JSON: {e}"))?;
        outln!("{text}")?;
        return Ok(());
    }
    match &imported {
        Imported::Model(m) => print_model(m),
        Imported::Pipeline(p) => print_pipeline(p),
    }
}

/// 8030261248 → "8,030,261,248".
fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn row(label: &str, value: impl std::fmt::Display) -> Result<(), CliError> {
    outln!("{label:<13} {value}")
}

fn print_model(m: &ImportedModel) -> Result<(), CliError> {
    let source = match m.source {
        import::SourceFormat::HfConfig => "config.json",
        import::SourceFormat::Safetensors => "config.json + safetensors headers",
        import::SourceFormat::Gguf => "GGUF header",
    };
    row(
        "model",
        format_args!("{} ({}), read from {source}", m.name, m.model_type),
    )?;
    for f in &m.files {
        row("file", f.display())?;
    }
    let mut params = Vec::new();
    if let Some(n) = m.params_in_files {
        params.push(format!("{} in the weight files", grouped(n)));
    }
    if let Some(n) = m.params_by_shape {
        params.push(format!("{} from the config's shapes", grouped(n)));
    }
    row("parameters", params.join(" · "))?;
    let format = m
        .weights
        .map_or("not stated".to_string(), |w| w.to_string());
    match m.weight_bytes {
        Some(total) => {
            let parts: Vec<String> = m
                .weight_bytes_by_dtype
                .iter()
                .map(|(t, b)| format!("{t} {}", human(*b)))
                .collect();
            row(
                "weights",
                format_args!(
                    "{format} · {} in the files ({})",
                    human(total),
                    parts.join(", ")
                ),
            )?;
        }
        None => match m.config_weight_bytes {
            Some(total) => row(
                "weights",
                format_args!(
                    "{format} · {} as its quantization_config stores them",
                    human(total)
                ),
            )?,
            None => row("weights", format)?,
        },
    }
    let a = &m.arch;
    let mlp = match a.mlp {
        crate::types::arch::Mlp::Gated => "gated",
        crate::types::arch::Mlp::Plain => "plain",
    };
    row(
        "architecture",
        format_args!(
            "{} layers · hidden {} · {} heads / {} KV heads × {} · MLP {} ({mlp}) · vocab {}{}",
            a.layers,
            a.hidden,
            a.heads,
            a.kv_heads,
            a.head_dim,
            a.intermediate,
            a.vocab,
            if a.tied_embeddings {
                " · tied head"
            } else {
                ""
            }
        ),
    )?;
    let mut ctx = a
        .max_context
        .map_or("not stated".to_string(), |c| format!("{c} tokens"));
    if let Some(w) = a.sliding_window {
        ctx += &match a.global_every {
            Some(n) => format!(" · sliding window {w} (1 global layer in {n})"),
            None => format!(" · sliding window {w} (all layers)"),
        };
    }
    row("context", ctx)?;
    if let Some(x) = &a.moe {
        row(
            "experts",
            format_args!(
                "{} routed ({} per token) of width {} · {} shared · {} dense layers",
                x.experts, x.active, x.expert_intermediate, x.shared_experts, x.dense_layers
            ),
        )?;
    }
    if let Some(x) = &a.mla {
        row(
            "latent attn",
            format_args!(
                "kv_lora_rank {} · rope dim {} · q_lora_rank {}",
                x.kv_lora_rank,
                x.qk_rope_head_dim,
                x.q_lora_rank.map_or("none".to_string(), |r| r.to_string())
            ),
        )?;
    }
    let per_token = kv_cache_bytes(a, 1, 1, KvDtype::Fp16, Engine::Vllm, 1);
    row(
        "KV cache",
        format_args!(
            "{} per token at fp16 (vLLM/llama.cpp layout)",
            human(per_token as u64)
        ),
    )?;
    if let Some(g) = &m.gguf {
        row(
            "GGUF",
            format_args!(
                "v{} · {} · {} tensors in {} file(s) · metadata KV {} per token at f16",
                g.version,
                g.file_type_name
                    .as_deref()
                    .unwrap_or("file type not stated"),
                g.tensor_count,
                g.shards,
                human(g.kv_bytes_per_token_f16)
            ),
        )?;
        row(
            "placement",
            format_args!(
                "token_embd {} (llama.cpp keeps it in host memory) · output {}",
                human(g.token_embd_bytes),
                if g.output_bytes == 0 {
                    "tied".to_string()
                } else {
                    human(g.output_bytes)
                }
            ),
        )?;
    }
    for n in &m.notes {
        row("note", n)?;
    }
    Ok(())
}

fn print_pipeline(p: &DiffusersPipeline) -> Result<(), CliError> {
    row("pipeline", format_args!("{} ({})", p.name, p.class_name))?;
    outln!(
        "{:<18} {:<34} {:>16} {:>10}",
        "COMPONENT",
        "CLASS",
        "PARAMETERS",
        "SIZE"
    )?;
    for c in &p.components {
        let params = c.params.map_or("-".to_string(), grouped);
        let size = c.weight_bytes.map_or("-".to_string(), human);
        outln!(
            "{:<18} {:<34} {params:>16} {size:>10}",
            c.name,
            c.class_name
        )?;
        for n in &c.notes {
            outln!("  note: {n}")?;
        }
    }
    row("total", human(p.weight_bytes()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::grouped;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(grouped(8_030_261_248), "8,030,261,248");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(0), "0");
    }
}
