//! The doctor on every message family the programs print (issue 16): each family has at least
//! three fixtures (tests/data/doctor_families.toml), each is recognised, each GPU-related text
//! gets a diagnosis rather than "not a GPU error", and the top cause is the expected one. Fixes
//! are ordered by how likely their cause is, then by cost, and fit the program recognised.

use serde::Deserialize;
use std::collections::BTreeMap;
use vram_doctor::doctor::reading::read;
use vram_doctor::doctor::{Knowledge, WizardState};

#[derive(Deserialize)]
struct Fixtures {
    message: Vec<Fixture>,
}

#[derive(Deserialize)]
struct Fixture {
    id: String,
    family: String,
    source: String,
    cause: String,
    text: String,
    #[serde(default)]
    carries_on: bool,
}

fn fixtures() -> Vec<Fixture> {
    let f: Fixtures =
        toml::from_str(include_str!("data/doctor_families.toml")).expect("fixture file parses");
    f.message
}

fn kb() -> &'static Knowledge {
    Knowledge::get()
}

/// Every family of the issue, each with at least three messages.
#[test]
fn every_family_has_three_fixtures() {
    let mut per: BTreeMap<String, usize> = BTreeMap::new();
    for f in fixtures() {
        assert!(!f.source.trim().is_empty(), "[{}] names no source", f.id);
        *per.entry(f.family).or_default() += 1;
    }
    for family in [
        "vllm",
        "ollama",
        "llamacpp",
        "vulkan",
        "forge",
        "a1111",
        "metal",
        "pytorch",
        "bitsandbytes",
        "deepspeed",
        "accelerate",
        "comfyui",
        "cuda_driver",
        "game",
        "spill",
        "fault",
    ] {
        let n = per.get(family).copied().unwrap_or(0);
        assert!(n >= 3, "family {family} has {n} fixtures");
    }
}

