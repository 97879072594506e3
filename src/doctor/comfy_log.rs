//! ComfyUI's console log as evidence: the card it saw, its VRAM state, the memory mode (dynamic
//! VRAM or classic loading), each model it loaded and how (whole, partially with what stayed in
//! system memory, or staged for dynamic VRAM), and its out-of-memory handler.
//!
//! The lines are data (`assets/doctor/comfy_log.toml`): each is ComfyUI's own format string with
//! its holes named and typed, read by one matcher here, so every release's wording is a format in
//! the file rather than a special case in code. A line that carries a known format's words but
//! matches none of its formats is listed as not understood, never guessed at.

use super::evidence::{Fact, Observation, PlanSummary, Source};
use crate::types::options::MemoryMode;
use crate::units::{MIB, human};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// At most this many lines are kept as "not understood" (the count is exact).
const MAX_UNREAD_KEPT: usize = 20;
/// "loaded completely" prints the limit as `1e32 / 2^20` MB when there is none (ComfyUI's
/// `lowvram_model_memory` default, comfy/model_patcher.py `ModelPatcher.load`); anything this large
/// is "no limit".
const NO_LIMIT_MB: f64 = 1e20;
/// The plan's card and the log's count as the same card within this share (ComfyUI prints what
/// `torch.cuda.mem_get_info` reports, a little under the card's nominal size).
const SAME_CARD_SHARE: f64 = 0.05;

/// What a line means; each event has the holes its formats must name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Event {
    CardMemory,
    TorchVersion,
    VramState,
    AimdoGpu,
    DynamicOn,
    DynamicOff,
    Requested,
    LoadedWhole,
    LoadedPartial,
    DynamicLoad,
    Oom,
    Exception,
}

impl Event {
    /// (holes every format must have, holes a format may have besides).
    fn holes(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Event::CardMemory => (&["vram_mb", "ram_mb"], &[]),
            Event::TorchVersion => (&["version"], &[]),
            Event::VramState => (&["state"], &[]),
            Event::AimdoGpu => (&["gpu", "vram_mb"], &[]),
            Event::DynamicOn | Event::Oom => (&[], &[]),
            Event::DynamicOff => (&[], &["rest"]),
            Event::Requested => (&["model"], &[]),
            Event::LoadedWhole => (&["loaded_mb"], &["usable_mb", "full"]),
            Event::LoadedPartial => (
                &["loaded_mb", "patches"],
                &["usable_mb", "offloaded_mb", "buffer_mb"],
            ),
            Event::DynamicLoad => (&["model", "staged_mb"], &["patches", "forced", "forced_kb"]),
            Event::Exception => (&["error"], &[]),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hole {
    Num,
    Int,
    Bool,
    Word,
    Text,
    Any,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Lit(String),
    Hole(String, Hole),
}

/// One format string, split into literal parts and holes.
#[derive(Debug, Clone)]
struct Format {
    parts: Vec<Part>,
    /// The longest literal part: a line holding it is meant to be this kind of line.
    key: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LineFile {
    line: Vec<LineEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LineEntry {
    id: String,
    event: Event,
    formats: Vec<String>,
    /// For `vram_state`: the names the state can have (ComfyUI's `VRAMState`).
    #[serde(default)]
    states: Vec<String>,
}

#[derive(Debug)]
struct Line {
    event: Event,
    formats: Vec<Format>,
    states: Vec<String>,
}

/// The checked line formats.
#[derive(Debug)]
pub struct Lines {
    lines: Vec<Line>,
}

static LINES: OnceLock<Lines> = OnceLock::new();

/// Runs of whitespace as one space, ends trimmed (formats and log lines alike).
fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn parse_format(id: &str, f: &str) -> Result<Format, String> {
    let f = squeeze(f);
    let mut parts = Vec::new();
    let mut rest = f.as_str();
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(Part::Lit(rest[..open].to_string()));
        }
        let close = rest[open..]
            .find('}')
            .ok_or_else(|| format!("line '{id}': unclosed '{{' in \"{f}\""))?
            + open;
        let (name, ty) = rest[open + 1..close]
            .split_once(':')
            .ok_or_else(|| format!("line '{id}': hole without a type in \"{f}\""))?;
        let ty = match ty {
            "num" => Hole::Num,
            "int" => Hole::Int,
            "bool" => Hole::Bool,
            "word" => Hole::Word,
            "text" => Hole::Text,
            "any" => Hole::Any,
            t => return Err(format!("line '{id}': unknown hole type '{t}' in \"{f}\"")),
        };
        if matches!(parts.last(), Some(Part::Hole(..))) {
            return Err(format!(
                "line '{id}': two holes with nothing between in \"{f}\""
            ));
        }
        parts.push(Part::Hole(name.to_string(), ty));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Lit(rest.to_string()));
    }
    if !matches!(parts.first(), Some(Part::Lit(_))) {
        return Err(format!(
            "line '{id}': \"{f}\" must start with a literal part (its anchor)"
        ));
    }
    let key = parts
        .iter()
        .filter_map(|p| match p {
            Part::Lit(l) => Some(l.trim()),
            Part::Hole(..) => None,
        })
        .max_by_key(|l| l.len())
        .unwrap_or_default()
        .to_string();
    Ok(Format { parts, key })
}

impl Lines {
    pub fn get() -> &'static Lines {
        LINES.get_or_init(|| {
            Lines::load(include_str!("../../assets/doctor/comfy_log.toml")).unwrap_or_else(|e| {
                panic!("assets/doctor/comfy_log.toml is invalid (checked by tests): {e}")
            })
        })
    }

