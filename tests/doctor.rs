//! The doctor end to end: every known error message is recognised, classified and leads the
//! wizard to the right step; the wizard's state round-trips and answers behave.

use serde::Deserialize;
use vram_doctor::doctor::knowledge::Cost;
use vram_doctor::doctor::reading::read;
use vram_doctor::doctor::{Context, Knowledge, LiveSnapshot, Platform, View, WizardState};

#[derive(Deserialize)]
struct Fixtures {
    message: Vec<Fixture>,
}

#[derive(Deserialize)]
struct Fixture {
    id: String,
    class: Option<String>,
    stop: String,
    text: String,
}

fn fixtures() -> Vec<Fixture> {
    let f: Fixtures =
        toml::from_str(include_str!("data/oom_messages.toml")).expect("fixture file parses");
    f.message
}

fn kb() -> &'static Knowledge {
    Knowledge::get()
}

#[test]
fn every_committed_message_is_recognised_classified_and_routed() {
    let all = fixtures();
    assert!(all.len() >= 80, "fixture file lost entries: {}", all.len());
    for f in &all {
        let r = read(&f.text, kb(), None).unwrap();
        assert!(r.recognised(), "[{}] not recognised", f.id);
        let primary = r
            .classification
            .as_ref()
            .map(|c| serde_json::to_value(c.classes[0]).unwrap());
        match &f.class {
            Some(c) => assert_eq!(
                primary.as_ref().and_then(|v| v.as_str()),
                Some(c.as_str()),
                "[{}] class",
                f.id
            ),
            None => assert!(
                r.figures.is_none(),
                "[{}] parsed figures unexpectedly: {:?}",
                f.id,
                r.figures
            ),
        }
        let s = WizardState::start(kb(), &kb().root, r.observations.clone()).unwrap();
        assert_eq!(s.node, f.stop, "[{}] wizard stopped elsewhere", f.id);
        if let View::Result { diagnosis, .. } = s.view(kb(), "en").unwrap() {
            assert!(
                !diagnosis.causes.is_empty() && !diagnosis.fixes.is_empty(),
                "[{}] empty result",
                f.id
            );
            // By the likeliest cause, then by cost; fixes that cannot help are apart.
            let rank = |fix: &vram_doctor::doctor::diagnosis::FixLine| {
                diagnosis
                    .causes
                    .iter()
                    .position(|c| fix.for_causes.contains(&c.id))
            };
            assert!(
                diagnosis
                    .fixes
                    .windows(2)
                    .all(|w| { (rank(&w[0]), w[0].cost) <= (rank(&w[1]), w[1].cost) }),
                "[{}] fixes not by cause, then cost",
                f.id
            );
            if f.class.is_some() {
                assert!(
                    !diagnosis.causes[0].evidence.is_empty(),
                    "[{}] top cause shows no evidence",
                    f.id
                );
            }
        }
        // Every step the evidence took says why.
        for step in s.history(kb(), "en") {
            assert!(
                step.evidence.is_some(),
                "[{}] auto step '{}' without evidence",
                f.id,
                step.question
            );
        }
    }
}

/// The TEXT blocks of the research file (`TEXT:` lines and their continuation lines).
fn research_texts(file: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut id = String::new();
    let mut cur: Option<(String, Vec<&str>)> = None;
    let ends = |l: &str| {
        let t = l.trim_start();
        t.is_empty()
            || ["NOTES", "SOURCE", "OLD-FORMAT", "-----", "SECTION", "["]
                .iter()
                .any(|p| t.starts_with(p))
    };
    for line in file.lines() {
        if let Some(rest) = line.strip_prefix('[')
            && let Some(end) = rest.find(']')
        {
            id = rest[..end].to_string();
        }
        let t = line.trim_start();
        if t.starts_with("TEXT")
            && let Some(colon) = t.find(':')
        {
            out.extend(cur.take().map(|(i, l)| (i, l.join("\n"))));
            cur = Some((id.clone(), vec![&t[colon + 1..]]));
            continue;
        }
        if cur.is_some() && ends(line) {
            out.extend(cur.take().map(|(i, l)| (i, l.join("\n"))));
        } else if let Some((_, l)) = cur.as_mut() {
            l.push(line);
        }
    }
    out.extend(cur.map(|(i, l)| (i, l.join("\n"))));
    // The first TEXT is the file's own legend, before any ID.
    out.into_iter().filter(|(i, _)| !i.is_empty()).collect()
}

