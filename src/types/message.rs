//! A sentence the domain layers build for people, as an id and typed values rather than a
//! finished English string, so every front end can say it in its language: the command line in
//! English (`Display`, byte for byte the text it always printed), the GUI in the language chosen
//! (`ui::i18n::msg`). The templates are data: `assets/i18n/messages.en.toml` (English, which the
//! binary embeds here) and `assets/i18n/messages.zh-CN.toml`, one `id = "template"` line each,
//! with `{name}` placeholders the translation may move wherever its grammar wants them.

use crate::units::human;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

/// The English templates, embedded so the binary needs no files beside it.
pub const EN: &str = include_str!("../../assets/i18n/messages.en.toml");

/// One value of a message, typed so each language formats it its own way.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A size in bytes (`units::human`: "11.73 GiB").
    Bytes(u64),
    /// A number with this many decimals ("1.8").
    Fixed(f64, usize),
    /// A whole number ("32").
    Int(u64),
    /// A fixed English label from the UI's table (a setting, a value such as "ultra"): the GUI
    /// translates it like any label.
    Term(String),
    /// Labels like [`Arg::Term`], said one after another with this separator ("a + b"), which
    /// is itself a label (" and " reads "和" in Chinese).
    Terms(Vec<String>, &'static str),
    /// A breakdown part's label mid-sentence: lower-cased in English ("model weights"),
    /// translated from the label itself elsewhere.
    Part(String),
    /// Text shown as is in every language: a name, a path, a command line.
    Text(String),
}

impl Arg {
    /// The value as the English text shows it; `term` says a [`Arg::Term`] in the language
    /// wanted.
    pub fn render(&self, term: impl Fn(&str) -> String) -> String {
        match self {
            Arg::Bytes(b) => human(*b),
            Arg::Fixed(v, decimals) => format!("{v:.decimals$}"),
            Arg::Int(n) => n.to_string(),
            Arg::Term(t) => term(t),
            Arg::Terms(ts, sep) => ts
                .iter()
                .map(|t| term(t))
                .collect::<Vec<_>>()
                .join(&term(sep)),
            Arg::Part(p) => term(p),
            Arg::Text(s) => s.clone(),
        }
    }

    /// The value as the English text shows it.
    pub fn english(&self) -> String {
        match self {
            Arg::Part(p) => p.to_lowercase(),
            _ => self.render(str::to_string),
        }
    }
}

/// A message: which sentence (its id in the template tables) and its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub id: &'static str,
    pub args: Vec<(&'static str, Arg)>,
}

impl Message {
    pub fn new(id: &'static str) -> Self {
        Message {
            id,
            args: Vec::new(),
        }
    }

    /// Adds a value.
    pub fn with(mut self, name: &'static str, value: Arg) -> Self {
        self.args.push((name, value));
        self
    }

    pub fn bytes(self, name: &'static str, bytes: u64) -> Self {
        self.with(name, Arg::Bytes(bytes))
    }

    pub fn fixed(self, name: &'static str, value: f64, decimals: usize) -> Self {
        self.with(name, Arg::Fixed(value, decimals))
    }

    pub fn int(self, name: &'static str, value: impl Into<u64>) -> Self {
        self.with(name, Arg::Int(value.into()))
    }

    /// Adds a value shown as is in every language (a name, a node, a flag's value).
    pub fn text(self, name: &'static str, value: impl Into<String>) -> Self {
        self.with(name, Arg::Text(value.into()))
    }

    /// `template` with each `{name}` replaced by its value as `value` says it, in one pass
    /// over the template: a value is never read again, so a file name holding "{model}" stays
    /// as it is. A `{…}` that names no value is kept.
    pub fn fill(&self, template: &str, value: impl Fn(&Arg) -> String) -> String {
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let arg = after.find('}').and_then(|close| {
                let name = &after[..close];
                let (_, v) = self.args.iter().find(|(n, _)| *n == name)?;
                Some((close, v))
            });
            match arg {
                Some((close, v)) => {
                    out.push_str(&value(v));
                    rest = &after[close + 1..];
                }
                None => {
                    out.push('{');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// A sentence known only as English text (one read back from a JSON result).
    pub fn english_text(s: impl Into<String>) -> Self {
        Message::new("text").text("text", s)
    }

    /// The English template; the id itself when the table lacks it (a bug `tests/ui_i18n.rs`
    /// and this module's tests catch), so nothing is lost silently.
    pub fn english_template(&self) -> &str {
        english().get(self.id).map_or(self.id, String::as_str)
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.fill(self.english_template(), Arg::english))
    }
}

/// Sentences said one after another (a plan's "why"), each carrying the punctuation that joins
/// it to the one before ("; -ngl is set …"). Results store them as their English text, which
/// is what the JSON and the command line always showed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sentences(pub Vec<Message>);

impl Sentences {
    pub fn one(m: Message) -> Self {
        Sentences(vec![m])
    }

    pub fn push(&mut self, m: Message) {
        self.0.push(m);
    }
}

impl fmt::Display for Sentences {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|m| write!(f, "{m}"))
    }
}

