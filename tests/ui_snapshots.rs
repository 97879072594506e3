//! Image snapshots of the whole window, rendered by wgpu on the CPU (Mesa llvmpipe: GL through EGL,
//! or Vulkan through lavapipe when installed; `../shared/research/egui_stack.md` §3). The
//! accessibility tests check behaviour; these check what the user sees: layout, colours, and that
//! every glyph is drawn, the Chinese ones from the shipped CJK subset included.
//! `UPDATE_SNAPSHOTS=1 cargo test --test ui_snapshots` writes new images after an intended
//! change; look at them before committing.

use egui::accesskit::Role;
use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::{Harness, image_snapshot};
use vram_doctor::ui::i18n::{self, Lang};
use vram_doctor::ui::{Tab, VramDoctorApp};

#[path = "common/app.rs"]
mod common_app;
use common_app::app_with;

/// The app as a first start shows it on `tab` in `lang`, in the window's default size, once the
/// GPU probe of the top bar has answered (it runs on its own thread).
fn window(tab: Tab, lang: Lang) -> Harness<'static, VramDoctorApp> {
    let mut h = app_with(
        Harness::builder().with_size([1200.0, 780.0]).wgpu(),
        Some(tab),
        lang,
        None,
    );
    i18n::set_lang(lang);
    let probe_done = i18n::tr("no GPU found here");
    i18n::set_lang(Lang::English);
    for _ in 0..500 {
        h.run();
        if h.query_by_label(probe_done).is_some() {
            return h;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("the GPU probe did not answer within 5 s");
}

/// Compares the window with `tests/snapshots/{name}.png`. The app leaves its panels unfilled and
/// has eframe clear the window to the panel colour (`App::clear_color`, cheaper on a software
/// renderer); kittest's renderer clears to transparent instead, so the image is laid over the
/// panel colour here, as the real window shows it.
fn snapshot(h: &mut Harness<'static, VramDoctorApp>, name: &str) {
    let mut image = h.render().expect("the window renders on the CPU");
    let bg = h.ctx.global_style().visuals.panel_fill;
    for p in image.pixels_mut() {
        let a = u16::from(p.0[3]);
        for (c, b) in p.0.iter_mut().zip([bg.r(), bg.g(), bg.b()]) {
            // Premultiplied-free "over": the renderer's pixels are straight alpha.
            *c = ((u16::from(*c) * a + u16::from(b) * (255 - a)) / 255) as u8;
        }
        p.0[3] = 255;
    }
    image_snapshot(&image, name);
}

#[test]
fn planner_window() {
    let mut h = window(Tab::Planner, Lang::English);
    snapshot(&mut h, "planner");
}

#[test]
fn monitor_without_a_gpu() {
    let mut h = window(Tab::Monitor, Lang::English);
    snapshot(&mut h, "monitor_no_gpu");
}

#[test]
fn planner_in_chinese() {
    let mut h = window(Tab::Planner, Lang::SimplifiedChinese);
    snapshot(&mut h, "planner_zh");
}

#[test]
fn doctor_in_chinese() {
    let mut h = window(Tab::Doctor, Lang::SimplifiedChinese);
    h.get_by_label("不带消息开始").click();
    h.run();
    // The first answer, to show a step of the history and the next question.
    h.get_all_by_role(Role::Button)
        .find(|b| {
            b.accesskit_node()
                .label()
                .is_some_and(|l| l.starts_with("AI 程序"))
        })
        .expect("the out-of-memory option")
        .click();
    h.run();
    snapshot(&mut h, "doctor_zh");
}

/// The planner's verdict in its three cases (the `planner` image is an LLM that fits): ComfyUI
/// fitting a GGUF Q4_0 Flux whole on 12 GiB, ComfyUI streaming the bf16 one from system RAM
/// (the hatched box under the bar), and an LLM that does not fit.
#[test]
fn verdicts_fits_streaming_and_short() {
    for (name, toml) in [
        (
            "verdict_fits",
            "[gpu]\nvram_gib = 12\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\nengine = \"comfyui\"\nweights = \"q4_0\"\n",
        ),
        (
            "verdict_streams",
            "[gpu]\nvram_gib = 12\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\nengine = \"comfyui\"\n",
        ),
        (
            "verdict_short",
            "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n",
        ),
    ] {
        let mut h = window(Tab::Planner, Lang::English);
        h.state_mut().state.planner.workload =
            vram_doctor::memory::WorkloadFile::parse(toml, "t.toml").unwrap();
        h.run();
        snapshot(&mut h, name);
    }
}
