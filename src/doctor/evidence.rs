//! Evidence: what the doctor can see for itself — a pasted message, live numbers, a plan result,
//! the platform — reduced to facts the wizard trees test by name (`auto = ["…"]`) and to the
//! figures shown beside them.

use super::classify::{LiveSnapshot, MessageClass};
use crate::units::{GIB, human};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Declares `Fact` and `Fact::ALL` from one list, so the list the data checks walk can never
/// miss a variant.
macro_rules! facts {
    ($($(#[$doc:meta])* $v:ident,)+) => {
        /// Everything a tree step or a cause can be decided by. Names are the ones the data files use.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Fact {
            $($(#[$doc])* $v,)+
        }

        impl Fact {
            /// Every fact, for the data checks (each needs a label in facts.toml).
            pub const ALL: &'static [Fact] = &[$(Fact::$v,)+];
        }
    };
}

facts! {
    // Classes of a PyTorch OOM with figures (classify.rs).
    ImpossibleRequest,
    Cap,
    Spill,
    Unexplained,
    AnotherProcess,
    Fragmentation,
    NonPytorchMemory,
    PlainShortage,
    /// Free plus reserved-but-unallocated memory is below the request: defragmenting cannot help.
    DefragInsufficient,
    // Recognised by signatures.toml.
    PytorchOom,
    TensorflowOom,
    CudaOomNoFigures,
    MallocAsync,
    ExpandableUnsupported,
    Mps,
    Directml,
    EngineComfyui,
    EngineLlamacpp,
    EngineOllama,
    EngineVllm,
    EngineTransformers,
    EngineA1111,
    LlmWeights,
    LlmComputeBuffer,
    LlmKvCache,
    LlmInfo,
    HostRam,
    NoBatchSize,
    DeviceMapOffload,
    ComfyTiledVae,
    ComfyOomHandler,
    ComfyPartialLoad,
    ComfyLeak,
    ComfyStartup,
    NanImage,
    XformersBlack,
    ShapeMismatch,
    GameVramOom,
    DeviceRemoved,
    TexturePool,
    // Memory families recognised by signatures.toml (issue 16).
    LlmBufferTooBig,
    VllmStartupShort,
    VulkanOom,
    MetalOom,
    ForgeLowVram,
    WebuiStatus,
    VramPeakFull,
    SystemMemoryFallback,
    ComfyDynamicVram,
    // ComfyUI's console log, read by its format strings (comfy_log.rs, comfy_log.toml).
    /// The card and system memory ComfyUI saw ("Total VRAM … MB, total RAM … MB").
    ComfyLogCard,
    /// ComfyUI loads weights the classic way (no dynamic VRAM).
    ComfyClassicLoading,
    /// "Set vram state to: …".
    ComfyVramState,
    /// A model loaded whole ("loaded completely").
    ComfyModelLoaded,
    /// Lines with a known ComfyUI line's words that match none of its formats.
    ComfyLogUnread,
    /// The plan is for another card than the log's.
    ComfyLogOtherCard,
    /// The plan assumes the other memory mode.
    ComfyLogOtherMode,
    /// The plan fits, but ComfyUI loaded partially or ran out of memory.
    ComfyLogShortOfPlan,
    /// The plan does not fit, yet ComfyUI loaded every model whole.
    ComfyLogBeatsPlan,
    EngineDeepspeed,
    /// A traceback through the diffusers package.
    EngineDiffusers,
    /// A backward pass or optimizer step in the traceback: the message is from training.
    TrainingStep,
    EngineVideoTool,
    /// AMD's ROCm/HIP stack: its fixes (HSA_OVERRIDE_GFX_VERSION) do nothing on CUDA.
    EngineRocm,
    // GPU errors that are not about memory (issue 16).
    DriverMismatch,
    NoGpu,
    NoKernelImage,
    IllegalAccess,
    DeviceAssert,
    GpuFellOff,
    GpuHang,
    /// Text that names a GPU, a driver or a GPU runtime, with no known message in it.
    GpuUnrecognised,
    // Live telemetry.
    LiveOtherProcesses,
    LiveVramFull,
    LiveSpilling,
    // A watched run's timeline (src/watch/evidence.rs).
    TimelineLeak,
    TimelineFirstStepSpike,
    TimelineFreedBetweenPhases,
    TimelineOtherProcess,
    TimelineSpill,
    TimelinePeakFull,
    // Platform.
    OsWindows,
    OsLinux,
    OsMacos,
    // Planner result.
    PlanDoesNotFit,
}

impl Fact {
    /// The name the data files use.
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// A timeline finding that names a cause by itself (a leak, the first step's jump, a
    /// process that arrived, a spill). It is more telling than a message's class, which only
    /// says that memory ran out, so it leads the observations; the rest of the timeline
    /// (the card was full at the peak, memory handed back) follows the message.
    pub fn leads_over_message(self) -> bool {
        matches!(
            self,
            Fact::TimelineLeak
                | Fact::TimelineFirstStepSpike
                | Fact::TimelineOtherProcess
                | Fact::TimelineSpill
        )
    }
}

impl From<MessageClass> for Fact {
    fn from(c: MessageClass) -> Fact {
        match c {
            MessageClass::ImpossibleRequest => Fact::ImpossibleRequest,
            MessageClass::Cap => Fact::Cap,
            MessageClass::Spill => Fact::Spill,
            MessageClass::Unexplained => Fact::Unexplained,
            MessageClass::AnotherProcess => Fact::AnotherProcess,
            MessageClass::Fragmentation => Fact::Fragmentation,
            MessageClass::NonPytorchMemory => Fact::NonPytorchMemory,
            MessageClass::PlainShortage => Fact::PlainShortage,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Platform {
    Windows,
    Linux,
    Macos,
}

/// The planner's verdict for the workload, as plain data (the doctor does not run the planner).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanSummary {
    pub fits: bool,
    pub needed_bytes: u64,
    pub capacity_bytes: u64,
    /// ComfyUI's memory mode the plan assumes (ComfyUI plans only).
    #[serde(default)]
    pub comfy_mode: Option<crate::types::options::MemoryMode>,
}

/// Where an observation came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A pasted error message or log.
    Message,
    /// Live telemetry numbers.
    Live,
    /// The planner's result.
    Plan,
    /// The platform the user named.
    Platform,
    /// The memory timeline of a watched run (`vram-doctor run`).
    Timeline,
}

/// One thing the doctor saw: the fact it establishes and the figures that show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub fact: Fact,
    pub source: Source,
    /// Figures for the fact's template in facts.toml, and `matched` (the text that was
    /// recognised) for signature facts.
    pub values: BTreeMap<String, String>,
}

/// Used memory at or above this share of the card counts as full (symptoms.md §0: the spill
/// signal is "dedicated ≈ 100 %"; 95 % leaves room for the driver's own reserve).
const FULL_SHARE: f64 = 0.95;

/// Other processes count from max(1 GiB, 10 % of the card), as in the message rules
/// (symptoms.md §1.2 rule 5).
fn significant(total: u64) -> u64 {
    GIB.max(0.1 * total as f64) as u64
}

/// Facts from live numbers.
pub fn observe_live(live: &LiveSnapshot) -> Vec<Observation> {
    let mut out = Vec::new();
    let values = |pairs: &[(&str, u64)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), human(*v)))
            .collect()
    };
    let total = live.total_bytes;
    if let Some(others) = live.other_processes_bytes
        && total > 0
        && others >= significant(total)
    {
        out.push(Observation {
            fact: Fact::LiveOtherProcesses,
            source: Source::Live,
            values: values(&[("others", others), ("total", total)]),
        });
    }
    let full = total > 0 && live.used_bytes as f64 >= FULL_SHARE * total as f64;
    if full {
        out.push(Observation {
            fact: Fact::LiveVramFull,
            source: Source::Live,
            values: values(&[("used", live.used_bytes), ("total", total)]),
        });
    }
    // Spilling = dedicated full AND shared growing (symptoms.md §0); shared use alone may be
    // pinned host memory (Comfy-Org/ComfyUI#15679).
    if full && live.shared_rising {
        out.push(Observation {
            fact: Fact::LiveSpilling,
            source: Source::Live,
            values: values(&[("shared", live.shared_used_bytes.unwrap_or(0))]),
        });
    }
    out
}

