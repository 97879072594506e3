//! LoRA adapters: which of a model's linear modules `run.lora_targets` selects, and what the
//! adapters on them weigh.
//!
//! The modules are the model's own, named as transformers names them (presets/lora_modules.toml,
//! one layout per family of `model_type`s); a target list or pattern is matched against their
//! full keys by PEFT's rule (peft/tuners/tuners_utils.py `check_target_module_exists`). Each
//! adapted linear of `in → out` gains `lora_A` (r × in) and `lora_B` (out × r): r·(in + out)
//! trainable parameters (peft/tuners/lora/layer.py `LoraLayer.update_layer`).

use serde::Deserialize;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::OnceLock;

use crate::types::arch::ModelArch;
use crate::types::error::BadField;
use crate::types::options::LoraTargets;

#[derive(Deserialize)]
struct Table {
    peft_default: BTreeMap<String, Vec<String>>,
    layout: BTreeMap<String, Layout>,
    experts: BTreeMap<String, ExpertRule>,
}

/// How PEFT maps transformers-4 expert names onto transformers 5's fused expert parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpertRule {
    types: Vec<String>,
    /// The router's old module name (now the parameter `<router>.weight`).
    router: String,
    /// The old names fused into `experts.gate_up_proj`.
    gate_up: Vec<String>,
    /// The old name of `experts.down_proj`.
    down: String,
}

#[derive(Deserialize)]
struct Layout {
    types: Vec<String>,
    blocks: String,
    modules: Vec<ModuleSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModuleSpec {
    name: String,
    #[serde(rename = "in")]
    input: Width,
    out: Width,
    reads: Reads,
    #[serde(default)]
    layers: Blocks,
    #[serde(default)]
    unless: Option<Width>,
}

/// The widths a layout names (presets/lora_modules.toml header).
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
enum Width {
    Hidden,
    Q,
    Kv,
    Qkv,
    Intermediate,
    GateUp,
    Shared,
    SharedGate,
    Vocab,
    QLora,
    QHeads,
    KvA,
    KvLora,
    KvB,
    VHeads,
}

/// The tensor a module reads: modules reading one tensor share its saved copy for backward.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
enum Reads {
    AttnNorm,
    AttnOut,
    QLatent,
    KvLatent,
    MlpNorm,
    MlpAct,
}

impl Reads {
    fn attention(self) -> bool {
        matches!(
            self,
            Reads::AttnNorm | Reads::AttnOut | Reads::QLatent | Reads::KvLatent
        )
    }
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
enum Blocks {
    #[default]
    All,
    Dense,
    Moe,
}

const TABLE_TOML: &str = include_str!("../../presets/lora_modules.toml");
/// The output head's key in every causal-LM class (`*ForCausalLM.lm_head`).
const HEAD: &str = "lm_head";
/// The layout of a model described by hand (no `model_type`).
const FALLBACK: &str = "llama";

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    // The file is part of the program; tests/lora_targets.rs and the unit tests read it.
    T.get_or_init(|| toml::from_str(TABLE_TOML).expect("presets/lora_modules.toml is valid"))
}

impl Width {
    fn of(self, a: &ModelArch) -> f64 {
        let h = f64::from(a.hidden);
        let heads = f64::from(a.heads);
        let shared = a.moe.as_ref().map_or(0.0, |m| {
            f64::from(m.shared_experts) * f64::from(m.expert_intermediate)
        });
        let mla = |f: fn(&crate::types::arch::Mla) -> f64| a.mla.as_ref().map_or(0.0, f);
        match self {
            Width::Hidden => h,
            Width::Q => a.q_dim(),
            Width::Kv => a.kv_dim(),
            Width::Qkv => a.q_dim() + 2.0 * a.kv_dim(),
            Width::Intermediate => f64::from(a.intermediate),
            Width::GateUp => 2.0 * f64::from(a.intermediate),
            Width::Shared => shared,
            Width::SharedGate => f64::from(u8::from(shared > 0.0)),
            Width::Vocab => f64::from(a.vocab),
            Width::QLora => mla(|m| f64::from(m.q_lora_rank.unwrap_or(0))),
            Width::QHeads => mla(|m| f64::from(m.qk_nope_head_dim + m.qk_rope_head_dim)) * heads,
            Width::KvA => mla(|m| f64::from(m.kv_lora_rank + m.qk_rope_head_dim)),
            Width::KvLora => mla(|m| f64::from(m.kv_lora_rank)),
            Width::KvB => mla(|m| f64::from(m.qk_nope_head_dim + m.v_head_dim)) * heads,
            Width::VHeads => mla(|m| f64::from(m.v_head_dim)) * heads,
        }
    }
}

/// The adapters `run.lora_targets` puts on a model, summed over its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Adapters {
    /// Σ (in + out) over the adapted modules: the trainable parameters at rank 1.
    pub width_sum: f64,
    /// The widest input or output of an adapted module (the largest adapter matrix per rank).
    pub widest: f64,
    /// Adapted linears in all blocks together.
    pub count: f64,
    /// Σ input widths of the adapted linears in the blocks: what their `lora_A` inputs save
    /// when each adapter casts its own copy (autocast).
    pub inputs_each: f64,
    /// The same where modules reading one tensor share its saved copy (no autocast).
    pub inputs_shared: f64,
    /// The output head is adapted.
    pub head: bool,
    /// Routed experts (or their router) are adapted; what their adapters save for backward is
    /// not counted in the activations.
    pub experts: bool,
}

