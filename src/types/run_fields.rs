//! The `[run]` fields of the workload file, each declared once (issue 13, item 5).
//!
//! `run_fields!(then)` hands the table below to the macro `then`, which builds what it needs
//! from it: `types::workload` the file section `RunSection` (serde reads and writes it) and
//! `RUN_FIELDS`, every field's name with the kind of workload it belongs to (what
//! `fields_kind` reads); `cli::plan` the `plan` flags (`RunFlags`, flattened into `PlanArgs`)
//! and the step that sets each given flag's field over the file's. The calibration harness keeps
//! no list of them: it reads the resolved fields from `plan --print-resolved`.
//!
//! A row is: the field's doc comments (the file's documentation), `name: Type` (the file holds
//! an `Option<Type>`), the kind of workload only this field belongs to (`training`, `llm`,
//! `diffusion`, `game`, or `any` when it tells nothing about the kind: `fields_kind`), and its
//! flag: `value(ARGS)` takes a value, `on(ARGS)` is a switch that sets `true`, `off(ARGS)` one
//! that sets `false`. ARGS are the flag's clap `#[arg(..)]` (`long` names it after the field)
//! and the doc comments in the braces its help.
//!
//! Adding a `[run]` field takes two edits:
//! 1. a row here: the file field, its `plan` flag and its kind follow;
//! 2. its engine use: the resolved run's field with its default (`types::workload::Run`,
//!    `memory::diffusion::DiffusionRun` or `memory::game::GameRun`) and the line of `resolve`
//!    that checks and fills it in, the estimator that reads it, and its line in words in the
//!    report (`export::report::settings`; `every_run_field_has_words_in_the_report` names a
//!    resolved field without one); where the planner changes it, `export::workload_file` writes
//!    it back, and a harness that measures it reads it in `tests/calibration/workload.py` `Run`.
//!
//! `field_names_are_listed_only_here` fails on a list of field names written by hand elsewhere.

