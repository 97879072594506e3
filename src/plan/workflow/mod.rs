//! Planning a ComfyUI workflow (`vram-doctor plan --workflow FILE`): which models it loads,
//! the size of every sampling pass, and the stage and node where memory peaks.
//!
//! Each sampler is one pass of the diffusion engine (`memory::diffusion`): its model (traced
//! back through LoRAs and model patches to the loader), the text encoders and ControlNets its
//! conditioning comes from, the latent it denoises (traced back through latent upscales to the
//! node that made it: a hires-fix second pass runs at the upscaled size) and, when a VAE decode
//! reads its output, that decode. ComfyUI runs the passes one after another and loads, keeps
//! and unloads models between them (comfy/model_management.py `load_models_gpu` frees memory
//! for the next model only when it is needed), so the workflow's peak is the largest pass's.

pub mod changes;
pub mod files;
pub mod graph;
pub mod headers;

use crate::import::comfy::nodes::{self, Role};
use crate::import::comfy::{Format, Node, Workflow};
use crate::memory::diffusion::parts::{denoiser_bytes, text_encoder_bytes};
use crate::memory::diffusion::residency::{Stage, place};
use crate::memory::diffusion::{
    Bus, DiffusionCatalog, DiffusionModel, DiffusionWorkload, DynamicVram, ModelKind, Os, Part,
    VramMode,
};
use crate::types::dtype::WeightFormat;
use crate::types::message::Message;
use crate::types::options::Engine;
use crate::types::workload::GpuTarget;
use files::{Answers, Want, format_in_name, identify};
use serde::Serialize;

/// The ComfyUI launch settings a plan assumes (the `run.*` fields of the same names,
/// `engines::comfyui::memory`).
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    /// `--lowvram`, `--highvram` … (`VramMode`).
    pub vram_mode: VramMode,
    /// `--reserve-vram`, bytes; `None`: ComfyUI's default for the mode and OS.
    pub reserve_vram_bytes: Option<u64>,
    /// `--enable-dynamic-vram` / `--disable-dynamic-vram` / neither.
    pub dynamic_vram: DynamicVram,
    /// `--vram-headroom`, bytes.
    pub vram_headroom_bytes: u64,
    /// The PyTorch ComfyUI runs on; `None`: assumed ≥ 2.8.
    pub torch: Option<(u32, u32)>,
    pub os: Os,
    pub other_processes_bytes: u64,
}

impl Default for Launch {
    fn default() -> Self {
        let r = crate::memory::diffusion::DiffusionRun::default();
        Launch {
            vram_mode: r.vram_mode,
            reserve_vram_bytes: r.reserve_vram_bytes,
            dynamic_vram: r.dynamic_vram,
            vram_headroom_bytes: r.vram_headroom_bytes,
            torch: r.torch,
            os: r.os,
            other_processes_bytes: 0,
        }
    }
}

impl Launch {
    /// The launch a workload file's `run.*` fields describe (`vram_mode`, `reserve_vram_gib`,
    /// `dynamic_vram`, `vram_headroom_gib`, `torch_version`, `os`, `other_processes_gib`),
    /// checked as `resolve::diffusion` checks them.
    pub fn from_fields(r: &crate::types::workload::RunSection) -> Result<Launch, String> {
        let gib = crate::resolve::diffusion::gib_field;
        let d = Launch::default();
        Ok(Launch {
            vram_mode: r.vram_mode.unwrap_or(d.vram_mode),
            reserve_vram_bytes: gib("run.reserve_vram_gib", r.reserve_vram_gib)?,
            dynamic_vram: r.dynamic_vram.unwrap_or(d.dynamic_vram),
            vram_headroom_bytes: gib("run.vram_headroom_gib", r.vram_headroom_gib)?.unwrap_or(0),
            torch: crate::resolve::diffusion::torch_field(r.torch_version.as_deref())?,
            os: r.os.unwrap_or(d.os),
            other_processes_bytes: gib("run.other_processes_gib", r.other_processes_gib)?
                .unwrap_or(0),
        })
    }
}

/// A node that loads a model, as listed in the result (DESIGN.md `workflow.nodes`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadedFile {
    pub id: String,
    pub class_type: String,
    pub file: String,
    /// The catalog preset the file was identified as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Storage format on the GPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights: Option<String>,
    /// Weight bytes on the GPU when loaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Identified from the file's header in the models folder (`--comfy-models`), its
    /// parameters counted there; otherwise from its name.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub from_header: bool,
}

