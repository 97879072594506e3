//! The layers of DESIGN.md, enforced: every `crate::…` path (and every `super::…` path that
//! climbs out of its top-level module) in `src/` is checked against the table below, and a
//! domain module naming egui, eframe, egui_plot, rfd or clap fails the test.
//!
//! Allowed dependencies (a module may name only itself and the modules in its row):
//!
//! ```text
//! leaf helpers  units printable png toml_file suggest tabs file_error input_file atomic_write
//! types         leaf helpers                    (the shared domain types; imports nothing above)
//! catalog       types, leaf helpers             (presets)
//! memory        types, leaf helpers             (estimation; never looks a preset up in catalog)
//! import        memory, types, leaf helpers     (model files; memory's weight formulas)
//! resolve       catalog, import, memory, types  (file + presets -> checked workload)
//! speed         memory, types
//! plan          resolve, import, speed, memory, catalog, types
//! export        plan, resolve, import, speed, memory, catalog, types
//! accuracy      plan, resolve, import, speed, memory, catalog, types
//! telemetry     types, leaf helpers             (its alerts are types::message sentences)
//! doctor        telemetry, types, leaf helpers  (reads the monitor's latest reading; ComfyUI's memory mode)
//! watch         doctor, telemetry, leaf helpers
//! cli           every domain module, never ui
//! ui            every domain module, never cli
//! ```
//!
//! `src/engines/<engine>/` holds one engine's rules split by layer: `<engine>/memory.rs` (or
//! `memory/…`) is checked as part of `memory`, `<engine>/speed…` of `speed`, `<engine>/export…` of
//! `export`, and a path into it counts as the layer it names (`crate::engines::llama_cpp::memory`
//! is `memory`), so an engine's pieces keep the table above. A path that names an engine without
//! its layer (`use crate::engines::llama_cpp;`) fails, and so does `super::` in an engine's code:
//! its files name each other through `crate::engines::…`, where the layer shows. The engine's own
//! `mod.rs` (and `engines/mod.rs`) only declare modules: leaf helpers at most.
//!
//! Test code (`#[cfg(test)]` to the end of a file) may build fixtures through a higher layer,
//! as a dev-dependency may in a workspace; everything before it is checked.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const LEAF: &[&str] = &[
    "units",
    "printable",
    "png",
    "toml_file",
    "suggest",
    "tabs",
    "file_error",
    "input_file",
    "atomic_write",
];
/// The layers an engine's rules may sit in (`src/engines/<engine>/<layer>`).
const ENGINE_LAYERS: &[&str] = &["memory", "speed", "plan", "export"];

const DOMAIN: &[&str] = &[
    "types",
    "catalog",
    "memory",
    "import",
    "resolve",
    "speed",
    "plan",
    "export",
    "accuracy",
    "doctor",
    "telemetry",
    "watch",
];

/// What `module` may import besides itself.
fn allowed(module: &str) -> Option<Vec<&'static str>> {
    let above_leaf: &[&str] = match module {
        m if LEAF.contains(&m) => {
            return Some(match m {
                "input_file" => vec!["units", "file_error"],
                "atomic_write" => vec!["input_file", "units", "file_error"],
                "suggest" => vec!["printable"],
                _ => vec![],
            });
        }
        "types" | "engines" => &[],
        "catalog" | "memory" => &["types"],
        "import" => &["memory", "types"],
        "resolve" => &["catalog", "import", "memory", "types"],
        "speed" => &["memory", "types"],
        "plan" => &["resolve", "import", "speed", "memory", "catalog", "types"],
        "export" => &[
            "plan", "resolve", "import", "speed", "memory", "catalog", "types",
        ],
        "accuracy" => &[
            "plan", "resolve", "import", "speed", "memory", "catalog", "types",
        ],
        "telemetry" => &["types"],
        "doctor" => &["telemetry", "types"],
        "watch" => &["doctor", "telemetry"],
        "cli" => DOMAIN,
        "ui" => DOMAIN,
        _ => return None,
    };
    Some(LEAF.iter().chain(above_leaf).copied().collect())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src/ is readable") {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's code without comments (a doc comment may name any module), with string and
/// character literals emptied (a message may name any path), and without the items marked
/// `#[cfg(test)]` (a test module, or a test-only function in the middle of an `impl`):
/// everything else is checked, also the code that follows a test item.
fn code_of(text: &str) -> String {
    let code = without_comments_and_literals(text);
    let mut out = String::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..i]);
        let after = &rest[i + "#[cfg(test)]".len()..];
        rest = &after[item_len(after)..];
    }
    out.push_str(rest);
    out
}

