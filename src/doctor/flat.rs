//! Pasted text as the reader matches it: every run of whitespace (line breaks from a narrow
//! terminal or a wrapped log, tabs, doubled spaces) becomes one space, and optionally the text is
//! lowercased. Each byte remembers where it came from, so a match can be shown on its original
//! line.

/// A flattened copy of a text and, for each of its bytes, the byte offset in the original.
#[derive(Debug, Clone, Default)]
pub struct Flat {
    pub text: String,
    origin: Vec<usize>,
}

impl Flat {
    /// Whitespace runs collapsed to one space, leading and trailing whitespace dropped;
    /// lowercased when `lower`.
    pub fn new(original: &str, lower: bool) -> Flat {
        let mut f = Flat::default();
        let mut pending_space: Option<usize> = None;
        for (at, c) in original.char_indices() {
            if c.is_whitespace() {
                pending_space.get_or_insert(at);
                continue;
            }
            if let Some(sp) = pending_space.take()
                && !f.text.is_empty()
            {
                f.push(' ', sp);
            }
            if lower {
                for l in c.to_lowercase() {
                    f.push(l, at);
                }
            } else {
                f.push(c, at);
            }
        }
        f
    }

    fn push(&mut self, c: char, origin: usize) {
        for _ in 0..c.len_utf8() {
            self.origin.push(origin);
        }
        self.text.push(c);
    }

    /// The original byte offset of flattened byte `at` (the end of the original past the end).
    pub fn origin(&self, at: usize) -> Option<usize> {
        self.origin.get(at).copied()
    }
}

/// A pattern as the matcher compares it: lowercased and flattened like the text.
pub fn pattern(p: &str) -> String {
    Flat::new(p, true).text
}

/// Whether `word` occurs in `lower` with no letter or digit glued to either end of it
/// (`mps` in "MPS backend", not in "jumps"). Ends of `word` that are not alphanumeric
/// (`vk_`, `hip error`) need no boundary there.
pub fn contains_word(lower: &str, word: &str) -> bool {
    let alnum = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let needs_start = alnum(word.chars().next());
    let needs_end = alnum(word.chars().next_back());
    let mut from = 0;
    while let Some(i) = lower[from..].find(word) {
        let at = from + i;
        let end = at + word.len();
        let before_ok = !needs_start || !alnum(lower[..at].chars().next_back());
        let after_ok = !needs_end || !alnum(lower[end..].chars().next());
        if before_ok && after_ok {
            return true;
        }
        from = at + lower[at..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_runs_collapse_and_map_back() {
        let original = "CUDA out of\n   memory. Tried\tto allocate";
        let f = Flat::new(original, true);
        assert_eq!(f.text, "cuda out of memory. tried to allocate");
        let at = f.text.find("memory").unwrap();
        assert_eq!(&original[f.origin(at).unwrap()..][..6], "memory");
        assert_eq!(Flat::new("  \n a \n", false).text, "a");
    }

    #[test]
    fn non_ascii_keeps_offsets() {
        let original = "显存 不足: CUDA Error";
        let f = Flat::new(original, true);
        let at = f.text.find("cuda").unwrap();
        assert_eq!(&original[f.origin(at).unwrap()..][..4], "CUDA");
    }

    #[test]
    fn words_need_boundaries() {
        assert!(contains_word("mps backend out of memory", "mps"));
        assert!(!contains_word("it jumps", "mps"));
        assert!(contains_word("result:vk_error_out", "vk_"));
        assert!(!contains_word("gpus are", "gpu"));
        assert!(contains_word("gpu 0", "gpu"));
        assert!(contains_word("é gpu", "gpu"));
    }
}
