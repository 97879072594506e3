//! Importing a model from the files people download: a Hugging Face `config.json`, safetensors
//! weights (single file or sharded), a GGUF file, or a diffusers pipeline folder.
//!
//! These files come from the internet, so every parser here reads headers only, bounds each
//! length and count by the file's real size before allocating, and answers a truncated, corrupt
//! or hostile file with a one-line error naming the file and the problem.

pub mod comfy;
pub mod diffusers;
mod error;
pub mod gguf;
mod gguf_model;
pub mod hf_config;
mod hf_count;
mod hf_quant;
mod hf_vision;
mod reader;
pub mod safetensors;

use crate::file_error::FileError;
use crate::printable::printable;
use crate::types::arch::ModelArch;
use crate::types::dtype::WeightFormat;
use crate::types::message::Message;
use crate::types::workload::{FileWeights, LoadedModel};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use diffusers::{DiffusersPipeline, PipelineComponent, import_pipeline};
pub use error::ImportError;

/// Where an imported model's numbers came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceFormat {
    /// A `config.json` alone: parameters counted from the shapes it declares.
    HfConfig,
    /// `config.json` plus safetensors headers: parameters and bytes counted exactly.
    Safetensors,
    /// A GGUF header: architecture from its metadata, sizes from its tensor infos.
    Gguf,
}

/// A model read from its files, with the exact sizes the files declare.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportedModel {
    pub name: String,
    /// `model_type` of the config, or `general.architecture` of a GGUF.
    pub model_type: String,
    pub source: SourceFormat,
    /// The files that were read.
    pub files: Vec<PathBuf>,
    /// The architecture for the engine; `params` is the exact count from the weight files
    /// when they were read, else the count from the config's shapes.
    pub arch: ModelArch,
    /// The storage format the files declare (`quantization_config`, `torch_dtype`, or the GGUF
    /// file type), when it is one the engine models.
    pub weights: Option<WeightFormat>,
    /// Parameters counted from the config's shapes (per-model_type bias/norm conventions).
    pub params_by_shape: Option<u64>,
    /// Parameters counted from the weight files' headers (quantized packings unpacked).
    pub params_in_files: Option<u64>,
    /// Exact bytes of all tensors in the weight files.
    pub weight_bytes: Option<u64>,
    /// Bytes of the weights as the config's `quantization_config` stores them, counted module
    /// by module with their scales and zero points (the files' bytes win when they were read).
    pub config_weight_bytes: Option<u64>,
    /// Bytes per stored type: safetensors dtypes (`BF16`, `I32` …) or ggml types (`Q4_K` …).
    pub weight_bytes_by_dtype: BTreeMap<String, u64>,
    /// GGUF-only facts (file type, where llama.cpp places tensors, KV size).
    pub gguf: Option<gguf_model::GgufSummary>,
    /// Things the user should know: parts not counted, mismatches between files.
    pub notes: Vec<Message>,
}

pub use gguf_model::GgufSummary;

/// The parsers over bytes in memory, for fuzzing and tests: each must answer any input with
/// `Ok` or a one-line `Err`, never a panic, a hang or a huge allocation.
pub mod from_bytes {
    use super::*;
    use std::io::Cursor;

    /// A GGUF file's header and the model it describes.
    pub fn gguf(data: &[u8]) -> Result<ImportedModel, ImportError> {
        let h = gguf::parse_from(Cursor::new(data), data.len() as u64, "input.gguf")?;
        gguf_model::from_header(&h, "input.gguf", "input").map(escaped)
    }

    pub fn safetensors(data: &[u8]) -> Result<safetensors::Header, ImportError> {
        safetensors::parse_from(Cursor::new(data), data.len() as u64, "input.safetensors")
    }

    pub fn hf_config(data: &[u8]) -> Result<ImportedModel, ImportError> {
        let text = std::str::from_utf8(data).map_err(|e| format!("config.json: not UTF-8: {e}"))?;
        hf_config::parse(text, "config.json", "input").map(escaped)
    }

    /// A ComfyUI workflow: UI or API JSON, or a PNG with one embedded.
    pub fn comfy_workflow(data: &[u8]) -> Result<comfy::Workflow, ImportError> {
        comfy::parse(data)
    }