pub fn observe_platform(p: Platform) -> Observation {
    let fact = match p {
        Platform::Windows => Fact::OsWindows,
        Platform::Linux => Fact::OsLinux,
        Platform::Macos => Fact::OsMacos,
    };
    Observation {
        fact,
        source: Source::Platform,
        values: BTreeMap::new(),
    }
}

pub fn observe_plan(plan: &PlanSummary) -> Option<Observation> {
    (!plan.fits).then(|| Observation {
        fact: Fact::PlanDoesNotFit,
        source: Source::Plan,
        values: BTreeMap::from([
            ("needed".to_string(), human(plan.needed_bytes)),
            ("total".to_string(), human(plan.capacity_bytes)),
        ]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_every_fact_once_with_its_data_name() {
        let mut names: Vec<String> = Fact::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(Fact::Fragmentation.name(), "fragmentation");
        assert_eq!(Fact::LiveSpilling.name(), "live_spilling");
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Fact::ALL.len());
    }

    #[test]
    fn shared_use_alone_is_not_spilling() {
        let gib = GIB as u64;
        let mut live = LiveSnapshot {
            total_bytes: 8 * gib,
            used_bytes: 5 * gib,
            shared_used_bytes: Some(6 * gib),
            shared_rising: true,
            other_processes_bytes: Some(2 * gib),
        };
        let facts = |l: &LiveSnapshot| observe_live(l).iter().map(|o| o.fact).collect::<Vec<_>>();
        assert_eq!(facts(&live), vec![Fact::LiveOtherProcesses]);
        live.used_bytes = 8 * gib - 100;
        assert_eq!(
            facts(&live),
            vec![
                Fact::LiveOtherProcesses,
                Fact::LiveVramFull,
                Fact::LiveSpilling
            ]
        );
    }
}
