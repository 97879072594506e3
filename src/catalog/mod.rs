//! Presets: GPUs and models, embedded from `presets/*.toml` at build time so the binary works
//! offline and alone. Knowledge lives in those files, not here.

mod gpus;
pub mod hosts;
mod models;
pub mod smbios;
pub mod user;

pub use crate::types::gpu::{Gpu, GpuKind, Vendor};
pub use models::{ModelPreset, PublishedFile};

use crate::types::error::{Shelf, UnknownPreset};
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

    pub fn gpu(&self, id: &str) -> Result<&Gpu, UnknownPreset> {
        let key = id.trim().to_ascii_lowercase();
        self.gpus
            .iter()
            .find(|g| g.id == key || g.aliases.iter().any(|a| a.eq_ignore_ascii_case(&key)))
            .ok_or_else(|| {
                UnknownPreset::new(Shelf::Gpu, id, self.gpus.iter().map(|g| g.id.as_str()))
            })
    }

    /// The preset for a card as its driver names it (`nvmlDeviceGetName`: "NVIDIA GeForce RTX
    /// 4090", "NVIDIA H200"), for the GPUs the app detects. Candidates are the presets whose
    /// name holds every word of the driver's name; the one with the fewest extra words wins
    /// ("RTX 4060" is not the "RTX 4060 Ti"), then the one whose VRAM is closest. A preset more
    /// than 10 % away from the reported total is not the card (a 12 GB board is not its 8 GB
    /// namesake), and then there is no match.
    pub fn gpu_for_device(&self, name: &str, total_bytes: u64) -> Option<&Gpu> {
        let words = |s: &str| -> Vec<String> {
            s.split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_ascii_lowercase)
                .collect()
        };
        let wanted = words(name);
        if wanted.is_empty() || total_bytes == 0 {
            return None;
        }
        let total = total_bytes as f64;
        self.gpus
            .iter()
            .filter_map(|g| {
                let have = words(&g.name);
                let off = (g.vram_bytes() as f64 - total).abs() / total;
                (wanted.iter().all(|w| have.contains(w)) && off <= 0.10)
                    .then(|| (have.len() - wanted.len(), off, g))
            })
            .min_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)))
            .map(|(_, _, g)| g)
    }

    pub fn model(&self, id: &str) -> Result<&ModelPreset, UnknownPreset> {
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
                UnknownPreset::new(Shelf::Model, id, names)
            })
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn driver_names_find_their_presets() {
        let cat = Catalog::get();
        let gib = |g: f64| (g * (1u64 << 30) as f64) as u64;
        let id = |name: &str, total: u64| cat.gpu_for_device(name, total).map(|g| g.id.as_str());
        // NVML reports a little less than the marketing size (23.99 GiB on a 4090).
        assert_eq!(id("NVIDIA GeForce RTX 4090", gib(23.99)), Some("rtx-4090"));
        assert_eq!(id("NVIDIA GeForce RTX 4060", gib(7.996)), Some("rtx-4060"));
        assert_eq!(
            id("NVIDIA GeForce RTX 4060 Ti", gib(15.99)),
            Some("rtx-4060-ti-16gb")
        );
        assert_eq!(id("NVIDIA H200", gib(139.8)), Some("h200"));
        assert_eq!(
            id("NVIDIA GeForce RTX 4090", gib(48.0)),
            None,
            "a modded 48 GB board"
        );
        assert_eq!(id("Some Future GPU", gib(8.0)), None);
        assert_eq!(id("", gib(8.0)), None);
    }
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
        assert!(err.near.iter().any(|n| n == "rtx-4090"), "{err}");
    }
}