    pub fn model_index(data: &[u8]) -> Result<DiffusersPipeline, ImportError> {
        let text =
            std::str::from_utf8(data).map_err(|e| format!("model_index.json: not UTF-8: {e}"))?;
        diffusers::parse_index(text, "model_index.json", "input")
    }
}

/// The model loader of the workload contract (`crate::resolve::ModelLoader`): a
/// `config.json`, `*.safetensors`, `*.safetensors.index.json`, `*.gguf`, or a folder holding
/// `config.json`.
pub fn load_model(path: &Path) -> Result<LoadedModel, ImportError> {
    let m = import_model(path)?;
    let weights = match (m.weights, m.weight_bytes.or(m.config_weight_bytes)) {
        (Some(format), Some(total)) => Some(FileWeights {
            format,
            total_bytes: total as f64,
            // llama.cpp keeps token_embd in host memory; a tied model (no output.weight) has
            // a copy on the GPU for the output head, so nothing is host-only.
            host_bytes: m.gguf.as_ref().map_or(0.0, |g| {
                if g.output_bytes > 0 {
                    g.token_embd_bytes as f64
                } else {
                    0.0
                }
            }),
        }),
        _ => None,
    };
    Ok(LoadedModel {
        name: m.name,
        arch: m.arch,
        weights,
        format: m.weights,
        notes: m.notes,
    })
}

/// What a path holds: a model, or a diffusers pipeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Imported {
    Model(Box<ImportedModel>),
    Pipeline(DiffusersPipeline),
}

/// Reads whatever `path` is: a model file or folder, or a diffusers pipeline.
pub fn import(path: &Path) -> Result<Imported, ImportError> {
    match kind_of(path)? {
        Kind::Pipeline(p) => import_pipeline(&p).map(|mut p| {
            let esc = |s: &mut String| *s = printable(s).into_owned();
            esc(&mut p.name);
            esc(&mut p.class_name);
            for c in &mut p.components {
                esc(&mut c.name);
                esc(&mut c.library);
                esc(&mut c.class_name);
            }
            Imported::Pipeline(p)
        }),
        k => import_kind(k).map(|m| Imported::Model(Box::new(escaped(m)))),
    }
}

/// Reads a model (not a pipeline) from `path`, with everything the files say.
pub fn import_model(path: &Path) -> Result<ImportedModel, ImportError> {
    import_kind(kind_of(path)?).map(escaped)
}

/// The names a file gave (`general.name`, `model_type`) with their control characters escaped,
/// so a name cannot forge a line of the output or send terminal escapes (`crate::printable`).
fn escaped(mut m: ImportedModel) -> ImportedModel {
    m.name = printable(&m.name).into_owned();
    m.model_type = printable(&m.model_type).into_owned();
    m
}

/// The kinds of input, decided by content where the content can tell and by name otherwise.
enum Kind {
    Config(PathBuf),
    Safetensors(PathBuf),
    SafetensorsIndex(PathBuf),
    Gguf(PathBuf),
    Pipeline(PathBuf),
}

fn kind_of(path: &Path) -> Result<Kind, ImportError> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| FileError::io(path, "cannot read", e))?;
    if meta.is_dir() {
        return dir_kind(path);
    }
    if !meta.is_file() {
        // A pipe or device would block the magic-number sniff below.
        return Err(format!(
            "{shown}: is {}, not a regular file",
            crate::input_file::kind_name(&meta)
        )
        .into());
    }
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if starts_with_gguf_magic(path) {
        return Ok(Kind::Gguf(path.to_path_buf()));
    }
    if name.ends_with(".safetensors") {
        return Ok(Kind::Safetensors(path.to_path_buf()));
    }
    if name.ends_with(".gguf") {
        // Not the GGUF magic: let the GGUF reader say what is wrong.
        return Ok(Kind::Gguf(path.to_path_buf()));
    }
    if name.ends_with(".index.json") {
        return Ok(Kind::SafetensorsIndex(path.to_path_buf()));
    }
    if name == "model_index.json" {
        return Ok(Kind::Pipeline(
            path.parent().unwrap_or(Path::new(".")).to_path_buf(),
        ));
    }
    if name.ends_with(".json") {
        return Ok(Kind::Config(path.to_path_buf()));
    }
    Err(format!(
        "{shown}: not a model file this program reads (config.json, *.safetensors, *.safetensors.index.json, *.gguf, or a model folder)"
    ).into())
}

