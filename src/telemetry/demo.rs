//! A synthetic source for machines with no supported GPU, so the monitor can be tried anywhere.
//! Every snapshot says `SourceKind::Demo` and the GPU name starts with "DEMO", so it is never
//! mistaken for a measurement. Values are a pure function of (seed, tick): the same seed gives the
//! same run, which the tests and the GUI's screenshots rely on.
//!
//! The story repeats every 600 ticks: a desktop (Xorg, a browser) idles, a ComfyUI-like Python
//! process loads a 9 GiB model over PCIe, generates images (memory saw-tooth, 95 % busy, warm and
//! near the power limit), starts leaking 36 MiB per tick, fills the card, and restarts.

use super::sample::{
    GpuSample, GpuStatus, MemorySample, ProcessKind, ProcessSample, Snapshot, SourceKind,
    SourceState, ThrottleReason, now_ms,
};
use super::source::Source;

const MIB: u64 = 1024 * 1024;
/// An RTX 4090's framebuffer as NVML reports it (24564 MiB, `monitor.md` §3.3) and a typical
/// reserved figure for it.
const TOTAL_MIB: u64 = 24564;
const RESERVED_MIB: u64 = 300;
const PERIOD: u64 = 600;
const LEAK_MIB_PER_TICK: f64 = 36.0;

pub struct DemoSource {
    seed: u64,
    tick: u64,
}

impl DemoSource {
    pub fn new(seed: u64) -> Self {
        DemoSource { seed, tick: 0 }
    }

    /// The demo GPU at a given tick.
    pub fn gpu_at(&self, tick: u64) -> GpuSample {
        let t = tick % PERIOD;
        let noise = |k: u64| unit(splitmix(self.seed ^ tick.wrapping_mul(0x9E37_79B9) ^ k));
        let desktop = [
            (1201u32, "Xorg", 260u64, ProcessKind::Graphics),
            (2417, "firefox", 410, ProcessKind::Graphics),
        ];
        let mut processes: Vec<ProcessSample> = desktop
            .iter()
            .map(|&(pid, name, mib, kind)| ProcessSample {
                pid,
                name: Some(name.into()),
                used: Some(mib * MIB),
                shared: None,
                kind,
            })
            .collect();
        // Python process memory in MiB by phase.
        let (py_mib, busy, pcie_rx) = match t {
            0..30 => (0.0, 2.0, 50.0),
            30..60 => (9200.0 * (t - 30) as f64 / 30.0, 15.0, 3_000_000.0),
            60..300 => (9200.0 + 4200.0 * saw(t), 95.0, 80_000.0),
            // The leak on top of the saw-tooth, until the card is full.
            _ => (
                9200.0 + 4200.0 * saw(t) + LEAK_MIB_PER_TICK * (t - 300) as f64,
                96.0,
                90_000.0,
            ),
        };
        let cap = (TOTAL_MIB - RESERVED_MIB) as f64 - 670.0 - 1.0;
        let py_mib = py_mib.min(cap);
        if py_mib > 0.0 {
            processes.push(ProcessSample {
                pid: 31337,
                name: Some("python (ComfyUI demo)".into()),
                used: Some(py_mib as u64 * MIB),
                shared: None,
                kind: ProcessKind::Compute,
            });
        }
        let used: u64 = processes.iter().filter_map(|p| p.used).sum();
        let util = (busy + 4.0 * (noise(1) - 0.5)).clamp(0.0, 100.0);
        let temp = 38.0 + 0.42 * util + 2.0 * noise(2);
        let power = 28.0 + 4.0 * util + 10.0 * noise(3);
        let mut throttle = vec![];
        if util < 5.0 {
            throttle.push(ThrottleReason::Idle);
        }
        if power > 420.0 {
            throttle.push(ThrottleReason::SwPowerCap);
        }
        GpuSample {
            index: 0,
            uuid: Some(format!("DEMO-{:08x}", self.seed as u32)),
            name: "DEMO GeForce RTX 4090 (synthetic data)".into(),
            host: None,
            source: None,
            status: GpuStatus::Ok,
            memory: Some(MemorySample {
                total: TOTAL_MIB * MIB,
                used,
                reserved: Some(RESERVED_MIB * MIB),
                used_includes_reserved: false,
            }),
            shared: None,
            util_gpu_pct: Some(util.round() as u32),
            util_mem_pct: Some((util * 0.45).round() as u32),
            temp_c: Some(temp.round() as u32),
            power_w: Some((power * 10.0).round() / 10.0),
            power_limit_w: Some(450.0),
            clock_graphics_mhz: Some(if util > 10.0 { 2520 } else { 210 }),
            clock_mem_mhz: Some(if util > 10.0 { 10501 } else { 405 }),
            pcie_rx_kbps: Some((pcie_rx * (0.8 + 0.4 * noise(4))) as u32),
            pcie_tx_kbps: Some((pcie_rx * 0.05 * (0.8 + 0.4 * noise(5))) as u32),
            throttle: Some(throttle),
            processes: Some(processes),
        }
    }
}

impl Source for DemoSource {
    fn kind(&self) -> SourceKind {
        SourceKind::Demo
    }

    fn sample(&mut self) -> Snapshot {
        let g = self.gpu_at(self.tick);
        self.tick += 1;
        Snapshot {
            time_ms: now_ms(),
            source: SourceKind::Demo,
            state: SourceState::Ok,
            gpus: vec![g],
            notes: Vec::new(),
        }
    }
}

/// One image generation every 20 ticks: memory rises while sampling, drops after the VAE decode.
fn saw(t: u64) -> f64 {
    (t % 20) as f64 / 19.0
}

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny, well-mixed hash so the demo needs no RNG crate.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_run_other_seed_other_noise() {
        let (mut a, mut b, c) = (DemoSource::new(7), DemoSource::new(7), DemoSource::new(8));
        for _ in 0..50 {
            let (x, y) = (a.sample(), b.sample());
            assert_eq!(x.gpus, y.gpus);
        }
        assert_ne!(
            a.gpu_at(100).temp_c.zip(a.gpu_at(100).power_w),
            c.gpu_at(100).temp_c.zip(c.gpu_at(100).power_w)
        );
    }

    #[test]
    fn labelled_as_demo_and_physically_plausible() {
        let mut d = DemoSource::new(1);
        for tick in 0..PERIOD {
            let s = d.sample();
            assert_eq!(s.source, SourceKind::Demo);
            let g = &s.gpus[0];
            assert!(g.name.starts_with("DEMO"));
            let m = g.memory.unwrap();
            assert!(m.unavailable() <= m.total, "tick {tick}: {m:?}");
            let procs: u64 = g
                .processes
                .as_ref()
                .unwrap()
                .iter()
                .filter_map(|p| p.used)
                .sum();
            assert_eq!(procs, m.used, "process memory adds up to used");
            assert!(g.util_gpu_pct.unwrap() <= 100);
            assert!(g.power_w.unwrap() <= g.power_limit_w.unwrap() * 1.05);
        }
        // The story reaches a nearly full card before it restarts.
        let peak = (0..PERIOD)
            .map(|t| d.gpu_at(t).memory.unwrap().fill())
            .fold(0.0, f64::max);
        assert!(peak > 0.97, "peak fill {peak}");
        assert!(d.gpu_at(10).memory.unwrap().fill() < 0.1);
    }
}
