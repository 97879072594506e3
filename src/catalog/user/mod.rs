//! The user's own presets: GPUs and models added in the catalog tab, kept in one TOML file
//! (`user-presets.toml`) in the OS config directory.
//!
//! How they reach the planner: a user preset is planned with by writing its figures into the
//! workload (`gpu.vram_gib`, the `[model]` architecture fields), not by adding it to the id lookup
//! the workload resolver uses. A workload file saved from the planner then plans the same on any
//! machine, without this file beside it, and the resolver stays a function of the workload and
//! the built-in catalog alone. So a user model holds exactly what a workload's `[model]` section
//! can say (dense models; no mixture-of-experts or latent attention).
//!
//! Ids are made by the program from the name (`slug`), unique among the user's entries and apart
//! from every built-in id and alias, and kept when the entry is edited. A hand-edited file whose
//! id equals a built-in one still loads; where presets are looked up by id (the command line)
//! the built-in wins.
//!
//! The file itself (where it lives, reading it, setting a bad one aside, saving) is `store`.

mod store;

pub use store::{
    DIR_ENV, FILE_NAME, MAX_FILE_BYTES, PresetsFileError, UserStore, default_path, read,
};

use super::{Catalog, Gpu, ModelPreset};
use crate::types::arch::Mlp;
use crate::types::arch::ModelArch;
use crate::types::message::Message;
use crate::types::options::Task;
use crate::types::workload::WorkloadFile;
use crate::types::workload::{GpuSection, ModelSection};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;

/// Longest id and name kept.
const MAX_ID: usize = 64;
const MAX_NAME: usize = 120;

/// One of the user's GPUs. Only the capacity goes into a workload; the bandwidth is shown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserGpu {
    pub id: String,
    pub name: String,
    /// Memory capacity, GiB.
    pub vram_gib: f64,
    /// Peak memory bandwidth, GB/s, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_gbs: Option<f64>,
}

/// One of the user's models: the fields of a workload's `[model]` section, named as in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserModel {
    pub id: String,
    pub name: String,
    /// Total parameters (a count, not billions).
    pub params: f64,
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub intermediate: u32,
    pub vocab: u32,
    #[serde(default)]
    pub mlp: Mlp,
    #[serde(default)]
    pub tied_embeddings: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_context: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sliding_window: Option<u32>,
    /// The family's `model_type`, kept from the built-in it was copied from (its module names,
    /// for `run.lora_targets`); a model entered by hand has none and reads as Llama-style.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_type: Option<String>,
}

/// What the user's file holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserPresets {
    #[serde(rename = "gpu", default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<UserGpu>,
    #[serde(rename = "model", default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<UserModel>,
}

/// A value that cannot be kept, and the field it is in (the field names of the file); the
/// message in words each front end says in its language (`Display` in English).
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    pub field: &'static str,
    pub message: Message,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

fn invalid(field: &'static str, message: Message) -> Invalid {
    Invalid { field, message }
}

/// What GPUs and models have in common here: an id, a name, and their own checks.
pub trait UserPreset: Clone {
    /// "gpu" or "model", as the file's tables are named.
    const KIND: &'static str;
    fn id(&self) -> &str;
    fn id_mut(&mut self) -> &mut String;
    fn name(&self) -> &str;
    /// Checks the figures (not the id).
    fn check(&self) -> Result<(), Invalid>;
    /// Whether a built-in preset of this kind answers to `id` (its id or an alias).
    fn builtin(id: &str) -> bool;
    fn list(p: &UserPresets) -> &Vec<Self>;
    fn list_mut(p: &mut UserPresets) -> &mut Vec<Self>;

    /// Every check: a well-formed id, a name, the figures.
    fn validate(&self) -> Result<(), Invalid> {
        let id = self.id();
        let id_ok = !id.is_empty()
            && id.len() <= MAX_ID
            && id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
        if !id_ok {
            return Err(invalid(
                "id",
                Message::new("preset.user.id")
                    .text("id", id)
                    .int("max", MAX_ID as u64),
            ));
        }
        let name = self.name().trim();
        if name.is_empty() || name.chars().count() > MAX_NAME {
            return Err(invalid(
                "name",
                Message::new("preset.user.name_length").int("max", MAX_NAME as u64),
            ));
        }
        if name.chars().any(char::is_control) {
            return Err(invalid("name", Message::new("preset.user.name_control")));
        }
        self.check()
    }
}

