//! The embedded preset catalog: coverage, consistency and pinned figures from the vendors' spec
//! pages and the models' `config.json` files (sources are named in `presets/*.toml`).

use std::collections::HashSet;
use vram_doctor::catalog::{Catalog, GpuKind, Vendor};

fn gpu(id: &str) -> &'static vram_doctor::catalog::Gpu {
    Catalog::get().gpu(id).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn gpu_catalog_covers_every_vendor_and_kind() {
    let gpus = &Catalog::get().gpus;
    assert!(gpus.len() >= 70, "only {} GPU presets", gpus.len());
    for v in [Vendor::Nvidia, Vendor::Amd, Vendor::Apple, Vendor::Intel] {
        assert!(gpus.iter().any(|g| g.vendor == v), "no {v:?} GPU");
    }
    for k in [
        GpuKind::Desktop,
        GpuKind::Laptop,
        GpuKind::Workstation,
        GpuKind::Datacenter,
        GpuKind::Unified,
    ] {
        assert!(gpus.iter().any(|g| g.kind == k), "no {k:?} GPU");
    }
}

#[test]
fn gpu_names_and_aliases_are_unambiguous() {
    let mut seen = HashSet::new();
    for g in &Catalog::get().gpus {
        assert_eq!(
            g.id,
            g.id.to_ascii_lowercase(),
            "ids are lowercase: {}",
            g.id
        );
        assert!(!g.source.trim().is_empty(), "{} names no source", g.id);
        for name in std::iter::once(&g.id).chain(&g.aliases) {
            assert!(
                seen.insert(name.to_ascii_lowercase()),
                "'{name}' names two GPUs"
            );
        }
        // Every preset is found by each of its names.
        for a in &g.aliases {
            assert_eq!(
                Catalog::get().gpu(&a.to_ascii_uppercase()).map(|x| &x.id),
                Ok(&g.id)
            );
        }
    }
}

#[test]
fn gpu_figures_are_consistent() {
    for g in &Catalog::get().gpus {
        assert!(g.validate().is_ok(), "{}", g.id);
        // A measured matmul rate is given only where it falls short of the data sheet, and the
        // speed estimates start from it (an RTX A6000: 123.3 of 154.8).
        if let Some(m) = g.matmul_tflops {
            assert_eq!(g.sustained_tflops(), Some(m), "{}", g.id);
            assert!(g.source.contains("matmul_tflops"), "{}: no source", g.id);
        }
        let mut bad = g.clone();
        bad.matmul_tflops = bad.fp16_tflops.map(|t| t * 1.5).or(Some(1.0));
        assert!(
            bad.validate().is_err(),
            "{}: matmul above the data sheet",
            g.id
        );
        // Every fp8 generation (Ada, Hopper, Blackwell, CDNA3, RDNA4) also does bf16.
        assert!(!g.fp8 || g.bf16, "{}: fp8 without bf16", g.id);
        // Unified-memory SoCs have no PCIe host link, discrete cards always have one.
        assert_eq!(
            g.kind == GpuKind::Unified,
            g.pcie_lanes == 0,
            "{}: host link",
            g.id
        );
        assert_eq!(
            g.kind == GpuKind::Unified,
            g.vendor == Vendor::Apple,
            "{}: kind",
            g.id
        );
    }
}

#[test]
fn original_gpu_ids_are_kept() {
    for id in [
        "rtx-4090",
        "rtx-3060-12gb",
        "a100-80gb",
        "h100-80gb",
        "v100-16gb",
    ] {
        assert_eq!(gpu(id).id, id);
    }
    assert_eq!(gpu("h100-sxm").id, "h100-80gb");
}

#[test]
fn gpu_spec_sheet_values() {
    // Laptop parts differ from the desktop cards of the same name.
    assert_eq!(gpu("rtx-4090-laptop").vram_gib, 16.0);
    assert_eq!(gpu("rtx-4060-laptop").vram_gib, 8.0);
    assert_eq!(gpu("rtx-3060-laptop").vram_gib, 6.0);
    assert_eq!(gpu("rtx-3060-laptop").kind, GpuKind::Laptop);
    // AD107 / AD106 cards have an x8 link.
    assert_eq!(
        (gpu("rtx-4060").pcie_gen, gpu("rtx-4060").pcie_lanes),
        (4, 8)
    );
    assert_eq!(gpu("rtx-4060-ti-16gb").pcie_lanes, 8);
    assert_eq!(gpu("rtx-5090").bandwidth_gbs, 1792.0);
    assert_eq!(gpu("rtx-3090").bandwidth_gbs, 936.0);
    assert!(!gpu("rtx-3090").fp8 && gpu("rtx-3090").bf16);
    assert!(!gpu("t4").bf16);
    assert_eq!(gpu("h200").vram_gib, 141.0);
    assert_eq!(gpu("mi300x").vram_gib, 192.0);
    assert!(gpu("mi300x").fp8);
    assert_eq!(gpu("rx-7900-xtx").vram_gib, 24.0);
    assert_eq!(gpu("m2-ultra-192gb").bandwidth_gbs, 800.0);
    assert_eq!(gpu("m3-max-128gb").kind, GpuKind::Unified);
    assert_eq!(gpu("arc-b580").vram_gib, 12.0);
}

