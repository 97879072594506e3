//! safetensors headers: exact parameter counts and bytes per dtype without reading a tensor.
//!
//! Format (huggingface/safetensors `README.md`, "Format"): a little-endian u64 `N`, then `N`
//! bytes of UTF-8 JSON mapping each tensor name to `{dtype, shape, data_offsets: [begin, end]}`
//! (offsets relative to the byte after the header) plus an optional `__metadata__` map, then the
//! data. The reference implementation refuses headers over 100 MB (`MAX_HEADER_SIZE`); so do we.
//! A sharded checkpoint adds `*.safetensors.index.json` with `weight_map: {tensor: shard}`.

use super::reader::{HeaderReader, is_plain_file_name, read_small_text, shown};
use crate::import::ImportError;
use crate::types::message::Message;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

/// `MAX_HEADER_SIZE` of the safetensors crate.
const MAX_HEADER: u64 = 100_000_000;
/// An index.json lists tensor names only; the largest real ones are a few MiB (DeepSeek-V3's,
/// 91k tensors: 8.6 MB).
const MAX_INDEX: u64 = 32 << 20;
/// Tensors of one model, all shards together. Real checkpoints hold at most about a hundred
/// thousand (DeepSeek-V3 with every expert a tensor: ~91k); past this a header is refused before
/// more entries are kept, so memory stays bounded whatever a header claims.
pub const MAX_TENSORS: usize = 250_000;

/// Bits per element of each safetensors dtype (safetensors `Dtype::bitsize`).
fn dtype_bits(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "F4" => 4,
        "F6_E2M3" | "F6_E3M2" => 6,
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" | "F8_E8M0" => 8,
        "I16" | "U16" | "F16" | "BF16" => 16,
        "I32" | "U32" | "F32" => 32,
        "I64" | "U64" | "F64" | "C64" => 64,
        _ => return None,
    })
}

/// One tensor entry of a header.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorEntry {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    pub elements: u64,
    pub bytes: u64,
}

/// A parsed header of one file.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Header {
    pub tensors: Vec<TensorEntry>,
    pub metadata: BTreeMap<String, String>,
}

/// Parses a safetensors header from any seekable source of `len` bytes; `origin` names it in
/// errors.
pub fn parse_from<R: Read + Seek>(
    source: R,
    len: u64,
    origin: &str,
) -> Result<Header, ImportError> {
    parse(&mut HeaderReader::new(source, len, origin))
}

/// Parses the header of a safetensors file held by `r` (positioned at its start).
fn parse<R: Read + Seek>(r: &mut HeaderReader<R>) -> Result<Header, ImportError> {
    let n = r.u64("the header length")?;
    if n > MAX_HEADER {
        return Err(r
            .err(format_args!(
                "header length {n} is over the 100 MB limit (not a safetensors file?)"
            ))
            .into());
    }
    let raw = r.bytes(n, "the JSON header")?;
    let data_len = r.remaining();
    let RawHeader { tensors, metadata } = serde_json::from_slice(&raw).map_err(|e| {
        r.err(format_args!(
            "header is not a valid safetensors header: {e}"
        ))
    })?;
    drop(raw);
    let mut h = Header {
        tensors: Vec::with_capacity(tensors.len()),
        metadata,
    };
    let mut bytes = 0u64;
    for (name, raw) in tensors {
        let t = entry(&name, raw, data_len)
            .map_err(|e| r.err(format_args!("tensor {}: {e}", shown(&name))))?;
        // The reference implementation requires the tensors to tile the data without overlap
        // (safetensors `Metadata::validate`); their bytes can at least not add up past it.
        bytes = bytes.saturating_add(t.bytes);
        h.tensors.push(t);
    }
    if bytes > data_len {
        return Err(r.err(format_args!(
            "the tensors claim {bytes} bytes but the data section holds {data_len} (overlapping tensors; corrupt header)"
        )).into());
    }
    Ok(h)
}

/// At most this many numbers in a shape or offsets list (real tensors have up to 5 dimensions),
/// so the parsed header stays proportional to its text.
const MAX_DIMS: usize = 16;

/// The header as stored: tensor entries in file order, and `__metadata__`.
struct RawHeader {
    tensors: Vec<(String, RawEntry)>,
    metadata: BTreeMap<String, String>,
}

/// One entry; unknown fields are skipped unread.
#[derive(Deserialize)]
struct RawEntry {
    dtype: Option<String>,
    shape: Option<Dims>,
    data_offsets: Option<Dims>,
}

