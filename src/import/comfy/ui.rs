//! The UI format (what the editor saves and embeds as `workflow`): `nodes` with their socket
//! `inputs` (each naming the link that feeds it) and positional `widgets_values`, and `links`
//! as `[id, origin_id, origin_slot, target_id, target_slot, type]` (litegraph's serialisation,
//! schema 0.4) or as objects with those names (ComfyUI_frontend schema version 1).
//!
//! Node `mode` 2 is "never" (muted: the node and what only it feeds do not run) and 4 is
//! "bypass" (its inputs pass on to its outputs of the same type), as the frontend turns the
//! graph into a prompt (ComfyUI_frontend `graphToPrompt`). Reroutes pass their input on.

use super::nodes::{self, Role};
use super::{Format, Input, MAX_NODES, Node, Workflow};
use crate::import::ImportError;
use crate::printable::printable_cut;
use crate::types::message::Message;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

const MUTED: u64 = 2;
const BYPASS: u64 = 4;

struct Raw<'a> {
    class: String,
    mode: u64,
    /// Socket inputs: name, type, link id, whether it is a converted widget.
    inputs: Vec<(String, String, Option<u64>, bool)>,
    widgets: &'a Value,
}

fn id_of(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// A link's origin and type.
struct Link {
    from: String,
    slot: u32,
    kind: String,
}

fn links(map: &Map<String, Value>) -> Result<BTreeMap<u64, Link>, ImportError> {
    let mut out = BTreeMap::new();
    let Some(list) = map.get("links") else {
        return Ok(out);
    };
    let list = list.as_array().ok_or("\"links\" is not a list")?;
    for (i, l) in list.iter().enumerate() {
        let field = |idx: usize, name: &str| match l {
            Value::Array(a) => a.get(idx).cloned(),
            Value::Object(o) => o.get(name).cloned(),
            _ => None,
        };
        let bad = || format!("link {i} is not [id, origin, slot, target, slot, type]");
        let id = field(0, "id").and_then(|v| v.as_u64()).ok_or_else(bad)?;
        let from = field(1, "origin_id")
            .as_ref()
            .and_then(id_of)
            .ok_or_else(bad)?;
        let slot = field(2, "origin_slot")
            .and_then(|v| v.as_u64())
            .and_then(|s| u32::try_from(s).ok())
            .ok_or_else(bad)?;
        let kind = field(5, "type")
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        out.insert(id, Link { from, slot, kind });
    }
    Ok(out)
}

pub fn parse(map: &Map<String, Value>) -> Result<Workflow, ImportError> {
    let list = map
        .get("nodes")
        .and_then(Value::as_array)
        .ok_or("\"nodes\" is not a list")?;
    if list.len() > MAX_NODES {
        return Err(format!(
            "{} nodes is more than any workflow holds (at most {MAX_NODES})",
            list.len()
        )
        .into());
    }
    let links = links(map)?;
    let mut notes = Vec::new();
    let mut raw: BTreeMap<String, Raw> = BTreeMap::new();
    for (i, n) in list.iter().enumerate() {
        let id = n
            .get("id")
            .and_then(id_of)
            .ok_or_else(|| format!("node {i} has no id"))?;
        let class = n
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("node {} has no \"type\"", printable_cut(&id, 40)))?
            .to_string();
        let mut inputs = Vec::new();
        if let Some(ins) = n.get("inputs").and_then(Value::as_array) {
            for s in ins {
                let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
                let kind = s.get("type").and_then(Value::as_str).unwrap_or_default();
                let link = s.get("link").and_then(Value::as_u64);
                inputs.push((
                    name.to_string(),
                    kind.to_string(),
                    link,
                    s.get("widget").is_some(),
                ));
            }
        }
        raw.insert(
            id,
            Raw {
                class,
                mode: n.get("mode").and_then(Value::as_u64).unwrap_or(0),
                inputs,
                widgets: n.get("widgets_values").unwrap_or(&Value::Null),
            },
        );
    }
    if map
        .get("definitions")
        .and_then(|d| d.get("subgraphs"))
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty())
    {
        notes.push(Message::new("warn.workflow.subgraphs"));
    }
    let mut nodes = BTreeMap::new();
    for (id, r) in &raw {
        let shown = printable_cut(id, 40);
        let class_shown = printable_cut(&r.class, 60);
        if r.mode == MUTED || r.mode == BYPASS {
            let id = if r.mode == MUTED {
                "warn.workflow.muted"
            } else {
                "warn.workflow.bypassed"
            };
            notes.push(
                Message::new(id)
                    .text("node", shown)
                    .text("class", class_shown),
            );
            continue;
        }
        let ty = nodes::get(&r.class);
        if ty.is_some_and(|t| t.role == Role::Frontend) {
            continue;
        }
        let mut inputs = BTreeMap::new();
        let widget_names: &[String] = ty.map_or(&[], |t| t.widgets.as_slice());
        match r.widgets {
            Value::Array(vals) if !widget_names.is_empty() => {
                if vals.len() != widget_names.len() {
                    notes.push(
                        Message::new("warn.workflow.widget_count")
                            .text("node", shown.clone())
                            .text("class", class_shown.clone())
                            .int("values", vals.len() as u64)
                            .int("widgets", widget_names.len() as u64),
                    );
                }
                for (name, v) in widget_names.iter().zip(vals) {
                    inputs.insert(name.clone(), Input::Value(v.clone()));
                }
            }
            // Some nodes (VideoHelperSuite …) save their widgets by name.
            Value::Object(o) => {
                for (k, v) in o {
                    inputs.insert(k.clone(), Input::Value(v.clone()));
                }
            }
            _ => {}
        }
        for (name, kind, link, is_widget) in &r.inputs {
            let Some(link) = link else { continue };
            let Some((from, slot)) = resolve(&raw, &links, *link, kind, 0) else {
                continue;
            };
            // A widget fed by a primitive keeps the value the primitive copied into it.
            let from_primitive = raw.get(&from).is_some_and(|f| f.class == "PrimitiveNode");
            if *is_widget && from_primitive && inputs.contains_key(name) {
                continue;
            }
            if *is_widget && inputs.contains_key(name) {
                notes.push(
                    Message::new("warn.workflow.computed_input")
                        .text("node", shown.clone())
                        .text("class", class_shown.clone())
                        .text("input", printable_cut(name, 40))
                        .text("from", printable_cut(&from, 40)),
                );
            }
            inputs.insert(name.clone(), Input::Link { node: from, slot });
        }
        let widgets = match (r.widgets, widget_names.is_empty()) {
            (Value::Array(v), true) => v.clone(),
            _ => Vec::new(),
        };
        nodes.insert(
            id.clone(),
            Node {
                id: id.clone(),
                class_type: r.class.clone(),
                inputs,
                widgets,
            },
        );
    }
    Ok(Workflow {
        format: Format::Ui,
        nodes,
        notes,
    })
}

