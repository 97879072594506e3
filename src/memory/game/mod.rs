//! Game workloads: a catalog title's review-measured VRAM, moved to the player's settings by a
//! generic model (render targets scale with pixels, the texture pool with texture quality, ray
//! tracing and frame generation add their buffers), set against the card and the budget the OS
//! gives a game.

pub mod catalog;

use super::breakdown::{Breakdown, ComponentId, Layer};
use crate::types::message::Message;
use crate::types::options::choice;
use crate::types::workload::GpuTarget;
use crate::units::GIB;
pub use catalog::{Game, GameCatalog, Measured};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

choice!(
    /// Texture quality, the biggest VRAM lever in most titles.
    TextureQuality, "run.texture_quality" {
        Low = "low",
        Medium = "medium" | "med",
        High = "high",
        Ultra = "ultra" | "very-high" | "very_high" | "very high" | "max" | "epic" | "highest",
    }
);

choice!(
    /// Upscaler mode (DLSS, FSR, XeSS share the ratios).
    Upscaler, "run.upscaler" {
        None = "none" | "off" | "native" | "dlaa",
        Quality = "quality" | "dlss-quality" | "fsr-quality" | "xess-quality",
        Balanced = "balanced" | "dlss-balanced" | "fsr-balanced" | "xess-balanced",
        Performance = "performance" | "dlss-performance" | "fsr-performance" | "xess-performance",
        UltraPerformance = "ultra-performance" | "ultra_performance" | "dlss-ultra-performance",
    }
);

impl TextureQuality {
    /// Texture streaming pool of a current AAA title at this level, GiB [derived]: Far Cry 6's HD
    /// pack adds 2.3 GiB at 4K (TechSpot: 8.0 vs 5.7 GB), and one step down usually halves
    /// the top mip's share of the pool.
    pub fn pool_gib(self) -> f64 {
        match self {
            TextureQuality::Low => 1.0,
            TextureQuality::Medium => 2.0,
            TextureQuality::High => 3.5,
            TextureQuality::Ultra => 5.8,
        }
    }

    pub fn lower(self) -> Option<TextureQuality> {
        match self {
            TextureQuality::Low => None,
            TextureQuality::Medium => Some(TextureQuality::Low),
            TextureQuality::High => Some(TextureQuality::Medium),
            TextureQuality::Ultra => Some(TextureQuality::High),
        }
    }
}

impl Upscaler {
    /// Render scale per axis: DLSS/FSR 2+/XeSS quality 1/1.5, balanced 1/1.72, performance 1/2,
    /// ultra performance 1/3 (NVIDIA DLSS programming guide; AMD FSR 2 documentation).
    pub fn scale(self) -> f64 {
        match self {
            Upscaler::None => 1.0,
            Upscaler::Quality => 1.0 / 1.5,
            Upscaler::Balanced => 1.0 / 1.72,
            Upscaler::Performance => 0.5,
            Upscaler::UltraPerformance => 1.0 / 3.0,
        }
    }
}

/// A display resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolution {
    pub width: u32,
    pub height: u32,
}

impl Default for Resolution {
    fn default() -> Self {
        Resolution {
            width: 1920,
            height: 1080,
        }
    }
}

impl Resolution {
    pub fn pixels(self) -> f64 {
        f64::from(self.width) * f64::from(self.height)
    }
}

impl fmt::Display for Resolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

