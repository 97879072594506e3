//! The window as a newcomer sees it at the sizes screens have (issue 22 item 11): at 800×600 and
//! at 1920×1080 nothing in the top bar overlaps and everything lies inside the window (at
//! 800×600 the theme switch's "Dark" was drawn over and cut off); every view (each planner
//! kind and its plans, a ComfyUI workflow, the monitor's demo, the doctor's diagnosis, the
//! catalog's shelves and form) in English and in Chinese at both sizes paints no text cut by
//! its panel or truncated ("…"), no text over another and no control over another; and in the
//! light theme an unchecked checkbox stands out from the panel (it was a gray-230 box on gray
//! 248).
use egui::accesskit::Role;
use egui::epaint::Shape;
use egui::{Pos2, Rect};
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable, by};
use std::collections::HashMap;
use vram_doctor::ui::i18n::{self, Lang};
use vram_doctor::ui::{Tab, VramDoctorApp};

#[path = "common/app.rs"]
mod common_app;
use common_app::{app_with, click, read_in_doctor, wait_for};

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

/// A row of text as painted in the last frame: its text's words, the row's glyphs' extent on
/// the screen, the clip it was painted through, and whether egui cut the text's tail off for a
/// "…". Rows, not whole texts: a label wrapped in a row of widgets starts after them and goes
/// on at the left of the next line, so the text's extent covers what stands beside it.
struct Painted {
    text: String,
    ink: Rect,
    clip: Rect,
    elided: bool,
}

