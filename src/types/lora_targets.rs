//! `run.lora_targets`: which linear modules get LoRA adapters, written the way PEFT's
//! `LoraConfig(target_modules=...)` takes them.
//!
//! PEFT's rule (peft/tuners/tuners_utils.py `check_target_module_exists`): a *list* of names
//! matches a module whose full key equals a name or ends with `.name`; a *string* is a regular
//! expression that must match the whole key (`match_target_against_key` in peft/utils/other.py:
//! `re.fullmatch`), except `"all-linear"` (`_maybe_include_all_linear_layers`: every
//! `nn.Linear`/`Conv1D` but the output head). Which keys a model has is the model's business
//! (`memory::lora`); this type only holds what the user wrote.

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// What `run.lora_targets` names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LoraTargets {
    /// PEFT `"all-linear"`: every linear layer except the output head.
    AllLinear,
    /// Every attention projection of the model (q, k, v, o or their fused forms).
    Attention,
    /// PEFT's own default for the model type, used when `target_modules` is not given
    /// (peft/utils/constants.py `TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING`; Llama:
    /// q_proj and v_proj).
    Default,
    /// A PEFT list: module names (`q_proj`) or key suffixes (`self_attn.q_proj`).
    Names(Vec<String>),
    /// A PEFT string: a regular expression over the whole module key.
    Regex(String),
}

impl LoraTargets {
    /// The keywords, in the order the GUI offers them.
    pub const KEYWORDS: &'static [LoraTargets] = &[
        LoraTargets::AllLinear,
        LoraTargets::Attention,
        LoraTargets::Default,
    ];
    pub const FIELD: &'static str = "run.lora_targets";

    /// A list of names as PEFT takes it; each name is checked like a flag value.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Self, String> {
        if names.is_empty() {
            return Err(format!("{} is an empty list; {}", Self::FIELD, HELP));
        }
        let mut out = Vec::with_capacity(names.len());
        for n in names {
            let n = n.as_ref().trim();
            if n.is_empty() || !n.chars().all(name_char) {
                return Err(format!(
                    "{} = '{n}' is not a module name (letters, digits, '_' and '.'); {}",
                    Self::FIELD,
                    HELP
                ));
            }
            out.push(n.to_string());
        }
        Ok(LoraTargets::Names(out))
    }
}

const HELP: &str = "use all-linear, attention, default, a comma-separated list of module names (q_proj,v_proj) or a regular expression over the module names (.*\\.(q|v)_proj)";

/// What makes a spelling a regular expression rather than a list of names.
const REGEX_CHARS: &str = "\\*+?()[]{}|^$";

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

impl FromStr for LoraTargets {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        match t.to_ascii_lowercase().as_str() {
            "all-linear" | "all" => return Ok(LoraTargets::AllLinear),
            "attention" | "qkvo" => return Ok(LoraTargets::Attention),
            "default" | "qv" => return Ok(LoraTargets::Default),
            "" => return Err(format!("{} is empty; {HELP}", Self::FIELD)),
            _ => {}
        }
        // Without a regular-expression character it is a list (tools/lora_oracle.py reads the
        // flag the same way).
        if !t.chars().any(|c| REGEX_CHARS.contains(c)) {
            let names: Vec<&str> = t.split(',').collect();
            return Self::from_names(&names);
        }
        // Python's `re` and Rust's `regex` agree on what target patterns use (classes,
        // alternation, repetition); look-around and back-references are refused here.
        regex::Regex::new(&format!("^(?:{t})$")).map_err(|e| {
            format!(
                "{} = '{t}' is neither module names nor a regular expression this program reads ({}); {HELP}",
                Self::FIELD,
                e.to_string().lines().last().unwrap_or("invalid")
            )
        })?;
        Ok(LoraTargets::Regex(t.to_string()))
    }
}

impl fmt::Display for LoraTargets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoraTargets::AllLinear => f.write_str("all-linear"),
            LoraTargets::Attention => f.write_str("attention"),
            LoraTargets::Default => f.write_str("default"),
            LoraTargets::Names(n) => f.write_str(&n.join(",")),
            LoraTargets::Regex(r) => f.write_str(r),
        }
    }
}

impl Serialize for LoraTargets {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for LoraTargets {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LoraTargets;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list of module names")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LoraTargets, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LoraTargets, A::Error> {
                let mut names: Vec<String> = Vec::new();
                while let Some(n) = seq.next_element::<String>()? {
                    names.push(n);
                }
                LoraTargets::from_names(&names).map_err(de::Error::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_peft_users_write() {
        let p = |s: &str| s.parse::<LoraTargets>();
        assert_eq!(p("all-linear"), Ok(LoraTargets::AllLinear));
        assert_eq!(p("qv"), Ok(LoraTargets::Default));
        assert_eq!(
            p("q_proj, k_proj,v_proj"),
            Ok(LoraTargets::Names(vec![
                "q_proj".into(),
                "k_proj".into(),
                "v_proj".into()
            ]))
        );
        assert_eq!(p("c_attn"), Ok(LoraTargets::Names(vec!["c_attn".into()])));
        assert_eq!(
            p(r".*\.(q|v)_proj"),
            Ok(LoraTargets::Regex(r".*\.(q|v)_proj".into()))
        );
        // Look-ahead is Python-only: refused with the field named, not misread.
        let e = p(r".*(?=q)_proj").unwrap_err();
        assert!(e.contains("run.lora_targets"), "{e}");
        assert!(p("").is_err() && p("q_proj,,v_proj").is_err());
    }

    #[test]
    fn a_toml_list_is_a_peft_list_and_round_trips() {
        #[derive(Deserialize, Serialize)]
        struct R {
            t: LoraTargets,
        }
        let r: R = toml::from_str("t = [\"query_key_value\", \"dense\"]").unwrap();
        assert_eq!(
            r.t,
            LoraTargets::Names(vec!["query_key_value".into(), "dense".into()])
        );
        let back: R = toml::from_str(&toml::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.t, r.t);
        assert!(toml::from_str::<R>("t = []").is_err());
    }
}
