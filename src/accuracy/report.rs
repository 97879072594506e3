//! Relative-error statistics of the accuracy benchmark.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The groups the goals are stated for: every engine of a workload family together.
pub const GROUPS: [(&str, &str); 3] = [
    ("ALL LLM inference", "llm_inference"),
    ("ALL LLM training", "llm_training"),
    ("ALL diffusion", "diffusion"),
];

#[derive(Debug, Clone, Serialize)]
pub struct RowResult {
    pub id: String,
    pub kind: String,
    pub figure: String,
    pub measured_gib: f64,
    pub estimated_gib: f64,
}

impl RowResult {
    /// |estimate − measured| / measured.
    pub fn rel_error(&self) -> f64 {
        ((self.estimated_gib - self.measured_gib) / self.measured_gib).abs()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub id: String,
    pub kind: String,
    pub why: String,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct KindStats {
    pub rows: usize,
    pub median: f64,
    pub p90: f64,
}

impl KindStats {
    /// Median and p90 of relative errors; `None` for no values.
    pub fn of(mut errors: Vec<f64>) -> Option<Self> {
        if errors.is_empty() {
            return None;
        }
        errors.sort_by(f64::total_cmp);
        Some(KindStats {
            rows: errors.len(),
            median: percentile(&errors, 0.5),
            p90: percentile(&errors, 0.9),
        })
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub rows: Vec<RowResult>,
    pub skipped: Vec<Skipped>,
}

/// The nearest-rank percentile of sorted values (p in 0..=1).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

impl Report {
    pub fn add(&mut self, r: RowResult) {
        self.rows.push(r);
    }

    pub fn skip(&mut self, id: String, kind: &str, why: String) {
        self.skipped.push(Skipped {
            id,
            kind: kind.to_string(),
            why,
        });
    }

    /// Median and p90 relative error per workload kind.
    pub fn by_kind(&self) -> BTreeMap<String, KindStats> {
        let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for r in &self.rows {
            groups
                .entry(r.kind.clone())
                .or_default()
                .push(r.rel_error());
        }
        groups
            .into_iter()
            .filter_map(|(k, v)| KindStats::of(v).map(|s| (k, s)))
            .collect()
    }

    /// Stats over several kinds together (e.g. all LLM inference kinds).
    pub fn stats_where(&self, pred: impl Fn(&str) -> bool) -> Option<KindStats> {
        KindStats::of(
            self.rows
                .iter()
                .filter(|r| pred(&r.kind))
                .map(RowResult::rel_error)
                .collect(),
        )
    }

    /// The printed report: per-row table, per-kind summary, skipped rows.
    pub fn render(&self, verbose: bool) -> String {
        let mut s = String::new();
        if verbose {
            let _ = writeln!(
                s,
                "{:<7} {:<22} {:<26} {:>9} {:>9} {:>7}",
                "ROW", "KIND", "FIGURE", "MEASURED", "ESTIMATE", "ERROR"
            );
            for r in &self.rows {
                let _ = writeln!(
                    s,
                    "{:<7} {:<22} {:<26} {:>7.2}Gi {:>7.2}Gi {:>6.1}%",
                    r.id,
                    r.kind,
                    r.figure,
                    r.measured_gib,
                    r.estimated_gib,
                    100.0 * (r.estimated_gib - r.measured_gib) / r.measured_gib
                );
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(
            s,
            "{:<24} {:>5} {:>9} {:>9}",
            "WORKLOAD KIND", "ROWS", "MEDIAN", "P90"
        );
        for (k, st) in self.by_kind() {
            let _ = writeln!(
                s,
                "{:<24} {:>5} {:>8.1}% {:>8.1}%",
                k,
                st.rows,
                100.0 * st.median,
                100.0 * st.p90
            );
        }
        let _ = writeln!(s);
        for (name, prefix) in GROUPS {
            if let Some(st) = self.stats_where(|k| k.starts_with(prefix)) {
                let _ = writeln!(
                    s,
                    "{:<24} {:>5} {:>8.1}% {:>8.1}%",
                    name,
                    st.rows,
                    100.0 * st.median,
                    100.0 * st.p90
                );
            }
        }
        let _ = writeln!(s, "\nskipped {} rows:", self.skipped.len());
        for k in &self.skipped {
            let _ = writeln!(s, "  {:<7} {:<22} {}", k.id, k.kind, k.why);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10];
        assert_eq!(percentile(&v, 0.5), 0.05);
        assert_eq!(percentile(&v, 0.9), 0.09);
        assert_eq!(percentile(&[0.3], 0.9), 0.3);
        assert!(percentile(&[], 0.5).is_nan());
    }
}