fn model(id: &str) -> &'static vram_doctor::catalog::ModelPreset {
    Catalog::get().model(id).unwrap_or_else(|e| panic!("{e}"))
}

/// Parameters by shape for a dense model: the repeated blocks (q/k/v/o + MLP), the embedding
/// and head, and two norm vectors per layer plus the final norm (Llama layout).
fn dense_shape_count(a: &vram_doctor::memory::ModelArch) -> f64 {
    let layers = f64::from(a.layers);
    let norms = (2.0 * layers + 1.0) * f64::from(a.hidden);
    layers * (a.attn_params_per_layer() + a.dense_mlp_params())
        + a.embedding_params()
        + a.lm_head_params()
        + norms
}

/// Image-text checkpoints: `params` includes the SigLIP vision tower (416.9M) and its projector,
/// which the text shapes do not describe (Gemma 3 model card / checkpoint totals).
const WITH_VISION_TOWER: [&str; 3] = ["gemma-3-4b", "gemma-3-12b", "gemma-3-27b"];

#[test]
fn model_catalog_is_large_and_valid() {
    let models = &Catalog::get().models;
    assert!(models.len() >= 34, "only {} model presets", models.len());
    for m in models {
        assert!(m.arch.validate().is_ok(), "{}", m.id);
        assert_eq!(
            m.id,
            m.id.to_ascii_lowercase(),
            "ids are lowercase: {}",
            m.id
        );
        let hf = m
            .hf_id
            .as_deref()
            .unwrap_or_else(|| panic!("{} names no hf_id", m.id));
        assert_eq!(Catalog::get().model(hf).map(|x| &x.id), Ok(&m.id), "{hf}");
        if let Some(ctx) = m.arch.max_context {
            assert!(
                (1024..=1 << 20).contains(&ctx),
                "{}: max_context {ctx}",
                m.id
            );
        }
        if let Some(w) = m.arch.sliding_window {
            assert!(
                w < m.arch.max_context.unwrap_or(u32::MAX),
                "{}: window {w}",
                m.id
            );
        }
        assert!(
            m.arch.global_every.is_none() || m.arch.sliding_window.is_some(),
            "{}: global_every without a window",
            m.id
        );
    }
}

#[test]
fn dense_parameter_counts_match_the_shapes() {
    let mut checked = 0;
    for m in &Catalog::get().models {
        let a = &m.arch;
        if a.moe.is_some() || a.mla.is_some() {
            continue;
        }
        let by_shape = dense_shape_count(a);
        if WITH_VISION_TOWER.contains(&m.id.as_str()) {
            let extra = a.params - by_shape;
            assert!(
                (0.40e9..0.45e9).contains(&extra),
                "{}: vision part {extra}",
                m.id
            );
        } else {
            let err = (by_shape - a.params).abs() / a.params;
            assert!(
                err < 0.02,
                "{}: shapes give {by_shape}, params {} ({:.2}%)",
                m.id,
                a.params,
                err * 100.0
            );
        }
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} dense models checked");
}

#[test]
fn moe_parameter_counts_match_the_shapes() {
    // Total = attention + dense layers' MLP + routed and shared experts (3 matrices each) + router
    // + embedding/head. Active counts are the ones each model card announces.
    let announced_active = [
        ("mixtral-8x7b", 12.9e9),
        ("qwen3-30b-a3b", 3.3e9),
        ("qwen3-235b-a22b", 22e9),
        ("deepseek-v3", 37e9),
        ("deepseek-r1", 37e9),
    ];
    for (id, active) in announced_active {
        let a = &model(id).arch;
        let moe = a.moe.as_ref().expect("MoE preset");
        let h = f64::from(a.hidden);
        let layers = f64::from(a.layers);
        let dense = f64::from(moe.dense_layers);
        let experts = f64::from(moe.experts + moe.shared_experts);
        let by_shape = layers * a.attn_params_per_layer()
            + dense * a.dense_mlp_params()
            + (layers - dense)
                * (experts * 3.0 * h * f64::from(moe.expert_intermediate)
                    + h * f64::from(moe.experts))
            + a.embedding_params()
            + a.lm_head_params();
        let err = (by_shape - a.params).abs() / a.params;
        assert!(
            err < 0.02,
            "{id}: shapes give {by_shape}, params {}",
            a.params
        );
        let err = (a.active_params() - active).abs() / active;
        assert!(
            err < 0.03,
            "{id}: active {} vs announced {active}",
            a.active_params()
        );
    }
}