/// One sampling pass.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pass {
    /// The sampler node.
    pub node: String,
    pub class_type: String,
    pub model: String,
    /// The checkpoint or UNet loader of its model.
    pub loader_node: String,
    /// The node that made its latent (EmptyLatentImage …).
    pub latent_node: String,
    /// The nodes its text encoders come from (CLIP loaders, or the checkpoint).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub text_encoder_nodes: Vec<String>,
    pub width: u32,
    pub height: u32,
    pub frames: u32,
    pub batch: u32,
    /// Classifier-free guidance runs an uncond batch (cfg ≠ 1 and a guider that has one).
    pub cfg: bool,
    /// The VAE decode that reads this pass's output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_node: Option<String>,
    pub vae_tiled: bool,
    /// The tiled decode's tile side, pixels (its `tile_size` widget).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vae_tile: Option<u32>,
    /// The LoRA loaders on its model's way.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lora_nodes: Vec<String>,
    /// The ControlNet loaders its conditioning comes from.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub controlnet_nodes: Vec<String>,
    /// The stage of this pass where memory peaks, and its node.
    pub peak_stage: &'static str,
    pub peak_node: String,
    /// The least the card must hold for this pass to stay whole in VRAM (the verdict's need).
    pub need_bytes: u64,
    /// What ComfyUI would hold on this card during the pass (its caches fill what is free).
    pub use_bytes: u64,
    #[serde(skip)]
    pub workload: DiffusionWorkload,
}

/// The workflow's plan (DESIGN.md `workflow` object of a workflow plan).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkflowPlan {
    pub format: Format,
    /// Every loader node with its file and memory.
    pub nodes: Vec<LoadedFile>,
    /// Nodes the planner does not know, as "id ClassType": reported, never dropped.
    pub unmodelled_nodes: Vec<String>,
    pub passes: Vec<Pass>,
    /// Index into `passes` of the pass where the workflow peaks.
    pub peak_pass: usize,
    /// The stage and node of the workflow's peak.
    pub peak_stage: &'static str,
    pub peak_node: String,
    /// The plan's fixes for the peak pass as changes to the workflow, cheapest plan first;
    /// empty when it fits as it is.
    pub changes: Vec<changes::WorkflowChange>,
    /// The ComfyUI memory behaviour the plan assumes, one line.
    pub assumes: String,
    pub warnings: Vec<Message>,
}

impl WorkflowPlan {
    pub fn peak(&self) -> &Pass {
        &self.passes[self.peak_pass]
    }
}

fn stage_name(s: Stage) -> &'static str {
    match s {
        Stage::Encode => "text_encode",
        Stage::Denoise => "sampling",
        Stage::Decode => "vae_decode",
    }
}

fn shown(n: &Node) -> String {
    format!("node {} ({})", n.id, n.class_type)
}

/// The file names a loader node loads, with the kind each one is.
pub(crate) fn loader_files(n: &Node) -> Vec<(String, Want)> {
    let role = graph::role(n);
    let names: &[&str] = match role {
        Some(Role::Checkpoint) => &["ckpt_name"],
        Some(Role::Unet | Role::UnetGguf) => &["unet_name"],
        Some(Role::Clip) => &[
            "clip_name",
            "clip_name1",
            "clip_name2",
            "clip_name3",
            "clip_name4",
        ],
        Some(Role::Vae) => &["vae_name"],
        Some(Role::Lora) => &["lora_name"],
        Some(Role::Controlnet) => &["control_net_name"],
        Some(Role::ClipVision) => &["clip_name"],
        Some(Role::UpscaleModel) => &["model_name"],
        _ => &[],
    };
    let want = match role {
        Some(Role::Clip) => Want::TextEncoder,
        Some(Role::Vae) => Want::Vae,
        _ => Want::Model,
    };
    names
        .iter()
        .filter_map(|k| n.text(k))
        .map(|f| (f.to_string(), want))
        .collect()
}

/// Whether a VAE file is one of the tiny autoencoders ComfyUI's VAELoader offers (taesd,
/// taesdxl, taesd3, taef1; nodes.py `VAELoader.vae_list`).
fn is_tiny_vae(name: &str) -> bool {
    files::tokens(files::stem(name))
        .iter()
        .any(|t| matches!(t.as_str(), "taesd" | "taesdxl" | "taesd3" | "taef1"))
}

/// The planner's reading of one workflow on one card.
struct Planner<'a> {
    w: &'a Workflow,
    gpu: GpuTarget,
    bus: Bus,
    launch: &'a Launch,
    answers: &'a Answers,
    /// The files found in the models folder (`--comfy-models`), by the name the workflow
    /// gives, with what their headers say.
    headers: std::collections::BTreeMap<String, headers::Identified>,
    warnings: Vec<Message>,
}