/// `text` with its comments (line, block, nested) removed and its string, raw string and
/// character literals left empty (`""`, `''`); lifetimes stay.
fn without_comments_and_literals(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < c.len() {
        let next = c.get(i + 1).copied();
        match c[i] {
            '/' if next == Some('/') => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '/' if next == Some('*') => {
                let mut depth = 0;
                while i < c.len() {
                    if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                continue;
            }
            'r' if (next == Some('"') || next == Some('#')) && !(i > 0 && ident(c[i - 1])) => {
                let hashes = c[i + 1..].iter().take_while(|ch| **ch == '#').count();
                if c.get(i + 1 + hashes) != Some(&'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                i += 2 + hashes;
                while i < c.len()
                    && !(c[i] == '"'
                        && c[i + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|ch| **ch == '#')
                            .count()
                            == hashes)
                {
                    i += 1;
                }
                i += 1 + hashes;
                out.push_str("\"\"");
                continue;
            }
            '"' => {
                i += 1;
                while i < c.len() && c[i] != '"' {
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
                continue;
            }
            '\'' => {
                // A character literal ('x', '\n', '\u{7f}'), not a lifetime ('a).
                let end = if next == Some('\\') {
                    (i + 3..c.len().min(i + 12)).find(|&j| c[j] == '\'')
                } else {
                    Some(i + 2).filter(|&j| c.get(j) == Some(&'\''))
                };
                if let Some(end) = end {
                    out.push_str("''");
                    i = end + 1;
                    continue;
                }
            }
            _ => {}
        }
        out.push(c[i]);
        i += 1;
    }
    out
}

/// The length of the item `code` starts with: up to its `;` when that comes before any `{`
/// (`use x;`, `mod m;`), else up to the `}` closing its first block.
fn item_len(code: &str) -> usize {
    let mut depth = 0usize;
    for (i, ch) in code.char_indices() {
        match ch {
            ';' if depth == 0 => return i + 1,
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The top-level modules a piece of code names through `crate::` (also `crate::{a, b::c}`),
/// and through `super::` chains that climb above `depth` (the file's depth below its module).
fn named_modules(code: &str, depth: usize) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut take = |rest: &str| {
        if let Some(path) = rest.strip_prefix("engines::") {
            out.extend(engine_layers(path));
        } else if let Some(group) = rest.strip_prefix('{') {
            // Each item's first segment, also after a nested group (`crate::{a::{b, c}, d}`
            // names a and d).
            let mut depth = 0usize;
            let mut items = vec![String::new()];
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => items.push(String::new()),
                    _ if depth == 0 => items.last_mut().unwrap().push(ch),
                    _ => {}
                }
            }
            for item in &items {
                let id = ident(item.trim());
                if !id.is_empty() && id != "self" {
                    out.insert(id);
                }
            }
        } else {
            let id = ident(rest);
            if !id.is_empty() {
                out.insert(id);
            }
        }
    };
    for (i, _) in code.match_indices("crate::") {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        take(code[i + "crate::".len()..].trim_start());
    }
    for (i, _) in code.match_indices("super::") {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut rest = &code[i..];
        let mut ups = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            ups += 1;
            rest = r;
        }
        // An inline `mod` adds a level the file path does not show, so a climbing path only
        // counts when it lands on a top-level module.
        let id: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if ups > depth && allowed(&id).is_some() {
            take(rest);
        }
    }
    out
}

/// The layers a path below `crate::engines::` names: `llama_cpp::memory::x` is `memory`,
/// `llama_cpp::{memory, export}` both; a path that stops at the engine (or names no layer) is
/// `engines::<engine>`, which no row allows.
fn engine_layers(path: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let engine = ident(path);
    let rest = path[engine.len()..].trim_start();
    let layers: Vec<String> = match rest.strip_prefix("::").map(str::trim_start) {
        Some(r) if r.starts_with('{') => r[1..r.find('}').unwrap_or(r.len())]
            .split(',')
            .map(|i| ident(i.trim()))
            .filter(|i| !i.is_empty())
            .collect(),
        Some(r) => vec![ident(r)],
        None => vec![],
    };
    if layers.is_empty() || layers.iter().any(|l| !ENGINE_LAYERS.contains(&l.as_str())) {
        return vec![format!("engines::{engine}")];
    }
    layers
}

/// The layer a file under `src/` is checked as: its top-level module, or for an engine's
/// file (`engines/<engine>/<layer>…`) that layer.
fn layer_of(parts: &[String]) -> &str {
    match parts {
        [top, _, layer, ..] if top == "engines" && layer != "mod" => layer,
        [top, ..] => top,
        [] => "",
    }
}

#[test]
fn every_import_respects_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut bad = Vec::new();
    let mut checked = 0;
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        let module = layer_of(&parts);
        if ["lib", "main"].contains(&module) {
            continue; // the crate root and the binary sit above every layer
        }
        // How far `super::` may climb and stay inside the module: `a/b/c.rs` is a::b::c (two
        // levels), `a/b/mod.rs` is a::b (one), `a.rs` and `a/mod.rs` are the module itself.
        let depth = parts.len() - 1 - usize::from(parts.last().is_some_and(|p| p == "mod"));
        let allow = allowed(module).unwrap_or_else(|| {
            panic!(
                "src/{}: module '{module}' has no row in the layer table of tests/layering.rs",
                rel.display()
            )
        });
        if parts[0] == "engines" && module != "engines" && !ENGINE_LAYERS.contains(&module) {
            bad.push(format!(
                "src/{}: an engine's rules sit in one of {ENGINE_LAYERS:?}",
                rel.display()
            ));
        }
        let text = std::fs::read_to_string(f).unwrap();
        let code = code_of(&text);
        if parts[0] == "engines" && code.contains("super::") {
            bad.push(format!(
                "src/{}: an engine's file names its neighbours through crate::engines::…, not super::",
                rel.display()
            ));
        }
        for m in named_modules(&code, depth) {
            if m != module && !allow.contains(&m.as_str()) {
                bad.push(format!(
                    "src/{}: {module} imports crate::{m}",
                    rel.display()
                ));
            }
        }
        if module != "ui" && module != "cli" {
            for gui in ["egui", "eframe", "egui_plot", "rfd", "clap"] {
                let named = code.match_indices(&format!("{gui}::")).any(|(i, _)| {
                    !code[..i]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                });
                if named {
                    bad.push(format!("src/{}: domain module names {gui}", rel.display()));
                }
            }
        }
        checked += 1;
    }
    assert!(
        checked > 100,
        "only {checked} source files found under src/"
    );
    assert!(
        bad.is_empty(),
        "imports across a layer:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_parser_sees_every_form_of_path() {
    let code = "use crate::memory::Workload;\nuse crate::{catalog::Catalog, units};\nlet x = crate::ui::Tab::ALL;\nuse super::super::plan::Plan;\nuse crate::{types::{a, b}, speed};\n";
    let m = named_modules(code, 1);
    for want in ["memory", "catalog", "units", "ui", "plan", "types", "speed"] {
        assert!(m.contains(want), "{want} not seen in {m:?}");
    }
    // A nested group's items are not modules of the crate.
    assert!(!m.contains("a") && !m.contains("b"), "{m:?}");
    // `super::` inside the module stays inside it.
    assert!(named_modules("use super::x::Y;", 1).is_empty());
    // Comments and tests are not code.
    assert!(
        code_of("// crate::ui\nfn a() {}\n#[cfg(test)]\nuse crate::ui;")
            .find("ui")
            .is_none()
    );
    // What follows a test item is code again: a test-only function inside an `impl` (braces
    // in its strings and characters do not end it) or a test module before more items.
    let code = code_of(concat!(
        "impl A {\n    #[cfg(test)]\n",
        "    fn t<'a>() { let s = \"}\"; let c = '{'; let q = '\\''; let r = r#\"}\"#; /* } */ crate::ui::x(); }\n",
        "    fn b() { let u = \"http://crate::doctor\"; crate::plan::y() }\n}\n",
        "#[cfg(test)]\nmod tests { use crate::export; }\nuse crate::cli::Z;\n",
    ));
    let m = named_modules(&code, 0);
    assert!(m.contains("plan") && m.contains("cli"), "{m:?} in {code}");
    for not_code in ["ui", "export", "doctor"] {
        assert!(!m.contains(not_code), "{not_code} in {m:?} of {code}");
    }
    // A path into an engine counts as the layer it names; one that hides the layer fails.
    let e = named_modules(
        "use crate::engines::llama_cpp::memory::split;\nuse crate::engines::vllm::{speed, export};\nuse crate::engines::comfyui;\n",
        0,
    );
    for want in ["memory", "speed", "export", "engines::comfyui"] {
        assert!(e.contains(want), "{want} not seen in {e:?}");
    }
    assert!(
        !DOMAIN
            .iter()
            .any(|m| allowed(m).unwrap().contains(&"engines::comfyui"))
    );
    let file = |p: &str| p.split('/').map(String::from).collect::<Vec<_>>();
    assert_eq!(layer_of(&file("engines/llama_cpp/memory")), "memory");
    assert_eq!(layer_of(&file("engines/llama_cpp/export/ollama")), "export");
    assert_eq!(layer_of(&file("engines/llama_cpp/mod")), "engines");
    assert_eq!(layer_of(&file("memory/kv_cache")), "memory");
    assert!(!allowed("cli").unwrap().contains(&"ui"));
    assert!(!allowed("memory").unwrap().contains(&"catalog"));
}
