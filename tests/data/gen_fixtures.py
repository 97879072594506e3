#!/usr/bin/env python3
"""Writes the GGUF and safetensors fixtures with the reference Python packages (pip install gguf
safetensors numpy) and, beside each, what those packages' own readers make of it
(*.expected.json), so tests/import.rs checks the Rust readers against the reference ones.
Run from the repository root: python3 tests/data/gen_fixtures.py"""
import json
import os

import numpy as np
from gguf import GGUFReader, GGUFWriter, GGMLQuantizationType, quants
from safetensors import safe_open
from safetensors.numpy import save_file

OUT = "tests/data"
rng = np.random.default_rng(0)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def expected_gguf(path):
    r = GGUFReader(path)
    by_type = {}
    for t in r.tensors:
        by_type[t.tensor_type.name] = by_type.get(t.tensor_type.name, 0) + int(t.n_bytes)
    return {
        "tensor_count": len(r.tensors),
        "params": int(sum(int(t.n_elements) for t in r.tensors)),
        "bytes_by_type": by_type,
        "tensor_bytes": int(sum(int(t.n_bytes) for t in r.tensors)),
    }


def finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def add_q(w, name, arr, qtype):
    if qtype == GGMLQuantizationType.F32:
        w.add_tensor(name, arr)
    elif qtype == GGMLQuantizationType.F16:
        w.add_tensor(name, arr.astype(np.float16))
    else:
        w.add_tensor(name, quants.quantize(arr, qtype), raw_dtype=qtype)


def tiny_llama():
    path = f"{OUT}/gguf/tiny-llama-q8_0.gguf"
    h, ff, vocab, layers = 64, 128, 32, 2
    w = GGUFWriter(path, "llama")
    w.add_name("tiny llama")
    w.add_file_type(7)  # LLAMA_FTYPE_MOSTLY_Q8_0
    w.add_block_count(layers)
    w.add_context_length(512)
    w.add_embedding_length(h)
    w.add_feed_forward_length(ff)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_rope_dimension_count(16)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"tok{i}" for i in range(vocab)])
    q8 = GGMLQuantizationType.Q8_0
    add_q(w, "token_embd.weight", rand(vocab, h), q8)
    for l in range(layers):
        add_q(w, f"blk.{l}.attn_norm.weight", rand(h), GGMLQuantizationType.F32)
        add_q(w, f"blk.{l}.attn_q.weight", rand(h, h), q8)
        add_q(w, f"blk.{l}.attn_k.weight", rand(32, h), q8)
        add_q(w, f"blk.{l}.attn_v.weight", rand(32, h), q8)
        add_q(w, f"blk.{l}.attn_output.weight", rand(h, h), q8)
        add_q(w, f"blk.{l}.ffn_norm.weight", rand(h), GGMLQuantizationType.F32)
        add_q(w, f"blk.{l}.ffn_gate.weight", rand(ff, h), q8)
        add_q(w, f"blk.{l}.ffn_up.weight", rand(ff, h), q8)
        add_q(w, f"blk.{l}.ffn_down.weight", rand(h, ff), q8)
    add_q(w, "output_norm.weight", rand(h), GGMLQuantizationType.F32)
    add_q(w, "output.weight", rand(vocab, h), GGMLQuantizationType.F16)
    finish(w)
    return path


def tiny_qwen2moe():
    """Experts stored as 3-D tensors, a shared expert, tied output (no output.weight)."""
    path = f"{OUT}/gguf/tiny-qwen2moe-f16.gguf"
    h, ff, eff, n_exp, vocab = 32, 64, 16, 4, 40
    w = GGUFWriter(path, "qwen2moe")
    w.add_name("tiny qwen2moe")
    w.add_file_type(1)  # LLAMA_FTYPE_MOSTLY_F16
    w.add_block_count(1)
    w.add_context_length(1024)
    w.add_embedding_length(h)
    w.add_feed_forward_length(ff)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_expert_count(n_exp)
    w.add_expert_used_count(2)
    w.add_expert_feed_forward_length(eff)
    w.add_expert_shared_feed_forward_length(2 * eff)
    w.add_vocab_size(vocab)
    f16, f32 = GGMLQuantizationType.F16, GGMLQuantizationType.F32
    add_q(w, "token_embd.weight", rand(vocab, h), f16)
    add_q(w, "blk.0.attn_norm.weight", rand(h), f32)
    for n in ("q", "k", "v"):
        add_q(w, f"blk.0.attn_{n}.weight", rand(h, h), f16)
        add_q(w, f"blk.0.attn_{n}.bias", rand(h), f32)
    add_q(w, "blk.0.attn_output.weight", rand(h, h), f16)
    add_q(w, "blk.0.ffn_norm.weight", rand(h), f32)
    add_q(w, "blk.0.ffn_gate_inp.weight", rand(n_exp, h), f16)
    add_q(w, "blk.0.ffn_gate_exps.weight", rand(n_exp, eff, h), f16)
    add_q(w, "blk.0.ffn_up_exps.weight", rand(n_exp, eff, h), f16)
    add_q(w, "blk.0.ffn_down_exps.weight", rand(n_exp, h, eff), f16)
    add_q(w, "blk.0.ffn_gate_inp_shexp.weight", rand(1, h), f16)
    add_q(w, "blk.0.ffn_gate_shexp.weight", rand(2 * eff, h), f16)
    add_q(w, "blk.0.ffn_up_shexp.weight", rand(2 * eff, h), f16)
    add_q(w, "blk.0.ffn_down_shexp.weight", rand(h, 2 * eff), f16)
    add_q(w, "output_norm.weight", rand(h), f32)
    finish(w)
    return path