impl Adapters {
    /// Trainable LoRA parameters at rank `r`.
    pub fn params(&self, r: u32) -> f64 {
        f64::from(r) * self.width_sum
    }
}

/// What a target selection found on a model.
struct Selection {
    adapters: Adapters,
    /// Names or the pattern that matched no module of the model.
    unmatched: Vec<String>,
    /// Why the selection cannot be made at all.
    problem: Option<String>,
    layout: &'static str,
    /// The layout was assumed (no `model_type`, or one the table does not list).
    assumed: bool,
    /// The modules one block of the model has, for messages.
    module_names: Vec<&'static str>,
    /// The leaf names of the adapted linear modules, in the model's order.
    leaves: Vec<String>,
    /// (how many, elements per rank) of every adapter matrix: `lora_A` is rank × input,
    /// `lora_B` output × rank.
    matrices: Vec<(f64, f64)>,
}

/// One linear module of the model, by its full key.
struct Linear {
    key: String,
    /// `<blocks>.<i>`; empty for the head.
    block: String,
    input: f64,
    out: f64,
    reads: Option<Reads>,
}

impl Linear {
    fn leaf(&self) -> &str {
        self.key.rsplit('.').next().unwrap_or(&self.key)
    }
    fn attention(&self) -> bool {
        self.reads.is_some_and(Reads::attention)
    }
}

/// peft `check_target_module_exists` for a list: the key is an entry or ends with `.entry`.
fn list_matches(key: &str, name: &str) -> bool {
    key == name
        || (key.len() > name.len()
            && key.ends_with(name)
            && key.as_bytes()[key.len() - name.len() - 1] == b'.')
}

fn layout_of(a: &ModelArch) -> (&'static str, &'static Layout, bool) {
    let t = table();
    let found = a.model_type.as_deref().and_then(|mt| {
        t.layout
            .iter()
            .find(|(_, l)| l.types.iter().any(|x| x == mt))
    });
    match found {
        Some((name, l)) => (name.as_str(), l, false),
        None => {
            let (name, l) = t
                .layout
                .get_key_value(FALLBACK)
                .expect("presets/lora_modules.toml has the llama layout");
            (name.as_str(), l, true)
        }
    }
}

/// Blocks `0..dense` have a dense MLP; the rest hold routed experts.
fn dense_blocks(a: &ModelArch) -> u32 {
    a.moe
        .as_ref()
        .map_or(a.layers, |m| m.dense_layers.min(a.layers))
}

