//! ComfyUI workflows: the UI format the editor saves (`nodes`, `links`, `widgets_values`), the
//! API format the `/prompt` endpoint takes (`{"3": {"class_type": …, "inputs": …}}`), and a PNG
//! that ComfyUI saved with either embedded in its text chunks.
//!
//! Both formats become one graph: node id → class type and named inputs, each input a literal
//! value or a link to another node's output. The UI format stores widget values by position, so
//! naming them needs each node's widget order (`presets/comfyui_nodes.toml`, taken from the
//! nodes' `INPUT_TYPES`); nodes that file does not know keep their links and are reported as
//! not modelled by the planner, never dropped.

pub mod nodes;
mod png_text;
mod ui;

use crate::file_error::FileError;
use crate::import::ImportError;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The largest workflow file read: real workflows are tens to hundreds of KB; a PNG with one
/// embedded is the image plus that. 64 MiB bounds a hostile file without refusing any real one.
pub const MAX_FILE_BYTES: u64 = 64 << 20;
/// Nodes in one workflow: the largest published ones hold a few hundred.
pub const MAX_NODES: usize = 20_000;

/// Which of ComfyUI's formats the workflow came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// The editor's format (`nodes`, `links`, `widgets_values`).
    Ui,
    /// The `/prompt` API format (`{id: {class_type, inputs}}`).
    Api,
}

/// One input of a node: a value typed into a widget, or the output `slot` of node `node`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Input {
    Value(Value),
    Link { node: String, slot: u32 },
}

/// One node of the graph.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Node {
    pub id: String,
    pub class_type: String,
    /// Named inputs; UI-format widgets of a node type the catalog does not know are absent.
    pub inputs: BTreeMap<String, Input>,
    /// UI format: the widget values in order, kept for nodes whose widget names are unknown.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub widgets: Vec<Value>,
}

impl Node {
    pub fn input(&self, name: &str) -> Option<&Input> {
        self.inputs.get(name)
    }

    /// A literal input (not a link).
    pub fn value(&self, name: &str) -> Option<&Value> {
        match self.inputs.get(name)? {
            Input::Value(v) => Some(v),
            Input::Link { .. } => None,
        }
    }

    pub fn text(&self, name: &str) -> Option<&str> {
        self.value(name)?.as_str()
    }

    pub fn link(&self, name: &str) -> Option<(&str, u32)> {
        match self.inputs.get(name)? {
            Input::Link { node, slot } => Some((node.as_str(), *slot)),
            Input::Value(_) => None,
        }
    }
}

/// A workflow read from a file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workflow {
    pub format: Format,
    /// Nodes that run, by id (UI-format nodes that are muted or bypassed are left out and named
    /// in `notes`).
    pub nodes: BTreeMap<String, Node>,
    /// What the reader could not take as it is (muted nodes, subgraphs, values from links).
    pub notes: Vec<crate::types::message::Message>,
}

impl Workflow {
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.get(id)
    }
}

/// Reads a workflow file: UI or API JSON, or a PNG with one embedded (only its chunk headers
/// and text chunks are read). Errors are one line that names the file.
pub fn read(path: &Path) -> Result<Workflow, ImportError> {
    use std::io::{Read, Seek};
    let shown = |e: ImportError| e.within(path);
    let (mut f, len) = crate::input_file::open_regular(path)?;
    let mut sig = [0u8; 8];
    let n = f
        .read(&mut sig)
        .map_err(|e| FileError::io(path, "cannot read", e))?;
    if sig[..n] == png_text::SIGNATURE[..n.min(8)] && n == 8 {
        f.rewind()
            .map_err(|e| FileError::io(path, "cannot read", e))?;
        return png_text::walk(f, len).and_then(from_texts).map_err(shown);
    }
    let data = crate::input_file::read_capped(path, MAX_FILE_BYTES, "a ComfyUI workflow")?;
    parse(&data).map_err(shown)
}

/// A workflow from the bytes of a file (JSON or PNG).
pub fn parse(data: &[u8]) -> Result<Workflow, ImportError> {
    if data.starts_with(png_text::SIGNATURE) {
        return png_text::workflow_texts(data).and_then(from_texts);
    }
    parse_json(data)
}