#[test]
fn every_family_message_gets_its_top_cause() {
    let mut wrong = Vec::new();
    for f in fixtures() {
        let r = read(&f.text, kb(), None).unwrap();
        assert!(r.recognised(), "[{}] not recognised", f.id);
        let s = WizardState::start(kb(), &kb().root, r.observations.clone()).unwrap();
        let d = s.diagnosis(kb(), "en").unwrap();
        let top = d.causes.first().map_or("(none)", |c| c.id.as_str());
        if top != f.cause {
            wrong.push(format!("[{}] top cause {top}, expected {}", f.id, f.cause));
        }
        assert!(!d.fixes.is_empty(), "[{}] no fixes", f.id);
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Fixes come by the rank of the cause they are for, cheapest first within it, and the top
/// cause's fixes lead (a free fix for an unlikely cause never outranks them).
#[test]
fn fixes_follow_the_causes_then_the_cost() {
    for f in fixtures() {
        let r = read(&f.text, kb(), None).unwrap();
        let s = WizardState::start(kb(), &kb().root, r.observations).unwrap();
        let d = s.diagnosis(kb(), "en").unwrap();
        let rank = |fix: &vram_doctor::doctor::diagnosis::FixLine| {
            d.causes
                .iter()
                .position(|c| fix.for_causes.contains(&c.id))
                .unwrap_or(usize::MAX)
        };
        let keys: Vec<_> = d.fixes.iter().map(|x| (rank(x), x.cost)).collect();
        assert!(
            keys.windows(2).all(|w| w[0] <= w[1]),
            "[{}] fixes out of order: {keys:?}",
            f.id
        );
        if let Some(first) = d.fixes.first() {
            assert!(
                first.for_causes.contains(&d.causes[0].id),
                "[{}] the first fix is not for the top cause",
                f.id
            );
        }
    }
}

fn fix_ids(text: &str) -> Vec<String> {
    let r = read(text, kb(), None).unwrap();
    let s = WizardState::start(kb(), &kb().root, r.observations).unwrap();
    s.diagnosis(kb(), "en")
        .unwrap()
        .fixes
        .into_iter()
        .map(|f| f.id)
        .collect()
}

#[test]
fn fixes_fit_the_program_that_printed_the_message() {
    let ollama = fix_ids(
        "Error: llama runner process has terminated: error:failed to create context with model",
    );
    assert!(ollama.contains(&"ollama_num_ctx".to_string()), "{ollama:?}");
    assert!(
        !ollama
            .iter()
            .any(|f| f.starts_with("vllm_") || f.starts_with("llamacpp_")),
        "{ollama:?}"
    );
    let llama = fix_ids(
        "llama_kv_cache_init: failed to allocate buffer for kv cache\nllama_new_context_with_model: llama_kv_cache_init() failed for self-attention cache",
    );
    assert!(llama.contains(&"llamacpp_ctx".to_string()), "{llama:?}");
    assert!(
        !llama
            .iter()
            .any(|f| f.starts_with("ollama_") || f.starts_with("vllm_")),
        "{llama:?}"
    );
    assert_ne!(llama[0], "vllm_memory_utilization");
    let vllm = fix_ids(
        "ValueError: To serve at least one request with the models's max seq len (32768), (4.00 GiB KV cache is needed, which is larger than the available KV cache memory (1.20 GiB).",
    );
    assert!(vllm.contains(&"vllm_max_model_len".to_string()), "{vllm:?}");
    assert!(!vllm.iter().any(|f| f.starts_with("ollama_")), "{vllm:?}");
    let comfy = fix_ids(
        "Got an OOM, unloading all loaded models.\nThis error means you ran out of memory on your GPU.",
    );
    assert!(
        !comfy
            .iter()
            .any(|f| f.starts_with("ollama_") || f.starts_with("vllm_")),
        "{comfy:?}"
    );
    // HSA_OVERRIDE_GFX_VERSION is read by ROCm only: offered for a HIP build, not for CUDA.
    let cuda_arch = fix_ids(
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    );
    assert!(
        !cuda_arch.contains(&"hsa_override".to_string()),
        "{cuda_arch:?}"
    );
    let hip_arch = fix_ids(
        "RuntimeError: HIP error: invalid device function\nrocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: Illegal seek for GPU arch : gfx1032",
    );
    assert!(
        hip_arch.contains(&"hsa_override".to_string()),
        "{hip_arch:?}"
    );
    // CUDA_LAUNCH_BLOCKING locates a faulting kernel; it is no fix for a plain OOM.
    let plain = fix_ids("RuntimeError: CUDA error: out of memory");
    assert!(
        !plain.contains(&"cuda_launch_blocking".to_string()),
        "{plain:?}"
    );
    let fault = fix_ids("RuntimeError: CUDA error: an illegal memory access was encountered");
    assert!(
        fault.contains(&"cuda_launch_blocking".to_string()),
        "{fault:?}"
    );
}

/// expandable_segments cannot help when even free plus trapped memory is below the request
/// (PyTorch's caching allocator releases every cached block before it raises, and an
/// expandable segment still maps new pages from free memory: c10/cuda/CUDACachingAllocator.cpp,
/// DeviceCachingAllocator::malloc): it is under "Cannot help here", with the figures as reason.
#[test]
fn a_fix_the_figures_rule_out_is_not_ranked_above_one_that_can_help() {
    let p1 = "CUDA out of memory. Tried to allocate 22.78 GiB. GPU 0 has a total capacity of 31.47 GiB of which 12.73 GiB is free. Including non-PyTorch memory, this process has 18.73 GiB memory in use. Of the allocated memory 9.08 GiB is allocated by PyTorch, and 9.35 GiB is reserved by PyTorch but unallocated.";
    let r = read(p1, kb(), None).unwrap();
    let s = WizardState::start(kb(), &kb().root, r.observations).unwrap();
    let d = s.diagnosis(kb(), "en").unwrap();
    assert!(
        d.fixes
            .iter()
            .all(|f| f.id != "expandable_segments" && f.reason.is_none())
    );
    let no = d
        .cannot_help
        .iter()
        .find(|f| f.id == "expandable_segments")
        .expect("listed as cannot help");
    let why = no.reason.as_deref().unwrap();
    assert!(
        why.contains("22.78 GiB") && why.contains("cannot help"),
        "{why}"
    );
    assert!(d.fixes.iter().any(|f| f.id == "reduce_batch"));
}

/// The newcomer's message (issue 22): 1.02 GiB free and 0.68 GiB reserved cannot serve
/// 1.96 GiB, so neither allocator setting is offered as a fix; from a fine-tune's traceback
/// the training fixes are offered and the diffusers offload is not (it is for diffusion).
#[test]
fn fixes_that_cannot_help_are_apart_with_their_reason() {
    let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 11.76 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 10.72 GiB memory in use. Of the allocated memory 9.87 GiB is allocated by PyTorch, and 0.68 GiB is reserved by PyTorch but unallocated.";
    let diagnosis = |text: &str| {
        let r = read(text, kb(), None).unwrap();
        WizardState::start(kb(), &kb().root, r.observations)
            .unwrap()
            .diagnosis(kb(), "en")
            .unwrap()
    };
    let ids = |l: &[vram_doctor::doctor::diagnosis::FixLine]| -> Vec<String> {
        l.iter().map(|f| f.id.clone()).collect()
    };
    let plain = diagnosis(oom);
    for id in ["expandable_segments", "max_split_size"] {
        if let Some(f) = plain.cannot_help.iter().find(|f| f.id == id) {
            let why = f.reason.as_deref().unwrap();
            assert!(
                why.contains("1.70 GiB") && why.contains("1.96 GiB"),
                "{why}"
            );
        }
        assert!(!ids(&plain.fixes).contains(&id.to_string()), "{id} offered");
    }
    // No kind named: both offloads stay, each naming its library.
    for id in ["cpu_offload", "diffusers_cpu_offload"] {
        assert!(
            ids(&plain.fixes).contains(&id.to_string()),
            "{id}: {:?}",
            ids(&plain.fixes)
        );
    }
    let traceback = format!(
        "Traceback (most recent call last):\n  File \"/venv/lib/python3.11/site-packages/transformers/trainer.py\", line 2122, in train\n    return inner_training_loop(\n  File \"/venv/lib/python3.11/site-packages/transformers/trainer.py\", line 2474, in _inner_training_loop\n    self.accelerator.backward(loss)\n{oom}"
    );
    let tuning = diagnosis(&traceback);
    let offered = ids(&tuning.fixes);
    assert!(
        offered.contains(&"gradient_checkpointing".to_string()),
        "{offered:?}"
    );
    assert!(offered.contains(&"cpu_offload".to_string()), "{offered:?}");
    assert!(
        !offered.contains(&"diffusers_cpu_offload".to_string()),
        "{offered:?}"
    );
    let diffusers = tuning
        .cannot_help
        .iter()
        .find(|f| f.id == "diffusers_cpu_offload")
        .expect("the diffusers offload is under cannot help");
    assert_eq!(
        diffusers.reason.as_deref(),
        Some("Written for image generation (diffusion); this message is from training.")
    );
    // A ComfyUI message: the training fixes are the ones that cannot help.
    let comfy = diagnosis(&format!("Got an OOM, unloading all loaded models.\n{oom}"));
    assert!(!ids(&comfy.fixes).contains(&"gradient_checkpointing".to_string()));
    assert!(ids(&comfy.cannot_help).contains(&"gradient_checkpointing".to_string()));
    assert!(
        !ids(&comfy.fixes).contains(&"diffusers_cpu_offload".to_string()),
        "ComfyUI is no diffusers pipeline"
    );
}

#[test]
fn text_without_anything_gpu_related_is_not_a_gpu_error() {
    for t in [
        "error[E0425]: cannot find value `x` in this scope",
        "Segmentation fault (core dumped)",
        "ModuleNotFoundError: No module named 'requests'",
    ] {
        let r = read(t, kb(), None).unwrap();
        assert!(!r.recognised(), "{t}: {:?}", r.observations);
    }
}

/// `vram-doctor run` ends a watch in a diagnosis when a line of the program's output is a
/// failure (facts.toml `failure = true`, or a GPU line raised as an error). Every message that
/// reports a failure must open the incident, read line by line as the output passes (wrapped
/// lines too); a warning the program carries on after (`carries_on`) must not.
#[test]
fn the_run_watcher_stops_at_every_failure_and_at_no_warning() {
    let wrong: Vec<String> = fixtures()
        .iter()
        .filter(|f| {
            let mut scanner = vram_doctor::watch::scan::Scanner::new(kb());
            for (i, l) in f.text.lines().enumerate() {
                scanner.line(l, i as u64);
            }
            scanner.incident().is_some() == f.carries_on
        })
        .map(|f| format!("{} (carries on: {})", f.id, f.carries_on))
        .collect();
    assert!(wrong.is_empty(), "wrongly read: {wrong:?}");
}