/// The denoising model a loader loads and its storage format.
struct LoadedModel {
    id: String,
    weights: WeightFormat,
    /// The format its file states (a checkpoint's text encoders share it).
    stated: Option<WeightFormat>,
}

impl<'a> Planner<'a> {
    /// The catalog id of a file: the user's answer, else what its header says, else its name.
    fn id_of(&self, name: &str, want: Want) -> Option<String> {
        self.answers
            .get(name, want)
            .map(str::to_string)
            .or_else(|| self.headers.get(name).map(|h| h.id.clone()))
            .or_else(|| identify(name, want).map(str::to_string))
    }

    /// The storage format of a file: its header's, else the one its name states.
    fn stated(&self, name: &str) -> Option<WeightFormat> {
        self.headers
            .get(name)
            .map(|h| h.weights)
            .or_else(|| format_in_name(name))
    }

    /// A model with its denoiser's parameters counted in the file's header when it was read.
    fn model_as_loaded(&self, model: &DiffusionModel, file: &str) -> DiffusionModel {
        let mut m = model.clone();
        if let Some(h) = self.headers.get(file).filter(|h| h.id == model.id) {
            m.params = h.params as f64;
        }
        m
    }

    /// A part with its parameters counted in the file's header when it was read.
    fn part_as_loaded(&self, part: &Part, file: &str) -> Part {
        let mut p = part.clone();
        if let Some(h) = self.headers.get(file).filter(|h| h.id == part.id) {
            p.params = h.params as f64;
        }
        p
    }

    /// Reads the header of every model file the workflow's loaders name in the models folder
    /// (`--comfy-models`). A file not there is reported and identified by its name; a file
    /// whose header matches no preset is asked for (a model) or reported (an encoder or VAE,
    /// then planned as the model's own), unless the user named its preset.
    fn read_headers(&mut self) -> Result<(), String> {
        let Some(dir) = self.answers.models.as_ref() else {
            return Ok(());
        };
        for n in self.w.nodes.values() {
            let Some(role) = graph::role(n) else { continue };
            if !matches!(
                role,
                Role::Checkpoint | Role::Unet | Role::UnetGguf | Role::Clip | Role::Vae
            ) {
                continue;
            }
            for (file, want) in loader_files(n) {
                if self.headers.contains_key(&file) || is_tiny_vae(&file) {
                    continue;
                }
                let Some(path) = dir.find(role, want, &file) else {
                    self.warnings.push(
                        Message::new("warn.workflow.file_not_found")
                            .text("node", shown(n))
                            .text("file", crate::printable::printable_cut(&file, 120))
                            .text("dir", dir.looked_in(role, want)),
                    );
                    continue;
                };
                match headers::identify(&path, want) {
                    Ok(h) => {
                        if let Some(by_name) = identify(&file, want).filter(|i| *i != h.id) {
                            self.warnings.push(
                                Message::new("warn.workflow.header_differs")
                                    .text("node", shown(n))
                                    .text("file", crate::printable::printable_cut(&file, 120))
                                    .text("by_name", by_name)
                                    .text("header", h.id.clone()),
                            );
                        }
                        self.headers.insert(file, h);
                    }
                    Err(_) if self.answers.get(&file, want).is_some() => {}
                    Err(e) if want == Want::Model => {
                        return Err(format!(
                            "{} loads {e}; say which it is with --comfy-file '{}=PRESET' (presets: `vram-doctor presets list diffusion`)",
                            shown(n),
                            crate::printable::printable_cut(files::stem(&file), 120)
                        ));
                    }
                    Err(e) => self.warnings.push(
                        Message::new("warn.workflow.header_unread")
                            .text("node", shown(n))
                            .text("error", e),
                    ),
                }
            }
        }
        Ok(())
    }

    fn sixteen(&self) -> WeightFormat {
        if self.gpu.bf16 {
            WeightFormat::Bf16
        } else {
            WeightFormat::Fp16
        }
    }

