//! The diffusion plan's fixes said as changes to the workflow: which node to swap or set, or
//! which ComfyUI launch flag to add, each with the memory it saves and its speed cost.
//!
//! The fixes are the cheapest set `plan::diffusion::plan` finds for the workflow's peak pass.
//! Each is then worded on the node that carries the setting in ComfyUI: `VAEDecode` →
//! `VAEDecodeTiled` (nodes.py `VAEDecodeTiled`, `tile_size`), `UNETLoader`'s `weight_dtype`
//! (nodes.py `UNETLoader.INPUT_TYPES`: default, fp8_e4m3fn, fp8_e4m3fn_fast, fp8_e5m2), the GGUF
//! loader `UnetLoaderGGUF` (city96/ComfyUI-GGUF nodes.py, a `.gguf` file in models/unet or
//! diffusion_models), a CLIP loader's `device` = cpu (nodes.py `CLIPLoader` / `DualCLIPLoader`)
//! or its fp8 text encoder file, the latent node's `batch_size`, and `--lowvram`
//! (comfy/cli_args.py). Savings and slowdowns are each change's alone, measured against the pass
//! as the workflow has it.

use super::files;
use super::{Pass, WorkflowPlan};
use crate::import::comfy::Workflow;
use crate::import::comfy::nodes::Role;
use crate::memory::diffusion::DiffusionWorkload;
use crate::memory::diffusion::residency::place;
use crate::plan::diffusion::{Strategy, run_seconds};
use crate::plan::verdict::diffusion_need_bytes;
use crate::types::message::{Arg, Message};
use serde::Serialize;

/// One change to make to the workflow (or to ComfyUI's launch).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkflowChange {
    pub strategy: Strategy,
    /// The node to change; absent for a launch flag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class_type: Option<String>,
    /// What to do, one line naming the node (serialised as its English text).
    pub change: Message,
    /// The memory this change saves (`saved`) against the plan's other changes alone (the
    /// workflow as it is for a plan of one change).
    pub saves_bytes: u64,
    /// Run time with this change relative to without it, the plan's other changes made (1.0 =
    /// same; below 1 when it ends weight streaming).
    pub speed_factor: f64,
}

/// A file name with its 16/32-bit format token replaced by `to` (`t5xxl_fp16.safetensors` →
/// `t5xxl_fp8_e4m3fn.safetensors`), or `to` added before the extension when the name states
/// none; `ext` replaces the extension when given (`.gguf`).
fn renamed(file: &str, to: &str, ext: Option<&str>) -> String {
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let stem = files::stem(base);
    let old_ext = &base[stem.len()..];
    let mut out = String::new();
    let mut replaced = false;
    // Tokens between '_' and '-', each separator kept where it was.
    for part in stem.split_inclusive(['_', '-']) {
        let (token, sep) = match part.strip_suffix(['_', '-']) {
            Some(t) => (t, &part[t.len()..]),
            None => (part, ""),
        };
        let lower = token.to_ascii_lowercase();
        if !replaced && matches!(lower.as_str(), "fp16" | "bf16" | "fp32" | "f16" | "f32") {
            out.push_str(to);
            replaced = true;
        } else {
            out.push_str(token);
        }
        out.push_str(sep);
    }
    if !replaced {
        out.push('_');
        out.push_str(to);
    }
    out.push_str(ext.unwrap_or(if old_ext.is_empty() {
        ".safetensors"
    } else {
        old_ext
    }));
    out
}

struct Target {
    node: Option<String>,
    class_type: Option<String>,
    change: Message,
}

/// A change made at node `id`; `change` names it with its class (`{class}`) and id (`{id}`),
/// as [`node`] adds them.
fn at(w: &Workflow, id: &str, change: Message) -> Target {
    Target {
        node: Some(id.to_string()),
        class_type: w.node(id).map(|n| n.class_type.clone()),
        change,
    }
}

