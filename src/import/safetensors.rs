//! safetensors headers: exact parameter counts and bytes per dtype without reading a tensor.
//!
//! Format (huggingface/safetensors `README.md`, "Format"): a little-endian u64 `N`, then `N`
//! bytes of UTF-8 JSON mapping each tensor name to `{dtype, shape, data_offsets: [begin, end]}`
//! (offsets relative to the byte after the header) plus an optional `__metadata__` map, then the
//! data. The reference implementation refuses headers over 100 MB (`MAX_HEADER_SIZE`); so do we.
//! A sharded checkpoint adds `*.safetensors.index.json` with `weight_map: {tensor: shard}`.

use super::reader::{HeaderReader, is_plain_file_name, read_small_text};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

/// `MAX_HEADER_SIZE` of the safetensors crate.
const MAX_HEADER: u64 = 100_000_000;
/// An index.json lists tensor names only; the largest real ones are a few MiB.
const MAX_INDEX: u64 = 64 << 20;

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
pub fn parse_from<R: Read + Seek>(source: R, len: u64, origin: &str) -> Result<Header, String> {
    parse(&mut HeaderReader::new(source, len, origin))
}

/// Parses the header of a safetensors file held by `r` (positioned at its start).
fn parse<R: Read + Seek>(r: &mut HeaderReader<R>) -> Result<Header, String> {
    let n = r.u64("the header length")?;
    if n > MAX_HEADER {
        return Err(r.err(format_args!(
            "header length {n} is over the 100 MB limit (not a safetensors file?)"
        )));
    }
    let raw = r.bytes(n, "the JSON header")?;
    let data_len = r.remaining();
    let json: serde_json::Value = serde_json::from_slice(&raw)
        .map_err(|e| r.err(format_args!("header is not valid JSON: {e}")))?;
    let serde_json::Value::Object(map) = json else {
        return Err(r.err("header is not a JSON object"));
    };
    let mut h = Header::default();
    for (name, v) in map {
        if name == "__metadata__" {
            if let serde_json::Value::Object(m) = v {
                h.metadata = m
                    .into_iter()
                    .filter_map(|(k, v)| v.as_str().map(|s| (k, s.to_string())))
                    .collect();
            }
            continue;
        }
        h.tensors.push(
            entry(&name, &v, data_len).map_err(|e| r.err(format_args!("tensor '{name}': {e}")))?,
        );
    }
    Ok(h)
}