impl FromStr for Resolution {
    type Err = String;
    /// `2560x1440`, `1440p`, `4k`.
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim().to_ascii_lowercase();
        let named = match t.as_str() {
            "720p" => Some((1280, 720)),
            "1080p" | "fhd" | "full-hd" => Some((1920, 1080)),
            "1440p" | "qhd" | "2k" => Some((2560, 1440)),
            "2160p" | "4k" | "uhd" => Some((3840, 2160)),
            "8k" | "4320p" => Some((7680, 4320)),
            _ => None,
        };
        let (w, h) = match named {
            Some(p) => p,
            None => {
                let bad = || {
                    format!(
                        "resolution '{s}' is not understood; use WIDTHxHEIGHT (e.g. 2560x1440), 1080p, 1440p or 4k"
                    )
                };
                let (a, b) = t.split_once(['x', '×']).ok_or_else(bad)?;
                (
                    a.trim().parse::<u32>().map_err(|_| bad())?,
                    b.trim().parse::<u32>().map_err(|_| bad())?,
                )
            }
        };
        if !(320..=16384).contains(&w) || !(200..=16384).contains(&h) {
            return Err(format!(
                "resolution '{s}' is out of range; allowed 320x200 up to 16384x16384"
            ));
        }
        Ok(Resolution {
            width: w,
            height: h,
        })
    }
}

/// Generic model constants, each derived from a cited figure.
pub mod generic {
    /// Render targets per rendered pixel: a deferred renderer keeps ~40 full-screen buffers of
    /// 4 bytes per pixel (G-buffer, depth, lighting, post chain, TAA history) — Tom's Hardware,
    /// "Why does 4K gaming require so much VRAM?" (8 294 400 bytes per 1080p buffer) [derived].
    pub const TARGET_BYTES_PER_PIXEL: f64 = 160.0;
    /// Share of those targets kept at output resolution when upscaling (UI, post, history).
    pub const OUTPUT_RES_SHARE: f64 = 0.3;
    /// Upscaler's own buffers: DLSS (transformer model, SDK 310.3) 307.37 MB at 4K, 85.77 MB
    /// at 1080p (NVIDIA programming guide via Tom's Hardware) ≈ 37 bytes per output pixel.
    pub const UPSCALER_BYTES_PER_PIXEL: f64 = 37.0;
    /// Frame generation: two extra output-resolution frames plus optical-flow data; NVIDIA says
    /// DLSS 4 frame generation saved ~400 MB at 4K over DLSS 3 → ~60 bytes per output pixel
    /// [derived, weak source].
    pub const FRAMEGEN_BYTES_PER_PIXEL: f64 = 60.0;
    /// Ray tracing (BVH + RT targets) when no review measured it: median of TechSpot's 4K deltas
    /// (0.1, 0.8, 1.2, 1.5, 1.9, 2.4, 4.3 GB) = 1.5 GiB.
    pub const RT_EXTRA_GIB: f64 = 1.5;
    /// Engine, geometry, shaders and streaming buffers of a generic title.
    pub const BASE_GIB: f64 = 1.5;
    /// What Windows' desktop compositor and driver keep outside a game's budget [derived:
    /// DXGI `Budget` is below the card's size even on an idle desktop].
    pub const OS_RESERVE_GIB: f64 = 0.4;
}

/// The settings a game runs at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GameRun {
    pub resolution: Resolution,
    pub texture_quality: TextureQuality,
    pub ray_tracing: bool,
    pub frame_generation: bool,
    pub upscaler: Upscaler,
    pub other_processes_bytes: u64,
}

impl Default for GameRun {
    fn default() -> Self {
        GameRun {
            resolution: Resolution::default(),
            texture_quality: TextureQuality::High,
            ray_tracing: false,
            frame_generation: false,
            upscaler: Upscaler::None,
            other_processes_bytes: 0,
        }
    }
}

/// A checked game workload; `game` is `None` for the generic model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GameWorkload {
    pub gpu: GpuTarget,
    pub game: Option<Game>,
    pub run: GameRun,
}

/// VRAM parts of a game at given settings, GiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GameParts {
    pub textures: f64,
    pub render_targets: f64,
    pub ray_tracing: f64,
    pub frame_generation: f64,
    pub upscaler: f64,
    pub other: f64,
}

impl GameParts {
    pub fn total(&self) -> f64 {
        self.textures
            + self.render_targets
            + self.ray_tracing
            + self.frame_generation
            + self.upscaler
            + self.other
    }
}