def tiny_qwen2_safetensors():
    """A 2-layer Qwen2 (q/k/v biases, tied head) in two shards with an index, F16 + F32."""
    d = f"{OUT}/safetensors/tiny-qwen2"
    h, kv, ff, vocab, layers = 32, 16, 64, 50, 2
    config = {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": h,
        "intermediate_size": ff, "num_hidden_layers": layers, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": vocab, "max_position_embeddings": 256,
        "tie_word_embeddings": True, "torch_dtype": "float16", "use_sliding_window": False,
    }
    with open(f"{d}/config.json", "w") as f:
        json.dump(config, f, indent=2)
    shards = [{"model.embed_tokens.weight": rand(vocab, h).astype(np.float16)}, {}]
    for l in range(layers):
        p = f"model.layers.{l}."
        t = {
            p + "input_layernorm.weight": rand(h),
            p + "post_attention_layernorm.weight": rand(h),
            p + "self_attn.q_proj.weight": rand(h, h).astype(np.float16),
            p + "self_attn.q_proj.bias": rand(h).astype(np.float16),
            p + "self_attn.k_proj.weight": rand(kv, h).astype(np.float16),
            p + "self_attn.k_proj.bias": rand(kv).astype(np.float16),
            p + "self_attn.v_proj.weight": rand(kv, h).astype(np.float16),
            p + "self_attn.v_proj.bias": rand(kv).astype(np.float16),
            p + "self_attn.o_proj.weight": rand(h, h).astype(np.float16),
            p + "mlp.gate_proj.weight": rand(ff, h).astype(np.float16),
            p + "mlp.up_proj.weight": rand(ff, h).astype(np.float16),
            p + "mlp.down_proj.weight": rand(h, ff).astype(np.float16),
        }
        shards[l].update(t)
    shards[1]["model.norm.weight"] = rand(h)
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    weight_map, total, params, by_dtype = {}, 0, 0, {}
    for name, tensors in zip(names, shards):
        save_file(tensors, f"{d}/{name}", metadata={"format": "pt"})
        with safe_open(f"{d}/{name}", framework="numpy") as f:
            for k in f.keys():
                s = f.get_slice(k)
                n = int(np.prod(s.get_shape()))
                size = n * (2 if s.get_dtype() == "F16" else 4)
                params += n
                total += size
                by_dtype[s.get_dtype()] = by_dtype.get(s.get_dtype(), 0) + size
                weight_map[k] = name
    with open(f"{d}/model.safetensors.index.json", "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    with open(f"{d}/expected.json", "w") as f:
        json.dump({"params": params, "total_bytes": total, "bytes_by_dtype": by_dtype}, f, indent=2)


def fuzz_seeds():
    """Small valid files for the fuzzers' corpus (fuzz/corpus)."""
    os.makedirs("fuzz/corpus/gguf", exist_ok=True)
    os.makedirs("fuzz/corpus/safetensors", exist_ok=True)
    w = GGUFWriter("fuzz/corpus/gguf/min-gemma2.gguf", "gemma2")
    w.add_block_count(1)
    w.add_embedding_length(32)
    w.add_feed_forward_length(64)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_sliding_window(16)
    w.add_vocab_size(4)
    w.add_tensor("token_embd.weight", rand(4, 32).astype(np.float16))
    w.add_tensor("blk.0.attn_k.weight", quants.quantize(rand(16, 32), GGMLQuantizationType.Q8_0),
                 raw_dtype=GGMLQuantizationType.Q8_0)
    finish(w)
    save_file({"a": rand(2, 3), "b": rand(4).astype(np.float16)}, "fuzz/corpus/safetensors/min.safetensors",
              metadata={"format": "pt"})


fuzz_seeds()
for p in (tiny_llama(), tiny_qwen2moe()):
    with open(p.replace(".gguf", ".expected.json"), "w") as f:
        json.dump(expected_gguf(p), f, indent=2)
tiny_qwen2_safetensors()
