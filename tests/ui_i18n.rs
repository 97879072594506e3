//! The two interface languages: every string the UI passes to `tr`/`trf` has a Chinese entry
//! and no entry is stale (a scan of `src/ui/`), every Chinese character has a glyph in the
//! shipped font subset, and the language switch works in the running app.

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable, by};
use skrifa::MetadataProvider;
use skrifa::instance::{LocationRef, Size};
use skrifa::outline::DrawSettings;
use skrifa::outline::pen::ControlBoundsPen;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use vram_doctor::ui::i18n::{self, Lang};
use vram_doctor::ui::{CJK_FONT, Tab, VramDoctorApp};

#[path = "common/app.rs"]
mod common_app;
use common_app::{app, click, wait_for};

const REGENERATE: &str = "run `python3 tools/make_cjk_subset.py` (needs fonts-noto-cjk and fonttools, \
see the README's Languages section) and commit assets/fonts/NotoSansCJKsc-subset.otf";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn zh_table() -> BTreeMap<String, String> {
    toml::from_str(i18n::ZH_CN).expect("assets/i18n/zh-CN.toml parses as a string table")
}

fn messages(text: &str, file: &str) -> BTreeMap<String, String> {
    toml::from_str(text).unwrap_or_else(|e| panic!("{file} parses as a string table: {e}"))
}

fn messages_en() -> BTreeMap<String, String> {
    messages(
        vram_doctor::types::message::EN,
        "assets/i18n/messages.en.toml",
    )
}

fn messages_zh() -> BTreeMap<String, String> {
    messages(i18n::MESSAGES_ZH_CN, "assets/i18n/messages.zh-CN.toml")
}

fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            toml_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

/// Every Chinese text of the doctor's knowledge (`zh` entries of any table), with where it is.
fn doctor_zh_texts() -> Vec<(String, String)> {
    zh_texts_in("assets/doctor")
}

/// Every Chinese text (`zh` entries of any table) of the TOML files under `dir`.
fn zh_texts_in(dir: &str) -> Vec<(String, String)> {
    fn walk(v: &toml::Value, at: &str, file: &str, out: &mut Vec<(String, String)>) {
        match v {
            toml::Value::Table(t) => {
                for (k, v) in t {
                    match (k.as_str(), v) {
                        ("zh", toml::Value::String(s)) => {
                            out.push((format!("{file} {at}.zh"), s.clone()))
                        }
                        _ => walk(v, &format!("{at}.{k}"), file, out),
                    }
                }
            }
            toml::Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    walk(v, &format!("{at}[{i}]"), file, out);
                }
            }
            _ => {}
        }
    }
    let mut files = Vec::new();
    toml_files(&root().join(dir), &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = f.strip_prefix(root()).unwrap().display().to_string();
        let v: toml::Value = toml::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        walk(&v, "", &name, &mut out);
    }
    out
}

#[test]
fn every_chinese_character_has_a_glyph_in_the_shipped_subset() {
    let font = skrifa::FontRef::new(CJK_FONT).expect("the CJK subset parses as an OpenType font");
    let charmap = font.charmap();
    let mut texts: Vec<(String, String)> = zh_table()
        .into_iter()
        .map(|(k, v)| (format!("assets/i18n/zh-CN.toml \"{k}\""), v))
        .collect();
    texts.extend(
        messages_zh()
            .into_iter()
            .map(|(k, v)| (format!("assets/i18n/messages.zh-CN.toml \"{k}\""), v)),
    );
    let doctor = doctor_zh_texts();
    assert!(
        doctor.len() > 300,
        "the doctor's knowledge has Chinese texts"
    );
    texts.extend(doctor);
    let glossary = zh_texts_in("assets/glossary");
    assert!(glossary.len() > 100, "the glossary has Chinese texts");
    texts.extend(glossary);
    for l in Lang::ALL {
        texts.push((format!("the language switch's {l:?}"), l.endonym().into()));
    }
    let mut missing: BTreeMap<char, String> = BTreeMap::new();
    for (at, text) in &texts {
        for c in text.chars().filter(|c| !c.is_ascii()) {
            if charmap.map(c).is_none() {
                missing.entry(c).or_insert_with(|| at.clone());
            }
        }
    }
    let list: Vec<String> = missing
        .iter()
        .map(|(c, at)| format!("'{c}' (U+{:04X}, first in {at})", *c as u32))
        .collect();
    assert!(
        missing.is_empty(),
        "{} character(s) have no glyph in assets/fonts/NotoSansCJKsc-subset.otf: {}; {REGENERATE}",
        missing.len(),
        list.join(", ")
    );
}

