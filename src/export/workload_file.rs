//! The plan written back into the workload file, for the planner's "Apply plan": the knobs the
//! plan changed are recorded in the file form, so the file the user saves (and `vram-doctor
//! plan --workload` reads) is the run the planner checked. Fields the plan left alone stay as
//! the user wrote them, and unset ones keep following their defaults.

use super::planned;
use crate::memory::any::AnyWorkload;
use crate::memory::diffusion::DiffusionRun;
use crate::memory::game::GameRun;
use crate::plan::PlanResult;
use crate::types::dtype::{KV_NAMES, KvDtype};
use crate::types::workload::{Run, RunSection, WorkloadFile};

/// Applies the plan `r` (made for `w`, the workload `file` resolved to) to `file`: LLM and
/// diffusion strategies as `planned` applies them, game setting steps as `GameAdvice::to_fit`
/// lists them.
pub fn apply_plan(file: &mut WorkloadFile, w: &AnyWorkload, r: &PlanResult) {
    let f = &mut file.run;
    match (w, planned(w, r)) {
        (AnyWorkload::Llm(a), AnyWorkload::Llm(b)) => llm(f, &a.run, &b.run),
        (AnyWorkload::Diffusion(a), AnyWorkload::Diffusion(b)) => diffusion(f, &a.run, &b.run),
        (AnyWorkload::Game(g), _) => game(f, &g.run, &crate::plan::game::fitted(g)),
        // `planned` keeps the task of its input.
        _ => {}
    }
}

/// Copies each listed field that differs between `$before` and `$after` into the file form,
/// converted by `$conv` (a plain copy, an integer widening, or a spelling).
macro_rules! record {
    ($f:expr, $before:expr, $after:expr, $conv:expr, [$($field:ident),* $(,)?]) => {
        $(if $before.$field != $after.$field { $f.$field = Some($conv(&$after.$field)); })*
    };
}

fn llm(f: &mut RunSection, before: &Run, after: &Run) {
    record!(
        f,
        before,
        after,
        |v: &_| *v,
        [
            task,
            objective,
            loss,
            engine,
            attention,
            method,
            precision,
            optimizer,
            optimizer_step,
            optimizer_in_bwd,
            activation_offload,
            paged_optimizer,
            packing,
            checkpointing,
            offload,
            gpu_memory_utilization
        ]
    );
    record!(
        f,
        before,
        after,
        |v: &u32| i64::from(*v),
        [
            batch,
            seq,
            lora_rank,
            grad_accum,
            zero_stage,
            ubatch,
            cpu_moe_layers
        ]
    );
    if before.gpu_layers != after.gpu_layers {
        f.gpu_layers = after.gpu_layers.map(i64::from);
    }
    // The prompt follows the sequence unless set apart from it: a plan that shortens the
    // context pulls the prompt down with it, and writing that down as `prompt = N` would leave
    // a field no control shows, which then refuses every sequence below N (issue 22).
    if before.prompt != after.prompt {
        f.prompt = (after.prompt != after.seq).then_some(i64::from(after.prompt));
    }
    record!(f, before, after, ToString::to_string, [weights]);
    record!(f, before, after, Clone::clone, [lora_targets]);
    record!(
        f,
        before,
        after,
        |k: &KvDtype| kv_name(*k).to_string(),
        [kv_cache]
    );
}

/// Records in `f` the diffusion knobs `after` sets differently from `before` (also how the
/// planner takes in a ComfyUI workflow's peak pass).
pub fn diffusion(f: &mut RunSection, before: &DiffusionRun, after: &DiffusionRun) {
    record!(
        f,
        before,
        after,
        |v: &u32| i64::from(*v),
        [
            width,
            height,
            batch,
            frames,
            loras,
            lora_rank,
            controlnets,
            vae_tile
        ]
    );
    record!(
        f,
        before,
        after,
        |v: &_| *v,
        [
            engine,
            attention,
            cfg,
            vae_tiling,
            vae_slicing,
            vae_decode,
            tiny_vae,
            vram_mode,
            cpu_offload,
            text_encoder_on_cpu,
            ip_adapter
        ]
    );
    record!(f, before, after, ToString::to_string, [weights]);
    if before.text_encoder_weights != after.text_encoder_weights {
        let names: Vec<String> = after
            .text_encoder_weights
            .iter()
            .map(ToString::to_string)
            .collect();
        f.text_encoder_weights = Some(names.join(","));
    }
}

fn game(f: &mut RunSection, before: &GameRun, after: &GameRun) {
    record!(
        f,
        before,
        after,
        ToString::to_string,
        [resolution, texture_quality, upscaler]
    );
    record!(
        f,
        before,
        after,
        |v: &bool| *v,
        [ray_tracing, frame_generation]
    );
}

/// `KvDtype` has no Display: the first accepted spelling that parses back to it.
fn kv_name(k: KvDtype) -> &'static str {
    KV_NAMES
        .iter()
        .find(|n| n.parse::<KvDtype>() == Ok(k))
        .copied()
        .unwrap_or("fp16")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::plan_any;
    use crate::resolve::resolve_any;
    use std::path::Path;

    fn resolve(f: &WorkloadFile) -> AnyWorkload {
        resolve_any(f, Path::new("."), None).unwrap()
    }

    /// Applying the plan to the file gives back exactly the workload the plan describes.
    fn applied_equals_planned(text: &str) -> (WorkloadFile, WorkloadFile) {
        let file = WorkloadFile::parse(text, "w.toml").unwrap();
        let w = resolve(&file);
        let r = plan_any(&w);
        let mut after = file.clone();
        apply_plan(&mut after, &w, &r);
        let expect = match &w {
            AnyWorkload::Game(g) => AnyWorkload::Game(crate::memory::game::GameWorkload {
                run: crate::plan::game::fitted(g),
                ..g.clone()
            }),
            _ => planned(&w, &r),
        };
        assert_eq!(resolve(&after), expect, "{}", after.to_toml().unwrap());
        (file, after)
    }

    #[test]
    fn an_llm_plan_is_recorded() {
        let (before, after) = applied_equals_planned(
            "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n",
        );
        assert_ne!(before, after, "a bf16 8B model needs a plan on 12 GiB");
        let w = resolve(&after);
        assert!(plan_any(&w).plan.changes.is_empty());
    }

    #[test]
    fn a_diffusion_plan_is_recorded() {
        let (before, after) = applied_equals_planned(
            "[gpu]\nvram_gib = 12\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\n",
        );
        assert_ne!(before.run, after.run);
        assert!(after.run.weights.is_some(), "{}", after.to_toml().unwrap());
        applied_equals_planned(
            "[gpu]\nvram_gib = 10\n[model]\npreset = \"sdxl\"\n[run]\ntask = \"diffusion\"\nengine = \"diffusers\"\nbatch = 4\n",
        );
    }

    #[test]
    fn game_steps_are_recorded() {
        let (before, after) = applied_equals_planned(
            "[gpu]\nvram_gib = 8\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"game\"\nresolution = \"4k\"\ntexture_quality = \"ultra\"\nray_tracing = true\n",
        );
        assert_ne!(before.run, after.run);
        let w = resolve(&after);
        assert!(plan_any(&w).plan.strategies.is_empty());
    }
}