    /// Parses and checks: every format starts with a literal, names exactly its event's holes.
    pub fn load(src: &str) -> Result<Lines, String> {
        let file: LineFile = toml::from_str(src).map_err(|e| e.to_string())?;
        let mut lines = Vec::new();
        for e in file.line {
            if e.formats.is_empty() {
                return Err(format!("line '{}': no formats", e.id));
            }
            let (required, optional) = e.event.holes();
            let mut formats = Vec::new();
            for f in &e.formats {
                let format = parse_format(&e.id, f)?;
                let names: Vec<&str> = format
                    .parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::Hole(n, _) => Some(n.as_str()),
                        Part::Lit(_) => None,
                    })
                    .collect();
                if let Some(n) = names
                    .iter()
                    .find(|n| !required.contains(n) && !optional.contains(n))
                {
                    return Err(format!(
                        "line '{}': hole '{n}' means nothing for {:?}",
                        e.id, e.event
                    ));
                }
                if let Some(n) = required.iter().find(|n| !names.contains(n)) {
                    return Err(format!("line '{}': \"{f}\" lacks the hole '{n}'", e.id));
                }
                formats.push(format);
            }
            if (e.event == Event::VramState) == e.states.is_empty() {
                return Err(format!(
                    "line '{}': `states` belongs to vram_state lines only, and they need it",
                    e.id
                ));
            }
            lines.push(Line {
                event: e.event,
                formats,
                states: e.states,
            });
        }
        Ok(Lines { lines })
    }
}

/// A hole's value as read.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Num(f64),
    Bool(bool),
    Text(String),
}

fn read_hole(s: &str, ty: Hole) -> Option<Value> {
    let s = s.trim();
    let number_like = s.starts_with(|c: char| c.is_ascii_digit() || c == '-');
    match ty {
        Hole::Num => s
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && number_like)
            .map(Value::Num),
        Hole::Int => s.parse::<u64>().ok().map(|n| Value::Num(n as f64)),
        Hole::Bool => match s {
            "True" => Some(Value::Bool(true)),
            "False" => Some(Value::Bool(false)),
            _ => None,
        },
        Hole::Word => (!s.is_empty() && !s.contains(' ')).then(|| Value::Text(s.into())),
        Hole::Text => (!s.is_empty()).then(|| Value::Text(s.into())),
        Hole::Any => Some(Value::Text(s.into())),
    }
}

/// The holes of `f` read from `line` (squeezed), when the format covers the line from its anchor
/// to the end.
fn match_format(f: &Format, line: &str) -> Option<BTreeMap<String, Value>> {
    let Part::Lit(anchor) = &f.parts[0] else {
        return None;
    };
    let mut pos = line.find(anchor.as_str())? + anchor.len();
    let mut out = BTreeMap::new();
    for (i, part) in f.parts.iter().enumerate().skip(1) {
        match part {
            Part::Lit(l) => {
                let l = if pos == line.len() { l.trim_end() } else { l };
                if !line[pos..].starts_with(l) {
                    return None;
                }
                pos += l.len();
            }
            Part::Hole(name, ty) => {
                let end = match f.parts.get(i + 1) {
                    Some(Part::Lit(next)) => {
                        // A literal that ends the line may have lost its trailing space.
                        let next = if i + 2 == f.parts.len() {
                            next.trim_end()
                        } else {
                            next
                        };
                        pos + line[pos..].find(next)?
                    }
                    _ => line.len(),
                };
                out.insert(name.clone(), read_hole(&line[pos..end], *ty)?);
                pos = end;
            }
        }
    }
    line[pos..].trim().is_empty().then_some(out)
}

