//! Walks a workflow's links the way its values flow: a sampler's MODEL back to its loader
//! (through LoRAs and model patches), its LATENT back to the node that made it (through
//! upscales and repeats, giving the size each pass runs at), and its conditioning back to the
//! text encoders and ControlNets it uses.

use crate::import::comfy::nodes::{self, Role};
use crate::import::comfy::{Node, Workflow};
use crate::types::message::Message;
use std::collections::BTreeSet;

/// A number typed into a widget (the UI format may store 1024 as 1024.0).
pub fn num(n: &Node, name: &str) -> Option<f64> {
    n.value(name).and_then(serde_json::Value::as_f64)
}

pub fn role(n: &Node) -> Option<Role> {
    nodes::get(&n.class_type).map(|t| t.role)
}

/// Where a sampler's model comes from.
#[derive(Debug, Clone, Default)]
pub struct ModelPath<'a> {
    /// The checkpoint or UNet loader.
    pub loader: Option<&'a Node>,
    pub loras: Vec<&'a Node>,
    /// Nodes on the way that the planner does not know (followed through their `model` input).
    pub unknown: Vec<&'a Node>,
}

/// The input a node passes a MODEL or LATENT on from: the table's `through`, else for an
/// unknown node the first of the usual names that is a link.
fn through<'a>(n: &'a Node, usual: &[&str]) -> Option<(&'a str, u32)> {
    if let Some(t) = nodes::get(&n.class_type).and_then(|t| t.through.as_deref()) {
        return n.link(t);
    }
    usual.iter().find_map(|u| n.link(u))
}

/// Follows a MODEL link back to its loader.
pub fn model_path<'a>(w: &'a Workflow, start: Option<(&str, u32)>) -> ModelPath<'a> {
    let mut path = ModelPath::default();
    let mut next = start.map(|(id, _)| id.to_string());
    let mut seen = BTreeSet::new();
    while let Some(id) = next.take() {
        if !seen.insert(id.clone()) {
            break;
        }
        let Some(n) = w.node(&id) else { break };
        match role(n) {
            Some(Role::Checkpoint | Role::Unet | Role::UnetGguf) => {
                path.loader = Some(n);
            }
            Some(Role::Lora) => {
                path.loras.push(n);
                next = n.link("model").map(|(i, _)| i.to_string());
            }
            Some(_) => next = through(n, &[]).map(|(i, _)| i.to_string()),
            None => {
                path.unknown.push(n);
                next = n.link("model").map(|(i, _)| i.to_string());
            }
        }
    }
    path
}

/// A latent's size in pixels, frames and batch, with the node that made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Latent {
    pub width: u32,
    pub height: u32,
    /// Output frames (`length` of a video latent node); 1 for images.
    pub frames: u32,
    pub batch: u32,
    /// Output frames per latent frame of the node that made it (0 for images).
    pub temporal: u32,
    pub source: String,
    /// What was assumed on the way (a value from a link, an unknown node).
    pub notes: Vec<Message>,
}

fn shown(n: &Node) -> String {
    format!("node {} ({})", n.id, n.class_type)
}