fn starts_with_gguf_magic(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    crate::input_file::open_regular(path).is_ok_and(|(mut f, _)| f.read_exact(&mut magic).is_ok())
        && &magic == b"GGUF"
}

/// A folder: a Hugging Face model (config.json), a diffusers pipeline (model_index.json), or a
/// folder with exactly one GGUF file.
fn dir_kind(dir: &Path) -> Result<Kind, ImportError> {
    if dir.join("config.json").is_file() {
        return Ok(Kind::Config(dir.join("config.json")));
    }
    if dir.join("model_index.json").is_file() {
        return Ok(Kind::Pipeline(dir.to_path_buf()));
    }
    let ggufs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| FileError::io(dir, "cannot list", e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x.eq_ignore_ascii_case("gguf"))
        })
        .take(2)
        .collect();
    match ggufs.as_slice() {
        [one] => Ok(Kind::Gguf(one.clone())),
        _ => Err(format!(
            "{}: no config.json, model_index.json or single .gguf file in this folder",
            dir.display()
        )
        .into()),
    }
}

fn import_kind(kind: Kind) -> Result<ImportedModel, ImportError> {
    match kind {
        Kind::Config(p) => with_weights(hf_config::read(&p)?, p.parent()),
        Kind::Gguf(p) => gguf_model::import(&p),
        Kind::Safetensors(p) | Kind::SafetensorsIndex(p) => {
            let weights = safetensors::read_any(&p)?;
            let dir = p.parent().unwrap_or(Path::new("."));
            let config = dir.join("config.json");
            if !config.is_file() {
                return Err(format!(
                    "{}: no config.json beside it; the architecture (layers, heads) is not in safetensors files, so download the model's config.json too",
                    p.display()
                ).into());
            }
            let mut m = hf_config::read(&config)?;
            m.apply_weights(weights);
            Ok(m)
        }
        Kind::Pipeline(p) => Err(format!(
            "{}: this is a diffusers pipeline, not a language model (use it as a diffusion workload)",
            p.display()
        ).into()),
    }
}

/// A config.json in a folder that also holds the weights: count them exactly. Weights that
/// cannot be read (a shard still downloading) leave the config's count, with a note.
fn with_weights(mut m: ImportedModel, dir: Option<&Path>) -> Result<ImportedModel, ImportError> {
    let Some(dir) = dir else { return Ok(m) };
    match safetensors::find_in(dir, "model") {
        Ok(Some(weights)) => m.apply_weights(weights),
        Ok(None) => {}
        Err(e) => m
            .notes
            .push(Message::new("import.weights_not_counted").text("error", e.to_string())),
    }
    Ok(m)
}

impl ImportedModel {
    /// Takes the exact counts of the weight files over the config's shape count.
    fn apply_weights(&mut self, w: safetensors::WeightSummary) {
        let counted = w.params(self.quant_bits());
        self.source = SourceFormat::Safetensors;
        self.files.extend(w.files.iter().cloned());
        self.weight_bytes = Some(w.total_bytes);
        self.weight_bytes_by_dtype = w.bytes_by_dtype.clone();
        self.notes.extend(w.notes.iter().cloned());
        if counted > 0 {
            self.params_in_files = Some(counted);
            if let Some(shape) = self.params_by_shape
                && shape != counted
            {
                self.notes.push(
                    Message::new("import.params_differ")
                        .int("files", counted)
                        .int("shapes", shape),
                );
            }
            self.arch.params = counted as f64;
        }
    }

    /// Bits per packed weight of a GPTQ/AWQ/bitsandbytes-4bit model (to unpack I32/U8 tensors).
    fn quant_bits(&self) -> Option<u32> {
        match self.weights? {
            WeightFormat::Gptq4
            | WeightFormat::Awq4
            | WeightFormat::Nf4
            | WeightFormat::Fp4
            | WeightFormat::W4a16
            | WeightFormat::Nvfp4 => Some(4),
            WeightFormat::Gptq8 | WeightFormat::W8a8 => Some(8),
            _ => None,
        }
    }
}
