//! The game presets (`presets/games.toml`): review-measured VRAM use with its settings.

use super::{Resolution, TextureQuality};
use crate::types::error::{Shelf, UnknownPreset};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

const GAMES_TOML: &str = include_str!("../../../presets/games.toml");

/// One review measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    pub resolution: String,
    pub texture_quality: TextureQuality,
    pub ray_tracing: bool,
    pub vram_gib: f64,
    #[serde(default)]
    pub peak_gib: Option<f64>,
    pub source: String,
}

impl Measured {
    /// The parsed resolution (checked on load).
    pub fn res(&self) -> Resolution {
        self.resolution.parse().unwrap_or_default()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Game {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub engine: String,
    /// Measured extra VRAM with ray tracing at its maximum.
    #[serde(default)]
    pub rt_extra_gib: Option<f64>,
    /// The engine sizes its streaming pool to the budget it is given.
    #[serde(default)]
    pub streams_to_budget: bool,
    pub measured: Vec<Measured>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GameCatalog {
    #[serde(rename = "game", default)]
    pub games: Vec<Game>,
}

static CATALOG: OnceLock<GameCatalog> = OnceLock::new();

impl GameCatalog {
    /// The embedded catalog (checked by tests, so a parse failure is a build defect).
    pub fn get() -> &'static GameCatalog {
        CATALOG.get_or_init(|| {
            parse(GAMES_TOML).expect("presets/games.toml is valid (checked by tests)")
        })
    }

    pub fn game(&self, id: &str) -> Result<&Game, UnknownPreset> {
        let key = id.trim().to_ascii_lowercase();
        self.games
            .iter()
            .find(|g| g.id == key || g.aliases.iter().any(|a| a.eq_ignore_ascii_case(&key)))
            .ok_or_else(|| {
                let names = self.games.iter().map(|g| g.id.as_str());
                UnknownPreset::new(Shelf::Game, id, names)
            })
    }
}

/// The `presets list games` table: each title with its measurements.
pub fn listing() -> String {
    let mut out = format!(
        "{:<30} {:<44} NAME\n",
        "GAME", "MEASURED (GiB @ resolution, textures, RT)"
    );
    for g in &GameCatalog::get().games {
        let m: Vec<String> = g
            .measured
            .iter()
            .map(|m| {
                format!(
                    "{:.1}@{}{}{}",
                    m.vram_gib,
                    m.res().height,
                    if m.texture_quality.as_str() == "ultra" {
                        "u"
                    } else {
                        ""
                    },
                    if m.ray_tracing { "+RT" } else { "" }
                )
            })
            .collect();
        out += &format!("{:<30} {:<44} {}\n", g.id, m.join(" "), g.name);
    }
    out
}

/// Parses and checks the catalog: every row measured, numbers in range, resolutions valid.
pub fn parse(text: &str) -> Result<GameCatalog, String> {
    let c: GameCatalog =
        toml::from_str(text).map_err(|e| format!("presets/games.toml: {}", e.message().trim()))?;
    for g in &c.games {
        let err = |e: String| format!("presets/games.toml: {}: {e}", g.id);
        if g.measured.is_empty() {
            return Err(err("needs at least one [[game.measured]] row".into()));
        }
        for m in &g.measured {
            m.resolution.parse::<Resolution>().map_err(err)?;
            if !(m.vram_gib > 0.0 && m.vram_gib < 256.0) {
                return Err(err(format!("vram_gib {} is out of range", m.vram_gib)));
            }
            if m.source.trim().is_empty() {
                return Err(err("every measurement names its source".into()));
            }
        }
        if let Some(x) = g.rt_extra_gib
            && !(0.0..64.0).contains(&x)
        {
            return Err(err(format!("rt_extra_gib {x} is out of range")));
        }
    }
    let mut ids: Vec<&str> = c.games.iter().map(|g| g.id.as_str()).collect();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("presets/games.toml: duplicate id '{}'", w[0]));
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalog_has_fifteen_sourced_titles() {
        let c = GameCatalog::get();
        assert!(c.games.len() >= 15, "{}", c.games.len());
        assert!(
            c.games
                .iter()
                .all(|g| g.measured.iter().all(|m| !m.source.is_empty()))
        );
        assert_eq!(c.game("Cyberpunk").unwrap().id, "cyberpunk-2077");
    }

    #[test]
    fn listing_shows_measurements() {
        let l = listing();
        assert!(
            l.contains("cyberpunk-2077") && l.contains("12.0@2160u+RT"),
            "{l}"
        );
    }

    #[test]
    fn bad_rows_are_clear_errors() {
        let row = "[[game]]\nid=\"g\"\nname=\"G\"\nengine=\"e\"\n[[game.measured]]\nresolution=\"1920x1080\"\ntexture_quality=\"high\"\nray_tracing=false\nvram_gib=5.0\nsource=\"s\"\n";
        assert!(parse(row).is_ok());
        let e = parse(&row.replace("1920x1080", "1920by1080")).unwrap_err();
        assert!(e.contains("g:") && e.contains("1920by1080"), "{e}");
        let e = parse(&row.replace("vram_gib=5.0", "vram_gib=-5.0")).unwrap_err();
        assert!(e.contains("vram_gib"), "{e}");
        let e = parse(&row.replace("\"high\"", "\"insane\"")).unwrap_err();
        assert!(e.contains("texture_quality"), "{e}");
        let e = GameCatalog::get().game("cyberpunk-2078").unwrap_err();
        assert!(e.near.iter().any(|n| n == "cyberpunk-2077"), "{e}");
    }
}
