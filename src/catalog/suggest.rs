//! "Did you mean …?" for preset names: Levenshtein distance, closest first.

/// Up to `max` names within a typo's reach of `query` (distance ≤ a third of its length, at
/// least 2), closest first, or the names that contain it.
pub fn nearest<'a>(query: &str, names: impl Iterator<Item = &'a str>, max: usize) -> Vec<String> {
    let q = query.to_ascii_lowercase();
    let limit = (q.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = names
        .map(|n| {
            let d = levenshtein(&q, n);
            let d = if n.contains(q.as_str()) && !q.is_empty() { d.min(limit) } else { d };
            (d, n)
        })
        .filter(|(d, _)| *d <= limit)
        .collect();
    scored.sort();
    scored.into_iter().take(max).map(|(_, n)| n.to_string()).collect()
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "abc"), 3);
    }

    #[test]
    fn typo_finds_the_name() {
        let names = ["rtx-4090", "rtx-3090", "a100-80gb"];
        let got = nearest("rtx-4900", names.into_iter(), 2);
        assert_eq!(got[0], "rtx-4090");
        assert!(nearest("zzzzzzzzzzzz", names.into_iter(), 2).is_empty());
    }
}
