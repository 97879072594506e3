//! `vram-doctor diagnose`: read an error message (stdin or `--file`), classify it, walk the
//! wizard as far as the evidence goes, and print the causes and fixes (or `--json`);
//! `--interactive` asks the remaining questions in the terminal, `--answers 2,1` scripts them.

use super::CliError;
use crate::doctor::diagnosis::{Diagnosis, evidence_line};
use crate::doctor::reading::{MAX_INPUT_BYTES, Reading, read};
use crate::doctor::wizard::AnsweredStep;
use crate::doctor::{Context, Fact, Knowledge, Platform, View, WizardState};
use crate::telemetry::record::TakeLine;
use crate::units::human;
use clap::{Args, ValueEnum};
use serde::Serialize;
use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct DiagnoseArgs {
    /// Read the error text from this file instead of stdin.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Ask the questions the message cannot answer, in the terminal (stdin is then for answers).
    #[arg(long, visible_alias = "wizard")]
    pub interactive: bool,
    /// Answer the wizard's questions in order, by number (e.g. `--answers 1,3,2`).
    #[arg(long, value_delimiter = ',')]
    pub answers: Vec<usize>,
    /// Start at a tree instead of the first question: start, oom, llm, comfyui, games, shared_memory.
    #[arg(long)]
    pub tree: Option<String>,
    /// The system the error happened on (answers the wizard's "which system?").
    #[arg(long, value_enum)]
    pub os: Option<OsArg>,
    /// Language of the texts: en, de or zh (assets/doctor/languages.toml).
    #[arg(long, default_value = "en")]
    pub lang: String,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OsArg {
    Windows,
    Linux,
    Macos,
}

impl From<OsArg> for Platform {
    fn from(o: OsArg) -> Platform {
        match o {
            OsArg::Windows => Platform::Windows,
            OsArg::Linux => Platform::Linux,
            OsArg::Macos => Platform::Macos,
        }
    }
}

/// What `--json` prints (schema in the README, "diagnose --json").
#[derive(Debug, Serialize)]
pub(super) struct Report<'a> {
    reading: Option<&'a Reading>,
    /// The message's classes as labels, primary first (the ids are in `reading`).
    classification: Vec<String>,
    evidence: Vec<String>,
    path: Vec<AnsweredStep>,
    /// Where the walk stands: a result (a leaf) or the first question the evidence could not
    /// answer.
    stop: Stop,
    /// The causes and fixes, in one place whether the walk ended or stopped at a question: at a
    /// result the leaf's, at a question what the evidence alone points at.
    diagnosis: Diagnosis,
}

#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Stop {
    Question {
        id: String,
        text: String,
        options: Vec<String>,
    },
    Result {
        id: String,
        text: String,
    },
}

/// Longest answer line read in interactive mode.
const MAX_ANSWER_LINE: usize = 1024;