/// The model's linear modules in block order, then the head; and the modules of a block.
fn linears(a: &ModelArch, layout: &'static Layout) -> (Vec<Linear>, Vec<&'static str>) {
    let dense = dense_blocks(a);
    let mut out = Vec::new();
    let mut names: Vec<&'static str> = Vec::new();
    for block in 0..a.layers {
        let moe = block >= dense;
        for m in &layout.modules {
            let present = match m.layers {
                Blocks::All => true,
                Blocks::Dense => !moe,
                Blocks::Moe => moe,
            };
            let (input, o) = (m.input.of(a), m.out.of(a));
            if !present || input == 0.0 || o == 0.0 || m.unless.is_some_and(|u| u.of(a) > 0.0) {
                continue;
            }
            if !names.contains(&m.name.as_str()) {
                names.push(m.name.as_str());
            }
            let block = format!("{}.{block}", layout.blocks);
            out.push(Linear {
                key: format!("{block}.{}", m.name),
                block,
                input,
                out: o,
                reads: Some(m.reads),
            });
        }
    }
    out.push(Linear {
        key: HEAD.to_string(),
        block: String::new(),
        input: f64::from(a.hidden),
        out: f64::from(a.vocab),
        reads: None,
    });
    (out, names)
}

/// PEFT's transformers-5 expert rule for this model, if its type has one and it has experts.
fn expert_rule(a: &ModelArch) -> Option<&'static ExpertRule> {
    a.moe.as_ref()?;
    let mt = a.model_type.as_deref()?;
    table()
        .experts
        .values()
        .find(|r| r.types.iter().any(|t| t == mt))
}

impl ExpertRule {
    fn old_names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.router.as_str())
            .chain(self.gate_up.iter().map(String::as_str))
            .chain(std::iter::once(self.down.as_str()))
    }

    /// A list entry targets an expert parameter (`_convert_peft_config_moe`: the entry equals
    /// the old name or ends with `.old`).
    fn maps(&self, entry: &str) -> bool {
        self.old_names().any(|o| list_matches(entry, o))
    }
}

fn push_unique(l: &mut Vec<String>, s: &str) {
    if !l.iter().any(|x| x == s) {
        l.push(s.to_string());
    }
}

/// The list PEFT matches module keys with, where it turns the user's targets into one: a
/// user's list or PEFT's default, and under an expert rule also "all-linear" and a pattern
/// (`_resolve_string_target_modules`). `Ok(None)`: matched directly (keyword, plain pattern).
fn peft_list(
    a: &ModelArch,
    targets: &LoraTargets,
    rule: Option<&ExpertRule>,
    mods: &[Linear],
    regex: Option<&regex::Regex>,
    layout: &Layout,
) -> Result<Option<Vec<String>>, String> {
    Ok(match (targets, rule) {
        (LoraTargets::Names(n), _) => Some(n.clone()),
        (LoraTargets::Default, Some(_)) => {
            return Err("PEFT's conversion for this model's fused experts leaves target_modules empty when none is given, and PEFT refuses (peft/utils/transformers_weight_conversion.py _convert_peft_config_moe); name the modules".into());
        }
        (LoraTargets::Default, None) => {
            let key = a.model_type.as_deref().unwrap_or(FALLBACK);
            match table().peft_default.get(key) {
                Some(n) => Some(n.clone()),
                None => {
                    return Err(format!(
                        "PEFT has no default target_modules for model_type {key} (peft/utils/constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING); name the modules"
                    ));
                }
            }
        }
        (LoraTargets::AllLinear, Some(r)) => {
            let mut l: Vec<String> = Vec::new();
            for m in mods.iter().filter(|m| m.reads.is_some()) {
                push_unique(&mut l, m.leaf());
            }
            for old in r.old_names() {
                push_unique(&mut l, old);
            }
            Some(l)
        }
        (LoraTargets::Regex(_), Some(r)) => {
            let re = regex.ok_or("the pattern does not compile")?;
            let mut l: Vec<String> = Vec::new();
            for m in mods {
                if re.is_match(&m.key) || re.is_match(&format!("{}.weight", m.key)) {
                    push_unique(&mut l, m.leaf());
                }
            }
            for i in dense_blocks(a)..a.layers {
                let mlp = format!("{}.{i}.mlp", layout.blocks);
                if re.is_match(&format!("{mlp}.{}", r.router)) {
                    push_unique(&mut l, &r.router);
                }
                for old in r.gate_up.iter().chain([&r.down]) {
                    if re.is_match(&format!("{mlp}.experts.{old}")) {
                        push_unique(&mut l, old);
                    }
                }
            }
            // Nothing matched: PEFT leaves the string to its not-found error.
            (!l.is_empty()).then_some(l)
        }
        _ => None,
    })
}

