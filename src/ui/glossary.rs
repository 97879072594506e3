//! What the planner's words mean, for the tooltips on its controls, on the choices in their
//! lists and on the parts of the memory bar (issue 22: a newcomer meets "ZeRO stage", "LoRA
//! targets", "bf16-mixed" and "KV cache" with nothing to say what they are).
//!
//! The explanations are data (`assets/glossary/terms.toml`, one entry per term in each of the
//! app's languages); this module reads them and answers in the current language. Controls are
//! found by the label they show, which is already translated when a widget gets it, so the
//! lookup goes through the same translation table (`i18n::tr_in`).

use super::i18n::{self, Lang};
use crate::memory::ComponentId;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The glossary as shipped, embedded like the translation tables.
pub const TERMS: &str = include_str!("../../assets/glossary/terms.toml");

/// One explanation in each language.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Text {
    pub en: String,
    pub zh: String,
}

impl Text {
    fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::English => &self.en,
            Lang::SimplifiedChinese => &self.zh,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Control {
    /// English labels, as passed to `tr`.
    pub labels: Vec<String>,
    /// Its choices are plain words or names, explained by the control's own text.
    #[serde(default)]
    pub plain_choices: bool,
    #[serde(flatten)]
    pub text: Text,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    /// The English labels of the controls that offer these choices.
    pub controls: Vec<String>,
    /// The choices as the workload file spells them.
    pub values: Vec<String>,
    #[serde(flatten)]
    pub text: Text,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// Component ids (`kv_cache` …; an unknown one fails the glossary's parse).
    #[serde(default)]
    pub ids: Vec<ComponentId>,
    /// English labels of parts whose id another kind of part shares.
    #[serde(default)]
    pub labels: Vec<String>,
    #[serde(flatten)]
    pub text: Text,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Glossary {
    #[serde(default)]
    pub control: Vec<Control>,
    #[serde(default)]
    pub choice: Vec<Choice>,
    #[serde(default)]
    pub part: Vec<Part>,
}

impl Glossary {
    pub fn parse(text: &str) -> Result<Glossary, String> {
        toml::from_str(text).map_err(|e| format!("assets/glossary/terms.toml: {e}"))
    }

    /// The shipped glossary. It is embedded and tests/ui_glossary.rs reads it, so one that does
    /// not read is a build defect, reported loudly rather than shown as an app without tooltips.
    pub fn get() -> &'static Glossary {
        static G: OnceLock<Glossary> = OnceLock::new();
        G.get_or_init(|| Glossary::parse(TERMS).unwrap_or_else(|e| panic!("{e}")))
    }

    /// The entry of the control labelled `en` (English).
    pub fn control_entry(&self, en: &str) -> Option<&Control> {
        self.control
            .iter()
            .find(|c| c.labels.iter().any(|l| l == en))
    }

    /// The entry of choice `value` of the control labelled `control_en` (English).
    pub fn choice_entry(&self, control_en: &str, value: &str) -> Option<&Choice> {
        self.choice.iter().find(|c| {
            c.controls.iter().any(|l| l == control_en) && c.values.iter().any(|v| v == value)
        })
    }

    /// The entry of a memory part: by its English label first, then by its id.
    pub fn part_entry(&self, id: ComponentId, label_en: &str) -> Option<&Part> {
        let by = |f: &dyn Fn(&Part) -> bool| self.part.iter().find(|p| f(p));
        by(&|p| p.labels.iter().any(|l| l == label_en)).or_else(|| by(&|p| p.ids.contains(&id)))
    }
}

/// Shown label (in `lang`) → English label, for every control of the glossary.
fn shown_to_english(lang: Lang) -> &'static HashMap<String, String> {
    static MAPS: [OnceLock<HashMap<String, String>>; 2] = [OnceLock::new(), OnceLock::new()];
    let slot = &MAPS[usize::from(lang == Lang::SimplifiedChinese)];
    slot.get_or_init(|| {
        Glossary::get()
            .control
            .iter()
            .flat_map(|c| &c.labels)
            .map(|en| (i18n::tr_in(lang, en).to_string(), en.clone()))
            .collect()
    })
}

/// The English label of the control that shows `shown` in the current language.
fn english(shown: &str) -> Option<&'static str> {
    shown_to_english(i18n::lang())
        .get(shown)
        .map(String::as_str)
}

/// What the control showing the label `shown` (translated) is for, in the current language.
pub fn control(shown: &str) -> Option<&'static str> {
    let g = Glossary::get();
    Some(g.control_entry(english(shown)?)?.text.get(i18n::lang()))
}

/// What choice `value` of the control showing `shown` means, in the current language.
pub fn choice(shown: &str, value: &str) -> Option<&'static str> {
    let g = Glossary::get();
    Some(
        g.choice_entry(english(shown)?, value)?
            .text
            .get(i18n::lang()),
    )
}

/// What a memory part (`id`, English `label`) holds, in the current language.
pub fn part(id: ComponentId, label_en: &str) -> Option<&'static str> {
    Some(
        Glossary::get()
            .part_entry(id, label_en)?
            .text
            .get(i18n::lang()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_glossary_reads() {
        let g = Glossary::parse(TERMS).unwrap_or_else(|e| panic!("{e}"));
        assert!(g.control_entry("ZeRO stage").is_some());
        assert!(g.choice_entry("Precision", "bf16-mixed").is_some());
        assert!(g.part_entry(ComponentId::KvCache, "KV cache").is_some());
    }

    #[test]
    fn a_part_label_entry_wins_over_its_id() {
        let g = Glossary::parse(TERMS).unwrap();
        let buffer = g
            .part_entry(ComponentId::Activations, "Compute buffer")
            .unwrap();
        let plain = g
            .part_entry(ComponentId::Activations, "Activations")
            .unwrap();
        assert!(buffer.text.en.contains("llama.cpp"), "{}", buffer.text.en);
        assert_ne!(buffer.text.en, plain.text.en);
    }

    #[test]
    fn controls_are_found_by_their_label_in_either_language() {
        i18n::set_lang(Lang::SimplifiedChinese);
        let zh = control(i18n::tr("Batch size"));
        i18n::set_lang(Lang::English);
        let en = control("Batch size");
        assert!(en.is_some_and(|t| t.contains("at once")), "{en:?}");
        assert!(zh.is_some_and(|t| t.contains("一次处理")), "{zh:?}");
        assert_eq!(control("a label nobody explained"), None);
    }
}
