//! Presets: GPUs and models, embedded from `presets/*.toml` at build time so the binary works
//! offline and alone. Knowledge lives in those files, not here.

mod gpus;
mod models;
mod suggest;
pub mod user;

pub use gpus::{Gpu, GpuKind, Vendor};
pub use models::ModelPreset;
pub use suggest::nearest;

use std::sync::OnceLock;

/// All presets, parsed once.
#[derive(Debug)]
pub struct Catalog {
    pub gpus: Vec<Gpu>,
    pub models: Vec<ModelPreset>,
}

static CATALOG: OnceLock<Catalog> = OnceLock::new();

const GPUS_TOML: &str = include_str!("../../presets/gpus.toml");
const MODELS_TOML: &str = include_str!("../../presets/models.toml");

impl Catalog {
    /// The embedded catalog. The files are part of the build and checked by tests, so a parse
    /// failure here is a build defect, reported loudly rather than hidden.
    pub fn get() -> &'static Catalog {
        CATALOG.get_or_init(|| Catalog {
            gpus: gpus::parse(GPUS_TOML).expect("presets/gpus.toml is valid (checked by tests)"),
            models: models::parse(MODELS_TOML)
                .expect("presets/models.toml is valid (checked by tests)"),
        })
    }

    pub fn gpu(&self, id: &str) -> Result<&Gpu, String> {
        let key = id.trim().to_ascii_lowercase();
        self.gpus
            .iter()
            .find(|g| g.id == key || g.aliases.iter().any(|a| a.eq_ignore_ascii_case(&key)))
            .ok_or_else(|| {
                let names = self.gpus.iter().map(|g| g.id.as_str());
                unknown("GPU", id, names, "vram-doctor presets list gpus")
            })
    }

    pub fn model(&self, id: &str) -> Result<&ModelPreset, String> {
        let key = id.trim().to_ascii_lowercase();
        self.models
            .iter()
            .find(|m| {
                m.id == key
                    || m.hf_id
                        .as_deref()
                        .is_some_and(|h| h.eq_ignore_ascii_case(&key))
            })
            .ok_or_else(|| {
                let names = self.models.iter().map(|m| m.id.as_str());
                unknown("model", id, names, "vram-doctor presets list models")
            })
    }
}

fn unknown<'a>(what: &str, id: &str, names: impl Iterator<Item = &'a str>, list: &str) -> String {
    let near = nearest(id, names, 3);
    if near.is_empty() {
        format!("unknown {what} preset '{id}'; see `{list}`")
    } else {
        format!(
            "unknown {what} preset '{id}'; did you mean {}? (all: `{list}`)",
            near.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalog_parses_and_ids_are_unique() {
        let c = Catalog::get();
        let mut ids: Vec<_> = c.gpus.iter().map(|g| g.id.clone()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), c.gpus.len(), "duplicate GPU id");
        let mut ids: Vec<_> = c.models.iter().map(|m| m.id.clone()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), c.models.len(), "duplicate model id");
    }

    /// `ModelPreset` flattens `ModelArch`, which rules out `deny_unknown_fields`; so a misspelt
    /// optional key (`sliding_windw`) would be dropped silently. Every key written in the file
    /// must come back when the parsed preset is serialized again.
    #[test]
    fn model_file_has_no_unknown_keys() {
        let raw: toml::Table = toml::from_str(MODELS_TOML).expect("valid TOML");
        let raw = raw["model"].as_array().expect("[[model]] tables");
        for (table, parsed) in raw.iter().zip(&Catalog::get().models) {
            let back = toml::Value::try_from(parsed).expect("serializable");
            assert_no_extra_keys(table, &back, &parsed.id);
        }
    }

    fn assert_no_extra_keys(written: &toml::Value, parsed: &toml::Value, at: &str) {
        let (Some(w), Some(p)) = (written.as_table(), parsed.as_table()) else {
            return;
        };
        for (key, value) in w {
            let back = p
                .get(key)
                .unwrap_or_else(|| panic!("{at}: unknown key '{key}'"));
            assert_no_extra_keys(value, back, &format!("{at}.{key}"));
        }
    }

    #[test]
    fn unknown_preset_suggests_near_names() {
        let err = Catalog::get().gpu("rtx-4900").unwrap_err();
        assert!(err.contains("rtx-4090"), "{err}");
    }
}
