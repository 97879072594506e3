//! KV cache bytes. llama.cpp and vLLM size it exactly as
//! `tokens × Σ_layers (n_embd_k_gqa·size(type_k) + n_embd_v_gqa·size(type_v))`
//! (llama.cpp `llama_kv_cache` constructor; vLLM `CacheEngine.get_cache_block_size`), so this is
//! the one component an estimate can get to the byte.

use crate::types::arch::{BlockCache, ModelArch};
use crate::types::dtype::KvDtype;
use crate::types::options::Engine;

/// K+V elements per token for one layer. MLA engines keep the compressed latent
/// `kv_lora_rank + qk_rope_head_dim` (DeepSeek-V2 paper §2.1.2): vLLM, llama.cpp since PR #12801,
/// and transformers 5 (modeling_deepseek_v3.py `DeepseekV3Attention.forward`: "Cache read /
/// write is performed while latent KV is still compressed"; checked by tests/hf_oracle.rs).
fn elements_per_token_layer(a: &ModelArch, engine: Engine) -> f64 {
    match (&a.mla, a.transformers_kv_heads, engine) {
        (Some(m), _, _) => f64::from(m.kv_lora_rank + m.qk_rope_head_dim),
        (None, Some(h), Engine::Transformers) => 2.0 * f64::from(h) * f64::from(a.head_dim),
        (None, _, _) => 2.0 * a.kv_dim(),
    }
}

/// Tokens a layer keeps: a sliding-window layer never holds more than its window (llama.cpp's
/// iSWA cache adds one ubatch of slack: `llama_kv_cache_iswa`, size_swa = window·n_seq + n_ubatch).
fn tokens_per_layer(
    a: &ModelArch,
    layer: u32,
    tokens: f64,
    seqs: f64,
    engine: Engine,
    ubatch: u32,
) -> f64 {
    let block = a.cache.as_ref().and_then(|c| c.blocks.get(layer as usize));
    if block == Some(&BlockCache::None) {
        return 0.0;
    }
    let Some(w) = a.sliding_window else {
        return tokens;
    };
    let global = match (block, a.global_every) {
        (Some(b), _) => *b == BlockCache::Full,
        (None, Some(n)) if n > 0 => (layer + 1).is_multiple_of(n),
        _ => false,
    };
    if global {
        return tokens;
    }
    let span = match engine {
        Engine::LlamaCpp => f64::from(w) * seqs + f64::from(ubatch),
        _ => f64::from(w) * seqs,
    };
    tokens.min(span)
}

/// KV cache bytes for `seqs` sequences of `seq_len` tokens each (whole model, before any split).
pub fn kv_cache_bytes(
    a: &ModelArch,
    seqs: u32,
    seq_len: u32,
    dtype: KvDtype,
    engine: Engine,
    ubatch: u32,
) -> f64 {
    kv_cache_bytes_of_layers(a, seqs, seq_len, dtype, engine, ubatch, 0..a.layers)
}

/// [`kv_cache_bytes`] of some layers only: llama.cpp keeps each layer's cache on that layer's
/// device (`llama_kv_cache` constructor: `model.dev_layer(il)` when offloading KV).
pub fn kv_cache_bytes_of_layers(
    a: &ModelArch,
    seqs: u32,
    seq_len: u32,
    dtype: KvDtype,
    engine: Engine,
    ubatch: u32,
    layers: std::ops::Range<u32>,
) -> f64 {
    let per = elements_per_token_layer(a, engine) * dtype.bytes();
    let tokens = f64::from(seqs) * f64::from(seq_len);
    layers
        .map(|l| tokens_per_layer(a, l, tokens, f64::from(seqs), engine, ubatch) * per)
        .sum()
}

