//! The one verdict on a workload as given, with its safety margin, that every front end reads
//! (the GUI's headline, `plan`'s table and JSON, the report): it fits with room to spare, it
//! runs only by streaming weights from system RAM, or it does not fit and by how much.
//!
//! Two figures are kept apart: what the engine would use on this card and the least it needs.
//! They differ where the engine fills what the card has: ComfyUI keeps models loaded while they
//! fit and loads the denoiser partially into whatever is free, and the caching allocator keeps
//! its cache in memory nobody else asks for. "Needs" is the smallest card on which the run
//! stays whole in VRAM (found by trying card sizes), so it does not grow with the card.

use crate::memory::Breakdown;
use crate::memory::diffusion::{DiffusionWorkload, estimate, residency::place};
use crate::types::message::Message;
use crate::units::human;
use serde::{Deserialize, Serialize};

/// Whether it fits, in the three cases a user acts on differently.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fit {
    /// Everything stays in VRAM with the safety margin left free.
    Fits,
    /// It runs, but only by reading `streamed_bytes` of weights from system RAM every step,
    /// about `slowdown` times the time it would take on a card big enough.
    Streams { streamed_bytes: u64, slowdown: f64 },
    /// It does not fit with the safety margin.
    Short,
}

/// Below this factor a slowdown is "barely slower": people tell two durations of seconds apart
/// only when they differ by about 10% or more (the Weber fraction for time intervals; Grondin
/// 2001, "From physical time to the first and second moments of psychological time",
/// Psychological Bulletin 127(1):22-44), so a 1.02x run does not feel slow.
pub const BARELY_SLOWER: f64 = 1.1;
/// From this factor on, "much slower": each image takes twice as long or more.
pub const MUCH_SLOWER: f64 = 2.0;

/// The verdict and its figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub fit: Fit,
    /// What the engine would hold on this card at the peak (other programs included).
    pub use_bytes: u64,
    /// The least the card must hold for the run to stay whole in VRAM.
    pub need_bytes: u64,
    pub capacity_bytes: u64,
    /// Kept free on top of `need_bytes`: allocator fragmentation, a display, a driver update.
    pub margin_bytes: u64,
}

impl Verdict {
    /// Memory left beside what the run needs (negative: missing).
    pub fn spare_bytes(&self) -> i128 {
        i128::from(self.capacity_bytes) - i128::from(self.need_bytes)
    }

    /// How much is missing for the run to fit with the margin (0 when it does).
    pub fn short_bytes(&self) -> u64 {
        let short = i128::from(self.need_bytes) + i128::from(self.margin_bytes)
            - i128::from(self.capacity_bytes);
        short.clamp(0, i128::from(u64::MAX)) as u64
    }

    /// The verdict in words (`types::message`): the command line prints it in English, the GUI
    /// in the language chosen, figures kept.
    pub fn message(&self) -> Message {
        let m = |id| {
            Message::new(id)
                .bytes("need", self.need_bytes)
                .bytes("cap", self.capacity_bytes)
        };
        match self.fit {
            Fit::Fits => m("verdict.fits").bytes("spare", self.spare_bytes().max(0) as u64),
            Fit::Streams {
                streamed_bytes,
                slowdown,
            } => m(if self.need_bytes > self.capacity_bytes {
                "verdict.streams.over"
            } else {
                "verdict.streams.within"
            })
            .bytes("streamed", streamed_bytes)
            .fixed("slowdown", slowdown, 2),
            Fit::Short => m(if self.margin_bytes == 0 {
                "verdict.short"
            } else {
                "verdict.short.margin"
            })
            .bytes("short", self.short_bytes())
            .bytes("margin", self.margin_bytes),
        }
    }

    /// What the engine would use, when it is not what the run needs (the engine fills the
    /// card); `None` when the two are the same.
    pub fn use_message(&self) -> Option<Message> {
        (self.use_bytes != self.need_bytes).then(|| {
            Message::new("verdict.engine_use")
                .bytes("use", self.use_bytes)
                .bytes("need", self.need_bytes)
        })
    }