pub fn run(a: &DiagnoseArgs) -> Result<(), CliError> {
    let kb = Knowledge::get();
    kb.check_lang(&a.lang)?;
    let entry = match &a.tree {
        Some(t) => kb.tree(t).map(|t| t.entry.clone()).ok_or_else(|| {
            let ids: Vec<&str> = kb.trees.iter().map(|t| t.id.as_str()).collect();
            format!("--tree {t}: unknown tree; choose one of {}", ids.join(", "))
        })?,
        None => kb.root.clone(),
    };
    let stdin = std::io::stdin();
    // With wizard flags the message is optional; stdin then carries it only when piped in
    // (and never with --interactive, whose answers come from stdin).
    let wizard = a.interactive || !a.answers.is_empty() || a.tree.is_some();
    let text = match &a.file {
        Some(path) => {
            let (f, _) = crate::input_file::open_regular(path)?;
            read_bounded(f, &path.display())?
        }
        None if a.interactive || (wizard && stdin.is_terminal()) => String::new(),
        None => read_bounded(stdin.lock(), &"stdin")?,
    };
    let reading = if text.trim().is_empty() {
        if !wizard {
            return Err(
                "no error text given: pipe it in, use --file FILE, or run with --interactive"
                    .into(),
            );
        }
        None
    } else {
        Some(read(&text, kb, None)?)
    };
    if reading.as_ref().is_some_and(|r| !r.recognised()) && !wizard {
        return Err(
            "not a GPU error: the text names no GPU, driver or GPU program, and no known message; \
                    run `vram-doctor diagnose --interactive` to answer questions instead"
                .into(),
        );
    }
    let ctx = Context {
        platform: a.os.map(Platform::from),
        ..Context::default()
    };
    let observations = ctx.observations(reading.as_ref());
    let mut state = WizardState::start(kb, &entry, observations)?;
    for (i, n) in a.answers.iter().enumerate() {
        let index = n.checked_sub(1).ok_or("--answers counts from 1")?;
        state
            .answer(kb, index)
            .map_err(|e| format!("--answers, answer {} ({n}): {e}", i + 1))?;
    }
    if a.interactive {
        interactive(kb, &mut state, &a.lang, &mut stdin.lock().take(u64::MAX))?;
    }
    let report = report(kb, reading.as_ref(), &state, &a.lang)?;
    let out = if a.json {
        serde_json::to_string_pretty(&report).map_err(|e| e.to_string())? + "\n"
    } else {
        render(&report)
    };
    std::io::stdout()
        .write_all(out.as_bytes())
        .map_err(|e| CliError::stdout(&e))
}

/// The `--json` object for a wizard state (also `vram-doctor run --json`'s, with its timeline).
pub(super) fn report<'a>(
    kb: &Knowledge,
    reading: Option<&'a Reading>,
    state: &WizardState,
    lang: &str,
) -> Result<Report<'a>, String> {
    let (stop, diagnosis) = match state.view(kb, lang)? {
        View::Result {
            id,
            text,
            diagnosis,
        } => (Stop::Result { id, text }, diagnosis),
        View::Question { id, text, options } => (
            Stop::Question { id, text, options },
            state.evidence_diagnosis(kb, lang),
        ),
    };
    let classification = reading
        .iter()
        .filter_map(|r| r.classification.as_ref())
        .flat_map(|c| &c.classes)
        .filter_map(|k| Some(kb.facts.get(&Fact::from(*k))?.label.get(lang).to_string()))
        .collect();
    Ok(Report {
        reading,
        classification,
        evidence: state
            .observations
            .iter()
            .map(|o| evidence_line(kb, o, lang))
            .collect(),
        path: state.history(kb, lang),
        stop,
        diagnosis,
    })
}

/// Reads at most `MAX_INPUT_BYTES` from `src` (named `what` in errors); more is refused rather
/// than truncated silently. A read that fails is the machine's problem, too much text the input's.
fn read_bounded(src: impl Read, what: &dyn std::fmt::Display) -> Result<String, CliError> {
    let mut buf = Vec::new();
    src.take(MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| CliError::Environment(format!("{what}: cannot read: {e}")))?;
    if buf.len() > MAX_INPUT_BYTES {
        return Err(CliError::BadInput(format!(
            "{what}: more than {} of text; paste only the error and the lines around it",
            human(MAX_INPUT_BYTES as u64)
        )));
    }
    Ok(crate::input_file::decode_text(&buf))
}