/// egui draws with skrifa: the subset's outlines (CFF) must come out as shapes, not empty boxes.
#[test]
fn the_subset_glyphs_have_outlines() {
    let font = skrifa::FontRef::new(CJK_FONT).unwrap();
    let outlines = font.outline_glyphs();
    for c in "简体中文规划诊断".chars() {
        let gid = font.charmap().map(c).expect("in the subset");
        let glyph = outlines.get(gid).expect("an outline");
        let mut pen = ControlBoundsPen::default();
        glyph
            .draw(
                DrawSettings::unhinted(Size::unscaled(), LocationRef::default()),
                &mut pen,
            )
            .unwrap();
        let b = pen.bounding_box().expect("a non-empty outline");
        assert!(
            b.x_max - b.x_min > 100.0 && b.y_max - b.y_min > 100.0,
            "{c}: {b:?}"
        );
    }
}

// ---- Source scan ---------------------------------------------------------------------------

#[derive(Debug, PartialEq)]
enum Tok {
    Str(String),
    Ident(String),
    Punct(char),
}

/// A Rust tokenizer just good enough for our sources: string literals (with escapes, `\` line
/// continuations and raw strings), identifiers, punctuation; comments, char literals and
/// lifetimes skipped.
fn tokens(src: &str) -> Vec<Tok> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '/' if c.get(i + 1) == Some(&'/') => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '/' if c.get(i + 1) == Some(&'*') => {
                i += 2;
                while i + 1 < c.len() && !(c[i] == '*' && c[i + 1] == '/') {
                    i += 1;
                }
                i += 2;
            }
            'r' if matches!(c.get(i + 1), Some('"' | '#')) => {
                let mut j = i + 1;
                let mut hashes = 0;
                while c.get(j) == Some(&'#') {
                    hashes += 1;
                    j += 1;
                }
                if c.get(j) != Some(&'"') {
                    out.push(Tok::Ident("r".into()));
                    i += 1;
                    continue;
                }
                j += 1;
                let start = j;
                let close: String = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                while j < c.len() && !c[j..].iter().collect::<String>().starts_with(&close) {
                    j += 1;
                }
                out.push(Tok::Str(c[start..j].iter().collect()));
                i = j + close.chars().count();
            }
            '"' => {
                let mut s = String::new();
                i += 1;
                while i < c.len() && c[i] != '"' {
                    if c[i] == '\\' {
                        i += 1;
                        match c.get(i) {
                            Some('n') => s.push('\n'),
                            Some('t') => s.push('\t'),
                            Some('\n') => {
                                while c.get(i + 1).is_some_and(|x| x.is_whitespace()) {
                                    i += 1;
                                }
                            }
                            Some(&x) => s.push(x),
                            None => {}
                        }
                    } else {
                        s.push(c[i]);
                    }
                    i += 1;
                }
                out.push(Tok::Str(s));
                i += 1;
            }
            '\'' => {
                // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
                if c.get(i + 1) == Some(&'\\') {
                    i += 2;
                    while i < c.len() && c[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if c.get(i + 2) == Some(&'\'') {
                    i += 3;
                } else {
                    i += 1;
                }
            }
            x if x.is_alphanumeric() || x == '_' => {
                let start = i;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                out.push(Tok::Ident(c[start..i].iter().collect()));
            }
            x if x.is_whitespace() => i += 1,
            x => {
                out.push(Tok::Punct(x));
                i += 1;
            }
        }
    }
    out
}