/// `m` naming node `id` of `w`: its class (`{class}`, "?" when the workflow lacks it) and id.
fn node(m: Message, w: &Workflow, id: &str) -> Message {
    m.text("class", w.node(id).map_or("?", |n| n.class_type.as_str()))
        .text("id", id)
}

/// The loader's model file, or an empty name.
fn model_file(w: &Workflow, pass: &Pass) -> String {
    w.node(&pass.loader_node)
        .and_then(|n| n.text("ckpt_name").or_else(|| n.text("unet_name")))
        .unwrap_or_default()
        .to_string()
}

fn word(w: &Workflow, pass: &Pass, s: Strategy, tile: u32) -> Target {
    let loader = w.node(&pass.loader_node);
    let loader_role = loader.and_then(super::graph::role);
    let said = |id: &'static str, at_node: &str| node(Message::new(id), w, at_node);
    match s {
        Strategy::TiledVae => match &pass.decode_node {
            Some(d) => at(w, d, said("workflow.change.tiled_vae", d).int("tile", tile)),
            None => launch(s),
        },
        Strategy::Fp8Weights => {
            let l = &pass.loader_node;
            let change = if loader_role == Some(Role::Unet) {
                said("workflow.change.fp8_unet", l)
            } else {
                said("workflow.change.fp8_checkpoint", l)
                    .text("file", renamed(&model_file(w, pass), "fp8", None))
            };
            at(w, l, change)
        }
        Strategy::GgufQ8 | Strategy::GgufQ4 => {
            let q = if s == Strategy::GgufQ8 {
                "Q8_0"
            } else {
                "Q4_K_S"
            };
            let l = &pass.loader_node;
            // A checkpoint's CLIP and VAE then come from their own loaders.
            let id = if loader_role == Some(Role::Checkpoint) {
                "workflow.change.gguf.checkpoint"
            } else {
                "workflow.change.gguf"
            };
            at(
                w,
                l,
                said(id, l)
                    .text("quant", q)
                    .text("file", renamed(&model_file(w, pass), q, Some(".gguf"))),
            )
        }
        Strategy::Fp8TextEncoders => text_encoder_change(w, pass),
        Strategy::TextEncodersOnCpu => match pass
            .text_encoder_nodes
            .iter()
            .find(|id| w.node(id).and_then(super::graph::role) == Some(Role::Clip))
        {
            Some(c) => at(w, c, said("workflow.change.encoders_cpu", c)),
            None => at(
                w,
                &pass.loader_node,
                said("workflow.change.encoders_cpu.loader", &pass.loader_node),
            ),
        },
        Strategy::BatchOne => at(
            w,
            &pass.latent_node,
            said("workflow.change.batch_one", &pass.latent_node),
        ),
        Strategy::LowVram => Target {
            node: None,
            class_type: None,
            change: Message::new("workflow.change.lowvram"),
        },
        // Diffusers-only strategies never apply to a ComfyUI run (`Strategy::applies`).
        _ => launch(s),
    }
}

/// A change no node carries, said by its strategy's label.
fn launch(s: Strategy) -> Target {
    Target {
        node: None,
        class_type: None,
        change: Message::new("workflow.change.strategy")
            .with("strategy", Arg::Term(s.label().to_string())),
    }
}

