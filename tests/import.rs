//! Model import: real config.json files (tests/data/configs), and GGUF/safetensors/diffusers
//! files the tests write themselves, including broken and hostile ones.

mod support;

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use support::*;
use vram_doctor::import as imp;
use vram_doctor::types::arch::Mlp;
use vram_doctor::types::dtype::{GgufFileType, WeightFormat};

fn config_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/configs")
        .join(name)
}

fn config(name: &str) -> imp::ImportedModel {
    imp::import_model(&config_path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

// ---------------------------------------------------------------- config.json

/// Published exact parameter counts (model card / safetensors metadata on the Hub, or the
/// paper), against the count from the config's shapes.
#[test]
fn config_counts_match_published_parameter_counts() {
    let published: &[(&str, u64)] = &[
        ("llama-3.1-8b.json", 8_030_261_248), // Hub safetensors total
        ("llama-3-8b-bnb-4bit.json", 8_030_261_248), // same architecture, quantized
        ("llama-3.2-1b.json", 1_235_814_400), // tied embeddings
        ("llama-2-7b-gptq.json", 6_738_415_616), // Llama 2 paper "7B": 6,738,415,616
        ("mistral-7b-v0.1.json", 7_241_732_096),
        ("mixtral-8x7b-v0.1.json", 46_702_792_704),
        ("qwen2.5-7b.json", 7_615_616_512), // q/k/v biases
        ("qwen2.5-7b-instruct-awq.json", 7_615_616_512),
        ("qwen2.5-0.5b.json", 494_032_768),
        ("qwen1.5-moe-a2.7b.json", 14_315_784_192), // shared expert + its gate
        ("qwen3-8b.json", 8_190_735_360),           // q/k norms
        ("qwen3-30b-a3b.json", 30_532_122_624),
        ("gemma-7b.json", 8_537_680_896),
        ("gemma-2-9b.json", 9_241_705_984), // four norms per block
        ("gemma-3-1b-it.json", 999_885_952), // gemma3_text at the top level
        ("gemma-3-4b-it.json", 4_300_079_472), // text_config + SigLIP tower + projector
        // Written by transformers 4.50 without tie_word_embeddings: its text config's (untied)
        // decides, as its checkpoint stores lm_head. The text part is Devstral-Small-2507's
        // index total_parameters (23,572,403,200), plus the Pixtral tower and projector.
        ("mistral-small-3.1-24b-instruct-2503.json", 24_011_361_280),
        // Hub safetensors total "7.06B": CLIP ViT-L/14-336 tower, two-layer projector,
        // Vicuna text_config that lists only what differs from LlamaConfig.
        ("llava-1.5-7b-hf.json", 7_063_427_072),
        // Hub safetensors total "8.29B": text fields at the top level, Qwen2.5-VL ViT with its
        // patch merger. The config as vendored by a public Qwen-Image loader
        // (QWEN2_5_VL_CONFIG_JSON), the same in every counted field as the Hub's.
        ("qwen2.5-vl-7b-instruct.json", 8_292_166_656),
        ("phi-3-mini-4k-instruct.json", 3_821_079_552),
        ("gpt2.json", 124_439_808),            // biases, wpe, tied head
        ("pythia-160m.json", 162_322_944),     // Pythia paper, Table 1 row "160M"
        ("gpt-neox-20b.json", 20_554_567_680), // GPT-NeoX-20B paper/model card
        ("deepseek-v2-lite.json", 15_706_484_224), // MLA without q_lora, 2 shared experts
        ("deepseek-v3.json", 671_026_419_200), // main model, MTP layer excluded
        // Encoders: BertForMaskedLM (tied decoder + its bias; Hub "110M"), and the bare
        // BertModel with its pooler of sentence-transformers' all-MiniLM-L6-v2 (Hub "22.7M").
        ("bert-base-uncased.json", 109_514_298),
        ("all-minilm-l6-v2.json", 22_713_216),
        // Qwen/Qwen3-30B-A3B-FP8: the shapes of Qwen3-30B-A3B stored fp8 block-wise (its Hub
        // total also counts the F32 block scales, so the bf16 release's total is the one).
        ("qwen3-30b-a3b-fp8.json", 30_532_122_624),
    ];
    for (file, want) in published {
        let m = config(file);
        assert_eq!(m.params_by_shape, Some(*want), "{file}");
        assert_eq!(m.arch.params, *want as f64, "{file}");
        assert_eq!(m.source, imp::SourceFormat::HfConfig);
    }
}

/// A vision-language config is counted whole and says what the plan leaves out.
#[test]
fn vision_language_configs_note_the_image_tokens() {
    for file in [
        "llava-1.5-7b-hf.json",
        "qwen2.5-vl-7b-instruct.json",
        "gemma-3-4b-it.json",
        "qwen3-vl-8b-instruct.json",
        "qwen3-vl-30b-a3b-instruct.json",
    ] {
        let m = config(file);
        assert!(
            m.notes
                .iter()
                .any(|n| n.to_string().contains("image tokens are not planned")),
            "{file}: {:?}",
            m.notes
        );
    }
    assert!(
        config("llama-3.1-8b.json")
            .notes
            .iter()
            .all(|n| !n.to_string().contains("image"))
    );
}

/// An encoder caches nothing per token and is counted with the head its `architectures` names;
/// a head this program does not count is refused by name.
#[test]
fn encoders_have_no_kv_cache_and_their_own_head() {
    use vram_doctor::memory::kv_cache::kv_cache_bytes;
    use vram_doctor::memory::{Engine, KvDtype};
    let m = config("bert-base-uncased.json");
    assert_eq!(
        kv_cache_bytes(&m.arch, 4, 512, KvDtype::Fp16, Engine::Transformers, 1),
        0.0
    );
    assert!(
        m.notes.iter().any(|n| n.to_string().contains("an encoder")),
        "{:?}",
        m.notes
    );
    let text = std::fs::read_to_string(config_path("bert-base-uncased.json")).unwrap();
    let e = imp::from_bytes::hf_config(
        text.replace("BertForMaskedLM", "BertForSequenceClassification")
            .as_bytes(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("\"BertForSequenceClassification\""), "{e}");
}

/// Llama 4's interleaved layout (configuration_llama4.py, modeling_llama4.py): experts with a
/// shared expert in every `interleave_moe_layer_step`-th block, dense MLPs of
/// `intermediate_size_mlp` in the others, and one full-attention (NoPE) block in every
/// `no_rope_layer_interval` with chunked attention in the rest.
#[test]
fn llama4_interleaves_moe_and_dense_blocks() {
    let text = r#"{"model_type":"llama4_text","hidden_size":8,"num_attention_heads":2,
        "num_key_value_heads":1,"head_dim":4,"intermediate_size":16,"intermediate_size_mlp":32,
        "vocab_size":10,"num_local_experts":4,"num_experts_per_tok":1,"num_hidden_layers":4,
        "interleave_moe_layer_step":2,"attention_chunk_size":64}"#;
    let m = imp::from_bytes::hf_config(text.as_bytes()).unwrap();
    // Attention 64 + 32 + 32 + 64; experts 4 · 3 · 8 · 16, router 8 · 4, shared 3 · 8 · 16;
    // dense 3 · 8 · 32; two norms of 8 per block; embeddings, head and final norm.
    let (attn, moe, dense, norms) = (192, 1536 + 32 + 384, 768, 16);
    let total = 2 * (attn + dense + norms) + 2 * (attn + moe + norms) + 80 + 80 + 8;
    assert_eq!(m.params_by_shape, Some(total));
    let moe_spec = m.arch.moe.as_ref().unwrap();
    assert_eq!((moe_spec.shared_experts, moe_spec.dense_layers), (1, 2));
    assert_eq!(m.arch.active_params(), (total - 2 * 3 * 384) as f64);
    assert_eq!(m.arch.intermediate, 32);
    // Blocks 0-2 chunked (a window of one chunk), block 3 full.
    assert_eq!(
        (m.arch.sliding_window, m.arch.global_every),
        (Some(64), Some(4))
    );
    // attention_chunk_size null turns chunking off.
    let off = text.replace(
        "\"attention_chunk_size\":64",
        "\"attention_chunk_size\":null",
    );
    let m = imp::from_bytes::hf_config(off.as_bytes()).unwrap();
    assert_eq!(m.arch.sliding_window, None);
}

/// Models whose published size is only given rounded: the shape count must round to it.
#[test]
fn config_counts_round_to_published_sizes() {
    // (file, published size, half a unit of its last digit)
    let rounded: &[(&str, f64, f64)] = &[
        ("falcon-7b.json", 6.92e9, 0.005e9),     // Hub "6.92B params"
        ("falcon-40b.json", 41.3e9, 0.05e9),     // Hub "41.3B params"
        ("starcoder2-3b.json", 3.03e9, 0.005e9), // Hub "3.03B params"
        ("gpt_bigcode-santacoder.json", 1.12e9, 0.005e9), // Hub "1.12B params"
        // Hub "109B params" (meta-llama/Llama-4-Scout-17B-16E). The config is the Llama4Config
        // that transformers 4.51 printed for it (a public notes file; `moe_layers` written out
        // as the 0..47 it abbreviates); the same notes' total of 109,676,279,296 lists a dense
        // MLP in layer 0 that the config does not have, so only the Hub's rounded size is used.
        ("llama-4-scout-17b-16e.json", 109e9, 0.5e9),
        // Kimi K2 (model card: 1T total, 32B active, 61 layers with 1 dense, 384 experts, MLA).
        // Its Hub metadata total, 1026.5B, also counts the F32 scale of each 128×128 fp8 block
        // (62.5M of them), so the shapes come 0.06B under it.
        ("kimi-k2-instruct.json", 1026.5e9, 0.1e9),
        // Model card: "80B in total and 3B activated"; 48 blocks, 3 Gated DeltaNet + 1 gated
        // attention repeating (the config gives only full_attention_interval).
        ("qwen3-next-80b-a3b-thinking.json", 80e9, 0.5e9),
        // Model card: "56B model parameters"; 54 Mamba-2, 54 MLP and 10 attention blocks.
        ("nemotron-h-56b-base-8k.json", 56e9, 0.5e9),
        // Hub "31.6B" (NVIDIA: 31.6B total, about 3.5B active): 23 Mamba-2, 23 MoE (128
        // routed + 1 shared, 6 per token) and 6 attention blocks.
        ("nemotron-3-nano-30b-a3b.json", 31.6e9, 0.05e9),
        // Hub "8.8B": Qwen3-8B-shaped text model, a 27-block ViT with DeepStack mergers.
        ("qwen3-vl-8b-instruct.json", 8.8e9, 0.05e9),
        // GLM-4.5: model card 355B total / 32B active; the Hub total, 358B, also holds the
        // multi-token-prediction layer (num_nextn_predict_layers = 1) that inspect leaves out
        // and says so (vLLM glm4_moe_mtp.py Glm4MoeMultiTokenPredictorLayer: one more MoE block
        // of 3,935,625,472, eh_proj 2h→h, enorm, hnorm and the shared head's norm, with its own
        // embeddings and head of 775,946,240 each) — 5.54B in all.
        ("glm-4.5.json", 358e9 - 5.54e9, 0.5e9),
        // BAAI/bge-m3, an XLM-RoBERTa encoder (XLMRobertaModel with its pooler, 8194
        // positions): the Hub lists 568M (not re-read in a source here, see SOURCES.md);
        // transformers counts the same 567,754,752 (tests/hf_oracle.rs).
        ("bge-m3.json", 568e6, 0.5e6),
        // ibm-fms/Bamba-9B: transformers' Bamba page gives "9B (9.78B)"; 29 Mamba 2 blocks and
        // attention in blocks 9, 18 and 27.
        ("bamba-9b.json", 9.78e9, 0.005e9),
        // Hub "31.07B": Qwen3-VL MoE text model (128 experts, 8 per token) and its ViT.
        ("qwen3-vl-30b-a3b-instruct.json", 31.07e9, 0.005e9),
        // tiiuae/falcon-mamba-7b, Hub "7.27B params": 64 Mamba blocks with the RMSNorms over
        // Δ, B and C; the pre-decay checkpoint's config has the same shapes (SOURCES.md).
        ("falcon-mamba-7b-pre-decay.json", 7.27e9, 0.005e9),
        // Hub "402B params" (model card: 400B total, 17B active): experts with a shared expert
        // in every second block, dense MLPs of 16384 in the others, a 34-block vision tower.
        ("llama-4-maverick-17b-128e-instruct.json", 402e9, 0.5e9),
        // CohereForAI/c4ai-command-r7b-12-2024, Hub "8.03B params": tied 256k vocabulary.
        ("c4ai-command-r7b-12-2024.json", 8.03e9, 0.005e9),
        // ai21labs/AI21-Jamba-1.5-Mini, Hub "51.6B params" (model card: 52B total, 12B active):
        // attention in every 8th block from 4, 16 experts (2 per token) in every 2nd from 1.
        ("ai21-jamba-1.5-mini.json", 51.6e9, 0.05e9),
    ];
    for (file, want, half) in rounded {
        let got = config(file).arch.params;
        assert!((got - want).abs() <= *half, "{file}: {got} vs {want}");
    }
}

#[test]
fn config_architecture_fields() {
    let l = config("llama-3.1-8b.json");
    assert_eq!(
        (
            l.arch.layers,
            l.arch.hidden,
            l.arch.heads,
            l.arch.kv_heads,
            l.arch.head_dim
        ),
        (32, 4096, 32, 8, 128)
    );
    assert_eq!(
        (l.arch.intermediate, l.arch.vocab, l.arch.max_context),
        (14336, 128_256, Some(131_072))
    );
    assert!(!l.arch.tied_embeddings && l.arch.sliding_window.is_none() && l.arch.moe.is_none());
    assert_eq!(l.weights, Some(WeightFormat::Bf16));
    assert_eq!(l.model_type, "llama");
    assert_eq!(
        l.name, "configs",
        "named after its folder when the config does not say"
    );

    // Gemma 3 4B: the text config relies on Gemma3TextConfig defaults for heads and vocab.
    let g = config("gemma-3-4b-it.json");
    assert_eq!(
        (g.arch.heads, g.arch.kv_heads, g.arch.head_dim, g.arch.vocab),
        (8, 4, 256, 262_208)
    );
    assert_eq!(
        (g.arch.sliding_window, g.arch.global_every),
        (Some(1024), Some(6))
    );
    assert!(g.arch.tied_embeddings);
    let g1 = config("gemma-3-1b-it.json");
    assert_eq!(
        (g1.arch.sliding_window, g1.arch.global_every),
        (Some(512), Some(6))
    );
    let g2 = config("gemma-2-9b.json");
    assert_eq!(
        (g2.arch.sliding_window, g2.arch.global_every),
        (Some(4096), Some(2))
    );

    let m = config("mistral-7b-v0.1.json");
    assert_eq!(
        (m.arch.sliding_window, m.arch.global_every),
        (Some(4096), None)
    );
    // Qwen2 configs carry sliding_window but use_sliding_window = false.
    assert_eq!(config("qwen2.5-7b.json").arch.sliding_window, None);
    assert!(config("qwen2.5-0.5b.json").arch.tied_embeddings);

    let x = config("mixtral-8x7b-v0.1.json").arch.moe.unwrap();
    assert_eq!(
        (
            x.experts,
            x.active,
            x.expert_intermediate,
            x.shared_experts,
            x.dense_layers
        ),
        (8, 2, 14336, 0, 0)
    );
    let q = config("qwen1.5-moe-a2.7b.json").arch.moe.unwrap();
    assert_eq!(
        (q.experts, q.active, q.expert_intermediate, q.shared_experts),
        (60, 4, 1408, 4)
    );
    let q3 = config("qwen3-30b-a3b.json").arch;
    assert_eq!(
        (
            q3.head_dim,
            q3.moe.as_ref().unwrap().experts,
            q3.moe.as_ref().unwrap().active
        ),
        (128, 128, 8)
    );

    let d = config("deepseek-v3.json");
    let mla = d.arch.mla.clone().unwrap();
    assert_eq!(
        (
            mla.kv_lora_rank,
            mla.qk_rope_head_dim,
            mla.qk_nope_head_dim,
            mla.v_head_dim,
            mla.q_lora_rank
        ),
        (512, 64, 128, 128, Some(1536))
    );
    let dm = d.arch.moe.clone().unwrap();
    assert_eq!(
        (
            dm.experts,
            dm.active,
            dm.expert_intermediate,
            dm.shared_experts,
            dm.dense_layers
        ),
        (256, 8, 2048, 1, 3)
    );
    assert_eq!(d.weights, Some(WeightFormat::Fp8));
    assert!(
        d.notes
            .iter()
            .any(|n| n.to_string().contains("multi-token-prediction"))
    );
    let lite = config("deepseek-v2-lite.json").arch;
    assert_eq!(lite.mla.unwrap().q_lora_rank, None);
    assert_eq!(lite.moe.unwrap().shared_experts, 2);

    // Multi-query models keep one K/V head.
    assert_eq!(config("falcon-7b.json").arch.kv_heads, 1);
    assert_eq!(config("falcon-40b.json").arch.kv_heads, 8);
    assert_eq!(config("gpt_bigcode-santacoder.json").arch.kv_heads, 1);
    let gpt2 = config("gpt2.json").arch;
    assert_eq!(
        (
            gpt2.mlp,
            gpt2.intermediate,
            gpt2.tied_embeddings,
            gpt2.max_context
        ),
        (Mlp::Plain, 3072, true, Some(1024))
    );
    assert_eq!(
        config("phi-3-mini-4k-instruct.json").name,
        "Phi-3-mini-4k-instruct"
    );
}

#[test]
fn quantization_config_sets_the_weight_format() {
    assert_eq!(
        config("llama-2-7b-gptq.json").weights,
        Some(WeightFormat::Gptq4)
    );
    assert_eq!(
        config("qwen2.5-7b-instruct-awq.json").weights,
        Some(WeightFormat::Awq4)
    );
    assert_eq!(
        config("llama-3-8b-bnb-4bit.json").weights,
        Some(WeightFormat::Nf4)
    );
    assert_eq!(config("deepseek-v3.json").weights, Some(WeightFormat::Fp8));
    assert_eq!(config("gemma-2-9b.json").weights, Some(WeightFormat::Fp32));
}

#[test]
fn load_model_has_the_workload_loader_signature() {
    let loader: vram_doctor::resolve::ModelLoader = imp::load_model;
    let vram_doctor::types::workload::LoadedModel { name, arch, .. } =
        loader(&config_path("qwen3-8b.json")).unwrap();
    assert_eq!(name, "configs");
    assert_eq!(arch.params, 8_190_735_360.0);
}

#[test]
fn unknown_model_types_are_refused_not_counted_as_llama() {
    let text = r#"{"model_type":"brand_new","hidden_size":64,"num_hidden_layers":2,
        "num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,"vocab_size":100}"#;
    let e = imp::from_bytes::hf_config(text.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"brand_new\"") && e.contains("not one this program knows"),
        "{e}"
    );
}

/// A known type whose config declares a part the engine does not model is refused, the part named.
#[test]
fn unmodelled_parts_are_refused_by_name() {
    let base = r#""hidden_size":64,"num_hidden_layers":4,"num_attention_heads":4,
        "num_key_value_heads":2,"intermediate_size":128,"vocab_size":100"#;
    let cases = [
        (
            r#""model_type":"qwen3","layer_types":["linear_attention","linear_attention","linear_attention","full_attention"]"#,
            "layer_types \"linear_attention\" layers",
        ),
        (
            r#""model_type":"llama","num_experts":8"#,
            "routed experts (num_experts)",
        ),
        (
            r#""model_type":"llama","kv_lora_rank":512"#,
            "latent attention",
        ),
        (
            r#""model_type":"llama","attention_chunk_size":8192"#,
            "chunked attention",
        ),
        (r#""model_type":"mistral","ssm_state_size":128"#, "Mamba"),
    ];
    for (extra, want) in cases {
        let text = format!("{{{base},{extra}}}");
        let e = imp::from_bytes::hf_config(text.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{extra}: {e}");
    }
    // A vision tower or wrapper not in presets/hf_vision.toml is refused by name, never
    // counted as text only.
    let llava = format!(
        r#"{{"model_type":"llava","text_config":{{"model_type":"llama",{base}}},"vision_config":{{"model_type":"blip_vision_model"}}}}"#
    );
    let e = imp::from_bytes::hf_config(llava.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(e.contains("blip_vision_model"), "{e}");
    let other = format!(
        r#"{{"model_type":"vipllava","text_config":{{"model_type":"llama",{base}}},"vision_config":{{"model_type":"clip_vision_model"}}}}"#
    );
    let e = imp::from_bytes::hf_config(other.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(e.contains("wrapper \"vipllava\""), "{e}");
}

/// layer_types declares the windowed layers for any model type, not only Gemma's.
#[test]
fn layer_types_set_the_window_for_any_type() {
    let text = r#"{"model_type":"qwen2","hidden_size":64,"num_hidden_layers":4,
        "num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,"vocab_size":100,
        "sliding_window":128,"layer_types":["sliding_attention","full_attention","sliding_attention","full_attention"]}"#;
    let m = imp::from_bytes::hf_config(text.as_bytes()).unwrap();
    assert_eq!(m.arch.sliding_window, Some(128));
    assert_eq!(m.arch.global_every, Some(2));
}

/// `sliding_window_pattern` (Gemma 3's and Cohere2's spelling before `layer_types`) windows
/// every block but each n-th, for a type whose convention has no window (llama here); stated
/// without a `sliding_window` it is refused. Cohere2 without either takes its class defaults
/// (configuration_cohere2.py: pattern 4, window 4096), as the published Command R7B does.
#[test]
fn sliding_window_pattern_sets_the_window_for_any_type() {
    let base = r#""model_type":"llama","hidden_size":64,"num_hidden_layers":4,
        "num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,"vocab_size":100"#;
    let m = imp::from_bytes::hf_config(
        format!(r#"{{{base},"sliding_window":128,"sliding_window_pattern":4}}"#).as_bytes(),
    )
    .unwrap();
    assert_eq!(m.arch.sliding_window, Some(128));
    assert_eq!(m.arch.global_every, Some(4));
    let e =
        imp::from_bytes::hf_config(format!(r#"{{{base},"sliding_window_pattern":4}}"#).as_bytes())
            .unwrap_err()
            .to_string();
    assert!(e.contains("sliding_window is missing"), "{e}");
    let c = config("c4ai-command-r7b-12-2024.json").arch;
    assert_eq!((c.sliding_window, c.global_every), (Some(4096), Some(4)));
    let bare = imp::from_bytes::hf_config(
        format!(r#"{{{}}}"#, base.replace("\"llama\"", "\"cohere2\"")).as_bytes(),
    )
    .unwrap()
    .arch;
    assert_eq!(
        (bare.sliding_window, bare.global_every),
        (Some(4096), Some(4))
    );
}

/// ModernBERT (answerdotai/ModernBERT-base) is an encoder with a GeGLU MLP (Wi of twice the
/// intermediate width), bias-free LayerNorms (`norm_bias`), no norm before block 0's attention
/// but one after the embeddings, no token types and a prediction head whose biases the config
/// sets: counted as transformers builds ModernBertForMaskedLM, 149,655,232
/// (tests/data/oracle/transformers-configs.jsonl), with no KV cache. Norm biases, when the
/// config asks for them, add one bias vector per norm: 2 per block, the final and the embedding
/// norms (one of them block 0's missing attn_norm), and the head's.
#[test]
fn modernbert_is_counted_as_transformers_builds_it() {
    use vram_doctor::memory::kv_cache::kv_cache_bytes;
    use vram_doctor::memory::{Engine, KvDtype};
    let m = config("modernbert-base.json");
    assert_eq!(m.params_by_shape, Some(149_655_232));
    assert_eq!(
        kv_cache_bytes(&m.arch, 1, 512, KvDtype::Fp16, Engine::Transformers, 1),
        0.0
    );
    let text = std::fs::read_to_string(config_path("modernbert-base.json")).unwrap();
    let biased = imp::from_bytes::hf_config(
        text.replace("\"norm_bias\": false", "\"norm_bias\": true")
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(
        biased.params_by_shape,
        Some(149_655_232 + (2 * 22 + 2) * 768)
    );
}

/// A config switch an entry of presets/hf_architectures.toml does not count (`refuse`) is
/// refused by name: Phi's q/k LayerNorms, StableLM's parallel residual.
#[test]
fn switches_an_entry_does_not_count_are_refused_by_name() {
    let phi = r#"{"model_type": "phi", "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100"#;
    assert!(imp::from_bytes::hf_config(format!("{phi}}}").as_bytes()).is_ok());
    let e = imp::from_bytes::hf_config(format!(r#"{phi}, "qk_layernorm": true}}"#).as_bytes())
        .unwrap_err()
        .to_string();
    assert!(e.contains("qk_layernorm"), "{e}");
    let stablelm = phi.replace("\"phi\"", "\"stablelm\"");
    let e = imp::from_bytes::hf_config(
        format!(r#"{stablelm}, "use_parallel_residual": true}}"#).as_bytes(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("use_parallel_residual"), "{e}");
}

/// The switches of the older decoders the transformers oracle covers from their default
/// configs only, against transformers 5.24 building the same config on the meta device (sum of
/// `parameters()`): OPT-350m's shapes (word_embed_proj_dim 512 projected to hidden 1024, no
/// final norm without do_layer_norm_before, 2 extra position rows), OPT's norms without
/// parameters, BLOOM-560m written with the legacy `n_embed` (the Hub's 559,214,592), and
/// InternLM3's biases under their attribute_map names.
#[test]
fn older_decoders_follow_their_config_switches() {
    let count = |json: &str| {
        imp::from_bytes::hf_config(json.as_bytes())
            .unwrap_or_else(|e| panic!("{json}: {e}"))
            .params_by_shape
    };
    let opt = r#"{"model_type": "opt", "hidden_size": 1024, "word_embed_proj_dim": 512,
        "do_layer_norm_before": false, "num_hidden_layers": 24, "ffn_dim": 4096,
        "num_attention_heads": 16, "vocab_size": 50272, "max_position_embeddings": 2048}"#;
    assert_eq!(count(opt), Some(331_196_416));
    let opt_125m = r#"{"model_type": "opt", "hidden_size": 768, "num_hidden_layers": 12,
        "ffn_dim": 3072, "num_attention_heads": 12, "vocab_size": 50272,
        "max_position_embeddings": 2048"#;
    assert_eq!(count(&format!("{opt_125m}}}")), Some(125_239_296));
    assert_eq!(
        count(&format!(
            r#"{opt_125m}, "layer_norm_elementwise_affine": false}}"#
        )),
        Some(125_200_896)
    );
    let e = imp::from_bytes::hf_config(
        format!(r#"{opt_125m}, "_remove_final_layer_norm": true}}"#).as_bytes(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("_remove_final_layer_norm"), "{e}");
    let bloom = r#"{"model_type": "bloom", "n_embed": 1024, "n_layer": 24,
        "num_attention_heads": 16, "vocab_size": 250880, "n_inner": null}"#;
    assert_eq!(count(bloom), Some(559_214_592));
    let internlm3 = r#"{"model_type": "internlm3", "qkv_bias": true, "bias": true,
        "hidden_size": 4096, "intermediate_size": 10240, "num_hidden_layers": 48,
        "num_attention_heads": 32, "num_key_value_heads": 2, "vocab_size": 128512}"#;
    assert_eq!(count(internlm3), Some(8_805_838_848));
}

/// The published Qwen3-Next config gives `full_attention_interval`, not `layer_types`: only
/// every fourth block (configuration_qwen3_next.py) caches K and V, 12 of 48 here; the other
/// 36 hold a Gated DeltaNet state. A different interval moves the split.
#[test]
fn qwen3_next_blocks_follow_full_attention_interval() {
    use vram_doctor::memory::kv_cache::kv_cache_bytes;
    use vram_doctor::memory::{Engine, KvDtype};
    let kv_per_token = |a: &vram_doctor::types::arch::ModelArch| {
        kv_cache_bytes(a, 1, 1, KvDtype::Fp16, Engine::Transformers, 1)
    };
    let m = config("qwen3-next-80b-a3b-thinking.json");
    // K and V × 2 KV heads × 256 × 2 bytes in each full-attention block.
    assert_eq!(kv_per_token(&m.arch), 12.0 * 2.0 * 2.0 * 256.0 * 2.0);
    let state = m.arch.cache.as_ref().map_or(0.0, |c| c.state_elements);
    assert!(state > 0.0, "the linear blocks hold a fixed state");
    let text = std::fs::read_to_string(config_path("qwen3-next-80b-a3b-thinking.json")).unwrap();
    let every_2nd = text.replace(
        "\"full_attention_interval\": 4",
        "\"full_attention_interval\": 2",
    );
    let m2 = imp::from_bytes::hf_config(every_2nd.as_bytes()).unwrap();
    assert_eq!(kv_per_token(&m2.arch), 24.0 * 2.0 * 2.0 * 256.0 * 2.0);
    assert_eq!(
        m2.arch.cache.as_ref().map_or(0.0, |c| c.state_elements),
        state * 24.0 / 36.0
    );
}

/// A layer_types list without a regular period (CWM: a full layer first in every four) is kept
/// block by block: each windowed block holds at most its window, each full one every token.
#[test]
fn irregular_layer_types_are_kept_block_by_block() {
    use vram_doctor::memory::kv_cache::kv_cache_bytes;
    use vram_doctor::memory::{Engine, KvDtype};
    let text = r#"{"model_type":"qwen2","hidden_size":64,"num_hidden_layers":4,
        "num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,"vocab_size":100,
        "sliding_window":128,"layer_types":["full_attention","sliding_attention","sliding_attention","full_attention"]}"#;
    let a = imp::from_bytes::hf_config(text.as_bytes()).unwrap().arch;
    // K+V of one token in one block: 2 · kv_heads 2 · head_dim 16 = 64 elements, 2 bytes each.
    let per_block = 128.0;
    let kv = |tokens| kv_cache_bytes(&a, 1, tokens, KvDtype::Fp16, Engine::Transformers, 1);
    assert_eq!(kv(100), 4.0 * 100.0 * per_block);
    assert_eq!(kv(1000), (2.0 * 1000.0 + 2.0 * 128.0) * per_block);
}

/// A Mamba 2 / attention hybrid: Bamba's default config (the oracle's row) with attention at
/// blocks 9, 18 and 27 (as ibm-ai-platform/Bamba-9B) and a 128-wide state. Reference figures
/// from transformers 5.24 `BambaForCausalLM` built on the meta device and run once with a cache
/// (`tools/hf_oracle.py` `measure`): 9,778,138,240 parameters, 12,288 KV bytes per token
/// (three attention blocks), 31,388,672 state elements (29 Mamba blocks × 1,082,368).
#[test]
fn state_space_hybrids_hold_kv_in_attention_blocks_and_a_fixed_state_in_mamba_blocks() {
    use vram_doctor::memory::kv_cache::{kv_cache_bytes, state_bytes};
    use vram_doctor::memory::{Engine, KvDtype};
    let rows = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/oracle/transformers-defaults.jsonl"),
    )
    .unwrap();
    let mut cfg = rows
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["model_type"] == "bamba")
        .unwrap()["config"]
        .clone();
    cfg["attn_layer_indices"] = serde_json::json!([9, 18, 27]);
    cfg["mamba_d_state"] = serde_json::json!(128);
    let m = imp::from_bytes::hf_config(cfg.to_string().as_bytes()).unwrap();
    assert_eq!(m.arch.params, 9_778_138_240.0);
    let kv = |tokens| kv_cache_bytes(&m.arch, 1, tokens, KvDtype::Fp16, Engine::Transformers, 1);
    assert_eq!(kv(1), 12_288.0);
    assert_eq!(kv(32768), 32768.0 * 12_288.0);
    let state = m.arch.cache.as_ref().unwrap().state_elements;
    assert_eq!(state, 31_388_672.0);
    // The state does not grow with the context; it is per sequence, 16-bit under transformers.
    assert_eq!(
        state_bytes(&m.arch, 2, Engine::Transformers),
        2.0 * 2.0 * state
    );
    assert!(
        m.notes
            .iter()
            .any(|n| n.to_string().contains("state-space")),
        "{:?}",
        m.notes
    );
    // An index past the last block is refused, not dropped.
    cfg["attn_layer_indices"] = serde_json::json!([9, 40]);
    let e = imp::from_bytes::hf_config(cfg.to_string().as_bytes())
        .unwrap_err()
        .to_string();
    assert!(e.contains("attn_layer_indices"), "{e}");
}

/// Granite 4.0 H Small's shapes (ibm-granite/granite-4.0-h-small config.json as quoted in
/// public notes: 40 layers, 4 of them attention, 72 experts of 768 with 10 per token, a shared
/// MLP of 1536, a 128-wide Mamba 2 state, tied head). Reference from transformers 5.24
/// `GraniteMoeHybridForCausalLM` on the meta device with attention at blocks 5/15/25/35:
/// 32,207,337,984 parameters (IBM: "32B total"), 8,803,121,664 active ("9B active"), 16,384 KV
/// bytes per token, 38,965,248 state elements.
#[test]
fn granite_4_hybrid_mamba_moe_counts_and_state() {
    use vram_doctor::memory::kv_cache::kv_cache_bytes;
    use vram_doctor::memory::{Engine, KvDtype};
    let types: Vec<&str> = (0..40)
        .map(|i| if i % 10 == 5 { "attention" } else { "mamba" })
        .collect();
    let mut cfg = serde_json::json!({
        "model_type": "granitemoehybrid", "architectures": ["GraniteMoeHybridForCausalLM"],
        "hidden_size": 4096, "num_hidden_layers": 40, "num_attention_heads": 32,
        "num_key_value_heads": 8, "num_local_experts": 72, "num_experts_per_tok": 10,
        "shared_intermediate_size": 1536, "intermediate_size": 768, "mamba_d_state": 128,
        "mamba_d_conv": 4, "mamba_expand": 2, "mamba_n_heads": 128, "mamba_d_head": 64,
        "mamba_n_groups": 1, "mamba_conv_bias": true, "mamba_proj_bias": false,
        "tie_word_embeddings": true, "vocab_size": 100352, "position_embedding_type": "nope",
        "layer_types": types, "torch_dtype": "bfloat16"
    });
    for spelling in ["layer_types", "layers_block_type"] {
        if spelling == "layers_block_type" {
            let t = cfg.as_object_mut().unwrap().remove("layer_types").unwrap();
            cfg[spelling] = t;
        }
        let m = imp::from_bytes::hf_config(cfg.to_string().as_bytes()).unwrap();
        assert_eq!(m.arch.params, 32_207_337_984.0, "{spelling}");
        let active = m.arch.active_params();
        assert!(
            (active / 8_803_121_664.0 - 1.0).abs() < 0.005,
            "{spelling}: {active}"
        );
        let kv = kv_cache_bytes(&m.arch, 1, 1, KvDtype::Fp16, Engine::Transformers, 1);
        assert_eq!(kv, 16_384.0, "{spelling}");
        assert_eq!(m.arch.cache.as_ref().unwrap().state_elements, 38_965_248.0);
    }
    // A list that does not cover every block is refused.
    cfg["layers_block_type"] = serde_json::json!(["mamba", "attention"]);
    let e = imp::from_bytes::hf_config(cfg.to_string().as_bytes())
        .unwrap_err()
        .to_string();
    assert!(e.contains("one block type per layer"), "{e}");
}

/// NemotronH lists one part per block: the published configs as `hybrid_override_pattern`
/// letters, transformers 5 as `layers_block_type`. The oracle's row (the default config, blocks
/// Mamba, experts, attention, MLP) written the older way counts the same: 1,968,355,712
/// parameters, one attention block's KV, one Mamba block's state.
#[test]
fn nemotron_h_block_pattern_in_either_spelling() {
    let rows = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/oracle/transformers-defaults.jsonl"),
    )
    .unwrap();
    let row = rows
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["model_type"] == "nemotron_h")
        .unwrap();
    let mut cfg = row["config"].clone();
    let obj = cfg.as_object_mut().unwrap();
    obj.remove("layers_block_type");
    obj.insert("hybrid_override_pattern".into(), "ME*-".into());
    let m = imp::from_bytes::hf_config(cfg.to_string().as_bytes()).unwrap();
    assert_eq!(m.arch.params, row["params"].as_f64().unwrap());
    assert_eq!(m.arch.layers, 4);
    assert_eq!(
        m.arch.cache.as_ref().unwrap().state_elements,
        row["cache_layers"][0]["state"].as_f64().unwrap()
    );
    for (pattern, named) in [("MX*-", "'X'"), ("ME*-", "n_routed_experts")] {
        let mut c = cfg.clone();
        c["hybrid_override_pattern"] = pattern.into();
        if named == "n_routed_experts" {
            c.as_object_mut().unwrap().remove("n_routed_experts");
        }
        let e = imp::from_bytes::hf_config(c.to_string().as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains(named), "{pattern}: {e}");
    }
}

/// Python's json module writes and reads Infinity and NaN; transformers configs can hold them.
#[test]
fn python_infinity_and_nan_are_read() {
    let text = r#"{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,
        "num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,"vocab_size":100,
        "rope_scaling":{"factor":Infinity,"low":-Infinity,"x":NaN},"note":"NaN and Infinity in a string"}"#;
    let m = imp::from_bytes::hf_config(text.as_bytes()).unwrap();
    assert_eq!(m.arch.layers, 2);
    let e = imp::from_bytes::hf_config(b"{\"model_type\": Infinit}")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not valid JSON"), "{e}");
}

#[test]
fn bad_configs_get_one_line_errors() {
    let cases: &[(&str, &str)] = &[
        ("not json", "not valid JSON"),
        ("[1,2]", "not a JSON object"),
        ("{}", "no model_type"),
        (r#"{"model_type":"llama"}"#, "hidden_size is missing"),
        (
            r#"{"model_type":"llama","hidden_size":"big"}"#,
            "hidden_size must be a whole number",
        ),
        (
            r#"{"model_type":"llama","hidden_size":1e30}"#,
            "hidden_size must be a whole number",
        ),
        (
            r#"{"model_type":"llama","hidden_size":-5}"#,
            "hidden_size must be a whole number",
        ),
        (
            r#"{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":0,"intermediate_size":1,"vocab_size":1}"#,
            "at least 1",
        ),
        (
            r#"{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":3,"intermediate_size":1,"vocab_size":1}"#,
            "kv_heads",
        ),
        (
            r#"{"model_type":"llama","hidden_size":4000000000,"num_hidden_layers":4000000000,"num_attention_heads":1,"intermediate_size":4000000000,"vocab_size":4000000000}"#,
            "num_hidden_layers 4000000000 is absurd",
        ),
        (
            r#"{"model_type":"llama","hidden_size":4000000000,"num_hidden_layers":100,"num_attention_heads":1,"intermediate_size":4000000000,"vocab_size":4000000000}"#,
            "model.params",
        ),
    ];
    for (text, want) in cases {
        let e = imp::from_bytes::hf_config(text.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("config.json: "), "{e}");
        assert!(e.contains(want), "{text}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
    // Deep nesting hits serde_json's recursion limit instead of the stack.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(imp::from_bytes::hf_config(deep.as_bytes()).is_err());
}

#[test]
fn oversized_config_files_are_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("config.json");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(1 << 30).unwrap();
    let e = imp::import_model(&p).unwrap_err().to_string();
    assert!(e.contains("too large"), "{e}");
}

// ---------------------------------------------------------------- GGUF

fn expected_bytes_by_type(g: &Gguf) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    for t in &g.tensors {
        let name = match t.type_id {
            0 => "F32",
            1 => "F16",
            12 => "Q4_K",
            14 => "Q6_K",
            _ => unreachable!(),
        };
        *m.entry(name.to_string()).or_insert(0) += t.bytes();
    }
    m
}

#[test]
fn gguf_header_gives_architecture_and_exact_buffers() {
    let g = tiny_llama(3);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("tiny.gguf");
    g.write_sparse(&p);
    let m = imp::import_model(&p).unwrap();
    assert_eq!(m.name, "Tiny Llama");
    assert_eq!(m.model_type, "llama");
    assert_eq!(m.source, imp::SourceFormat::Gguf);
    let a = &m.arch;
    assert_eq!(
        (
            a.layers,
            a.hidden,
            a.heads,
            a.kv_heads,
            a.head_dim,
            a.intermediate,
            a.vocab
        ),
        (3, 256, 4, 2, 64, 512, 300)
    );
    assert_eq!(
        (a.max_context, a.tied_embeddings, a.mlp),
        (Some(2048), false, Mlp::Gated)
    );
    let elements: u64 = g.tensors.iter().map(Tensor::elements).sum();
    assert_eq!(m.params_in_files, Some(elements));
    assert_eq!(a.params, elements as f64);
    assert_eq!(m.weight_bytes_by_dtype, expected_bytes_by_type(&g));
    assert_eq!(
        m.weight_bytes,
        Some(g.tensors.iter().map(Tensor::bytes).sum())
    );
    assert_eq!(m.weights, Some(WeightFormat::Gguf(GgufFileType::Q4KM)));
    let s = m.gguf.unwrap();
    assert_eq!(
        (
            s.version,
            s.file_type_name.as_deref(),
            s.tensor_count,
            s.shards
        ),
        (3, Some("Q4_K_M"), g.tensors.len(), 1)
    );
    assert_eq!(s.token_embd_bytes, 256 * 300 / 256 * 144);
    assert_eq!(s.output_bytes, 256 * 300 / 256 * 210);
    // 3 layers × 2 KV heads × (64 + 64) × 2 bytes.
    assert_eq!(s.kv_bytes_per_token_f16, 3 * 2 * 128 * 2);
    // load_model gives the same arch.
    assert_eq!(imp::load_model(&p).unwrap().arch, m.arch);
}

#[test]
fn gguf_v2_per_layer_heads_sliding_window_and_moe() {
    let mut g = tiny_llama(2);
    g.version = 2;
    g.kv.retain(|(k, _)| k != "llama.attention.head_count_kv" && k != "general.architecture");
    g = g
        .kv("general.architecture", Val::Str("llama".into()))
        .kv("llama.attention.head_count_kv", Val::ArrI32(vec![2, 4]))
        .kv("llama.attention.sliding_window", Val::U32(128))
        .kv("llama.expert_count", Val::U32(8))
        .kv("llama.expert_used_count", Val::U32(2));
    let m = imp::from_bytes::gguf(&g.bytes()).unwrap();
    assert_eq!(m.arch.kv_heads, 4);
    assert_eq!(m.arch.sliding_window, Some(128));
    let moe = m.arch.moe.unwrap();
    assert_eq!(
        (moe.experts, moe.active, moe.expert_intermediate),
        (8, 2, 512)
    );
    // (2 + 4) heads × 128 × 2 bytes.
    assert_eq!(m.gguf.unwrap().kv_bytes_per_token_f16, 6 * 128 * 2);
}

#[test]
fn gguf_tied_output_and_unknown_file_type() {
    let mut g = tiny_llama(1);
    g.tensors.retain(|t| t.name != "output.weight");
    g.kv.retain(|(k, _)| k != "general.file_type");
    g = g.kv("general.file_type", Val::U32(24)); // IQ1_S: not an engine format
    let m = imp::from_bytes::gguf(&g.bytes()).unwrap();
    assert!(m.arch.tied_embeddings);
    // The tensors are mostly Q4_K: planned as Q4_K_M, at the tensors' exact size.
    assert_eq!(m.weights, Some(WeightFormat::Gguf(GgufFileType::Q4KM)));
    assert!(
        m.notes
            .iter()
            .any(|n| n.to_string().contains("IQ1_S") && n.to_string().contains("Q4_K tensors")),
        "{:?}",
        m.notes
    );
}

/// A GGUF without general.file_type is planned at the sum of its tensors' sizes (headers only),
/// never at bf16 of its parameter count: named after its main tensor type (Q4_K → Q4_K_M,
/// MXFP4 → mxfp4), or, for a type without an engine format (IQ1_S), labelled with the modelled
/// type nearest that size; the note says which.
#[test]
fn gguf_without_file_type_is_planned_from_its_tensors() {
    let dir = tempfile::tempdir().unwrap();
    let load = |name: &str, matrices: Option<u32>| {
        let mut g = tiny_llama(2);
        g.kv.retain(|(k, _)| k != "general.file_type");
        if let Some(id) = matrices {
            for t in &mut g.tensors {
                if t.dims.len() == 2 {
                    t.type_id = id;
                }
            }
        }
        let p = dir.path().join(name);
        std::fs::write(&p, g.bytes()).unwrap();
        let loaded = imp::load_model(&p).unwrap();
        let w = loaded.weights.expect("weights from the tensors");
        let exact = g.tensors.iter().map(Tensor::bytes).sum::<u64>() as f64;
        assert_eq!(w.total_bytes, exact, "{name}");
        assert!(
            loaded
                .notes
                .iter()
                .any(|n| n.to_string().contains("general.file_type is missing")
                    && n.to_string().contains("exact size")),
            "{:?}",
            loaded.notes
        );
        (w.format, loaded.notes)
    };
    let (f, _) = load("q4.gguf", None);
    assert_eq!(f, WeightFormat::Gguf(GgufFileType::Q4KM));
    let (f, _) = load("mxfp4.gguf", Some(39));
    assert_eq!(f, WeightFormat::Mxfp4);
    let (f, notes) = load("iq1.gguf", Some(19));
    assert!(matches!(f, WeightFormat::Gguf(_)), "{f:?}");
    assert!(
        notes.iter().any(|n| n.to_string().contains("IQ1_S")),
        "{notes:?}"
    );
}

#[test]
fn gguf_deepseek2_mla_metadata() {
    let h = 256u64;
    let g = Gguf::new()
        .kv("general.architecture", Val::Str("deepseek2".into()))
        .kv("deepseek2.block_count", Val::U32(2))
        .kv("deepseek2.embedding_length", Val::U32(h as u32))
        .kv("deepseek2.feed_forward_length", Val::U32(512))
        .kv("deepseek2.attention.head_count", Val::U32(4))
        .kv("deepseek2.attention.head_count_kv", Val::U32(1))
        .kv("deepseek2.attention.key_length", Val::U32(576))
        .kv("deepseek2.attention.value_length", Val::U32(512))
        .kv("deepseek2.attention.key_length_mla", Val::U32(192))
        .kv("deepseek2.attention.value_length_mla", Val::U32(128))
        .kv("deepseek2.attention.kv_lora_rank", Val::U32(512))
        .kv("deepseek2.rope.dimension_count", Val::U32(64))
        .kv("deepseek2.expert_count", Val::U32(4))
        .kv("deepseek2.expert_used_count", Val::U32(2))
        .kv("deepseek2.expert_shared_count", Val::U32(1))
        .kv("deepseek2.expert_feed_forward_length", Val::U32(256))
        .kv("deepseek2.leading_dense_block_count", Val::U32(1))
        .kv("deepseek2.vocab_size", Val::U32(1000))
        .tensor("token_embd.weight", &[h, 1000], 1);
    let m = imp::from_bytes::gguf(&g.bytes()).unwrap();
    let mla = m.arch.mla.unwrap();
    assert_eq!(
        (
            mla.kv_lora_rank,
            mla.qk_rope_head_dim,
            mla.qk_nope_head_dim,
            mla.v_head_dim
        ),
        (512, 64, 128, 128)
    );
    assert_eq!(m.arch.head_dim, 192);
    let moe = m.arch.moe.unwrap();
    assert_eq!(
        (
            moe.experts,
            moe.shared_experts,
            moe.dense_layers,
            moe.expert_intermediate
        ),
        (4, 1, 1, 256)
    );
    // The latent cache as declared: K 576 + V 512 per layer, f16.
    assert_eq!(m.gguf.unwrap().kv_bytes_per_token_f16, 2 * (576 + 512) * 2);
}

#[test]
fn gguf_split_files_are_summed() {
    let dir = tempfile::tempdir().unwrap();
    let whole = tiny_llama(2);
    let (a, b) = whole.tensors.split_at(6);
    let mut first = whole.clone().kv("split.count", Val::U32(2));
    first.tensors = a.to_vec();
    let mut second = Gguf::new().kv("split.count", Val::U32(2));
    second.tensors = b.to_vec();
    first.write_sparse(&dir.path().join("m-00001-of-00002.gguf"));
    let p = dir.path().join("m-00001-of-00002.gguf");
    let e = imp::import_model(&p).unwrap_err().to_string();
    assert!(e.contains("m-00002-of-00002.gguf is missing"), "{e}");
    second.write_sparse(&dir.path().join("m-00002-of-00002.gguf"));
    let m = imp::import_model(&p).unwrap();
    assert_eq!(
        m.params_in_files,
        Some(whole.tensors.iter().map(Tensor::elements).sum())
    );
    assert_eq!(m.gguf.unwrap().shards, 2);
    assert_eq!(m.files.len(), 2);
}

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

impl<R: Seek> Seek for Counting<R> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// A 14 GiB sparse GGUF: the header is read, the data never is.
#[test]
fn gguf_reading_never_touches_tensor_data() {
    let (h, vocab, ff) = (4096u64, 128_256u64, 14336u64);
    let mut g = Gguf::new()
        .kv("general.architecture", Val::Str("llama".into()))
        .kv("general.file_type", Val::U32(1))
        .kv("llama.block_count", Val::U32(32))
        .kv("llama.embedding_length", Val::U32(h as u32))
        .kv("llama.feed_forward_length", Val::U32(ff as u32))
        .kv("llama.attention.head_count", Val::U32(32))
        .kv("llama.attention.head_count_kv", Val::U32(8))
        .kv("llama.vocab_size", Val::U32(vocab as u32))
        .tensor("token_embd.weight", &[h, vocab], 1);
    for l in 0..32 {
        let b = |s: &str| format!("blk.{l}.{s}.weight");
        g = g
            .tensor(&b("attn_norm"), &[h], 0)
            .tensor(&b("attn_q"), &[h, h], 1)
            .tensor(&b("attn_k"), &[h, 1024], 1)
            .tensor(&b("attn_v"), &[h, 1024], 1)
            .tensor(&b("attn_output"), &[h, h], 1)
            .tensor(&b("ffn_norm"), &[h], 0)
            .tensor(&b("ffn_gate"), &[h, ff], 1)
            .tensor(&b("ffn_up"), &[h, ff], 1)
            .tensor(&b("ffn_down"), &[ff, h], 1);
    }
    g = g
        .tensor("output_norm.weight", &[h], 0)
        .tensor("output.weight", &[h, vocab], 1);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("llama-8b-f16.gguf");
    g.write_sparse(&p);
    let len = std::fs::metadata(&p).unwrap().len();
    assert!(len > 14 << 30);
    let header = g.header().len() as u64;
    let mut counting = Counting {
        inner: std::fs::File::open(&p).unwrap(),
        read: 0,
    };
    let parsed = imp::gguf::parse_from(&mut counting, len, "llama-8b-f16.gguf").unwrap();
    assert!(
        counting.read <= header,
        "read {} bytes of a {header}-byte header",
        counting.read
    );
    // Llama-3.1-8B's exact parameter count, from the tensor infos alone.
    assert_eq!(parsed.elements(), 8_030_261_248);
    let m = imp::import_model(&p).unwrap();
    assert_eq!(m.arch.params, 8_030_261_248.0);
    // F16 everywhere but the 65 F32 norm vectors.
    assert_eq!(m.weight_bytes, Some(8_030_261_248 * 2 + 65 * 4096 * 2));
}

fn gguf_err(bytes: &[u8]) -> String {
    let e = imp::from_bytes::gguf(bytes).unwrap_err().to_string();
    assert!(e.starts_with("input.gguf: "), "{e}");
    assert!(!e.contains('\n'));
    e
}

#[test]
fn broken_gguf_files_get_clear_errors() {
    let good = tiny_llama(1).bytes();
    let with = |at: usize, b: &[u8]| {
        let mut v = good.clone();
        v[at..at + b.len()].copy_from_slice(b);
        v
    };
    assert!(gguf_err(b"GG").contains("file ends inside the header"));
    assert!(gguf_err(b"GGML").contains("not a GGUF file"));
    assert!(gguf_err(&with(0, b"GGUX")).contains("not a GGUF file"));
    assert!(gguf_err(&with(4, &1u32.to_le_bytes())).contains("version 1"));
    assert!(gguf_err(&with(4, &4u32.to_le_bytes())).contains("version 4 is unknown"));
    assert!(gguf_err(&with(4, &3u32.to_be_bytes())).contains("big-endian"));
    assert!(
        gguf_err(&with(8, &(1u64 << 60).to_le_bytes()))
            .contains("tensor count 1152921504606846976 cannot fit")
    );
    assert!(gguf_err(&with(16, &u64::MAX.to_le_bytes())).contains("metadata count"));
    // The first key's length: beyond the file.
    assert!(
        gguf_err(&with(24, &(1u64 << 40).to_le_bytes())).contains("claims 1099511627776 bytes")
    );
    let mut short_key = tiny_llama(1).header();
    short_key[24..32].copy_from_slice(&65_000u64.to_le_bytes());
    assert!(gguf_err(&short_key).contains("file ends inside the header"));
    // Tensor data missing: the file stops after the header.
    let header_only = tiny_llama(1).header();
    assert!(gguf_err(&header_only).contains("truncated download"));
}

#[test]
fn every_truncation_of_a_gguf_is_an_error_not_a_panic() {
    let good = tiny_llama(1).bytes();
    let header = tiny_llama(1).header().len();
    // Every cut inside the header, and every 997th byte of the data.
    let cuts = (0..header).chain((header..good.len()).step_by(997));
    for cut in cuts {
        let r = imp::from_bytes::gguf(&good[..cut]);
        assert!(r.is_err(), "cut at {cut} of {}", good.len());
        let e = r.unwrap_err().to_string();
        let known = [
            "file ends inside the header",
            "cannot fit",
            "more than the file holds",
            "truncated",
        ];
        assert!(known.iter().any(|k| e.contains(k)), "{cut}: {e}");
    }
    assert!(imp::from_bytes::gguf(&good).is_ok());
}

#[test]
fn hostile_gguf_fields() {
    let base = || {
        Gguf::new()
            .kv("general.architecture", Val::Str("llama".into()))
            .kv("llama.block_count", Val::U32(1))
            .kv("llama.embedding_length", Val::U32(32))
            .kv("llama.feed_forward_length", Val::U32(64))
            .kv("llama.attention.head_count", Val::U32(4))
            .kv("llama.vocab_size", Val::U32(10))
    };
    // A tensor with 5 dimensions, an absurd shape, a row not a multiple of its block.
    assert!(gguf_err(&base().tensor("t", &[1, 1, 1, 1, 1], 0).bytes()).contains("5 dimensions"));
    let mut huge = base().tensor("t", &[1], 0);
    huge.tensors[0].dims = vec![1 << 40, 1 << 40];
    assert!(gguf_err(&huge.header()).contains("absurd shape"));
    let mut odd = base().tensor("t", &[256], 12);
    odd.tensors[0].dims = vec![100];
    assert!(gguf_err(&odd.header()).contains("not a multiple of the block size 256"));
    // An unknown tensor type: sized from the offsets, not refused.
    let mut unknown = base().tensor("a", &[8], 0).tensor("b", &[8], 0);
    let mut bytes = unknown.bytes();
    // Tensor info "b": name (u64 length 1, 'b'), n_dims, one dim, then the type.
    let name_b = [1, 0, 0, 0, 0, 0, 0, 0, b'b'];
    let pos = bytes.windows(9).position(|w| w == name_b).unwrap() + 9 + 4 + 8;
    bytes[pos..pos + 4].copy_from_slice(&99u32.to_le_bytes());
    let m = imp::from_bytes::gguf(&bytes).unwrap();
    assert_eq!(m.weight_bytes_by_dtype.get("type99"), Some(&32));
    // Offsets not aligned.
    unknown.tensors.truncate(1);
    let mut b = unknown.bytes();
    let at = b.len() - 32 - 8;
    b[at..at + 8].copy_from_slice(&3u64.to_le_bytes());
    assert!(gguf_err(&b).contains("not a multiple of the alignment"));
    // Missing required metadata names the key.
    let e = gguf_err(
        &Gguf::new()
            .kv("general.architecture", Val::Str("llama".into()))
            .bytes(),
    );
    assert!(e.contains("\"llama.block_count\" is missing"), "{e}");
    assert!(gguf_err(&Gguf::new().bytes()).contains("general.architecture is missing"));
    // A per-layer array of the wrong length.
    let bad_layers = base().kv("llama.attention.head_count_kv", Val::ArrI32(vec![1, 2, 3]));
    assert!(gguf_err(&bad_layers.bytes()).contains("3 entries for 1 layers"));
}

#[test]
fn gguf_arrays_claiming_more_than_the_file_are_refused() {
    let g = Gguf::new().kv("a", Val::ArrI32(vec![1, 2]));
    let mut b = g.bytes();
    // key "a": 8 len + 1 + 4 type, then element type 4 bytes, then the u64 count.
    let at = 24 + 8 + 1 + 4 + 4;
    b[at..at + 8].copy_from_slice(&(1u64 << 61).to_le_bytes());
    assert!(gguf_err(&b).contains("claims 2305843009213693952 elements"));
    let s = Gguf::new().kv("s", Val::ArrStr(vec!["x".into()]));
    let mut b = s.bytes();
    b[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(gguf_err(&b).contains("more than the file holds"));
}

// ---------------------------------------------------------------- safetensors

fn write_config(dir: &Path, name: &str) {
    std::fs::copy(config_path(name), dir.join("config.json")).unwrap();
}

/// Llama-3.1-8B as a 16 GB sparse safetensors file beside its config: the header count must
/// equal the config's shape count and the published one.
#[test]
fn safetensors_count_matches_config_and_reads_headers_only() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "llama-3.1-8b.json");
    let ck = llama_checkpoint(32, 4096, 1024, 14336, 128_256, "BF16");
    let file = dir.path().join("model.safetensors");
    ck.write_sparse(&file);
    let m = imp::import_model(dir.path()).unwrap();
    assert_eq!(m.source, imp::SourceFormat::Safetensors);
    assert_eq!(m.params_in_files, Some(8_030_261_248));
    assert_eq!(m.params_by_shape, Some(8_030_261_248));
    assert_eq!(m.weight_bytes, Some(16_060_522_496));
    assert_eq!(m.weight_bytes_by_dtype.get("BF16"), Some(&16_060_522_496));
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    let len = std::fs::metadata(&file).unwrap().len();
    let mut counting = Counting {
        inner: std::fs::File::open(&file).unwrap(),
        read: 0,
    };
    imp::safetensors::parse_from(&mut counting, len, "model.safetensors").unwrap();
    assert!(counting.read <= ck.header().len() as u64);
    // Opening the .safetensors file itself finds config.json beside it.
    assert_eq!(imp::load_model(&file).unwrap().arch.params, 8_030_261_248.0);
}

#[test]
fn sharded_safetensors_through_the_index() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "qwen2.5-0.5b.json");
    // Qwen2.5-0.5B: 24 layers, 896 wide, 2 KV heads of 64, q/k/v biases, tied head.
    let (h, kv, ff, vocab) = (896u64, 128u64, 4864u64, 151_936u64);
    let mut a = Safetensors::default().add("model.embed_tokens.weight", "BF16", &[vocab, h]);
    let mut b = Safetensors::default();
    let mut map = serde_json::Map::new();
    map.insert(
        "model.embed_tokens.weight".into(),
        "model-00001-of-00002.safetensors".into(),
    );
    for l in 0..24u64 {
        let p = |x: &str| format!("model.layers.{l}.{x}");
        let tensors = [
            (p("input_layernorm.weight"), vec![h]),
            (p("self_attn.q_proj.weight"), vec![h, h]),
            (p("self_attn.q_proj.bias"), vec![h]),
            (p("self_attn.k_proj.weight"), vec![kv, h]),
            (p("self_attn.k_proj.bias"), vec![kv]),
            (p("self_attn.v_proj.weight"), vec![kv, h]),
            (p("self_attn.v_proj.bias"), vec![kv]),
            (p("self_attn.o_proj.weight"), vec![h, h]),
            (p("post_attention_layernorm.weight"), vec![h]),
            (p("mlp.gate_proj.weight"), vec![ff, h]),
            (p("mlp.up_proj.weight"), vec![ff, h]),
            (p("mlp.down_proj.weight"), vec![h, ff]),
        ];
        for (name, shape) in tensors {
            let shard = if l < 12 {
                "model-00001-of-00002.safetensors"
            } else {
                "model-00002-of-00002.safetensors"
            };
            map.insert(name.clone(), shard.into());
            if l < 12 {
                a = a.add(&name, "BF16", &shape)
            } else {
                b = b.add(&name, "BF16", &shape)
            }
        }
    }
    b = b.add("model.norm.weight", "BF16", &[h]);
    map.insert(
        "model.norm.weight".into(),
        "model-00002-of-00002.safetensors".into(),
    );
    a.write_sparse(&dir.path().join("model-00001-of-00002.safetensors"));
    let index = serde_json::json!({"metadata": {"total_size": a.data_len() + b.data_len()}, "weight_map": map});
    let index_path = dir.path().join("model.safetensors.index.json");
    std::fs::write(&index_path, serde_json::to_string(&index).unwrap()).unwrap();
    let e = imp::import_model(&index_path).unwrap_err().to_string();
    assert!(
        e.contains("shard model-00002-of-00002.safetensors is missing"),
        "{e}"
    );
    // Through the folder (config.json), a missing shard leaves the config's count and a note.
    let partial = imp::import_model(dir.path()).unwrap();
    assert_eq!(
        (partial.params_in_files, partial.params_by_shape),
        (None, Some(494_032_768))
    );
    assert!(
        partial.notes[0].to_string().contains("weights not counted"),
        "{:?}",
        partial.notes
    );
    b.write_sparse(&dir.path().join("model-00002-of-00002.safetensors"));
    let m = imp::import_model(&index_path).unwrap();
    assert_eq!(m.params_in_files, Some(494_032_768));
    assert_eq!(m.params_by_shape, Some(494_032_768));
    assert_eq!(m.weight_bytes, Some(2 * 494_032_768));
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    assert_eq!(m.files.len(), 3);
    // The folder finds the index too.
    assert_eq!(
        imp::import_model(dir.path()).unwrap().params_in_files,
        Some(494_032_768)
    );
}

#[test]
fn hostile_index_files() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("model.safetensors.index.json");
    std::fs::write(&p, r#"{"weight_map":{"x":"../../etc/passwd"}}"#).unwrap();
    assert!(
        imp::import_model(&p)
            .unwrap_err()
            .to_string()
            .contains("not a plain file name")
    );
    std::fs::write(&p, r#"{"weight_map":{}}"#).unwrap();
    assert!(
        imp::import_model(&p)
            .unwrap_err()
            .to_string()
            .contains("weight_map is empty")
    );
    std::fs::write(&p, r#"{"metadata":{}}"#).unwrap();
    assert!(
        imp::import_model(&p)
            .unwrap_err()
            .to_string()
            .contains("no weight_map")
    );
}

#[test]
fn quantized_checkpoints_are_unpacked_to_their_parameter_count() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = r#"{"model_type":"llama","hidden_size":256,"num_hidden_layers":2,"num_attention_heads":4,
        "num_key_value_heads":2,"intermediate_size":512,"vocab_size":1000,"torch_dtype":"float16",
        "quantization_config":{"quant_method":"gptq","bits":4,"group_size":128}}"#;
    std::fs::write(dir.path().join("config.json"), cfg).unwrap();
    let (h, kv, ff) = (256u64, 128u64, 512u64);
    let mut s = Safetensors::default().add("model.embed_tokens.weight", "F16", &[1000, h]);
    for l in 0..2 {
        s = s
            .add(
                &format!("model.layers.{l}.input_layernorm.weight"),
                "F16",
                &[h],
            )
            .add(
                &format!("model.layers.{l}.post_attention_layernorm.weight"),
                "F16",
                &[h],
            );
        for (name, inp, out) in [
            ("self_attn.q_proj", h, h),
            ("self_attn.k_proj", h, kv),
            ("self_attn.v_proj", h, kv),
            ("self_attn.o_proj", h, h),
            ("mlp.gate_proj", h, ff),
            ("mlp.up_proj", h, ff),
            ("mlp.down_proj", ff, h),
        ] {
            // AutoGPTQ packing: qweight [in/8, out] I32, qzeros [in/128, out/8] I32,
            // scales [in/128, out] F16, g_idx [in] I32.
            let p = format!("model.layers.{l}.{name}");
            s = s
                .add(&format!("{p}.qweight"), "I32", &[inp / 8, out])
                .add(&format!("{p}.qzeros"), "I32", &[inp / 128, out / 8])
                .add(&format!("{p}.scales"), "F16", &[inp / 128, out])
                .add(&format!("{p}.g_idx"), "I32", &[inp]);
        }
    }
    s = s
        .add("model.norm.weight", "F16", &[h])
        .add("lm_head.weight", "F16", &[1000, h]);
    s.write_sparse(&dir.path().join("model.safetensors"));
    let m = imp::import_model(dir.path()).unwrap();
    assert_eq!(m.weights, Some(WeightFormat::Gptq4));
    assert_eq!(m.params_in_files, m.params_by_shape);
    assert!(m.weight_bytes_by_dtype.contains_key("I32"));
}

fn st_err(bytes: &[u8]) -> String {
    let e = imp::from_bytes::safetensors(bytes).unwrap_err().to_string();
    assert!(e.starts_with("input.safetensors: "), "{e}");
    e
}

#[test]
fn broken_safetensors_files_get_clear_errors() {
    let good = Safetensors::default()
        .add("w", "F16", &[4, 4])
        .add("b", "F32", &[4])
        .bytes();
    let h = imp::from_bytes::safetensors(&good).unwrap();
    assert_eq!(h.tensors.len(), 2);
    assert_eq!(h.metadata.get("format").map(String::as_str), Some("pt"));
    let with_len = |n: u64| {
        let mut v = good.clone();
        v[..8].copy_from_slice(&n.to_le_bytes());
        v
    };
    assert!(st_err(&with_len(u64::MAX)).contains("over the 100 MB limit"));
    assert!(st_err(&with_len(50_000_000)).contains("file ends inside the header"));
    assert!(st_err(&with_len(3)).contains("not a valid safetensors header"));
    let json = |j: &str| {
        let mut v = (j.len() as u64).to_le_bytes().to_vec();
        v.extend(j.as_bytes());
        v
    };
    assert!(st_err(&json("[]")).contains("expected a JSON object of tensor entries"));
    assert!(st_err(&json(r#"{"w":[1]}"#)).contains("tensor \"w\": invalid type"));
    let long_shape = format!(
        r#"{{"w":{{"dtype":"F16","shape":[{}],"data_offsets":[0,0]}}}}"#,
        ["1"; 17].join(",")
    );
    assert!(st_err(&json(&long_shape)).contains("more than 16 numbers"));
    assert!(
        st_err(&json(
            r#"{"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}"#
        ))
        .contains("only 0 bytes")
    );
    let mut short = json(r#"{"w":{"dtype":"F16","shape":[4],"data_offsets":[0,4]}}"#);
    short.extend([0; 4]);
    assert!(st_err(&short).contains("needs 8 bytes but its offsets span 4"));
    assert!(
        st_err(&json(
            r#"{"w":{"dtype":"F16","shape":[4],"data_offsets":[4,0]}}"#
        ))
        .contains("bad data_offsets")
    );
    let neg = json(r#"{"w":{"dtype":"F16","shape":[-1],"data_offsets":[0,0]}}"#);
    assert!(st_err(&neg).contains("expected u64"));
    let one_offset = json(r#"{"w":{"dtype":"F16","shape":[1],"data_offsets":[0]}}"#);
    assert!(st_err(&one_offset).contains("two whole numbers"));
    let odd_meta = json(
        r#"{"__metadata__":{"format":"pt","n":3,"x":{"y":[1]}},"w":{"dtype":"F16","shape":[0],"data_offsets":[0,0]}}"#,
    );
    let h = imp::from_bytes::safetensors(&odd_meta).unwrap();
    assert_eq!(
        h.metadata.len(),
        1,
        "non-string metadata values are skipped"
    );
    assert!(
        st_err(&json(
            r#"{"w":{"dtype":"F16","shape":[4294967296,4294967296],"data_offsets":[0,0]}}"#
        ))
        .contains("absurd shape")
    );
    assert!(st_err(&json(r#"{"w":{"shape":[1],"data_offsets":[0,0]}}"#)).contains("no dtype"));
    for cut in 0..good.len() {
        assert!(
            imp::from_bytes::safetensors(&good[..cut]).is_err(),
            "cut {cut}"
        );
    }
}

#[test]
fn safetensors_without_a_config_say_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("model.safetensors");
    std::fs::write(&p, Safetensors::default().add("w", "F16", &[2]).bytes()).unwrap();
    let e = imp::import_model(&p).unwrap_err().to_string();
    assert!(e.contains("no config.json beside it"), "{e}");
}

// ---------------------------------------------------------------- diffusers and dispatch

#[test]
fn diffusers_pipeline_lists_components_with_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("model_index.json"),
        r#"{"_class_name":"StableDiffusionXLPipeline","_diffusers_version":"0.19.0.dev0",
            "force_zeros_for_empty_prompt":true,"scheduler":["diffusers","EulerDiscreteScheduler"],
            "text_encoder":["transformers","CLIPTextModel"],"tokenizer":["transformers","CLIPTokenizer"],
            "unet":["diffusers","UNet2DConditionModel"],"vae":["diffusers","AutoencoderKL"],
            "image_encoder":[null,null]}"#,
    )
    .unwrap();
    for sub in ["scheduler", "text_encoder", "tokenizer", "unet"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    std::fs::write(
        d.join("unet/config.json"),
        r#"{"sample_size":128,"in_channels":4,"cross_attention_dim":2048}"#,
    )
    .unwrap();
    let unet = Safetensors::default()
        .add("conv_in.weight", "F16", &[320, 4, 3, 3])
        .add("conv_in.bias", "F16", &[320]);
    unet.write_sparse(&d.join("unet/diffusion_pytorch_model.safetensors"));
    std::fs::write(
        d.join("text_encoder/config.json"),
        r#"{"hidden_size":768,"num_hidden_layers":12}"#,
    )
    .unwrap();
    let te = Safetensors::default().add(
        "text_model.embeddings.token_embedding.weight",
        "F16",
        &[49408, 768],
    );
    te.write_sparse(&d.join("text_encoder/model.safetensors"));
    let p = imp::import_pipeline(d).unwrap();
    assert_eq!(p.class_name, "StableDiffusionXLPipeline");
    let names: Vec<&str> = p.components.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["scheduler", "text_encoder", "tokenizer", "unet", "vae"]
    );
    let u = p.components.iter().find(|c| c.name == "unet").unwrap();
    assert_eq!(
        (u.class_name.as_str(), u.params, u.weight_bytes),
        (
            "UNet2DConditionModel",
            Some(320 * 36 + 320),
            Some((320 * 36 + 320) * 2)
        )
    );
    assert_eq!(u.config.get("sample_size"), Some(&serde_json::json!(128)));
    let t = p
        .components
        .iter()
        .find(|c| c.name == "text_encoder")
        .unwrap();
    assert_eq!(t.params, Some(49408 * 768));
    assert_eq!(t.library, "transformers");
    let vae = p.components.iter().find(|c| c.name == "vae").unwrap();
    assert_eq!(vae.params, None);
    assert!(vae.notes[0].to_string().contains("missing"));
    assert_eq!(p.weight_bytes(), (320 * 36 + 320) * 2 + 49408 * 768 * 2);
    // `import` tells pipelines from models; `import_model` refuses a pipeline clearly.
    assert!(matches!(
        imp::import(d).unwrap(),
        imp::Imported::Pipeline(_)
    ));
    assert!(
        imp::import_model(d)
            .unwrap_err()
            .to_string()
            .contains("diffusers pipeline")
    );
}

#[test]
fn dispatch_by_content_and_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A GGUF under another name is still read as GGUF (by its magic).
    let p = d.join("weights.bin");
    std::fs::write(&p, tiny_llama(1).bytes()).unwrap();
    assert_eq!(
        imp::import_model(&p).unwrap().source,
        imp::SourceFormat::Gguf
    );
    // A folder with a single GGUF.
    let sub = d.join("gguf-only");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("m.gguf"), tiny_llama(1).bytes()).unwrap();
    assert!(matches!(
        imp::import(&sub).unwrap(),
        imp::Imported::Model(_)
    ));
    // A .gguf without the magic, an unknown extension, a missing path, an empty folder.
    std::fs::write(d.join("fake.gguf"), b"hello world").unwrap();
    assert!(
        imp::import_model(&d.join("fake.gguf"))
            .unwrap_err()
            .to_string()
            .contains("not a GGUF file")
    );
    std::fs::write(d.join("notes.txt"), b"hi").unwrap();
    assert!(
        imp::import_model(&d.join("notes.txt"))
            .unwrap_err()
            .to_string()
            .contains("not a model file")
    );
    assert!(
        imp::import_model(&d.join("nope.json"))
            .unwrap_err()
            .to_string()
            .contains("cannot read")
    );
    let empty = d.join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(
        imp::import_model(&empty)
            .unwrap_err()
            .to_string()
            .contains("no config.json")
    );
}

// ---------------------------------------------------------------- files written by the reference packages

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

fn expected(rel: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(data(rel)).unwrap()).unwrap()
}

/// GGUF files written by gguf-py's GGUFWriter (tests/data/gen_fixtures.py); the expected sizes
/// are what gguf-py's own GGUFReader reads from them.
#[test]
fn gguf_files_from_gguf_py_read_as_gguf_py_reads_them() {
    for (file, want) in [
        (
            "gguf/tiny-llama-q8_0.gguf",
            "gguf/tiny-llama-q8_0.expected.json",
        ),
        (
            "gguf/tiny-qwen2moe-f16.gguf",
            "gguf/tiny-qwen2moe-f16.expected.json",
        ),
    ] {
        let e = expected(want);
        let m = imp::import_model(&data(file)).unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(m.params_in_files, e["params"].as_u64(), "{file}");
        assert_eq!(m.weight_bytes, e["tensor_bytes"].as_u64(), "{file}");
        assert_eq!(
            m.gguf.as_ref().unwrap().tensor_count as u64,
            e["tensor_count"].as_u64().unwrap()
        );
        for (ty, bytes) in e["bytes_by_type"].as_object().unwrap() {
            assert_eq!(
                m.weight_bytes_by_dtype.get(ty).copied(),
                bytes.as_u64(),
                "{file} {ty}"
            );
        }
    }
    let llama = imp::import_model(&data("gguf/tiny-llama-q8_0.gguf")).unwrap();
    assert_eq!(llama.name, "tiny llama");
    assert_eq!(llama.weights, Some(WeightFormat::Gguf(GgufFileType::Q8_0)));
    assert_eq!(
        (
            llama.arch.layers,
            llama.arch.hidden,
            llama.arch.heads,
            llama.arch.kv_heads
        ),
        (2, 64, 4, 2)
    );
    assert_eq!(
        (
            llama.arch.head_dim,
            llama.arch.vocab,
            llama.arch.max_context
        ),
        (16, 32, Some(512))
    );
    let moe = imp::import_model(&data("gguf/tiny-qwen2moe-f16.gguf")).unwrap();
    assert!(moe.arch.tied_embeddings);
    let m = moe.arch.moe.unwrap();
    assert_eq!(
        (m.experts, m.active, m.expert_intermediate, m.shared_experts),
        (4, 2, 16, 2)
    );
    assert_eq!(moe.weights, Some(WeightFormat::Gguf(GgufFileType::F16)));
}

/// A sharded checkpoint written by the safetensors package: the header count equals what
/// safetensors' own reader counts, and the qwen2 convention (q/k/v biases, tied head) gives the
/// same number from config.json.
#[test]
fn safetensors_shards_from_the_reference_package() {
    let e = expected("safetensors/tiny-qwen2/expected.json");
    let m = imp::import_model(&data("safetensors/tiny-qwen2")).unwrap();
    assert_eq!(m.params_in_files, e["params"].as_u64());
    assert_eq!(m.params_by_shape, e["params"].as_u64());
    assert_eq!(m.weight_bytes, e["total_bytes"].as_u64());
    for (ty, bytes) in e["bytes_by_dtype"].as_object().unwrap() {
        assert_eq!(
            m.weight_bytes_by_dtype.get(ty).copied(),
            bytes.as_u64(),
            "{ty}"
        );
    }
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    assert_eq!(m.weights, Some(WeightFormat::Fp16));
}

// ---------------------------------------------------------------- the inspect command

fn inspect(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .arg("inspect")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn inspect_prints_what_was_read() {
    let p = config_path("llama-3.1-8b.json");
    let out = inspect(&[p.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("8,030,261,248 from the config's shapes"),
        "{text}"
    );
    assert!(text.contains("32 layers"), "{text}");
    let json = inspect(&[
        data("gguf/tiny-llama-q8_0.gguf").to_str().unwrap(),
        "--json",
    ]);
    assert!(json.status.success());
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["kind"], "model");
    assert_eq!(v["params_in_files"], 78_144);
    assert_eq!(v["gguf"]["file_type_name"], "Q8_0");
    assert_eq!(v["gguf"]["metadata"]["llama.rope.dimension_count"], 16);
    assert_eq!(v["gguf"]["metadata"]["tokenizer.ggml.tokens"]["len"], 32);
}

#[test]
fn inspect_bad_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("broken.gguf");
    std::fs::write(&p, b"GGUF\x03\x00\x00\x00").unwrap();
    let out = inspect(&[p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("broken.gguf") && err.contains("file ends inside the header"),
        "{err}"
    );
}

/// Whose problem a path is decides the status: one that names nothing is the user's (exit 2);
/// one the system cannot follow (a file used as a folder) is the machine's (exit 1). Both are
/// one line naming the path, for a model, a ComfyUI workflow, a model file a plan names (read
/// through the resolution step), a workload file and an accuracy reference (the last three
/// exited 2 on both before their errors were typed).
#[test]
fn inspect_tells_a_wrong_path_from_a_failed_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.gguf");
    std::fs::write(&file, b"GGUF").unwrap();
    let cases = [
        (dir.path().join("nothing.gguf"), Some(2)),
        (file.join("model.gguf"), Some(1)),
    ];
    for (path, status) in cases {
        let p = path.to_str().unwrap();
        for args in [
            vec!["inspect", p],
            vec!["plan", "--gpu", "rtx-4090", "--workflow", p],
            vec!["plan", "--gpu", "rtx-4090", "--model-file", p],
            vec!["plan", "--workload", p],
            vec!["accuracy", "--reference", p],
        ] {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
                .args(&args)
                .output()
                .unwrap();
            let err = String::from_utf8(out.stderr).unwrap();
            assert_eq!(out.status.code(), status, "{args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains(p), "{err}");
        }
    }
}

/// A real tokenizer's worth of strings (Llama 3: 128,256 tokens and 280,147 merges) is skipped
/// inside the reader's buffer: the whole header is read once, never re-read per string.
#[test]
fn gguf_tokenizer_arrays_are_read_once() {
    let tokens: Vec<String> = (0..128_256).map(|i| format!("tok{i}")).collect();
    let merges: Vec<String> = (0..280_147).map(|i| format!("a{i} b")).collect();
    let g = tiny_llama(1)
        .kv("tokenizer.ggml.merges", Val::ArrStr(merges))
        .kv("tokenizer.ggml.pre", Val::ArrStr(tokens));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big-vocab.gguf");
    g.write_sparse(&p);
    let len = std::fs::metadata(&p).unwrap().len();
    let file = Counting {
        inner: std::fs::File::open(&p).unwrap(),
        read: 0,
    };
    let mut buffered = std::io::BufReader::new(file);
    imp::gguf::parse_from(&mut buffered, len, "big-vocab.gguf").unwrap();
    // The header, plus at most one buffer read ahead into the data.
    let header = g.header().len() as u64;
    let read = buffered.get_ref().read;
    assert!(
        read <= header + 8192,
        "read {read} bytes for a {header}-byte header"
    );
}