/// Selections a thread keeps: the planner's search estimates thousands of combinations of one
/// model and one target list (5 134 selections for one plan of a Llama-3.1-8B training run,
/// `benches/plan_speed.rs` training_needs_plan), and a selection builds the key of each of the
/// model's linear modules; the workloads a planner and its previews hold at once are few.
const REMEMBERED: usize = 8;

/// What `targets` selects on `a`, found once per model and target list (`find`), since it
/// depends on nothing else.
fn select(a: &ModelArch, targets: &LoraTargets) -> Rc<Selection> {
    type Memo = Vec<(ModelArch, LoraTargets, Rc<Selection>)>;
    thread_local! {
        static MEMO: RefCell<Memo> = const { RefCell::new(Vec::new()) };
    }
    MEMO.with_borrow_mut(|memo| {
        if let Some(i) = memo.iter().position(|(m, t, _)| t == targets && m == a) {
            // Most recent last, so the least recently used leaves first.
            let hit = memo.remove(i);
            let s = Rc::clone(&hit.2);
            memo.push(hit);
            return s;
        }
        let s = Rc::new(find(a, targets));
        if memo.len() == REMEMBERED {
            memo.remove(0);
        }
        memo.push((a.clone(), targets.clone(), Rc::clone(&s)));
        s
    })
}

fn find(a: &ModelArch, targets: &LoraTargets) -> Selection {
    let (layout_name, layout, assumed) = layout_of(a);
    let (mods, module_names) = linears(a, layout);
    let mut s = Selection {
        adapters: Adapters::default(),
        unmatched: Vec::new(),
        problem: None,
        layout: layout_name,
        assumed,
        module_names,
        leaves: Vec::new(),
        matrices: Vec::new(),
    };
    let regex = match targets {
        LoraTargets::Regex(p) => match regex::Regex::new(&format!("^(?:{p})$")) {
            Ok(r) => Some(r),
            Err(e) => {
                s.problem = Some(format!("the pattern '{p}' does not compile: {e}"));
                return s;
            }
        },
        _ => None,
    };
    let rule = expert_rule(a);
    let list = match peft_list(a, targets, rule, &mods, regex.as_ref(), layout) {
        Ok(l) => l,
        Err(e) => {
            s.problem = Some(e);
            return s;
        }
    };
    // Under an expert rule the entries naming experts leave the module list.
    let (module_list, expert_entries): (Option<Vec<String>>, Vec<String>) = match (rule, &list) {
        (Some(r), Some(l)) => {
            let (e, m): (Vec<String>, Vec<String>) = l.iter().cloned().partition(|t| r.maps(t));
            (Some(m), e)
        }
        _ => (list.clone(), Vec::new()),
    };
    let ad = &mut s.adapters;
    let mut any = false;
    // Per block and tensor read: the widest adapted input reading it.
    let mut read: BTreeMap<(&str, Reads), f64> = BTreeMap::new();
    for m in &mods {
        let hit = match (targets, &module_list) {
            (_, Some(l)) => l.iter().any(|n| list_matches(&m.key, n)),
            (LoraTargets::AllLinear, None) => m.reads.is_some(),
            (LoraTargets::Attention, None) => m.attention(),
            (LoraTargets::Regex(_), None) => regex.as_ref().is_some_and(|r| r.is_match(&m.key)),
            _ => false,
        };
        if !hit {
            continue;
        }
        any = true;
        push_unique(&mut s.leaves, m.leaf());
        ad.width_sum += m.input + m.out;
        ad.widest = ad.widest.max(m.input).max(m.out);
        ad.count += 1.0;
        s.matrices.extend([(1.0, m.input), (1.0, m.out)]);
        match m.reads {
            Some(r) => {
                ad.inputs_each += m.input;
                let w = read.entry((m.block.as_str(), r)).or_insert(0.0);
                *w = w.max(m.input);
            }
            None => ad.head = true,
        }
    }
    ad.inputs_shared = read.values().sum();
    if let (Some(r), Some(moe)) = (rule, &a.moe) {
        let has = |old: &str| expert_entries.iter().any(|t| list_matches(t, old));
        let gate_up: Vec<&String> = r.gate_up.iter().filter(|o| has(o)).collect();
        if !gate_up.is_empty() && gate_up.len() < r.gate_up.len() {
            let missing: Vec<&String> = r.gate_up.iter().filter(|o| !has(o)).collect();
            s.problem = Some(format!(
                "PEFT cannot adapt {gate_up:?} without {missing:?}: in transformers 5 they are one fused expert parameter, experts.gate_up_proj (peft/utils/transformers_weight_conversion.py _convert_peft_config_moe)"
            ));
            return s;
        }
        let blocks = f64::from(a.layers - dense_blocks(a));
        let (h, e, ei) = (
            f64::from(a.hidden),
            f64::from(moe.experts),
            f64::from(moe.expert_intermediate),
        );
        let fused = r.gate_up.len() as f64;
        let mut add = |width: f64, widest: f64, a_b: [f64; 2]| {
            s.matrices.extend(a_b.map(|w| (blocks, w)));
            ad.width_sum += blocks * width;
            ad.widest = ad.widest.max(widest);
            ad.count += blocks;
            ad.experts |= blocks > 0.0;
            any |= blocks > 0.0;
        };
        if has(&r.router) {
            add(h + e, h.max(e), [h, e]);
        }
        if !gate_up.is_empty() {
            // One adapter of `fused` × the rank over experts × (hidden → fused · intermediate).
            add(
                fused * e * (h + fused * ei),
                fused * e * h.max(fused * ei),
                [fused * e * h, fused * e * fused * ei],
            );
        }
        if has(&r.down) {
            add(e * (ei + h), e * ei.max(h), [e * ei, e * h]);
        }
    }
    // The user's own names, each of which must name something of the model.
    match targets {
        LoraTargets::Names(n) => {
            let experts = rule.is_some() && dense_blocks(a) < a.layers;
            for name in n {
                let found = mods.iter().any(|m| list_matches(&m.key, name))
                    || (experts && rule.is_some_and(|r| r.maps(name)));
                if !found {
                    s.unmatched.push(name.clone());
                }
            }
        }
        _ if !any => s.unmatched.push(targets.to_string()),
        _ => {}
    }
    s
}