/// The node and slot a link really comes from, through reroutes and bypassed nodes; `None`
/// when it comes from a muted node or nowhere.
fn resolve(
    raw: &BTreeMap<String, Raw>,
    links: &BTreeMap<u64, Link>,
    link: u64,
    kind: &str,
    depth: usize,
) -> Option<(String, u32)> {
    let l = links.get(&link)?;
    if depth > raw.len() {
        return None; // a cycle of reroutes
    }
    let from = raw.get(&l.from)?;
    let kind = if l.kind.is_empty() { kind } else { &l.kind };
    if from.class == "Reroute" {
        let up = from.inputs.iter().find_map(|i| i.2)?;
        return resolve(raw, links, up, kind, depth + 1);
    }
    match from.mode {
        MUTED => None,
        BYPASS => {
            let up = from
                .inputs
                .iter()
                .find(|i| i.1 == kind && i.2.is_some())
                .and_then(|i| i.2)?;
            resolve(raw, links, up, kind, depth + 1)
        }
        _ => Some((l.from.clone(), l.slot)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse as parse_any;
    use super::*;

    #[test]
    fn widgets_by_position_links_through_reroutes_and_bypassed_loras() {
        let w = parse_any(br#"{"nodes":[
            {"id":4,"type":"CheckpointLoaderSimple","mode":0,"outputs":[],"widgets_values":["sd_xl_base_1.0.safetensors"]},
            {"id":10,"type":"LoraLoader","mode":4,"inputs":[{"name":"model","type":"MODEL","link":1},{"name":"clip","type":"CLIP","link":2}],"widgets_values":["x.safetensors",1,1]},
            {"id":11,"type":"Reroute","mode":0,"inputs":[{"name":"","type":"*","link":3}]},
            {"id":3,"type":"KSampler","mode":0,"inputs":[{"name":"model","type":"MODEL","link":4},
                {"name":"seed","type":"INT","link":6,"widget":{"name":"seed"}}],
              "widgets_values":[42,"randomize",25,7.5,"euler","normal",1]},
            {"id":12,"type":"PrimitiveNode","mode":0,"widgets_values":[42,"fixed"]},
            {"id":13,"type":"MyCustomNode","mode":0,"widgets_values":[1,2]},
            {"id":14,"type":"VAEDecode","mode":2}
          ],
          "links":[[1,4,0,10,0,"MODEL"],[2,4,1,10,1,"CLIP"],[3,10,0,11,0,"MODEL"],[4,11,0,3,0,"MODEL"],
                   {"id":6,"origin_id":12,"origin_slot":0,"target_id":3,"target_slot":1,"type":"INT"}]}"#)
        .unwrap();
        let k = w.node("3").unwrap();
        assert_eq!(k.value("steps").and_then(Value::as_u64), Some(25));
        assert_eq!(k.value("cfg").and_then(Value::as_f64), Some(7.5));
        assert_eq!(k.value("seed").and_then(Value::as_u64), Some(42));
        // Reroute → bypassed LoRA → the checkpoint's MODEL output.
        assert_eq!(k.link("model"), Some(("4", 0)));
        assert!(w.node("10").is_none() && w.node("11").is_none() && w.node("14").is_none());
        assert!(w.notes.iter().any(|n| n.to_string().contains("bypassed")));
        assert!(w.notes.iter().any(|n| n.to_string().contains("muted")));
        // An unknown node keeps its raw widgets.
        assert_eq!(w.node("13").unwrap().widgets.len(), 2);
    }

    #[test]
    fn malformed_ui_workflows_are_refused() {
        for (bad, needle) in [
            (r#"{"nodes":[{"type":"KSampler"}]}"#, "no id"),
            (r#"{"nodes":[{"id":1}]}"#, "no \"type\""),
            (r#"{"nodes":[],"links":[[1,2]]}"#, "link 0"),
            (r#"{"nodes":[],"links":5}"#, "not a list"),
        ] {
            let e = parse_any(bad.as_bytes()).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }
}
