//! A synthetic source for machines with no supported GPU, so the monitor can be tried anywhere.
//! Every snapshot says `SourceKind::Demo` and the GPU name starts with "DEMO", so it is never
//! mistaken for a measurement. Values are a pure function of (workload, seed, tick): the same
//! seed gives the same run, which the tests and the GUI's screenshots rely on.
//!
//! What it plays is a [`DemoWorkload`]: a card and one workload on it, as plain figures. The app
//! builds one from the planner's plan (the card planned for, the plan's peak, the shape of the
//! workload over time: an LLM server, a training run, a ComfyUI queue or a game), so the demo
//! shows what the user planned; [`DemoWorkload::default`] (the CLI's `monitor --demo`) is a
//! ComfyUI queue on an RTX 4090 that ends in a leak filling the card, for the detectors' alerts.
//! [`DemoSource::history`] gives the readings of the minute before the start, so the plots begin
//! with something to show.

use super::sample::{
    GpuSample, GpuStatus, MemorySample, ProcessKind, ProcessSample, Snapshot, SourceKind,
    SourceState, ThrottleReason, now_ms,
};
use super::source::Source;
use crate::types::message::Message;

const MIB: u64 = 1024 * 1024;
/// An RTX 4090's framebuffer as NVML reports it (24564 MiB, `monitor.md` §3.3) and a typical
/// reserved figure for it; other cards' reserve is scaled from it [derived].
const RTX_4090_MIB: u64 = 24564;
const RTX_4090_RESERVED_MIB: u64 = 300;
/// The RTX 4090's board power limit (NVIDIA's specifications page: 450 W "Total Graphics Power").
const RTX_4090_POWER_W: f64 = 450.0;
/// The leaking story restarts the program every `PERIOD` ticks; the leak starts at `LEAK_FROM`.
const PERIOD: u64 = 600;
const LEAK_FROM: u64 = 300;
const LEAK_MIB_PER_TICK: f64 = 36.0;
/// The desktop's processes on every demo card (an X server and a browser), MiB.
const DESKTOP: [(u32, &str, u64); 2] = [(1201, "Xorg", 260), (2417, "firefox", 410)];

/// How the workload's memory moves over time; each holds the process's own bytes (what
/// nvidia-smi lists for it) at the points of its cycle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DemoStory {
    /// An LLM answering requests: the weights load, then each request's KV cache and
    /// activations rise to `peak_bytes` and are freed back to `idle_bytes`. An engine that
    /// allocates its cache once for the whole context (llama.cpp's `llama_context`, vLLM's
    /// `gpu_memory_utilization` pool) idles at the peak; transformers' growing cache at the weights.
    Inference { idle_bytes: u64, peak_bytes: u64 },
    /// A training run: weights, gradients and optimizer states stay (`floor_bytes`); each step's
    /// activations rise through the forward pass to `peak_bytes` and are freed by the backward
    /// pass, the per-step saw-tooth.
    Training { floor_bytes: u64, peak_bytes: u64 },
    /// A ComfyUI queue: the models load, then each image encodes the prompt, denoises and
    /// decodes, each stage holding its own weights and working memory.
    DiffusionQueue {
        encode_bytes: u64,
        denoise_bytes: u64,
        decode_bytes: u64,
    },
    /// A game: steady use at `steady_bytes`, with spikes to `peak_bytes` when a new area
    /// streams in.
    Game { steady_bytes: u64, peak_bytes: u64 },
}

/// The message that names the demo's card: the card's own name inside words that say the data
/// is made up, so nobody takes it for a reading. Samples carry its English text (the JSON and the
/// command line show it); the GUI says it in its language through [`card_in`].
const GPU_LABEL: &str = "telemetry.demo.gpu";

/// The name the demo gives its card ("DEMO NVIDIA GeForce RTX 4090 (synthetic data)").
pub fn gpu_label(card: &str) -> Message {
    Message::new(GPU_LABEL).text("card", card)
}