/// The adapters `targets` puts on `a`. Names that match nothing add nothing; `check` is what
/// refuses them (the workload is checked when it is read).
pub fn adapters(a: &ModelArch, targets: &LoraTargets) -> Adapters {
    select(a, targets).adapters
}

/// The adapted modules as leaf names (`q_proj`, `lm_head` …), where adapting those names in
/// every block selects exactly what `targets` does: what a tool taking only module names
/// applied to every layer (torchtune's builders, Unsloth's `target_modules`) can be given.
/// `None` when the targets pick some blocks only, routed experts, or nothing valid.
pub fn leaf_names(a: &ModelArch, targets: &LoraTargets) -> Option<Vec<String>> {
    let s = select(a, targets);
    if s.problem.is_some() || !s.unmatched.is_empty() || s.adapters.experts {
        return None;
    }
    let again = LoraTargets::from_names(&s.leaves).ok()?;
    (select(a, &again).adapters == s.adapters).then(|| s.leaves.clone())
}

/// Trainable LoRA parameters at rank `rank` that sit in adapter matrices of at least
/// `min_elements` elements (bitsandbytes pages only the states of such tensors).
pub fn params_in_matrices_of(
    a: &ModelArch,
    targets: &LoraTargets,
    rank: u32,
    min_elements: f64,
) -> f64 {
    let r = f64::from(rank);
    select(a, targets)
        .matrices
        .iter()
        .filter(|(_, w)| r * w >= min_elements)
        .map(|(n, w)| n * r * w)
        .sum()
}