/// Asks until a result, end of input, or `q`. `b` goes back one answer.
fn interactive(
    kb: &Knowledge,
    state: &mut WizardState,
    lang: &str,
    input: &mut impl BufRead,
) -> Result<(), CliError> {
    let mut err = std::io::stderr();
    loop {
        let View::Question { text, options, .. } = state.view(kb, lang)? else {
            return Ok(());
        };
        let mut prompt = format!("\n{text}\n");
        for (i, o) in options.iter().enumerate() {
            prompt += &format!("  {}) {o}\n", i + 1);
        }
        prompt += &format!("answer 1-{}, b = back, q = quit: ", options.len());
        let _ = err.write_all(prompt.as_bytes());
        // Bytes, not a String: a line cut at the bound may end inside a character, and the rest
        // of an overlong line is skipped rather than read as the next answer.
        let mut bytes = Vec::new();
        let got = input
            .take_first_line(&mut bytes, MAX_ANSWER_LINE)
            .map_err(|e| CliError::Environment(format!("stdin: {e}")))?;
        let line = String::from_utf8_lossy(&bytes);
        match line.trim() {
            _ if got.is_none() => return Ok(()),
            "q" => return Ok(()),
            "b" => state.back(),
            s => match s.parse::<usize>() {
                Ok(k) if k >= 1 => {
                    if let Err(e) = state.answer(kb, k - 1) {
                        let _ = writeln!(err, "{e}");
                    }
                }
                _ => {
                    let _ = writeln!(
                        err,
                        "'{}' is not an answer; type a number from 1 to {}",
                        crate::printable::printable_cut(s, 40),
                        options.len()
                    );
                }
            },
        }
    }
}

/// The report as text. Every item goes through `printable`: evidence quotes the log, and a
/// log line holding a terminal escape or a bidirectional override must not reach the terminal
/// raw (our own texts hold no control characters, so they print unchanged).
pub(super) fn render(r: &Report) -> String {
    use crate::printable::printable as p;
    let mut s = String::new();
    if !r.classification.is_empty() {
        s += &format!("Classification: {}\n", p(&r.classification.join("; ")));
    }
    if !r.evidence.is_empty() {
        s += "Evidence:\n";
        for e in &r.evidence {
            s += &format!("  - {}\n", p(e));
        }
    }
    if !r.path.is_empty() {
        s += "Wizard:\n";
        for step in &r.path {
            let why = step
                .because
                .as_deref()
                .map(|e| format!("   (seen: {})", p(e)))
                .unwrap_or_default();
            s += &format!("  {} → {}{why}\n", p(&step.question), p(&step.answer));
        }
    }
    match &r.stop {
        Stop::Result { text, .. } => s += &format!("Result: {}\n", p(text)),
        Stop::Question { text, options, .. } => {
            s += &format!(
                "Next question (answer with --interactive or --answers N): {}\n",
                p(text)
            );
            for (i, o) in options.iter().enumerate() {
                s += &format!("  {}) {}\n", i + 1, p(o));
            }
        }
    }
    let d = &r.diagnosis;
    if let Some(planner) = &d.planner {
        let fields: Vec<String> = planner.iter().map(|(k, v)| format!("{k}={v}")).collect();
        s += &format!(
            "\nThe message's workload, for the planner: {}\n",
            p(&fields.join(" "))
        );
    }
    if !d.causes.is_empty() {
        s += "\nLikely causes:\n";
        for (i, c) in d.causes.iter().enumerate() {
            s += &format!("  {}. {}\n     {}\n", i + 1, p(&c.title), p(&c.why));
            for e in &c.evidence {
                s += &format!("     seen: {}\n", p(e));
            }
        }
    }
    if !d.fixes.is_empty() {
        s += "\nFixes, for the likeliest cause first (cheapest first within a cause):\n";
        for f in &d.fixes {
            let cost = serde_json::to_value(f.cost)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            s += &format!("  [{cost}] {}\n", p(&f.text));
            if let Some(c) = &f.copy {
                s += &format!("         copy: {}\n", p(c));
            }
            if let Some(planner) = &f.planner {
                let fields: Vec<String> = planner.iter().map(|(k, v)| format!("{k}={v}")).collect();
                s += &format!("         planner: {}\n", p(&fields.join(" ")));
            }
        }
    }
    if !d.cannot_help.is_empty() {
        s += "\nCannot help here:\n";
        for f in &d.cannot_help {
            s += &format!("  {}\n", p(&f.text));
            if let Some(r) = &f.reason {
                s += &format!("         why not: {}\n", p(r));
            }
        }
    }
    s
}
