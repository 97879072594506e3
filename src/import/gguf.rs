//! GGUF header reader (versions 2 and 3): metadata key/values and tensor infos, never the
//! tensor data.
//!
//! Layout from the GGUF specification (ggml `docs/gguf.md`) and `gguf-py/gguf/gguf_reader.py`:
//! magic `GGUF`, u32 version, u64 tensor count, u64 metadata count, the metadata entries
//! (string key, u32 value type, value), the tensor infos (string name, u32 n_dims, u64 dims,
//! u32 ggml type, u64 offset into the data section), then padding to `general.alignment`
//! (default 32) and the data section. Strings are a u64 length and UTF-8 bytes.

use super::reader::{HeaderReader, shown};
use crate::import::ImportError;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{Read, Seek};

/// `GGUF` read as a little-endian u32.
const MAGIC: [u8; 4] = *b"GGUF";
/// Default data alignment (`GGUF_DEFAULT_ALIGNMENT` in ggml `gguf.h`).
const DEFAULT_ALIGNMENT: u64 = 32;
/// ggml's `GGML_MAX_DIMS`.
const MAX_DIMS: u32 = 4;
/// GGUF keys are limited to 65535 bytes by the specification; names stay far below.
const MAX_NAME: u64 = 65_535;
/// Strings longer than this (chat templates are ~10 KiB) are skipped, not kept.
const MAX_KEPT_STRING: u64 = 1 << 20;
/// Integer arrays up to this length are kept (per-layer head counts); longer ones only counted.
const MAX_KEPT_ARRAY: u64 = 4096;
/// Real files hold about 50 metadata entries; 65,536 is far past any of them.
const MAX_METADATA: u64 = 65_536;
/// Real models hold a few thousand tensors at most (DeepSeek-V3 with merged experts: ~1,100;
/// llama.cpp's converters always merge experts), across all their shards together.
pub const MAX_TENSORS: u64 = 100_000;
/// llama.cpp refuses tensor names of `GGML_MAX_NAME` (64) bytes or more (`gguf.cpp`,
/// `gguf_init_from_file_impl`, "tensor name is too long"); forks raise it, so we allow 256.
const MAX_TENSOR_NAME: u64 = 256;
/// What a header may make us keep in memory, all metadata keys, strings and integer arrays
/// together. A real header keeps well under 1 MiB (a chat template is ~10 KiB; tokenizer arrays
/// are only counted); past this, further strings and arrays are skipped (not kept), and keys
/// past it are refused.
const MAX_KEPT_BYTES: u64 = 32 << 20;
/// Arrays of arrays deeper than this are refused (no real file nests them at all).
const MAX_NESTING: u32 = 3;

/// (type id, name, weights per block, bytes per block) of every ggml type a GGUF may hold, from
/// ggml `ggml.c` `type_traits` (mirrored in gguf-py `GGML_QUANT_SIZES`). Ids 4, 5 (removed
/// Q4_2/Q4_3) and 31–33, 36–38 (removed repacked types) are unused.
pub const GGML_TYPES: &[(u32, &str, u64, u64)] = &[
    (0, "F32", 1, 4),
    (1, "F16", 1, 2),
    (2, "Q4_0", 32, 18),
    (3, "Q4_1", 32, 20),
    (6, "Q5_0", 32, 22),
    (7, "Q5_1", 32, 24),
    (8, "Q8_0", 32, 34),
    (9, "Q8_1", 32, 36),
    (10, "Q2_K", 256, 84),
    (11, "Q3_K", 256, 110),
    (12, "Q4_K", 256, 144),
    (13, "Q5_K", 256, 176),
    (14, "Q6_K", 256, 210),
    (15, "Q8_K", 256, 292),
    (16, "IQ2_XXS", 256, 66),
    (17, "IQ2_XS", 256, 74),
    (18, "IQ3_XXS", 256, 98),
    (19, "IQ1_S", 256, 50),
    (20, "IQ4_NL", 32, 18),
    (21, "IQ3_S", 256, 110),
    (22, "IQ2_S", 256, 82),
    (23, "IQ4_XS", 256, 136),
    (24, "I8", 1, 1),
    (25, "I16", 1, 2),
    (26, "I32", 1, 4),
    (27, "I64", 1, 8),
    (28, "F64", 1, 8),
    (29, "IQ1_M", 256, 56),
    (30, "BF16", 1, 2),
    (34, "TQ1_0", 256, 54),
    (35, "TQ2_0", 256, 66),
    (39, "MXFP4", 32, 17),
];

