//! What the monitor shows now, as the doctor's live numbers: the one place the doctor reads
//! telemetry, so the rest of it stays plain data in and out.

use super::classify::LiveSnapshot;
use crate::telemetry::detect::AlertKind;
use crate::telemetry::{GpuSample, GpuStatus, Session};

fn fill(g: &GpuSample) -> f64 {
    g.memory.map_or(0.0, |m| m.fill())
}

/// The fullest answering GPU of the session's latest reading (an out-of-memory error happens on
/// the card that is full; the first one on a tie): its memory, what the other processes on it
/// hold (everything but the largest process, as the monitor's alert counts them), its shared
/// memory, and whether the monitor sees it spilling. `None` before a reading of a GPU's memory.
pub fn from_session(session: &Session) -> Option<LiveSnapshot> {
    let g = session
        .latest()?
        .gpus
        .iter()
        .filter(|g| g.status == GpuStatus::Ok && g.memory.is_some_and(|m| m.total > 0))
        .rev()
        .max_by(|a, b| fill(a).total_cmp(&fill(b)))?;
    let m = g.memory?;
    let detectors = session.detectors();
    Some(LiveSnapshot {
        total_bytes: m.total,
        used_bytes: m.unavailable(),
        other_processes_bytes: g
            .other_processes(detectors.focus_pid)
            .map(|rest| rest.iter().filter_map(|p| p.used).sum()),
        shared_used_bytes: g.shared.map(|s| s.used),
        shared_rising: detectors
            .active(&g.key())
            .kinds
            .contains(&AlertKind::LikelySpill),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::{MemorySample, ProcessSample, SharedMemory, Snapshot};
    use crate::units::GIB;

    const G: u64 = GIB as u64;

    fn gpu(index: u32, used: u64, procs: &[(u32, u64)]) -> GpuSample {
        GpuSample {
            index,
            uuid: Some(format!("GPU-{index}")),
            memory: Some(MemorySample {
                total: 24 * G,
                used,
                reserved: Some(G / 2),
                used_includes_reserved: false,
            }),
            shared: Some(SharedMemory {
                used: G,
                total: None,
            }),
            processes: Some(
                procs
                    .iter()
                    .map(|&(pid, used)| ProcessSample {
                        pid,
                        used: Some(used),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn the_fullest_card_with_the_other_programs_on_it() {
        let mut s = Session::default();
        assert_eq!(from_session(&s), None, "no reading yet");
        s.push(Snapshot {
            gpus: vec![
                gpu(0, 2 * G, &[(7, 2 * G)]),
                gpu(1, 20 * G, &[(42, 14 * G), (99, 4 * G), (100, 2 * G)]),
            ],
            ..Default::default()
        });
        let live = from_session(&s).unwrap();
        assert_eq!(
            live,
            LiveSnapshot {
                total_bytes: 24 * G,
                used_bytes: 20 * G + G / 2,
                other_processes_bytes: Some(6 * G),
                shared_used_bytes: Some(G),
                shared_rising: false,
            }
        );
    }
}