/// Bytes of the fixed-size state of `seqs` sequences (state-space and linear-attention blocks),
/// which does not grow with the context and is not quantized with the KV cache. transformers and
/// vLLM hold it in the model's 16-bit dtype (transformers `cache_utils.py`
/// `LinearAttentionLayer.lazy_initialization`: the dtype of the first states); llama.cpp in
/// f32 (`llama_model::create_memory`: `llama_memory_recurrent` with `GGML_TYPE_F32` for r and s).
pub fn state_bytes(a: &ModelArch, seqs: u32, engine: Engine) -> f64 {
    let per = if engine == Engine::LlamaCpp { 4.0 } else { 2.0 };
    a.cache
        .as_ref()
        .map_or(0.0, |c| c.state_elements * f64::from(seqs) * per)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::arch::tests::llama31_8b;
    use crate::units::MIB;

    #[test]
    fn open_llama_mha_kv_matches_llama_cpp() {
        // OpenLLaMA-7B (MHA, 32 layers, 4096 wide): "KV self size = 256.00 MiB" at n_ctx 512
        // and 1024.00 MiB at 2048 (reference rows gt012, gt013).
        let mut a = llama31_8b();
        a.kv_heads = 32;
        assert_eq!(
            kv_cache_bytes(&a, 1, 512, KvDtype::Fp16, Engine::LlamaCpp, 512) / MIB,
            256.0
        );
        assert_eq!(
            kv_cache_bytes(&a, 1, 2048, KvDtype::Fp16, Engine::LlamaCpp, 512) / MIB,
            1024.0
        );
    }

    #[test]
    fn gqa_and_quantized_kv() {
        let a = llama31_8b();
        // 32 layers × 2 × 1024 × 2 B = 128 KiB per token.
        assert_eq!(
            kv_cache_bytes(&a, 1, 8192, KvDtype::Fp16, Engine::Vllm, 512),
            8192.0 * 131072.0
        );
        let q8 = kv_cache_bytes(&a, 1, 8192, KvDtype::Q8_0, Engine::LlamaCpp, 512);
        assert_eq!(q8, 8192.0 * 32.0 * 2048.0 * 34.0 / 32.0);
        let q4 = kv_cache_bytes(&a, 2, 4096, KvDtype::Q4_0, Engine::LlamaCpp, 512);
        assert_eq!(q4, 8192.0 * 32.0 * 2048.0 * 18.0 / 32.0);
    }

    #[test]
    fn sliding_window_caps_local_layers() {
        let mut a = llama31_8b();
        a.layers = 6;
        a.sliding_window = Some(1024);
        a.global_every = Some(6); // Gemma 3: 5 local layers, then 1 global
        let per_layer_token = 2.0 * 1024.0 * 2.0;
        let got = kv_cache_bytes(&a, 1, 32768, KvDtype::Fp16, Engine::Vllm, 512);
        assert_eq!(got, per_layer_token * (5.0 * 1024.0 + 32768.0));
    }

    /// Blocks without a KV cache hold none at any length; their fixed state is per sequence,
    /// 16-bit in transformers and f32 in llama.cpp.
    #[test]
    fn recurrent_blocks_hold_a_fixed_state_instead_of_kv() {
        use crate::types::arch::{BlockCache, CacheLayout};
        let mut a = llama31_8b();
        let mut blocks = vec![BlockCache::None; 32];
        blocks[3] = BlockCache::Full;
        a.cache = Some(CacheLayout {
            blocks,
            state_elements: 1000.0,
        });
        let one_layer = 2.0 * 1024.0 * 2.0;
        let kv = kv_cache_bytes(&a, 2, 4096, KvDtype::Fp16, Engine::Transformers, 1);
        assert_eq!(kv, one_layer * 2.0 * 4096.0);
        assert_eq!(state_bytes(&a, 3, Engine::Transformers), 6000.0);
        assert_eq!(state_bytes(&a, 3, Engine::LlamaCpp), 12000.0);
        assert_eq!(state_bytes(&llama31_8b(), 3, Engine::Vllm), 0.0);
    }
}