/// The card's own name inside a name [`gpu_label`] made, `None` for any other name.
pub fn card_in(name: &str) -> Option<&str> {
    let label = Message::new(GPU_LABEL);
    let (before, after) = label.english_template().split_once("{card}")?;
    name.strip_prefix(before)?.strip_suffix(after)
}

/// The card and the workload the demo plays.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoWorkload {
    /// The card's name; the demo reports it inside [`gpu_label`] ("DEMO {name} (synthetic data)").
    pub gpu_name: String,
    pub total_bytes: u64,
    /// The board power limit, when known (`None`: the demo reports no power, as a card whose
    /// driver does not say).
    pub power_limit_w: Option<f64>,
    /// The workload's process image name.
    pub process: String,
    pub story: DemoStory,
    /// After five minutes the process leaks until the card is full, then restarts.
    pub leaks: bool,
}

impl Default for DemoWorkload {
    /// A ComfyUI queue with a 9 GiB model on an RTX 4090 that starts leaking after five minutes.
    fn default() -> Self {
        DemoWorkload {
            gpu_name: "GeForce RTX 4090".into(),
            total_bytes: RTX_4090_MIB * MIB,
            power_limit_w: Some(RTX_4090_POWER_W),
            process: "python (ComfyUI demo)".into(),
            story: DemoStory::DiffusionQueue {
                encode_bytes: 9200 * MIB,
                denoise_bytes: 11_000 * MIB,
                decode_bytes: 13_400 * MIB,
            },
            leaks: true,
        }
    }
}

/// One stretch of the story: the process's memory goes linearly from `from` to `to` bytes over
/// `ticks` readings, at `busy` % GPU utilization and `pcie` KB/s to the GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Phase {
    ticks: u64,
    from: u64,
    to: u64,
    busy: f64,
    pcie: f64,
}

const fn phase(ticks: u64, from: u64, to: u64, busy: f64, pcie: f64) -> Phase {
    Phase {
        ticks,
        from,
        to,
        busy,
        pcie,
    }
}

/// PCIe traffic while loading weights (3 GB/s, a PCIe 4.0 x16 link reading from disk cache),
/// while computing (weights already resident), and idle, KB/s.
const LOADING: f64 = 3_000_000.0;
const COMPUTING: f64 = 80_000.0;
const IDLE: f64 = 50.0;

impl DemoStory {
    /// The story as phases: played once from the start (the program starts and loads), then
    /// the cycle, repeated.
    fn phases(self) -> (Vec<Phase>, Vec<Phase>) {
        // The program starts (3 quiet readings), then loads to its first level over 10.
        let intro = |to, busy| vec![phase(3, 0, 0, 2.0, IDLE), phase(10, 0, to, busy, LOADING)];
        match self {
            DemoStory::Inference {
                idle_bytes: i,
                peak_bytes: p,
            } => (
                intro(i, 15.0),
                // A request: the prompt is processed at once (half the cache), the answer
                // grows it token by token, then a pause with the request's memory freed.
                vec![
                    phase(1, i, i + (p.saturating_sub(i)) / 2, 97.0, COMPUTING),
                    phase(6, i + (p.saturating_sub(i)) / 2, p, 80.0, IDLE),
                    phase(4, i, i, 3.0, IDLE),
                ],
            ),
            DemoStory::Training {
                floor_bytes: f,
                peak_bytes: p,
            } => (
                intro(f, 15.0),
                // One step: the forward pass over three readings, the backward pass frees.
                vec![
                    phase(3, f, p, 97.0, COMPUTING),
                    phase(1, p, f, 98.0, COMPUTING),
                ],
            ),
            DemoStory::DiffusionQueue {
                encode_bytes: e,
                denoise_bytes: d,
                decode_bytes: v,
            } => (
                intro(e, 15.0),
                // One image: the prompt, 15 sampling steps' worth of readings, the VAE decode.
                vec![
                    phase(1, e, e, 60.0, COMPUTING),
                    phase(15, d, d, 95.0, COMPUTING),
                    phase(3, v, v, 90.0, COMPUTING),
                    phase(1, e, e, 20.0, IDLE),
                ],
            ),
            DemoStory::Game {
                steady_bytes: s,
                peak_bytes: p,
            } => (
                intro(s, 40.0),
                // Playing, then a new area streams in and the old one is released.
                vec![
                    phase(30, s, s, 97.0, COMPUTING),
                    phase(3, s, p, 98.0, LOADING),
                    phase(4, p, p, 97.0, COMPUTING),
                    phase(3, p, s, 97.0, COMPUTING),
                ],
            ),
        }
    }
}

