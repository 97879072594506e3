//! Writers for tiny GGUF and safetensors files, byte by byte, so the import tests and the fuzz
//! seeds need no downloads. Layouts as in `src/import/gguf.rs` and `src/import/safetensors.rs`.
#![allow(dead_code)]

pub mod hostile;

use std::io::Write;
use std::path::Path;

/// A GGUF metadata value.
#[derive(Clone, Debug)]
pub enum Val {
    U32(u32),
    I32(i32),
    U64(u64),
    F32(f32),
    Bool(bool),
    Str(String),
    ArrI32(Vec<i32>),
    ArrStr(Vec<String>),
}

impl Val {
    fn type_id(&self) -> u32 {
        match self {
            Val::U32(_) => 4,
            Val::I32(_) => 5,
            Val::F32(_) => 6,
            Val::Bool(_) => 7,
            Val::Str(_) => 8,
            Val::ArrI32(_) | Val::ArrStr(_) => 9,
            Val::U64(_) => 10,
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Val::U32(v) => out.extend(v.to_le_bytes()),
            Val::I32(v) => out.extend(v.to_le_bytes()),
            Val::U64(v) => out.extend(v.to_le_bytes()),
            Val::F32(v) => out.extend(v.to_le_bytes()),
            Val::Bool(v) => out.push(u8::from(*v)),
            Val::Str(s) => put_str(out, s),
            Val::ArrI32(a) => {
                out.extend(5u32.to_le_bytes());
                out.extend((a.len() as u64).to_le_bytes());
                for v in a {
                    out.extend(v.to_le_bytes());
                }
            }
            Val::ArrStr(a) => {
                out.extend(8u32.to_le_bytes());
                out.extend((a.len() as u64).to_le_bytes());
                for s in a {
                    put_str(out, s);
                }
            }
        }
    }
}

pub fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

/// (weights per block, bytes per block) of the ggml types the tests use (ggml-common.h).
pub fn ggml_block(type_id: u32) -> (u64, u64) {
    match type_id {
        0 => (1, 4),
        1 | 30 => (1, 2),
        2 => (32, 18),
        8 => (32, 34),
        12 => (256, 144),
        14 => (256, 210),
        19 => (256, 50),
        39 => (32, 17),
        _ => panic!("test writer: unknown type {type_id}"),
    }
}

/// A tensor info: name, dims (ne0 first), ggml type id.
#[derive(Clone, Debug)]
pub struct Tensor {
    pub name: String,
    pub dims: Vec<u64>,
    pub type_id: u32,
}

impl Tensor {
    pub fn new(name: &str, dims: &[u64], type_id: u32) -> Self {
        Tensor {
            name: name.into(),
            dims: dims.to_vec(),
            type_id,
        }
    }

    /// Saturating, so hostile shapes can still be written.
    pub fn elements(&self) -> u64 {
        self.dims.iter().fold(1u64, |a, &d| a.saturating_mul(d))
    }

    pub fn bytes(&self) -> u64 {
        let (b, s) = ggml_block(self.type_id);
        (self.elements() / b).saturating_mul(s)
    }
}

/// A GGUF file under construction.
#[derive(Clone, Debug)]
pub struct Gguf {
    pub version: u32,
    pub kv: Vec<(String, Val)>,
    pub tensors: Vec<Tensor>,
}

pub const ALIGN: u64 = 32;

impl Gguf {
    pub fn new() -> Self {
        Gguf {
            version: 3,
            kv: Vec::new(),
            tensors: Vec::new(),
        }
    }

    pub fn kv(mut self, k: &str, v: Val) -> Self {
        self.kv.push((k.into(), v));
        self
    }

    pub fn tensor(mut self, name: &str, dims: &[u64], type_id: u32) -> Self {
        self.tensors.push(Tensor::new(name, dims, type_id));
        self
    }

    /// Offsets of the tensors in the data section (each aligned) and the section's length.
    pub fn layout(&self) -> (Vec<u64>, u64) {
        let mut offs = Vec::new();
        let mut at = 0u64;
        for t in &self.tensors {
            offs.push(at);
            at = at
                .saturating_add(t.bytes())
                .div_ceil(ALIGN)
                .saturating_mul(ALIGN);
        }
        (offs, at)
    }