/// How a model went onto the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadHow {
    /// "Requested to load" with no line after it saying how.
    Requested,
    /// "loaded completely": all its weights on the GPU.
    Whole,
    /// "loaded partially": part of its weights on the GPU, the rest streamed from system memory.
    Partial,
    /// "prepared for dynamic VRAM loading": paged in on demand (comfy-aimdo).
    Dynamic,
}

/// One model load, as the log tells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelLoad {
    /// ComfyUI's model class ("SDXL", "FluxClipModel_", "WAN21"); `None` when the log shows a
    /// load line without the "Requested to load" before it.
    pub model: Option<String>,
    pub how: LoadHow,
    /// The memory ComfyUI allowed the model ("MB usable"); `None` when it set no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usable_bytes: Option<u64>,
    /// Weights on the GPU ("MB loaded").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded_bytes: Option<u64>,
    /// Weights left in system memory ("MB offloaded"; older releases do not print it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offloaded_bytes: Option<u64>,
    /// The buffer reserved for streaming the offloaded weights.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_bytes: Option<u64>,
    /// Dynamic VRAM: the weights staged (given GPU address space) for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staged_bytes: Option<u64>,
    /// The log line that said how.
    pub line: String,
}

/// What a ComfyUI console log shows about memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ComfyLog {
    /// "Total VRAM … MB" (or comfy-aimdo's "VRAM: … MB").
    pub vram_total_bytes: Option<u64>,
    /// "total RAM … MB".
    pub ram_total_bytes: Option<u64>,
    /// The GPU's name, as comfy-aimdo printed it.
    pub gpu: Option<String>,
    pub torch_version: Option<String>,
    /// "Set vram state to: …" (NORMAL_VRAM, LOW_VRAM, …).
    pub vram_state: Option<String>,
    /// Dynamic VRAM or classic loading: from main.py's lines, else from how models were loaded.
    pub mode: Option<MemoryMode>,
    /// The line that showed the mode.
    pub mode_line: Option<String>,
    /// Model loads in log order.
    pub loads: Vec<ModelLoad>,
    /// ComfyUI's out-of-memory handler ran ("Got an OOM, unloading all loaded models.").
    pub oom: bool,
    /// "!!! Exception during processing !!!" messages.
    pub exceptions: Vec<String>,
    /// Lines read by a known format.
    pub lines_read: usize,
    /// Lines that carry a known line's words but match none of its formats (the first
    /// `MAX_UNREAD_KEPT`), and how many there were.
    pub not_understood: Vec<String>,
    pub not_understood_count: usize,
}

fn mb(v: &BTreeMap<String, Value>, k: &str) -> Option<u64> {
    match v.get(k)? {
        Value::Num(n) if *n < NO_LIMIT_MB && *n >= 0.0 => Some((n * MIB).round() as u64),
        _ => None,
    }
}

fn word_of(v: &BTreeMap<String, Value>, k: &str) -> Option<String> {
    match v.get(k)? {
        Value::Text(t) => Some(t.clone()),
        _ => None,
    }
}

