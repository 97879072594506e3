//! Diffusion: the model picker over the diffusion presets, the image size, precision, engine and
//! the memory savers each engine has; the plan with its time and quality cost, and the largest
//! size and batch that fit.

use crate::memory::diffusion::parts::weight_names;
use crate::memory::diffusion::{
    CpuOffload, DiffusionCatalog, DiffusionModel, DiffusionWorkload, ModelKind, VramMode,
};
use crate::memory::{Attention, Engine, WorkloadFile};
use crate::plan::diffusion::DiffusionPlan;
use crate::types::workload::ModelSection;
use crate::ui::i18n::{msgs, tr, trf};
use crate::ui::widgets::{
    count_slider, flag, gib_slider, other_programs, pick, pick_weights, search_pick, stepped_slider,
};
use egui::Ui;

/// The engines that run diffusion models (what `run.engine` accepts for them).
const ENGINES: [Engine; 2] = [Engine::ComfyUi, Engine::Diffusers];
/// Image sides the sliders offer, in pixels: SD 1.5's 256 thumbnails up to 4K-wide renders
/// (the file accepts 64..=16384).
const SIDE_MIN: u32 = 256;
const SIDE_MAX: u32 = 4096;

fn model_text(m: &DiffusionModel) -> String {
    trf(
        "{name} ({w}×{h})",
        &[
            ("name", &m.name),
            ("w", &m.native_width),
            ("h", &m.native_height),
        ],
    )
}

/// The model and knobs of a diffusion run; `d` is the last diffusion workload that resolved.
pub fn inputs_ui(
    ui: &mut Ui,
    w: &mut WorkloadFile,
    d: Option<&DiffusionWorkload>,
    filter: &mut String,
    cap_gib: f64,
) {
    let cat = DiffusionCatalog::get();
    ui.heading(tr("Model"));
    let current = w.model.preset.as_deref().and_then(|p| cat.model(p).ok());
    let text = current.map_or_else(|| tr("choose a diffusion model").into(), model_text);
    let items = cat.models.iter().map(|m| (m.id.as_str(), model_text(m)));
    if let Some(id) = search_pick(
        ui,
        tr("Diffusion model"),
        text,
        filter,
        items,
        current.map(|m| m.id.as_str()),
    ) {
        w.model = ModelSection {
            preset: Some(id),
            ..Default::default()
        };
        // Knobs tied to one model: the new one starts at its own size, encoders and add-ons.
        let f = &mut w.run;
        (f.width, f.height, f.frames) = (None, None, None);
        (f.text_encoder_weights, f.controlnets, f.ip_adapter) = (None, None, None);
    }
    let Some(d) = d else {
        ui.label(tr("Pick a diffusion model to see its settings."));
        return;
    };
    let (r, m, f) = (&d.run, &d.model, &mut w.run);

    ui.heading(tr("Image"));
    let step = m.size_step();
    let side = SIDE_MIN..=SIDE_MAX;
    if let Some(v) = stepped_slider(ui, tr("Width"), r.width, side.clone(), step, false) {
        f.width = Some(v);
    }
    if let Some(v) = stepped_slider(ui, tr("Height"), r.height, side, step, false) {
        f.height = Some(v);
    }
    if m.kind == ModelKind::Video {
        // Wan's VAE compresses time 4×, keeping the first frame: 4k + 1 frames.
        if let Some(v) = stepped_slider(ui, tr("Frames"), r.frames, 1..=241, 4, false) {
            f.frames = Some(v.max(1));
        }
    }
    if let Some(v) = count_slider(ui, tr("Batch size"), r.batch, 1..=16, false) {
        f.batch = Some(v);
    }

    ui.heading(tr("Precision"));
    let names = weight_names();
    if let Some(v) = pick_weights(ui, tr("Weights"), &names, &r.weights.to_string()) {
        f.weights = Some(v);
    }
    if let Some(first) = r.text_encoder_weights.first() {
        let same = r.text_encoder_weights.iter().all(|x| x == first);
        let shown = if same {
            first.to_string()
        } else {
            tr("mixed").to_string()
        };
        if let Some(v) = pick_weights(ui, tr("Text encoder weights"), &names, &shown) {
            f.text_encoder_weights = Some(v);
        }
    }

    ui.heading(tr("Engine settings"));
    if let Some(v) = pick(ui, tr("Engine"), &ENGINES, r.engine) {
        f.engine = Some(v);
    }
    if r.engine == Engine::Diffusers {
        if let Some(v) = pick(ui, tr("CPU offload"), CpuOffload::ALL, r.cpu_offload) {
            f.cpu_offload = Some(v);
        }
        if let Some(v) = flag(ui, tr("VAE slicing (one image at a time)"), r.vae_slicing) {
            f.vae_slicing = Some(v);
        }
    } else {
        if let Some(v) = pick(ui, tr("ComfyUI VRAM mode"), VramMode::ALL, r.vram_mode) {
            f.vram_mode = Some(v);
        }
        if let Some(v) = gib_slider(
            ui,
            tr("Reserved VRAM (--reserve-vram)"),
            d.comfy_memory().map_or(0, |m| m.reserve_bytes),
            4.0,
        ) {
            f.reserve_vram_gib = Some(v);
        }
    }
    if let Some(v) = pick(ui, tr("Attention"), Attention::ALL, r.attention) {
        f.attention = Some(v);
    }

    ui.heading(tr("Memory savers"));
    if let Some(v) = flag(ui, tr("Tiled VAE decode"), r.vae_tiling) {
        f.vae_tiling = Some(v);
    }
    if let Some(v) = flag(ui, tr("Tiny VAE (TAESD)"), r.tiny_vae) {
        f.tiny_vae = Some(v);
    }
    if !d.text_encoders.is_empty()
        && let Some(v) = flag(ui, tr("Text encoders on the CPU"), r.text_encoder_on_cpu)
    {
        f.text_encoder_on_cpu = Some(v);
    }
    if let Some(v) = flag(ui, tr("Classifier-free guidance"), r.cfg) {
        f.cfg = Some(v);
    }

    ui.heading(tr("Add-ons"));
    if let Some(v) = count_slider(ui, tr("LoRAs"), r.loras, 0..=8, false) {
        f.loras = Some(v);
    }
    if r.loras > 0
        && let Some(v) = count_slider(ui, tr("LoRA rank"), r.lora_rank, 1..=256, true)
    {
        f.lora_rank = Some(v);
    }
    if m.controlnet_params > 0.0
        && let Some(v) = count_slider(ui, tr("ControlNets"), r.controlnets, 0..=4, false)
    {
        f.controlnets = Some(v);
    }
    if m.ip_adapter_params > 0.0
        && let Some(v) = flag(ui, tr("IP-Adapter"), r.ip_adapter)
    {
        f.ip_adapter = Some(v);
    }
    if let Some(v) = other_programs(ui, r.other_processes_bytes, cap_gib) {
        f.other_processes_gib = Some(v);
    }
}

