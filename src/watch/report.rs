//! `--report DIR`: the run's Markdown report and its plot (the recording is written into the
//! same directory while the run goes, see [`prepare`]). Files are written atomically.

use super::evidence::clock;
use super::plot;
use super::timeline::Basis;
use super::{Outcome, Verdict, WatchError};
use crate::atomic_write::{write_atomic, write_atomic_bytes};
use crate::doctor::Knowledge;
use crate::doctor::diagnosis::evidence_line;
use crate::units::human;
use std::path::{Path, PathBuf};

pub const RECORDING: &str = "recording.jsonl";
pub const MARKDOWN: &str = "report.md";
pub const PLOT: &str = "memory.png";

/// Makes `dir` (and its parents) and returns the recording's path in it. A directory that
/// already holds a recording is refused: appending a second run to it would mix two runs.
pub fn prepare(dir: &Path) -> Result<PathBuf, WatchError> {
    std::fs::create_dir_all(dir).map_err(|source| WatchError::Io {
        what: format!("--report {}", dir.display()),
        source,
    })?;
    let rec = dir.join(RECORDING);
    if rec.exists() {
        return Err(WatchError::Refused(format!(
            "--report {}: it already holds a report ({RECORDING}); choose a new or empty directory",
            dir.display()
        )));
    }
    Ok(rec)
}

/// The run's summary lines: the exit, the peak, the failure line and the notes (the
/// timeline's facts are listed with the diagnosis's evidence).
pub fn summary(o: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    let exit = match o.exit.signal {
        Some(s) => format!("killed by signal {s} (exit status {})", o.exit.code),
        None => format!("exit status {}", o.exit.code),
    };
    out.push(format!(
        "`{}`: {exit} after {}; GPU readings from {}.",
        o.command,
        clock(o.duration_ms).trim_start_matches('+'),
        o.source.label()
    ));
    if let Some(p) = &o.evidence.peak {
        let whose = match p.basis {
            Basis::Processes => "the run's processes held",
            Basis::WholeCard => "the whole card held (no per-process figures)",
        };
        let of = p
            .total_bytes
            .map(|t| format!(" of {}", human(t)))
            .unwrap_or_default();
        out.push(format!(
            "Peak: {whose} {}{of} on GPU {} ({}) at {}; the card held {} then.",
            human(p.bytes),
            p.gpu_index,
            p.gpu_name,
            clock(p.t_ms),
            human(p.card_bytes)
        ));
    }
    if let Some(i) = &o.incident {
        out.push(format!("Failure at {}: {}", clock(i.t_ms), i.line.trim()));
    }
    out.extend(o.evidence.notes.iter().cloned());
    out.extend(o.notes.iter().cloned());
    out
}

/// Writes the Markdown report and the plot into `dir` (made by [`prepare`]).
pub fn write(
    dir: &Path,
    o: &Outcome,
    verdict: Option<&Verdict>,
    kb: &Knowledge,
    lang: &str,
) -> Result<(), WatchError> {
    let png = plot::render(&o.timeline, o.incident.as_ref().map(|i| i.t_ms)).encode();
    write_atomic_bytes(&dir.join(PLOT), &png)?;
    Ok(write_atomic(
        &dir.join(MARKDOWN),
        &markdown(o, verdict, kb, lang),
    )?)
}

fn markdown(o: &Outcome, verdict: Option<&Verdict>, kb: &Knowledge, lang: &str) -> String {
    let mut s = format!("# vram-doctor run: `{}`\n\n", o.command);
    for l in summary(o) {
        s += &format!("- {l}\n");
    }
    if !o.evidence.observations.is_empty() {
        s += "\n## What the timeline shows\n\n";
        for ob in &o.evidence.observations {
            s += &format!("- {}\n", evidence_line(kb, ob, lang));
        }
    }
    s += &format!(
        "\n## Memory over time\n\n![memory over time]({PLOT})\n\nBlue: what the run held; grey: the whole card; dashed red: the card's capacity; red line: the failure. Every reading is in [{RECORDING}]({RECORDING}) (`vram-doctor monitor --replay {RECORDING}` plays it back).\n"
    );
    if let Some(v) = verdict {
        s += "\n## Diagnosis\n\n";
        if let Some(t) = &v.result {
            s += &format!("{t}\n");
        }
        let d = &v.diagnosis;
        if !d.causes.is_empty() {
            s += "\n### Likely causes\n\n";
            for (i, c) in d.causes.iter().enumerate() {
                s += &format!("{}. **{}** — {}\n", i + 1, c.title, c.why);
                for e in &c.evidence {
                    s += &format!("   - seen: {e}\n");
                }
            }
        }
        if !d.fixes.is_empty() {
            s += "\n### Fixes, cheapest first\n\n";
            for f in &d.fixes {
                let copy = f
                    .copy
                    .as_ref()
                    .map(|c| format!(" `{c}`"))
                    .unwrap_or_default();
                s += &format!("- {}{copy}\n", f.text);
            }
        }
    }
    s
}