/// Follows a LATENT link back to the node that made it. An error names the node whose size
/// cannot be read (a latent encoded from an image, a custom node).
pub fn latent(w: &Workflow, start: Option<(&str, u32)>) -> Result<Latent, String> {
    let mut depth = 0;
    let mut link = start;
    // Operations met on the way back, applied from the source forwards.
    let mut ops: Vec<&Node> = Vec::new();
    let mut notes = Vec::new();
    let base = loop {
        depth += 1;
        let Some((id, _)) = link else {
            return Err("a sampler without a latent_image input".into());
        };
        let Some(n) = w.node(id) else {
            return Err(format!(
                "its latent comes from node {id}, which is not in the workflow"
            ));
        };
        if depth > w.nodes.len() + 1 {
            return Err(format!("the latent links loop at {}", shown(n)));
        }
        match role(n) {
            Some(Role::Latent) => break n,
            Some(Role::LatentUpscale | Role::LatentUpscaleBy | Role::LatentRepeat) => {
                ops.push(n);
                link = n.link("samples");
            }
            Some(Role::Sampler | Role::SamplerCustom) => link = n.link("latent_image"),
            Some(Role::Encode) => {
                return Err(format!(
                    "its latent is encoded from an image by {}, whose size the workflow does not hold",
                    shown(n)
                ));
            }
            Some(_) => match through(n, &["samples"]) {
                Some(l) => link = Some(l),
                None => {
                    return Err(format!(
                        "its latent comes from {}, which makes none",
                        shown(n)
                    ));
                }
            },
            None => match through(n, &["samples", "latent", "latent_image"]) {
                Some(l) => {
                    notes.push(Message::new("warn.workflow.latent_through").text("node", shown(n)));
                    link = Some(l);
                }
                None => {
                    return Err(format!(
                        "its latent comes from {}, a node the planner does not know",
                        shown(n)
                    ));
                }
            },
        }
    };
    let t = nodes::get(&base.class_type).expect("a latent role comes from the table");
    let dim = |name: &str| -> Result<u32, String> {
        match num(base, name) {
            Some(v) if v.is_finite() && (1.0..=1e6).contains(&v) => Ok(v as u32),
            Some(v) => Err(format!("{}: {name} = {v} is out of range", shown(base))),
            None => Err(format!(
                "{}: {name} is not a number typed into the node (it comes from a link)",
                shown(base)
            )),
        }
    };
    let mut l = Latent {
        width: dim("width")?,
        height: dim("height")?,
        frames: if t.temporal > 0 { dim("length")? } else { 1 },
        batch: if base.input("batch_size").is_some() {
            dim("batch_size")?
        } else {
            1
        },
        temporal: t.temporal,
        source: base.id.clone(),
        notes,
    };
    let spatial = f64::from(t.spatial.max(1));
    for op in ops.into_iter().rev() {
        match role(op) {
            // ComfyUI nodes.py LatentUpscaleBy.upscale: latent sides × scale_by, rounded.
            Some(Role::LatentUpscaleBy) => {
                let s = num(op, "scale_by").unwrap_or(1.0).clamp(0.01, 8.0);
                let side = |px: u32| ((f64::from(px) / spatial * s).round() * spatial) as u32;
                l.width = side(l.width);
                l.height = side(l.height);
            }
            // LatentUpscale.upscale: a side of 0 keeps the aspect, each at least 64 px, then
            // floored to the latent grid (width // 8).
            Some(Role::LatentUpscale) => {
                let (w0, h0) = (f64::from(l.width), f64::from(l.height));
                let (mut nw, mut nh) = (
                    num(op, "width").unwrap_or(0.0),
                    num(op, "height").unwrap_or(0.0),
                );
                if nw == 0.0 && nh == 0.0 {
                    continue;
                }
                if nw == 0.0 {
                    nh = nh.max(64.0);
                    nw = (w0 * nh / h0).round().max(64.0);
                } else if nh == 0.0 {
                    nw = nw.max(64.0);
                    nh = (h0 * nw / w0).round().max(64.0);
                }
                let grid = |px: f64| ((px.max(64.0) / spatial).floor() * spatial) as u32;
                l.width = grid(nw);
                l.height = grid(nh);
            }
            Some(Role::LatentRepeat) => {
                let a = num(op, "amount").unwrap_or(1.0).clamp(1.0, 4096.0) as u32;
                l.batch = l.batch.saturating_mul(a);
            }
            _ => {}
        }
    }
    Ok(l)
}

/// What a sampler's conditioning is made from: the nodes upstream of its positive and
/// negative inputs (not past another sampler or decode, which belong to other passes), each
/// with the output slot it was reached by.
pub fn conditioning<'a>(w: &'a Workflow, starts: &[(&str, u32)]) -> Vec<(&'a Node, u32)> {
    let mut out: Vec<(&Node, u32)> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut stack: Vec<(String, u32)> = starts.iter().map(|(i, s)| (i.to_string(), *s)).collect();
    while let Some((id, slot)) = stack.pop() {
        if !seen.insert((id.clone(), slot)) {
            continue;
        }
        let Some(n) = w.node(&id) else { continue };
        out.push((n, slot));
        if matches!(
            role(n),
            Some(Role::Sampler | Role::SamplerCustom | Role::Decode | Role::DecodeTiled)
        ) {
            continue;
        }
        for input in n.inputs.values() {
            if let crate::import::comfy::Input::Link { node, slot } = input {
                stack.push((node.clone(), *slot));
            }
        }
    }
    out
}