/// The plan: what to change, its time and quality cost, why, and the largest size and batch
/// that fit; true when "Apply plan" was clicked.
pub fn plan_ui(ui: &mut Ui, p: &DiffusionPlan) -> bool {
    ui.add_space(6.0);
    let mut apply = false;
    if p.fits_as_is {
        ui.label(tr("Fits as is: no change needed."));
    } else if !p.strategies.is_empty() {
        let labels: Vec<&str> = p.strategies.iter().map(|s| tr(s.label())).collect();
        ui.strong(trf(
            "Recommended plan: {plan} ({time}× the time; {quality})",
            &[
                ("plan", &labels.join(" + ")),
                ("time", &format!("{:.2}", p.speed_factor)),
                ("quality", &tr(&p.quality_note)),
            ],
        ));
        ui.label(msgs(&p.why));
        apply = ui.button(tr("Apply plan")).clicked();
    } else {
        ui.label(msgs(&p.why));
    }
    ui.label(trf(
        "Peak memory: during {stage}",
        &[("stage", &tr(p.peak_stage.label()))],
    ));
    if !p.strategies.is_empty() && p.planned_peak_stage != p.peak_stage {
        ui.label(trf(
            "With the plan, peak memory: during {stage}",
            &[("stage", &tr(p.planned_peak_stage.label()))],
        ));
    }
    if p.max_width == 0 {
        ui.label(tr("No image size fits this card."));
    } else {
        let args: [(&str, &dyn std::fmt::Display); 3] = [
            ("w", &p.max_width),
            ("h", &p.max_height),
            ("batch", &p.max_batch),
        ];
        ui.label(if p.strategies.is_empty() {
            trf(
                "Largest size that fits: {w}×{h} · largest batch that fits: {batch}",
                &args,
            )
        } else {
            trf(
                "With the plan, largest size that fits: {w}×{h} · largest batch that fits: {batch}",
                &args,
            )
        });
    }
    apply
}