/// Reads every line of `text` that ComfyUI's formats describe; `None` when none does.
pub fn read(text: &str, lines: &Lines) -> Option<ComfyLog> {
    let mut log = ComfyLog::default();
    // Models requested and not yet reported loaded, in order (load_models_gpu logs every
    // "Requested to load" before the loads, which then run in the same order).
    let mut pending: Vec<usize> = Vec::new();
    for raw in text.lines() {
        let line = squeeze(raw);
        if line.is_empty() {
            continue;
        }
        let mut meant = false;
        let mut hit = None;
        'find: for l in &lines.lines {
            for f in &l.formats {
                if let Some(v) = match_format(f, &line) {
                    hit = Some((l, v));
                    break 'find;
                }
                meant |= line.contains(f.key.as_str());
            }
        }
        let Some((l, v)) = hit else {
            if meant {
                log.not_understood_count += 1;
                if log.not_understood.len() < MAX_UNREAD_KEPT {
                    log.not_understood.push(line);
                }
            }
            continue;
        };
        if l.event == Event::VramState
            && !word_of(&v, "state").is_some_and(|s| l.states.contains(&s))
        {
            log.not_understood_count += 1;
            if log.not_understood.len() < MAX_UNREAD_KEPT {
                log.not_understood.push(line);
            }
            continue;
        }
        log.lines_read += 1;
        apply(&mut log, &mut pending, l.event, &v, line);
    }
    if log.mode.is_none() {
        let dynamic = log.loads.iter().any(|m| m.how == LoadHow::Dynamic);
        let classic = log
            .loads
            .iter()
            .find(|m| matches!(m.how, LoadHow::Whole | LoadHow::Partial));
        if dynamic {
            log.mode = Some(MemoryMode::Dynamic);
        } else if let Some(m) = classic {
            log.mode = Some(MemoryMode::Classic);
            log.mode_line = Some(m.line.clone());
        }
        if dynamic {
            log.mode_line = log
                .loads
                .iter()
                .find(|m| m.how == LoadHow::Dynamic)
                .map(|m| m.line.clone());
        }
    }
    (log.lines_read > 0 || log.not_understood_count > 0).then_some(log)
}

fn apply(
    log: &mut ComfyLog,
    pending: &mut Vec<usize>,
    event: Event,
    v: &BTreeMap<String, Value>,
    line: String,
) {
    let load = |model: Option<String>, how: LoadHow, line: String| ModelLoad {
        model,
        how,
        usable_bytes: mb(v, "usable_mb"),
        loaded_bytes: mb(v, "loaded_mb"),
        offloaded_bytes: mb(v, "offloaded_mb"),
        buffer_bytes: mb(v, "buffer_mb"),
        staged_bytes: mb(v, "staged_mb"),
        line,
    };
    match event {
        Event::CardMemory => {
            log.vram_total_bytes = mb(v, "vram_mb");
            log.ram_total_bytes = mb(v, "ram_mb");
        }
        Event::AimdoGpu => {
            log.gpu = word_of(v, "gpu");
            log.vram_total_bytes = log.vram_total_bytes.or(mb(v, "vram_mb"));
        }
        Event::TorchVersion => log.torch_version = word_of(v, "version"),
        Event::VramState => log.vram_state = word_of(v, "state"),
        Event::DynamicOn | Event::DynamicOff => {
            log.mode = Some(if event == Event::DynamicOn {
                MemoryMode::Dynamic
            } else {
                MemoryMode::Classic
            });
            log.mode_line = Some(line);
        }
        Event::Requested => {
            pending.push(log.loads.len());
            log.loads
                .push(load(word_of(v, "model"), LoadHow::Requested, line));
        }
        Event::LoadedWhole | Event::LoadedPartial => {
            let how = if event == Event::LoadedWhole {
                LoadHow::Whole
            } else {
                LoadHow::Partial
            };
            if pending.is_empty() {
                log.loads.push(load(None, how, line));
            } else {
                let i = pending.remove(0);
                let model = log.loads[i].model.clone();
                log.loads[i] = load(model, how, line);
            }
        }
        Event::DynamicLoad => {
            let model = word_of(v, "model");
            match pending.iter().position(|&i| log.loads[i].model == model) {
                Some(p) => {
                    let i = pending.remove(p);
                    log.loads[i] = load(model, LoadHow::Dynamic, line);
                }
                None => log.loads.push(load(model, LoadHow::Dynamic, line)),
            }
        }
        Event::Oom => log.oom = true,
        Event::Exception => log.exceptions.extend(word_of(v, "error")),
    }
}

fn mode_name(m: MemoryMode) -> &'static str {
    match m {
        MemoryMode::Dynamic => "dynamic",
        MemoryMode::Classic => "classic",
    }
}

fn observation(
    fact: Fact,
    source: Source,
    base: &BTreeMap<String, String>,
    pairs: &[(&str, Option<String>)],
) -> Observation {
    let mut values = base.clone();
    for (k, v) in pairs {
        if let Some(v) = v {
            values.insert((*k).to_string(), v.clone());
        }
    }
    Observation {
        fact,
        source,
        values,
    }
}