#[test]
fn shared_research_messages_are_all_recognised_when_present() {
    let Ok(file) = std::fs::read_to_string("../shared/research/oom_messages.txt") else {
        eprintln!(
            "../shared/research/oom_messages.txt not present; the committed copy is tested above"
        );
        return;
    };
    let texts = research_texts(&file);
    assert!(texts.len() >= 70, "extracted only {} messages", texts.len());
    let committed = fixtures();
    // "P10" is committed as "P10a", "P10b": the research ID plus at most one letter.
    let has_fixture = |id: &str| {
        committed.iter().any(|f| {
            f.id.strip_prefix(id)
                .is_some_and(|rest| rest.len() <= 1 && rest.chars().all(|c| c.is_ascii_lowercase()))
        })
    };
    for (id, text) in &texts {
        let r = read(text, kb(), None).unwrap();
        assert!(r.recognised(), "[{id}] not recognised: {text}");
        assert!(
            has_fixture(id),
            "[{id}] has no committed copy in tests/data/oom_messages.toml"
        );
    }
}

#[test]
fn evidence_lines_carry_the_figures() {
    let p6 = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.70 GiB. GPU 0 has a total capacty of 6.00 GiB of which 0 bytes is free. Of the allocated memory 2.93 GiB is allocated by PyTorch, and 2.30 GiB is reserved by PyTorch but unallocated.";
    let r = read(p6, kb(), None).unwrap();
    let s = WizardState::start(kb(), &kb().root, r.observations).unwrap();
    let View::Result { diagnosis, .. } = s.view(kb(), "en").unwrap() else {
        panic!("no result")
    };
    assert_eq!(diagnosis.causes[0].id, "fragmentation");
    let ev = diagnosis.causes[0].evidence.join(" ");
    assert!(ev.contains("2.30 GiB") && ev.contains("1.70 GiB"), "{ev}");
    let first = &diagnosis.fixes[0];
    assert_eq!(first.cost, Cost::Free);
    assert!(
        diagnosis
            .fixes
            .iter()
            .any(|f| f.copy.as_deref() == Some("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"))
    );
}

#[test]
fn planner_links_carry_the_card_size() {
    let p2 = "CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 11.06 MiB is free. Including non-PyTorch memory, this process has 23.60 GiB memory in use. Of the allocated memory 22.90 GiB is allocated by PyTorch, and 194.87 MiB is reserved by PyTorch but unallocated.";
    let r = read(p2, kb(), None).unwrap();
    let mut s = WizardState::start(kb(), &kb().root, r.observations).unwrap();
    assert_eq!(s.node, "oom_when");
    // At the open question the evidence already points at a shortage.
    let early = s.evidence_diagnosis(kb(), "en");
    assert_eq!(early.causes[0].id, "workload_too_big");
    assert!(!early.causes[0].evidence.is_empty());
    s.answer(kb(), 1).unwrap(); // at the first training step
    let View::Result { diagnosis, .. } = s.view(kb(), "en").unwrap() else {
        panic!("no result")
    };
    let linked: Vec<_> = diagnosis
        .fixes
        .iter()
        .filter_map(|f| f.planner.as_ref())
        .collect();
    assert!(!linked.is_empty());
    assert!(
        linked
            .iter()
            .all(|p| p.get("gpu.vram_gib").map(String::as_str) == Some("23.65")),
        "{linked:?}"
    );
}