/// The keys a file passes to the translation: every string literal inside `tr(…)` (so
/// `tr(match x { A => "a", B => "b" })` counts both), and the template, the first literal, of
/// `trf(…)`. Method calls (`.tr(`) and the functions' own definitions are not calls.
fn keys_in(src: &str) -> Vec<String> {
    let t = tokens(src);
    let mut out = Vec::new();
    for i in 0..t.len() {
        let Tok::Ident(name) = &t[i] else { continue };
        if !(name == "tr" || name == "trf") || t.get(i + 1) != Some(&Tok::Punct('(')) {
            continue;
        }
        if i > 0 && (t[i - 1] == Tok::Punct('.') || t[i - 1] == Tok::Ident("fn".into())) {
            continue;
        }
        let mut depth = 0;
        for tok in &t[i + 1..] {
            match tok {
                Tok::Punct('(') => depth += 1,
                Tok::Punct(')') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Tok::Str(s) => {
                    out.push(s.clone());
                    if name == "trf" {
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// (file, key) for every `tr`/`trf` key in `src/ui/`, except i18n.rs itself, whose examples and
/// tests use keys on purpose.
fn ui_keys() -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(&root().join("src/ui"), &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in files.iter().filter(|f| !f.ends_with("i18n.rs")) {
        let name = f.strip_prefix(root()).unwrap().display().to_string();
        let src = std::fs::read_to_string(f).unwrap();
        out.extend(keys_in(&src).into_iter().map(|k| (name.clone(), k)));
    }
    out
}

#[test]
fn the_scanner_finds_calls_and_skips_the_rest() {
    let src = r##"
        // tr("in a comment")
        let a = tr("plain");
        let b = i18n::tr(match x { A => "one", B => "two" });
        let c = trf("Saved {path}", &[("path", &p)]);
        let d = x.tr("method");
        fn tr(en: &'static str) -> &'static str { en }
        let e = tr("multi \
                    line");
        let f = tr(r#"raw "quoted""#);
        let g = tr("esc \"q\"");
    "##;
    assert_eq!(
        keys_in(src),
        [
            "plain",
            "one",
            "two",
            "Saved {path}",
            "multi line",
            "raw \"quoted\"",
            "esc \"q\""
        ]
    );
}

#[test]
fn every_ui_string_has_a_chinese_entry() {
    let table = zh_table();
    let keys = ui_keys();
    assert!(keys.len() > 20, "the scan finds the UI's strings");
    let missing: BTreeSet<String> = keys
        .iter()
        .filter(|(_, k)| !table.contains_key(k))
        .map(|(f, k)| format!("{f}: {k:?}"))
        .collect();
    assert!(
        missing.is_empty(),
        "{} string(s) passed to tr/trf have no entry in assets/i18n/zh-CN.toml (add them, then \
         regenerate the font subset with `python3 tools/make_cjk_subset.py`):\n{}",
        missing.len(),
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// A key no code uses any more is stale. Keys the UI passes indirectly (labels the domain
/// layers return, translated with `tr(x.label())`) count as used when the literal occurs in
/// any source file under `src/`.
#[test]
fn no_chinese_entry_is_stale() {
    let used: BTreeSet<String> = ui_keys().into_iter().map(|(_, k)| k).collect();
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let literals: BTreeSet<String> = files
        .iter()
        .filter(|f| !f.ends_with("i18n.rs"))
        .flat_map(|f| tokens(&std::fs::read_to_string(f).unwrap()))
        .filter_map(|t| match t {
            Tok::Str(s) => Some(s),
            _ => None,
        })
        .collect();
    let stale: Vec<String> = zh_table()
        .into_keys()
        .filter(|k| !used.contains(k) && !literals.contains(k))
        .map(|k| format!("{k:?}"))
        .collect();
    assert!(
        stale.is_empty(),
        "{} entry(ies) in assets/i18n/zh-CN.toml are used nowhere in src/ (remove them):\n{}",
        stale.len(),
        stale.join("\n")
    );
}

/// Labels the estimators give a breakdown's parts: the literal after the id in
/// `.add(ComponentId::X, "Label", …)` and in `=> (ComponentId::X, "Label")` match arms, outside
/// test modules, in `src/memory/` and `src/plan/`.
fn breakdown_labels() -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(&root().join("src/memory"), &mut files);
    rust_files(&root().join("src/plan"), &mut files);
    let mut out = BTreeSet::new();
    for f in files {
        let src = std::fs::read_to_string(&f).unwrap();
        let code = src.split("#[cfg(test)]").next().unwrap_or_default();
        let t = tokens(code);
        for w in t.windows(8) {
            let opener = matches!(&w[0], Tok::Ident(n) if n == "add") && w[1] == Tok::Punct('(')
                || w[0] == Tok::Punct('>') && w[1] == Tok::Punct('(');
            let id = matches!(&w[2], Tok::Ident(n) if n == "ComponentId")
                && w[3] == Tok::Punct(':')
                && w[4] == Tok::Punct(':')
                && matches!(w[5], Tok::Ident(_));
            if let (true, true, Tok::Punct(','), Tok::Str(label)) = (opener, id, &w[6], &w[7]) {
                out.insert(label.clone());
            }
        }
    }
    out
}

/// The planner's legend shows each part through `tr(&part.label)`, so every label the
/// estimators use needs an entry, found both in the sources and by estimating the examples.
#[test]
fn every_breakdown_part_has_a_chinese_name() {
    use vram_doctor::memory::any::estimate_any;
    use vram_doctor::resolve::resolve_any;
    use vram_doctor::types::workload::WorkloadFile;
    let table = zh_table();
    let mut labels = breakdown_labels();
    assert!(
        labels.contains("Model weights"),
        "the scan finds the labels"
    );
    let mut examples = 0;
    for e in std::fs::read_dir(root().join("examples")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let file = WorkloadFile::load(&p).unwrap();
            let w = resolve_any(&file, &root(), None).unwrap();
            labels.extend(estimate_any(&w).components.into_iter().map(|c| c.label));
            examples += 1;
        }
    }
    assert!(examples >= 3, "the examples are estimated");
    let missing: Vec<String> = labels
        .iter()
        .filter(|l| !table.contains_key(*l))
        .map(|l| format!("{l:?}"))
        .collect();
    assert!(
        missing.is_empty(),
        "breakdown part(s) without an entry in assets/i18n/zh-CN.toml: {}",
        missing.join(", ")
    );
}

/// The planner shows a plan's changes through `tr_template(Strategy::template())` (LLM) and
/// `tr(Strategy::label())` (diffusion): every strategy needs an entry.
#[test]
fn every_strategy_template_has_a_chinese_entry() {
    use vram_doctor::plan::Strategy;
    use vram_doctor::types::dtype::KvDtype;
    use vram_doctor::types::options::{Checkpointing, Method, Offload};
    let mut all = vec![
        Strategy::Weights {
            format: "int4".into(),
        },
        Strategy::KvCache {
            dtype: KvDtype::Q8_0,
        },
        Strategy::FlashAttention,
        Strategy::MicroBatch {
            batch: 1,
            grad_accum: 8,
        },
        Strategy::Batch { batch: 1 },
        Strategy::PureBf16,
        Strategy::Optimizer8bit,
        Strategy::FusedOptimizer,
        Strategy::OptimizerInBwd,
        Strategy::ActivationOffload,
        Strategy::PagedOptimizer,
        Strategy::Packing,
        Strategy::Zero { stage: 3 },
        Strategy::Context { seq: 4096 },
        Strategy::ChunkedLoss,
        Strategy::Split {
            gpu_layers: 30,
            total_layers: 49,
            cpu_moe_layers: 0,
        },
        Strategy::Split {
            gpu_layers: 49,
            total_layers: 49,
            cpu_moe_layers: 20,
        },
    ];
    all.extend(
        Checkpointing::ALL
            .iter()
            .map(|&mode| Strategy::Checkpointing { mode }),
    );
    all.extend(
        Method::ALL
            .iter()
            .map(|&method| Strategy::Method { method }),
    );
    all.extend(
        Offload::ALL
            .iter()
            .map(|&offload| Strategy::Offload { offload }),
    );
    let table = zh_table();
    for s in &all {
        // A new kind of strategy fails to compile here until it is added to the list above.
        match s {
            Strategy::Weights { .. }
            | Strategy::KvCache { .. }
            | Strategy::FlashAttention
            | Strategy::Checkpointing { .. }
            | Strategy::MicroBatch { .. }
            | Strategy::Batch { .. }
            | Strategy::Method { .. }
            | Strategy::PureBf16
            | Strategy::Optimizer8bit
            | Strategy::FusedOptimizer
            | Strategy::OptimizerInBwd
            | Strategy::ActivationOffload
            | Strategy::PagedOptimizer
            | Strategy::Packing
            | Strategy::Zero { .. }
            | Strategy::Offload { .. }
            | Strategy::Context { .. }
            | Strategy::ChunkedLoss
            | Strategy::Split { .. } => {}
        }
        let (template, values) = s.template();
        assert!(
            table.contains_key(template),
            "no entry in assets/i18n/zh-CN.toml for the strategy template {template:?}"
        );
        i18n::set_lang(Lang::SimplifiedChinese);
        let zh = i18n::tr_template(template, &values);
        i18n::set_lang(Lang::English);
        assert!(!zh.contains('{'), "{zh}: a placeholder left unfilled");
        assert_eq!(i18n::tr_template(template, &values), s.describe());
    }
    for s in vram_doctor::plan::diffusion::Strategy::ALL {
        assert!(
            table.contains_key(s.label()),
            "no entry in assets/i18n/zh-CN.toml for the diffusion strategy {:?}",
            s.label()
        );
    }
}

fn names(s: &str) -> BTreeSet<&str> {
    s.split('{')
        .skip(1)
        .filter_map(|p| p.split_once('}').map(|(n, _)| n))
        .collect()
}

/// The domain's messages (`types::message`): every id the sources build has an English
/// template, every English template a Chinese one with the same placeholders, and neither
/// table holds an id no source builds.
#[test]
fn every_message_has_both_templates() {
    let (en, zh) = (messages_en(), messages_zh());
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let literals: BTreeSet<String> = files
        .iter()
        .flat_map(|f| tokens(&std::fs::read_to_string(f).unwrap()))
        .filter_map(|t| match t {
            Tok::Str(s) => Some(s),
            _ => None,
        })
        .collect();
    assert!(en.len() >= 6, "the English table has the messages");
    let mut problems = Vec::new();
    for (id, template) in &en {
        match zh.get(id) {
            None => problems.push(format!("{id:?} has no Chinese template")),
            Some(z) if names(z) != names(template) => problems.push(format!(
                "{id:?}: {template:?} → {z:?} differ in placeholders"
            )),
            Some(_) => {}
        }
        if !literals.contains(id) {
            problems.push(format!("{id:?} is built nowhere in src/ (remove it)"));
        }
    }
    for id in zh.keys().filter(|id| !en.contains_key(*id)) {
        problems.push(format!("{id:?} is in messages.zh-CN.toml only"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every verdict a plan can give says itself in both languages, nothing left unfilled.
#[test]
fn every_verdict_reads_in_both_languages() {
    use vram_doctor::plan::verdict::{Fit, Verdict};
    let en = messages_en();
    let gib = 1u64 << 30;
    let base = Verdict {
        fit: Fit::Fits,
        use_bytes: 9 * gib,
        need_bytes: 5 * gib,
        capacity_bytes: 8 * gib,
        margin_bytes: 0,
    };
    let streams = Fit::Streams {
        streamed_bytes: gib,
        slowdown: 1.8,
    };
    let all = [
        base,
        Verdict {
            fit: streams,
            ..base
        },
        Verdict {
            fit: streams,
            need_bytes: 12 * gib,
            ..base
        },
        Verdict {
            fit: Fit::Short,
            need_bytes: 12 * gib,
            ..base
        },
        Verdict {
            fit: Fit::Short,
            need_bytes: 12 * gib,
            margin_bytes: gib,
            ..base
        },
    ];
    let mut ids = BTreeSet::new();
    for v in all {
        for m in std::iter::once(v.message()).chain(v.use_message()) {
            assert!(en.contains_key(m.id), "{} has no English template", m.id);
            ids.insert(m.id);
            i18n::set_lang(Lang::SimplifiedChinese);
            let zh = i18n::msg(&m);
            i18n::set_lang(Lang::English);
            assert_eq!(i18n::msg(&m), m.to_string());
            for text in [zh.as_str(), &m.to_string()] {
                assert!(!text.contains('{'), "{text}: a placeholder left unfilled");
            }
            assert!(zh.contains("GiB") && !zh.contains(" of "), "{zh}");
        }
    }
    assert_eq!(ids.len(), 6, "every verdict sentence is reached: {ids:?}");
}

#[test]
fn translations_keep_the_placeholders() {
    for (en, zh) in zh_table() {
        assert!(!zh.trim().is_empty(), "{en:?} has an empty translation");
        assert_eq!(names(&en), names(&zh), "{en:?} → {zh:?}");
    }
}

// ---- The switch in the running app ---------------------------------------------------------

/// Clicking 简体中文 turns the tabs and the doctor into Chinese, every tab draws (the harness
/// fails on a glyph no font has), and clicking English turns it back.
#[test]
fn the_language_switch_turns_the_app_chinese_and_back() {
    let mut h = app(Some(Tab::Doctor));
    h.run();
    assert_eq!(
        h.state().state.lang,
        Lang::English,
        "tests start in English"
    );
    h.get_by_label("Read message");
    h.get_by_label("简体中文").click();
    h.run();
    assert_eq!(h.state().state.lang, Lang::SimplifiedChinese);
    for title in ["规划", "监控", "诊断", "目录"] {
        h.get_by_label(title);
    }
    assert!(h.query_by_label("Planner").is_none());
    // The doctor's own knowledge speaks Chinese too.
    h.get_by_label("不带消息开始").click();
    h.run();
    h.get_by_label("哪里不对？");
    for t in Tab::ALL {
        h.get_by_label(t.title()).click();
        h.run();
        assert_eq!(h.state().state.tab, t);
    }
    h.get_by_label("English").click();
    h.run();
    assert_eq!(h.state().state.lang, Lang::English);
    h.get_by_label("Planner").click();
    h.run();
    h.get_by_role_and_label(Role::Slider, "Batch size");
}

#[test]
fn the_language_is_kept_between_sessions() {
    let mut state = vram_doctor::ui::AppState {
        lang: Lang::SimplifiedChinese,
        ..Default::default()
    };
    let text = serde_json::to_string(&state).unwrap();
    state = serde_json::from_str(&text).unwrap();
    assert_eq!(state.lang, Lang::SimplifiedChinese);
    // A state saved before the switch existed reads as English.
    let old: vram_doctor::ui::AppState = serde_json::from_str(r#"{"tab":"Doctor"}"#).unwrap();
    assert_eq!((old.lang, old.tab), (Lang::English, Tab::Doctor));
}

/// Every English string literal of `src/ui/` (outside tests and i18n.rs) that reads as text:
/// what a label showing one of them in Chinese mode would have forgotten to translate.
fn ui_literals() -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(&root().join("src/ui"), &mut files);
    files
        .iter()
        .filter(|f| !f.ends_with("i18n.rs"))
        .flat_map(|f| {
            let src = std::fs::read_to_string(f).unwrap();
            let code = src
                .split("#[cfg(test)]")
                .next()
                .unwrap_or_default()
                .to_string();
            tokens(&code)
        })
        .filter_map(|t| match t {
            Tok::Str(s) if s.chars().filter(|c| c.is_ascii_alphabetic()).count() >= 3 => Some(s),
            _ => None,
        })
        .collect()
}

/// Walks every tab in Chinese (each planner kind, the monitor with demo data, the doctor's
/// wizard, each catalog shelf and the add form) and fails on any label or value that is still
/// one of the UI's English literals: a string shown without `tr`, or passed to `tr` through a
/// variable the source scan cannot see and missing from the table.
#[test]
fn nothing_english_from_the_ui_shows_in_chinese() {
    let table = zh_table();
    let english: BTreeSet<String> = ui_literals()
        .into_iter()
        .filter(|l| table.get(l) != Some(l))
        // The product's name is a name.
        .filter(|l| l != "VRAM Doctor")
        .collect();
    assert!(english.contains("Read message"), "the literal scan works");
    let mut h = app(None);
    h.state_mut().state.lang = Lang::SimplifiedChinese;
    h.run();
    i18n::set_lang(Lang::SimplifiedChinese);
    let mut shown: BTreeMap<String, &'static str> = BTreeMap::new();
    let mut look = |h: &mut Harness<'static, VramDoctorApp>, step: &'static str| {
        for n in h.query_all(by().predicate(|_| true)) {
            let node = n.accesskit_node();
            for t in [node.label(), node.value()].into_iter().flatten() {
                shown.entry(t).or_insert(step);
            }
        }
    };
    look(&mut h, "planner");
    for kind in ["LLM training", "Diffusion", "Game", "LLM inference"] {
        click(&mut h, kind);
        look(&mut h, kind);
    }
    click(&mut h, "Monitor");
    look(&mut h, "monitor without a GPU");
    click(&mut h, "Show demo data");
    wait_for(&mut h, "GPU 0");
    h.run();
    look(&mut h, "monitor with demo data");
    click(&mut h, "Doctor");
    click(&mut h, "Start without a message");
    look(&mut h, "doctor");
    click(&mut h, "Catalog");
    for shelf in ["Models", "Games", "GPUs"] {
        click(&mut h, shelf);
        look(&mut h, shelf);
    }
    click(&mut h, "Add GPU…");
    look(&mut h, "catalog form");
    i18n::set_lang(Lang::English);
    let untranslated: Vec<String> = shown
        .iter()
        .filter(|(t, _)| english.contains(t.as_str()))
        .map(|(t, step)| format!("{t:?} (seen at: {step})"))
        .collect();
    assert!(
        untranslated.is_empty(),
        "shown in English in the Chinese app (wrap it in tr/trf, or add its entry to \
         assets/i18n/zh-CN.toml):\n{}",
        untranslated.join("\n")
    );
}
