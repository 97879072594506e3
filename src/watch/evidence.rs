//! From a run's timeline to facts the doctor ranks causes by (`Source::Timeline` observations,
//! facts `timeline_*` in assets/doctor/facts.toml), plus the plain lines of the summary.
//!
//! What is looked for, on the GPU the run used most, up to the failure (or the end):
//! - the peak, when, and whether the card was full then;
//! - steady growth (a leak): [`Growth`], the monitor's own test, over the longest stretch
//!   ending at the failure in which the floor rises by the monitor's threshold;
//! - a jump at the first step: the peak level first reached by a sudden rise from a plateau
//!   that already held a loaded model (which tells the first step from the loading);
//! - memory handed back between phases: a fall that later rises again;
//! - another process arriving, and a likely spill (the monitor's detectors' alerts).
//!
//! The thresholds are this project's choices (as the monitor's, detect.rs), named below.

use super::timeline::{Basis, GpuTrack, Timeline, TrackPoint};
use crate::doctor::evidence::Source;
use crate::doctor::{Fact, Observation};
use crate::telemetry::detect::{Alert, AlertKind, DetectorConfig, Growth};
use crate::units::{GIB, MIB, human};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A rise counts as sudden when it happens within this many ms …
const SUDDEN_MS: u64 = 3_000;
/// … and is at least this share of the peak (and [`MIN_STEP`]).
const SUDDEN_SHARE: f64 = 0.25;
/// Smallest rise, fall or plateau that counts: below this it is allocator noise.
const MIN_STEP: u64 = 256 << 20;
/// The memory held before a first-step jump is at least this share of the peak: a model was
/// loaded. (A jump from a bare CUDA context, ~0.3–1 GiB, is the loading itself.)
const LOADED_SHARE: f64 = 0.10;
/// The peak level: within this share of the peak.
const PEAK_LEVEL: f64 = 0.97;
/// Shortest time memory stays down for a fall to count as a phase.
const MIN_PHASE_MS: u64 = 1_000;
/// Shortest stretch a leak is measured over.
const MIN_LEAK_MS: u64 = 5_000;

/// The run's peak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    pub gpu_index: u32,
    pub gpu_name: String,
    /// Bytes the run held at its peak.
    pub bytes: u64,
    /// Ms since the start.
    pub t_ms: u64,
    /// What the whole card held then.
    pub card_bytes: u64,
    pub total_bytes: Option<u64>,
    pub basis: Basis,
}

/// What the timeline showed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub peak: Option<Peak>,
    /// Facts for the doctor.
    pub observations: Vec<Observation>,
    /// Plain lines for the summary (what the basis is, smaller arrivals, the monitor's alerts).
    pub notes: Vec<String>,
}