/// Every row with glyphs of the frame's unrotated texts (rotated ones are the plots' axis
/// titles, laid along their axis).
fn painted(h: &Harness<'static, VramDoctorApp>) -> Vec<Painted> {
    fn walk(shape: &Shape, clip: Rect, out: &mut Vec<Painted>) {
        match shape {
            Shape::Vec(v) => v.iter().for_each(|s| walk(s, clip, out)),
            Shape::Text(t) if t.angle == 0.0 => {
                let rows = t.galley.rows.len();
                for (i, row) in t.galley.rows.iter().enumerate() {
                    let ink = row.row.visuals.mesh_bounds;
                    if ink.is_positive() {
                        out.push(Painted {
                            text: t.galley.text().to_string(),
                            ink: ink.translate(row.pos.to_vec2() + t.pos.to_vec2()),
                            clip,
                            // The "…" ends the last row.
                            elided: t.galley.elided && i + 1 == rows,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for c in &h.output().shapes {
        walk(&c.shape, c.clip_rect, &mut out);
    }
    out
}

/// Controls a pointer or the keyboard acts on.
const CONTROLS: &[Role] = &[
    Role::Button,
    Role::CheckBox,
    Role::RadioButton,
    Role::ComboBox,
    Role::Slider,
    Role::SpinButton,
    Role::TextInput,
    Role::MultilineTextInput,
    Role::Link,
    Role::Tab,
];

/// What is wrong with the frame's layout, each in a sentence naming the texts or controls:
/// - a text whose glyphs lie partly outside its clip (cut by a panel or the window), unless a
///   horizontal scroll bar of that clip brings it into view or it is a text box's content
///   (which scrolls in its box);
/// - a text egui truncated to fit ("…");
/// - two texts whose glyphs overlap;
/// - two controls on one layer whose visible rects overlap.
fn layout_problems(h: &Harness<'static, VramDoctorApp>) -> Vec<String> {
    let nodes: Vec<(Role, String, Rect)> = h
        .query_all(by().predicate(|_| true))
        .filter_map(|n| {
            let node = n.accesskit_node();
            let label = node.label().or_else(|| node.value()).unwrap_or_default();
            Some((node.role(), label, rect_of(&n)?))
        })
        .collect();
    let h_bars: Vec<Rect> = nodes
        .iter()
        .filter(|(role, _, r)| *role == Role::ScrollBar && r.width() > r.height())
        .map(|(_, _, r)| *r)
        .collect();
    let boxes: Vec<Rect> = nodes
        .iter()
        .filter(|(role, ..)| matches!(role, Role::TextInput | Role::MultilineTextInput))
        .map(|(_, _, r)| *r)
        .collect();
    let scrolls = |clip: Rect| {
        h_bars.iter().any(|b| {
            (b.left() - clip.left()).abs() < 6.0
                && (b.right() - clip.right()).abs() < 6.0
                && b.top() > clip.top()
                && b.top() < clip.bottom() + 6.0
        })
    };
    let mut out = Vec::new();
    let texts = painted(h);
    let mut seen: Vec<(&Painted, Rect)> = Vec::new();
    for t in &texts {
        let shown = t.ink.intersect(t.clip);
        if shown.height() <= 0.0 || boxes.iter().any(|b| b.contains(t.ink.left_center())) {
            // Scrolled out of view, or typed into a box.
            continue;
        }
        if t.elided {
            out.push(format!("{:?} is truncated to fit {:?}", t.text, t.ink));
        }
        let cut = t.ink.left() < t.clip.left() - 1.0 || t.ink.right() > t.clip.right() + 1.0;
        if cut && !scrolls(t.clip) {
            out.push(format!(
                "{:?} at {:?} is cut by its clip {:?}",
                t.text, t.ink, t.clip
            ));
        }
        for (o, o_shown) in &seen {
            if shown.shrink(1.0).intersects(o_shown.shrink(1.0)) && o.ink != t.ink {
                out.push(format!(
                    "{:?} at {:?} is drawn over {:?} at {:?}",
                    t.text, t.ink, o.text, o.ink
                ));
            }
        }
        seen.push((t, shown));
    }
    // The controls' rects as the pointer finds them: clipped by their panel, on their layer.
    let rects: HashMap<u64, (egui::LayerId, Rect)> = h.ctx.viewport(|v| {
        v.prev_pass
            .widgets
            .layers()
            .flat_map(|(l, ws)| ws.iter().map(|w| (w.id.value(), (*l, w.interact_rect))))
            .collect()
    });
    let controls: Vec<(String, egui::LayerId, Rect)> = h
        .query_all(by().predicate(|n| CONTROLS.contains(&n.role())))
        .filter_map(|n| {
            let node = n.accesskit_node();
            let (layer, r) = *rects.get(&node.locate().0.0)?;
            let name = node.label().or_else(|| node.value()).unwrap_or_default();
            (r.width() > 0.0 && r.height() > 0.0)
                .then(|| (format!("{:?} {name:?}", node.role()), layer, r))
        })
        .collect();
    // The top bar alone has nine controls and each view some text: fewer means the check
    // found nothing to check.
    if controls.len() < 9 || texts.len() < 20 {
        out.push(format!(
            "only {} controls and {} rows of text found",
            controls.len(),
            texts.len()
        ));
    }
    for (i, (a, la, ra)) in controls.iter().enumerate() {
        for (b, lb, rb) in &controls[i + 1..] {
            if la == lb && ra.shrink(0.5).intersects(rb.shrink(0.5)) {
                out.push(format!("{a} {ra:?} overlaps {b} {rb:?}"));
            }
        }
    }
    out
}

/// The beginner's fine-tune OOM of issue 22, as PyTorch prints it.
const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 \
has a total capacity of 11.63 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this \
process has 10.60 GiB memory in use.";

/// Workloads whose plans show each kind's long texts: the verdicts, the plans and their "why"
/// lines, the estimators' warnings, a game's steps, a llama.cpp split.
const WORKLOADS: &[(&str, &str)] = &[
    (
        "LLM inference that does not fit",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"llama-3.1-70b\"\n[run]\ntask = \"inference\"\nseq = 8192\n",
    ),
    (
        "llama.cpp split across GPU and RAM",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"llama-3.1-70b\"\n[run]\ntask = \"inference\"\nengine = \"llama.cpp\"\nweights = \"q4_k_m\"\n",
    ),
    (
        "LoRA training with ZeRO",
        "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nmethod = \"lora\"\nzero_stage = 2\nseq = 1000\n",
    ),
    (
        "ComfyUI streaming Flux",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\nengine = \"comfyui\"\n",
    ),
    (
        "Diffusers with sequential offload",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\nengine = \"diffusers\"\ncpu_offload = \"sequential\"\n",
    ),
    (
        "a game over budget",
        "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"game\"\nresolution = \"3840x2160\"\ntexture_quality = \"ultra\"\nray_tracing = true\n",
    ),
];

/// Every view of the app in `lang` in a `size` window, and what [`layout_problems`] finds in
/// each (the pointer taken away first, so no tooltip covers the view).
fn walk(size: [f32; 2], lang: Lang) -> Vec<String> {
    let mut h = window(size, lang);
    let mut out = Vec::new();
    let mut look = |h: &mut Harness<'static, VramDoctorApp>, step: &str| {
        h.remove_cursor();
        h.run();
        for p in layout_problems(h) {
            out.push(format!("{size:?} {lang:?} {step}: {p}"));
        }
    };
    look(&mut h, "planner at start");
    for kind in ["LLM training", "Diffusion", "Game", "LLM inference"] {
        click(&mut h, kind);
        look(&mut h, kind);
    }
    let dir = tempfile::tempdir().unwrap();
    for (i, (what, toml)) in WORKLOADS.iter().enumerate() {
        let path = dir.path().join(format!("w{i}.toml"));
        std::fs::write(&path, toml).unwrap();
        h.state_mut().open_file(&path);
        h.run();
        look(&mut h, what);
    }
    // A workflow over an 8 GB card: the part with the longest name (--reserve-vram's) and the
    // changes to its nodes.
    let workflow =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/comfy/sd35_large.json");
    h.state_mut().open_file(&workflow);
    h.run();
    let changes = i18n::tr_in(lang, "Changes to the workflow that make it fit:").to_string();
    wait_for(&mut h, &changes);
    look(&mut h, "ComfyUI workflow opened");
    click(&mut h, "Monitor");
    look(&mut h, "monitor");
    click(&mut h, "Show demo data");
    wait_for(&mut h, "GPU 0");
    look(&mut h, "monitor with demo data");
    click(&mut h, "Doctor");
    look(&mut h, "doctor");
    read_in_doctor(&mut h, OOM);
    look(&mut h, "doctor after a pasted OOM");
    click(&mut h, "Catalog");
    for shelf in ["GPUs", "Models", "Image models", "Games"] {
        click(&mut h, shelf);
        look(&mut h, shelf);
    }
    click(&mut h, "GPUs");
    click(&mut h, "Add GPU…");
    look(&mut h, "the catalog's GPU form");
    out
}

#[test]
fn every_view_lays_out_without_clipping_or_overlap_at_800x600_and_1920x1080() {
    let mut problems = Vec::new();
    for size in [[800.0, 600.0], [1920.0, 1080.0]] {
        for lang in [Lang::English, Lang::SimplifiedChinese] {
            problems.extend(walk(size, lang));
        }
    }
    assert!(
        problems.is_empty(),
        "{} layout problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
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