/// The phase at `t` in `phases` (t less than their total length) and how far into it.
fn at(phases: &[Phase], mut t: u64) -> (Phase, u64) {
    for p in phases {
        if t < p.ticks {
            return (*p, t);
        }
        t -= p.ticks;
    }
    let last = *phases.last().expect("a story has phases");
    (last, last.ticks)
}

fn length(phases: &[Phase]) -> u64 {
    phases.iter().map(|p| p.ticks).sum()
}

pub struct DemoSource {
    workload: DemoWorkload,
    intro: Vec<Phase>,
    cycle: Vec<Phase>,
    seed: u64,
    tick: u64,
}

impl DemoSource {
    /// The default story ([`DemoWorkload::default`]).
    pub fn new(seed: u64) -> Self {
        DemoSource::of(DemoWorkload::default(), seed)
    }

    /// A demo of `workload`.
    pub fn of(workload: DemoWorkload, seed: u64) -> Self {
        let (intro, cycle) = workload.story.phases();
        DemoSource {
            workload,
            intro,
            cycle,
            seed,
            tick: 0,
        }
    }

    /// The readings of the `n` seconds before `now_ms`, one a second, oldest first, so the
    /// plots start full; the next [`Source::sample`] continues the story from there.
    pub fn history(&mut self, now_ms: u64, n: u64) -> Vec<Snapshot> {
        (0..n)
            .map(|i| self.snapshot(now_ms.saturating_sub((n - i) * 1000)))
            .collect()
    }

    fn snapshot(&mut self, time_ms: u64) -> Snapshot {
        let g = self.gpu_at(self.tick);
        self.tick += 1;
        Snapshot {
            time_ms,
            source: SourceKind::Demo,
            state: SourceState::Ok,
            gpus: vec![g],
            notes: Vec::new(),
        }
    }

    /// The workload's process memory (MiB, before the card's limit), utilization % and PCIe
    /// KB/s at a tick.
    fn story_at(&self, tick: u64) -> (f64, f64, f64) {
        let t = if self.workload.leaks {
            tick % PERIOD
        } else {
            tick
        };
        let intro = length(&self.intro);
        let (p, into) = if t < intro {
            at(&self.intro, t)
        } else {
            at(&self.cycle, (t - intro) % length(&self.cycle).max(1))
        };
        let f = if p.ticks <= 1 {
            1.0
        } else {
            into as f64 / (p.ticks - 1) as f64
        };
        let bytes = p.from as f64 + (p.to as f64 - p.from as f64) * f;
        let leak = if self.workload.leaks && t >= LEAK_FROM {
            LEAK_MIB_PER_TICK * (t - LEAK_FROM) as f64
        } else {
            0.0
        };
        (bytes / MIB as f64 + leak, p.busy, p.pcie)
    }

