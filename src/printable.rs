//! Text that came from a file (a model's `general.name`, a config's `model_type`, a GPU name
//! in a recording, a preset name), made safe to print: control characters are escaped, so a
//! name cannot forge a line of output (a newline followed by `FITS: …`) or send terminal escape
//! sequences (ESC, BEL). Every place that prints such text goes through [`printable`].

use std::borrow::Cow;

/// Characters that change what a terminal shows rather than showing themselves: the C0 and C1
/// control characters and DEL (Unicode category Cc), and the bidirectional overrides and
/// isolates that reorder what follows them (Unicode UAX #9; the "Trojan Source" characters,
/// CVE-2021-42574).
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every unsafe character written as its Rust escape (`\n`, `\u{1b}`, `\u{7}`); text
/// without one is returned as it is, unallocated.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`printable`] cut to `max` characters (an ellipsis marks the cut): for echoing a name the
/// user or a file gave, which may be a megabyte long.
pub fn printable_cut(s: &str, max: usize) -> String {
    let mut cut: String = s.chars().take(max).collect();
    if cut.len() < s.len() {
        cut.push('…');
    }
    printable(&cut).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_plain_text_is_kept() {
        assert!(matches!(printable("Llama 3.1 8B — ünï"), Cow::Borrowed(_)));
        assert_eq!(printable("x\nFITS: 1 GiB free"), "x\\nFITS: 1 GiB free");
        assert_eq!(printable("a\u{1b}[2Jb\u{7}"), "a\\u{1b}[2Jb\\u{7}");
        assert_eq!(printable("r\rt\t\u{85}\u{7f}"), "r\\rt\\t\\u{85}\\u{7f}");
        assert_eq!(printable("ab\u{202E}cd"), "ab\\u{202e}cd");
        let p = printable("\u{0}\u{1f}\u{9f}");
        assert!(!p.chars().any(is_unsafe), "{p}");
    }

    #[test]
    fn long_names_are_cut() {
        let long = "é".repeat(1 << 20);
        let c = printable_cut(&long, 80);
        assert_eq!(c.chars().count(), 81);
        assert!(c.ends_with('…'));
        assert_eq!(printable_cut("a\nb", 80), "a\\nb");
    }
}