/// Refuses a target list naming a module the model does not have (PEFT itself raises only when
/// nothing matches; a misspelt name among good ones would otherwise go unnoticed).
pub fn check(a: &ModelArch, targets: &LoraTargets) -> Result<(), BadField> {
    let s = select(a, targets);
    let field = LoraTargets::FIELD;
    if let Some(p) = &s.problem {
        return Err(BadField::from(format!("{field} = '{targets}': {p}")));
    }
    if s.unmatched.is_empty() && s.adapters.count > 0.0 {
        return Ok(());
    }
    let what = if s.unmatched.is_empty() {
        "matches no linear module".to_string()
    } else {
        format!(
            "{} no module of this model",
            if s.unmatched.len() == 1 {
                format!("'{}' matches", s.unmatched[0])
            } else {
                format!("'{}' match", s.unmatched.join("', '"))
            }
        )
    };
    let whose = if s.assumed {
        format!(
            "module names of a {} model are assumed ({}; set model.model_type to name the family)",
            s.layout,
            a.model_type
                .as_deref()
                .map_or("no model_type".to_string(), |t| format!(
                    "model_type {t} is not in presets/lora_modules.toml"
                ))
        )
    } else {
        format!("its {} layout", s.layout)
    };
    let experts = if a.moe.is_some() {
        "; routed experts are fused parameters in transformers 5, not Linear modules, so target_modules cannot name them"
    } else {
        ""
    };
    Err(BadField::from(format!(
        "{field} = '{targets}': {what}; the modules of each block ({whose}) are {}, and {HEAD} is the output head{experts}",
        s.module_names.join(", ")
    )))
}

/// `LoraConfig(target_modules=...)` for a target selection on a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeftTargets {
    /// `"all-linear"`.
    AllLinear,
    /// A list of names (leaf names, or `attn.c_proj`-style suffixes where a leaf name alone
    /// would also match a module of another part).
    List(Vec<String>),
    /// A regular expression string.
    Pattern(String),
}