#[test]
fn planner_links_carry_the_engine() {
    let v1 = "ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be stored in KV cache (3664). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.";
    let r = read(v1, kb(), None).unwrap();
    let s = WizardState::start(kb(), &kb().root, r.observations).unwrap();
    let View::Result { diagnosis, .. } = s.view(kb(), "en").unwrap() else {
        panic!("no result")
    };
    // vLLM's own flag, not the generic advice for every runner.
    assert!(!diagnosis.fixes.iter().any(|f| f.id == "lower_context"));
    let ctx = diagnosis
        .fixes
        .iter()
        .find(|f| f.id == "vllm_max_model_len")
        .expect("context fix");
    let p = ctx.planner.as_ref().expect("planner link");
    assert_eq!(p.get("run.engine").map(String::as_str), Some("vllm"));
    assert_eq!(p.get("run.seq").map(String::as_str), Some("32768"));
    // The message's own workload: vLLM at the context it asked for.
    let w = diagnosis
        .planner
        .as_ref()
        .expect("the message names its engine");
    assert_eq!(w.get("run.engine").map(String::as_str), Some("vllm"));
    assert_eq!(w.get("run.seq").map(String::as_str), Some("4096"));
}

#[test]
fn live_numbers_answer_steps_and_rank_causes() {
    let gib = 1u64 << 30;
    let ctx = Context {
        live: Some(LiveSnapshot {
            total_bytes: 8 * gib,
            used_bytes: 8 * gib - 50 * (1 << 20),
            other_processes_bytes: Some(3 * gib),
            shared_used_bytes: Some(2 * gib),
            shared_rising: true,
        }),
        plan: None,
        platform: Some(Platform::Windows),
        timeline: Vec::new(),
    };
    let obs = ctx.observations(None);
    let s = WizardState::start(kb(), &kb().root, obs).unwrap();
    // No message: the spill signal leads to the shared-memory tree and Windows answers the OS.
    assert_eq!(s.node, "shared_choice");
    let h = s.history(kb(), "en");
    assert!(h.iter().all(|st| st.evidence.is_some()));
}

#[test]
fn answers_back_and_state_round_trip() {
    let mut s = WizardState::start(kb(), &kb().root, Vec::new()).unwrap();
    assert_eq!(s.node, "symptom");
    let e = s.answer(kb(), 99).unwrap_err();
    assert!(e.to_string().contains("choose 1 to"), "{e}");
    s.answer(kb(), 0).unwrap(); // a game
    s.answer(kb(), 1).unwrap(); // DEVICE_REMOVED
    assert_eq!(s.node, "game_oc");
    s.back();
    assert_eq!(s.node, "game_symptom");
    s.answer(kb(), 3).unwrap(); // stutter
    s.answer(kb(), 0).unwrap(); // other programs open
    let json = serde_json::to_string(&s).unwrap();
    let back: WizardState = serde_json::from_str(&json).unwrap();
    assert_eq!(back, s);
    let View::Result { diagnosis, .. } = back.view(kb(), "en").unwrap() else {
        panic!("no result")
    };
    assert_eq!(diagnosis.causes[0].id, "game_background_apps");
    let mut done = back.clone();
    let e = done.answer(kb(), 0).unwrap_err();
    assert!(e.to_string().contains("result"), "{e}");
    let unknown = WizardState {
        node: "gone".into(),
        ..Default::default()
    };
    let e = unknown.view(kb(), "en").unwrap_err();
    assert!(e.to_string().contains("unknown step"), "{e}");
}

mod cli {
    use std::io::Write;
    use std::process::{Command, Output, Stdio};