/// A message is stored (JSON results, workloads) as its English text, which is what the JSON
/// and the command line always showed; read back, it is that text ([`Message::english_text`]).
impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Message::english_text(String::deserialize(d)?))
    }
}

impl Serialize for Sentences {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Sentences {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Sentences::one(Message::deserialize(d)?))
    }
}

/// A template table as it reads (`id = "template"`).
pub fn parse(text: &str) -> Result<HashMap<String, String>, String> {
    toml::from_str(text).map_err(|e| e.to_string())
}

fn english() -> &'static HashMap<String, String> {
    static TABLE: OnceLock<HashMap<String, String>> = OnceLock::new();
    // Embedded and checked by the tests: a table that does not read is a build defect, reported
    // loudly rather than shown as bare message ids.
    TABLE.get_or_init(|| {
        parse(EN).unwrap_or_else(|e| panic!("assets/i18n/messages.en.toml does not read: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_english_table_reads_and_fills() {
        let table = parse(EN).unwrap_or_else(|e| panic!("assets/i18n/messages.en.toml: {e}"));
        assert!(table.contains_key("verdict.fits"));
        let m = Message::new("verdict.fits")
            .bytes("spare", 3 << 30)
            .bytes("need", 5 << 30)
            .bytes("cap", 8 << 30);
        assert_eq!(
            m.to_string(),
            "Fits with 3.00 GiB to spare: needs 5.00 GiB of 8.00 GiB"
        );
    }

    #[test]
    fn sentences_read_back_as_their_text() {
        let mut s = Sentences::one(Message::english_text("a"));
        s.push(Message::english_text("; b"));
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, "\"a; b\"");
        let back: Sentences = serde_json::from_str(&json).unwrap();
        assert_eq!(back.to_string(), "a; b");
        let m = Message::new("verdict.short")
            .bytes("short", 1 << 30)
            .bytes("need", 9 << 30)
            .bytes("cap", 8 << 30);
        let json = serde_json::to_string(&vec![m.clone()]).unwrap();
        assert_eq!(json, format!("[\"{m}\"]"));
        let back: Vec<Message> = serde_json::from_str(&json).unwrap();
        assert_eq!(back[0].to_string(), m.to_string());
    }

    #[test]
    fn a_value_is_never_filled_again() {
        let m = Message::new("warn.workflow.vae_unknown")
            .text("file", "{planned}.safetensors")
            .text("node", "node 3 (VAELoader)")
            .text("planned", "sdxl-vae");
        assert_eq!(
            m.fill(
                "VAE '{file}' ({node}) as {planned}; {unknown}",
                Arg::english
            ),
            "VAE '{planned}.safetensors' (node 3 (VAELoader)) as sdxl-vae; {unknown}"
        );
    }

    #[test]
    fn an_unknown_id_shows_the_id() {
        assert_eq!(Message::new("no.such.id").to_string(), "no.such.id");
    }

    #[test]
    fn values_format_by_type() {
        let term = |t: &str| format!("<{t}>");
        assert_eq!(Arg::Fixed(1.8123, 1).render(term), "1.8");
        assert_eq!(Arg::Term("ultra".into()).render(term), "<ultra>");
        // The separator is a label too (" and " is "和" in Chinese).
        assert_eq!(
            Arg::Terms(vec!["a".into(), "b".into()], " and ").render(term),
            "<a>< and ><b>"
        );
        assert_eq!(Arg::Part("Model weights".into()).english(), "model weights");
        assert_eq!(Arg::Text("a b".into()).render(term), "a b");
        assert_eq!(Arg::Bytes(512).render(term), "512 B");
        assert_eq!(Arg::Int(32).render(term), "32");
    }
}