/// The facts the log establishes, most telling first: partial loads, the out-of-memory handler's
/// figures aside (signatures.toml has it), the card, the mode, the VRAM state, then the other loads.
pub fn observe(log: &ComfyLog, base: &BTreeMap<String, String>) -> Vec<Observation> {
    let msg = Source::Message;
    let h = |b: Option<u64>| b.map(human);
    let mut out = Vec::new();
    for m in log.loads.iter().filter(|m| m.how == LoadHow::Partial) {
        out.push(observation(
            Fact::ComfyPartialLoad,
            msg,
            base,
            &[
                ("model", m.model.clone()),
                ("loaded", h(m.loaded_bytes)),
                ("offloaded", h(m.offloaded_bytes)),
                ("usable", h(m.usable_bytes)),
                ("matched", Some(m.line.clone())),
            ],
        ));
    }
    if log.vram_total_bytes.is_some() {
        out.push(observation(
            Fact::ComfyLogCard,
            msg,
            base,
            &[
                ("comfy_vram", h(log.vram_total_bytes)),
                ("comfy_ram", h(log.ram_total_bytes)),
            ],
        ));
    }
    if let Some(mode) = log.mode {
        let fact = match mode {
            MemoryMode::Dynamic => Fact::ComfyDynamicVram,
            MemoryMode::Classic => Fact::ComfyClassicLoading,
        };
        out.push(observation(
            fact,
            msg,
            base,
            &[("matched", log.mode_line.clone())],
        ));
    }
    if let Some(s) = &log.vram_state {
        out.push(observation(
            Fact::ComfyVramState,
            msg,
            base,
            &[("comfy_vram_state", Some(s.clone()))],
        ));
    }
    for m in &log.loads {
        let (fact, size) = match m.how {
            LoadHow::Whole => (Fact::ComfyModelLoaded, m.loaded_bytes),
            LoadHow::Dynamic => (Fact::ComfyDynamicVram, m.staged_bytes),
            LoadHow::Partial | LoadHow::Requested => continue,
        };
        out.push(observation(
            fact,
            msg,
            base,
            &[
                ("model", m.model.clone()),
                ("loaded", h(m.loaded_bytes)),
                ("staged", h(size)),
                ("matched", Some(m.line.clone())),
            ],
        ));
    }
    if log.not_understood_count > 0 {
        out.push(observation(
            Fact::ComfyLogUnread,
            msg,
            base,
            &[
                ("count", Some(log.not_understood_count.to_string())),
                ("matched", log.not_understood.first().cloned()),
            ],
        ));
    }
    out
}