#[test]
fn config_json_values_are_pinned() {
    assert_eq!(model("llama-3.1-8b").arch.params, 8_030_261_248.0);
    assert_eq!(model("qwen2.5-7b").arch.kv_heads, 4);
    assert_eq!(model("gemma-2-9b").arch.head_dim, 256);
    let mla = model("deepseek-v3").arch.mla.as_ref().expect("MLA");
    assert_eq!(
        (mla.kv_lora_rank, mla.qk_rope_head_dim, mla.q_lora_rank),
        (512, 64, Some(1536))
    );
    let moe = model("deepseek-v3").arch.moe.as_ref().expect("MoE");
    assert_eq!(
        (
            moe.experts,
            moe.active,
            moe.shared_experts,
            moe.dense_layers
        ),
        (256, 8, 1, 3)
    );
    // Qwen3: head_dim 128 although hidden / heads = 64.
    let q = &model("qwen3-0.6b").arch;
    assert_eq!((q.head_dim, q.hidden / q.heads), (128, 64));
    // Sliding windows: Mistral v0.1 windows every layer, v0.3 none; Gemma alternates.
    let m = &model("mistral-7b-v0.1").arch;
    assert_eq!((m.sliding_window, m.global_every), (Some(4096), None));
    assert_eq!(model("mistral-7b-v0.3").arch.sliding_window, None);
    let g2 = &model("gemma-2-27b").arch;
    assert_eq!(
        (g2.sliding_window, g2.global_every, g2.head_dim),
        (Some(4096), Some(2), 128)
    );
    let g3 = &model("gemma-3-1b").arch;
    assert_eq!(
        (g3.sliding_window, g3.global_every, g3.kv_heads),
        (Some(512), Some(6), 1)
    );
    assert_eq!(model("gemma-3-27b").arch.sliding_window, Some(1024));
    // Tied heads on the small models only.
    assert!(
        model("qwen2.5-0.5b").arch.tied_embeddings && !model("qwen2.5-7b").arch.tied_embeddings
    );
    assert!(
        model("llama-3.2-1b").arch.tied_embeddings && !model("llama-3.1-70b").arch.tied_embeddings
    );
    let f = &model("falcon-7b").arch;
    assert_eq!(
        (f.kv_heads, f.mlp),
        (1, vram_doctor::types::arch::Mlp::Plain)
    );
    assert_eq!(model("gpt2").arch.mlp, vram_doctor::types::arch::Mlp::Plain);
}

#[test]
fn reference_measurement_models_are_in_the_catalog() {
    // (preset, layers, hidden, heads, kv_heads, params) as the LLM rows of
    // shared/reference/groundtruth-public.jsonl give them (encoder-only BERT rows excluded).
    let rows = [
        ("llama-3-8b", 32, 4096, 32, 8, 8.03e9),
        ("open-llama-7b-v2", 32, 4096, 32, 32, 6.74e9),
        ("vicuna-7b", 32, 4096, 32, 32, 6.74e9),
        ("mistral-7b-v0.1", 32, 4096, 32, 8, 7.24e9),
        ("tinyllama-1.1b", 22, 2048, 32, 4, 1.1e9),
        ("llama-2-13b", 40, 5120, 40, 40, 13.0e9),
        ("codellama-34b", 48, 8192, 64, 8, 33.7e9),
        ("falcon-7b", 32, 4544, 71, 1, 7.2e9),
        ("mpt-7b", 32, 4096, 32, 32, 6.7e9),
        ("qwen-1.8b-chat", 24, 2048, 16, 16, 1.84e9),
        ("qwen-7b-chat", 32, 4096, 32, 32, 7.72e9),
        ("qwen-14b-chat", 40, 5120, 40, 40, 14.2e9),
        ("qwen-72b-chat", 80, 8192, 64, 64, 72.3e9),
    ];
    for (id, layers, hidden, heads, kv_heads, params) in rows {
        let a = &model(id).arch;
        assert_eq!(
            (a.layers, a.hidden, a.heads, a.kv_heads),
            (layers, hidden, heads, kv_heads),
            "{id}"
        );
        // The rows round to 2-3 digits (Falcon's "7.2B" is the marketing figure for 6.92B).
        assert!(
            (a.params - params).abs() / params < 0.05,
            "{id}: {} vs {params}",
            a.params
        );
    }
}