/// The generic model's parts at `run` (no catalog anchor).
pub fn generic_parts(run: &GameRun, rt_extra_gib: f64) -> GameParts {
    use generic::*;
    let px = run.resolution.pixels();
    let s = run.upscaler.scale();
    let rendered = px * s * s;
    let targets =
        TARGET_BYTES_PER_PIXEL * (OUTPUT_RES_SHARE * px + (1.0 - OUTPUT_RES_SHARE) * rendered);
    GameParts {
        textures: run.texture_quality.pool_gib(),
        render_targets: targets / GIB,
        ray_tracing: if run.ray_tracing { rt_extra_gib } else { 0.0 },
        frame_generation: if run.frame_generation {
            FRAMEGEN_BYTES_PER_PIXEL * px / GIB
        } else {
            0.0
        },
        upscaler: if run.upscaler == Upscaler::None {
            0.0
        } else {
            UPSCALER_BYTES_PER_PIXEL * px / GIB
        },
        other: BASE_GIB,
    }
}

/// The measurement closest to `run`: same ray tracing first, then same texture quality, then
/// the nearest pixel count.
fn anchor<'a>(g: &'a Game, run: &GameRun) -> &'a Measured {
    let score = |m: &Measured| {
        let rt = u8::from(m.ray_tracing != run.ray_tracing);
        let tq = u8::from(m.texture_quality != run.texture_quality);
        let px = (m.res().pixels().ln() - run.resolution.pixels().ln()).abs();
        (rt, tq, px)
    };
    g.measured
        .iter()
        .min_by(|a, b| {
            score(a)
                .partial_cmp(&score(b))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .unwrap_or(&g.measured[0])
}

impl GameWorkload {
    /// Ray tracing's extra VRAM for this title.
    pub fn rt_extra_gib(&self) -> f64 {
        self.game
            .as_ref()
            .and_then(|g| g.rt_extra_gib)
            .unwrap_or(generic::RT_EXTRA_GIB)
    }

    /// VRAM parts at `run`: the generic model, fitted to the nearest review measurement of a
    /// catalog title. Resolution-bound parts (render targets, RT, frame generation, upscaler)
    /// keep their generic size; the texture pool and the engine's share are scaled so the
    /// model reproduces the measurement at its own settings.
    pub fn parts_at(&self, run: &GameRun) -> GameParts {
        let rt = self.rt_extra_gib();
        let mut p = generic_parts(run, rt);
        if let Some(g) = &self.game {
            let m = anchor(g, run);
            let at_anchor = GameRun {
                resolution: m.res(),
                texture_quality: m.texture_quality,
                ray_tracing: m.ray_tracing,
                frame_generation: false,
                upscaler: Upscaler::None,
                other_processes_bytes: 0,
            };
            let a = generic_parts(&at_anchor, rt);
            let fixed = a.total() - a.textures - a.other;
            let k = (m.vram_gib - fixed).max(0.3) / (a.textures + a.other);
            p.textures *= k;
            p.other *= k;
        }
        p
    }

    /// The VRAM budget Windows gives the game: the card minus other programs and the desktop.
    pub fn budget_bytes(&self) -> u64 {
        self.budget_on(self.gpu.vram_bytes)
    }

    /// The same budget on a card of `capacity_bytes` (the one the monitor shows): what one
    /// process may hold there (DXGI's `QueryVideoMemoryInfo` budget, approximated as the card
    /// less the planned other programs and [`generic::OS_RESERVE_GIB`]).
    pub fn budget_on(&self, capacity_bytes: u64) -> u64 {
        (capacity_bytes as f64
            - self.run.other_processes_bytes as f64
            - generic::OS_RESERVE_GIB * GIB)
            .max(0.0) as u64
    }

    /// The budget for one process against `used_bytes`, the dedicated memory the game's process
    /// holds on a card of `reported_capacity` bytes (0 where the card's size is not reported,
    /// as from Windows' counters alone: the planned card's size is used then).
    pub fn check_on(&self, reported_capacity: u64, used_bytes: u64) -> BudgetCheck {
        let card_reported = reported_capacity > 0;
        let capacity_bytes = if card_reported {
            reported_capacity
        } else {
            self.gpu.vram_bytes
        };
        BudgetCheck {
            budget_bytes: self.budget_on(capacity_bytes),
            capacity_bytes,
            card_reported,
            used_bytes,
        }
    }

    /// The names the game's process may go by: the catalog title's id, name and aliases
    /// (none for the generic model).
    pub fn process_names(&self) -> Vec<&str> {
        self.game.as_ref().map_or_else(Vec::new, |g| {
            [g.id.as_str(), g.name.as_str()]
                .into_iter()
                .chain(g.aliases.iter().map(String::as_str))
                .collect()
        })
    }
}

/// The game plan's budget for one process on a card, against what the game holds there
/// ([`GameWorkload::check_on`]): the monitor's budget line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetCheck {
    pub budget_bytes: u64,
    /// The card the budget is taken from.
    pub capacity_bytes: u64,
    /// `capacity_bytes` is the card's own report; `false`: the planned card's size.
    pub card_reported: bool,
    pub used_bytes: u64,
}