    /// The header bytes, padded to the alignment (the data section starts right after).
    pub fn header(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(b"GGUF");
        out.extend(self.version.to_le_bytes());
        out.extend((self.tensors.len() as u64).to_le_bytes());
        out.extend((self.kv.len() as u64).to_le_bytes());
        for (k, v) in &self.kv {
            put_str(&mut out, k);
            out.extend(v.type_id().to_le_bytes());
            v.write(&mut out);
        }
        let (offs, _) = self.layout();
        for (t, off) in self.tensors.iter().zip(offs) {
            put_str(&mut out, &t.name);
            out.extend((t.dims.len() as u32).to_le_bytes());
            for d in &t.dims {
                out.extend(d.to_le_bytes());
            }
            out.extend(t.type_id.to_le_bytes());
            out.extend(off.to_le_bytes());
        }
        let pad = (out.len() as u64).div_ceil(ALIGN) * ALIGN - out.len() as u64;
        out.extend(std::iter::repeat_n(0u8, pad as usize));
        out
    }

    /// Header plus a zero-filled data section, in memory (small models only).
    pub fn bytes(&self) -> Vec<u8> {
        let mut b = self.header();
        let (_, data) = self.layout();
        b.resize(b.len() + data as usize, 0);
        b
    }

    /// Writes the header and extends the file to its full size without writing the data
    /// (a sparse file: multi-GB models cost no disk).
    pub fn write_sparse(&self, path: &Path) {
        let h = self.header();
        let (_, data) = self.layout();
        let mut f = std::fs::File::create(path).unwrap();
        f.write_all(&h).unwrap();
        f.set_len(h.len() as u64 + data).unwrap();
    }
}

/// A tiny Llama-style GGUF: `layers` blocks of width 256 (K-quant rows need multiples of 256),
/// Q4_K_M-like types, 300 tokens.
pub fn tiny_llama(layers: u32) -> Gguf {
    let (h, ff, vocab) = (256u64, 512u64, 300u64);
    let mut g = Gguf::new()
        .kv("general.architecture", Val::Str("llama".into()))
        .kv("general.name", Val::Str("Tiny Llama".into()))
        .kv("general.file_type", Val::U32(15))
        .kv("llama.block_count", Val::U32(layers))
        .kv("llama.context_length", Val::U32(2048))
        .kv("llama.embedding_length", Val::U32(h as u32))
        .kv("llama.feed_forward_length", Val::U32(ff as u32))
        .kv("llama.attention.head_count", Val::U32(4))
        .kv("llama.attention.head_count_kv", Val::U32(2))
        .kv("llama.rope.freq_base", Val::F32(500000.0))
        .kv(
            "tokenizer.ggml.tokens",
            Val::ArrStr((0..vocab).map(|i| format!("t{i}")).collect()),
        )
        .tensor("token_embd.weight", &[h, vocab], 12);
    for l in 0..layers {
        let b = |s: &str| format!("blk.{l}.{s}.weight");
        g = g
            .tensor(&b("attn_norm"), &[h], 0)
            .tensor(&b("attn_q"), &[h, h], 12)
            .tensor(&b("attn_k"), &[h, 128], 12)
            .tensor(&b("attn_v"), &[h, 128], 14)
            .tensor(&b("attn_output"), &[h, h], 12)
            .tensor(&b("ffn_norm"), &[h], 0)
            .tensor(&b("ffn_gate"), &[h, ff], 12)
            .tensor(&b("ffn_up"), &[h, ff], 12)
            .tensor(&b("ffn_down"), &[ff, h], 14);
    }
    g.tensor("output_norm.weight", &[h], 0)
        .tensor("output.weight", &[h, vocab], 14)
}

/// A safetensors file under construction: (name, dtype, shape, bytes per element ×8 = bits).
#[derive(Clone, Debug, Default)]
pub struct Safetensors {
    pub tensors: Vec<(String, String, Vec<u64>)>,
}

pub fn dtype_bits(dtype: &str) -> u64 {
    match dtype {
        "BF16" | "F16" => 16,
        "F32" | "I32" => 32,
        "U8" | "I8" | "F8_E4M3" => 8,
        _ => panic!("test writer: dtype {dtype}"),
    }
}

impl Safetensors {
    pub fn add(mut self, name: &str, dtype: &str, shape: &[u64]) -> Self {
        self.tensors
            .push((name.into(), dtype.into(), shape.to_vec()));
        self
    }

    pub fn data_len(&self) -> u64 {
        self.tensors
            .iter()
            .map(|(_, d, s)| s.iter().product::<u64>() * dtype_bits(d) / 8)
            .sum()
    }

