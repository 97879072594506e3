//! A horizontal stacked bar: each part of an estimate as a coloured segment, drawn against the
//! card's capacity line, with a legend that names each part and its size. Each segment and
//! each legend line says what the part is when the pointer rests on it (the glossary's text).

use super::i18n::trf;
use crate::units::human;
use egui::{Color32, Response, Sense, Stroke, StrokeKind, Ui, Vec2, WidgetInfo};

/// Segment colours, in order; chosen to stay apart in both dark and light themes
/// (Okabe–Ito colour-blind-safe palette, Okabe & Ito 2008, "Color Universal Design").
const PALETTE: [Color32; 8] = [
    Color32::from_rgb(0, 114, 178),
    Color32::from_rgb(230, 159, 0),
    Color32::from_rgb(0, 158, 115),
    Color32::from_rgb(204, 121, 167),
    Color32::from_rgb(86, 180, 233),
    Color32::from_rgb(213, 94, 0),
    Color32::from_rgb(240, 228, 66),
    Color32::from_rgb(150, 150, 150),
];

/// Colour of the `i`-th segment.
pub fn color(i: usize) -> Color32 {
    PALETTE[i % PALETTE.len()]
}

/// One part of the bar: its name as shown, its size, and what it is (the glossary's text).
pub struct Segment<'a> {
    pub label: &'a str,
    pub bytes: u64,
    pub about: Option<&'a str>,
}

impl Segment<'_> {
    /// The part's name and size, and what it is: a segment's accessible label and tooltip.
    fn title(&self) -> String {
        format!("{}: {}", self.label, human(self.bytes))
    }

    fn explain(&self, response: Response) -> Response {
        match self.about {
            Some(a) => response.on_hover_text(format!("{}\n{a}", self.title())),
            None => response.on_hover_text(self.title()),
        }
    }
}

/// Weights read from system RAM every step: not VRAM, so drawn apart from the bar, hollow and
/// hatched, on the bar's scale, with a sentence that says so and what it costs in time.
pub struct Streamed {
    pub bytes: u64,
    pub text: String,
}

/// Draws `parts` stacked left to right, a vertical line at `capacity`, and a thinner one
/// `margin` bytes before it (the safety margin a plan leaves free). The scale leaves room for
/// whichever is larger, so an overflow shows past the line. Each segment is a widget of its own
/// (labelled "name: size"), whose tooltip says what the part is. `streamed`, when some weights
/// are streamed, is drawn under the bar on the same scale.
pub fn stacked_bar(
    ui: &mut Ui,
    parts: &[Segment],
    capacity: u64,
    margin: u64,
    streamed: Option<&Streamed>,
) {
    let total: u64 = parts.iter().map(|p| p.bytes).fold(0, u64::saturating_add);
    let scale = total.max(capacity).max(1) as f32 * 1.04;
    let size = Vec2::new(ui.available_width(), 30.0);
    let (rect, response) = ui.allocate_exact_size(size, Sense::hover());
    response.widget_info(|| {
        WidgetInfo::labeled(
            egui::Role::Meter,
            true,
            trf(
                "Memory bar: {used} of {cap}",
                &[("used", &human(total)), ("cap", &human(capacity))],
            ),
        )
    });
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 3.0, ui.visuals().extreme_bg_color);
    let mut x = rect.left();
    for (i, part) in parts.iter().enumerate() {
        let w = rect.width() * (part.bytes as f32 / scale);
        let seg =
            egui::Rect::from_min_max(egui::pos2(x, rect.top()), egui::pos2(x + w, rect.bottom()));
        painter.rect_filled(seg, 0.0, color(i));
        let hover = ui.interact(seg, response.id.with(i), Sense::hover());
        hover.widget_info(|| WidgetInfo::labeled(egui::Role::Meter, true, part.title()));
        part.explain(hover);
        x += w;
    }
    let cap_x = rect.left() + rect.width() * (capacity as f32 / scale);
    let line = Stroke::new(2.5, ui.visuals().strong_text_color());
    painter.vline(cap_x, rect.y_range().expand(2.0), line);
    let margin_x = rect.left() + rect.width() * (capacity.saturating_sub(margin) as f32 / scale);
    let dashes = egui::Shape::dashed_line(
        &[
            egui::pos2(margin_x, rect.top()),
            egui::pos2(margin_x, rect.bottom()),
        ],
        Stroke::new(1.5, ui.visuals().warn_fg_color),
        4.0,
        3.0,
    );
    painter.extend(dashes);
    painter.rect_stroke(
        rect,
        3.0,
        ui.visuals().widgets.noninteractive.bg_stroke,
        StrokeKind::Inside,
    );
    ui.horizontal(|ui| {
        let left = (cap_x - rect.left() - 300.0).max(0.0);
        ui.add_space(left);
        ui.weak(trf(
            "capacity {cap} (dashed: {margin} safety margin)",
            &[("cap", &human(capacity)), ("margin", &human(margin))],
        ));
    });
    if let Some(st) = streamed {
        streamed_row(ui, st, scale);
    }
}

