//! Translatable text as the knowledge files hold it: one string per language code
//! (`{ en = "…", de = "…" }`), and `{name}` placeholders filled from figures.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The language every text must have and every lookup falls back to.
pub const FALLBACK: &str = "en";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Text(pub BTreeMap<String, String>);

impl Text {
    /// The text in `lang`, else in English (validation guarantees English exists).
    pub fn get(&self, lang: &str) -> &str {
        self.0
            .get(lang)
            .or_else(|| self.0.get(FALLBACK))
            .map_or("", String::as_str)
    }

    /// Shipped languages this text lacks (or has empty).
    pub fn missing<'a>(&self, langs: &'a [String]) -> Vec<&'a str> {
        langs
            .iter()
            .filter(|l| self.0.get(*l).is_none_or(|t| t.trim().is_empty()))
            .map(String::as_str)
            .collect()
    }
}

/// The `{name}` placeholders in a template, in order.
pub fn placeholders(template: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        out.push(&rest[open + 1..open + close]);
        rest = &rest[open + close + 1..];
    }
    out
}

/// Fills every `{name}` from `values`; `None` when one is missing, so a line with a hole is
/// never shown.
pub fn fill(template: &str, values: &BTreeMap<String, String>) -> Option<String> {
    let mut out = template.to_string();
    for name in placeholders(template) {
        let value = values.get(name)?;
        out = out.replace(&format!("{{{name}}}"), value);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_and_missing() {
        let t = Text(BTreeMap::from([("en".to_string(), "Hello".to_string())]));
        assert_eq!(t.get("de"), "Hello");
        let langs = vec!["en".to_string(), "de".to_string()];
        assert_eq!(t.missing(&langs), vec!["de"]);
    }

    #[test]
    fn fill_needs_every_placeholder() {
        let v = BTreeMap::from([("free".to_string(), "2 GiB".to_string())]);
        assert_eq!(fill("{free} free", &v).as_deref(), Some("2 GiB free"));
        assert_eq!(fill("{free} of {total}", &v), None);
        assert_eq!(placeholders("a {x} b {y}"), vec!["x", "y"]);
    }
}