    /// How much slower the streaming costs, in words that agree with the factor, as a template
    /// like [`Self::template`]; `None` when nothing streams.
    pub fn pace_template(&self) -> Option<(&'static str, Vec<(&'static str, String)>)> {
        let Fit::Streams {
            streamed_bytes,
            slowdown,
        } = self.fit
        else {
            return None;
        };
        let template = if slowdown < BARELY_SLOWER {
            "{streamed} streamed from system RAM each step, not held in VRAM: about {slowdown}× the time, barely slower"
        } else if slowdown < MUCH_SLOWER {
            "{streamed} streamed from system RAM each step, not held in VRAM: about {slowdown}× the time"
        } else {
            "{streamed} streamed from system RAM each step, not held in VRAM: about {slowdown}× the time, much slower"
        };
        Some((
            template,
            vec![
                ("streamed", human(streamed_bytes)),
                ("slowdown", format!("{slowdown:.2}")),
            ],
        ))
    }

    /// Whether it runs at all (in VRAM or by streaming).
    pub fn runs(&self) -> bool {
        self.fit != Fit::Short
    }

    /// The verdict from its figures: fits when the need leaves the margin free, otherwise
    /// `streaming` (the engine's own way out, when it has one), otherwise short.
    fn of(use_bytes: u64, need_bytes: u64, capacity_bytes: u64, streaming: Option<Fit>) -> Self {
        let margin_bytes = margin(capacity_bytes);
        let fits = i128::from(need_bytes) + i128::from(margin_bytes) <= i128::from(capacity_bytes);
        Verdict {
            fit: match streaming {
                _ if fits => Fit::Fits,
                Some(s) => s,
                None => Fit::Short,
            },
            use_bytes,
            need_bytes,
            capacity_bytes,
            margin_bytes,
        }
    }
}

/// `template` with each `{name}` replaced by its value.
pub fn fill(template: &str, values: &[(&str, String)]) -> String {
    values
        .iter()
        .fold(template.to_string(), |s, (name, value)| {
            s.replace(&format!("{{{name}}}"), value)
        })
}

/// The safety margin of a card.
pub fn margin(capacity_bytes: u64) -> u64 {
    crate::memory::breakdown::margin_bytes(capacity_bytes)
}

/// An estimate without a fill-what-is-there engine: what it uses is what it needs.
pub fn of_breakdown(b: &Breakdown) -> Verdict {
    Verdict::of(
        b.required_bytes(),
        b.required_bytes(),
        b.capacity_bytes,
        None,
    )
}

/// A game against the memory the OS lets it have (the DXGI budget, which already leaves the
/// OS its share, so no margin on top): over the budget is short.
pub fn of_game(a: &super::game::GameAdvice) -> Verdict {
    Verdict {
        fit: if a.verdict == super::game::Verdict::OverBudget {
            Fit::Short
        } else {
            Fit::Fits
        },
        use_bytes: a.use_bytes,
        need_bytes: a.use_bytes,
        capacity_bytes: a.budget_bytes,
        margin_bytes: 0,
    }
}

/// A diffusion run: ComfyUI's caching and partial loading and the allocator's cache fill the
/// card, so the need is the smallest card that holds the run whole.
pub fn of_diffusion(w: &DiffusionWorkload) -> Verdict {
    let b = estimate(w);
    let p = place(w);
    let streaming = (b.fits() && streams_weights(p.streamed_bytes)).then(|| Fit::Streams {
        streamed_bytes: p.streamed_bytes as u64,
        slowdown: super::diffusion::streaming_slowdown(w),
    });
    let need = diffusion_need_bytes(w);
    if need == u64::MAX {
        // Streams on any card (sequential offload): what it uses is all it needs.
        return Verdict {
            fit: streaming.unwrap_or(Fit::Short),
            need_bytes: b.required_bytes(),
            ..Verdict::of(b.required_bytes(), 0, w.gpu.vram_bytes, None)
        };
    }
    // Without streaming, a bigger card only adds cache: the need is at most the use (the search
    // over card sizes rounds up to its step).
    let need = if streaming.is_none() {
        need.min(b.required_bytes())
    } else {
        need
    };
    Verdict::of(b.required_bytes(), need, w.gpu.vram_bytes, streaming)
}

/// Whether a placement that leaves `streamed_bytes` in system RAM streams weights every step:
/// more than a byte (what is left below is rounding of the partial load's float sums).
pub fn streams_weights(streamed_bytes: f64) -> bool {
    streamed_bytes > 1.0
}

/// Whether the run stays whole in VRAM (no weights streamed) on its card.
fn whole_in_vram(w: &DiffusionWorkload) -> bool {
    estimate(w).fits() && !streams_weights(place(w).streamed_bytes)
}

/// Whether a diffusion run stays whole in VRAM with the safety margin left free: the verdict's
/// `Fit::Fits`, so the diffusion planner and every front end agree.
pub fn diffusion_fits_with_margin(w: &DiffusionWorkload) -> bool {
    of_diffusion(w).fit == Fit::Fits
}