/// What PEFT is given for `targets` on `a`: keywords become the model's own module names.
pub fn peft_targets(a: &ModelArch, targets: &LoraTargets) -> PeftTargets {
    let (_, layout, _) = layout_of(a);
    match targets {
        LoraTargets::AllLinear => PeftTargets::AllLinear,
        LoraTargets::Regex(p) => PeftTargets::Pattern(p.clone()),
        LoraTargets::Names(n) => PeftTargets::List(n.clone()),
        LoraTargets::Default => {
            let key = a.model_type.as_deref().unwrap_or(FALLBACK);
            let names = table().peft_default.get(key).cloned().unwrap_or_default();
            PeftTargets::List(names)
        }
        LoraTargets::Attention => {
            let (mods, _) = linears(a, layout);
            let leaf = |n: &str| n.rsplit('.').next().unwrap_or(n).to_string();
            let mut out: Vec<String> = Vec::new();
            for m in layout.modules.iter().filter(|m| m.reads.attention()) {
                // Only modules this model has (q_proj or q_a_proj, per q_lora_rank).
                if !mods
                    .iter()
                    .any(|x| x.key.ends_with(&format!(".{}", m.name)))
                {
                    continue;
                }
                let short = leaf(&m.name);
                let clash = layout
                    .modules
                    .iter()
                    .any(|o| !o.reads.attention() && leaf(&o.name) == short);
                push_unique(&mut out, if clash { &m.name } else { &short });
            }
            PeftTargets::List(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::arch::tests::llama31_8b;

    fn names(n: &[&str]) -> LoraTargets {
        LoraTargets::from_names(n).unwrap()
    }

    #[test]
    fn llama_8b_rank_16_all_linear() {
        // PEFT prints 41,943,040 trainable parameters for Llama-3-8B, r=16, all linear layers:
        // 16 × 32 × [(4096+4096)+(4096+1024)·2+(4096+4096) + 3·(4096+14336)].
        let a = llama31_8b();
        assert_eq!(
            adapters(&a, &LoraTargets::AllLinear).params(16),
            41_943_040.0
        );
        let qv = 8.0 * 32.0 * (8192.0 + 5120.0);
        assert_eq!(adapters(&a, &LoraTargets::Default).params(8), qv);
        // A list, a suffix list and a pattern that name the same modules weigh the same.
        for t in [
            names(&["q_proj", "v_proj"]),
            names(&["self_attn.q_proj", "self_attn.v_proj"]),
            r".*\.(q|v)_proj".parse().unwrap(),
        ] {
            assert_eq!(adapters(&a, &t).params(8), qv, "{t}");
            assert_eq!(check(&a, &t), Ok(()));
        }
        // One layer only, by a pattern over the key.
        let one: LoraTargets = r"model\.layers\.0\.self_attn\.q_proj".parse().unwrap();
        assert_eq!(adapters(&a, &one).params(8), 8.0 * 8192.0);
    }

    #[test]
    fn a_name_the_model_lacks_is_named() {
        let a = llama31_8b();
        let e = check(&a, &names(&["q_proj", "c_attn"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'c_attn'") && e.contains("run.lora_targets"),
            "{e}"
        );
        assert!(
            e.contains("self_attn.q_proj"),
            "the model's modules are listed: {e}"
        );
        let e = check(&a, &"mlp\\..*_projection".parse().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("mlp\\..*_projection"), "{e}");
    }

    #[test]
    fn the_head_is_left_out_of_all_linear_but_may_be_named() {
        let a = llama31_8b();
        let all = adapters(&a, &LoraTargets::AllLinear);
        let with_head = adapters(&a, &names(&["q_proj", "lm_head"]));
        assert!(!all.head && with_head.head);
        assert_eq!(
            with_head.params(1),
            32.0 * 8192.0 + 4096.0 + 128_256.0,
            "lm_head adds hidden + vocab per rank"
        );
    }

    #[test]
    fn keywords_become_the_model_s_own_names_for_peft() {
        let mut gpt2 = llama31_8b();
        gpt2.model_type = Some("gpt2".into());
        assert_eq!(
            peft_targets(&gpt2, &LoraTargets::Attention),
            PeftTargets::List(vec!["c_attn".into(), "attn.c_proj".into()])
        );
        assert_eq!(
            peft_targets(&llama31_8b(), &LoraTargets::Default),
            PeftTargets::List(vec!["q_proj".into(), "v_proj".into()])
        );
        // What the export names weighs what the keyword does.
        let PeftTargets::List(l) = peft_targets(&gpt2, &LoraTargets::Attention) else {
            unreachable!()
        };
        assert_eq!(
            adapters(
                &gpt2,
                &names(&l.iter().map(String::as_str).collect::<Vec<_>>())
            ),
            adapters(&gpt2, &LoraTargets::Attention)
        );
    }

    #[test]
    fn leaf_names_say_a_selection_as_names_where_they_can() {
        let a = llama31_8b();
        let all = leaf_names(&a, &LoraTargets::AllLinear).unwrap();
        assert_eq!(
            all,
            [
                "q_proj",
                "k_proj",
                "v_proj",
                "o_proj",
                "gate_proj",
                "up_proj",
                "down_proj"
            ]
        );
        let qv: LoraTargets = r".*\.(q|v)_proj".parse().unwrap();
        assert_eq!(leaf_names(&a, &qv).unwrap(), ["q_proj", "v_proj"]);
        // One layer only is not a per-name selection.
        let one: LoraTargets = r"model\.layers\.0\.self_attn\.q_proj".parse().unwrap();
        assert_eq!(leaf_names(&a, &one), None);
        // gpt2's attention output `attn.c_proj` shares its leaf name with the MLP's.
        let mut gpt2 = llama31_8b();
        gpt2.model_type = Some("gpt2".into());
        assert_eq!(leaf_names(&gpt2, &LoraTargets::Attention), None);
    }

    #[test]
    fn a_remembered_selection_is_the_one_found() {
        // More model × target pairs than are remembered, asked twice in turn and once changed,
        // so that hits, evictions and a model that differs only in one width are all seen.
        let base = llama31_8b();
        let mut wider = llama31_8b();
        wider.intermediate += 128;
        let targets: Vec<LoraTargets> = [
            "all-linear",
            "attention",
            "default",
            "q_proj,v_proj",
            "down_proj",
            r".*\.(q|v)_proj",
        ]
        .iter()
        .map(|t| t.parse().unwrap())
        .collect();
        for _ in 0..2 {
            for a in [&base, &wider] {
                for t in &targets {
                    assert_eq!(select(a, t).adapters, find(a, t).adapters, "{t}");
                }
            }
        }
        assert_ne!(
            adapters(&base, &LoraTargets::AllLinear),
            adapters(&wider, &LoraTargets::AllLinear)
        );
    }

    #[test]
    fn every_layout_reads_and_has_its_fallback() {
        let t = table();
        assert!(t.layout.contains_key(FALLBACK));
        let mut seen = std::collections::BTreeSet::new();
        for l in t.layout.values() {
            for ty in &l.types {
                assert!(seen.insert(ty.as_str()), "{ty} is in two layouts");
            }
        }
    }
}
