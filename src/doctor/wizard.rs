//! The wizard: a walk over the trees in `assets/doctor/trees/`. Steps whose answer the
//! evidence already gives (an option's `auto` facts) answer themselves and say so; the walk
//! stops at the first question the evidence cannot answer, or at a leaf.
//!
//! The state is plain data (Default + serde) so the GUI can keep it, save it and drive it.

use super::DoctorError;
use super::diagnosis::{Diagnosis, causes_for, diagnose, evidence_line};
use super::evidence::Observation;
use super::knowledge::{Knowledge, Node};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub node: String,
    /// Index into the node's options.
    pub option: usize,
    /// Answered by evidence rather than by the user.
    pub auto: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WizardState {
    /// The current node; empty before `start`.
    pub node: String,
    pub path: Vec<Step>,
    /// What the evidence showed, most telling first.
    pub observations: Vec<Observation>,
}

/// What to show for the current node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum View {
    Question {
        id: String,
        text: String,
        options: Vec<String>,
    },
    Result {
        id: String,
        text: String,
        diagnosis: Diagnosis,
    },
}

/// An answered step as shown in the history: question, answer, and the evidence that gave it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnsweredStep {
    pub question: String,
    pub answer: String,
    /// For a step the evidence answered: the fact's short name…
    pub because: Option<String>,
    /// …and the evidence line with its figures.
    pub evidence: Option<String>,
}

impl WizardState {
    /// Starts at `entry` (the root, or a tree's entry) with what the evidence showed, and lets
    /// the evidence answer what it can.
    pub fn start(
        kb: &Knowledge,
        entry: &str,
        observations: Vec<Observation>,
    ) -> Result<Self, DoctorError> {
        if kb.node(entry).is_none() {
            return Err(DoctorError::UnknownStep(entry.to_string()));
        }
        let mut s = WizardState {
            node: entry.to_string(),
            path: Vec::new(),
            observations,
        };
        s.advance(kb);
        Ok(s)
    }

    fn current<'k>(&self, kb: &'k Knowledge) -> Result<&'k Node, DoctorError> {
        kb.node(&self.node)
            .ok_or_else(|| DoctorError::StaleStep(self.node.clone()))
    }

    /// Takes every step the evidence answers. Trees are checked acyclic, and the walk is bounded
    /// by the node count anyway.
    fn advance(&mut self, kb: &Knowledge) {
        for _ in 0..kb.nodes.len() {
            let Some(node) = kb.node(&self.node) else {
                return;
            };
            // The option backed by the most telling observation wins (observations are ordered
            // most telling first), so a message's primary class decides over a secondary one.
            let best = node
                .options
                .iter()
                .enumerate()
                .filter_map(|(i, o)| {
                    let rank = self
                        .observations
                        .iter()
                        .position(|ob| o.auto.contains(&ob.fact))?;
                    Some((rank, i))
                })
                .min();
            let Some((_, i)) = best else { return };
            self.path.push(Step {
                node: self.node.clone(),
                option: i,
                auto: true,
            });
            self.node = node.options[i].next.clone();
        }
    }

    /// Answers the current question with option `index` (0-based).
    pub fn answer(&mut self, kb: &Knowledge, index: usize) -> Result<(), DoctorError> {
        let node = self.current(kb)?;
        let Some(o) = node.options.get(index) else {
            return Err(match node.options.len() {
                0 => DoctorError::AtResult,
                options => DoctorError::NoSuchAnswer { index, options },
            });
        };
        self.path.push(Step {
            node: self.node.clone(),
            option: index,
            auto: false,
        });
        self.node = o.next.clone();
        self.advance(kb);
        Ok(())
    }

    /// Undoes the user's last answer (and the steps the evidence took after it).
    pub fn back(&mut self) {
        while let Some(step) = self.path.pop() {
            if !step.auto {
                self.node = step.node;
                return;
            }
        }
        // Only evidence steps: stay where the evidence led.
        self.path.clear();
    }

    pub fn view(&self, kb: &Knowledge, lang: &str) -> Result<View, DoctorError> {
        let node = self.current(kb)?;
        Ok(if node.is_leaf() {
            View::Result {
                id: node.id.clone(),
                text: node.text.get(lang).to_string(),
                diagnosis: diagnose(kb, &node.causes, &self.observations, lang),
            }
        } else {
            View::Question {
                id: node.id.clone(),
                text: node.text.get(lang).to_string(),
                options: node
                    .options
                    .iter()
                    .map(|o| o.text.get(lang).to_string())
                    .collect(),
            }
        })
    }

    /// What the evidence alone points at, wherever the walk stands (shown beside a question the
    /// evidence could not answer).
    pub fn evidence_diagnosis(&self, kb: &Knowledge, lang: &str) -> Diagnosis {
        diagnose(
            kb,
            &causes_for(kb, &self.observations),
            &self.observations,
            lang,
        )
    }

    /// The causes and fixes wherever the walk stands: the leaf's at a result, what the evidence
    /// alone points at at a question (one place for both, issue 16).
    pub fn diagnosis(&self, kb: &Knowledge, lang: &str) -> Result<Diagnosis, DoctorError> {
        Ok(match self.view(kb, lang)? {
            View::Result { diagnosis, .. } => diagnosis,
            View::Question { .. } => self.evidence_diagnosis(kb, lang),
        })
    }

    /// The path so far, with the evidence behind each self-answered step.
    pub fn history(&self, kb: &Knowledge, lang: &str) -> Vec<AnsweredStep> {
        self.path
            .iter()
            .filter_map(|s| {
                let node = kb.node(&s.node)?;
                let option = node.options.get(s.option)?;
                let seen = s
                    .auto
                    .then(|| {
                        self.observations
                            .iter()
                            .find(|o| option.auto.contains(&o.fact))
                    })
                    .flatten();
                Some(AnsweredStep {
                    question: node.text.get(lang).to_string(),
                    answer: option.text.get(lang).to_string(),
                    because: seen
                        .and_then(|o| Some(kb.facts.get(&o.fact)?.label.get(lang).to_string())),
                    evidence: seen.map(|o| evidence_line(kb, o, lang)),
                })
            })
            .collect()
    }
}
