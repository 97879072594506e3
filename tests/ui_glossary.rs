//! The planner's words explained where a newcomer meets them (issue 22 item 11): every control
//! of every kind of workload, every choice in a list of jargon, and every part of the memory bar
//! say what they are when the pointer rests on them, in English and in Chinese. The texts are
//! data (`assets/glossary/terms.toml`); these tests walk the planner as a user does and hover.

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use std::collections::BTreeSet;
use vram_doctor::memory::WorkloadFile;
use vram_doctor::types::dtype::WeightFormat;
use vram_doctor::ui::glossary::Glossary;
use vram_doctor::ui::i18n::{self, Lang};
use vram_doctor::ui::{Tab, VramDoctorApp};

#[path = "common/app.rs"]
mod common_app;
use common_app::app_with;

type App = Harness<'static, VramDoctorApp>;

/// Workloads that, together, show every control the planner has.
const WORKLOADS: &[&str] = &[
    // LLM inference: transformers, vLLM (memory utilization), llama.cpp with a MoE model (split)
    "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n",
    "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\nengine = \"vllm\"\n",
    "[gpu]\npreset = \"rtx-4060-ti-16gb\"\n[model]\npreset = \"qwen3-30b-a3b\"\n[run]\nengine = \"llama.cpp\"\nweights = \"q4_k_m\"\n",
    // training, LoRA (rank and targets)
    "[gpu]\npreset = \"rtx-3060-12gb\"\n[model]\npreset = \"llama-3.1-8b\"\n[run]\ntask = \"training\"\nmethod = \"lora\"\n",
    // diffusion: ComfyUI, diffusers with LoRAs, a video model
    "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"flux-dev\"\n[run]\ntask = \"diffusion\"\nengine = \"comfyui\"\n",
    "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"sdxl\"\n[run]\ntask = \"diffusion\"\nengine = \"diffusers\"\nloras = 1\n",
    "[gpu]\npreset = \"rtx-4090\"\n[model]\npreset = \"wan21-t2v-14b\"\n[run]\ntask = \"diffusion\"\n",
    // a game
    "[gpu]\npreset = \"rtx-4060\"\n[model]\npreset = \"cyberpunk-2077\"\n[run]\ntask = \"game\"\n",
];

/// The planner on `toml` in `lang`, with tooltips shown at once (egui waits half a second for a
/// resting pointer; the test has no reason to).
fn planner_on(toml: &str, lang: Lang) -> App {
    let mut h = app_with(
        Harness::builder().with_size([1400.0, 1000.0]),
        Some(Tab::Planner),
        lang,
        None,
    );
    h.ctx.all_styles_mut(|s| s.interaction.tooltip_delay = 0.0);
    h.state_mut().state.planner.workload = WorkloadFile::parse(toml, "test.toml").unwrap();
    h.run();
    h
}

/// Roles of the controls a user sets.
const CONTROLS: [Role; 3] = [Role::Slider, Role::ComboBox, Role::CheckBox];

/// The labels of the planner's controls (and the top bar's), as shown.
fn control_labels(h: &App) -> Vec<(Role, String)> {
    let mut out = Vec::new();
    for role in CONTROLS {
        for n in h.query_all_by_role(role) {
            if let Some(l) = n.accesskit_node().label() {
                out.push((role, l.to_string()));
            }
        }
    }
    out
}

/// Hovers the control and returns whether a tooltip holding `text` appeared.
fn tooltip_shows(h: &mut App, role: Role, label: &str, text: &str) -> bool {
    h.get_by_role_and_label(role, label).hover();
    h.run();
    h.query_all_by_label_contains(text).next().is_some()
}

/// The English key of a control shown as `shown` in `lang` (its `tr` source).
fn english_of(g: &Glossary, lang: Lang, shown: &str) -> Option<String> {
    g.control
        .iter()
        .flat_map(|c| &c.labels)
        .find(|en| i18n::tr_in(lang, en) == shown)
        .cloned()
}