    fn model(&self, loader: &Node) -> Result<LoadedModel, String> {
        let name = loader_files(loader)
            .into_iter()
            .next()
            .map(|(f, _)| f)
            .ok_or_else(|| format!("{} names no model file", shown(loader)))?;
        let id = self.id_of(&name, Want::Model).ok_or_else(|| {
            format!(
                "{} loads '{}', which is not a model the planner knows; say which it is with --comfy-file '{}=PRESET' (presets: `vram-doctor presets list diffusion`)",
                shown(loader),
                crate::printable::printable_cut(&name, 120),
                crate::printable::printable_cut(files::stem(&name), 120)
            )
        })?;
        let stated = self.stated(&name);
        // UNETLoader weight_dtype fp8_e4m3fn / fp8_e4m3fn_fast / fp8_e5m2 stores the weights in
        // fp8 whatever the file holds (ComfyUI nodes.py UNETLoader.load_unet).
        let cast = loader
            .text("weight_dtype")
            .filter(|d| d.starts_with("fp8"))
            .map(|_| WeightFormat::Fp8);
        let weights = match (cast, stated, graph::role(loader)) {
            (Some(f), _, _) => f,
            (None, Some(f), _) => f,
            (None, None, Some(Role::UnetGguf)) => {
                return Err(format!(
                    "{} loads '{}', a GGUF file whose name states no quantization (Q8_0, Q4_K_S …); name it in the file or use --comfy-file",
                    shown(loader),
                    crate::printable::printable_cut(&name, 120)
                ));
            }
            // ComfyUI computes (and stores) an unmarked checkpoint in its 16-bit dtype
            // (model_management.py `unet_dtype`: bf16 where supported, else fp16).
            (None, None, _) => self.sixteen(),
        };
        // An fp32 file is cast to the 16-bit dtype on load.
        let weights = if weights == WeightFormat::Fp32 {
            self.sixteen()
        } else {
            weights
        };
        Ok(LoadedModel {
            id,
            weights,
            stated,
        })
    }

    /// The text encoders a pass's conditioning comes from: a checkpoint's own (its CLIP
    /// output, slot 1) or the files of CLIP loaders.
    fn text_encoders(
        &mut self,
        cond: &[(&Node, u32)],
        ckpt: Option<&LoadedModel>,
        default: &[Part],
    ) -> (Vec<Part>, Vec<WeightFormat>, bool) {
        let cat = DiffusionCatalog::get();
        let sixteen = self.sixteen();
        let mut parts = Vec::new();
        let mut formats = Vec::new();
        let mut on_cpu = false;
        let mut unknown = Vec::new();
        for (n, slot) in cond {
            match graph::role(n) {
                Some(Role::Checkpoint) if *slot == 1 => {
                    let m = cat.model(&ckpt.map_or(String::new(), |c| c.id.clone()));
                    let own = m.map(|m| m.text_encoders.clone()).unwrap_or_default();
                    for te in own.iter().filter_map(|t| cat.part(t)) {
                        // A checkpoint saved in fp8 holds its large encoders (T5) in fp8 too.
                        let f = match ckpt.and_then(|c| c.stated) {
                            Some(WeightFormat::Fp8) if te.params > 1e9 => WeightFormat::Fp8,
                            _ => sixteen,
                        };
                        parts.push(te.clone());
                        formats.push(f);
                    }
                }
                Some(Role::Clip) => {
                    on_cpu |= n.text("device") == Some("cpu");
                    for (file, _) in loader_files(n) {
                        match self
                            .id_of(&file, Want::TextEncoder)
                            .and_then(|id| cat.part(&id))
                        {
                            Some(p) => {
                                parts.push(self.part_as_loaded(p, &file));
                                formats.push(match self.stated(&file) {
                                    Some(WeightFormat::Fp32) | None => sixteen,
                                    Some(f) => f,
                                });
                            }
                            None => unknown.push(format!(
                                "'{}' ({})",
                                crate::printable::printable_cut(&file, 120),
                                shown(n)
                            )),
                        }
                    }
                }
                _ => {}
            }
        }
        if !unknown.is_empty() || parts.is_empty() {
            if !unknown.is_empty() {
                self.warnings.push(
                    Message::new("warn.workflow.text_encoder_unknown")
                        .text("files", unknown.join(", "))
                        .text(
                            "own",
                            default
                                .iter()
                                .map(|p| p.id.as_str())
                                .collect::<Vec<_>>()
                                .join(", "),
                        ),
                );
            }
            return (default.to_vec(), vec![sixteen; default.len()], on_cpu);
        }
        // The model's own encoders in another order (DualCLIPLoader lists T5 first for Flux):
        // put them in the catalog's order, which per-encoder formats follow.
        let mut ids: Vec<&str> = parts.iter().map(|p| p.id.as_str()).collect();
        let mut own: Vec<&str> = default.iter().map(|p| p.id.as_str()).collect();
        ids.sort_unstable();
        own.sort_unstable();
        if ids == own {
            let pairs: Vec<(Part, WeightFormat)> = default
                .iter()
                .filter_map(|d| {
                    let i = parts.iter().position(|p| p.id == d.id)?;
                    Some((parts[i].clone(), formats[i]))
                })
                .collect();
            let (parts, formats) = pairs.into_iter().unzip();
            return (parts, formats, on_cpu);
        }
        (parts, formats, on_cpu)
    }

