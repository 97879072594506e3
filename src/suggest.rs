//! "Did you mean …?" for preset names: edit distance with transpositions (optimal string
//! alignment, Damerau 1964), closest first. Swapped digits ("4900" for "4090") are the commonest
//! typo in GPU names, so a swap costs one edit, not two.

/// Up to `max` names within a typo's reach of `query` (distance ≤ a third of its length, at
/// least 2), closest first, or the names that contain it.
pub fn nearest<'a>(query: &str, names: impl Iterator<Item = &'a str>, max: usize) -> Vec<String> {
    let q = query.to_ascii_lowercase();
    let limit = (q.chars().count() / 3).max(2);
    let q_len = q.chars().count();
    let mut scored: Vec<(usize, &str)> = names
        // The distance is at least the difference in length: names too short or too long to
        // come within the limit are skipped uncompared, so a megabyte-long query costs nothing.
        .filter(|n| {
            let n_len = n.chars().count();
            n_len.abs_diff(q_len) <= limit || (n_len > q_len && n.contains(q.as_str()))
        })
        .map(|n| {
            let d = osa_distance(&q, n);
            let d = if n.contains(q.as_str()) && !q.is_empty() {
                d.min(limit)
            } else {
                d
            };
            (d, n)
        })
        .filter(|(d, _)| *d <= limit)
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(max)
        .map(|(_, n)| n.to_string())
        .collect()
}

fn osa_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rolling rows of the dynamic-programming table: i-2, i-1 and i.
    let mut before: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 0..a.len() {
        let mut cur = vec![i + 1; b.len() + 1];
        for j in 0..b.len() {
            let sub = prev[j] + usize::from(a[i] != b[j]);
            let mut d = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
            if i > 0 && j > 0 && a[i] == b[j - 1] && a[i - 1] == b[j] {
                d = d.min(before[j - 1] + 1);
            }
            cur[j + 1] = d;
        }
        before = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(osa_distance("kitten", "sitting"), 3);
        assert_eq!(osa_distance("", "abc"), 3);
        assert_eq!(osa_distance("rtx-4900", "rtx-4090"), 1);
        assert_eq!(osa_distance("rtx-4900", "rtx-4060"), 2);
    }

    #[test]
    fn typo_finds_the_name() {
        let names = ["rtx-4090", "rtx-3090", "a100-80gb"];
        let got = nearest("rtx-4900", names.into_iter(), 2);
        assert_eq!(got[0], "rtx-4090");
        assert!(nearest("zzzzzzzzzzzz", names.into_iter(), 2).is_empty());
    }
}