macro_rules! run_fields {
    ($then:ident) => {
        $then! {
            task: Task, any, value(long) {},
            /// What the model is trained or run for: `causal-lm` (next-token logits over the
            /// vocabulary, the default) or `classification` (a small head, no vocabulary logits).
            objective: Objective, llm, value(long = "training-objective") {
                /// What the model is trained for: causal-lm (the vocabulary's logits, default) or
                /// classification (a small head).
            },
            /// Training loss computation: `standard` or `chunked`.
            loss: Loss, training, value(long) {
                /// Training loss: standard (full logits) or chunked (chunked / fused cross-entropy).
            },
            weights: String, any, value(long) {
                /// Weight format: fp32 fp16 bf16 fp8 int8 nf4 gptq-4bit awq-4bit q8_0 q6_k q5_k_m q4_k_m q4_0 q3_k_m q2_k …
            },
            batch: i64, any, value(long) {
                /// Sequences processed together.
            },
            seq: i64, llm, value(long) {
                /// Tokens per sequence (prompt + generated).
            },
            /// Tokens of the prompt processed in one forward pass (prefill); defaults to `seq`.
            prompt: i64, llm, value(long) {
                /// Prompt tokens processed in one forward pass (defaults to --seq).
            },
            engine: Engine, any, value(long) {},
            kv_cache: String, llm, value(long) {
                /// KV cache type: fp16 bf16 fp8 q8_0 q4_0.
            },
            attention: Attention, any, value(long) {},
            method: Method, training, value(long) {},
            precision: Precision, training, value(long) {},
            optimizer: Optimizer, training, value(long) {},
            /// How the optimizer step runs: `foreach` (PyTorch's CUDA default), `fused` or `for-loop`.
            optimizer_step: OptimizerStep, training, value(long) {
                /// How the optimizer step runs: foreach (PyTorch's CUDA default), fused, for-loop.
            },
            /// torchtune `optimizer_in_bwd`: each parameter's optimizer step runs in the backward pass
            /// as soon as its gradient is complete, and the gradient is freed.
            optimizer_in_bwd: bool, training, on(long) {
                /// torchtune optimizer_in_bwd: step each parameter in backward and free its gradient.
            },
            /// Saved activations moved to host memory in the forward and brought back in backward
            /// (torchtune `enable_activation_offloading`, TRL `activation_offloading`, Unsloth
            /// `use_gradient_checkpointing="unsloth"`); needs full checkpointing.
            activation_offload: bool, training, on(long) {
                /// Move the checkpointed layers' inputs to CPU RAM (torchtune enable_activation_offloading).
            },
            /// bitsandbytes' paged optimizer (`is_paged=True`: transformers `optim="paged_adamw_8bit"`,
            /// `"paged_adamw_32bit"`, `"paged_lion_32bit"`): its states in CUDA managed memory, which
            /// the driver moves to host RAM when the card runs short.
            paged_optimizer: bool, training, on(long) {
                /// bitsandbytes' paged optimizer: states in CUDA managed memory, paged to host RAM when short.
            },
            /// Sequence packing (TRL `SFTConfig(packing=True)`, torchtune `dataset.packed: True`):
            /// each of the `batch` rows holds `seq` tokens of whole samples back to back, with no
            /// padding; without it each sample is its own row, padded to the longest of the batch.
            packing: bool, training, on(long) {
                /// Sequence packing (TRL packing=True, torchtune packed: True): rows of --seq tokens of whole samples, no padding.
            },
            /// Mean tokens per training sample (samples longer than `seq` are cut to it); absent:
            /// every sample is `seq` long. Sets how much of a padded batch is padding.
            avg_seq: i64, training, value(long) {
                /// Mean tokens per training sample (default: --seq); shorter samples mean padding unless packed.
            },
            /// The model compiled with `torch.compile` (transformers `torch_compile=True`,
            /// torchtune `compile: True`); its memory is estimated as eager mode's, and the plan
            /// says so.
            torch_compile: bool, training, on(long) {
                /// The model compiled with torch.compile (memory estimated as in eager mode; the plan warns).
            },
            checkpointing: Checkpointing, training, value(long) {},
            lora_rank: i64, any, value(long) {},
            lora_targets: LoraTargets, training, value(long) {
                /// Which linear modules get LoRA adapters, as PEFT's `target_modules`: all-linear,
                /// attention, default (PEFT's own for the model type), names (q_proj,v_proj) or a
                /// regular expression over the module keys (.*\.(q|v)_proj).
            },
            grad_accum: i64, training, value(long) {},
            zero_stage: i64, training, value(long) {},
            offload: Offload, training, value(long) {},
            /// vLLM `--gpu-memory-utilization` (fraction of total memory it pre-allocates).
            gpu_memory_utilization: f64, llm, value(long) {
                /// vLLM --gpu-memory-utilization.
            },
            /// llama.cpp `--ubatch-size`.
            ubatch: i64, llm, value(long) {
                /// llama.cpp --ubatch-size (default 512).
            },
            /// llama.cpp `-ngl` / ollama `num_gpu`: layers on the GPU, the output layer counted as the
            /// last one; absent = let the planner choose, as `--fit` does.
            gpu_layers: i64, llm, value(long, visible_alias = "ngl", allow_negative_numbers = true) {
                /// llama.cpp -ngl / ollama num_gpu: layers on the GPU (the output layer counts as the last);
                /// absent = the planner chooses, as llama.cpp's --fit does.
            },
            /// llama.cpp `--n-cpu-moe N`: the experts of the first N layers stay in system RAM.
            cpu_moe_layers: i64, llm, value(long, visible_alias = "n-cpu-moe") {
                /// llama.cpp --n-cpu-moe: experts of the first N layers in system RAM.
            },
            /// false = llama.cpp `--no-kv-offload`: the KV cache stays in system RAM.
            kv_offload: bool, llm, off(long = "no-kv-offload") {
                /// llama.cpp --no-kv-offload: the KV cache in system RAM.
            },
            /// llama.cpp `--fit-target`: MiB `--fit` leaves free on the GPU (default 1024).
            fit_target_mib: f64, llm, value(long = "fit-target") {
                /// llama.cpp --fit-target: MiB --fit leaves free on the GPU (default 1024).
            },
            /// What the recommendation optimises: best quality that fits, or the fastest.
            objective_speed: ObjectiveSpeed, any, value(long = "objective") {
                /// What the recommendation optimises: quality (best quality that fits) or speed.
            },
            /// Decode speed (tokens/s) above which keeping quality by offloading beats a quality loss.
            min_tokens_per_s: f64, any, value(long) {
                /// Decode tokens/s above which keeping quality by offloading beats a quality loss (default 5).
            },
            /// VRAM already held by other programs (desktop, browser), GiB.
            other_processes_gib: f64, any, value(long = "other-gib") {
                /// VRAM already used by other programs, GiB.
            },
            // Diffusion and game fields of the contract; read by those estimators.
            width: i64, diffusion, value(long) {
                /// Image width in pixels (multiple of 8).
            },
            height: i64, diffusion, value(long) {
                /// Image height in pixels (multiple of 8).
            },
            vae_tiling: bool, diffusion, on(long) {
                /// Decode the image in tiles (ComfyUI "VAE Decode (Tiled)", diffusers enable_vae_tiling).
            },
            /// Side of one tile of a tiled VAE decode, pixels (ComfyUI VAEDecodeTiled `tile_size`,
            /// default 512).
            vae_tile: i64, diffusion, value(long) {
                /// Side of one tile of a tiled VAE decode, pixels (default 512).
            },
            resolution: String, game, value(long) {
                /// Display resolution: 2560x1440, 1440p, 4k.
            },
            texture_quality: String, game, value(long) {
                /// Texture quality: low medium high ultra.
            },
            ray_tracing: bool, game, on(long = "rt") {
                /// Ray tracing on.
            },
            frame_generation: bool, game, on(long = "frame-gen") {
                /// Frame generation on.
            },
            // More diffusion fields (read by memory::diffusion; see its docs for the defaults).
            /// Output frames of a video model.
            frames: i64, diffusion, value(long) {
                /// Output frames of a video model.
            },
            /// Sampling steps of a diffusion run (for seconds per image; default 20).
            steps: i64, diffusion, value(long) {
                /// Sampling steps, for seconds per image (default 20).
            },
            /// Classifier-free guidance (cond + uncond batch); defaults to the model's usual setting.
            cfg: bool, diffusion, value(long) {
                /// Classifier-free guidance (cond + uncond batch): true or false (default: the model's usual).
            },
            /// diffusers `enable_vae_slicing`: decode the batch one image at a time.
            vae_slicing: bool, diffusion, on(long) {
                /// diffusers enable_vae_slicing: decode a batch one image at a time.
            },
            /// false: stop at the latents (diffusers `output_type="latent"`), no VAE decode.
            vae_decode: bool, diffusion, off(long = "no-vae-decode") {
                /// Stop at the latents: no VAE decode (diffusers output_type="latent").
            },
            /// Tiny autoencoder (TAESD) instead of the full VAE.
            tiny_vae: bool, diffusion, on(long) {
                /// A tiny autoencoder (TAESD) instead of the full VAE.
            },
            /// ComfyUI VRAM mode: normal | lowvram | novram | highvram | gpu-only.
            vram_mode: VramMode, diffusion, value(long) {
                /// ComfyUI VRAM mode: normal lowvram novram highvram gpu-only.
            },
            /// diffusers offloading: none | model | sequential.
            cpu_offload: CpuOffload, diffusion, value(long) {
                /// diffusers offloading: none model sequential.
            },
            /// Text-encoder weight format: one for all, or a comma list in the model's encoder order.
            text_encoder_weights: String, diffusion, value(long) {
                /// Text-encoder weights: one format, or one per encoder ("fp8,fp16,fp8").
            },
            /// Run the text encoders on the CPU (or use precomputed prompt embeddings).
            text_encoder_on_cpu: bool, diffusion, on(long) {
                /// Run the text encoders on the CPU.
            },
            /// Number of LoRAs loaded (each of `lora_rank`).
            loras: i64, diffusion, value(long) {
                /// LoRAs loaded (each of --lora-rank).
            },
            controlnets: i64, diffusion, value(long) {
                /// ControlNets loaded.
            },
            ip_adapter: bool, diffusion, on(long) {
                /// An IP-Adapter with its image encoder.
            },
            /// ComfyUI `--reserve-vram` in GiB; absent: ComfyUI's default for the memory mode and
            /// `run.os` (`engines::comfyui::memory`).
            reserve_vram_gib: f64, diffusion, value(long) {
                /// ComfyUI --reserve-vram, GiB (default: ComfyUI's for the memory mode and --os).
            },
            /// ComfyUI `--enable-dynamic-vram` (on) / `--disable-dynamic-vram` (off); auto (default):
            /// neither, and ComfyUI decides.
            dynamic_vram: DynamicVram, diffusion, value(long) {
                /// ComfyUI dynamic VRAM: auto (neither flag, ComfyUI decides), on (--enable-dynamic-vram),
                /// off (--disable-dynamic-vram).
            },
            /// ComfyUI `--vram-headroom` in GiB: VRAM dynamic VRAM keeps free beyond its own (default 0).
            vram_headroom_gib: f64, diffusion, value(long) {
                /// ComfyUI --vram-headroom, GiB (dynamic VRAM only).
            },
            /// The PyTorch version ComfyUI runs on ("2.7.1"): dynamic VRAM needs 2.8 or later.
            torch_version: String, diffusion, value(long) {
                /// The PyTorch version ComfyUI runs on ("2.7.1"); dynamic VRAM needs 2.8 or later.
            },
            /// The operating system ComfyUI runs on: windows (default) | linux.
            os: Os, diffusion, value(long) {
                /// The OS ComfyUI runs on: windows linux (its default reserve differs).
            },
            // More game fields (read by memory::game).
            /// Upscaler mode: none | quality | balanced | performance | ultra-performance (DLSS/FSR/XeSS).
            upscaler: String, game, value(long) {
                /// Upscaler: none quality balanced performance ultra-performance.
            },
        }
    };
}