    /// The VAE a decode node uses: a checkpoint's own (slot 2) or a VAELoader's file.
    fn vae(&mut self, decode: &Node, default: &Part) -> (Part, bool) {
        let Some((id, _)) = decode.link("vae") else {
            return (default.clone(), false);
        };
        let Some(src) = self.w.node(id) else {
            return (default.clone(), false);
        };
        if graph::role(src) == Some(Role::Checkpoint) {
            let own = self
                .model(src)
                .ok()
                .and_then(|m| {
                    DiffusionCatalog::get()
                        .model(&m.id)
                        .ok()
                        .map(|m| m.vae.clone())
                })
                .and_then(|v| DiffusionCatalog::get().part(&v).cloned());
            return (own.unwrap_or_else(|| default.clone()), false);
        }
        let Some((file, _)) = loader_files(src).into_iter().next() else {
            return (default.clone(), false);
        };
        if is_tiny_vae(&file) {
            return (default.clone(), true);
        }
        match self
            .id_of(&file, Want::Vae)
            .and_then(|i| DiffusionCatalog::get().part(&i))
        {
            Some(p) => (self.part_as_loaded(p, &file), false),
            None => {
                self.warnings.push(
                    Message::new("warn.workflow.vae_unknown")
                        .text("file", crate::printable::printable_cut(&file, 120))
                        .text("node", shown(src))
                        .text("planned", default.id.clone()),
                );
                (default.clone(), false)
            }
        }
    }

