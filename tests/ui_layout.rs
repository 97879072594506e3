//! The window as a newcomer sees it at the sizes screens have (issue 22 item 11): at 800×600 and
//! at 1920×1080 nothing in the top bar overlaps and everything lies inside the window (at
//! 800×600 the theme switch's "Dark" was drawn over and cut off), and in the light theme an
//! unchecked checkbox stands out from the panel (it was a gray-230 box on gray 248).

use egui::accesskit::Role;
use egui::{Pos2, Rect};
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use vram_doctor::ui::i18n::Lang;
use vram_doctor::ui::{Tab, VramDoctorApp};

#[path = "common/app.rs"]
mod common_app;
use common_app::app_with;

fn window(size: [f32; 2], lang: Lang) -> Harness<'static, VramDoctorApp> {
    let mut h = app_with(
        Harness::builder().with_size(size),
        Some(Tab::Planner),
        lang,
        None,
    );
    h.run();
    h
}

fn rect_of<'t>(n: &impl NodeT<'t>) -> Option<Rect> {
    let b = n.accesskit_node().bounding_box()?;
    Some(Rect::from_min_max(
        Pos2::new(b.x0 as f32, b.y0 as f32),
        Pos2::new(b.x1 as f32, b.y1 as f32),
    ))
}

/// The top bar's widgets (tabs, GPU picker, language and theme switches) with their rects.
fn top_bar(h: &Harness<'static, VramDoctorApp>) -> Vec<(String, Rect)> {
    let mut names: Vec<&str> = vec!["Planner", "Monitor", "Doctor", "Catalog"];
    names.extend(["English", "简体中文", "Dark", "Light", "System theme"]);
    let mut out: Vec<(String, Rect)> = names
        .iter()
        .map(|n| {
            let node = h.get_by_role_and_label(Role::Button, n);
            (n.to_string(), rect_of(&node).unwrap())
        })
        .collect();
    let gpu = h.get_by_role_and_label(Role::ComboBox, "GPU");
    out.push(("GPU".into(), rect_of(&gpu).unwrap()));
    out
}

#[test]
fn the_top_bar_never_overlaps_at_800x600_or_1920x1080() {
    for size in [[800.0, 600.0], [1920.0, 1080.0]] {
        let h = window(size, Lang::English);
        let screen = Rect::from_min_max(Pos2::ZERO, Pos2::new(size[0], size[1]));
        let widgets = top_bar(&h);
        for (name, r) in &widgets {
            assert!(
                screen.contains_rect(*r) && r.width() > 1.0,
                "{size:?}: {name} at {r:?} is not inside the window"
            );
        }
        for (i, (a, ra)) in widgets.iter().enumerate() {
            for (b, rb) in &widgets[i + 1..] {
                assert!(
                    !ra.shrink(0.5).intersects(rb.shrink(0.5)),
                    "{size:?}: {a} {ra:?} overlaps {b} {rb:?}"
                );
            }
        }
        // On a wide screen the switches stay on the first row, at the right edge.
        if size[0] > 1000.0 {
            let dark = widgets.iter().find(|(n, _)| n == "Dark").unwrap().1;
            let planner = widgets.iter().find(|(n, _)| n == "Planner").unwrap().1;
            assert!(
                (dark.center().y - planner.center().y).abs() < 2.0,
                "{dark:?}"
            );
            assert!(dark.right() > size[0] - 40.0, "{dark:?}");
        }
    }
}

/// WCAG 2.1's contrast ratio of two sRGB colours (relative luminance, SC 1.4.3's definition).
fn contrast(a: [u8; 3], b: [u8; 3]) -> f64 {
    let lum = |c: [u8; 3]| {
        let lin = |v: u8| {
            let s = f64::from(v) / 255.0;
            if s <= 0.04045 {
                s / 12.92
            } else {
                ((s + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2])
    };
    let (x, y) = (lum(a), lum(b));
    (x.max(y) + 0.05) / (x.min(y) + 0.05)
}

/// In the light theme the box of an unchecked checkbox, as rendered, reaches 3:1 against the
/// panel (WCAG 2.1 SC 1.4.11, non-text contrast), on the planner's diffusion savers.
#[test]
fn an_unchecked_checkbox_is_visible_in_the_light_theme() {
    let mut h = app_with(
        Harness::builder().with_size([1200.0, 800.0]).wgpu(),
        Some(Tab::Planner),
        Lang::English,
        None,
    );
    h.ctx.set_theme(egui::Theme::Light);
    h.state_mut().state.planner.workload = vram_doctor::memory::WorkloadFile::parse(
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"sdxl\"\n[run]\ntask = \"diffusion\"\n",
        "test.toml",
    )
    .unwrap();
    h.get_by_label("Light").click();
    h.run();
    let boxed = h.get_by_role_and_label(Role::CheckBox, "Tiled VAE decode");
    assert_eq!(
        boxed.accesskit_node().toggled(),
        Some(egui::accesskit::Toggled::False)
    );
    let r = rect_of(&boxed).unwrap();
    let bg = h.ctx.style_of(egui::Theme::Light).visuals.panel_fill;
    let image = h.render().expect("the window renders on the CPU");
    let ppp = f64::from(h.ctx.pixels_per_point());
    // The box sits at the left of the widget, as tall as the text; the most contrasting pixel
    // of that square against the panel is the outline's.
    let side = f64::from(r.height());
    let mut best: f64 = 1.0;
    for y in (f64::from(r.top()) * ppp) as u32..(f64::from(r.bottom()) * ppp) as u32 {
        for x in (f64::from(r.left()) * ppp) as u32..((f64::from(r.left()) + side) * ppp) as u32 {
            let p = image.get_pixel(x, y).0;
            // Straight alpha over the panel colour, as the real window clears to it.
            let over = |c: u8, b: u8| {
                ((u16::from(c) * u16::from(p[3]) + u16::from(b) * (255 - u16::from(p[3]))) / 255)
                    as u8
            };
            let px = [over(p[0], bg.r()), over(p[1], bg.g()), over(p[2], bg.b())];
            best = best.max(contrast(px, [bg.r(), bg.g(), bg.b()]));
        }
    }
    assert!(
        best >= 3.0,
        "the unchecked box reaches only {best:.2}:1 against the panel"
    );
}