#[test]
fn every_control_explains_itself_when_hovered_in_both_languages() {
    let g = Glossary::get();
    let mut seen = BTreeSet::new();
    let mut missing = BTreeSet::new();
    for lang in [Lang::English, Lang::SimplifiedChinese] {
        for toml in WORKLOADS {
            let mut h = planner_on(toml, lang);
            let controls = control_labels(&h);
            assert!(
                controls.len() >= 5,
                "{toml}: the planner shows its controls"
            );
            for (role, shown) in controls {
                let Some(en) = english_of(g, lang, &shown) else {
                    missing.insert(shown);
                    continue;
                };
                let entry = g.control_entry(&en).unwrap();
                let text = match lang {
                    Lang::English => &entry.text.en,
                    Lang::SimplifiedChinese => &entry.text.zh,
                };
                assert!(
                    tooltip_shows(&mut h, role, &shown, text),
                    "{toml}: hovering {shown:?} shows no explanation"
                );
                seen.insert(en);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "controls without an entry in assets/glossary/terms.toml: {missing:?}"
    );
    for must in [
        "ZeRO stage",
        "LoRA targets",
        "Precision",
        "KV cache",
        "ComfyUI VRAM mode",
    ] {
        assert!(seen.contains(must), "no workload here shows {must}");
    }
}

/// Opens the list of the combo box `label` and returns its choices' labels.
fn choices(h: &mut App, label: &str) -> Vec<String> {
    h.get_by_role_and_label(Role::ComboBox, label).click();
    h.run();
    let list = h.get_by_role(Role::ListBox);
    let out = list
        .query_all_by_role(Role::Button)
        .filter_map(|n| n.accesskit_node().label())
        .collect();
    h.key_press(egui::Key::Escape);
    h.run();
    out
}

/// Every choice of a list of jargon (bf16-mixed, qlora, q4_k_m, lowvram …) has its own
/// explanation, and hovering one in the open list shows it.
#[test]
fn every_jargon_choice_is_explained() {
    let g = Glossary::get();
    let mut missing = BTreeSet::new();
    for toml in WORKLOADS {
        let mut h = planner_on(toml, Lang::English);
        for (role, label) in control_labels(&h) {
            // A control without an entry is the test above's failure.
            let plain = g.control_entry(&label).is_none_or(|e| e.plain_choices);
            if role != Role::ComboBox || plain {
                continue;
            }
            for shown in choices(&mut h, &label) {
                // The GGUF types are listed as "GGUF Q4_0" (`WeightFormat::label`); the
                // glossary keys them by their spelling in workload files.
                let v = match shown.parse::<WeightFormat>() {
                    Ok(f) if f.is_gguf() => f.to_string(),
                    _ => shown,
                };
                if g.choice_entry(&label, &v).is_none() {
                    missing.insert(format!("{label} = {v}"));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "choices without an entry in assets/glossary/terms.toml: {missing:?}"
    );

    let mut h = planner_on(WORKLOADS[3], Lang::English);
    h.get_by_role_and_label(Role::ComboBox, "Precision").click();
    h.run();
    h.get_by_role_and_label(Role::Button, "bf16-mixed").hover();
    h.run();
    let want = &g.choice_entry("Precision", "bf16-mixed").unwrap().text.en;
    assert!(want.contains("fp32 master copy"), "{want}");
    h.get_all_by_label_contains(want).next().unwrap();
}

/// Each part of the bar is a segment of its own that names itself and, hovered, says what it
/// is; no part of any kind of workload lacks an explanation.
#[test]
fn every_bar_segment_explains_its_part() {
    let g = Glossary::get();
    let mut missing = BTreeSet::new();
    for toml in WORKLOADS {
        let mut h = planner_on(toml, Lang::English);
        let (_, result) = h.state_mut().state.planner.plan_result().unwrap();
        for c in result.breakdown().components {
            let Some(entry) = g.part_entry(c.id, &c.label) else {
                missing.insert(format!("{} ({:?})", c.id, c.label));
                continue;
            };
            let segment = h
                .query_all_by_role(Role::Meter)
                .find(|n| {
                    n.accesskit_node()
                        .label()
                        .is_some_and(|l| l.starts_with(&format!("{}: ", c.label)))
                })
                .unwrap_or_else(|| panic!("{toml}: no segment for {}", c.label));
            segment.hover();
            h.run();
            assert!(
                h.query_all_by_label_contains(&entry.text.en)
                    .next()
                    .is_some(),
                "{toml}: hovering the {} segment shows no explanation",
                c.label
            );
        }
    }
    assert!(
        missing.is_empty(),
        "parts without an entry in assets/glossary/terms.toml: {missing:?}"
    );
}

/// A training run keeps no KV cache, so the planner offers no KV cache control for one (issue
/// 22); inference does.
#[test]
fn training_has_no_kv_cache_row() {
    let h = planner_on(WORKLOADS[0], Lang::English);
    assert!(
        h.query_by_role_and_label(Role::ComboBox, "KV cache")
            .is_some()
    );
    let h = planner_on(WORKLOADS[3], Lang::English);
    assert!(
        h.query_by_role_and_label(Role::ComboBox, "KV cache")
            .is_none()
    );
    assert!(
        h.query_by_role_and_label(Role::ComboBox, "Optimizer")
            .is_some()
    );
}

/// Both languages of every entry are filled, Chinese with Chinese.
#[test]
fn every_entry_has_both_languages() {
    let g = Glossary::parse(vram_doctor::ui::glossary::TERMS).unwrap();
    let texts = g
        .control
        .iter()
        .map(|c| (c.labels[0].as_str(), &c.text))
        .chain(g.choice.iter().map(|c| (c.values[0].as_str(), &c.text)))
        .chain(g.part.iter().map(|p| {
            let id = p.ids.first().map(|i| i.as_str());
            (
                id.or(p.labels.first().map(String::as_str)).unwrap(),
                &p.text,
            )
        }));
    for (term, t) in texts {
        assert!(!t.en.trim().is_empty(), "{term}: no English");
        assert!(
            t.zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
            "{term}: the zh text is not Chinese: {:?}",
            t.zh
        );
    }
}