/// Card sizes are tried to this resolution.
const NEED_STEP: u64 = 1 << 20;

/// The smallest card (in `NEED_STEP`s) on which the run stays whole in VRAM, everything else as
/// given; `u64::MAX` when not even 4 TiB would (sequential offload streams by design).
pub fn diffusion_need_bytes(w: &DiffusionWorkload) -> u64 {
    let on = |bytes: u64| {
        let mut x = w.clone();
        x.gpu.vram_bytes = bytes;
        whole_in_vram(&x)
    };
    let (mut lo, mut hi) = (0u64, (4u64 << 40) / NEED_STEP);
    if !on(hi * NEED_STEP) {
        return u64::MAX;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if on(mid * NEED_STEP) {
            hi = mid
        } else {
            lo = mid
        }
    }
    hi * NEED_STEP
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::diffusion::Bus;
    use crate::types::options::Engine;
    use crate::types::workload::GpuTarget;
    use crate::units::gib_to_bytes;

    fn comfy(model: &str, gib: f64) -> DiffusionWorkload {
        let gpu = GpuTarget::with_capacity(gib_to_bytes(gib), 1);
        let mut w = crate::resolve::diffusion::for_preset(gpu, Bus::default(), model).unwrap();
        w.run.engine = Engine::ComfyUi;
        w
    }

    /// Issue 22: "needs 12.00 GiB on a 12 GB card, 12.67 on a 24 GB one" — the need is the
    /// same on every card big enough, and the run fits whole on a card of exactly that size.
    #[test]
    fn the_need_does_not_grow_with_the_card() {
        let needs: Vec<u64> = [16.0, 24.0, 48.0]
            .iter()
            .map(|g| of_diffusion(&comfy("sdxl", *g)).need_bytes)
            .collect();
        assert!(needs.windows(2).all(|n| n[0] == n[1]), "{needs:?}");
        let big = of_diffusion(&comfy("sdxl", 48.0));
        assert!(big.use_bytes > big.need_bytes, "the cache fills a big card");
        let mut exact = comfy("sdxl", 48.0);
        exact.gpu.vram_bytes = needs[0];
        assert!(whole_in_vram(&exact));
        exact.gpu.vram_bytes = needs[0] - NEED_STEP;
        assert!(!whole_in_vram(&exact));
    }

    #[test]
    fn a_partial_load_streams_and_says_how_much() {
        let v = of_diffusion(&comfy("flux-dev", 12.0));
        let Fit::Streams {
            streamed_bytes,
            slowdown,
        } = v.fit
        else {
            panic!("{v:?}")
        };
        assert!(streamed_bytes > 0 && slowdown > 1.0, "{v:?}");
        assert!(v.need_bytes > v.capacity_bytes);
    }

    /// Issue 22: "runs, but slowly" beside "1.02× the time". The words follow the factor at
    /// the thresholds, and a run that streams nothing has no pace to tell.
    #[test]
    fn the_pace_words_follow_the_factor() {
        let at = |slowdown: f64| {
            let cap = gib_to_bytes(12.0);
            let s = Fit::Streams {
                streamed_bytes: 1 << 30,
                slowdown,
            };
            let (t, v) = Verdict::of(cap, cap * 2, cap, Some(s))
                .pace_template()
                .unwrap();
            fill(t, &v)
        };
        assert!(
            at(1.02).ends_with("about 1.02× the time, barely slower"),
            "{}",
            at(1.02)
        );
        assert!(at(BARELY_SLOWER).ends_with("about 1.10× the time"));
        assert!(at(1.99).ends_with("about 1.99× the time"));
        assert!(at(MUCH_SLOWER).ends_with("about 2.00× the time, much slower"));
        assert!(at(1.5).starts_with("1.00 GiB streamed from system RAM each step"));
        let cap = gib_to_bytes(12.0);
        assert_eq!(Verdict::of(1, 1, cap, None).pace_template(), None);
    }

    /// Never "fits" with nothing to spare: inside the margin is short, by what the margin misses.
    #[test]
    fn inside_the_margin_is_short() {
        let cap = gib_to_bytes(12.0);
        let v = Verdict::of(cap - 1, cap - 1, cap, None);
        assert_eq!(v.fit, Fit::Short);
        assert_eq!(v.short_bytes(), margin(cap) - 1);
        let ok = Verdict::of(cap - margin(cap), cap - margin(cap), cap, None);
        assert_eq!((ok.fit, ok.short_bytes()), (Fit::Fits, 0));
    }
}