fn entry(name: &str, v: &serde_json::Value, data_len: u64) -> Result<TensorEntry, String> {
    let dtype = v
        .get("dtype")
        .and_then(|d| d.as_str())
        .ok_or("no dtype")?
        .to_string();
    let shape_v = v
        .get("shape")
        .and_then(|s| s.as_array())
        .ok_or("no shape")?;
    let mut shape = Vec::with_capacity(shape_v.len().min(16));
    let mut elements: u64 = 1;
    for d in shape_v {
        let d = d
            .as_u64()
            .ok_or("shape holds something other than a whole number")?;
        elements = elements
            .checked_mul(d)
            .filter(|&e| e < 1 << 62)
            .ok_or("absurd shape")?;
        shape.push(d);
    }
    let offs = v
        .get("data_offsets")
        .and_then(|o| o.as_array())
        .ok_or("no data_offsets")?;
    let (Some(begin), Some(end)) = (
        offs.first().and_then(|x| x.as_u64()),
        offs.get(1).and_then(|x| x.as_u64()),
    ) else {
        return Err("data_offsets must be two whole numbers".into());
    };
    if offs.len() != 2 || begin > end {
        return Err(format!("bad data_offsets [{begin}, {end}]"));
    }
    if end > data_len {
        return Err(format!(
            "data ends at byte {end} of the data section, which has only {data_len} bytes (truncated download?)"
        ));
    }
    let bytes = end - begin;
    if let Some(bits) = dtype_bits(&dtype) {
        let want = elements.checked_mul(bits).map(|b| b.div_ceil(8));
        if want != Some(bytes) {
            return Err(format!(
                "shape {shape:?} of {dtype} needs {} bytes but its offsets span {bytes}",
                want.unwrap_or(u64::MAX)
            ));
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
pub fn read(path: &Path) -> Result<Header, String> {
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
    pub notes: Vec<String>,
}

impl WeightSummary {
    fn add(&mut self, file: PathBuf, h: Header) {
        self.files.push(file);
        for t in h.tensors {
            self.total_bytes += t.bytes;
            *self.bytes_by_dtype.entry(t.dtype.clone()).or_insert(0) += t.bytes;
            self.tensors.push(t);
        }
    }

    /// Model parameters in the files. Quantization side tensors (GPTQ/AWQ `scales`, `qzeros`,
    /// `g_idx`; fp8 `weight_scale(_inv)`; bitsandbytes `SCB`, `absmax`, `quant_map`,
    /// `quant_state`) and non-parameter buffers (`inv_freq`, GPT-2's causal-mask `attn.bias`) are
    /// skipped; packed weights are unpacked: GPTQ/AWQ `qweight` holds 32/bits weights per I32
    /// (AutoGPTQ/AutoAWQ packing), bitsandbytes 4-bit holds 2 weights per U8 byte.
    pub fn params(&self, quant_bits: Option<u32>) -> u64 {
        self.tensors
            .iter()
            .map(|t| param_elements(t, quant_bits))
            .sum()
    }
}

fn param_elements(t: &TensorEntry, quant_bits: Option<u32>) -> u64 {
    const SIDE: [&str; 14] = [
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
        (Some(bits), "I32") if n.ends_with(".qweight") => t.elements * u64::from(32 / bits.max(1)),
        (Some(4), "U8") => t.elements * 2,
        _ => t.elements,
    }
}

/// Reads a `.safetensors` file or a sharded `.safetensors.index.json` with its shards.
pub fn read_any(path: &Path) -> Result<WeightSummary, String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name.to_ascii_lowercase().ends_with(".json") {
        return read_index(path);
    }
    let mut s = WeightSummary::default();
    s.add(path.to_path_buf(), read(path)?);
    Ok(s)
}

/// Reads a sharded checkpoint through its index: every shard's header, checked against the map.
pub fn read_index(path: &Path) -> Result<WeightSummary, String> {
    let shown = path.display();
    let text = read_small_text(path, MAX_INDEX)?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{shown}: not valid JSON: {e}"))?;
    let map = json
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| format!("{shown}: no weight_map (not a safetensors index)"))?;
    let mut shards: Vec<&str> = Vec::new();
    for (tensor, shard) in map {
        let shard = shard
            .as_str()
            .ok_or_else(|| format!("{shown}: weight_map entry '{tensor}' is not a file name"))?;
        if !is_plain_file_name(shard) {
            return Err(format!(
                "{shown}: shard '{shard}' is not a plain file name in the same folder"
            ));
        }
        if !shards.contains(&shard) {
            shards.push(shard);
        }
    }
    if shards.is_empty() {
        return Err(format!("{shown}: weight_map is empty"));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut s = WeightSummary::default();
    for shard in &shards {
        let p = dir.join(shard);
        if !p.is_file() {
            return Err(format!(
                "{shown}: shard {shard} is missing (download every file the index lists)"
            ));
        }
        s.add(p.clone(), read(&p)?);
    }
    let present: std::collections::HashSet<&str> =
        s.tensors.iter().map(|t| t.name.as_str()).collect();
    let missing = map.keys().filter(|k| !present.contains(k.as_str())).count();
    if missing > 0 {
        s.notes.push(format!(
            "{missing} tensors listed in {shown} are in none of its shards"
        ));
    }
    if let Some(total) = json
        .pointer("/metadata/total_size")
        .and_then(|t| t.as_u64())
        && total != s.total_bytes
    {
        s.notes.push(format!(
            "{shown} says total_size {total} but the shards hold {} bytes",
            s.total_bytes
        ));
    }
    Ok(s)
}

/// Looks in a model folder for its weights: `{stem}.safetensors.index.json`, `{stem}.safetensors`,
/// or else a single `*.safetensors` file. `None` when there are none.
pub fn find_in(dir: &Path, stem: &str) -> Result<Option<WeightSummary>, String> {
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