/// The log against the planner's plan: another card, another memory mode, or a plan that fits
/// where ComfyUI had to load partially or ran out of memory (or the other way round).
pub fn compare(log: &ComfyLog, plan: &PlanSummary) -> Vec<Observation> {
    let base = BTreeMap::from([
        ("plan_card".to_string(), human(plan.capacity_bytes)),
        ("needed".to_string(), human(plan.needed_bytes)),
    ]);
    let src = Source::Plan;
    let mut out = Vec::new();
    if let Some(v) = log.vram_total_bytes
        && plan.capacity_bytes > 0
        && (v as f64 - plan.capacity_bytes as f64).abs()
            > SAME_CARD_SHARE * plan.capacity_bytes as f64
    {
        out.push(observation(
            Fact::ComfyLogOtherCard,
            src,
            &base,
            &[("comfy_vram", Some(human(v)))],
        ));
    }
    if let (Some(seen), Some(assumed)) = (log.mode, plan.comfy_mode)
        && seen != assumed
    {
        out.push(observation(
            Fact::ComfyLogOtherMode,
            src,
            &base,
            &[
                ("log_mode", Some(mode_name(seen).into())),
                ("plan_mode", Some(mode_name(assumed).into())),
            ],
        ));
    }
    let partial = log.loads.iter().find(|m| m.how == LoadHow::Partial);
    let short = log.oom || partial.is_some();
    let all_whole = !log.loads.is_empty() && log.loads.iter().all(|m| m.how == LoadHow::Whole);
    if plan.fits && short {
        let what = partial.and_then(|m| m.model.clone());
        out.push(observation(
            Fact::ComfyLogShortOfPlan,
            src,
            &base,
            &[("model", what)],
        ));
    } else if !plan.fits && all_whole && !log.oom {
        out.push(observation(Fact::ComfyLogBeatsPlan, src, &base, &[]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines() -> &'static Lines {
        Lines::get()
    }

    #[test]
    fn the_shipped_formats_load() {
        let l = Lines::load(include_str!("../../assets/doctor/comfy_log.toml")).unwrap();
        assert!(l.lines.iter().any(|l| l.event == Event::LoadedPartial));
    }

    #[test]
    fn broken_formats_are_refused() {
        let bad = |f: &str, event: &str| {
            Lines::load(&format!(
                "[[line]]\nid = \"x\"\nevent = \"{event}\"\nformats = [\"{f}\"]\n"
            ))
            .unwrap_err()
        };
        assert!(bad("{model:word} loaded", "requested").contains("literal"));
        assert!(bad("Requested to load {model:wrd}", "requested").contains("hole type"));
        assert!(bad("Requested to load {name:word}", "requested").contains("means nothing"));
        assert!(bad("Requested to load", "requested").contains("lacks"));
        assert!(bad("a {loaded_mb:num}{patches:int}", "loaded_partial").contains("two holes"));
        assert!(bad("Set vram state to: {state:word}", "vram_state").contains("states"));
    }

    #[test]
    fn each_wording_of_a_load_is_read() {
        let read_one = |s: &str| read(s, lines()).unwrap().loads.remove(0);
        // Current: usable_stat, then the figures.
        let m = read_one(
            "Requested to load SDXL\nloaded partially; 5324.81 MB usable, 4900.12 MB loaded, 4897.00 MB offloaded, 256.00 MB buffer reserved, lowvram patches: 0",
        );
        assert_eq!(m.model.as_deref(), Some("SDXL"));
        assert_eq!(m.how, LoadHow::Partial);
        assert_eq!(m.offloaded_bytes, Some((4897.0 * MIB).round() as u64));
        assert_eq!(m.buffer_bytes, Some(256 << 20));
        // Current with no limit: usable_stat is empty, which leaves two spaces.
        let m = read_one("loaded completely;  1560.80 MB loaded, full load: True");
        assert_eq!(
            (m.how, m.usable_bytes, m.model),
            (LoadHow::Whole, None, None)
        );
        // Older: Python's float printing, the no-limit value 1e32 / 2^20.
        let m = read_one("loaded completely 9.5367431640625e+25 1639.406135559082 True");
        assert_eq!(m.usable_bytes, None);
        assert_eq!(
            m.loaded_bytes,
            Some((1639.406135559082 * MIB).round() as u64)
        );
        let m = read_one("loaded partially 5620.0 5619.9912109375 0");
        assert_eq!((m.how, m.offloaded_bytes), (LoadHow::Partial, None));
    }

    #[test]
    fn look_alike_lines_are_not_understood_rather_than_misread() {
        let log = read(
            "Requested to load Lumina2 and free memory\nloaded partially; a lot MB loaded\nSet vram state to: TURBO_VRAM\nMy node: loaded completely every file",
            lines(),
        )
        .unwrap();
        assert_eq!(log.lines_read, 0);
        assert!(log.loads.is_empty(), "{:?}", log.loads);
        assert_eq!(log.vram_state, None);
        // Each holds a known line's words (the older formats' "loaded partially", "loaded
        // completely"), or a VRAM state ComfyUI does not have: listed, not read.
        assert_eq!(log.not_understood_count, 4, "{:?}", log.not_understood);
        assert!(read("nothing from ComfyUI here\nloaded the dishes", lines()).is_none());
    }

    #[test]
    fn requested_models_pair_with_their_loads_in_order() {
        let log = read(
            "Requested to load SDXLClipModel\nRequested to load SDXL\nloaded completely; 9000.00 MB usable, 1560.80 MB loaded, full load: True\nloaded completely; 7000.00 MB usable, 4897.05 MB loaded, full load: True",
            lines(),
        )
        .unwrap();
        let names: Vec<_> = log.loads.iter().map(|m| m.model.clone().unwrap()).collect();
        assert_eq!(names, ["SDXLClipModel", "SDXL"]);
        assert_eq!(log.mode, Some(MemoryMode::Classic));
    }
}