/// `x` when it is a finite number in `(lo, hi]`.
fn within(field: &'static str, x: f64, lo: f64, hi: f64, unit: &str) -> Result<(), Invalid> {
    if x.is_finite() && x > lo && x <= hi {
        Ok(())
    } else {
        Err(invalid(
            field,
            Message::new("preset.user.within")
                .text("value", x.to_string())
                .text("lo", lo.to_string())
                .text("hi", hi.to_string())
                .text("unit", unit),
        ))
    }
}

impl UserPreset for UserGpu {
    const KIND: &'static str = "gpu";
    fn id(&self) -> &str {
        &self.id
    }
    fn id_mut(&mut self) -> &mut String {
        &mut self.id
    }
    fn name(&self) -> &str {
        &self.name
    }
    /// The bounds of `gpu.vram_gib` in a workload (`types::workload`), and those of the
    /// built-in GPU presets for the bandwidth (`catalog::gpus`).
    fn check(&self) -> Result<(), Invalid> {
        within("vram_gib", self.vram_gib, 0.0, 4096.0, " GiB")?;
        if let Some(b) = self.bandwidth_gbs {
            within("bandwidth_gbs", b, 0.0, 100_000.0, " GB/s")?;
        }
        Ok(())
    }
    fn builtin(id: &str) -> bool {
        Catalog::get().gpu(id).is_ok()
    }
    fn list(p: &UserPresets) -> &Vec<Self> {
        &p.gpus
    }
    fn list_mut(p: &mut UserPresets) -> &mut Vec<Self> {
        &mut p.gpus
    }
}

impl UserPreset for UserModel {
    const KIND: &'static str = "model";
    fn id(&self) -> &str {
        &self.id
    }
    fn id_mut(&mut self) -> &mut String {
        &mut self.id
    }
    fn name(&self) -> &str {
        &self.name
    }
    /// Each count against a bound well past the largest published model (Llama 3.1 405B:
    /// 126 layers, hidden 16384, vocabulary 128256; Gemma 3: vocabulary 262144), then the
    /// architecture's own checks (`ModelArch::validate`).
    fn check(&self) -> Result<(), Invalid> {
        // 1e14 parameters: the bound of ModelArch::validate.
        if !(self.params.is_finite() && self.params >= 1.0 && self.params < 1e14) {
            return Err(invalid(
                "params",
                Message::new("preset.user.params").text("value", self.params.to_string()),
            ));
        }
        let counts = [
            ("layers", self.layers, 10_000),
            ("hidden", self.hidden, 1 << 20),
            ("heads", self.heads, 1 << 16),
            ("kv_heads", self.kv_heads, 1 << 16),
            ("head_dim", self.head_dim, 1 << 16),
            ("intermediate", self.intermediate, 1 << 22),
            ("vocab", self.vocab, 1 << 24),
        ];
        for (field, v, max) in counts {
            if v == 0 || v > max {
                return Err(invalid(
                    field,
                    Message::new("preset.user.count")
                        .int("value", v)
                        .int("max", max),
                ));
            }
        }
        for (field, v) in [
            ("max_context", self.max_context),
            ("sliding_window", self.sliding_window),
        ] {
            if let Some(v) = v
                && !(1..=1 << 27).contains(&v)
            {
                return Err(invalid(
                    field,
                    Message::new("preset.user.count")
                        .int("value", v)
                        .int("max", 1u32 << 27),
                ));
            }
        }
        if self.kv_heads > self.heads || !self.heads.is_multiple_of(self.kv_heads) {
            return Err(invalid(
                "kv_heads",
                Message::new("preset.user.kv_heads")
                    .int("kv_heads", self.kv_heads)
                    .int("heads", self.heads),
            ));
        }
        self.arch()
            .validate()
            .map_err(|e| invalid("architecture", e))
    }
    fn builtin(id: &str) -> bool {
        Catalog::get().model(id).is_ok()
    }
    fn list(p: &UserPresets) -> &Vec<Self> {
        &p.models
    }
    fn list_mut(p: &mut UserPresets) -> &mut Vec<Self> {
        &mut p.models
    }
}

impl UserGpu {
    /// The workload's `[gpu]` for this card: its capacity (the count stays the planner's).
    pub fn section(&self) -> GpuSection {
        GpuSection {
            preset: None,
            vram_gib: Some(self.vram_gib),
            count: None,
            ..Default::default()
        }
    }

