//! The interface language. The English text in the code is the key: `tr("Planner")` returns the
//! text in the language chosen in the top bar, or the English itself when the table has no
//! entry, so a missing translation shows English instead of nothing. The tables are data
//! (`assets/i18n/<lang>.toml`, one `"English" = "translation"` line per string).
//!
//! The language lives in a thread-local because egui draws on one thread, and because the
//! kittest harnesses of the test suite run on many threads at once: a process-wide setting
//! would let one test's language leak into another.

use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt::Display;
use std::sync::OnceLock;

/// Languages the interface can be shown in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Lang {
    #[default]
    English,
    SimplifiedChinese,
}

impl Lang {
    pub const ALL: [Lang; 2] = [Lang::English, Lang::SimplifiedChinese];

    /// The language's own name for itself, as the language switch shows it.
    pub fn endonym(self) -> &'static str {
        match self {
            Lang::English => "English",
            Lang::SimplifiedChinese => "简体中文",
        }
    }

    /// The table for this language; English needs none.
    fn table(self) -> Option<&'static HashMap<String, String>> {
        static ZH: OnceLock<HashMap<String, String>> = OnceLock::new();
        match self {
            Lang::English => None,
            Lang::SimplifiedChinese => Some(ZH.get_or_init(|| parse(ZH_CN))),
        }
    }
}

/// The Simplified Chinese table, embedded so the binary needs no files beside it.
pub const ZH_CN: &str = include_str!("../../assets/i18n/zh-CN.toml");

/// Reads a table; a table that does not parse is a bug caught by the tests, and shows English.
pub fn parse(text: &str) -> HashMap<String, String> {
    toml::from_str(text).unwrap_or_default()
}

thread_local! {
    static CURRENT: Cell<Lang> = const { Cell::new(Lang::English) };
}

/// Sets the language for everything drawn on this thread from now on.
pub fn set_lang(lang: Lang) {
    CURRENT.with(|c| c.set(lang));
}

/// The language in use on this thread.
pub fn lang() -> Lang {
    CURRENT.with(Cell::get)
}

/// `en` in the current language.
pub fn tr(en: &'static str) -> &'static str {
    lang()
        .table()
        .and_then(|t| t.get(en))
        .map_or(en, String::as_str)
}

/// `template` in the current language with each `{name}` replaced by its value, for texts with
/// numbers or names in them: `trf("Saved {path}", &[("path", &p.display())])`. The translation
/// may move the placeholders wherever its grammar wants them.
pub fn trf(template: &'static str, args: &[(&str, &dyn Display)]) -> String {
    let mut out = tr(template).to_string();
    for (name, value) in args {
        out = out.replace(&format!("{{{name}}}"), &value.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_is_the_key_and_the_fallback() {
        set_lang(Lang::English);
        assert_eq!(tr("Planner"), "Planner");
        set_lang(Lang::SimplifiedChinese);
        assert_eq!(tr("Planner"), "规划");
        assert_eq!(tr("a text nobody translated"), "a text nobody translated");
        set_lang(Lang::English);
    }

    #[test]
    fn placeholders_are_filled_in_the_translation() {
        set_lang(Lang::English);
        assert_eq!(trf("{n} of {m}", &[("n", &1), ("m", &2)]), "1 of 2");
    }

    #[test]
    fn the_table_parses() {
        assert!(
            !parse(ZH_CN).is_empty(),
            "assets/i18n/zh-CN.toml does not parse"
        );
    }
}