/// A list of whole numbers, refused past `MAX_DIMS` entries.
struct Dims(Vec<u64>);

impl<'de> Deserialize<'de> for Dims {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Dims;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "a list of at most {MAX_DIMS} whole numbers")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Dims, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = seq.next_element::<u64>()? {
                    if v.len() == MAX_DIMS {
                        return Err(de::Error::custom(format!("more than {MAX_DIMS} numbers")));
                    }
                    v.push(x);
                }
                Ok(Dims(v))
            }
        }
        d.deserialize_seq(V)
    }
}

impl<'de> Deserialize<'de> for RawHeader {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawHeader;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object of tensor entries")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawHeader, A::Error> {
                let mut h = RawHeader {
                    tensors: Vec::new(),
                    metadata: BTreeMap::new(),
                };
                while let Some(key) = map.next_key::<String>()? {
                    if key == "__metadata__" {
                        // A map of strings (safetensors `Metadata`); other values are skipped.
                        let m: BTreeMap<String, MaybeStr> = map.next_value()?;
                        h.metadata = m
                            .into_iter()
                            .filter_map(|(k, v)| v.0.map(|s| (k, s)))
                            .collect();
                    } else {
                        if h.tensors.len() == MAX_TENSORS {
                            return Err(de::Error::custom(format!(
                                "more than {MAX_TENSORS} tensors, more than any model has"
                            )));
                        }
                        let e = map.next_value::<RawEntry>().map_err(|e| {
                            de::Error::custom(format!("tensor {}: {e}", shown(&key)))
                        })?;
                        h.tensors.push((key, e));
                    }
                }
                Ok(h)
            }
        }
        d.deserialize_map(V)
    }
}

/// An index's `weight_map` (tensor → shard file), refused past `MAX_TENSORS` entries.
struct WeightMap(BTreeMap<String, String>);

impl<'de> Deserialize<'de> for WeightMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WeightMap;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of tensor names to shard files")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WeightMap, A::Error> {
                let mut m = BTreeMap::new();
                while let Some((k, v)) = map.next_entry::<String, String>()? {
                    if m.len() == MAX_TENSORS {
                        return Err(de::Error::custom(format!(
                            "weight_map lists more than {MAX_TENSORS} tensors, more than any model has"
                        )));
                    }
                    m.insert(k, v);
                }
                Ok(WeightMap(m))
            }
        }
        d.deserialize_map(V)
    }
}

/// A string, or any other JSON value skipped unread.
struct MaybeStr(Option<String>);