    /// The 8-byte length and the JSON header.
    pub fn header(&self) -> Vec<u8> {
        let mut map = serde_json::Map::new();
        map.insert("__metadata__".into(), serde_json::json!({"format": "pt"}));
        let mut at = 0u64;
        for (name, dtype, shape) in &self.tensors {
            let n = shape.iter().product::<u64>() * dtype_bits(dtype) / 8;
            map.insert(
                name.clone(),
                serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [at, at + n]}),
            );
            at += n;
        }
        let json = serde_json::to_vec(&serde_json::Value::Object(map)).unwrap();
        let mut out = (json.len() as u64).to_le_bytes().to_vec();
        out.extend(json);
        out
    }

    pub fn bytes(&self) -> Vec<u8> {
        let mut b = self.header();
        b.resize(b.len() + self.data_len() as usize, 0);
        b
    }

    pub fn write_sparse(&self, path: &Path) {
        let h = self.header();
        let mut f = std::fs::File::create(path).unwrap();
        f.write_all(&h).unwrap();
        f.set_len(h.len() as u64 + self.data_len()).unwrap();
    }
}

/// The tensors of a Llama-architecture checkpoint as transformers names and shapes them
/// (`LlamaForCausalLM.state_dict()`), `[out, in]` like `nn.Linear.weight`.
pub fn llama_checkpoint(
    layers: u64,
    h: u64,
    kv: u64,
    ff: u64,
    vocab: u64,
    dtype: &str,
) -> Safetensors {
    let mut s = Safetensors::default().add("model.embed_tokens.weight", dtype, &[vocab, h]);
    for l in 0..layers {
        let p = |x: &str| format!("model.layers.{l}.{x}");
        s = s
            .add(&p("input_layernorm.weight"), dtype, &[h])
            .add(&p("self_attn.q_proj.weight"), dtype, &[h, h])
            .add(&p("self_attn.k_proj.weight"), dtype, &[kv, h])
            .add(&p("self_attn.v_proj.weight"), dtype, &[kv, h])
            .add(&p("self_attn.o_proj.weight"), dtype, &[h, h])
            .add(&p("post_attention_layernorm.weight"), dtype, &[h])
            .add(&p("mlp.gate_proj.weight"), dtype, &[ff, h])
            .add(&p("mlp.up_proj.weight"), dtype, &[ff, h])
            .add(&p("mlp.down_proj.weight"), dtype, &[h, ff]);
    }
    s.add("model.norm.weight", dtype, &[h])
        .add("lm_head.weight", dtype, &[vocab, h])
}

/// An SMBIOS Type 17 "Memory Device" structure of SMBIOS 3.3 (0x5C bytes; DSP0134 §7.18) with
/// its strings (device and bank locator, each left out when empty): `size_mib` 0 is an empty slot, 0x7FFF says "see
/// Extended Size"; `mts` is both the rated and the configured speed.
pub fn smbios_type17(
    size_mib: u16,
    mem_type: u8,
    mts: u16,
    width: u16,
    device: &str,
    bank: &str,
) -> Vec<u8> {
    let mut s = vec![0u8; 0x5C];
    s[0] = 17;
    s[1] = 0x5C;
    s[0x0A..0x0C].copy_from_slice(&width.to_le_bytes());
    s[0x0C..0x0E].copy_from_slice(&size_mib.to_le_bytes());
    s[0x12] = mem_type;
    s[0x15..0x17].copy_from_slice(&mts.to_le_bytes());
    s[0x20..0x22].copy_from_slice(&mts.to_le_bytes());
    // Strings are numbered from 1 in the order written; an empty one is index 0, not written
    // (DSP0134 §6.1.3: a string set holds no empty strings).
    let mut strings = Vec::new();
    for (at, text) in [(0x10, device), (0x11, bank)] {
        if !text.is_empty() {
            strings.extend_from_slice(text.as_bytes());
            strings.push(0);
            s[at] = (strings.iter().filter(|&&b| b == 0).count()) as u8;
        }
    }
    if strings.is_empty() {
        strings.push(0);
    }
    s.extend_from_slice(&strings);
    s.push(0);
    s
}

/// The SMBIOS end-of-table structure (Type 127).
pub fn smbios_end() -> Vec<u8> {
    vec![127, 4, 0, 0, 0, 0]
}