/// `1:05` or `1:02:05` from ms since the start.
pub fn clock(t_ms: u64) -> String {
    let s = t_ms / 1000;
    if s >= 3600 {
        format!("+{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("+{}:{:02}", s / 60, s % 60)
    }
}

/// "14 minutes", "45 seconds".
fn span_words(ms: u64) -> String {
    let s = ms as f64 / 1000.0;
    if s >= 120.0 {
        format!("{:.0} minutes", s / 60.0)
    } else {
        format!("{s:.0} seconds")
    }
}

fn obs(fact: Fact, values: &[(&str, String)]) -> Observation {
    Observation {
        fact,
        source: Source::Timeline,
        values: values
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect::<BTreeMap<_, _>>(),
    }
}

/// Analyses `tl` up to `until_ms` (ms since the start; the failure line's time, else the end).
/// `alerts` are the monitor's detectors' alerts raised during the run.
pub fn analyse(tl: &Timeline, alerts: &[Alert], until_ms: Option<u64>) -> Evidence {
    let mut ev = Evidence::default();
    if tl.run_never_listed() {
        ev.notes.push(
            "none of the run's processes appeared in the driver's process list (in a container the driver may list other pid numbers): the figures below are the whole card's, other programs included".into(),
        );
    }
    for g in tl.gpus.iter().filter(|g| g.basis() == Basis::WholeCard) {
        if !tl.run_never_listed() {
            ev.notes.push(format!(
                "GPU {} ({}): the source gives no per-process figures, so the figures are the whole card's, other programs included",
                g.index, g.name
            ));
        }
    }
    let Some(g) = tl.main_gpu() else {
        ev.notes
            .push("no GPU memory readings were taken during the run".into());
        return ev;
    };
    let pts: Vec<TrackPoint> = g
        .points
        .iter()
        .copied()
        .filter(|p| until_ms.is_none_or(|u| p.t_ms <= u + 500))
        .collect();
    let Some(peak) = pts
        .iter()
        .copied()
        .max_by_key(|p| (p.run, std::cmp::Reverse(p.t_ms)))
    else {
        return ev;
    };
    let total = g.total.unwrap_or(0);
    ev.peak = Some(Peak {
        gpu_index: g.index,
        gpu_name: g.name.clone(),
        bytes: peak.run,
        t_ms: peak.t_ms,
        card_bytes: peak.card,
        total_bytes: g.total,
        basis: g.basis(),
    });
    let leak = leak(&pts, total);
    ev.observations.extend(leak.clone());
    if leak.is_none() {
        ev.observations.extend(first_step(&pts, peak, total));
    }
    ev.observations.extend(freed(&pts));
    arrivals(tl, g, total, &mut ev);
    for a in alerts {
        let t = a.time_ms.saturating_sub(tl.start_ms);
        if a.kind == AlertKind::LikelySpill && a.gpu == g.key {
            if !ev
                .observations
                .iter()
                .any(|o| o.fact == Fact::TimelineSpill)
            {
                ev.observations.push(obs(
                    Fact::TimelineSpill,
                    &[
                        ("at", clock(t)),
                        (
                            "signals",
                            a.evidence
                                .iter()
                                .map(ToString::to_string)
                                .collect::<Vec<_>>()
                                .join("; "),
                        ),
                    ],
                ));
            }
        } else if a.kind != AlertKind::OtherProcesses {
            ev.notes
                .push(format!("{} {}: {}", clock(t), a.gpu_name, a.message));
        }
    }
    if let Some(full) = pts.iter().copied().max_by_key(|p| p.card)
        && total > 0
        && full.card as f64 >= DetectorConfig::default().full_enter * total as f64
    {
        ev.observations.push(obs(
            Fact::TimelinePeakFull,
            &[
                ("at", clock(full.t_ms)),
                (
                    "fill",
                    format!("{:.0}%", 100.0 * full.card as f64 / total as f64),
                ),
                ("peak", human(full.run)),
                ("total", human(total)),
            ],
        ));
    }
    ev
}

/// The longest stretch ending at the failure over which the floor rises steadily (the
/// monitor's [`Growth`] test and thresholds).
fn leak(pts: &[TrackPoint], total: u64) -> Option<Observation> {
    let c = DetectorConfig::default();
    let need = (c.growth_min_fraction * total as f64).max(c.growth_min_bytes as f64);
    let series: Vec<(u64, u64)> = pts.iter().map(|p| (p.t_ms, p.run)).collect();
    let (start, growth) = [0.0, 0.25, 0.5].iter().find_map(|f| {
        let start = (series.len() as f64 * f) as usize;
        let gr = Growth::measure(&series[start..])?;
        (gr.bytes_per_s > 0.0 && gr.span_ms >= MIN_LEAK_MS && gr.is_steady(need))
            .then_some((start, gr))
    })?;
    let card_then = pts[start].card;
    let to_full_s = total.saturating_sub(card_then) as f64 / growth.bytes_per_s;
    let rate = human((growth.bytes_per_s * 60.0) as u64);
    Some(obs(
        Fact::TimelineLeak,
        &[
            ("rate", rate),
            ("span", span_words(growth.span_ms)),
            ("floors", growth.floors_text()),
            (
                "to_full",
                format!(
                    "about {} after the rise began",
                    span_words((to_full_s * 1000.0) as u64)
                ),
            ),
        ],
    ))
}

/// The peak level reached by a sudden rise from a loaded plateau.
fn first_step(pts: &[TrackPoint], peak: TrackPoint, total: u64) -> Option<Observation> {
    let level = (peak.run as f64 * PEAK_LEVEL) as u64;
    let k = pts.iter().position(|p| p.run >= level)?;
    let reached = pts[k];
    // The rise into the peak level: back from it while each earlier point is strictly lower and
    // within the sudden window; `before` is where the rise starts (the plateau's level).
    let mut j = k;
    while j > 0 && pts[j - 1].run < pts[j].run && pts[j - 1].t_ms + SUDDEN_MS >= reached.t_ms {
        j -= 1;
    }
    let before = pts.get(j).filter(|_| j < k)?;
    let jump = reached.run.saturating_sub(before.run);
    let sudden = jump >= MIN_STEP && jump as f64 >= SUDDEN_SHARE * peak.run as f64;
    let loaded = before.run >= MIN_STEP && before.run as f64 >= LOADED_SHARE * peak.run as f64;
    (sudden && loaded).then(|| {
        obs(
            Fact::TimelineFirstStepSpike,
            &[
                ("before", human(before.run)),
                ("jump", human(jump)),
                (
                    "seconds",
                    format!("{:.1}", (reached.t_ms - before.t_ms) as f64 / 1000.0),
                ),
                ("at", clock(reached.t_ms)),
                ("peak", human(peak.run)),
                ("total", human(total)),
            ],
        )
    })
}

/// The largest fall that later rose again by at least half of it, after staying down for at
/// least [`MIN_PHASE_MS`] (one reading in which the process was not listed is no phase).
fn freed(pts: &[TrackPoint]) -> Option<Observation> {
    let mut hi = *pts.first()?;
    // The lowest point since the fall, and when the fall began.
    let mut lo: Option<(TrackPoint, u64)> = None;
    let mut best: Option<(TrackPoint, TrackPoint)> = None;
    for &p in pts {
        match lo {
            None if p.run >= hi.run => hi = p,
            None => {
                let drop = hi.run - p.run;
                if drop >= MIN_STEP && drop as f64 >= SUDDEN_SHARE * hi.run as f64 {
                    lo = Some((p, p.t_ms));
                }
            }
            Some((l, since)) if p.run < l.run => lo = Some((p, since)),
            Some((l, since)) => {
                if p.run - l.run >= (hi.run - l.run) / 2 {
                    if p.t_ms.saturating_sub(since) >= MIN_PHASE_MS
                        && best.is_none_or(|(h, b)| hi.run - l.run > h.run - b.run)
                    {
                        best = Some((hi, l));
                    }
                    hi = p;
                    lo = None;
                }
            }
        }
    }
    let (h, l) = best?;
    Some(obs(
        Fact::TimelineFreedBetweenPhases,
        &[
            ("from", human(h.run)),
            ("to", human(l.run)),
            ("at", clock(l.t_ms)),
        ],
    ))
}

/// Processes that arrived on the run's GPU: a fact for one that holds enough to matter (the
/// doctor's own threshold, max(1 GiB, 10 % of the card), symptoms.md §1.2 rule 5), a note for
/// smaller ones.
fn arrivals(tl: &Timeline, g: &GpuTrack, total: u64, ev: &mut Evidence) {
    let significant = GIB.max(0.1 * total as f64) as u64;
    for a in tl.arrivals.iter().filter(|a| a.gpu == g.key) {
        let name = a.name.clone().unwrap_or_else(|| "?".into());
        if a.max_bytes >= significant
            && !ev
                .observations
                .iter()
                .any(|o| o.fact == Fact::TimelineOtherProcess)
        {
            ev.observations.push(obs(
                Fact::TimelineOtherProcess,
                &[
                    ("name", name),
                    ("pid", a.pid.to_string()),
                    ("at", clock(a.t_ms)),
                    ("bytes", human(a.max_bytes)),
                ],
            ));
        } else if a.max_bytes as f64 >= MIB * 256.0 {
            ev.notes.push(format!(
                "{} (pid {}) started using GPU {} at {} and held up to {}",
                name,
                a.pid,
                g.index,
                clock(a.t_ms),
                human(a.max_bytes)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB_U: u64 = 1 << 20;

    fn track(series: &[(u64, u64)]) -> Timeline {
        let points = series
            .iter()
            .map(|&(t, mib)| TrackPoint {
                t_ms: t,
                run: mib * MIB_U,
                card: mib * MIB_U + 500 * MIB_U,
                shared: None,
            })
            .collect();
        let mut tl = Timeline::new(0);
        tl.gpus
            .push(GpuTrack::from_points("g", 24 * 1024 * MIB_U, points));
        tl
    }

    fn facts(e: &Evidence) -> Vec<Fact> {
        e.observations.iter().map(|o| o.fact).collect()
    }

    #[test]
    fn a_steady_rise_is_a_leak_with_its_rate() {
        // 1 GiB loaded, then +50 MiB per second for 60 s, with a saw-tooth on top.
        let mut s: Vec<(u64, u64)> = (0..600)
            .map(|i| (i * 100, 1024 + i * 5 + (i % 7) * 40))
            .collect();
        // One reading in which the driver did not list the process.
        s[300].1 = 0;
        let e = analyse(&track(&s), &[], None);
        assert_eq!(facts(&e), vec![Fact::TimelineLeak], "{e:?}");
        let v = &e.observations[0].values;
        assert_eq!(v["rate"], "2.93 GiB", "3000 MiB per minute: {v:?}");
        assert_eq!(v["span"], "60 seconds");
    }

    #[test]
    fn a_jump_after_loading_is_the_first_step_and_a_flat_run_is_nothing() {
        let mut s: Vec<(u64, u64)> = (0..30).map(|i| (i * 100, 4000)).collect();
        s.extend((30..60).map(|i| (i * 100, 20000)));
        let e = analyse(&track(&s), &[], None);
        assert_eq!(facts(&e), vec![Fact::TimelineFirstStepSpike], "{e:?}");
        assert_eq!(e.observations[0].values["before"], "3.91 GiB");
        assert_eq!(e.observations[0].values["at"], "+0:03");
        // Loading from nothing straight to the peak is the loading, not a first step.
        let load: Vec<(u64, u64)> = (0..60)
            .map(|i| (i * 100, if i < 30 { 100 } else { 20000 }))
            .collect();
        assert!(facts(&analyse(&track(&load), &[], None)).is_empty());
        let flat: Vec<(u64, u64)> = (0..60).map(|i| (i * 100, 8000 + i % 3)).collect();
        let e = analyse(&track(&flat), &[], None);
        assert!(e.observations.is_empty(), "{e:?}");
        assert_eq!(e.peak.unwrap().bytes, 8002 * MIB_U);
    }

    #[test]
    fn memory_freed_and_taken_again_is_seen_and_a_final_release_is_not() {
        let phase = |v| (0..20).map(move |_| v);
        let vals: Vec<u64> = phase(8000)
            .chain(phase(2000))
            .chain(phase(9000))
            .chain(phase(100))
            .collect();
        let s: Vec<(u64, u64)> = vals
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64 * 100, *v))
            .collect();
        let e = analyse(&track(&s), &[], None);
        let o = e
            .observations
            .iter()
            .find(|o| o.fact == Fact::TimelineFreedBetweenPhases)
            .expect("freed between phases");
        assert_eq!(
            (o.values["from"].as_str(), o.values["to"].as_str()),
            ("7.81 GiB", "1.95 GiB")
        );
    }

    #[test]
    fn the_analysis_stops_at_the_failure() {
        // The memory is flat until the failure at 3 s; a release after it is not a phase.
        let s: Vec<(u64, u64)> = (0..60)
            .map(|i| {
                (
                    i * 100,
                    if i < 40 {
                        6000
                    } else if i < 50 {
                        10
                    } else {
                        6000
                    },
                )
            })
            .collect();
        let e = analyse(&track(&s), &[], Some(3000));
        assert!(e.observations.is_empty(), "{e:?}");
        assert_eq!(clock(3_723_000), "+1:02:03");
    }
}