/// The name and block layout of a ggml type id, if known.
pub fn ggml_type(id: u32) -> Option<(&'static str, u64, u64)> {
    GGML_TYPES
        .iter()
        .find(|t| t.0 == id)
        .map(|&(_, n, b, s)| (n, b, s))
}

/// A metadata value. Long strings and arrays are not kept, only their length.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MetaValue {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    /// A string too long to keep (its length in bytes).
    LongStr {
        skipped_string_bytes: u64,
    },
    /// An array: its length, and its values when they are integers or booleans and few.
    Array {
        len: u64,
        values: Vec<i64>,
    },
}

impl MetaValue {
    /// The value as a non-negative integer, if it is one.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            MetaValue::Uint(v) => Some(v),
            MetaValue::Int(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            MetaValue::Float(v) => Some(v),
            MetaValue::Uint(v) => Some(v as f64),
            MetaValue::Int(v) => Some(v as f64),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            MetaValue::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// One tensor info. `bytes` is exact for known types; for an unknown type it is the span up to
/// the next tensor (or the end of the data), and `type_name` is `type<ID>`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorInfo {
    pub name: String,
    pub dims: Vec<u64>,
    pub type_id: u32,
    pub type_name: String,
    pub offset: u64,
    pub elements: u64,
    pub bytes: u64,
}

/// What a GGUF header holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GgufHeader {
    pub version: u32,
    pub metadata: BTreeMap<String, MetaValue>,
    pub tensors: Vec<TensorInfo>,
    pub alignment: u64,
    /// Offset of the data section in the file.
    pub data_start: u64,
    pub file_len: u64,
}

impl GgufHeader {
    pub fn get(&self, key: &str) -> Option<&MetaValue> {
        self.metadata.get(key)
    }

    /// Total bytes of the tensors. The sum cannot wrap: `parse` refuses a header whose tensors
    /// hold more bytes than its file or more elements than `u64` counts, and `gguf_model::import`
    /// checks the same over all shards (`check_sums`).
    pub fn tensor_bytes(&self) -> u64 {
        self.tensors
            .iter()
            .fold(0u64, |a, t| a.saturating_add(t.bytes))
    }

    /// Total elements (parameters) of the tensors.
    pub fn elements(&self) -> u64 {
        self.tensors
            .iter()
            .fold(0u64, |a, t| a.saturating_add(t.elements))
    }

    /// Refuses tensors whose bytes or elements add up past what a `u64` holds, or whose bytes
    /// pass `max_bytes` (the data the files really have): a header claiming that is corrupt,
    /// and a wrapped sum would be a plausible, wrong parameter count.
    pub fn check_sums(&self, max_bytes: u64) -> Result<(), ImportError> {
        let mut bytes = 0u64;
        let mut elements = 0u64;
        for t in &self.tensors {
            bytes = bytes
                .checked_add(t.bytes)
                .ok_or("tensor sizes add up past 2^64 bytes (corrupt header)")?;
            elements = elements
                .checked_add(t.elements)
                .ok_or("tensor shapes add up past 2^64 elements (corrupt header)")?;
        }
        if bytes > max_bytes {
            return Err(format!(
                "the tensors claim {bytes} bytes but the data holds only {max_bytes} (tensors overlap or the file is truncated; corrupt header?)"
            ).into());
        }
        Ok(())
    }

    /// Tensor bytes per ggml type name (`Q4_K` → bytes).
    pub fn bytes_by_type(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for t in &self.tensors {
            let sum: &mut u64 = m.entry(t.type_name.clone()).or_insert(0);
            *sum = sum.saturating_add(t.bytes);
        }
        m
    }
}

/// Reads a GGUF header from a file on disk.
pub fn read(path: &std::path::Path) -> Result<GgufHeader, ImportError> {
    let mut r = super::reader::open(path)?;
    parse(&mut r)
}

