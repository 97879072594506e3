//! Undo for the planner's workload: every change, whoever made it (a knob, "Apply plan", "Open
//! workload…", the top bar's GPU picker, the doctor's "Open in planner", the catalog), is one
//! step back with Ctrl+Z or the Undo button. The app takes a snapshot before each frame and
//! records it when the frame changed the workload; a drag of a slider is one step, not one per
//! frame.

use super::{Parked, PlannerView};
use crate::memory::WorkloadFile;

/// Steps kept; older ones are dropped.
const DEPTH: usize = 100;

/// What one step restores: the workload and the other kinds' parked knobs (switching kind
/// parks them, so undoing a switch must bring them back too).
#[derive(Clone, PartialEq)]
pub struct Snapshot {
    workload: WorkloadFile,
    parked: Parked,
}

/// The steps back, newest last.
#[derive(Default)]
pub struct History {
    steps: Vec<Snapshot>,
    /// A step was recorded during the pointer press still held (a slider being dragged).
    in_press: bool,
    /// The last change was an undo, which is not itself recorded.
    undone: bool,
}

impl PlannerView {
    /// The state to record if this frame changes it.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            workload: self.workload.clone(),
            parked: self.parked.clone(),
        }
    }

    /// Records `before` as a step back when the frame changed the workload; `pressing`: the
    /// pointer is still down, so later frames of the same drag add no step.
    pub fn record(&mut self, before: Snapshot, pressing: bool) {
        let h = &mut self.history;
        let changed = before.workload != self.workload || before.parked != self.parked;
        if std::mem::take(&mut h.undone) || !changed {
            h.in_press &= pressing;
            return;
        }
        if !h.in_press {
            h.steps.push(before);
            if h.steps.len() > DEPTH {
                h.steps.remove(0);
            }
        }
        h.in_press = pressing;
    }

    pub fn can_undo(&self) -> bool {
        !self.history.steps.is_empty()
    }

    /// Goes one step back; false when there is none.
    pub fn undo(&mut self) -> bool {
        let Some(s) = self.history.steps.pop() else {
            return false;
        };
        self.workload = s.workload;
        self.parked = s.parked;
        self.model_filter.clear();
        self.history.undone = true;
        true
    }
}