pub(crate) use run_fields;

#[cfg(test)]
mod tests {
    use crate::types::workload::RUN_FIELDS;
    use std::path::{Path, PathBuf};

    /// The string literals of `code` written one after another with only commas between them
    /// (`&["method", "precision", …]`, a Python tuple), three or more together; comments
    /// (`comment` to the end of the line) skipped.
    fn literal_lists(code: &str, comment: &str) -> Vec<Vec<String>> {
        let mut lists = Vec::new();
        let mut run: Vec<String> = Vec::new();
        // Commas since the last literal (more than one, or anything else, ends the run).
        let mut commas = 0;
        let mut rest = code;
        let mut close = |run: &mut Vec<String>| {
            if run.len() >= 3 {
                lists.push(std::mem::take(run));
            }
            run.clear();
        };
        while let Some(c) = rest.chars().next() {
            if rest.starts_with(comment) {
                rest = rest.find('\n').map_or("", |i| &rest[i..]);
            } else if rest.starts_with("'\"'") {
                rest = &rest[3..];
                commas = 2;
                close(&mut run);
            } else if c == '"' {
                let body = &rest[1..];
                let mut end = body.len();
                let mut escaped = false;
                for (i, ch) in body.char_indices() {
                    match ch {
                        '\\' if !escaped => escaped = true,
                        '"' if !escaped => {
                            end = i;
                            break;
                        }
                        _ => escaped = false,
                    }
                }
                if commas != 1 {
                    close(&mut run);
                }
                run.push(body[..end].to_string());
                commas = 0;
                rest = body.get(end + 1..).unwrap_or("");
            } else {
                if c == ',' {
                    commas += 1;
                } else if !c.is_whitespace() {
                    commas = 2;
                }
                if commas > 1 {
                    close(&mut run);
                }
                rest = &rest[c.len_utf8()..];
            }
        }
        close(&mut run);
        lists
    }

    fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("a readable directory") {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                files(&p, ext, out);
            } else if p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
    }

    /// A `[run]` field's name is written in a list of names only here: the file section, the
    /// flags, the kinds of `fields_kind` and the harness's fields come from this table, so a
    /// list of three or more field names anywhere else in the code (`src/`, before its tests)
    /// or in the calibration harness is a copy that a new field would miss.
    #[test]
    fn field_names_are_listed_only_here() {
        let names: Vec<&str> = RUN_FIELDS.iter().map(|f| f.name).collect();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut sources = Vec::new();
        files(&root.join("src"), "rs", &mut sources);
        files(&root.join("tests/calibration"), "py", &mut sources);
        assert!(sources.len() > 100, "{} files", sources.len());
        let mut copies = Vec::new();
        for path in &sources {
            if path.ends_with("src/types/run_fields.rs") {
                continue;
            }
            let text = std::fs::read_to_string(path).expect("a readable source file");
            let (code, comment) = match path.extension().and_then(|x| x.to_str()) {
                Some("py") => (text.as_str(), "#"),
                _ => (
                    &text[..text.find("#[cfg(test)]").unwrap_or(text.len())],
                    "//",
                ),
            };
            for list in literal_lists(code, comment) {
                let fields: Vec<&String> = list
                    .iter()
                    .filter(|s| names.contains(&s.as_str()))
                    .collect();
                if fields.len() >= 3 {
                    copies.push(format!("{}: {fields:?}", path.display()));
                }
            }
        }
        assert!(
            copies.is_empty(),
            "[run] field names listed by hand outside types/run_fields.rs:\n{}",
            copies.join("\n")
        );
    }

    #[test]
    fn the_detector_sees_lists_and_not_calls() {
        let rust = "const L: &[&str] = &[\n    \"method\",\n    \"precision\", // a comment, \"x\"\n    \"loss\",\n];\nsetting(\"task\", \"Task\", r.task, true);\nlet q = '\"'; let s = \"a\\\"b\";";
        assert_eq!(
            literal_lists(rust, "//"),
            [vec!["method", "precision", "loss"]]
        );
        let py = "F = (\"task\", \"weights\", \"batch\")  # \"seq\", \"prompt\"\nD = {\"a\": 1, \"b\": 2, \"c\": 3}";
        assert_eq!(literal_lists(py, "#"), [vec!["task", "weights", "batch"]]);
    }
}