    /// The node a sampler's guider is, for SamplerCustomAdvanced.
    fn guider<'n>(&self, s: &'n Node) -> Option<&'n Node>
    where
        'a: 'n,
    {
        if graph::role(s) != Some(Role::SamplerCustom) {
            return None;
        }
        s.link("guider").and_then(|(id, _)| self.w.node(id))
    }

    /// The MODEL input of a sampler, or of its guider.
    fn model_link<'n>(&self, s: &'n Node) -> Option<(&'n str, u32)>
    where
        'a: 'n,
    {
        match self.guider(s) {
            Some(g) => g.link("model"),
            None => s.link("model"),
        }
    }

    /// Whether a sampler runs an uncond batch, and the inputs its conditioning comes from.
    fn guidance<'n>(&mut self, s: &'n Node, model_cfg: bool) -> (bool, Vec<(&'n str, u32)>)
    where
        'a: 'n,
    {
        // comfy/samplers.py sampling_function: at cfg 1.0 the uncond pass is skipped
        // (`math.isclose(cond_scale, 1.0)`, unless disable_cfg1_optimization).
        let cfg_of = |n: &Node, warnings: &mut Vec<Message>| match n
            .value("cfg")
            .map(serde_json::Value::as_f64)
        {
            None => false,
            Some(Some(c)) => (c - 1.0).abs() > 1e-9,
            Some(None) => {
                warnings.push(Message::new("warn.workflow.cfg_not_number").text("node", shown(n)));
                model_cfg
            }
        };
        let conds = |n: &'n Node| -> Vec<(&'n str, u32)> {
            ["positive", "negative", "conditioning"]
                .iter()
                .filter_map(|k| n.link(k))
                .collect()
        };
        if graph::role(s) != Some(Role::SamplerCustom) {
            if s.link("cfg").is_some() {
                self.warnings
                    .push(Message::new("warn.workflow.cfg_linked").text("node", shown(s)));
                return (model_cfg, conds(s));
            }
            return (cfg_of(s, &mut self.warnings), conds(s));
        }
        match self.guider(s) {
            Some(g) if graph::role(g) == Some(Role::Guider) => {
                let has_cfg =
                    nodes::get(&g.class_type).is_some_and(|t| t.widgets.iter().any(|x| x == "cfg"));
                (has_cfg && cfg_of(g, &mut self.warnings), conds(g))
            }
            Some(g) => {
                self.warnings.push(
                    Message::new("warn.workflow.guider_unknown")
                        .text("node", shown(s))
                        .text("guider", shown(g)),
                );
                (model_cfg, conds(g))
            }
            None => (model_cfg, Vec::new()),
        }
    }

    fn pass(&mut self, s: &Node, decodes: &[&Node]) -> Result<Pass, String> {
        let w = self.w;
        let path = graph::model_path(w, self.model_link(s));
        for u in &path.unknown {
            self.warnings.push(
                Message::new("warn.workflow.between_model")
                    .text("node", shown(u))
                    .text("sampler", shown(s)),
            );
        }
        let loader = path.loader.ok_or_else(|| {
            format!(
                "{}: its model does not lead back to a model loader",
                shown(s)
            )
        })?;
        let m = self.model(loader)?;
        let mut wl = crate::resolve::diffusion::for_preset(self.gpu.clone(), self.bus, &m.id)?;
        if let Some((file, _)) = loader_files(loader).into_iter().next() {
            wl.model = self.model_as_loaded(&wl.model, &file);
        }
        let (cfg, cond_links) = self.guidance(s, wl.model.cfg);
        let cond = graph::conditioning(w, &cond_links);
        let ckpt = (graph::role(loader) == Some(Role::Checkpoint)).then_some(&m);
        let (tes, te_formats, te_cpu) = self.text_encoders(&cond, ckpt, &wl.text_encoders.clone());
        let lat =
            graph::latent(w, s.link("latent_image")).map_err(|e| format!("{}: {e}", shown(s)))?;
        self.warnings.extend(lat.notes.iter().cloned());
        let video = wl.model.kind == ModelKind::Video;
        if video != (lat.temporal > 0) {
            let id = if video {
                "warn.workflow.video_model_image_latent"
            } else {
                "warn.workflow.image_model_video_latent"
            };
            self.warnings.push(
                Message::new(id)
                    .text("node", shown(s))
                    .text("model", wl.model.id.clone())
                    .text("latent", lat.source.clone()),
            );
        } else if video && lat.temporal != wl.vae.temporal_compression {
            self.warnings.push(
                Message::new("warn.workflow.temporal_differs")
                    .text("latent", lat.source.clone())
                    .int("frames", lat.temporal)
                    .text("model", wl.model.id.clone())
                    .int("vae", wl.vae.temporal_compression),
            );
        }
        let decode = decodes.first().copied();
        let r = &mut wl.run;
        r.weights = m.weights;
        r.width = lat.width / 8 * 8;
        r.height = lat.height / 8 * 8;
        r.frames = if video { lat.frames.max(1) } else { 1 };
        r.batch = lat.batch.max(1);
        r.cfg = cfg;
        r.loras = path.loras.len() as u32;
        r.controlnets = cond
            .iter()
            .filter(|(n, _)| graph::role(n) == Some(Role::Controlnet))
            .count() as u32;
        r.text_encoder_on_cpu = te_cpu;
        let l = self.launch;
        (r.vram_mode, r.reserve_vram_bytes, r.dynamic_vram) =
            (l.vram_mode, l.reserve_vram_bytes, l.dynamic_vram);
        (r.vram_headroom_bytes, r.torch, r.os) = (l.vram_headroom_bytes, l.torch, l.os);
        r.other_processes_bytes = self.launch.other_processes_bytes;
        r.vae_decode = decode.is_some();
        r.vae_tiling = decode.is_some_and(|d| graph::role(d) == Some(Role::DecodeTiled));
        if let Some(d) = decode.filter(|_| r.vae_tiling) {
            // VAEDecodeTiled's tile_size, 64..=4096 (nodes.py `VAEDecodeTiled.INPUT_TYPES`).
            match d.value("tile_size").map(serde_json::Value::as_u64) {
                Some(Some(t)) if (64..=4096).contains(&t) => r.vae_tile = t as u32,
                None => {}
                Some(_) => self.warnings.push(
                    Message::new("warn.workflow.tile_size")
                        .text("node", shown(d))
                        .int("tile", r.vae_tile),
                ),
            }
        }
        wl.text_encoders = tes;
        wl.run.text_encoder_weights = te_formats;
        if let Some(d) = decode {
            let default = wl.vae.clone();
            let (vae, tiny) = self.vae(d, &default);
            wl.vae = vae;
            wl.run.tiny_vae = tiny;
        }
        if wl.run.controlnets > 0 && wl.model.controlnet_params <= 0.0 {
            self.warnings.push(
                Message::new("warn.workflow.controlnet_unknown")
                    .text("node", shown(s))
                    .text("model", wl.model.id.clone()),
            );
        }
        let placed = place(&wl);
        let v = crate::plan::verdict::of_diffusion(&wl);
        let peak_node = match placed.peak {
            Stage::Denoise => s.id.clone(),
            Stage::Decode => decode.map_or(s.id.clone(), |d| d.id.clone()),
            Stage::Encode => cond
                .iter()
                .find(|(n, _)| n.inputs.contains_key("clip"))
                .map_or(s.id.clone(), |(n, _)| n.id.clone()),
        };
        Ok(Pass {
            node: s.id.clone(),
            class_type: s.class_type.clone(),
            model: wl.model.id.clone(),
            loader_node: loader.id.clone(),
            latent_node: lat.source.clone(),
            text_encoder_nodes: cond
                .iter()
                .filter(|(n, slot)| match graph::role(n) {
                    Some(Role::Clip) => true,
                    Some(Role::Checkpoint) => *slot == 1,
                    _ => false,
                })
                .map(|(n, _)| n.id.clone())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
            width: wl.run.width,
            height: wl.run.height,
            frames: wl.run.frames,
            batch: wl.run.batch,
            cfg: wl.run.cfg,
            decode_node: decode.map(|d| d.id.clone()),
            vae_tiled: wl.run.vae_tiling,
            vae_tile: wl.run.vae_tiling.then_some(wl.run.vae_tile),
            lora_nodes: path.loras.iter().map(|n| n.id.clone()).collect(),
            controlnet_nodes: cond
                .iter()
                .filter(|(n, _)| graph::role(n) == Some(Role::Controlnet))
                .map(|(n, _)| n.id.clone())
                .collect(),
            peak_stage: stage_name(placed.peak),
            peak_node,
            need_bytes: v.need_bytes,
            use_bytes: v.use_bytes,
            workload: wl,
        })
    }
}

