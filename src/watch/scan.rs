//! Reads the run's output as it passes: every line goes through the doctor's reader
//! (`doctor::reading::read`), and the first line that establishes a failure fact (facts.toml
//! `failure = true`: an out-of-memory or GPU error) opens the *incident*: the lines before it
//! and after it, which the doctor reads as one message at the end (a traceback and the lines
//! around the error, as a user would paste them).

use crate::doctor::flat::contains_word;
use crate::doctor::reading::{MAX_INPUT_BYTES, read};
use crate::doctor::{Knowledge, Reading};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Lines kept before the failure line (a Python traceback's frames) …
const BEFORE: usize = 40;
/// … and after it (the rest of the message and the log).
const AFTER: usize = 200;
/// Longest part of one line scanned (a progress bar redrawn with `\r` can make one huge line;
/// the output itself is passed through whole).
const MAX_LINE: usize = 16 << 10;
/// The incident's text is bounded well below the reader's limit.
const MAX_INCIDENT: usize = MAX_INPUT_BYTES / 4;

/// The failure and the text around it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Incident {
    /// When the failure line passed, ms since the start.
    pub t_ms: u64,
    /// The failure line itself.
    pub line: String,
    /// The lines around it, as one text for the reader.
    pub text: String,
    /// Lines still to add after it.
    #[serde(skip)]
    after_left: usize,
}

pub struct Scanner {
    kb: &'static Knowledge,
    recent: VecDeque<String>,
    incident: Option<Incident>,
    /// Failure lines seen in all.
    pub failures: u64,
    /// The previous line was a failure line.
    last_failed: bool,
}

/// The first `max` bytes of `s`, cut at a character boundary.
fn head(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Scanner {
    pub fn new(kb: &'static Knowledge) -> Scanner {
        Scanner {
            kb,
            recent: VecDeque::new(),
            incident: None,
            failures: 0,
            last_failed: false,
        }
    }

    /// True when reading `line` alone establishes a failure fact, or establishes any fact and
    /// is raised as an error (signatures.toml `error_words`: a GPU error the doctor has no
    /// failure fact for is still the program failing), unless one of its facts says the
    /// program goes on ("… failed, trying again in system memory as a fallback").
    pub fn is_failure(&self, line: &str) -> bool {
        let Ok(r) = read(line, self.kb, None) else {
            return false;
        };
        let info = |o: &crate::doctor::Observation| self.kb.facts.get(&o.fact);
        if r.observations.is_empty()
            || r.observations
                .iter()
                .any(|o| info(o).is_some_and(|f| f.carries_on))
        {
            return false;
        }
        let lower = line.to_lowercase();
        r.observations
            .iter()
            .any(|o| info(o).is_some_and(|f| f.failure))
            || self.kb.error_words.iter().any(|w| contains_word(&lower, w))
    }

    /// Takes one line of output (without its newline) that passed at `t_ms`. True when it is
    /// the first failure line.
    pub fn line(&mut self, line: &str, t_ms: u64) -> bool {
        let line = head(line.trim_end_matches('\r'), MAX_LINE);
        if let Some(inc) = self.incident.as_mut()
            && inc.after_left > 0
        {
            inc.after_left -= 1;
            if inc.text.len() + line.len() < MAX_INCIDENT {
                inc.text.push_str(line);
                inc.text.push('\n');
            }
        }
        // A message wrapped over two lines (a terminal's width, a logger's) is read joined too,
        // unless its first half already counted.
        let failure = self.is_failure(line)
            || (!self.last_failed
                && self
                    .recent
                    .back()
                    .is_some_and(|prev| self.is_failure(&format!("{prev} {line}"))));
        self.last_failed = failure;
        self.failures += u64::from(failure);
        let first = failure && self.incident.is_none();
        if first {
            let mut text: String = self.recent.iter().map(|l| format!("{l}\n")).collect();
            text.push_str(line);
            text.push('\n');
            self.incident = Some(Incident {
                t_ms,
                line: line.to_string(),
                text: head(&text, MAX_INCIDENT).to_string(),
                after_left: AFTER,
            });
        }
        self.recent.push_back(line.to_string());
        if self.recent.len() > BEFORE {
            self.recent.pop_front();
        }
        first
    }

    pub fn incident(&self) -> Option<&Incident> {
        self.incident.as_ref()
    }

    /// The doctor's reading of the incident, or of the last lines when there was none.
    pub fn reading(&self) -> Reading {
        let text = match &self.incident {
            Some(i) => i.text.clone(),
            None => self.recent.iter().map(|l| format!("{l}\n")).collect(),
        };
        read(&text, self.kb, None).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failure_line_opens_the_incident_with_its_context() {
        let mut s = Scanner::new(Knowledge::get());
        assert!(!s.line("Loading checkpoint shards: 100%", 10));
        assert!(
            !s.line("ggml_cuda_init: found 1 CUDA devices", 20),
            "an engine banner is context, not a failure"
        );
        assert!(!s.line("Traceback (most recent call last):", 30));
        assert!(s.line("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 22.40 GiB memory in use. Of the allocated memory 21.00 GiB is allocated by PyTorch, and 900.00 MiB is reserved by PyTorch but unallocated.", 40));
        assert!(
            !s.line("RuntimeError: CUDA error: out of memory", 50),
            "only the first opens it"
        );
        assert_eq!(s.failures, 2);
        let inc = s.incident().unwrap();
        assert_eq!(inc.t_ms, 40);
        assert!(
            inc.text.starts_with("Loading checkpoint")
                && inc.text.contains("CUDA error: out of memory"),
            "{}",
            inc.text
        );
        let r = s.reading();
        assert!(r.figures.is_some(), "the PyTorch figures are read");
    }

    #[test]
    fn a_clean_log_has_no_incident() {
        let mut s = Scanner::new(Knowledge::get());
        for i in 0..500 {
            assert!(!s.line(&format!("step {i} loss 0.{i}"), i));
        }
        assert!(s.incident().is_none());
        assert!(!s.reading().recognised());
        assert_eq!(head("aé", 2), "a");
    }
}
