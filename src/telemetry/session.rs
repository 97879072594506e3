//! One monitoring session: the loop every front end runs over the sampler's snapshots (the
//! history, the detectors over it, the alerts they raise, the latest reading). The CLI monitor,
//! the app's monitor tab, the run watcher and the Prometheus exporter all hold one, so an alert
//! means the same thing wherever it is shown and a new consumer is one `push` per snapshot.

use super::detect::{Alert, Detectors};
use super::history::{History, HistoryConfig};
use super::sample::Snapshot;

/// How a session is sized; each front end keeps what it shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SessionConfig {
    pub history: HistoryConfig,
    /// The newest alerts kept; older ones drop off (each detector fires once per episode).
    pub alerts_kept: usize,
    /// The process the user is watching (their run); `None` = the largest one on each GPU.
    pub focus_pid: Option<u32>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            history: HistoryConfig::default(),
            alerts_kept: 20,
            focus_pid: None,
        }
    }
}

/// History, detectors and alerts of one stream of snapshots.
#[derive(Debug, Clone)]
pub struct Session {
    history: History,
    detectors: Detectors,
    alerts: Vec<Alert>,
    alerts_kept: usize,
    latest: Option<Snapshot>,
}

impl Default for Session {
    fn default() -> Self {
        Session::new(SessionConfig::default())
    }
}

impl Session {
    pub fn new(config: SessionConfig) -> Self {
        let mut detectors = Detectors::default();
        detectors.focus_pid = config.focus_pid;
        Session {
            history: History::new(config.history),
            detectors,
            alerts: Vec::new(),
            alerts_kept: config.alerts_kept,
            latest: None,
        }
    }

    /// Adds one snapshot: into the history, through the detectors, and kept as the latest.
    /// Returns the alerts it raised (all of them, even beyond what the session keeps).
    pub fn push(&mut self, snap: Snapshot) -> Vec<Alert> {
        self.history.push(&snap);
        let new = self.detectors.check(&self.history, &snap);
        self.alerts.extend(new.iter().cloned());
        let excess = self.alerts.len().saturating_sub(self.alerts_kept);
        self.alerts.drain(..excess);
        self.latest = Some(snap);
        new
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    /// The detectors, for what is active now ([`Detectors::active`]).
    pub fn detectors(&self) -> &Detectors {
        &self.detectors
    }

    /// The kept alerts, oldest first.
    pub fn alerts(&self) -> &[Alert] {
        &self.alerts
    }

    /// Takes the kept alerts out (a watched run's outcome).
    pub fn take_alerts(&mut self) -> Vec<Alert> {
        std::mem::take(&mut self.alerts)
    }

    /// The newest snapshot pushed.
    pub fn latest(&self) -> Option<&Snapshot> {
        self.latest.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::detect::AlertKind;
    use crate::telemetry::sample::{GpuSample, MemorySample, ProcessSample};

    /// GPUs named by uuid with (used, total); on each, pid 1 holds a tenth and pid 2 the rest.
    fn snap(t: u64, gpus: &[(&str, u64, u64)]) -> Snapshot {
        let proc = |pid, used| ProcessSample {
            pid,
            used: Some(used),
            ..Default::default()
        };
        Snapshot {
            time_ms: t,
            gpus: gpus
                .iter()
                .map(|&(uuid, used, total)| GpuSample {
                    uuid: Some(uuid.into()),
                    name: uuid.into(),
                    memory: Some(MemorySample {
                        total,
                        used,
                        ..Default::default()
                    }),
                    processes: Some(vec![proc(1, used / 10), proc(2, used - used / 10)]),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn keeps_the_newest_alerts_and_returns_every_new_one() {
        let mut s = Session::new(SessionConfig {
            alerts_kept: 2,
            ..Default::default()
        });
        let full = [("a", 99, 100), ("b", 99, 100), ("c", 99, 100)];
        let new = s.push(snap(1000, &full));
        assert_eq!(new.len(), 3, "{new:?}");
        assert!(new.iter().all(|a| a.kind == AlertKind::NearCapacity));
        let kept: Vec<&str> = s.alerts().iter().map(|a| a.gpu.as_str()).collect();
        assert_eq!(kept, ["b", "c"], "the newest two");
        assert_eq!(s.latest().map(|l| l.time_ms), Some(1000));
        assert_eq!(s.history().gpu("a").map(|h| h.len()), Some(1));
        assert_eq!(
            s.detectors().active("a").kinds,
            [AlertKind::NearCapacity],
            "the episode lasts"
        );
        assert!(s.push(snap(2000, &full)).is_empty(), "once per episode");
        assert_eq!(s.take_alerts().len(), 2);
        assert!(s.alerts().is_empty());
    }

    #[test]
    fn the_focus_process_is_the_one_others_are_measured_against() {
        // pid 1 holds 6 of 100, pid 2 holds 54. Without a focus the largest (pid 2) is the
        // main process and the rest (6 %) is below the alert; with pid 1 in focus, pid 2 is
        // another program holding half the card.
        let kinds = |focus_pid| {
            let mut s = Session::new(SessionConfig {
                focus_pid,
                ..Default::default()
            });
            s.push(snap(1000, &[("a", 60, 100)]))
                .into_iter()
                .map(|a| a.kind)
                .collect::<Vec<_>>()
        };
        assert_eq!(kinds(None), []);
        assert_eq!(kinds(Some(1)), [AlertKind::OtherProcesses]);
    }
}