    /// A built-in card as a starting point for the user's own (the id is made on saving).
    pub fn from_builtin(g: &Gpu) -> Self {
        UserGpu {
            id: String::new(),
            name: g.name.clone(),
            vram_gib: g.vram_gib,
            bandwidth_gbs: Some(g.bandwidth_gbs),
        }
    }
}

impl UserModel {
    pub fn arch(&self) -> ModelArch {
        ModelArch {
            params: self.params,
            layers: self.layers,
            hidden: self.hidden,
            heads: self.heads,
            kv_heads: self.kv_heads,
            head_dim: self.head_dim,
            intermediate: self.intermediate,
            vocab: self.vocab,
            mlp: self.mlp,
            tied_embeddings: self.tied_embeddings,
            max_context: self.max_context,
            sliding_window: self.sliding_window,
            global_every: None,
            moe: None,
            mla: None,
            transformers_kv_heads: None,
            cache: None,
            model_type: self.model_type.clone(),
        }
    }

    /// The workload's `[model]` for this model: every architecture field written out.
    pub fn section(&self) -> ModelSection {
        ModelSection {
            params: Some(self.params),
            layers: Some(self.layers),
            hidden: Some(self.hidden),
            heads: Some(self.heads),
            kv_heads: Some(self.kv_heads),
            head_dim: Some(self.head_dim),
            intermediate: Some(self.intermediate),
            vocab: Some(self.vocab),
            tied_embeddings: Some(self.tied_embeddings),
            max_context: self.max_context,
            sliding_window: self.sliding_window,
            mlp: Some(self.mlp),
            model_type: self.model_type.clone(),
            ..ModelSection::default()
        }
    }

    /// A built-in model as a starting point, when a workload's `[model]` section can describe
    /// it: not a mixture of experts, latent attention, or interleaved global layers.
    pub fn from_builtin(m: &ModelPreset) -> Option<Self> {
        let a = &m.arch;
        if a.moe.is_some() || a.mla.is_some() || a.global_every.is_some() {
            return None;
        }
        Some(UserModel {
            id: String::new(),
            name: m.name.clone(),
            params: a.params,
            layers: a.layers,
            hidden: a.hidden,
            heads: a.heads,
            kv_heads: a.kv_heads,
            head_dim: a.head_dim,
            intermediate: a.intermediate,
            vocab: a.vocab,
            mlp: a.mlp,
            tied_embeddings: a.tied_embeddings,
            max_context: a.max_context,
            sliding_window: a.sliding_window,
            model_type: a.model_type.clone(),
        })
    }
}

/// An id from a name: lowercase ASCII letters and digits, other runs as one '-'.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    // Room for the "-2", "-3" … that `put` may add to keep ids unique.
    let mut out: String = out.chars().take(MAX_ID - 4).collect();
    while out.ends_with('-') {
        out.pop();
    }
    out
}

impl UserPresets {
    /// Parses and checks a presets file; `origin` names it in errors, which give the line of a
    /// syntax error or the entry and field of a bad value.
    pub fn parse(text: &str, origin: &str) -> Result<Self, String> {
        let p: UserPresets = crate::toml_file::parse(text, origin)?;
        p.validate().map_err(|e| format!("{origin}: {e}"))?;
        Ok(p)
    }

    /// Every entry valid and every id used once per kind.
    pub fn validate(&self) -> Result<(), String> {
        fn each<T: UserPreset>(list: &[T]) -> Result<(), String> {
            for (i, x) in list.iter().enumerate() {
                let at = || {
                    format!(
                        "{} '{}' (entry {} of [[{}]])",
                        T::KIND,
                        x.id(),
                        i + 1,
                        T::KIND
                    )
                };
                x.validate().map_err(|e| format!("{}: {e}", at()))?;
                if list[..i].iter().any(|y| y.id() == x.id()) {
                    return Err(format!("{}: the id is used twice", at()));
                }
            }
            Ok(())
        }
        each(&self.gpus)?;
        each(&self.models)
    }