/// The streamed weights as a hollow, hatched box (no fill: they hold no VRAM) `bytes / scale`
/// of the width long, the sentence beside it; one widget labelled with the sentence.
fn streamed_row(ui: &mut Ui, st: &Streamed, scale: f32) {
    let size = Vec2::new(ui.available_width(), 16.0);
    let (rect, response) = ui.allocate_exact_size(size, Sense::hover());
    response.widget_info(|| WidgetInfo::labeled(egui::Role::Meter, true, &st.text));
    response.on_hover_text(&st.text);
    let w = (rect.width() * (st.bytes as f32 / scale)).min(rect.width());
    let boxed = egui::Rect::from_min_size(rect.min, Vec2::new(w, rect.height()));
    let painter = ui.painter_at(boxed.expand(1.0));
    let stroke = Stroke::new(1.5, ui.visuals().warn_fg_color);
    let mut x = boxed.left() - boxed.height();
    while x < boxed.right() {
        painter.line_segment(
            [
                egui::pos2(x, boxed.bottom()),
                egui::pos2(x + boxed.height(), boxed.top()),
            ],
            Stroke::new(1.0, stroke.color.gamma_multiply(0.6)),
        );
        x += 8.0;
    }
    painter.rect_stroke(boxed, 2.0, stroke, StrokeKind::Inside);
    ui.colored_label(ui.visuals().warn_fg_color, &st.text);
}

/// The legend under the bar: a swatch, the part's size and its name, one per line; the name
/// says what the part is when the pointer rests on it. The size comes before the name: a long
/// name in a narrow window (800×600, in Chinese "动态 VRAM 保留的空闲显存（comfy-aimdo 余量，
/// --reserve-vram）") pushed the sizes out of the window when they came after it; and the name
/// wraps in the room the window leaves it (as a grid's last cell it was laid out unwrapped, and
/// the panel cut that name's tail off). Rows, not an `egui::Grid`: a grid's cell is as tall as
/// its row was the frame before, so a name wrapped in the first frame's narrow cell kept its
/// row tall; the sizes' column is as wide as the widest size.
pub fn legend(ui: &mut Ui, parts: &[Segment]) {
    let font = egui::TextStyle::Body.resolve(ui.style());
    let sizes: Vec<String> = parts.iter().map(|p| human(p.bytes)).collect();
    let width = sizes
        .iter()
        .map(|s| {
            let galley = ui
                .painter()
                .layout_no_wrap(s.clone(), font.clone(), Color32::PLACEHOLDER);
            galley.size().x
        })
        .fold(0.0, f32::max);
    let height = ui.spacing().interact_size.y;
    for (i, (part, size)) in parts.iter().zip(sizes).enumerate() {
        ui.horizontal(|ui| {
            let (r, _) = ui.allocate_exact_size(Vec2::splat(12.0), Sense::hover());
            ui.painter().rect_filled(r, 2.0, color(i));
            ui.allocate_ui_with_layout(
                Vec2::new(width, height),
                egui::Layout::right_to_left(egui::Align::Center),
                |ui| ui.label(size),
            );
            let name = ui.add(egui::Label::new(part.label).wrap());
            if let Some(a) = part.about {
                name.on_hover_text(a);
            }
        });
    }
}