/// A catalog row and the real config.json of the same repository (tests/data/configs/ names
/// each file by the repository's model name) must plan the same model: the same parameters,
/// the same default weight format (the files' own, `quantization_config` or `torch_dtype`) and
/// the same weight bytes. Shape counts agree to the parameter; the bytes of a row planned by
/// the format's formula may differ from the module-by-module bytes of the config's
/// `quantization_config` by its scales (fp8 in 128×128 blocks: 4 bytes per 16384 weights).
#[test]
fn catalog_rows_plan_as_their_configs_inspect() {
    use std::path::Path;
    use vram_doctor::types::workload::WorkloadFile;
    let resolve = |model: &str| {
        let text = format!("[gpu]\nvram_gib = 80\n[model]\n{model}\n[run]\nseq = 512\n");
        WorkloadFile::parse(&text, "t.toml")
            .and_then(|f| {
                f.resolve(Path::new("."), Some(vram_doctor::import::load_model))
                    .map_err(String::from)
            })
            .unwrap_or_else(|e| panic!("{model}: {e}"))
    };
    let mut checked = Vec::new();
    for m in &Catalog::get().models {
        let Some(repo_name) = m.hf_id.as_deref().and_then(|h| h.rsplit('/').next()) else {
            continue;
        };
        let cfg = format!("tests/data/configs/{}.json", repo_name.to_ascii_lowercase());
        if !Path::new(&cfg).is_file() {
            continue;
        }
        let row = resolve(&format!("preset = \"{}\"", m.id));
        let file = resolve(&format!("hf_config = \"{cfg}\""));
        assert_eq!(
            row.model.params, file.model.params,
            "{}: the row's params vs inspect of {cfg}",
            m.id
        );
        assert_eq!(
            row.run.weights, file.run.weights,
            "{}: the row's format vs the format {cfg} declares",
            m.id
        );
        let bytes = |w: &vram_doctor::types::workload::Workload| {
            let b = w.weight_bytes();
            b.gpu + b.host
        };
        let (r, f) = (bytes(&row), bytes(&file));
        assert!(
            (r / f - 1.0).abs() < 1e-3,
            "{}: weights {r} bytes as a row, {f} from {cfg}",
            m.id
        );
        let said = |w: &vram_doctor::types::workload::Workload| {
            w.model_notes
                .iter()
                .any(|n| n.to_string().contains("the format the model's files hold"))
        };
        // A row that states its format says so as a file does (a 16-bit row states none).
        if m.format.is_some() {
            assert!(
                said(&row) && said(&file),
                "{}: the note on the format",
                m.id
            );
        }
        checked.push(m.id.as_str());
    }
    for id in [
        "llama-3.1-8b",
        "qwen3-30b-a3b",
        "deepseek-v3",
        "gemma-2-9b",
        "gpt-oss-20b",
        "llama-4-scout",
        "llama-4-maverick",
        "qwen3-next-80b-a3b",
        "glm-4.5",
        "kimi-k2",
        "gpt-oss-120b",
        "qwen3-coder-480b-a35b",
        "mistral-small-3.1-24b",
        "olmo-2-13b",
    ] {
        assert!(checked.contains(&id), "{id} not checked: {checked:?}");
    }
}

/// What an announced active count leaves out: vendors differ.
#[derive(Clone, Copy)]
enum Announced {
    /// Every parameter a token passes through (DeepSeek, Kimi, Qwen3 MoE).
    All,
    /// Without the input embedding table (gpt-oss model card, whose 20.91B total and 3.61B
    /// active count the unembedding but not the embedding as active; Llama 4's 17B).
    NoEmbedding,
    /// Without the embedding and the head (GLM-4.5: 32.08B; Qwen3-Next: "3B").
    NoEmbeddingOrHead,
}

