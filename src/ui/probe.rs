//! A machine-readable view of the running window, for scripts that drive the real app
//! (`tools/walk.sh`, tests/xvfb_walk.rs). With `VRAM_DOCTOR_PROBE=FILE` set, the app writes
//! FILE, atomically, after every frame (egui draws one on each input and none while the window
//! is idle):
//!
//! - `widgets`: every node of the frame's accessibility tree that has a label or a value (the
//!   tree a screen reader and the kittest suite read), with its role, label, value, whether it is
//!   toggled, selected or disabled, and its rectangle in window pixels: a script clicks a widget
//!   by its label at the centre of that rectangle, as a user would with the mouse;
//! - `state`: what the app shows, from the same values the views draw: the tab, the language,
//!   the planner's workload and the result of planning it (the JSON of `vram-doctor plan
//!   --json` for that workload, verdict and plan included), and the doctor's reading.
//!
//! Nothing is written without the variable, and the accessibility tree is then built only when a
//! screen reader asks for it, as before. The tree is forced on with the variable set: egui only
//! builds it on request (`Context::enable_accesskit`), and the probe is that request.

use crate::atomic_write::write_atomic;
use egui::accesskit::{Node, NodeId, Role, Toggled, TreeUpdate};
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The environment variable naming the file the probe writes.
pub const VAR: &str = "VRAM_DOCTOR_PROBE";

/// One widget as the accessibility tree describes it.
#[derive(Serialize)]
struct Widget {
    role: String,
    label: Option<String>,
    value: Option<String>,
    toggled: Option<bool>,
    selected: Option<bool>,
    disabled: bool,
    /// Left, top, right, bottom, in window pixels.
    rect: [f64; 4],
}

#[derive(Serialize)]
struct Report<'a> {
    /// Frames drawn so far; a script waits for it to grow after an input.
    frame: u64,
    state: &'a serde_json::Value,
    widgets: Vec<Widget>,
}

/// What the app last showed, handed from its frame to the probe.
pub type Shared = Arc<Mutex<serde_json::Value>>;

/// The egui plugin that writes the report after each frame.
struct Probe {
    path: PathBuf,
    state: Shared,
    frame: u64,
}

/// The probe's file when `VRAM_DOCTOR_PROBE` is set: installs it on `ctx` and returns where the
/// app puts its state each frame.
pub fn install(ctx: &egui::Context) -> Option<Shared> {
    let path = std::env::var_os(VAR).filter(|p| !p.is_empty())?;
    let state: Shared = Arc::default();
    ctx.enable_accesskit();
    ctx.add_plugin(Probe {
        path: PathBuf::from(path),
        state: state.clone(),
        frame: 0,
    });
    Some(state)
}

/// The tree's widgets that carry text, in the tree's order. A widget named by another one (a
/// slider or combo box and the label beside it, `labelled_by`) takes that one's text as its
/// label, as a screen reader and kittest's `get_by_label` name it; the text runs inside a text
/// field are its value, not widgets.
fn widgets(tree: &TreeUpdate, pixels_per_point: f64) -> Vec<Widget> {
    let by_id: HashMap<NodeId, &Node> = tree.nodes.iter().map(|(id, n)| (*id, n)).collect();
    let text = |n: &Node| n.label().or(n.value()).map(str::to_owned);
    let label = |n: &Node| {
        n.label().map(str::to_owned).or_else(|| {
            n.labelled_by()
                .iter()
                .filter_map(|id| by_id.get(id).and_then(|l| text(l)))
                .next()
        })
    };
    tree.nodes
        .iter()
        .map(|(_, n)| n)
        .filter(|n| !matches!(n.role(), Role::Window | Role::TextRun))
        .filter_map(|n| {
            let (label, value) = (label(n), n.value().map(str::to_owned));
            if label.is_none() && value.is_none() {
                return None;
            }
            let b = n.bounds()?;
            Some(Widget {
                role: format!("{:?}", n.role()),
                label,
                value,
                toggled: n.toggled().map(|t| t == Toggled::True),
                selected: n.is_selected(),
                disabled: n.is_disabled(),
                rect: [b.x0, b.y0, b.x1, b.y1].map(|v| (v * pixels_per_point).round()),
            })
        })
        .collect()
}

impl egui::Plugin for Probe {
    fn debug_name(&self) -> &'static str {
        "vram-doctor probe"
    }

    fn output_hook(&mut self, ctx: &egui::Context, output: &mut egui::FullOutput) {
        // A screen reader that goes away turns the tree off; the probe keeps needing it.
        ctx.enable_accesskit();
        self.frame += 1;
        let Some(tree) = &output.platform_output.accesskit_update else {
            return;
        };
        let state = self.state.lock().map(|s| s.clone()).unwrap_or_default();
        let report = Report {
            frame: self.frame,
            state: &state,
            widgets: widgets(tree, f64::from(output.pixels_per_point)),
        };
        let text = serde_json::to_string(&report).unwrap_or_default();
        if let Err(e) = write_atomic(&self.path, &text) {
            eprintln!("vram-doctor: {VAR}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use egui::accesskit::{Rect, TreeId, TreeInfo};

    fn node(role: Role, f: impl FnOnce(&mut Node)) -> Node {
        let mut n = Node::new(role);
        n.set_bounds(Rect::new(10.0, 20.0, 110.0, 40.0));
        f(&mut n);
        n
    }

    /// A slider named by the label beside it is found by that label, at its place scaled to
    /// pixels; a node without text and a text field's text runs are left out.
    #[test]
    fn widgets_are_named_as_a_screen_reader_names_them() {
        let tree = TreeUpdate {
            nodes: vec![
                (NodeId(1), node(Role::Window, |_| {})),
                (NodeId(2), node(Role::Label, |n| n.set_value("Batch size"))),
                (
                    NodeId(3),
                    node(Role::Slider, |n| {
                        n.set_value("4");
                        n.push_labelled_by(NodeId(2));
                    }),
                ),
                (NodeId(4), node(Role::GenericContainer, |_| {})),
                (
                    NodeId(5),
                    node(Role::TextRun, |n| n.set_value("import torch")),
                ),
                (
                    NodeId(6),
                    node(Role::CheckBox, |n| {
                        n.set_label("Ray tracing");
                        n.set_toggled(Toggled::True);
                    }),
                ),
            ],
            tree: Some(TreeInfo::new(NodeId(1))),
            tree_id: TreeId::ROOT,
            focus: NodeId(1),
        };
        let w = widgets(&tree, 2.0);
        let names: Vec<_> = w
            .iter()
            .map(|w| (w.role.as_str(), w.label.as_deref()))
            .collect();
        assert_eq!(
            names,
            [
                ("Label", None),
                ("Slider", Some("Batch size")),
                ("CheckBox", Some("Ray tracing"))
            ]
        );
        assert_eq!(w[1].value.as_deref(), Some("4"));
        assert_eq!(w[1].rect, [20.0, 40.0, 220.0, 80.0]);
        assert_eq!(w[2].toggled, Some(true));
    }
}