    /// The file's text: a header saying what it is, then the entries. An entry TOML cannot
    /// hold is an error, never a file written without it.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        let body = toml::to_string_pretty(self)?;
        Ok(format!(
            "# VRAM Doctor: your own GPU and model presets, edited in the app's Catalog tab.\n\
             # model.params is a parameter count (8e9 for 8B). A file that does not read is moved\n\
             # aside to {FILE_NAME}.corrupt-<time>, never deleted.\n\n{body}"
        ))
    }

    /// Adds `item` (when `old_id` is `None`, with a fresh id made from its name) or replaces
    /// the entry `old_id`, keeping that id. Nothing changes when the item is invalid.
    pub fn put<T: UserPreset>(&mut self, old_id: Option<&str>, mut item: T) -> Result<(), Invalid> {
        let list = T::list_mut(self);
        match old_id {
            Some(id) => {
                let Some(at) = list.iter().position(|x| x.id() == id) else {
                    let none = Message::new("preset.user.no_such").text("kind", T::KIND);
                    return Err(invalid("id", none.text("id", id)));
                };
                *item.id_mut() = id.to_string();
                item.validate()?;
                list[at] = item;
            }
            None => {
                item.check()?;
                let base = match slug(item.name()) {
                    s if s.is_empty() => format!("my-{}", T::KIND),
                    s => s,
                };
                let taken = |id: &str| T::builtin(id) || list.iter().any(|x| x.id() == id);
                let id = std::iter::once(base.clone())
                    .chain((2..).map(|n| format!("{base}-{n}")))
                    .find(|id| !taken(id))
                    .unwrap_or(base);
                *item.id_mut() = id;
                item.validate()?;
                list.push(item);
            }
        }
        Ok(())
    }

    /// Removes the entry `id`; whether there was one.
    pub fn remove<T: UserPreset>(&mut self, id: &str) -> bool {
        let list = T::list_mut(self);
        let before = list.len();
        list.retain(|x| x.id() != id);
        list.len() != before
    }

    pub fn get<T: UserPreset>(&self, id: &str) -> Option<&T> {
        T::list(self).iter().find(|x| x.id() == id)
    }
}

/// A `--gpu`/`--model` name that is no built-in preset, while the user's presets file, where it
/// could be, cannot be read: the flag, the name, and why the file cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {id}: not a built-in preset, and your presets file cannot be used: {source}")]
pub struct UnusablePresets {
    pub flag: &'static str,
    pub id: String,
    #[source]
    pub source: PresetsFileError,
}