impl<'de> Deserialize<'de> for MaybeStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeStr;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<MaybeStr, E> {
                Ok(MaybeStr(Some(s.to_string())))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<MaybeStr, E> {
                Ok(MaybeStr(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<MaybeStr, E> {
                Ok(MaybeStr(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<MaybeStr, E> {
                Ok(MaybeStr(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<MaybeStr, E> {
                Ok(MaybeStr(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<MaybeStr, E> {
                Ok(MaybeStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MaybeStr, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybeStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MaybeStr, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MaybeStr(None))
            }
        }
        d.deserialize_any(V)
    }
}

fn entry(name: &str, raw: RawEntry, data_len: u64) -> Result<TensorEntry, ImportError> {
    let dtype = raw.dtype.ok_or("no dtype")?;
    let shape = raw.shape.ok_or("no shape")?.0;
    let mut elements: u64 = 1;
    for &d in &shape {
        elements = elements
            .checked_mul(d)
            .filter(|&e| e < 1 << 62)
            .ok_or("absurd shape")?;
    }
    let offs = raw.data_offsets.ok_or("no data_offsets")?.0;
    let [begin, end] = offs[..] else {
        return Err("data_offsets must be two whole numbers".into());
    };
    if begin > end {
        return Err(format!("bad data_offsets [{begin}, {end}]").into());
    }
    if end > data_len {
        return Err(format!(
            "data ends at byte {end} of the data section, which has only {data_len} bytes (truncated download?)"
        ).into());
    }
    let bytes = end - begin;
    if let Some(bits) = dtype_bits(&dtype) {
        let want = elements.checked_mul(bits).map(|b| b.div_ceil(8));
        if want != Some(bytes) {
            return Err(format!(
                "shape {shape:?} of {dtype} needs {} bytes but its offsets span {bytes}",
                want.unwrap_or(u64::MAX)
            )
            .into());
        }
    }
    Ok(TensorEntry {
        name: name.to_string(),
        dtype,
        shape,
        elements,
        bytes,
    })
}

/// Reads the header of one safetensors file.
pub fn read(path: &Path) -> Result<Header, ImportError> {
    let mut r = super::reader::open(path)?;
    parse(&mut r)
}

/// Everything the weight files of one model say, summed over shards.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct WeightSummary {
    pub files: Vec<PathBuf>,
    pub tensors: Vec<TensorEntry>,
    pub total_bytes: u64,
    pub bytes_by_dtype: BTreeMap<String, u64>,
    pub notes: Vec<Message>,
}

impl WeightSummary {
    /// Adds one file's tensors; refuses a model past `MAX_TENSORS` tensors or whose sizes add
    /// up past what a `u64` holds (a wrapped sum would look like a plausible size).
    fn add(&mut self, file: PathBuf, h: Header) -> Result<(), ImportError> {
        let shown = file.display().to_string();
        if self.tensors.len() + h.tensors.len() > MAX_TENSORS {
            return Err(format!(
                "{shown}: the files hold more than {MAX_TENSORS} tensors together, more than any model has"
            ).into());
        }
        let overflow = || format!("{shown}: tensor sizes add up past 2^64 (corrupt header)");
        let mut elements = self.tensors.iter().map(|t| t.elements).sum::<u64>();
        for t in h.tensors {
            self.total_bytes = self.total_bytes.checked_add(t.bytes).ok_or_else(overflow)?;
            elements = elements.checked_add(t.elements).ok_or_else(overflow)?;
            let by = self.bytes_by_dtype.entry(t.dtype.clone()).or_insert(0);
            *by = by.checked_add(t.bytes).ok_or_else(overflow)?;
            self.tensors.push(t);
        }
        self.files.push(file);
        Ok(())
    }

    /// Model parameters in the files. Quantization side tensors (GPTQ/AWQ `scales`, `qzeros`,
    /// `g_idx`; fp8 `weight_scale(_inv)`; bitsandbytes `SCB`, `absmax`, `quant_map`,
    /// `quant_state`) and non-parameter buffers (`inv_freq`, GPT-2's causal-mask `attn.bias`) are
    /// skipped; packed weights are unpacked: GPTQ/AWQ `qweight` holds 32/bits weights per I32
    /// (AutoGPTQ/AutoAWQ packing), bitsandbytes 4-bit holds 2 weights per U8 byte.
    pub fn params(&self, quant_bits: Option<u32>) -> u64 {
        // Each element count is below 2^62 and their sum below 2^64 (`add`); only the unpacking
        // factor (at most 8) could pass it, and then the sum stops at u64::MAX, never wraps.
        self.tensors
            .iter()
            .fold(0u64, |a, t| a.saturating_add(param_elements(t, quant_bits)))
    }
}

fn param_elements(t: &TensorEntry, quant_bits: Option<u32>) -> u64 {
    const SIDE: [&str; 19] = [
        // compressed-tensors (`weight_zero_point`, `weight_shape`, `weight_global_scale`,
        // `input_global_scale`) and ModelOpt (`weight_scale_2`).
        "_zero_point",
        ".weight_shape",
        "_global_scale",
        ".weight_scale_2",
        ".weight_g_idx",
        ".qzeros",
        ".scales",
        ".g_idx",
        "_scale_inv",
        ".weight_scale",
        ".input_scale",
        ".k_scale",
        ".v_scale",
        ".SCB",
        ".weight_format",
        ".absmax",
        ".quant_map",
        ".inv_freq",
        ".masked_bias",
    ];
    let n = &t.name;
    if SIDE.iter().any(|s| n.ends_with(s)) || n.contains(".quant_state.") {
        return 0;
    }
    // GPT-2 stores its causal mask as `h.N.attn.bias` of shape [1, 1, n_ctx, n_ctx].
    if n.ends_with(".attn.bias") && t.shape.len() == 4 {
        return 0;
    }
    match (quant_bits, t.dtype.as_str()) {
        (Some(bits), "I32") if n.ends_with(".qweight") || n.ends_with(".weight_packed") => {
            t.elements.saturating_mul(u64::from(32 / bits.max(1)))
        }
        (Some(4), "U8") => t.elements.saturating_mul(2),
        _ => t.elements,
    }
}

/// Reads a `.safetensors` file or a sharded `.safetensors.index.json` with its shards.
pub fn read_any(path: &Path) -> Result<WeightSummary, ImportError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name.to_ascii_lowercase().ends_with(".json") {
        return read_index(path);
    }
    let mut s = WeightSummary::default();
    s.add(path.to_path_buf(), read(path)?)?;
    Ok(s)
}

/// Reads a sharded checkpoint through its index: every shard's header, checked against the map.
pub fn read_index(path: &Path) -> Result<WeightSummary, ImportError> {
    /// The parts of an index we use; other fields are skipped unread.
    #[derive(Deserialize)]
    struct Index {
        weight_map: Option<WeightMap>,
        metadata: Option<IndexMeta>,
    }
    #[derive(Deserialize)]
    struct IndexMeta {
        total_size: Option<serde_json::Number>,
    }
    let origin = path.display();
    let text = read_small_text(path, MAX_INDEX)?;
    let index: Index = serde_json::from_str(&text)
        .map_err(|e| format!("{origin}: not a safetensors index: {e}"))?;
    let map = index
        .weight_map
        .ok_or_else(|| format!("{origin}: no weight_map (not a safetensors index)"))?
        .0;
    let mut shards: Vec<&str> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for shard in map.values() {
        if !is_plain_file_name(shard) {
            return Err(format!(
                "{origin}: shard {} is not a plain file name in the same folder",
                shown(shard)
            )
            .into());
        }
        if seen.insert(shard.as_str()) {
            shards.push(shard);
        }
    }
    if shards.is_empty() {
        return Err(format!("{origin}: weight_map is empty").into());
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut s = WeightSummary::default();
    for shard in &shards {
        let p = dir.join(shard);
        if !p.is_file() {
            return Err(format!(
                "{origin}: shard {shard} is missing (download every file the index lists)"
            )
            .into());
        }
        s.add(p.clone(), read(&p)?)?;
    }
    let present: std::collections::HashSet<&str> =
        s.tensors.iter().map(|t| t.name.as_str()).collect();
    let missing = map.keys().filter(|k| !present.contains(k.as_str())).count();
    if missing > 0 {
        s.notes.push(
            Message::new("import.safetensors.missing_tensors")
                .int("missing", missing as u64)
                .text("index", origin.to_string()),
        );
    }
    if let Some(total) = index
        .metadata
        .and_then(|m| m.total_size)
        .and_then(|t| t.as_u64())
        && total != s.total_bytes
    {
        s.notes.push(
            Message::new("import.safetensors.total_size")
                .text("index", origin.to_string())
                .int("total", total)
                .int("held", s.total_bytes),
        );
    }
    Ok(s)
}

/// Looks in a model folder for its weights: `{stem}.safetensors.index.json`, `{stem}.safetensors`,
/// or else a single `*.safetensors` file. `None` when there are none.
pub fn find_in(dir: &Path, stem: &str) -> Result<Option<WeightSummary>, ImportError> {
    let index = dir.join(format!("{stem}.safetensors.index.json"));
    if index.is_file() {
        return read_index(&index).map(Some);
    }
    let single = dir.join(format!("{stem}.safetensors"));
    if single.is_file() {
        return read_any(&single).map(Some);
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .take(2)
        .collect();
    match found.as_slice() {
        [one] => read_any(one).map(Some),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, dtype: &str, shape: &[u64]) -> TensorEntry {
        let elements = shape.iter().product();
        TensorEntry {
            name: name.into(),
            dtype: dtype.into(),
            shape: shape.to_vec(),
            elements,
            bytes: 0,
        }
    }

    #[test]
    fn gptq_packing_is_unpacked_and_side_tensors_skipped() {
        let qweight = t(
            "model.layers.0.mlp.up_proj.qweight",
            "I32",
            &[4096 / 8, 14336],
        );
        assert_eq!(param_elements(&qweight, Some(4)), 4096 * 14336);
        assert_eq!(param_elements(&qweight, None), 512 * 14336);
        assert_eq!(
            param_elements(
                &t("model.layers.0.mlp.up_proj.scales", "F16", &[32, 14336]),
                Some(4)
            ),
            0
        );
        assert_eq!(
            param_elements(&t("h.0.attn.bias", "F32", &[1, 1, 1024, 1024]), None),
            0
        );
        assert_eq!(
            param_elements(&t("h.0.attn.c_attn.bias", "F32", &[2304]), None),
            2304
        );
        let fp8_scale = t(
            "model.layers.0.mlp.experts.0.up_proj.weight_scale_inv",
            "F32",
            &[16, 56],
        );
        assert_eq!(param_elements(&fp8_scale, None), 0);
    }
}