/// Parses a GGUF header from any seekable source of `len` bytes (a file, memory); `origin`
/// names it in errors.
pub fn parse_from<R: Read + Seek>(
    source: R,
    len: u64,
    origin: &str,
) -> Result<GgufHeader, ImportError> {
    parse(&mut HeaderReader::new(source, len, origin))
}

/// Parses a GGUF header; `r` must be at the start of the file.
fn parse<R: Read + Seek>(r: &mut HeaderReader<R>) -> Result<GgufHeader, ImportError> {
    let magic = r.u32("the magic number")?.to_le_bytes();
    if magic != MAGIC {
        return Err(r
            .err("not a GGUF file (the first 4 bytes are not 'GGUF')")
            .into());
    }
    let version = r.u32("the version")?;
    match version {
        2 | 3 => {}
        1 => {
            return Err(r
                .err("GGUF version 1 is not supported (re-convert it with a current llama.cpp)")
                .into());
        }
        v if v.swap_bytes() <= 3 => {
            return Err(r.err("big-endian GGUF files are not supported").into());
        }
        v => {
            return Err(r
                .err(format_args!(
                    "GGUF version {v} is unknown (versions 2 and 3 are supported)"
                ))
                .into());
        }
    }
    let n_tensors = r.u64("the tensor count")?;
    let n_kv = r.u64("the metadata count")?;
    // Each metadata entry takes at least 13 bytes (key length, type, one-byte value) and each
    // tensor info at least 24 (name length, n_dims, type, offset): counts past that are lies.
    if n_kv > r.remaining() / 13 {
        return Err(r
            .err(format_args!(
                "metadata count {n_kv} cannot fit in a {}-byte file (corrupt header)",
                r.len()
            ))
            .into());
    }
    if n_tensors > r.remaining() / 24 {
        return Err(r
            .err(format_args!(
                "tensor count {n_tensors} cannot fit in a {}-byte file (corrupt header)",
                r.len()
            ))
            .into());
    }
    // Counts a big file could hold but no model has: refused so memory stays bounded.
    if n_kv > MAX_METADATA {
        return Err(r
            .err(format_args!(
                "{n_kv} metadata entries: more than any model has (at most {MAX_METADATA})"
            ))
            .into());
    }
    if n_tensors > MAX_TENSORS {
        return Err(r
            .err(format_args!(
                "{n_tensors} tensors: more than any model has (at most {MAX_TENSORS})"
            ))
            .into());
    }
    let mut metadata = BTreeMap::new();
    let mut budget = MAX_KEPT_BYTES;
    for i in 0..n_kv {
        let key = string(r, MAX_NAME, &format!("metadata key #{i}"))?;
        budget = budget.checked_sub(key.len() as u64 + 64).ok_or_else(|| {
            r.err(format_args!(
                "the metadata keys alone pass {} MiB: more than any model has (corrupt header?)",
                MAX_KEPT_BYTES >> 20
            ))
        })?;
        let label = shown(&key);
        let ty = r.u32(&format!("the type of {label}"))?;
        let value = value(r, ty, &label, 0, &mut budget)?;
        metadata.insert(key, value);
    }
    let alignment = match metadata.get("general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some(v) => match v.as_u64() {
            Some(a) if a.is_power_of_two() && a <= 1 << 20 => a,
            _ => return Err(r.err("general.alignment must be a power of two").into()),
        },
    };
    let mut tensors = Vec::with_capacity(n_tensors.min(4096) as usize);
    for i in 0..n_tensors {
        tensors.push(tensor_info(r, i)?);
    }
    let data_start = r.pos().div_ceil(alignment).saturating_mul(alignment);
    let file_len = r.len();
    size_tensors(&mut tensors, data_start, file_len, alignment).map_err(|e| r.err(e))?;
    let h = GgufHeader {
        version,
        metadata,
        tensors,
        alignment,
        data_start,
        file_len,
    };
    h.check_sums(file_len.saturating_sub(data_start))
        .map_err(|e| r.err(e))?;
    Ok(h)
}