/// The command line's `--gpu ID` / `--model ID` naming one of the user's presets: when `id`
/// names no built-in preset but one of the user's (in the file at `path`), the section gets that
/// preset's figures, as the catalog tab's "Plan" does. Built-ins win, and the file is read only
/// then; anything else is left for the resolver to report. A `--model` id is looked up only for
/// the LLM tasks (diffusion and game tasks name their own presets), and only when it is all the
/// `[model]` section says, so no other model field is dropped. A file that exists but cannot be
/// read as presets is an error naming the id, the file, and the line and reason (the resolver
/// would only say "unknown preset"), and so is a `path` that could not be found (no config
/// directory).
pub fn use_in_workload(
    f: &mut WorkloadFile,
    gpu: Option<&str>,
    model: Option<&str>,
    path: Result<PathBuf, PresetsFileError>,
) -> Result<(), UnusablePresets> {
    let key = |id: &str| id.trim().to_ascii_lowercase();
    let gpu = gpu.filter(|id| !UserGpu::builtin(id));
    let llm = matches!(f.run.task, None | Some(Task::Inference | Task::Training));
    let model = model.filter(|id| {
        let only_preset = ModelSection {
            preset: Some(id.to_string()),
            ..ModelSection::default()
        };
        llm && f.model == only_preset && !UserModel::builtin(id)
    });
    if gpu.is_none() && model.is_none() {
        return Ok(());
    }
    let user = path.and_then(|p| read(&p)).map_err(|source| {
        let (flag, id) = match (gpu, model) {
            (Some(g), _) => ("--gpu", g),
            (None, m) => ("--model", m.unwrap_or_default()),
        };
        UnusablePresets {
            flag,
            id: crate::printable::printable_cut(id, 80),
            source,
        }
    })?;
    if let Some(g) = gpu.and_then(|id| user.get::<UserGpu>(&key(id))) {
        f.gpu.preset = None;
        f.gpu.vram_gib.get_or_insert(g.vram_gib);
    }
    if let Some(m) = model.and_then(|id| user.get::<UserModel>(&key(id))) {
        f.model = m.section();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn gpu(name: &str, vram: f64) -> UserGpu {
        UserGpu {
            name: name.into(),
            vram_gib: vram,
            ..Default::default()
        }
    }

    pub(super) fn model() -> UserModel {
        UserModel::from_builtin(Catalog::get().model("llama-3.1-8b").unwrap()).unwrap()
    }

    /// Without a config directory, a name that is no built-in preset says why the user's
    /// presets were not looked at (before: skipped, and the resolver said "unknown preset");
    /// a built-in name needs no file.
    #[test]
    fn a_missing_config_directory_is_named_not_skipped() {
        let why = || Err(PresetsFileError::NoConfigDir);
        let mut f = WorkloadFile::default();
        let e = use_in_workload(&mut f, Some("my-card"), None, why()).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("--gpu my-card: not a built-in preset")
                && text.ends_with(&PresetsFileError::NoConfigDir.to_string()),
            "{text}"
        );
        // Not the input's fault: the machine has no home directory.
        assert!(!e.source.is_bad_input());
        use_in_workload(&mut f, Some("rtx-4090"), None, why()).unwrap();
        assert_eq!(f, WorkloadFile::default());
    }

    #[test]
    fn ids_come_from_names_and_avoid_builtins_and_each_other() {
        assert_eq!(slug("  My RTX 3060 (12 GB)! "), "my-rtx-3060-12-gb");
        let mut p = UserPresets::default();
        p.put(None, gpu("Lab card", 12.0)).unwrap();
        p.put(None, gpu("Lab card", 16.0)).unwrap();
        // A copy of a built-in card keeps its name but not its id.
        let builtin = Catalog::get().gpu("rtx-4090").unwrap();
        p.put(None, UserGpu::from_builtin(builtin)).unwrap();
        p.put(None, gpu("显卡", 8.0)).unwrap();
        let ids: Vec<&str> = p.gpus.iter().map(|g| g.id.as_str()).collect();
        assert_eq!(ids[..2], ["lab-card", "lab-card-2"]);
        assert!(
            Catalog::get().gpu(ids[2]).is_err(),
            "{} is a built-in id",
            ids[2]
        );
        assert_eq!(ids[3], "my-gpu");
        // Editing keeps the id even when the name changes.
        p.put(Some("lab-card"), gpu("Renamed", 10.0)).unwrap();
        assert_eq!(p.get::<UserGpu>("lab-card").unwrap().name, "Renamed");
        assert!(p.remove::<UserGpu>("lab-card"));
        assert!(!p.remove::<UserGpu>("lab-card"));
        assert_eq!(p.gpus.len(), 3);
    }

    #[test]
    fn bad_values_are_refused_with_their_field_and_change_nothing() {
        let mut p = UserPresets::default();
        for (v, ok) in [
            (0.0, false),
            (-3.0, false),
            (f64::NAN, false),
            (f64::INFINITY, false),
            (5000.0, false),
            (0.5, true),
        ] {
            let r = p.put(None, gpu("X", v));
            assert_eq!(r.is_ok(), ok, "vram {v}: {r:?}");
            if let Err(e) = r {
                assert_eq!(e.field, "vram_gib");
            }
        }
        assert_eq!(p.gpus.len(), 1);
        let e = p.put(None, gpu("  ", 8.0)).unwrap_err();
        assert_eq!(e.field, "name");
        let mut m = model();
        m.kv_heads = 5;
        assert_eq!(p.put(None, m).unwrap_err().field, "kv_heads");
        let mut m = model();
        m.params = f64::NAN;
        assert_eq!(p.put(None, m).unwrap_err().field, "params");
        let mut m = model();
        m.layers = 0;
        assert_eq!(p.put(None, m).unwrap_err().field, "layers");
        assert!(p.models.is_empty());
        let e = p
            .put(Some("nope"), gpu("X", 8.0))
            .expect_err("editing a missing entry");
        assert!(e.message.to_string().contains("nope"), "{e}");
    }

    #[test]
    fn a_user_model_plans_like_the_builtin_it_was_copied_from() {
        let builtin = Catalog::get().model("llama-3.1-8b").unwrap();
        let m = model();
        assert_eq!(m.arch(), builtin.arch);
        let w = crate::types::workload::WorkloadFile {
            gpu: gpu("X", 24.0).section(),
            model: m.section(),
            ..Default::default()
        };
        let resolved = w.resolve(std::path::Path::new("."), None).unwrap();
        assert_eq!(resolved.model, builtin.arch);
        assert_eq!(resolved.gpu.vram_bytes, 24 << 30);
        // Models the [model] section cannot describe are not offered for copying.
        let moe = Catalog::get().models.iter().find(|m| m.arch.moe.is_some());
        assert!(UserModel::from_builtin(moe.expect("an MoE preset")).is_none());
    }
}
