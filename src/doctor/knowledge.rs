//! The doctor's knowledge, loaded from `assets/doctor/` (embedded at build time) and checked on
//! load: facts' labels, message signatures, causes and fixes, and the wizard trees.
//!
//! The trees form one graph over all files (node ids are global, so a tree can hand over to
//! another); the checks here are the guarantees the wizard relies on: every option leads to a
//! node, no cycles, every node reachable from the root, every leaf names causes that exist and
//! every cause has a fix, nothing orphaned, and every text in every shipped language.

use super::DoctorError;
use super::evidence::Fact;
use super::text::{Text, placeholders};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// What a fix costs the user, cheapest first (issue 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cost {
    /// Close a program, set a flag or an environment variable.
    Free,
    /// Change code or configuration.
    Code,
    /// Trade quality: lower precision, resolution, context.
    Quality,
    /// Buy or borrow hardware.
    Hardware,
}

/// A kind of workload, as the planner's `run.task` names it: what a fix is written for and what
/// a message can come from (issue 22: a diffusers-only fix was offered for an LLM fine-tune).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Inference,
    Training,
    Diffusion,
    Game,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Inference, Kind::Training, Kind::Diffusion, Kind::Game];
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactInfo {
    /// Short name, shown when a wizard step answered itself from this fact.
    pub label: Text,
    /// What the evidence shows, with `{figure}` placeholders (omitted when no figures).
    pub says: Option<Text>,
    /// Workload fields this fact implies (`run.engine = "vllm"`), for the planner links.
    #[serde(default)]
    pub planner: BTreeMap<String, String>,
    /// Seeing this fact in a program's output means the program failed (an out-of-memory or
    /// GPU error), rather than context such as an engine's banner or a recovered warning.
    #[serde(default)]
    pub failure: bool,
    /// Seeing this fact means the program reported a fallback, a retry or its status and goes
    /// on: a line with it is no failure even where it says "failed" (`error_words`).
    #[serde(default)]
    pub carries_on: bool,
    /// The kinds of workload a message with this fact can come from (ComfyUI: diffusion;
    /// transformers: inference or training); empty = any. The message's kind is what all its
    /// facts agree on.
    #[serde(default)]
    pub kinds: Vec<Kind>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    pub id: String,
    /// Case-insensitive substrings; one of them must occur.
    pub any: Vec<String>,
    /// …and none of these.
    #[serde(default)]
    pub unless: Vec<String>,
    pub facts: Vec<Fact>,
    pub label: Text,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cause {
    pub id: String,
    pub title: Text,
    /// Why this cause produces the symptom (general); evidence lines add the specific why.
    pub why: Text,
    /// Facts that support this cause; when present, it ranks first and shows them.
    #[serde(default)]
    pub signs: Vec<Fact>,
    /// Programs (engine facts) whose messages the signs count for; empty = any program. A cause
    /// about llama.cpp's buffers is not supported by a PyTorch "CUDA error: out of memory".
    #[serde(default)]
    pub engines: Vec<Fact>,
    pub fixes: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fix {
    pub cost: Cost,
    pub text: Text,
    /// The exact command, flag, environment variable or code line to copy.
    pub copy: Option<String>,
    /// Workload fields (`run.weights = "nf4"`) to open the planner with.
    #[serde(default)]
    pub planner: BTreeMap<String, String>,
    /// Programs (engine facts) this fix is written for: shown only when one of them printed
    /// the message (issue 16: an ollama variable is no fix for a ComfyUI error).
    #[serde(default)]
    pub engines: Vec<Fact>,
    /// Hidden when any of these facts is seen: the generic form of a fix whose program-specific
    /// form is shown instead.
    #[serde(default)]
    pub not_with: Vec<Fact>,
    /// Facts under which this fix cannot help (expandable_segments when even free plus
    /// trapped memory is below the request): it is listed after every fix that can.
    #[serde(default)]
    pub useless_when: Vec<Fact>,
    /// The kinds of workload this fix can help (gradient checkpointing: training; tiled VAE
    /// decode: diffusion); empty = any. For a message of another kind it is listed under
    /// "Cannot help here" with `not_for_kind`.
    #[serde(default)]
    pub kinds: Vec<Kind>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    pub text: Text,
    pub next: String,
    /// Facts that answer this option by themselves (any one suffices).
    #[serde(default)]
    pub auto: Vec<Fact>,
}

/// A question (with options) or a leaf (with causes, most likely first).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    pub id: String,
    pub text: Text,
    #[serde(default)]
    pub options: Vec<Choice>,
    #[serde(default)]
    pub causes: Vec<String>,
}

impl Node {
    pub fn is_leaf(&self) -> bool {
        self.options.is_empty()
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct TreeFile {
    id: String,
    title: Text,
    entry: String,
    #[serde(default)]
    node: Vec<Node>,
}

/// A tree's entry point, for menus ("start at the games tree").
#[derive(Debug, Clone)]
pub struct Tree {
    pub id: String,
    pub title: Text,
    pub entry: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LanguagesFile {
    languages: Vec<String>,
}
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FactsFile {
    fact: BTreeMap<Fact, FactInfo>,
}
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignaturesFile {
    /// Words that make a text GPU-related when no signature matched (whole words).
    gpu_words: Vec<String>,
    /// …and that make such a text an out-of-memory report.
    memory_words: Vec<String>,
    /// Words that make a GPU-related line an error the program raised (whole words).
    error_words: Vec<String>,
    signature: Vec<Signature>,
}
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CausesFile {
    /// Why a fix is under "Cannot help here" for a message of another kind: `{fix_kinds}` (what
    /// the fix is for) and `{kinds}` (what the message is about).
    not_for_kind: Text,
    /// Each kind's name in the reasons.
    kind: BTreeMap<Kind, KindName>,
    cause: Vec<Cause>,
    fix: BTreeMap<String, Fix>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct KindName {
    name: Text,
}

/// The knowledge files' text, by file name (so tests can feed broken variants).
#[derive(Debug, Clone)]
pub struct Sources<'a> {
    pub languages: &'a str,
    pub facts: &'a str,
    pub signatures: &'a str,
    pub causes: &'a str,
    /// (file name, content); the tree with id `start` holds the root.
    pub trees: Vec<(&'a str, &'a str)>,
}

impl Sources<'static> {
    pub fn embedded() -> Sources<'static> {
        Sources {
            languages: include_str!("../../assets/doctor/languages.toml"),
            facts: include_str!("../../assets/doctor/facts.toml"),
            signatures: include_str!("../../assets/doctor/signatures.toml"),
            causes: include_str!("../../assets/doctor/causes.toml"),
            trees: vec![
                (
                    "start.toml",
                    include_str!("../../assets/doctor/trees/start.toml"),
                ),
                (
                    "oom.toml",
                    include_str!("../../assets/doctor/trees/oom.toml"),
                ),
                (
                    "llm.toml",
                    include_str!("../../assets/doctor/trees/llm.toml"),
                ),
                (
                    "comfyui.toml",
                    include_str!("../../assets/doctor/trees/comfyui.toml"),
                ),
                (
                    "games.toml",
                    include_str!("../../assets/doctor/trees/games.toml"),
                ),
                (
                    "shared_memory.toml",
                    include_str!("../../assets/doctor/trees/shared_memory.toml"),
                ),
                (
                    "gpu_faults.toml",
                    include_str!("../../assets/doctor/trees/gpu_faults.toml"),
                ),
            ],
        }
    }
}

/// Planner links may only name workload fields (the sections of the workload file, DESIGN.md).
fn check_planner_fields(what: &str, fields: &BTreeMap<String, String>) -> Result<(), String> {
    match fields
        .keys()
        .find(|k| !["gpu.", "model.", "run."].iter().any(|p| k.starts_with(p)))
    {
        Some(k) => Err(format!(
            "{what}: planner field '{k}' is not a workload field (gpu.*, model.*, run.*)"
        )),
        None => Ok(()),
    }
}

/// The tree whose entry is the wizard's root.
pub const ROOT_TREE: &str = "start";

#[derive(Debug)]
pub struct Knowledge {
    pub languages: Vec<String>,
    pub facts: BTreeMap<Fact, FactInfo>,
    pub signatures: Vec<Signature>,
    /// See `SignaturesFile`; lowercase.
    pub gpu_words: Vec<String>,
    pub memory_words: Vec<String>,
    pub error_words: Vec<String>,
    pub causes: BTreeMap<String, Cause>,
    /// Cause ids in file order: the order of preference among equally supported causes.
    pub cause_order: Vec<String>,
    pub fixes: BTreeMap<String, Fix>,
    /// The "written for another kind" reason and each kind's name (causes.toml).
    pub not_for_kind: Text,
    pub kind_names: BTreeMap<Kind, Text>,
    pub trees: Vec<Tree>,
    pub nodes: BTreeMap<String, Node>,
    pub root: String,
}

static KNOWLEDGE: OnceLock<Knowledge> = OnceLock::new();

impl Knowledge {
    /// The embedded knowledge. The files are part of the build and every check below runs in
    /// the tests, so a failure here is a build defect, reported loudly rather than hidden.
    pub fn get() -> &'static Knowledge {
        KNOWLEDGE.get_or_init(|| {
            Knowledge::load(&Sources::embedded())
                .unwrap_or_else(|e| panic!("assets/doctor is invalid (checked by tests): {e}"))
        })
    }

    /// Checks a `--lang` value against the shipped languages (`diagnose` and `run` both take it).
    pub fn check_lang(&self, lang: &str) -> Result<(), DoctorError> {
        if self.languages.iter().any(|l| l == lang) {
            return Ok(());
        }
        Err(DoctorError::UnknownLanguage {
            lang: lang.to_string(),
            shipped: self.languages.clone(),
        })
    }

    /// Parses and checks; the error names the file and what is wrong.
    pub fn load(src: &Sources) -> Result<Knowledge, String> {
        let parse_err = |file: &str, e: toml::de::Error| format!("assets/doctor/{file}: {e}");
        let langs: LanguagesFile =
            toml::from_str(src.languages).map_err(|e| parse_err("languages.toml", e))?;
        let facts: FactsFile = toml::from_str(src.facts).map_err(|e| parse_err("facts.toml", e))?;
        let sigs: SignaturesFile =
            toml::from_str(src.signatures).map_err(|e| parse_err("signatures.toml", e))?;
        let causes: CausesFile =
            toml::from_str(src.causes).map_err(|e| parse_err("causes.toml", e))?;
        let mut trees = Vec::new();
        let mut nodes = BTreeMap::new();
        for (file, text) in &src.trees {
            let t: TreeFile =
                toml::from_str(text).map_err(|e| parse_err(&format!("trees/{file}"), e))?;
            for n in t.node {
                let id = n.id.clone();
                if nodes.insert(id.clone(), n).is_some() {
                    return Err(format!("trees/{file}: node id '{id}' is defined twice"));
                }
            }
            trees.push(Tree {
                id: t.id,
                title: t.title,
                entry: t.entry,
            });
        }
        let root = trees
            .iter()
            .find(|t| t.id == ROOT_TREE)
            .map(|t| t.entry.clone())
            .ok_or_else(|| format!("trees: no tree with id '{ROOT_TREE}' (the wizard's root)"))?;
        let cause_order: Vec<String> = causes.cause.iter().map(|c| c.id.clone()).collect();
        let mut cause_map = BTreeMap::new();
        for c in causes.cause {
            let id = c.id.clone();
            if cause_map.insert(id.clone(), c).is_some() {
                return Err(format!("causes.toml: cause '{id}' is defined twice"));
            }
        }
        let k = Knowledge {
            languages: langs.languages,
            facts: facts.fact,
            signatures: sigs.signature,
            gpu_words: sigs.gpu_words.iter().map(|w| w.to_lowercase()).collect(),
            memory_words: sigs.memory_words.iter().map(|w| w.to_lowercase()).collect(),
            error_words: sigs.error_words.iter().map(|w| w.to_lowercase()).collect(),
            causes: cause_map,
            cause_order,
            fixes: causes.fix,
            not_for_kind: causes.not_for_kind,
            kind_names: causes.kind.into_iter().map(|(k, n)| (k, n.name)).collect(),
            trees,
            nodes,
            root,
        };
        k.check()?;
        Ok(k)
    }

    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.get(id)
    }

    pub fn tree(&self, id: &str) -> Option<&Tree> {
        self.trees.iter().find(|t| t.id == id)
    }

    fn check(&self) -> Result<(), String> {
        if !self.languages.iter().any(|l| l == super::text::FALLBACK) {
            return Err(format!(
                "languages.toml: must include '{}'",
                super::text::FALLBACK
            ));
        }
        for f in Fact::ALL {
            if !self.facts.contains_key(f) {
                return Err(format!("facts.toml: fact '{}' has no entry", f.name()));
            }
        }
        if let Some((f, _)) = self.facts.iter().find(|(_, i)| i.failure && i.carries_on) {
            return Err(format!(
                "facts.toml: fact '{}' is marked both `failure` and `carries_on`",
                f.name()
            ));
        }
        self.check_signatures()?;
        self.check_causes()?;
        self.check_graph()?;
        self.check_texts()
    }

    fn check_signatures(&self) -> Result<(), String> {
        if self.gpu_words.is_empty()
            || self.memory_words.is_empty()
            || self.error_words.is_empty()
            || self
                .gpu_words
                .iter()
                .chain(&self.memory_words)
                .chain(&self.error_words)
                .any(|w| w.trim().is_empty())
        {
            return Err(
                "signatures.toml: gpu_words, memory_words and error_words need non-empty words"
                    .to_string(),
            );
        }
        let mut ids = BTreeSet::new();
        for s in &self.signatures {
            if !ids.insert(&s.id) {
                return Err(format!(
                    "signatures.toml: signature '{}' is defined twice",
                    s.id
                ));
            }
            if s.any.is_empty() || s.any.iter().chain(&s.unless).any(|p| p.trim().is_empty()) {
                return Err(format!(
                    "signatures.toml: signature '{}' needs non-empty patterns in `any`",
                    s.id
                ));
            }
            if s.facts.is_empty() {
                return Err(format!(
                    "signatures.toml: signature '{}' establishes no facts",
                    s.id
                ));
            }
        }
        Ok(())
    }

    fn check_causes(&self) -> Result<(), String> {
        let mut used_fixes = BTreeSet::new();
        for (id, c) in &self.causes {
            if c.fixes.is_empty() {
                return Err(format!("causes.toml: cause '{id}' has no fix"));
            }
            for f in &c.fixes {
                if !self.fixes.contains_key(f) {
                    return Err(format!("causes.toml: cause '{id}' names unknown fix '{f}'"));
                }
                used_fixes.insert(f.as_str());
            }
        }
        for (id, f) in &self.fixes {
            if !used_fixes.contains(id.as_str()) {
                return Err(format!("causes.toml: fix '{id}' is not used by any cause"));
            }
            check_planner_fields(&format!("causes.toml: fix '{id}'"), &f.planner)?;
            if let Some(e) = f.engines.iter().find(|e| !e.name().starts_with("engine_")) {
                return Err(format!(
                    "causes.toml: fix '{id}' names '{}' in engines, which is not an engine fact",
                    e.name()
                ));
            }
        }
        if let Some(k) = Kind::ALL.iter().find(|k| !self.kind_names.contains_key(k)) {
            return Err(format!("causes.toml: kind '{k:?}' has no [kind.…] name"));
        }
        for (fact, info) in &self.facts {
            check_planner_fields(
                &format!("facts.toml: fact '{}'", fact.name()),
                &info.planner,
            )?;
        }
        Ok(())
    }

    fn check_graph(&self) -> Result<(), String> {
        let mut used_causes = BTreeSet::new();
        for (id, n) in &self.nodes {
            match (n.options.len(), n.causes.is_empty()) {
                (0, true) => return Err(format!("node '{id}' has neither options nor causes")),
                (1.., false) => return Err(format!("node '{id}' has both options and causes")),
                (1, _) => return Err(format!("node '{id}' is a question with a single option")),
                _ => {}
            }
            for (i, o) in n.options.iter().enumerate() {
                if !self.nodes.contains_key(&o.next) {
                    return Err(format!(
                        "node '{id}' option {} leads to unknown node '{}'",
                        i + 1,
                        o.next
                    ));
                }
            }
            for c in &n.causes {
                if !self.causes.contains_key(c) {
                    return Err(format!("leaf '{id}' names unknown cause '{c}'"));
                }
                used_causes.insert(c.as_str());
            }
        }
        for t in &self.trees {
            if !self.nodes.contains_key(&t.entry) {
                return Err(format!(
                    "tree '{}' enters at unknown node '{}'",
                    t.id, t.entry
                ));
            }
        }
        if let Some(c) = self
            .causes
            .keys()
            .find(|c| !used_causes.contains(c.as_str()))
        {
            return Err(format!(
                "causes.toml: cause '{c}' is not reached by any leaf"
            ));
        }
        // Depth-first from the root: grey = on the current path (a grey successor is a cycle).
        let mut state: BTreeMap<&str, u8> = BTreeMap::new();
        let mut stack: Vec<(&str, usize)> = vec![(self.root.as_str(), 0)];
        state.insert(&self.root, 1);
        while let Some((id, next)) = stack.pop() {
            let node = &self.nodes[id];
            if let Some(o) = node.options.get(next) {
                stack.push((id, next + 1));
                match state.get(o.next.as_str()) {
                    Some(1) => {
                        let path: Vec<&str> = stack.iter().map(|(n, _)| *n).collect();
                        return Err(format!("trees: cycle {} → {}", path.join(" → "), o.next));
                    }
                    Some(_) => {}
                    None => {
                        state.insert(&o.next, 1);
                        stack.push((&o.next, 0));
                    }
                }
            } else {
                state.insert(id, 2);
            }
        }
        if let Some(id) = self
            .nodes
            .keys()
            .find(|id| !state.contains_key(id.as_str()))
        {
            return Err(format!(
                "node '{id}' is unreachable from the root '{}'",
                self.root
            ));
        }
        Ok(())
    }

    /// Every text in every shipped language; templates name the same figures in each.
    fn check_texts(&self) -> Result<(), String> {
        let mut texts: Vec<(String, &Text)> = Vec::new();
        for t in &self.trees {
            texts.push((format!("tree '{}' title", t.id), &t.title));
        }
        for (id, n) in &self.nodes {
            texts.push((format!("node '{id}'"), &n.text));
            for (i, o) in n.options.iter().enumerate() {
                texts.push((format!("node '{id}' option {}", i + 1), &o.text));
            }
        }
        for (f, i) in &self.facts {
            texts.push((format!("fact '{}' label", f.name()), &i.label));
            if let Some(s) = &i.says {
                texts.push((format!("fact '{}' says", f.name()), s));
            }
        }
        for s in &self.signatures {
            texts.push((format!("signature '{}'", s.id), &s.label));
        }
        for (id, c) in &self.causes {
            texts.push((format!("cause '{id}' title"), &c.title));
            texts.push((format!("cause '{id}' why"), &c.why));
        }
        for (id, f) in &self.fixes {
            texts.push((format!("fix '{id}'"), &f.text));
        }
        texts.push(("not_for_kind".to_string(), &self.not_for_kind));
        for (k, n) in &self.kind_names {
            texts.push((format!("kind '{k:?}' name"), n));
        }
        for (what, t) in texts {
            let missing = t.missing(&self.languages);
            if !missing.is_empty() {
                return Err(format!("{what}: no text in {}", missing.join(", ")));
            }
            if let Some(extra) = t.0.keys().find(|l| !self.languages.contains(l)) {
                return Err(format!(
                    "{what}: language '{extra}' is not in languages.toml"
                ));
            }
            let en: BTreeSet<&str> = placeholders(t.get(super::text::FALLBACK))
                .into_iter()
                .collect();
            for (lang, s) in &t.0 {
                if placeholders(s).into_iter().collect::<BTreeSet<_>>() != en {
                    return Err(format!(
                        "{what}: the {lang} text names other {{figures}} than the English one"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_knowledge_passes_every_check() {
        let k = Knowledge::load(&Sources::embedded()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(k.root, "symptom");
        assert!(k.trees.len() >= 5);
        assert!(k.nodes.values().any(Node::is_leaf));
    }

    /// The embedded sources with one file's text edited.
    fn broken(file: &str, from: &str, to: &str) -> String {
        let src = Sources::embedded();
        let mut src2 = src.clone();
        let edit = |t: &str| {
            assert!(t.contains(from), "test setup: '{from}' not in {file}");
            t.replacen(from, to, 1)
        };
        let owned: String;
        match file {
            "causes" => {
                owned = edit(src.causes);
                src2.causes = &owned;
            }
            "signatures" => {
                owned = edit(src.signatures);
                src2.signatures = &owned;
            }
            "languages" => {
                owned = edit(src.languages);
                src2.languages = &owned;
            }
            tree => {
                let i = src
                    .trees
                    .iter()
                    .position(|(n, _)| *n == tree)
                    .expect("tree file");
                owned = edit(src.trees[i].1);
                src2.trees[i].1 = &owned;
            }
        }
        Knowledge::load(&src2).expect_err("broken knowledge must be refused")
    }

    #[test]
    fn dangling_option_is_refused() {
        let e = broken(
            "games.toml",
            "next = \"game_meter\"",
            "next = \"no_such_node\"",
        );
        assert!(e.contains("unknown node 'no_such_node'"), "{e}");
    }

    #[test]
    fn cycle_is_refused() {
        let e = broken("oom.toml", "next = \"leaf_leak\"", "next = \"oom_tool\"");
        assert!(e.contains("cycle") && e.contains("oom_tool"), "{e}");
    }

    #[test]
    fn unreachable_node_is_refused() {
        let e = broken(
            "games.toml",
            "next = \"leaf_removed_oc\"",
            "next = \"leaf_removed_driver\"",
        );
        assert!(e.contains("'leaf_removed_oc' is unreachable"), "{e}");
    }

    #[test]
    fn leaf_with_unknown_cause_and_orphans_are_refused() {
        let e = broken(
            "shared_memory.toml",
            "causes = [\"pinned_memory_counted\"]",
            "causes = [\"nope\"]",
        );
        assert!(e.contains("unknown cause 'nope'"), "{e}");
        let e = broken(
            "shared_memory.toml",
            "causes = [\"pinned_memory_counted\"]",
            "causes = [\"sysmem_fallback\"]",
        );
        assert!(
            e.contains("cause 'pinned_memory_counted' is not reached"),
            "{e}"
        );
        let e = broken(
            "causes",
            "fixes = [\"comfy_disable_pinned\"]",
            "fixes = [\"tiled_vae\"]",
        );
        assert!(e.contains("fix 'comfy_disable_pinned' is not used"), "{e}");
    }

    #[test]
    fn duplicate_cause_is_refused() {
        let e = broken(
            "causes",
            "id = \"flux_cfg\"",
            "id = \"denoise_empty_latent\"",
        );
        assert!(
            e.contains("cause 'denoise_empty_latent' is defined twice"),
            "{e}"
        );
    }

    #[test]
    fn missing_translation_and_unknown_fact_are_refused() {
        let e = broken("languages", "[\"en\"", "[\"en\", \"xx\"");
        assert!(e.contains("no text in xx"), "{e}");
        let e = broken(
            "signatures",
            "facts = [\"host_ram\"]",
            "facts = [\"hostram\"]",
        );
        assert!(
            e.contains("signatures.toml") && e.contains("hostram"),
            "{e}"
        );
    }
}