    /// The demo GPU at a given tick.
    pub fn gpu_at(&self, tick: u64) -> GpuSample {
        let w = &self.workload;
        let noise = |k: u64| unit(splitmix(self.seed ^ tick.wrapping_mul(0x9E37_79B9) ^ k));
        let mut processes: Vec<ProcessSample> = DESKTOP
            .iter()
            .map(|&(pid, name, mib)| ProcessSample {
                pid,
                name: Some(name.into()),
                used: Some(mib * MIB),
                shared: None,
                kind: ProcessKind::Graphics,
            })
            .collect();
        let total_mib = w.total_bytes / MIB;
        let reserved_mib = total_mib * RTX_4090_RESERVED_MIB / RTX_4090_MIB;
        let desktop_mib: u64 = DESKTOP.iter().map(|d| d.2).sum();
        let (mib, busy, pcie_rx) = self.story_at(tick);
        // The card is full: the rest of the desktop and the reserve stay.
        let cap = total_mib.saturating_sub(reserved_mib + desktop_mib + 1) as f64;
        let mib = mib.min(cap);
        if mib >= 1.0 {
            processes.push(ProcessSample {
                pid: 31337,
                name: Some(w.process.clone()),
                used: Some(mib as u64 * MIB),
                shared: None,
                kind: match w.story {
                    DemoStory::Game { .. } => ProcessKind::Graphics,
                    _ => ProcessKind::Compute,
                },
            });
        }
        let used: u64 = processes.iter().filter_map(|p| p.used).sum();
        let util = (busy + 4.0 * (noise(1) - 0.5)).clamp(0.0, 100.0);
        let temp = 38.0 + 0.42 * util + 2.0 * noise(2);
        // Board power from idle (~6 %) to near the limit at full load [derived: the 4090's
        // 28 W idle and ~430 W busy readings of the original story].
        let power = w
            .power_limit_w
            .map(|limit| limit * (0.06 + 0.0089 * util + 0.02 * noise(3)));
        let mut throttle = vec![];
        if util < 5.0 {
            throttle.push(ThrottleReason::Idle);
        }
        if let (Some(p), Some(limit)) = (power, w.power_limit_w)
            && p > 0.93 * limit
        {
            throttle.push(ThrottleReason::SwPowerCap);
        }
        GpuSample {
            index: 0,
            uuid: Some(format!("DEMO-{:08x}", self.seed as u32)),
            name: gpu_label(&w.gpu_name).to_string(),
            host: None,
            source: None,
            status: GpuStatus::Ok,
            memory: Some(MemorySample {
                total: w.total_bytes,
                used,
                reserved: Some(reserved_mib * MIB),
                used_includes_reserved: false,
            }),
            shared: None,
            util_gpu_pct: Some(util.round() as u32),
            util_mem_pct: Some((util * 0.45).round() as u32),
            temp_c: Some(temp.round() as u32),
            power_w: power.map(|p| (p * 10.0).round() / 10.0),
            power_limit_w: w.power_limit_w,
            clock_graphics_mhz: None,
            clock_mem_mhz: None,
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
        self.snapshot(now_ms())
    }
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

    const GIB: u64 = 1 << 30;

    fn game_on_8gb() -> DemoWorkload {
        DemoWorkload {
            gpu_name: "GeForce RTX 4060".into(),
            total_bytes: 8 * GIB,
            power_limit_w: None,
            process: "HogwartsLegacy.exe".into(),
            story: DemoStory::Game {
                steady_bytes: 5 * GIB,
                peak_bytes: 6 * GIB,
            },
            leaks: false,
        }
    }

    fn process_mib(g: &GpuSample, pid: u32) -> Option<u64> {
        let p = g.processes.as_ref()?.iter().find(|p| p.pid == pid)?;
        p.used.map(|b| b / MIB)
    }

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
        let stories = [DemoWorkload::default(), game_on_8gb()];
        for w in stories {
            let mut d = DemoSource::of(w.clone(), 1);
            for tick in 0..PERIOD {
                let s = d.sample();
                assert_eq!(s.source, SourceKind::Demo);
                let g = &s.gpus[0];
                assert_eq!(g.name, format!("DEMO {} (synthetic data)", w.gpu_name));
                assert_eq!(card_in(&g.name), Some(w.gpu_name.as_str()));
                assert_eq!(
                    card_in(&w.gpu_name),
                    None,
                    "a real card's name is no demo's"
                );
                let m = g.memory.unwrap();
                assert_eq!(m.total, w.total_bytes);
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
                if let Some(limit) = g.power_limit_w {
                    assert!(g.power_w.unwrap() <= limit * 1.05);
                }
            }
        }
        // The leaking story reaches a nearly full card before it restarts.
        let d = DemoSource::new(1);
        let peak = (0..PERIOD)
            .map(|t| d.gpu_at(t).memory.unwrap().fill())
            .fold(0.0, f64::max);
        assert!(peak > 0.97, "peak fill {peak}");
        assert!(d.gpu_at(1).memory.unwrap().fill() < 0.1);
    }