/// The sampler whose output a decode node reads (through latent operations).
fn sampler_of<'a>(w: &'a Workflow, decode: &Node) -> Option<&'a Node> {
    let mut link = decode.link("samples");
    for _ in 0..=w.nodes.len() {
        let n = w.node(link?.0)?;
        match graph::role(n) {
            Some(Role::Sampler | Role::SamplerCustom) => return Some(n),
            Some(Role::LatentUpscale | Role::LatentUpscaleBy | Role::LatentRepeat) => {
                link = n.link("samples")
            }
            _ => {
                link = nodes::get(&n.class_type)
                    .and_then(|t| t.through.as_deref())
                    .and_then(|t| n.link(t))
                    .or_else(|| n.link("samples"))
            }
        }
    }
    None
}

/// The bytes a loader's file takes on the GPU, by the catalog.
fn loaded_bytes(p: &Planner, n: &Node, passes: &[Pass]) -> Vec<LoadedFile> {
    let cat = DiffusionCatalog::get();
    let e = Engine::ComfyUi;
    let sixteen = p.sixteen();
    loader_files(n)
        .into_iter()
        .map(|(file, want)| {
            let mut f = LoadedFile {
                id: n.id.clone(),
                class_type: n.class_type.clone(),
                file: file.clone(),
                preset: None,
                weights: None,
                bytes: None,
                from_header: false,
            };
            match graph::role(n) {
                Some(Role::Checkpoint | Role::Unet | Role::UnetGguf) => {
                    if let Ok(m) = p.model(n)
                        && let Ok(model) = cat.model(&m.id)
                    {
                        let model = p.model_as_loaded(model, &file);
                        f.from_header = p.headers.contains_key(&file);
                        f.bytes = Some(denoiser_bytes(&model, m.weights, e) as u64);
                        f.weights = Some(m.weights.to_string());
                        f.preset = Some(m.id);
                    }
                }
                Some(Role::Clip | Role::Vae) => {
                    if let Some(part) = p
                        .id_of(&file, want)
                        .and_then(|i| cat.part(&i))
                        .map(|part| p.part_as_loaded(part, &file))
                    {
                        f.from_header = p.headers.contains_key(&file);
                        let fmt = match p.stated(&file) {
                            Some(WeightFormat::Fp32) | None => sixteen,
                            Some(x) => x,
                        };
                        f.bytes = Some(if want == Want::Vae {
                            (part.params * 2.0) as u64
                        } else {
                            text_encoder_bytes(&part, fmt, e) as u64
                        });
                        f.weights = Some(fmt.to_string());
                        f.preset = Some(part.id.clone());
                    }
                }
                Some(Role::Lora) => {
                    // The model the LoRA patches: the pass whose model path holds it.
                    if let Some(pass) = passes.iter().find(|x| x.lora_nodes.contains(&n.id)) {
                        let m = &pass.workload;
                        f.bytes = Some(
                            (f64::from(m.run.lora_rank)
                                * m.model.lora_mib_per_rank
                                * crate::units::MIB) as u64,
                        );
                    }
                }
                // A ControlNet in the compute dtype, sized for the model it steers (the engine's
                // adapters figure).
                Some(Role::Controlnet) => {
                    if let Some(pass) = passes.iter().find(|x| x.controlnet_nodes.contains(&n.id)) {
                        let m = &pass.workload;
                        f.bytes = Some((m.model.controlnet_params * m.act_bytes()) as u64);
                    }
                }
                _ => {}
            }
            f
        })
        .collect()
}

