//! The doctor: "what went wrong?" — an error-message reader and a symptom wizard.
//!
//! Domain layer (no egui). The knowledge is data in `assets/doctor/`: message signatures, fact
//! labels, causes with their fixes, and the wizard trees; the code here parses, classifies,
//! checks that data and walks it.
//!
//! - `pytorch` + `classify`: figures from PyTorch OOM messages and the cause class they imply.
//! - `reading`: any pasted text → observations (facts with figures).
//! - `comfy_log`: ComfyUI's console lines (card, VRAM state, memory mode, each model's load) by
//!   their format strings in `assets/doctor/comfy_log.toml`, and the log against a plan.
//! - `evidence`: facts from live numbers, a plan result and the platform, all plain data.
//! - `live`: the live numbers from the monitor's telemetry session.
//! - `wizard`: the walk over the trees; `diagnosis`: ranked causes and fixes by cost.
//!
//! A front end (the CLI's `diagnose`, the GUI's doctor tab) drives it like this:
//!
//! ```text
//! let kb = Knowledge::get();
//! let reading = reading::read(&pasted_text, kb, live.as_ref())?;      // Err only if > 1 MiB
//! let ctx = Context { live, plan, platform };
//! let mut state = WizardState::start(kb, &kb.root, ctx.observations(Some(&reading)))?;
//! match state.view(kb, lang)? {                                       // the evidence already
//!     View::Question { text, options, .. } => state.answer(kb, i)?,   // walked what it could
//!     View::Result { diagnosis, .. } => show(diagnosis),              // causes, fixes by cost
//! }
//! ```
//!
//! `WizardState` is plain data (Default + serde): keep it, save it, `back()` it.

pub mod classify;
pub mod comfy_log;
pub mod diagnosis;
mod error;
pub mod evidence;
pub mod flat;
pub mod knowledge;
pub mod live;
pub mod pytorch;
pub mod reading;
pub mod size;
pub mod text;
pub mod tools;
pub mod wizard;

pub use classify::LiveSnapshot;
pub use diagnosis::Diagnosis;
pub use error::DoctorError;
pub use evidence::{Fact, Observation, PlanSummary, Platform};
pub use knowledge::Knowledge;
pub use reading::Reading;
pub use wizard::{View, WizardState};

use serde::{Deserialize, Serialize};

/// What the doctor can see besides a message, as plain data the caller fills in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Context {
    pub live: Option<LiveSnapshot>,
    pub plan: Option<PlanSummary>,
    pub platform: Option<Platform>,
    /// Findings from a watched run's memory timeline (`vram-doctor run`, src/watch).
    #[serde(default)]
    pub timeline: Vec<Observation>,
}

impl Context {
    /// All observations, most telling first: timeline findings that name a cause
    /// ([`Fact::leads_over_message`]), the message's (more specific than live numbers), the
    /// rest of the timeline, then live numbers, the plan and the platform.
    pub fn observations(&self, reading: Option<&Reading>) -> Vec<Observation> {
        let (leading, trailing): (Vec<&Observation>, Vec<&Observation>) = self
            .timeline
            .iter()
            .partition(|o| o.fact.leads_over_message());
        let mut out: Vec<Observation> = leading.into_iter().cloned().collect();
        out.extend(reading.iter().flat_map(|r| r.observations.iter().cloned()));
        out.extend(trailing.into_iter().cloned());
        if let Some(l) = &self.live {
            out.extend(evidence::observe_live(l));
        }
        if let Some(p) = &self.plan {
            out.extend(evidence::observe_plan(p));
            // A ComfyUI log pasted beside a plan: what ComfyUI did against what was planned.
            if let Some(log) = reading.and_then(|r| r.comfy_log.as_ref()) {
                out.extend(comfy_log::compare(log, p));
            }
        }
        if let Some(p) = self.platform {
            out.push(evidence::observe_platform(p));
        }
        out
    }
}