    #[test]
    fn the_game_story_is_steady_with_spikes_to_its_peak_and_never_leaks() {
        let d = DemoSource::of(game_on_8gb(), 3);
        let mib: Vec<u64> = (0..2000)
            .map(|t| process_mib(&d.gpu_at(t), 31337).unwrap_or(0))
            .collect();
        let max = *mib.iter().max().unwrap();
        assert_eq!(max, 6 * 1024, "spikes reach the plan's peak");
        let playing = mib[20..].iter().filter(|m| **m == 5 * 1024).count();
        assert!(playing > mib.len() / 2, "mostly steady: {playing}");
        assert_eq!(mib[1960..].iter().max(), Some(&max), "no leak, no restart");
        let g = d.gpu_at(50);
        let p = g.processes.unwrap().into_iter().find(|p| p.pid == 31337);
        assert_eq!(p.unwrap().kind, ProcessKind::Graphics);
        assert_eq!(
            d.gpu_at(50).power_w,
            None,
            "no power limit given, none made up"
        );
    }

    #[test]
    fn training_steps_saw_between_floor_and_peak() {
        let d = DemoSource::of(
            DemoWorkload {
                story: DemoStory::Training {
                    floor_bytes: 10 * GIB,
                    peak_bytes: 14 * GIB,
                },
                leaks: false,
                ..DemoWorkload::default()
            },
            1,
        );
        let mib: Vec<u64> = (30..70)
            .map(|t| process_mib(&d.gpu_at(t), 31337).unwrap())
            .collect();
        let drops = mib.windows(2).filter(|w| w[1] < w[0]).count();
        assert_eq!(drops, 10, "one drop per step of four readings: {mib:?}");
        assert_eq!(*mib.iter().min().unwrap(), 10 * 1024);
        assert_eq!(*mib.iter().max().unwrap(), 14 * 1024);
    }

    #[test]
    fn history_fills_the_minute_before_now_and_the_story_goes_on_from_it() {
        let mut d = DemoSource::of(game_on_8gb(), 9);
        let past = d.history(1_000_000, 60);
        assert_eq!(past.len(), 60);
        assert_eq!(past[0].time_ms, 1_000_000 - 60_000);
        assert_eq!(past[59].time_ms, 999_000);
        // The program started within that minute: its load is in the history, not after it.
        let at = |s: &Snapshot| process_mib(&s.gpus[0], 31337).unwrap_or(0);
        assert_eq!(at(&past[0]), 0);
        assert_eq!(at(&past[59]), 5 * 1024);
        let next = d.sample();
        assert_eq!(next.gpus[0], DemoSource::of(game_on_8gb(), 9).gpu_at(60));
    }

    #[test]
    fn a_plan_over_the_card_fills_it_and_stops_there() {
        let mut w = game_on_8gb();
        w.story = DemoStory::Game {
            steady_bytes: 9 * GIB,
            peak_bytes: 10 * GIB,
        };
        let d = DemoSource::of(w, 1);
        for t in 0..200 {
            let m = d.gpu_at(t).memory.unwrap();
            assert!(m.unavailable() < m.total, "tick {t}");
        }
    }
}