    fn diagnose(args: &[&str], stdin: &str) -> Output {
        let mut child = Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
            .arg("diagnose")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("binary runs");
        let mut pipe = child.stdin.take().expect("stdin");
        // A refused oversized input may close the pipe early; that is the point of the test.
        let _ = pipe.write_all(stdin.as_bytes());
        drop(pipe);
        child.wait_with_output().expect("binary finishes")
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_full_disk_behind_stdout_exits_1_and_bad_input_2() {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full, which Linux always has");
        let mut child = Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
            .arg("diagnose")
            .stdin(Stdio::piped())
            .stdout(full)
            .stderr(Stdio::piped())
            .spawn()
            .expect("binary runs");
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(P6.as_bytes()).unwrap();
        drop(pipe);
        let out = child.wait_with_output().expect("binary finishes");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("error: cannot write to stdout"), "{err}");
        // A file that is not there is the input's fault; one the system cannot reach (a path
        // through a file) is the machine's.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("log.txt");
        std::fs::write(&file, P6).unwrap();
        let missing = diagnose(&["--file", dir.path().join("none").to_str().unwrap()], "");
        assert_eq!(missing.status.code(), Some(2));
        let through = diagnose(&["--file", file.join("x").to_str().unwrap()], "");
        assert_eq!(
            through.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&through.stderr)
        );
        let bad = diagnose(&["--answers", "0"], P6);
        assert_eq!(bad.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&bad.stderr).contains("--answers counts from 1"));
    }

    const P6: &str = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.70 GiB. GPU 0 has a total capacty of 6.00 GiB of which 0 bytes is free. Of the allocated memory 2.93 GiB is allocated by PyTorch, and 2.30 GiB is reserved by PyTorch but unallocated.";

    #[test]
    fn reads_stdin_and_prints_causes_and_fixes() {
        let out = diagnose(&[], P6);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Classification: Reserved-but-unallocated memory is large"),
            "{text}"
        );
        assert!(
            text.contains("copy: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
            "{text}"
        );
    }

    #[test]
    fn json_from_file_names_the_leaf() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("err.txt");
        std::fs::write(&path, P6).unwrap();
        let out = diagnose(&["--file", path.to_str().unwrap(), "--json"], "");
        assert!(out.status.success());
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
        assert_eq!(v["stop"]["kind"], "result");
        assert_eq!(v["stop"]["id"], "leaf_fragmentation");
        assert!(
            v["stop"].get("diagnosis").is_none(),
            "one place for the diagnosis"
        );
        assert_eq!(v["diagnosis"]["causes"][0]["id"], "fragmentation");
        assert_eq!(
            v["reading"]["classification"]["classes"][0],
            "fragmentation"
        );
    }

    /// Fixes the figures rule out are printed apart with their reason, in the text and in the
    /// JSON (issue 22: 1.02 GiB free + 0.68 GiB reserved cannot serve 1.96 GiB).
    #[test]
    fn fixes_that_cannot_help_are_printed_apart_with_their_reason() {
        let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 11.76 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 10.72 GiB memory in use. Of the allocated memory 9.87 GiB is allocated by PyTorch, and 0.68 GiB is reserved by PyTorch but unallocated.";
        let out = diagnose(&[], oom);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        let (fixes, apart) = text.split_once("\nCannot help here:\n").expect(&text);
        assert!(!fixes.contains("expandable_segments:True"), "{fixes}");
        assert!(apart.contains("why not: Free plus reserved-but-unallocated memory (1.70 GiB) is less than the 1.96 GiB requested"), "{apart}");
        let out = diagnose(&["--json"], oom);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
        let apart = v["diagnosis"]["cannot_help"].as_array().expect("a list");
        let e = apart
            .iter()
            .find(|f| f["id"] == "expandable_segments")
            .expect("expandable_segments apart");
        assert!(e["reason"].as_str().unwrap().contains("1.70 GiB"));
        let fixes = v["diagnosis"]["fixes"].as_array().unwrap();
        assert!(
            fixes
                .iter()
                .all(|f| f["id"] != "expandable_segments" && f.get("reason").is_none())
        );
    }

    /// A walk that stops at a question puts its causes and fixes in the same place as a
    /// finished one.
    #[test]
    fn json_at_a_question_has_the_diagnosis_in_the_same_place() {
        let out = diagnose(
            &["--json"],
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 11.06 MiB is free. Including non-PyTorch memory, this process has 23.60 GiB memory in use. Of the allocated memory 22.90 GiB is allocated by PyTorch, and 194.87 MiB is reserved by PyTorch but unallocated.",
        );
        assert!(out.status.success());
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["stop"]["kind"], "question");
        assert_eq!(v["diagnosis"]["causes"][0]["id"], "workload_too_big");
        assert!(
            v["diagnosis"]["fixes"]
                .as_array()
                .is_some_and(|f| !f.is_empty())
        );
    }

    /// GPU-related text the doctor has no signature for still gets a diagnosis (exit 0).
    #[test]
    fn unknown_gpu_text_is_diagnosed_not_refused() {
        let out = diagnose(
            &["--json"],
            "RuntimeError: CUDA error: operation not permitted",
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["diagnosis"]["causes"][0]["id"], "unknown_gpu_error");
    }

    #[test]
    fn scripted_answers_walk_a_tree() {
        let out = diagnose(
            &["--tree", "shared_memory", "--answers", "1,2", "--json"],
            "",
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["stop"]["id"], "leaf_pinned");
    }

    #[test]
    fn interactive_reads_answers_and_goes_back() {
        let out = diagnose(&["--interactive", "--tree", "games"], "2\nb\n3\n");
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Result: The game most likely exceeds"),
            "{text}"
        );
    }

    #[test]
    fn bad_input_exits_2_with_one_line() {
        for (args, stdin, says) in [
            (&[][..], "", "no error text given"),
            (&[][..], "just a log line, no error", "not a GPU error"),
            (
                &["--file", "/nonexistent/err.txt"][..],
                "",
                "/nonexistent/err.txt",
            ),
            (&["--tree", "nope"][..], "", "unknown tree"),
            (
                &["--tree", "games", "--answers", "7"][..],
                "",
                "choose 1 to 4",
            ),
            (&["--lang", "xx"][..], P6, "not shipped"),
        ] {
            let out = diagnose(args, stdin);
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains(says) && err.trim().lines().count() == 1,
                "{args:?}: {err}"
            );
        }
        let huge = "x".repeat((1 << 20) + 10);
        let out = diagnose(&[], &huge);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("more than 1 MiB"));
    }
}