impl BudgetCheck {
    /// Bytes over the budget; `None` within it.
    pub fn over_bytes(&self) -> Option<u64> {
        self.used_bytes
            .checked_sub(self.budget_bytes)
            .filter(|b| *b > 0)
    }

    /// Bytes left in the budget (0 when over).
    pub fn left_bytes(&self) -> u64 {
        self.budget_bytes.saturating_sub(self.used_bytes)
    }
}

/// Per-GPU estimate of a game at its settings.
pub fn estimate(w: &GameWorkload) -> Breakdown {
    let p = w.parts_at(&w.run);
    let mut b = Breakdown::new(w.gpu.vram_bytes);
    let g = |x: f64| x * GIB;
    b.add(
        ComponentId::Textures,
        "Texture pool",
        g(p.textures),
        Layer::Tensor,
    );
    b.add(
        ComponentId::RenderTargets,
        "Render targets",
        g(p.render_targets),
        Layer::Tensor,
    );
    b.add(
        ComponentId::RayTracing,
        "Ray-tracing structures",
        g(p.ray_tracing),
        Layer::Tensor,
    );
    b.add(
        ComponentId::FrameGeneration,
        "Frame generation",
        g(p.frame_generation),
        Layer::Tensor,
    );
    b.add(
        ComponentId::Upscaler,
        "Upscaler",
        g(p.upscaler),
        Layer::Tensor,
    );
    b.add(
        ComponentId::Other,
        "Geometry, shaders, engine",
        g(p.other),
        Layer::Tensor,
    );
    b.add(
        ComponentId::OsReserve,
        "Windows desktop and driver",
        g(generic::OS_RESERVE_GIB),
        Layer::External,
    );
    b.add(
        ComponentId::OtherProcesses,
        "Other programs on the GPU",
        w.run.other_processes_bytes as f64,
        Layer::External,
    );
    if w.game.as_ref().is_some_and(|g| g.streams_to_budget) {
        b.warn(Message::new("warn.game.streams_to_budget"));
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::gib_to_bytes;

    fn gpu(gib: f64) -> GpuTarget {
        GpuTarget::with_capacity(gib_to_bytes(gib), 1)
    }

    fn game(id: &str, run: GameRun) -> GameWorkload {
        GameWorkload {
            gpu: gpu(8.0),
            game: Some(GameCatalog::get().game(id).unwrap().clone()),
            run,
        }
    }

    #[test]
    fn resolutions_parse() {
        assert_eq!(
            "1440p".parse::<Resolution>().unwrap(),
            Resolution {
                width: 2560,
                height: 1440
            }
        );
        assert_eq!(" 3440X1440 ".parse::<Resolution>().unwrap().width, 3440);
        assert!(
            "huge"
                .parse::<Resolution>()
                .unwrap_err()
                .contains("WIDTHxHEIGHT")
        );
        assert!(
            "10x10"
                .parse::<Resolution>()
                .unwrap_err()
                .contains("out of range")
        );
    }

    #[test]
    fn generic_render_targets_are_160_bytes_per_pixel() {
        let run = GameRun {
            resolution: "4k".parse().unwrap(),
            ..Default::default()
        };
        let p = generic_parts(&run, 1.5);
        assert!((p.render_targets * GIB - 160.0 * 3840.0 * 2160.0).abs() < 1.0);
        let up = GameRun {
            upscaler: Upscaler::Performance,
            ..run
        };
        // Performance mode renders a quarter of the pixels; 30% of targets stay at 4K.
        let q = generic_parts(&up, 1.5);
        assert!((q.render_targets / p.render_targets - (0.3 + 0.7 * 0.25)).abs() < 1e-9);
        assert!((q.upscaler * GIB - 37.0 * 3840.0 * 2160.0).abs() < 1.0);
    }

    #[test]
    fn catalog_title_reproduces_its_measurements() {
        let g = GameCatalog::get();
        for t in &g.games {
            for m in &t.measured {
                let run = GameRun {
                    resolution: m.res(),
                    texture_quality: m.texture_quality,
                    ray_tracing: m.ray_tracing,
                    ..Default::default()
                };
                let w = game(&t.id, run.clone());
                let got = w.parts_at(&run).total();
                assert!(
                    (got - m.vram_gib).abs() < 0.05,
                    "{} {}: {got} vs {}",
                    t.id,
                    m.resolution,
                    m.vram_gib
                );
            }
        }
    }

    #[test]
    fn cyberpunk_ray_tracing_uses_the_measured_delta() {
        let base = GameRun {
            resolution: "4k".parse().unwrap(),
            texture_quality: TextureQuality::Ultra,
            ..Default::default()
        };
        let w = game("cyberpunk-2077", base.clone());
        let rt = GameRun {
            ray_tracing: true,
            ..base.clone()
        };
        assert!((w.parts_at(&rt).total() - 12.0).abs() < 0.05);
        let at_1440 = GameRun {
            resolution: "1440p".parse().unwrap(),
            ..base
        };
        // 4K 7.7 GB minus the render targets the lower resolution no longer needs.
        let expect = 7.7 - 160.0 * (3840.0 * 2160.0 - 2560.0 * 1440.0) / GIB;
        assert!((w.parts_at(&at_1440).total() - expect).abs() < 0.01);
    }

    #[test]
    fn estimate_sets_budget_and_other_programs() {
        let mut w = game(
            "hogwarts-legacy",
            GameRun {
                resolution: "4k".parse().unwrap(),
                texture_quality: TextureQuality::Ultra,
                ..Default::default()
            },
        );
        w.run.other_processes_bytes = 1 << 30;
        let b = estimate(&w);
        assert!(!b.fits(), "Hogwarts at 4K ultra (9.7 GB) does not fit 8 GB");
        assert_eq!(
            w.budget_bytes(),
            gib_to_bytes(8.0) - (1 << 30) - gib_to_bytes(0.4)
        );
        // On another card the same plan leaves that card less the same two.
        assert_eq!(
            w.budget_on(gib_to_bytes(16.0)),
            gib_to_bytes(16.0) - (1 << 30) - gib_to_bytes(0.4)
        );
        assert_eq!(w.budget_on(1 << 20), 0, "never below zero");
        let on_16 = w.check_on(gib_to_bytes(16.0), gib_to_bytes(15.0));
        assert!(
            on_16.card_reported
                && on_16.over_bytes() == Some(on_16.used_bytes - on_16.budget_bytes)
        );
        // A card that does not report its size: the planned card's (8 GiB).
        let unreported = w.check_on(0, 1 << 30);
        assert_eq!(
            (unreported.card_reported, unreported.budget_bytes),
            (false, w.budget_bytes())
        );
        assert_eq!(unreported.over_bytes(), None);
        assert_eq!(unreported.left_bytes(), w.budget_bytes() - (1 << 30));
        assert!(w.process_names().contains(&"Hogwarts Legacy"));
    }
}
