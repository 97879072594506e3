//! ComfyUI's console log in the doctor (issue 18): the fixtures in tests/data/comfy_logs/ are
//! written line for line from ComfyUI's and comfy-aimdo's format strings (each file says which);
//! the doctor reads the card, the VRAM state, the memory mode and every model load from them, lists
//! a look-alike line it cannot read instead of guessing, and compares the log with a plan.

use vram_doctor::doctor::comfy_log::{Lines, LoadHow, read};
use vram_doctor::doctor::{Context, Fact, Knowledge, PlanSummary, reading};
use vram_doctor::engines::comfyui::memory::MemoryMode;
use vram_doctor::units::human;

const MIB: f64 = 1024.0 * 1024.0;
const CLASSIC: &str = include_str!("data/comfy_logs/classic_sdxl_8gb_partial_oom.log");
const DYNAMIC: &str = include_str!("data/comfy_logs/dynamic_wan_12gb.log");
const OLDER: &str = include_str!("data/comfy_logs/older_flux_8gb_lowvram.log");

fn mib(x: f64) -> u64 {
    (x * MIB).round() as u64
}

fn loads(log: &vram_doctor::doctor::comfy_log::ComfyLog) -> Vec<(String, LoadHow)> {
    log.loads
        .iter()
        .map(|m| (m.model.clone().unwrap_or_default(), m.how))
        .collect()
}

#[test]
fn a_classic_log_shows_the_card_the_partial_load_and_the_oom() {
    let log = read(CLASSIC, Lines::get()).expect("ComfyUI lines");
    assert_eq!(log.vram_total_bytes, Some(mib(8188.0)));
    assert_eq!(log.ram_total_bytes, Some(mib(31943.0)));
    assert_eq!(log.torch_version.as_deref(), Some("2.7.1+cu128"));
    assert_eq!(log.vram_state.as_deref(), Some("NORMAL_VRAM"));
    assert_eq!(log.mode, Some(MemoryMode::Classic));
    assert!(
        log.mode_line
            .as_deref()
            .unwrap()
            .starts_with("Unsupported Pytorch")
    );
    assert_eq!(
        loads(&log),
        [
            ("SDXLClipModel".into(), LoadHow::Whole),
            ("SDXL".into(), LoadHow::Partial),
            ("AutoencoderKL".into(), LoadHow::Whole),
        ]
    );
    let unet = &log.loads[1];
    assert_eq!(unet.loaded_bytes, Some(mib(4864.0)));
    assert_eq!(unet.offloaded_bytes, Some(mib(33.05)));
    assert_eq!(unet.usable_bytes, Some(mib(5120.37)));
    assert!(log.oom);
    assert_eq!(log.exceptions.len(), 1);
    assert_eq!(log.not_understood_count, 0, "{:?}", log.not_understood);
}

#[test]
fn a_dynamic_log_shows_what_was_staged_per_model() {
    let log = read(DYNAMIC, Lines::get()).expect("ComfyUI lines");
    assert_eq!(log.mode, Some(MemoryMode::Dynamic));
    assert_eq!(
        log.gpu.as_deref(),
        Some("NVIDIA GeForce RTX 4070 SUPER"),
        "comfy-aimdo's line behind its aimdo: prefix"
    );
    assert_eq!(log.vram_total_bytes, Some(mib(12282.0)));
    assert_eq!(
        loads(&log),
        [
            ("WanTEModel".into(), LoadHow::Dynamic),
            ("WAN21".into(), LoadHow::Dynamic),
            ("WanVAE".into(), LoadHow::Dynamic),
        ]
    );
    let staged: Vec<u64> = log.loads.iter().filter_map(|m| m.staged_bytes).collect();
    assert_eq!(staged, [mib(6419.0), mib(13627.0), mib(242.0)]);
    assert!(!log.oom);
}

#[test]
fn the_older_wording_is_read_and_a_look_alike_line_is_listed_not_misread() {
    let log = read(OLDER, Lines::get()).expect("ComfyUI lines");
    assert_eq!(log.vram_state.as_deref(), Some("LOW_VRAM"));
    assert_eq!(
        loads(&log),
        [
            ("FluxClipModel_".into(), LoadHow::Whole),
            ("Flux".into(), LoadHow::Partial),
            ("AutoencodingEngine".into(), LoadHow::Whole),
        ]
    );
    // No limit (1e32 / 2^20 MB) is no figure; the older wording does not print what stayed behind.
    assert_eq!(log.loads[0].usable_bytes, None);
    assert_eq!(log.loads[0].loaded_bytes, Some(mib(4903.231597900391)));
    assert_eq!(log.loads[1].offloaded_bytes, None);
    assert_eq!(
        log.mode,
        Some(MemoryMode::Classic),
        "from how the models were loaded"
    );
    assert_eq!(
        log.not_understood,
        ["[MultiGPU] loaded partially across 2 devices"]
    );
}