/// "Load the T5 in fp8": the large text encoders (over 10⁹ parameters: T5-XXL, UMT5, LLaVA)
/// from their fp8 files, in the CLIP loader that names them or, for a checkpoint's own, from a
/// separate loader.
fn text_encoder_change(w: &Workflow, pass: &Pass) -> Target {
    let big: Vec<String> = pass
        .workload
        .text_encoders
        .iter()
        .zip(&pass.workload.run.text_encoder_weights)
        .filter(|(t, f)| t.params > 1e9 && !f.is_quantized())
        .map(|(t, _)| t.id.clone())
        .collect();
    let encoders = Arg::Terms(big.clone(), " and ");
    for id in &pass.text_encoder_nodes {
        let Some(n) = w.node(id) else { continue };
        if super::graph::role(n) != Some(Role::Clip) {
            continue;
        }
        for (file, _) in super::loader_files(n) {
            let is_big = files::identify(&file, files::Want::TextEncoder)
                .is_some_and(|p| big.iter().any(|b| b == p));
            if is_big && !files::format_in_name(&file).is_some_and(|f| f.is_quantized()) {
                let change = node(Message::new("workflow.change.fp8_encoders"), w, id)
                    .with("encoders", encoders)
                    .text("to", renamed(&file, "fp8_e4m3fn", None))
                    .text("file", file);
                return at(w, id, change);
            }
        }
    }
    let l = &pass.loader_node;
    let change =
        node(Message::new("workflow.change.fp8_encoders.loader"), w, l).with("encoders", encoders);
    at(w, l, change)
}

/// The memory a change saves, `before` → `after`: the largest drop among the least card that
/// holds the run whole (`verdict::diffusion_need_bytes`), the use of any one stage (encode,
/// denoise, decode: `residency::place`), and the pipeline's weights wherever they sit. Each
/// alone misses a kind of change: a run that streams weights fills the card whatever its
/// weights weigh, and a smaller decode workspace does not lower a need set by sampling.
fn saved(before: &DiffusionWorkload, after: &DiffusionWorkload) -> u64 {
    let need = diffusion_need_bytes(before).saturating_sub(diffusion_need_bytes(after));
    let (b, a) = (place(before), place(after));
    let stage = b
        .stages
        .iter()
        .zip(&a.stages)
        .map(|(x, y)| x.total() - y.total())
        .fold(0.0, f64::max);
    let weights = b.all_weights - a.all_weights;
    need.max(stage.max(weights).max(0.0) as u64)
}

/// The plan's fixes for the workflow's peak pass, as workflow changes; empty when it fits (or
/// when running as it is, streaming weights, is the cheapest plan). What each saves and costs
/// is its share of the plan: memory (`saved`) and run time without it, the plan's other changes
/// made, against with it.
pub fn of(w: &Workflow, wp: &WorkflowPlan) -> Vec<WorkflowChange> {
    let pass = wp.peak();
    let base = &pass.workload;
    let plan = crate::plan::diffusion::plan(base);
    let with = |set: &[Strategy]| crate::plan::diffusion::planned(base, set);
    let all = with(&plan.strategies);
    let seconds_all = run_seconds(&all, &plan.strategies);
    plan.strategies
        .iter()
        .map(|&s| {
            let rest: Vec<Strategy> = plan
                .strategies
                .iter()
                .copied()
                .filter(|x| *x != s)
                .collect();
            let without = with(&rest);
            let t = word(w, pass, s, all.run.vae_tile);
            WorkflowChange {
                strategy: s,
                node: t.node,
                class_type: t.class_type,
                change: t.change,
                saves_bytes: saved(&without, &all),
                speed_factor: seconds_all / run_seconds(&without, &rest).max(1e-9),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::renamed;

    #[test]
    fn fp8_and_gguf_file_names() {
        assert_eq!(
            renamed("t5xxl_fp16.safetensors", "fp8_e4m3fn", None),
            "t5xxl_fp8_e4m3fn.safetensors"
        );
        assert_eq!(
            renamed("flux1-dev.safetensors", "Q8_0", Some(".gguf")),
            "flux1-dev_Q8_0.gguf"
        );
        assert_eq!(
            renamed("FLUX/flux1-dev-bf16.sft", "Q4_K_S", Some(".gguf")),
            "flux1-dev-Q4_K_S.gguf"
        );
        assert_eq!(
            renamed("umt5_xxl_bf16", "fp8_e4m3fn", None),
            "umt5_xxl_fp8_e4m3fn.safetensors"
        );
    }
}