/// Plans a workflow on a card with ComfyUI's launch settings.
pub fn plan(
    w: &Workflow,
    gpu: GpuTarget,
    bus: Bus,
    launch: &Launch,
    answers: &Answers,
) -> Result<WorkflowPlan, String> {
    let mut p = Planner {
        w,
        gpu,
        bus,
        launch,
        answers,
        headers: Default::default(),
        warnings: w.notes.clone(),
    };
    p.read_headers()?;
    let decodes: Vec<&Node> = w
        .nodes
        .values()
        .filter(|n| matches!(graph::role(n), Some(Role::Decode | Role::DecodeTiled)))
        .collect();
    let samplers: Vec<&Node> = w
        .nodes
        .values()
        .filter(|n| matches!(graph::role(n), Some(Role::Sampler | Role::SamplerCustom)))
        .collect();
    if samplers.is_empty() {
        return Err("the workflow has no sampler (KSampler, KSamplerAdvanced, SamplerCustom, SamplerCustomAdvanced): nothing runs a diffusion model".into());
    }
    let mut passes = Vec::new();
    for s in &samplers {
        let mine: Vec<&Node> = decodes
            .iter()
            .copied()
            .filter(|d| sampler_of(w, d).is_some_and(|x| x.id == s.id))
            .collect();
        passes.push(p.pass(s, &mine)?);
    }
    // Passes in the order they run: a pass whose latent comes from another runs after it.
    passes.sort_by_key(|x| depth(w, &x.node));
    let peak_pass = passes
        .iter()
        .enumerate()
        .max_by_key(|(_, x)| x.need_bytes)
        .map_or(0, |(i, _)| i);
    let models: std::collections::BTreeSet<&str> =
        passes.iter().map(|x| x.model.as_str()).collect();
    if models.len() > 1 {
        p.warnings.push(
            Message::new("warn.workflow.models")
                .int("n", models.len() as u64)
                .text(
                    "models",
                    models.iter().copied().collect::<Vec<_>>().join(", "),
                ),
        );
    }
    let mut nodes_out = Vec::new();
    let not_modelled = unmodelled(w);
    for n in w.nodes.values() {
        match graph::role(n) {
            None => {}
            Some(Role::ClipVision | Role::UpscaleModel | Role::Encode) => {
                p.warnings
                    .push(Message::new("warn.workflow.not_counted").text("node", shown(n)));
                nodes_out.extend(loaded_bytes(&p, n, &passes));
            }
            Some(_) => nodes_out.extend(loaded_bytes(&p, n, &passes)),
        }
    }
    if !not_modelled.is_empty() {
        p.warnings.push(
            Message::new("warn.workflow.not_modelled").text("nodes", not_modelled.join(", ")),
        );
    }
    let launch_line = launch_line(launch, &passes[peak_pass].workload);
    let peak = &passes[peak_pass];
    let mut out = WorkflowPlan {
        format: w.format,
        nodes: nodes_out,
        unmodelled_nodes: not_modelled,
        peak_stage: peak.peak_stage,
        peak_node: peak.peak_node.clone(),
        passes,
        peak_pass,
        changes: Vec::new(),
        assumes: launch_line,
        warnings: p.warnings,
    };
    out.changes = changes::of(w, &out);
    Ok(out)
}

/// The nodes of a workflow the planner does not know, as "id ClassType" (custom nodes, newer
/// core nodes): reported, never dropped.
pub fn unmodelled(w: &Workflow) -> Vec<String> {
    w.nodes
        .values()
        .filter(|n| graph::role(n).is_none())
        .map(|n| format!("{} {}", n.id, n.class_type))
        .collect()
}

/// The launch a plan assumes, in one line: the memory mode and why, the VRAM flag and what
/// ComfyUI keeps free.
fn launch_line(launch: &Launch, w: &DiffusionWorkload) -> String {
    let flag = match launch.vram_mode {
        VramMode::Normal => "no VRAM flag".to_string(),
        m => format!("--{m}"),
    };
    match w.comfy_memory() {
        Some(m) => format!(
            "ComfyUI with {}; {flag}; keeps {} free{}",
            m.why,
            crate::units::human(m.reserve_bytes),
            if m.headroom_bytes > 0 {
                format!(
                    " + {} (--vram-headroom)",
                    crate::units::human(m.headroom_bytes)
                )
            } else {
                String::new()
            }
        ),
        None => flag,
    }
}

/// How many samplers a sampler's latent passes through before it (0 for the first pass).
fn depth(w: &Workflow, sampler: &str) -> usize {
    let mut d = 0;
    let mut link = w.node(sampler).and_then(|n| n.link("latent_image"));
    for _ in 0..=w.nodes.len() {
        let Some(n) = link.and_then(|(id, _)| w.node(id)) else {
            break;
        };
        if matches!(graph::role(n), Some(Role::Sampler | Role::SamplerCustom)) {
            d += 1;
            link = n.link("latent_image");
        } else {
            link = n.link("samples").or_else(|| n.link("latent_image"));
        }
    }
    d
}
