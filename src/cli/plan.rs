//! `vram-doctor plan`: a workload from a file and/or flags → breakdown, verdict and plan.

use super::CliError;
use super::out::{out, outln};
use crate::memory::any::AnyWorkload;
use crate::memory::{Device, DeviceMemory, Workload, WorkloadFile};
use crate::plan::{Details, PlanResult, plan_any};
use crate::resolve::resolve_any;
use crate::types::options::*;
use crate::types::workload::RunSection;
use crate::units::human;
use clap::Args;
use std::path::{Path, PathBuf};

/// `RunFlags` from the rows of `run_fields!` (`types/run_fields.rs`): one flag per `[run]`
/// field, in the file's order, and `apply`, which sets each given flag's field. A row's
/// `value` flag is an `Option` of the field's type, `on`/`off` a switch setting `true`/`false`.
macro_rules! run_flags {
    (@rows [$($flags:tt)*] [$($value:ident)*] [$($on:ident)*] [$($off:ident)*]) => {
        /// The `[run]` fields of the workload file as `plan` flags.
        #[derive(Debug, Args, Default)]
        pub struct RunFlags {
            $($flags)*
        }

        impl RunFlags {
            /// The file's `[run]` with each field given as a flag set from it.
            pub fn apply(&self, r: &mut RunSection) {
                $(set(&mut r.$value, self.$value.clone());)*
                $(set(&mut r.$on, self.$on.then_some(true));)*
                $(set(&mut r.$off, self.$off.then_some(false));)*
            }
        }
    };
    (@rows [$($flags:tt)*] [$($value:ident)*] $on:tt $off:tt
        $(#[$doc:meta])* $name:ident: $ty:ty, $kind:ident, value($($arg:tt)*) { $(#[$help:meta])* },
        $($rest:tt)*) => {
        run_flags!(@rows [$($flags)* $(#[$help])* #[arg($($arg)*)] pub $name: Option<$ty>,]
            [$($value)* $name] $on $off $($rest)*);
    };
    (@rows [$($flags:tt)*] $value:tt [$($on:ident)*] $off:tt
        $(#[$doc:meta])* $name:ident: $ty:ty, $kind:ident, on($($arg:tt)*) { $(#[$help:meta])* },
        $($rest:tt)*) => {
        run_flags!(@rows [$($flags)* $(#[$help])* #[arg($($arg)*)] pub $name: bool,]
            $value [$($on)* $name] $off $($rest)*);
    };
    (@rows [$($flags:tt)*] $value:tt $on:tt [$($off:ident)*]
        $(#[$doc:meta])* $name:ident: $ty:ty, $kind:ident, off($($arg:tt)*) { $(#[$help:meta])* },
        $($rest:tt)*) => {
        run_flags!(@rows [$($flags)* $(#[$help])* #[arg($($arg)*)] pub $name: bool,]
            $value $on [$($off)* $name] $($rest)*);
    };
    ($($rows:tt)*) => { run_flags!(@rows [] [] [] [] $($rows)*); };
}
crate::types::run_fields::run_fields!(run_flags);

/// Flags mirror the workload file's fields; a flag overrides the file.
#[derive(Debug, Args, Default)]
pub struct PlanArgs {
    /// Workload file (TOML, the contract in DESIGN.md).
    #[arg(long)]
    pub workload: Option<PathBuf>,
    /// A ComfyUI workflow (UI or API JSON, or a PNG ComfyUI saved with one embedded): plan
    /// every sampling pass it runs, with the models its loaders name.
    #[arg(long)]
    pub workflow: Option<PathBuf>,
    /// FILE=PRESET: which diffusion model or part a workflow's file is, for names the planner
    /// does not know (repeat for several).
    #[arg(long, requires = "workflow")]
    pub comfy_file: Vec<String>,
    /// ComfyUI's folder (or its models folder): each model file the workflow names is found
    /// there (checkpoints, diffusion_models, text_encoders, vae …) and identified exactly from
    /// its header instead of its name.
    #[arg(long, requires = "workflow", value_name = "DIR")]
    pub comfy_models: Option<PathBuf>,
    /// Print the JSON result instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print the resolved workload (file + flags + presets, checked: the card with its
    /// bandwidth, PCIe and host, the model, every run knob with its default) as JSON, and plan
    /// nothing: what a harness or generator reads instead of re-implementing the resolution.
    #[arg(long, conflicts_with_all = ["json", "export", "workflow"])]
    pub print_resolved: bool,
    /// GPU preset id (see `vram-doctor presets list gpus`).
    #[arg(long)]
    pub gpu: Option<String>,
    /// GPU memory in GiB, instead of (or overriding) a preset.
    #[arg(long)]
    pub vram_gib: Option<f64>,
    /// Number of GPUs used together.
    #[arg(long)]
    pub gpus: Option<u32>,
    /// Model preset id (see `vram-doctor presets list models`).
    #[arg(long)]
    pub model: Option<String>,
    /// A model file: config.json, *.safetensors, *.safetensors.index.json or *.gguf.
    #[arg(long)]
    pub model_file: Option<PathBuf>,
    /// The `[run]` fields (`types/run_fields.rs`), each a flag.
    #[command(flatten)]
    pub run: RunFlags,
    /// llama.cpp --cpu-moe (-ot exps=CPU): every layer's experts in system RAM.
    #[arg(long)]
    pub cpu_moe: bool,
    /// System RAM of the machine planned for, GiB (default: this machine's).
    #[arg(long)]
    pub host_ram_gib: Option<f64>,
    /// Its bandwidth in GB/s (default: from --host, else dual-channel DDR4-3200).
    #[arg(long)]
    pub host_ram_gbps: Option<f64>,
    /// Host memory preset: ddr4-3200-2ch, ddr5-6000-2ch, lpddr5x-7500-128bit … (presets/hosts.toml).
    #[arg(long)]
    pub host: Option<String>,
    /// Print the planned settings for a tool instead of the table: deepspeed, hf-training,
    /// hf-training-cli, accelerate-fsdp, peft, torchtune, unsloth, llama.cpp, ollama, lm-studio,
    /// vllm, transformers, comfyui, diffusers, allocator, report, report-json, or `all` (what
    /// applies). Repeat or list.
    #[arg(long, value_delimiter = ',')]
    pub export: Vec<String>,
    /// Write the exports here (a file for one, a directory for several) instead of stdout.
    #[arg(long, requires = "export")]
    pub out: Option<PathBuf>,
    /// A game preset (see `vram-doctor presets list games`); implies --task game.
    #[arg(long)]
    pub game: Option<String>,
}

impl PlanArgs {
    /// The workload file the flags describe, on top of `--workload` if given.
    pub fn workload_file(&self) -> Result<WorkloadFile, CliError> {
        let mut f = match &self.workload {
            Some(p) => WorkloadFile::load(p)?,
            None => WorkloadFile::default(),
        };
        if self.gpu.is_some() {
            f.gpu.preset = self.gpu.clone();
            if self.vram_gib.is_none() {
                f.gpu.vram_gib = None;
            }
        }
        set(&mut f.gpu.vram_gib, self.vram_gib);
        set(&mut f.gpu.count, self.gpus);
        set(&mut f.gpu.host, self.host.clone());
        set(&mut f.gpu.host_ram_gbps, self.host_ram_gbps);
        set(&mut f.gpu.host_ram_gib, self.host_ram_gib);
        // Planning for this machine unless told otherwise: its RAM bounds what can be offloaded.
        if f.gpu.host_ram_gib.is_none() {
            f.gpu.host_ram_gib = crate::catalog::hosts::this_machine_ram_gib();
        }
        if self.model.is_some() || self.model_file.is_some() {
            f.model = Default::default();
            f.model.preset = self.model.clone();
            f.model.file = self.model_file.clone();
        }
        self.run.apply(&mut f.run);
        if self.cpu_moe {
            f.run.cpu_moe_layers = Some(1_000_000);
        }
        if self.game.is_some() {
            f.model = Default::default();
            f.model.preset = self.game.clone();
            f.run.task.get_or_insert(Task::Game);
        }
        // `--gpu`/`--model` may name one of the user's own presets (the catalog tab's).
        let path = crate::catalog::user::default_path();
        let (gpu, model) = (self.gpu.as_deref(), self.model.as_deref());
        crate::catalog::user::use_in_workload(&mut f, gpu, model, path)?;
        Ok(f)
    }

    fn base(&self) -> &Path {
        self.workload
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(Path::new("."))
    }

    /// The resolved LLM workload; relative paths in a workload file are taken from its directory.
    pub fn resolve(&self) -> Result<Workload, CliError> {
        let f = self.workload_file()?;
        let mut w = f.resolve(self.base(), Some(crate::import::load_model))?;
        this_machines_host(&f, &mut w);
        Ok(w)
    }

    /// The resolved workload of any task.
    pub fn resolve_any(&self) -> Result<AnyWorkload, CliError> {
        let f = self.workload_file()?;
        let mut any = resolve_any(&f, self.base(), Some(crate::import::load_model))?;
        if let AnyWorkload::Llm(w) = &mut any {
            this_machines_host(&f, w);
        }
        Ok(any)
    }
}

/// Planning for this machine unless told otherwise: a workload that names no host (neither
/// `gpu.host` nor `gpu.host_ram_gbps`) offloads at this machine's RAM bandwidth where its memory
/// modules can be read (`catalog::hosts::this_machine`).
fn this_machines_host(f: &WorkloadFile, w: &mut Workload) {
    if f.gpu.host.is_none() && f.gpu.host_ram_gbps.is_none() {
        crate::catalog::hosts::this_machine(&mut w.gpu.host);
    }
}

fn set<T>(slot: &mut Option<T>, v: Option<T>) {
    if v.is_some() {
        *slot = v;
    }
}

pub fn run(a: &PlanArgs) -> Result<(), CliError> {
    if let Some(path) = &a.workflow {
        return super::workflow::run(a, path);
    }
    let w = a.resolve_any()?;
    if a.print_resolved {
        outln!(
            "{}",
            serde_json::to_string_pretty(&w).map_err(|e| e.to_string())?
        )?;
        return Ok(());
    }
    let result = plan_any(&w);
    if !a.export.is_empty() {
        return export(a, &w, &result);
    }
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?
        )?;
    } else {
        out!("{}", render(&title(&w), &result))?;
    }
    Ok(())
}

/// `--export`: renders the asked kinds of the planned workload and prints or writes them.
fn export(a: &PlanArgs, w: &AnyWorkload, result: &PlanResult) -> Result<(), CliError> {
    use crate::export::{ExportKind, kinds_for, render};
    let mut kinds: Vec<ExportKind> = Vec::new();
    for name in &a.export {
        let add = if name.trim().eq_ignore_ascii_case("all") {
            kinds_for(w, result)
        } else {
            vec![name.parse::<ExportKind>()?]
        };
        for k in add {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
    }
    let applies = kinds_for(w, result);
    let mut texts = Vec::new();
    for k in &kinds {
        // An engine's export of a plan made for another engine plans for that engine.
        let text = match crate::export::retarget(*k, w) {
            Some((x, note)) if !applies.contains(k) => {
                eprintln!("note: {note}");
                let replanned = plan_any(&x);
                warn_if_short(*k, &replanned);
                render(*k, &x, &replanned)?
            }
            _ => {
                warn_if_short(*k, result);
                render(*k, w, result)?
            }
        };
        texts.push((*k, text));
    }
    match &a.out {
        // One export to a path that is not a folder (and does not end in a separator, which
        // names a folder, created when missing): that file.
        Some(out) if texts.len() == 1 && !out.is_dir() && !names_folder(out) => {
            crate::atomic_write::write_atomic(out, &texts[0].1)
                .map_err(|e| format!("--out {e}"))?;
            outln!("wrote {}", out.display())?;
        }
        Some(dir) => {
            let files: Vec<(&str, &str)> = texts
                .iter()
                .map(|(k, t)| (k.file_name(), t.as_str()))
                .collect();
            for path in
                crate::atomic_write::write_set(dir, &files).map_err(|e| format!("--out {e}"))?
            {
                outln!("wrote {}", path.display())?;
            }
        }
        None if texts.len() == 1 => out!("{}", texts[0].1)?,
        None => {
            for (k, t) in &texts {
                outln!("==> {} <==\n{t}", k.file_name())?;
            }
        }
    }
    Ok(())
}

/// An export of a plan that does not fit is still written (it is the closest the tool's
/// settings come), but never silently: one note on stderr says so, with the verdict's figures.
fn warn_if_short(k: crate::export::ExportKind, r: &PlanResult) {
    if !r.fits && !r.plan.fits {
        eprintln!(
            "note: the '{k}' settings do not fit this card, and no change the planner knows makes \
             them fit: {}",
            r.verdict.message()
        );
    }
}

/// A path written with a trailing separator (`plan-out/`) names a folder even before it exists.
fn names_folder(p: &Path) -> bool {
    let s = p.as_os_str().to_string_lossy();
    s.ends_with('/') || (cfg!(windows) && s.ends_with('\\'))
}

/// What is planned, in one line.
pub(super) fn title(w: &AnyWorkload) -> String {
    match w {
        AnyWorkload::Llm(w) => {
            let per_gpu = if w.gpu.count > 1 {
                format!(" (per GPU, {} GPUs)", w.gpu.count)
            } else {
                String::new()
            };
            format!(
                "{} on {} — {}{}",
                w.model_name,
                w.gpu.name,
                describe_run(w),
                per_gpu
            )
        }
        AnyWorkload::Diffusion(d) => format!(
            "{} on {} — diffusion {}×{}, batch {}",
            d.model.name, d.gpu.name, d.run.width, d.run.height, d.run.batch
        ),
        AnyWorkload::Game(g) => format!(
            "{} on {} — game",
            g.game.as_ref().map_or("a game", |x| x.name.as_str()),
            g.gpu.name
        ),
    }
}

const BAR: usize = 30;

/// A bar of `bytes` against `capacity`, `BAR` cells wide; overflow is marked with '>'.
fn bar(bytes: u64, capacity: u64) -> String {
    let frac = bytes as f64 / capacity.max(1) as f64;
    let cells = (frac * BAR as f64).round() as usize;
    if cells > BAR {
        format!("{}>", "#".repeat(BAR))
    } else {
        format!("{}{}", "#".repeat(cells), ".".repeat(BAR - cells))
    }
}

/// The human table: components with bars, the three peaks, the verdict and the plan.
pub fn render(title: &str, r: &PlanResult) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let cap = r.capacity_bytes;
    let _ = writeln!(s, "{title}");
    let _ = writeln!(s);
    let width = r
        .components
        .iter()
        .map(|c| c.label.len())
        .max()
        .unwrap_or(10)
        .max(10);
    for c in &r.components {
        let _ = writeln!(
            s,
            "  {:<width$}  {:>10}  {}",
            c.label,
            human(c.bytes),
            bar(c.bytes, cap)
        );
    }
    let _ = writeln!(s);
    devices_table(&mut s, &r.devices);
    let peaks: &[(&str, u64, &str)] = if matches!(r.plan.details, Details::Game(_)) {
        // A game: no torch allocator, one figure.
        &[("Peak use", r.peak.process_bytes, "")]
    } else {
        &[
            (
                "Peak tensors",
                r.peak.tensors_bytes,
                "(torch max_memory_allocated)",
            ),
            (
                "Peak reserved",
                r.peak.reserved_bytes,
                "(torch max_memory_reserved)",
            ),
            (
                "Peak process",
                r.peak.process_bytes,
                "(nvidia-smi, this process)",
            ),
        ]
    };
    for (label, bytes, note) in peaks {
        let line = format!("  {label:<width$}  {:>10}   {note}", human(*bytes));
        let _ = writeln!(s, "{}", line.trim_end());
    }
    let _ = writeln!(s, "  {:<width$}  {:>10}", "GPU capacity", human(cap));
    let _ = writeln!(s);
    let _ = writeln!(s, "{}", r.verdict.message());
    if let Some(m) = r.verdict.use_message() {
        let _ = writeln!(s, "  {m}");
    }
    for warn in &r.warnings {
        let _ = writeln!(s, "  note: {warn}");
    }
    let p = &r.plan;
    let _ = writeln!(s);
    if !p.strategies.is_empty() {
        let _ = writeln!(
            s,
            "Recommended plan ({:.2}× speed; {}):",
            p.speed_factor, p.quality_note
        );
        for st in &p.strategies {
            let _ = writeln!(s, "  - {st}");
        }
        let _ = writeln!(s, "  → {} per GPU", human(p.process_bytes));
    }
    if let Some(pl) = &p.placement {
        let _ = writeln!(s, "Placement: {}", placement_line(pl));
    }
    if let Some(sp) = &p.speed {
        let _ = writeln!(s, "Speed: {}", speed_line(sp));
    }
    if !p.options.is_empty() {
        let _ = writeln!(s, "Options (memory and speed side by side):");
        for o in &p.options {
            let _ = writeln!(
                s,
                "  {} {}: {} GPU{}, {}; {}{}",
                if o.chosen { "*" } else { "-" },
                o.label,
                human(o.process_bytes),
                o.placement.as_ref().map_or(String::new(), |pl| format!(
                    " + {} RAM (-ngl {}{})",
                    human(pl.host_bytes),
                    pl.gpu_layers,
                    if pl.cpu_moe_layers > 0 {
                        format!(" --n-cpu-moe {}", pl.cpu_moe_layers)
                    } else {
                        String::new()
                    }
                )),
                speed_line(&o.speed),
                o.quality_note,
                if o.fits {
                    ""
                } else {
                    " — does not fit (host RAM)"
                }
            );
        }
    }
    let _ = writeln!(s, "Why: {}", p.why);
    // A ComfyUI plan names the memory mode it assumes (plan::diffusion `comfyui_memory`).
    let diffusion = p.details.diffusion();
    if let Some(why) = diffusion
        .and_then(|d| d.comfyui_memory.as_ref())
        .map(|m| &m.why)
    {
        let _ = writeln!(s, "Assumes: ComfyUI with {why}");
    }
    let mut limits = Vec::new();
    if let Some(b) = p.max_batch {
        limits.push(format!("largest batch {b}"));
    }
    if let Some(q) = p.max_seq {
        limits.push(format!("longest sequence {q} tokens"));
    }
    if let Some(d) = diffusion.filter(|d| d.max_width > 0) {
        limits.push(format!("largest image {}×{}", d.max_width, d.max_height));
    }
    if !limits.is_empty() {
        let _ = writeln!(s, "What fits as it stands: {}", limits.join("; "));
    }
    s
}

/// The per-device rows (`PlanResult::devices`) in llama.cpp's shape, for a run on several GPUs
/// or with layers left in system RAM; nothing otherwise.
fn devices_table(s: &mut String, devices: &[DeviceMemory]) {
    use std::fmt::Write;
    let gpus = devices.iter().filter(|d| d.device != Device::Host).count();
    let host_layers = devices.iter().find_map(|d| d.layers).unwrap_or(0);
    if gpus < 2 && host_layers == 0 {
        return;
    }
    let _ = writeln!(
        s,
        "  Per device (as llama.cpp prints it): self = model + context + compute"
    );
    for d in devices {
        let name = match d.device {
            Device::Gpu(i) => format!("GPU {i}"),
            Device::Host => match d.layers {
                Some(l) if l > 0 => format!("Host ({l} layers)"),
                _ => "Host".into(),
            },
        };
        let _ = writeln!(
            s,
            "    {name:<16} {:>10} = {:>10} + {:>10} + {:>10}",
            human(d.self_bytes()),
            human(d.model_bytes),
            human(d.context_bytes),
            human(d.compute_bytes)
        );
    }
    let _ = writeln!(s);
}
/// `-ngl 30 of 49 on the GPU, experts of 0 layers in system RAM; 3.10 GiB system RAM`.
fn placement_line(p: &crate::engines::llama_cpp::memory::Placement) -> String {
    let mut s = format!(
        "{} of {} layers on the GPU (-ngl {})",
        p.gpu_layers, p.total_layers, p.gpu_layers
    );
    if p.cpu_moe_layers > 0 {
        s.push_str(&format!(
            ", experts of the first {} layers in system RAM (--n-cpu-moe {})",
            p.cpu_moe_layers, p.cpu_moe_layers
        ));
    }
    s.push_str(&format!("; {} of system RAM", human(p.host_bytes)));
    s
}

/// `decode 12.3 tok/s, prefill 850 tok/s` (`0.59 s/step, 12.1 s/image` for diffusion), or the
/// reason it is unknown.
fn speed_line(sp: &crate::speed::Speed) -> String {
    let mut parts = Vec::new();
    if let Some(d) = sp.decode_tokens_per_s {
        parts.push(format!("decode {d:.1} tok/s"));
    }
    if let Some(p) = sp.prefill_tokens_per_s {
        parts.push(format!("prefill {p:.0} tok/s"));
    }
    if let Some(t) = sp.training_tokens_per_s {
        parts.push(format!("training {t:.0} tok/s"));
    }
    if let Some(t) = sp.seconds_per_step {
        parts.push(format!("{t:.2} s/step"));
    }
    if let Some(t) = sp.seconds_per_image {
        parts.push(format!("{t:.1} s/image"));
    }
    if parts.is_empty() {
        sp.basis.clone()
    } else {
        parts.join(", ")
    }
}

fn describe_run(w: &Workload) -> String {
    let r = &w.run;
    match r.task {
        Task::Training => format!(
            "training ({}, {}, {}, checkpointing {}), batch {} × seq {}",
            r.method, r.precision, r.optimizer, r.checkpointing, r.batch, r.seq
        ),
        _ => format!(
            "{} with {}, {} weights, batch {} × seq {}",
            r.task, r.engine, r.weights, r.batch, r.seq
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_and_mark_overflow() {
        assert_eq!(bar(0, 100), ".".repeat(BAR));
        assert_eq!(bar(50, 100).matches('#').count(), BAR / 2);
        assert!(bar(300, 100).ends_with('>'));
    }

    /// Every field of the workload file's `[run]` can be set from the command line too ("flags
    /// mirror the workload file's fields"), and its flag sets that field and no other: each
    /// flag of `RunFlags` given alone (with a value its parser takes), applied to an empty
    /// `[run]`, which then holds exactly that field.
    #[test]
    fn every_run_field_has_a_flag_that_sets_it() {
        use crate::types::workload::RUN_FIELDS;
        let cmd = <RunFlags as clap::Args>::augment_args(clap::Command::new("plan"));
        let ids: Vec<&str> = cmd.get_arguments().map(|a| a.get_id().as_str()).collect();
        let names: Vec<&str> = RUN_FIELDS.iter().map(|f| f.name).collect();
        assert_eq!(ids, names, "RunFlags' flags are not RunSection's fields");
        assert!(names.len() > 40, "{names:?}");
        for a in cmd.get_arguments() {
            let long = format!("--{}", a.get_long().expect("a long flag"));
            let takes_value = a.get_action().takes_values();
            let parse = |value: Option<&str>| {
                let args = ["plan", long.as_str()].into_iter().chain(value);
                <RunFlags as clap::FromArgMatches>::from_arg_matches(
                    &cmd.clone().try_get_matches_from(args)?,
                )
            };
            let flags = if takes_value {
                // A number, a switch's `true`, or the first choice the parser names.
                ["1", "true"]
                    .iter()
                    .find_map(|v| parse(Some(v)).ok())
                    .or_else(|| {
                        let e = parse(Some("?")).err()?.to_string();
                        let first = e.split("use one of: ").nth(1)?.split([',', '\n']).next()?;
                        parse(Some(first.trim())).ok()
                    })
            } else {
                parse(None).ok()
            };
            let flags = flags.unwrap_or_else(|| panic!("{long}: no value found that it takes"));
            let mut r = RunSection::default();
            flags.apply(&mut r);
            let set = toml::Table::try_from(&r).unwrap();
            let keys: Vec<&String> = set.keys().collect();
            assert_eq!(keys, [a.get_id().as_str()], "{long} sets {set:?}");
            if !takes_value {
                // `off` switches (--no-kv-offload) set false, the others true.
                let want = !long.starts_with("--no-");
                assert_eq!(set[a.get_id().as_str()].as_bool(), Some(want), "{long}");
            }
        }
    }

    #[test]
    fn flags_override_the_file() {
        let a = PlanArgs {
            gpu: Some("rtx-4090".into()),
            model: Some("llama-3.1-8b".into()),
            run: RunFlags {
                batch: Some(3),
                ..Default::default()
            },
            ..Default::default()
        };
        let w = a.resolve().unwrap();
        assert_eq!(w.run.batch, 3);
        assert_eq!(w.gpu.vram_bytes, 24 << 30);
    }

    #[test]
    fn diffusion_and_game_flags_reach_the_workload() {
        let a = PlanArgs {
            vram_gib: Some(12.0),
            model: Some("sdxl".into()),
            run: RunFlags {
                task: Some(Task::Diffusion),
                width: Some(1216),
                height: Some(832),
                vae_tiling: true,
                vram_mode: Some(crate::memory::diffusion::VramMode::Low),
                ..Default::default()
            },
            ..Default::default()
        };
        let AnyWorkload::Diffusion(d) = a.resolve_any().unwrap() else {
            panic!("not diffusion")
        };
        assert_eq!((d.run.width, d.run.height), (1216, 832));
        assert!(d.run.vae_tiling);
        assert_eq!(d.run.vram_mode, crate::memory::diffusion::VramMode::Low);
        let g = PlanArgs {
            gpu: Some("rtx-4060".into()),
            game: Some("cyberpunk-2077".into()),
            run: RunFlags {
                resolution: Some("2560x1440".into()),
                texture_quality: Some("ultra".into()),
                ray_tracing: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let AnyWorkload::Game(w) = g.resolve_any().unwrap() else {
            panic!("not a game")
        };
        assert_eq!(w.run.resolution.width, 2560);
        assert!(w.run.ray_tracing && w.game.is_some());
        let bad = PlanArgs {
            game: Some("cyberpunk-2077".into()),
            vram_gib: Some(8.0),
            run: RunFlags {
                resolution: Some("wide".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let e = bad.resolve_any().unwrap_err();
        assert!(e.to_string().contains("run.resolution"), "{e}");
    }
}