/// The active parameters of the mixture-of-experts rows against the counts their model cards
/// announce (the rows' comments name them), to the digits announced (at least 3%), and the
/// totals within 3% (cards round them: 21B, 1T).
#[test]
fn moe_rows_activate_what_their_cards_announce() {
    use Announced::*;
    for (id, total, active, step, counts) in [
        ("gpt-oss-20b", 21e9, 3.6e9, 0.1e9, NoEmbedding),
        ("gpt-oss-120b", 117e9, 5.1e9, 0.1e9, NoEmbedding),
        ("llama-4-scout", 109e9, 17e9, 1e9, NoEmbedding),
        ("llama-4-maverick", 400e9, 17e9, 1e9, NoEmbedding),
        ("qwen3-next-80b-a3b", 80e9, 3e9, 1e9, NoEmbeddingOrHead),
        ("qwen3-coder-30b-a3b", 30.5e9, 3.3e9, 0.1e9, All),
        ("qwen3-coder-480b-a35b", 480e9, 35e9, 1e9, All),
        ("glm-4.5", 355e9, 32e9, 1e9, NoEmbeddingOrHead),
        ("glm-4.5-air", 106e9, 12e9, 1e9, NoEmbeddingOrHead),
        ("kimi-k2", 1.0e12, 32e9, 1e9, All),
        ("deepseek-v3.1", 671e9, 37e9, 1e9, All),
    ] {
        let a = &model(id).arch;
        let counted = a.active_params()
            - match counts {
                All => 0.0,
                NoEmbedding => a.embedding_params(),
                NoEmbeddingOrHead => a.embedding_params() + a.lm_head_params(),
            };
        assert!(
            (a.params / total - 1.0).abs() < 0.03,
            "{id}: {} total vs {total} announced",
            a.params
        );
        let tolerance = f64::max(step / 2.0, 0.03 * active);
        assert!(
            (counted - active).abs() <= tolerance,
            "{id}: {counted} active vs {active} announced"
        );
    }
}

/// A row's published file of the planned format gives the weights' bytes (its size, not the
/// file type's formula) and the plan says so; other formats keep the formula.
#[test]
fn a_published_file_size_is_the_weights_of_its_format() {
    use std::path::Path;
    use vram_doctor::types::workload::WorkloadFile;
    let m = model("gpt-oss-120b");
    let file = m
        .files
        .first()
        .expect("gpt-oss-120b lists a published GGUF");
    let plan = |weights: &str| {
        let text = format!(
            "[gpu]\nvram_gib = 80\n[model]\npreset = \"{}\"\n[run]\nweights = \"{weights}\"\nseq = 512\n",
            m.id
        );
        WorkloadFile::parse(&text, "t.toml")
            .and_then(|f| f.resolve(Path::new("."), None).map_err(String::from))
            .unwrap()
    };
    let w = plan(&file.format.to_string());
    let b = w.weight_bytes();
    assert_eq!(b.gpu + b.host, file.bytes as f64);
    assert!(
        b.host > 0.0,
        "llama.cpp keeps the token embedding in host memory"
    );
    assert!(
        w.model_notes
            .iter()
            .any(|n| n.to_string().contains(&file.source)),
        "{:?}",
        w.model_notes
    );
    // The F16 formula would count every parameter at 2 bytes.
    let formula = vram_doctor::memory::weights::weight_bytes(&m.arch, file.format, w.run.engine);
    assert!(formula.gpu + formula.host > 3.0 * file.bytes as f64);
    let q8 = plan("q8_0");
    assert!(
        !q8.model_notes
            .iter()
            .any(|n| n.to_string().contains("published"))
    );
    // Without a published file the GGUF keeps the MXFP4 experts (17 bytes per 32 weights) and
    // the rest follows the file type's rule, and the plan says so.
    let keeps = |w: &vram_doctor::types::workload::Workload| {
        w.model_notes
            .iter()
            .any(|n| n.to_string().contains("keep its experts in MXFP4"))
    };
    assert!(keeps(&q8), "{:?}", q8.model_notes);
    assert!(!keeps(&w), "{:?}", w.model_notes);
    let q8_bytes = q8.weight_bytes();
    let q8_formula =
        vram_doctor::memory::weights::weight_bytes(&m.arch, q8.run.weights, q8.run.engine);
    assert!(
        q8_bytes.gpu + q8_bytes.host < 0.6 * (q8_formula.gpu + q8_formula.host),
        "q8_0 with MXFP4 experts {q8_bytes:?} vs every block in Q8_0 {q8_formula:?}"
    );
    // The same rule for F16 gives the published F16 file (unsloth's 60.87 GiB) within 1 %.
    let vram_doctor::types::dtype::WeightFormat::Gguf(f16) = file.format else {
        panic!("the published file is a GGUF")
    };
    let rule = vram_doctor::memory::weights::gguf_keeping_mxfp4_experts(&m.arch, f16, w.run.engine);
    let published = file.bytes as f64;
    assert!(
        ((rule.gpu + rule.host) / published - 1.0).abs() < 0.01,
        "F16 with MXFP4 experts {} vs the published {published}",
        rule.gpu + rule.host
    );
}