/// A u64-length-prefixed string of at most `max` bytes.
fn string<R: Read + Seek>(
    r: &mut HeaderReader<R>,
    max: u64,
    what: &str,
) -> Result<String, ImportError> {
    let n = r.u64(&format!("the length of {what}"))?;
    if n > max {
        return Err(r
            .err(format_args!(
                "{what} claims {n} bytes (at most {max} allowed; corrupt header?)"
            ))
            .into());
    }
    let bytes = r.bytes(n, what)?;
    String::from_utf8(bytes).map_err(|_| r.err(format_args!("{what} is not valid UTF-8")).into())
}

/// Size in bytes of a fixed-size value type, `None` for strings and arrays.
fn scalar_size(ty: u32) -> Option<u64> {
    match ty {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}

/// One metadata value; what is kept (strings, short integer arrays) is taken from `budget`, and
/// skipped instead once the budget is spent.
fn value<R: Read + Seek>(
    r: &mut HeaderReader<R>,
    ty: u32,
    key: &str,
    depth: u32,
    budget: &mut u64,
) -> Result<MetaValue, ImportError> {
    Ok(match ty {
        0 => MetaValue::Uint(r.u8(key)?.into()),
        1 => MetaValue::Int((r.u8(key)? as i8).into()),
        2 => MetaValue::Uint(r.u16(key)?.into()),
        3 => MetaValue::Int((r.u16(key)? as i16).into()),
        4 => MetaValue::Uint(r.u32(key)?.into()),
        5 => MetaValue::Int((r.u32(key)? as i32).into()),
        6 => MetaValue::Float(f32::from_bits(r.u32(key)?).into()),
        7 => MetaValue::Bool(r.u8(key)? != 0),
        8 => {
            let n = r.u64(&format!("the length of {key}"))?;
            if n > MAX_KEPT_STRING || n > *budget {
                r.skip(n, key)?;
                MetaValue::LongStr {
                    skipped_string_bytes: n,
                }
            } else {
                let b = r.bytes(n, key)?;
                *budget -= n;
                MetaValue::Str(String::from_utf8_lossy(&b).into_owned())
            }
        }
        9 => array(r, key, depth, budget)?,
        10 => MetaValue::Uint(r.u64(key)?),
        11 => MetaValue::Int(r.u64(key)? as i64),
        12 => MetaValue::Float(f64::from_bits(r.u64(key)?)),
        t => {
            return Err(r
                .err(format_args!(
                    "metadata {key} has unknown value type {t} (corrupt header?)"
                ))
                .into());
        }
    })
}

fn array<R: Read + Seek>(
    r: &mut HeaderReader<R>,
    key: &str,
    depth: u32,
    budget: &mut u64,
) -> Result<MetaValue, ImportError> {
    if depth >= MAX_NESTING {
        return Err(r
            .err(format_args!(
                "metadata {key} nests arrays more than {MAX_NESTING} deep"
            ))
            .into());
    }
    let elem = r.u32(&format!("the element type of {key}"))?;
    let len = r.u64(&format!("the length of {key}"))?;
    match scalar_size(elem) {
        Some(size) => {
            // Bound the count by the bytes left before touching any element.
            let total = len.checked_mul(size).filter(|&t| t <= r.remaining());
            let Some(total) = total else {
                return Err(r
                    .err(format_args!(
                        "metadata {key} claims {len} elements, more than the file holds"
                    ))
                    .into());
            };
            let integral = !matches!(elem, 6 | 12);
            if integral && len <= MAX_KEPT_ARRAY && len * 8 <= *budget {
                *budget -= len * 8;
                let mut values = Vec::with_capacity(len as usize);
                for _ in 0..len {
                    match value(r, elem, key, depth + 1, budget)? {
                        MetaValue::Uint(v) => values.push(i64::try_from(v).unwrap_or(i64::MAX)),
                        MetaValue::Int(v) => values.push(v),
                        MetaValue::Bool(b) => values.push(b.into()),
                        _ => {}
                    }
                }
                Ok(MetaValue::Array { len, values })
            } else {
                r.skip(total, key)?;
                Ok(MetaValue::Array {
                    len,
                    values: Vec::new(),
                })
            }
        }
        None => {
            // Strings (8 bytes of length at least) or nested arrays (12 bytes at least).
            let min = if elem == 8 { 8 } else { 12 };
            if len > r.remaining() / min {
                return Err(r
                    .err(format_args!(
                        "metadata {key} claims {len} elements, more than the file holds"
                    ))
                    .into());
            }
            for _ in 0..len {
                match elem {
                    8 => {
                        let n = r.u64(&format!("a string length in {key}"))?;
                        r.skip(n, key)?;
                    }
                    9 => {
                        array(r, key, depth + 1, budget)?;
                    }
                    t => {
                        return Err(r
                            .err(format_args!("metadata {key} has unknown element type {t}"))
                            .into());
                    }
                }
            }
            Ok(MetaValue::Array {
                len,
                values: Vec::new(),
            })
        }
    }
}

fn tensor_info<R: Read + Seek>(r: &mut HeaderReader<R>, i: u64) -> Result<TensorInfo, ImportError> {
    let name = string(r, MAX_TENSOR_NAME, &format!("the name of tensor #{i}"))?;
    let label = shown(&name);
    let n_dims = r.u32(&format!("the dimension count of {label}"))?;
    if n_dims > MAX_DIMS {
        return Err(r
            .err(format_args!(
                "tensor {label} has {n_dims} dimensions (at most {MAX_DIMS})"
            ))
            .into());
    }
    let mut dims = Vec::with_capacity(n_dims as usize);
    let mut elements: u64 = 1;
    for _ in 0..n_dims {
        let d = r.u64(&format!("a dimension of {label}"))?;
        elements = elements
            .checked_mul(d)
            .filter(|&e| e < 1 << 62)
            .ok_or_else(|| r.err(format_args!("tensor {label} has an absurd shape")))?;
        dims.push(d);
    }
    let type_id = r.u32(&format!("the type of {label}"))?;
    let offset = r.u64(&format!("the data offset of {label}"))?;
    let (type_name, bytes) = match ggml_type(type_id) {
        Some((tn, block, size)) => {
            let first = dims.first().copied().unwrap_or(1);
            if first % block != 0 {
                return Err(r.err(format_args!("tensor {label} of type {tn}: row length {first} is not a multiple of the block size {block}")).into());
            }
            (tn.to_string(), (elements / block) * size)
        }
        None => (format!("type{type_id}"), 0),
    };
    Ok(TensorInfo {
        name,
        dims,
        type_id,
        type_name,
        offset,
        elements,
        bytes,
    })
}

/// Checks every tensor lies inside the data section and sizes the unknown-type ones from the
/// offsets (sorted, the span to the next tensor, which includes alignment padding).
fn size_tensors(
    tensors: &mut [TensorInfo],
    data_start: u64,
    file_len: u64,
    alignment: u64,
) -> Result<(), ImportError> {
    let data_len = file_len.saturating_sub(data_start);
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    order.sort_by_key(|&i| tensors[i].offset);
    for (k, &i) in order.iter().enumerate() {
        let next = order.get(k + 1).map_or(data_len, |&j| tensors[j].offset);
        let t = &mut tensors[i];
        if !t.offset.is_multiple_of(alignment) {
            return Err(format!(
                "tensor {} starts at offset {}, not a multiple of the alignment {alignment} (corrupt header)",
                shown(&t.name),
                t.offset
            ).into());
        }
        if ggml_type(t.type_id).is_none() {
            t.bytes = next.saturating_sub(t.offset);
        }
        let end = t.offset.saturating_add(t.bytes);
        if end > data_len {
            return Err(format!(
                "tensor {} needs data up to byte {} but the file has {file_len} bytes (truncated download?)",
                shown(&t.name),
                data_start.saturating_add(end)
            ).into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_table_matches_the_engine_block_layouts() {
        // The engine's GgmlType and this table describe the same ggml types.
        for id in 0..64 {
            if let Some(t) = crate::types::dtype::GgmlType::from_id(id) {
                let (_, block, size) = ggml_type(id).expect("engine type missing here");
                assert_eq!(
                    (u64::from(t.block().0), u64::from(t.block().1)),
                    (block, size),
                    "type {id}"
                );
            }
        }
        assert_eq!(ggml_type(12), Some(("Q4_K", 256, 144)));
        assert_eq!(ggml_type(4), None);
    }
}
