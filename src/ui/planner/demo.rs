//! The planned workload as the monitor's demo plays it: the card planned for, and the plan's
//! peak moving over time the way that kind of workload moves (`telemetry::demo::DemoStory`).

use crate::memory::ComponentId;
use crate::memory::any::AnyWorkload;
use crate::memory::diffusion::residency::place;
use crate::plan::PlanResult;
use crate::telemetry::demo::{DemoStory, DemoWorkload};
use crate::types::options::{Engine, Task};

/// The demo of workload `w` planned as `r`: its card by name and size, its process named as
/// the program that would run it, and its peak (the process's own bytes, what nvidia-smi lists).
pub fn demo_of(w: &AnyWorkload, r: &PlanResult) -> DemoWorkload {
    let b = r.breakdown();
    let peak = b.peak.process_bytes;
    let (process, story) = match w {
        AnyWorkload::Llm(l) => {
            // Freed after each step (training) or request (inference).
            let transient = b.get(ComponentId::Activations) + b.get(ComponentId::Logits);
            let program = match l.run.engine {
                Engine::LlamaCpp => "llama-server",
                _ => "python3",
            };
            let story = if l.run.task == Task::Training {
                DemoStory::Training {
                    floor_bytes: peak.saturating_sub(transient),
                    peak_bytes: peak,
                }
            } else {
                // transformers' `DynamicCache` grows with each request and is dropped after
                // it; the other engines allocate the cache for the whole context at start.
                let idle = match l.run.engine {
                    Engine::Transformers => {
                        peak.saturating_sub(transient + b.get(ComponentId::KvCache))
                    }
                    _ => peak,
                };
                DemoStory::Inference {
                    idle_bytes: idle,
                    peak_bytes: peak,
                }
            };
            (format!("{program} ({})", l.model_name), story)
        }
        AnyWorkload::Diffusion(d) => {
            // Each stage holds what the engine places for it, plus what the process holds
            // outside the pipeline's tensors (CUDA context, allocator), the same in every stage.
            let p = place(d);
            let stage = |i: usize| p.stages[i].total() as u64;
            let outside = peak.saturating_sub(stage(p.peak as usize));
            let program = match d.run.engine {
                Engine::Diffusers => "diffusers",
                _ => "ComfyUI",
            };
            (
                format!("python3 ({program}, {})", d.model.name),
                DemoStory::DiffusionQueue {
                    encode_bytes: stage(0) + outside,
                    denoise_bytes: stage(1) + outside,
                    decode_bytes: stage(2) + outside,
                },
            )
        }
        AnyWorkload::Game(g) => {
            // An image name like the game's own (`HogwartsLegacy.exe`), which the monitor's
            // game budget recognises as the game's process.
            let title = g.game.as_ref().map_or("Game", |t| t.name.as_str());
            let image: String = title.chars().filter(|c| c.is_alphanumeric()).collect();
            (
                format!("{image}.exe"),
                // A tenth of the peak streams in and out with each new area [assumption for
                // the demo; reviews report one figure per setting].
                DemoStory::Game {
                    steady_bytes: peak - peak / 10,
                    peak_bytes: peak,
                },
            )
        }
    };
    let gpu = super::gpu(w);
    DemoWorkload {
        gpu_name: gpu.name.clone(),
        total_bytes: gpu.vram_bytes,
        power_limit_w: None,
        process,
        story,
        leaks: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::WorkloadFile;
    use crate::plan::plan_any;
    use crate::resolve::resolve_any;

    fn demo(toml: &str) -> (DemoWorkload, PlanResult) {
        let f = WorkloadFile::parse(toml, "test.toml").unwrap();
        let w = resolve_any(&f, std::path::Path::new("."), None).unwrap();
        let r = plan_any(&w);
        (demo_of(&w, &r), r)
    }

    #[test]
    fn a_game_plays_on_its_card_under_its_own_name_up_to_its_peak() {
        let (d, r) = demo(
            "[gpu]\npreset = \"rtx-4060-8gb\"\n[model]\npreset = \"hogwarts-legacy\"\n[run]\ntask = \"game\"\n",
        );
        assert!(d.gpu_name.contains("4060"), "{}", d.gpu_name);
        assert_eq!(d.total_bytes, 8 << 30);
        assert_eq!(d.process, "HogwartsLegacy.exe");
        match d.story {
            DemoStory::Game {
                steady_bytes,
                peak_bytes,
            } => {
                assert_eq!(peak_bytes, r.peak.process_bytes);
                assert!(steady_bytes < peak_bytes && peak_bytes > 0);
            }
            s => panic!("{s:?}"),
        }
    }

    /// An inference story's idle and peak bytes.
    fn inference(story: &DemoStory) -> (u64, u64) {
        match *story {
            DemoStory::Inference {
                idle_bytes,
                peak_bytes,
            } => (idle_bytes, peak_bytes),
            s => panic!("{s:?}"),
        }
    }

    #[test]
    fn training_saws_by_its_activations_and_inference_by_its_cache() {
        let llama = "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"llama-3.2-1b\"\n";
        let (d, r) = demo(&format!(
            "{llama}[run]\ntask = \"training\"\nmethod = \"lora\"\n"
        ));
        let b = r.breakdown();
        match d.story {
            DemoStory::Training {
                floor_bytes,
                peak_bytes,
            } => {
                assert_eq!(peak_bytes, b.peak.process_bytes);
                assert_eq!(
                    peak_bytes - floor_bytes,
                    b.get(ComponentId::Activations) + b.get(ComponentId::Logits)
                );
            }
            s => panic!("{s:?}"),
        }
        assert!(d.process.starts_with("python3"), "{}", d.process);
        let (d, r) = demo(&format!("{llama}[run]\nengine = \"transformers\"\n"));
        let (idle_bytes, peak_bytes) = inference(&d.story);
        assert!(idle_bytes < peak_bytes);
        assert!(r.breakdown().get(ComponentId::KvCache) <= peak_bytes - idle_bytes);
        let (d, _) = demo(&format!("{llama}[run]\nengine = \"llama.cpp\"\n"));
        let (idle_bytes, peak_bytes) = inference(&d.story);
        assert_eq!(
            idle_bytes, peak_bytes,
            "llama.cpp allocates its cache at start"
        );
        assert!(d.process.starts_with("llama-server"), "{}", d.process);
    }

    #[test]
    fn a_comfyui_queue_peaks_at_the_plans_peak_stage() {
        let (d, r) = demo(
            "[gpu]\npreset = \"rtx-4060-8gb\"\n[model]\npreset = \"sdxl\"\n[run]\ntask = \"diffusion\"\n",
        );
        let DemoStory::DiffusionQueue {
            encode_bytes,
            denoise_bytes,
            decode_bytes,
        } = d.story
        else {
            panic!("{:?}", d.story)
        };
        assert_eq!(
            encode_bytes.max(denoise_bytes).max(decode_bytes),
            r.peak.process_bytes
        );
        assert!(d.process.contains("ComfyUI"), "{}", d.process);
    }
}