/// Every answer sequence from the root ends at a result with causes and fixes, and every leaf
/// is reached by some sequence (walked through the wizard's own API, without evidence).
#[test]
fn every_path_ends_at_a_result_and_every_leaf_is_reached() {
    fn walk(s: WizardState, seen: &mut std::collections::BTreeSet<String>, paths: &mut usize) {
        match s.view(kb(), "en").unwrap() {
            View::Result { id, diagnosis, .. } => {
                assert!(
                    !diagnosis.causes.is_empty() && !diagnosis.fixes.is_empty(),
                    "{id}"
                );
                seen.insert(id);
                *paths += 1;
            }
            View::Question { options, .. } => {
                assert!(s.path.len() < 20, "path too deep: {:?}", s.path);
                for i in 0..options.len() {
                    let mut next = s.clone();
                    next.answer(kb(), i).unwrap();
                    walk(next, seen, paths);
                }
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut paths = 0;
    walk(
        WizardState::start(kb(), &kb().root, Vec::new()).unwrap(),
        &mut seen,
        &mut paths,
    );
    let leaves: std::collections::BTreeSet<String> = kb()
        .nodes
        .values()
        .filter(|n| n.is_leaf())
        .map(|n| n.id.clone())
        .collect();
    assert_eq!(seen, leaves);
    assert!(paths >= leaves.len());
}

mod fuzz {
    use super::kb;
    use proptest::prelude::*;
    use vram_doctor::doctor::reading::read;

    const SEED: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 250.00 MiB. GPU 0 has a total capacity of 79.26 GiB of which 104.75 MiB is free. Process 1007710 has 79.14 GiB memory in use. 1.05 GiB allowed; Of the allocated memory 74.77 GiB is allocated by PyTorch, with 17.00 MiB allocated in private pools (e.g., CUDA Graphs), and 3.87 GiB is reserved by PyTorch but unallocated.\nAllocation on device 0 would exceed allowed memory. (out of memory)\nRequested : 320.00 MiB\nDevice limit : 15.92 GiB\nMPS backend out of memory (MPS allocated: 8.89 GB, other allocations: 172.98 MB, max allowed: 9.07 GB). Tried to allocate 6.25 MB on private pool\nmore system memory (164.8 GiB) than is available (13.4 GiB) \"BudgetBytes\": 3540794471";

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Any text, including real messages cut or spliced anywhere, reads without panicking.
        #[test]
        fn reader_never_panics(junk in "\\PC{0,200}", cut in 0usize..2000, splice in 0usize..2000) {
            let cut = SEED.char_indices().map(|(i, _)| i).nth(cut % SEED.chars().count()).unwrap_or(0);
            let at = SEED.char_indices().map(|(i, _)| i).nth(splice % SEED.chars().count()).unwrap_or(0);
            for text in [junk.clone(), SEED[..cut].to_string(), format!("{}{junk}{}", &SEED[..at], &SEED[at..])] {
                let r = read(&text, kb(), None).unwrap();
                if let Some(f) = r.figures {
                    prop_assert!(f.total.is_none_or(|t| t < u64::MAX));
                }
            }
        }
    }
}

#[test]
fn every_shipped_language_renders_the_wizard() {
    let s = WizardState::start(kb(), &kb().root, Vec::new()).unwrap();
    let texts: Vec<String> = kb()
        .languages
        .iter()
        .map(|l| match s.view(kb(), l).unwrap() {
            View::Question { text, .. } => text,
            View::Result { .. } => panic!("the root is a question"),
        })
        .collect();
    assert!(kb().languages.len() >= 2);
    // Each language has its own text for the root question (not a copy of the fallback).
    let distinct: std::collections::BTreeSet<&String> = texts.iter().collect();
    assert_eq!(distinct.len(), texts.len(), "{texts:?}");
}

#[test]
fn a_plan_result_answers_a_step_and_shows_its_figures() {
    let gib = 1u64 << 30;
    let ctx = Context {
        plan: Some(vram_doctor::doctor::PlanSummary {
            fits: false,
            needed_bytes: 10 * gib,
            capacity_bytes: 8 * gib,
            comfy_mode: None,
        }),
        ..Context::default()
    };
    let entry = &kb().tree("games").unwrap().entry;
    let mut s = WizardState::start(kb(), entry, ctx.observations(None)).unwrap();
    s.answer(kb(), 1).unwrap(); // DEVICE_REMOVED
    s.answer(kb(), 1).unwrap(); // not overclocked → the VRAM question answers itself
    assert_eq!(s.node, "leaf_game_oom");
    let last = s.history(kb(), "en").pop().unwrap();
    let ev = last.evidence.expect("answered from the plan");
    assert!(ev.contains("10.00 GiB") && ev.contains("8.00 GiB"), "{ev}");
    // The plan alone, from the root, leads to the out-of-memory branch.
    let root = WizardState::start(kb(), &kb().root, ctx.observations(None)).unwrap();
    assert_eq!(root.path[0].node, "symptom");
    assert_eq!(root.node, "oom_tool");
}

#[test]
fn a_leak_on_the_timeline_outranks_a_plain_shortage_in_the_message() {
    // A message that says only "full", and a watched run whose memory rose steadily before it.
    let msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 23.99 GiB of which 120.00 MiB is free. Including non-PyTorch memory, this process has 23.10 GiB memory in use. Of the allocated memory 22.90 GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.";
    let r = vram_doctor::doctor::reading::read(msg, kb(), None).unwrap();
    let leak = vram_doctor::doctor::Observation {
        fact: vram_doctor::doctor::Fact::TimelineLeak,
        source: vram_doctor::doctor::evidence::Source::Timeline,
        values: [
            ("rate", "310 MiB"),
            ("span", "14 minutes"),
            ("floors", "2 GiB → 9 GiB"),
            ("to_full", "soon"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    };
    let ctx = Context {
        timeline: vec![leak],
        ..Context::default()
    };
    let obs = ctx.observations(Some(&r));
    assert_eq!(
        obs[0].fact,
        vram_doctor::doctor::Fact::TimelineLeak,
        "a cause-naming timeline fact leads"
    );
    let s = WizardState::start(kb(), &kb().root, obs).unwrap();
    let View::Result { diagnosis, .. } = s.view(kb(), "en").unwrap() else {
        panic!("the leak answers 'when' and 'how': {:?}", s.node);
    };
    assert_eq!(diagnosis.causes[0].id, "leak_history");
    assert!(diagnosis.causes[0].evidence[0].contains("310 MiB per minute for 14 minutes"));
    // Without the timeline the same message stops at the question the timeline answered.
    let plain =
        WizardState::start(kb(), &kb().root, Context::default().observations(Some(&r))).unwrap();
    assert_eq!(plain.node, "oom_when");
}
