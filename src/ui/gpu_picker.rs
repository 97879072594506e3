//! The GPU picker of the top bar: the cards this machine has first (read once from the same
//! telemetry source the monitor uses), then every catalog preset, each with its memory. The
//! choice is the planner's `[gpu]` section, so a detected card plans with the capacity its driver
//! reports rather than the marketing size (a 24 GB RTX 4090 reports 23.99 GiB).

use super::i18n::{tr, trf};
use super::monitor::Detect;
use super::widgets::search_pick;
use crate::catalog::Catalog;
use crate::types::workload::GpuSection;
use crate::units::{GIB, gib};
use egui::Ui;
use std::sync::mpsc::{self, Receiver, TryRecvError};

/// A card found on this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectedGpu {
    pub name: String,
    pub total_bytes: u64,
    /// The catalog preset of this card, when its name and size match one.
    pub preset: Option<String>,
}

impl DetectedGpu {
    /// The `[gpu]` section for this card: its preset (for bandwidth, bf16 …) with the capacity
    /// the driver reports, or that capacity alone for a card the catalog does not know.
    pub fn section(&self, count: Option<u32>) -> GpuSection {
        GpuSection {
            preset: self.preset.clone(),
            vram_gib: Some((gib(self.total_bytes) * 100.0).round() / 100.0),
            count,
            ..Default::default()
        }
    }
}

/// Where the one-off probe for the machine's cards stands.
#[derive(Default)]
enum Probe {
    #[default]
    NotStarted,
    Running(Receiver<Result<Vec<DetectedGpu>, String>>),
    Done(Result<Vec<DetectedGpu>, String>),
}

/// The picker's state; nothing of it is saved (the choice itself is the planner's workload).
#[derive(Default)]
pub struct GpuPicker {
    filter: String,
    probe: Probe,
}

/// One sample of the detected source, turned into cards; runs off the UI thread because loading
/// the driver library can take a moment.
fn probe(detect: Detect) -> Result<Vec<DetectedGpu>, String> {
    let mut source = detect().map_err(|s| s.message_in_app())?;
    let snapshot = source.sample();
    if !snapshot.state.is_ok() {
        return Err(snapshot.state.message_in_app());
    }
    let cat = Catalog::get();
    Ok(snapshot
        .gpus
        .iter()
        .filter_map(|g| {
            let total = g.memory.as_ref()?.total;
            Some(DetectedGpu {
                name: g.name.clone(),
                total_bytes: total,
                preset: cat.gpu_for_device(&g.name, total).map(|p| p.id.clone()),
            })
        })
        .collect())
}

/// Id prefix of the detected cards in the picker's list; catalog ids never contain ':'.
const DETECTED: &str = "detected:";

impl GpuPicker {
    /// Starts reading the machine's cards in the background (once); the UI is woken when done.
    pub fn start(&mut self, ctx: &egui::Context, detect: Detect) {
        if !matches!(self.probe, Probe::NotStarted) {
            return;
        }
        let (tx, rx) = mpsc::channel();
        let ctx = ctx.clone();
        let spawned = std::thread::Builder::new()
            .name("gpu-probe".into())
            .spawn(move || {
                tx.send(probe(detect)).ok();
                ctx.request_repaint();
            });
        self.probe = match spawned {
            Ok(_) => Probe::Running(rx),
            Err(e) => Probe::Done(Err(format!("cannot start the GPU probe: {e}"))),
        };
    }

    /// The cards found so far (empty while probing or when none could be read).
    pub fn detected(&mut self) -> &[DetectedGpu] {
        if let Probe::Running(rx) = &self.probe {
            match rx.try_recv() {
                Ok(r) => self.probe = Probe::Done(r),
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => {
                    self.probe = Probe::Done(Err("the GPU probe stopped".into()));
                }
            }
        }
        match &self.probe {
            Probe::Done(Ok(v)) => v,
            _ => &[],
        }
    }

    /// The combo box; edits `gpu` when the user picks a card.
    pub fn ui(&mut self, ui: &mut Ui, gpu: &mut GpuSection) {
        let detected = self.detected().to_vec();
        let cat = Catalog::get();
        let preset = gpu.preset.as_deref().and_then(|p| cat.gpu(p).ok());
        let shown_gib = gpu.vram_gib.or(preset.map(|p| p.vram_gib));
        let selected = match (preset, shown_gib) {
            (Some(p), Some(v)) => format!("{} ({v:.2} GiB)", p.name),
            (None, Some(v)) => trf("{gib} GiB GPU", &[("gib", &v)]),
            _ => tr("choose a GPU").to_string(),
        };
        // The texts are made lazily: the list is read only while the combo box is open, and the
        // top bar is drawn every frame.
        let this_machine = tr("this machine");
        let detected_ids: Vec<String> = (0..detected.len())
            .map(|i| format!("{DETECTED}{i}"))
            .collect();
        let items = detected_ids
            .iter()
            .zip(&detected)
            .map(|(id, d)| {
                let text = format!(
                    "{} ({:.2} GiB) — {this_machine}",
                    d.name,
                    d.total_bytes as f64 / GIB
                );
                (id.as_str(), text)
            })
            .chain(
                cat.gpus
                    .iter()
                    .map(|g| (g.id.as_str(), format!("{} ({} GiB)", g.name, g.vram_gib))),
            );
        let current = detected
            .iter()
            .position(|d| d.section(gpu.count) == *gpu)
            .map(|i| detected_ids[i].as_str())
            .or(gpu.preset.as_deref());
        let picked = search_pick(ui, tr("GPU"), selected, &mut self.filter, items, current);
        match picked.as_deref().map(|p| p.strip_prefix(DETECTED)) {
            Some(Some(i)) => {
                if let Some(d) = i.parse::<usize>().ok().and_then(|i| detected.get(i)) {
                    *gpu = d.section(gpu.count);
                }
            }
            Some(None) => {
                gpu.preset = picked;
                gpu.vram_gib = None;
            }
            None => {}
        }
        if let Probe::Done(Err(why)) = &self.probe {
            ui.weak(tr("no GPU found here")).on_hover_text(trf(
                "No GPU of this machine could be read: {why}",
                &[("why", why)],
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::sample::SourceState;

    #[test]
    fn a_detected_card_plans_with_its_driver_capacity() {
        let d = DetectedGpu {
            name: "NVIDIA GeForce RTX 4090".into(),
            total_bytes: 25_757_220_864,
            preset: Some("rtx-4090".into()),
        };
        let s = d.section(Some(2));
        assert_eq!(s.preset.as_deref(), Some("rtx-4090"));
        assert_eq!(s.vram_gib, Some(23.99));
        assert_eq!(s.count, Some(2));
        let g = s.resolve().unwrap();
        assert_eq!(g.vram_bytes, crate::units::gib_to_bytes(23.99));
    }

    #[test]
    fn without_a_gpu_the_probe_says_why() {
        let e = probe(|| Err(SourceState::NoGpu)).unwrap_err();
        assert!(!e.is_empty());
    }
}