/// The workflow of a PNG's text chunks. The UI format ("workflow") carries every node's widget
/// values and the links; the API format ("prompt") is what ran. Either is a whole workflow:
/// the UI one is preferred, the other taken when it is missing or unreadable.
fn from_texts(t: png_text::Texts) -> Result<Workflow, ImportError> {
    let mut errors = Vec::new();
    for (key, text) in [("workflow", &t.workflow), ("prompt", &t.prompt)] {
        if let Some(text) = text {
            match parse_json(text.as_bytes()) {
                Ok(w) => return Ok(w),
                Err(e) => errors.push(format!("its '{key}' text chunk: {e}")),
            }
        }
    }
    Err(if errors.is_empty() {
        "a PNG without a ComfyUI workflow: no 'workflow' or 'prompt' text chunk (ComfyUI's SaveImage writes them unless it runs with --disable-metadata)".into()
    } else {
        errors.join("; ").into()
    })
}

fn parse_json(data: &[u8]) -> Result<Workflow, ImportError> {
    let text = std::str::from_utf8(data).map_err(|e| format!("not UTF-8 text: {e}"))?;
    let v: Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(map) = &v else {
        return Err("not a ComfyUI workflow: the JSON is not an object".into());
    };
    if map.get("nodes").is_some_and(Value::is_array) {
        return ui::parse(map);
    }
    // ComfyUI's /prompt body wraps the graph in "prompt".
    if let Some(Value::Object(inner)) = map.get("prompt")
        && inner.values().any(|n| n.get("class_type").is_some())
    {
        return api(inner);
    }
    if !map.is_empty() && map.values().all(|n| n.get("class_type").is_some()) {
        return api(map);
    }
    Err("not a ComfyUI workflow: neither the UI format (a \"nodes\" list) nor the API format (objects with \"class_type\")".into())
}

/// The API format: every node `{"class_type": …, "inputs": {name: value | [node_id, slot]}}`
/// (ComfyUI execution.py validates links as two-element lists of node id and output index).
fn api(map: &serde_json::Map<String, Value>) -> Result<Workflow, ImportError> {
    if map.len() > MAX_NODES {
        return Err(format!(
            "{} nodes is more than any workflow holds (at most {MAX_NODES})",
            map.len()
        )
        .into());
    }
    let mut nodes = BTreeMap::new();
    for (id, n) in map {
        let id_shown = crate::printable::printable_cut(id, 40);
        let class_type = n
            .get("class_type")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("node {id_shown}: \"class_type\" is not a string"))?;
        let mut inputs = BTreeMap::new();
        match n.get("inputs") {
            None | Some(Value::Null) => {}
            Some(Value::Object(ins)) => {
                for (name, v) in ins {
                    inputs.insert(name.clone(), api_input(v));
                }
            }
            Some(_) => return Err(format!("node {id_shown}: \"inputs\" is not an object").into()),
        }
        nodes.insert(
            id.clone(),
            Node {
                id: id.clone(),
                class_type: class_type.to_string(),
                inputs,
                widgets: Vec::new(),
            },
        );
    }
    Ok(Workflow {
        format: Format::Api,
        nodes,
        notes: Vec::new(),
    })
}

fn api_input(v: &Value) -> Input {
    if let Value::Array(a) = v
        && let [from, slot] = a.as_slice()
        && let Some(slot) = slot.as_u64().and_then(|s| u32::try_from(s).ok())
    {
        let node = match from {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        if let Some(node) = node {
            return Input::Link { node, slot };
        }
    }
    Input::Value(v.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_format_links_and_values() {
        let w = parse(br#"{"4":{"class_type":"CheckpointLoaderSimple","inputs":{"ckpt_name":"v1-5-pruned-emaonly.safetensors"}},
            "3":{"class_type":"KSampler","inputs":{"model":["4",0],"steps":20,"cfg":8.0}}}"#)
        .unwrap();
        assert_eq!(w.format, Format::Api);
        let k = w.node("3").unwrap();
        assert_eq!(k.link("model"), Some(("4", 0)));
        assert_eq!(k.value("steps").and_then(Value::as_u64), Some(20));
        // The /prompt request body wraps the same graph.
        let w = parse(br#"{"prompt":{"1":{"class_type":"VAELoader","inputs":{"vae_name":"ae.safetensors"}}},"client_id":"x"}"#).unwrap();
        assert_eq!(
            w.node("1").unwrap().text("vae_name"),
            Some("ae.safetensors")
        );
    }

    #[test]
    fn not_a_workflow_is_one_clear_line() {
        for (bad, needle) in [
            (&b"[1,2]"[..], "not an object"),
            (b"{\"a\":1}", "neither the UI format"),
            (b"\xff\xfe", "not UTF-8"),
            (b"{", "not JSON"),
            (br#"{"1":{"class_type":5}}"#, "class_type"),
            (br#"{"1":{"class_type":"X","inputs":[]}}"#, "inputs"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(needle) && !e.contains('\n'), "{e}");
        }
    }
}