fn facts_with(text: &str, plan: Option<PlanSummary>) -> Vec<(Fact, String)> {
    let kb = Knowledge::get();
    let r = reading::read(text, kb, None).unwrap();
    let ctx = Context {
        plan,
        ..Context::default()
    };
    ctx.observations(Some(&r))
        .iter()
        .map(|o| {
            (
                o.fact,
                vram_doctor::doctor::diagnosis::evidence_line(kb, o, "en"),
            )
        })
        .collect()
}

#[test]
fn the_doctor_reports_the_log_and_compares_it_with_the_plan() {
    let gib = 1u64 << 30;
    let alone = facts_with(CLASSIC, None);
    assert_eq!(alone[0].0, Fact::ComfyPartialLoad, "{alone:?}");
    let want = format!(
        "SDXL partially: {} on the GPU, {} left in system memory",
        human(mib(4864.0)),
        human(mib(33.05))
    );
    assert!(alone[0].1.contains(&want), "{} / {want}", alone[0].1);
    let line = |f: Fact, facts: &[(Fact, String)]| {
        facts
            .iter()
            .find(|(g, _)| *g == f)
            .map(|(_, l)| l.clone())
            .unwrap_or_else(|| panic!("{f:?} missing from {facts:?}"))
    };
    assert!(line(Fact::ComfyLogCard, &alone).contains("8.00 GiB"));
    assert!(line(Fact::ComfyVramState, &alone).contains("NORMAL_VRAM"));
    line(Fact::ComfyClassicLoading, &alone);
    line(Fact::ComfyOomHandler, &alone);
    // A plan for a 24 GiB card with dynamic VRAM that fits: each difference is named.
    let plan = PlanSummary {
        fits: true,
        needed_bytes: 9 * gib,
        capacity_bytes: 24 * gib,
        comfy_mode: Some(MemoryMode::Dynamic),
    };
    let with = facts_with(CLASSIC, Some(plan.clone()));
    assert!(line(Fact::ComfyLogOtherCard, &with).contains("24.00 GiB"));
    assert!(
        line(Fact::ComfyLogOtherMode, &with).contains("dynamic memory mode; the log shows classic")
    );
    line(Fact::ComfyLogShortOfPlan, &with);
    // The same card and mode: nothing to compare against but the shortfall.
    let same = PlanSummary {
        capacity_bytes: 8 * gib,
        comfy_mode: Some(MemoryMode::Classic),
        ..plan
    };
    let with = facts_with(CLASSIC, Some(same.clone()));
    let kinds: Vec<Fact> = with.iter().map(|(f, _)| *f).collect();
    assert!(!kinds.contains(&Fact::ComfyLogOtherCard), "{kinds:?}");
    assert!(!kinds.contains(&Fact::ComfyLogOtherMode), "{kinds:?}");
    // A plan that does not fit, and a log whose models all loaded whole.
    let short = PlanSummary {
        fits: false,
        comfy_mode: None,
        ..same
    };
    let whole = "Total VRAM 8188 MB, total RAM 31943 MB\nRequested to load SDXL\nloaded completely; 7000.00 MB usable, 4897.05 MB loaded, full load: True";
    line(Fact::ComfyLogBeatsPlan, &facts_with(whole, Some(short)));
}

#[test]
fn diagnose_json_carries_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("comfy.log");
    std::fs::write(&path, DYNAMIC).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(["diagnose", "--json", "--file", path.to_str().unwrap()])
        .output()
        .expect("binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let log = &v["reading"]["comfy_log"];
    assert_eq!(log["mode"], "dynamic", "{log}");
    assert_eq!(log["vram_total_bytes"], mib(12282.0));
    assert_eq!(log["loads"][1]["model"], "WAN21");
    assert_eq!(log["loads"][1]["how"], "dynamic");
    assert_eq!(log["loads"][1]["staged_bytes"], mib(13627.0));
    let evidence: Vec<&str> = v["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.as_str())
        .collect();
    assert!(
        evidence
            .iter()
            .any(|e| e.contains("prepared WAN21 for dynamic VRAM: 13.31 GiB staged")),
        "{evidence:?}"
    );
    assert!(
        evidence
            .iter()
            .any(|e| e.contains("a card of 11.99 GiB and 63.91 GiB of system memory")),
        "{evidence:?}"
    );
}
