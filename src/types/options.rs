//! The named choices of a workload (`run.task`, `run.engine`, …) as enums with their accepted
//! spellings, so the workload file, the command line and the GUI share one list and every error
//! can say what is allowed.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

macro_rules! choice {
    ($(#[$m:meta])* $name:ident, $field:literal { $($(#[$vm:meta])* $var:ident = $s:literal $(| $alias:literal)*),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vm])* $var),+ }

        impl $name {
            /// Every variant, in the order help texts list them.
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            /// The canonical spellings, for error messages and help.
            pub const NAMES: &'static [&'static str] = &[$($s),+];
            /// The workload-file field this choice fills.
            pub const FIELD: &'static str = $field;

            pub fn as_str(self) -> &'static str {
                match self { $($name::$var => $s),+ }
            }
        }

        impl FromStr for $name {
            type Err = crate::types::error::BadField;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s.trim().to_ascii_lowercase().as_str() {
                    $($s $(| $alias)* => Ok($name::$var),)+
                    _ => Err(crate::types::error::BadField::not_allowed($field, s, Self::NAMES)),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> { s.serialize_str(self.as_str()) }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

/// Other modules (diffusion, games) declare their choices with the same macro.
pub(crate) use choice;

choice!(
    /// What the GPU is asked to do.
    Task, "run.task" {
        Inference = "inference",
        Training = "training" | "finetune" | "fine-tune",
        Diffusion = "diffusion",
        Game = "game",
    }
);

choice!(
    /// The program that runs the model; each allocates differently.
    Engine, "run.engine" {
        Transformers = "transformers" | "hf" | "pytorch" | "torch",
        Vllm = "vllm",
        LlamaCpp = "llama.cpp" | "llamacpp" | "llama-cpp" | "ollama",
        /// AutoAWQ with fused layers: pre-allocates its KV cache for the whole sequence.
        AutoAwq = "autoawq",
        ComfyUi = "comfyui",
        Diffusers = "diffusers",
    }
);

choice!(
    /// Attention kernel: eager materialises the s×s score matrix, the others do not.
    Attention, "run.attention" {
        Eager = "eager",
        Sdpa = "sdpa",
        Flash = "flash" | "flash_attention_2" | "fa2" | "flash-attn",
    }
);

choice!(
    /// The output the model computes: next-token logits over the vocabulary, or a classifier.
    Objective, "run.objective" {
        CausalLm = "causal-lm" | "lm",
        Classification = "classification",
    }
);

choice!(
    /// How the training loss is computed over the vocabulary.
    Loss, "run.loss" {
        /// Full logits, upcast to fp32, then cross-entropy (transformers' default).
        Standard = "standard",
        /// Logits computed and upcast chunk by chunk (torchtune `CEWithChunkedOutputLoss`,
        /// Liger/Unsloth fused cross-entropy).
        Chunked = "chunked" | "fused" | "liger",
    }
);

choice!(
    Method, "run.method" {
        Full = "full",
        Lora = "lora",
        Qlora = "qlora",
    }
);

choice!(
    /// Training precision. Mixed keeps fp32 master weights; `bf16` is pure bf16 (weights,
    /// gradients and optimizer states all bf16).
    Precision, "run.precision" {
        Fp32 = "fp32",
        Fp16Mixed = "fp16-mixed" | "fp16",
        Bf16Mixed = "bf16-mixed",
        Bf16 = "bf16" | "bf16-pure",
    }
);

choice!(
    Optimizer, "run.optimizer" {
        AdamW = "adamw" | "adam",
        /// bitsandbytes' paged variants are this optimizer with `run.paged_optimizer = true`.
        AdamW8bit = "adamw-8bit" | "adam8bit" | "adamw8bit",
        Sgd = "sgd",
        Adafactor = "adafactor",
        Lion = "lion",
    }
);

impl Optimizer {
    /// Whether bitsandbytes has a paged form of it (`bitsandbytes/optim/adamw.py` `PagedAdamW`,
    /// `PagedAdamW8bit`; `optim/lion.py` `PagedLion`; transformers `OptimizerNames`
    /// `paged_adamw_32bit`, `paged_adamw_8bit`, `paged_lion_32bit`); SGD and Adafactor have none.
    pub fn has_paged_variant(self) -> bool {
        matches!(
            self,
            Optimizer::AdamW | Optimizer::AdamW8bit | Optimizer::Lion
        )
    }
}

choice!(
    /// How torch.optim runs the optimizer step over a parameter group (the `foreach` / `fused`
    /// arguments of `torch.optim.AdamW`; `torch/optim/optimizer.py`
    /// `_default_to_fused_or_foreach` picks foreach on CUDA when neither is given).
    OptimizerStep, "run.optimizer_step" {
        /// Multi-tensor kernels over the whole group (`_multi_tensor_adam`): its
        /// `torch._foreach_sqrt` makes one temporary moment for every parameter at once.
        Foreach = "foreach" | "default" | "multi-tensor",
        /// One CUDA kernel updating in place (`_fused_adam` → `torch._fused_adamw_`): no
        /// temporaries. transformers' `optim="adamw_torch_fused"`.
        Fused = "fused",
        /// One parameter at a time (`_single_tensor_adam`, `foreach=False`): the temporary
        /// `denom` is one parameter's size.
        ForLoop = "for-loop" | "loop" | "single-tensor",
    }
);

choice!(
    Checkpointing, "run.checkpointing" {
        None = "none" | "off" | "false",
        Selective = "selective",
        Full = "full" | "on" | "true",
    }
);

choice!(
    Offload, "run.offload" {
        None = "none",
        Optimizer = "optimizer",
        OptimizerParams = "optimizer+params" | "params+optimizer" | "all",
    }
);

pub use super::lora_targets::LoraTargets;

choice!(
    /// What the recommendation optimises when several plans fit.
    ObjectiveSpeed, "run.objective_speed" {
        /// Best quality that fits (the default); an offload plan that keeps quality is preferred
        /// to a quality loss while its decode speed stays above `run.min_tokens_per_s`.
        Quality = "quality",
        /// The fastest plan that fits.
        Speed = "speed" | "fastest",
    }
);

choice!(
    /// ComfyUI's VRAM flag (comfy/cli_args.py `vram_group`: `--gpu-only`, `--highvram`,
    /// `--lowvram`, `--novram`; none given is `VRAMState.NORMAL_VRAM`, comfy/model_management.py).
    /// ComfyUI has no `--normalvram` any more; "normalvram" is still read from older files.
    VramMode, "run.vram_mode" {
        Normal = "normal" | "normalvram" | "normal_vram" | "none",
        Low = "lowvram" | "low" | "low_vram",
        No = "novram" | "no" | "no_vram",
        High = "highvram" | "high" | "high_vram",
        GpuOnly = "gpu-only" | "gpu_only" | "gpuonly",
    }
);

choice!(
    /// ComfyUI's dynamic VRAM switch (comfy/cli_args.py `--enable-dynamic-vram`,
    /// `--disable-dynamic-vram`): `auto` is neither flag, and ComfyUI then decides
    /// (`engines::comfyui::memory::comfy_memory`).
    DynamicVram, "run.dynamic_vram" {
        Auto = "auto" | "default",
        On = "on" | "enable" | "enabled" | "true" | "enable-dynamic-vram",
        Off = "off" | "disable" | "disabled" | "false" | "disable-dynamic-vram",
    }
);

choice!(
    /// The operating system ComfyUI runs on: its default VRAM reserve differs
    /// (comfy/model_management.py `EXTRA_RESERVED_VRAM`).
    Os, "run.os" {
        Windows = "windows" | "win" | "win32",
        Linux = "linux",
    }
);

choice!(
    /// diffusers offloading: `enable_model_cpu_offload` moves whole models to the GPU when
    /// they run; `enable_sequential_cpu_offload` streams every submodule's weights each call.
    CpuOffload, "run.cpu_offload" {
        None = "none" | "off" | "false",
        Model = "model" | "enable_model_cpu_offload",
        Sequential = "sequential" | "enable_sequential_cpu_offload",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_errors_list_the_choices() {
        for n in Engine::NAMES {
            assert_eq!(n.parse::<Engine>().unwrap().as_str(), *n);
        }
        assert_eq!(
            "Flash_Attention_2".parse::<Attention>().unwrap(),
            Attention::Flash
        );
        let e = "adamx".parse::<Optimizer>().unwrap_err().to_string();
        assert!(
            e.contains("run.optimizer") && e.contains("adamw, adamw-8bit"),
            "{e}"
        );
    }

    #[test]
    fn serde_uses_the_canonical_names() {
        let s = serde_json::to_string(&Engine::LlamaCpp).unwrap();
        assert_eq!(s, "\"llama.cpp\"");
        let e: Engine = serde_json::from_str("\"ollama\"").unwrap();
        assert_eq!(e, Engine::LlamaCpp);
    }
}

/// How ComfyUI places weights (engines::comfyui::memory decides it for a plan; the doctor reads
/// it from ComfyUI's console log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryMode {
    /// Weights paged in on demand (comfy-aimdo): resident or streamed.
    Dynamic,
    /// Weights loaded whole or partially by estimate (the legacy `ModelPatcher`).
    Classic,
}
