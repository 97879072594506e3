//! Several live sources read as one: a machine with an NVIDIA and an AMD GPU shows both in
//! every snapshot. Each GPU after the first source's says which source read it
//! ([`GpuSample::source`]), and takes the next index after the GPUs before it, as the Windows
//! source numbers the adapters NVML does not know (`windows.rs`), so every GPU of the machine
//! has its own number on screen.

use super::sample::{Snapshot, SourceKind, SourceState};
use super::source::Source;

pub struct Combined {
    parts: Vec<Box<dyn Source>>,
}

impl Combined {
    /// One source over `parts`, in that order; a single part is returned as it is.
    pub fn of(mut parts: Vec<Box<dyn Source>>) -> Box<dyn Source> {
        if parts.len() == 1 {
            return parts.remove(0);
        }
        Box::new(Combined { parts })
    }
}

impl Source for Combined {
    /// The first part's kind (what a run's outcome names); each snapshot lists them all.
    fn kind(&self) -> SourceKind {
        self.parts.first().map_or(SourceKind::None, |p| p.kind())
    }

    fn sample(&mut self) -> Snapshot {
        let mut out = Snapshot {
            source: self.kind(),
            ..Snapshot::default()
        };
        for (n, part) in self.parts.iter_mut().enumerate() {
            let s = part.sample();
            if n == 0 {
                out.time_ms = s.time_ms;
            }
            // The first problem is the one shown; the GPUs say which of them it concerns.
            if out.state.is_ok() && !s.state.is_ok() {
                out.state = s.state;
            }
            out.notes.extend(s.notes);
            let next = out.gpus.len() as u32;
            out.gpus.extend(s.gpus.into_iter().map(|mut g| {
                if n > 0 {
                    g.index += next;
                    g.source = Some(g.source.unwrap_or(s.source));
                }
                g
            }));
        }
        if out.gpus.is_empty() && out.state.is_ok() {
            out.state = SourceState::NoGpu;
        }
        out
    }

    fn finished(&self) -> bool {
        self.parts.iter().all(|p| p.finished())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::sample::GpuSample;

    struct Fixed(SourceKind, SourceState, Vec<&'static str>);
    impl Source for Fixed {
        fn kind(&self) -> SourceKind {
            self.0
        }
        fn sample(&mut self) -> Snapshot {
            Snapshot {
                time_ms: 7,
                source: self.0,
                state: self.1.clone(),
                gpus: (0..)
                    .zip(&self.2)
                    .map(|(index, name)| GpuSample {
                        index,
                        name: (*name).into(),
                        uuid: Some(format!("{name}-uuid")),
                        ..Default::default()
                    })
                    .collect(),
                notes: Vec::new(),
            }
        }
    }

    #[test]
    fn every_gpu_of_every_part_with_its_source_and_its_own_index() {
        let mut c = Combined::of(vec![
            Box::new(Fixed(SourceKind::Nvml, SourceState::Ok, vec!["n0", "n1"])),
            Box::new(Fixed(
                SourceKind::Amd,
                SourceState::GpuLost("gone".into()),
                vec!["a0"],
            )),
        ]);
        assert_eq!(c.kind(), SourceKind::Nvml);
        let s = c.sample();
        let gpus: Vec<(u32, &str, Option<SourceKind>)> = s
            .gpus
            .iter()
            .map(|g| (g.index, g.name.as_str(), g.source))
            .collect();
        assert_eq!(
            gpus,
            [
                (0, "n0", None),
                (1, "n1", None),
                (2, "a0", Some(SourceKind::Amd))
            ]
        );
        assert_eq!(s.time_ms, 7);
        assert_eq!(s.state, SourceState::GpuLost("gone".into()));
        assert_eq!(s.sources(), [SourceKind::Nvml, SourceKind::Amd]);
        assert_eq!(s.source_label(), "NVIDIA (NVML) + AMD (sysfs)");
        assert!(!c.finished());
    }

    #[test]
    fn one_part_is_itself() {
        let mut c = Combined::of(vec![Box::new(Fixed(
            SourceKind::Amd,
            SourceState::Ok,
            vec!["a0"],
        ))]);
        let s = c.sample();
        assert_eq!((s.source, s.gpus[0].source), (SourceKind::Amd, None));
        assert_eq!(s.source_label(), "AMD (sysfs)");
    }
}
