//! The memory–speed chart of an LLM inference run: for the knob last dragged (GPU layers of a
//! llama.cpp run, else the context length) the GPU memory on the left axis, decode tokens per
//! second on the right, and the card's capacity as a line, so the user sees where the curve
//! crosses the card and what it costs. The curve comes from `plan::curve`.

use crate::memory::any::AnyWorkload;
use crate::plan::PlanResult;
use crate::plan::curve::{self, Knob, Point};
use crate::types::options::{Engine, Task};
use crate::types::workload::Workload;
use crate::ui::i18n::tr;
use crate::ui::widgets::explained;
use crate::units::gib;
use egui::Ui;
use egui_plot::{AxisHints, HLine, HPlacement, Line, Plot, PlotPoints, VLine};
use std::sync::Arc;

/// The knob the chart shows for `w`: GPU layers only mean something to llama.cpp.
pub fn knob_for(w: &Workload, dragged: Knob) -> Knob {
    if w.run.engine == Engine::LlamaCpp {
        dragged
    } else {
        Knob::Context
    }
}

/// The estimate a curve was drawn for (a new `Arc` for every new estimate).
pub type Source = Arc<(AnyWorkload, PlanResult)>;

/// The curve drawn, kept while the estimate and the knob stay the same.
#[derive(Default)]
pub struct Cache {
    key: Option<(Source, Knob)>,
    points: Vec<Point>,
}

/// Draws the chart of an LLM inference estimate; nothing for other kinds.
pub fn chart_ui(ui: &mut Ui, source: &Source, dragged: Knob, cache: &mut Cache) {
    let AnyWorkload::Llm(w) = &source.0 else {
        return;
    };
    if w.run.task != Task::Inference {
        return;
    }
    let knob = knob_for(w, dragged);
    let same = cache
        .key
        .as_ref()
        .is_some_and(|(s, k)| Arc::ptr_eq(s, source) && *k == knob);
    if !same {
        cache.points = curve::curve(w, knob);
        cache.key = Some((source.clone(), knob));
    }
    let pts = &cache.points;
    let (title, x_label, current) = match knob {
        Knob::GpuLayers => (
            tr("Memory and speed by GPU layers"),
            tr("GPU layers (-ngl)"),
            crate::engines::llama_cpp::memory::gpu_layers(w),
        ),
        Knob::Context => (
            tr("Memory and speed by context length"),
            tr("Context (tokens)"),
            w.run.seq,
        ),
    };
    ui.strong(title);
    let cap = gib(w.gpu.vram_bytes);
    let top_gib = pts.iter().map(|p| gib(p.process_bytes)).fold(cap, f64::max);
    let top_tps = pts
        .iter()
        .filter_map(|p| p.decode_tokens_per_s)
        .fold(0.0, f64::max);
    // Tokens/s drawn on the memory scale: the right axis reads them back.
    let scale = if top_tps > 0.0 {
        top_gib / top_tps
    } else {
        1.0
    };
    let vram: Vec<[f64; 2]> = pts
        .iter()
        .map(|p| [f64::from(p.x), gib(p.process_bytes)])
        .collect();
    let speed: Vec<[f64; 2]> = pts
        .iter()
        .filter_map(|p| p.decode_tokens_per_s.map(|t| [f64::from(p.x), t * scale]))
        .collect();
    let visuals = ui.visuals().clone();
    // Each series in its own colour, named in a legend of labels that explain themselves from
    // the glossary (egui_plot's own legend draws toggles that cannot carry a tooltip).
    let series = [
        (tr("GPU memory"), visuals.hyperlink_color),
        (tr("decode tokens/s"), visuals.warn_fg_color),
        (tr("card capacity"), visuals.error_fg_color),
        (tr("this run"), visuals.weak_text_color()),
    ];
    ui.horizontal_wrapped(|ui| {
        for (name, c) in &series {
            explained(ui.colored_label(*c, *name), name);
        }
    });
    Plot::new("planner_memory_speed")
        .height(220.0)
        .allow_scroll(false)
        .allow_drag(false)
        .allow_zoom(false)
        .include_y(0.0)
        .x_axis_label(x_label)
        .custom_y_axes(vec![
            AxisHints::new_y().label(tr("GPU memory (GiB)")),
            AxisHints::new_y()
                .label(tr("decode tokens/s"))
                .placement(HPlacement::Right)
                .formatter(move |mark, _| format!("{:.0}", mark.value / scale)),
        ])
        .show(ui, |p| {
            p.line(Line::new(series[0].0, PlotPoints::from(vram)).color(series[0].1));
            if !speed.is_empty() {
                p.line(Line::new(series[1].0, PlotPoints::from(speed)).color(series[1].1));
            }
            p.hline(HLine::new(series[2].0, cap).color(series[2].1));
            p.vline(VLine::new(series[3].0, f64::from(current)).color(series[3].1));
        });
}
