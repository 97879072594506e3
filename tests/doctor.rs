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
            assert!(
                diagnosis.fixes.windows(2).all(|w| w[0].cost <= w[1].cost),
                "[{}] fixes not by cost",
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
    assert!(s.answer(kb(), 99).unwrap_err().contains("choose 1 to"));
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
    assert!(done.answer(kb(), 0).unwrap_err().contains("result"));
    let unknown = WizardState {
        node: "gone".into(),
        ..Default::default()
    };
    assert!(
        unknown
            .view(kb(), "en")
            .unwrap_err()
            .contains("unknown step")
    );
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
        assert!(text.contains("Classification: fragmentation"), "{text}");
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
        assert_eq!(v["stop"]["diagnosis"]["causes"][0]["id"], "fragmentation");
        assert_eq!(
            v["reading"]["classification"]["classes"][0],
            "fragmentation"
        );
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
            (
                &[][..],
                "just a log line, no error",
                "no known out-of-memory",
            ),
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
