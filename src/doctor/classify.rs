//! What a PyTorch OOM message's figures say about the cause.
//!
//! Rules and thresholds from `../shared/research/symptoms.md` §1.2, evaluated in that order; the
//! first rule that holds is the primary class, later ones that also hold are listed after it.
//! Checked there against the pasted samples (P1 → plain shortage, P5/Q3 → impossible,
//! P6/P7 → fragmentation, P10 → cap, Q4 → unexplained); the tests here re-check them.

use super::pytorch::{Format, OomFigures};
use crate::units::{GIB, MIB};
use serde::{Deserialize, Serialize};

/// The cause families an OOM message can point at (issue 6's list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageClass {
    /// One request larger than the whole device: nothing to free, the input or code is too big.
    ImpossibleRequest,
    /// A per-process cap (memory fraction, MPS watermark) and not the device ran out.
    Cap,
    /// PyTorch holds more than the device has: running in system memory (sysmem fallback, WSL).
    Spill,
    /// The device reported enough free memory and still refused: not explainable from the text.
    Unexplained,
    /// Another process holds a large share of the device.
    AnotherProcess,
    /// Memory reserved but trapped in partly used segments would have covered the request.
    Fragmentation,
    /// This process holds a lot of memory outside PyTorch's allocator (extensions, libraries).
    NonPytorchMemory,
    /// The work simply needs more memory than is there.
    PlainShortage,
}

/// Live numbers the caller may pass in (from the monitor or a one-off snapshot); plain data so
/// the doctor does not depend on the telemetry module.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveSnapshot {
    pub total_bytes: u64,
    pub used_bytes: u64,
    /// Sum of every other process's memory on this GPU, when known.
    pub other_processes_bytes: Option<u64>,
    /// Windows "Shared GPU memory" in use by the workload, when known.
    pub shared_used_bytes: Option<u64>,
    /// Shared usage grew over the last samples while dedicated memory was full.
    pub shared_rising: bool,
}

/// Figures derived from the message, for the evidence shown to the user.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    pub reserved: Option<u64>,
    /// This process's memory outside PyTorch's allocator (context, cuBLAS/cuDNN, extensions).
    pub in_process_other: Option<u64>,
    /// Memory held by other processes: listed by NVML, from live telemetry, or estimated.
    pub foreign: u64,
    pub foreign_estimated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Classification {
    /// Primary class first.
    pub classes: Vec<MessageClass>,
    pub derived: Derived,
}

/// The most this process holds outside PyTorch's reservation without anything being wrong: the
/// CUDA context, cuBLAS/cuDNN workspaces and kernels (symptoms.md §1.2: 0.3–1 GiB, P3 shows
/// 0.86 GiB; issue 16: up to 1.5 GiB with large kernel images). Memory on the card that these
/// can explain is not evidence of another process.
const OWN_OVERHEAD_MAX: f64 = 1.5 * GIB;

/// Trapped memory counts as fragmentation only from this share of the card (and above the
/// request): 80 MiB unallocated on a 4 GiB card is allocator granularity, not fragmentation
/// (issue 16). P7's 3.87 GiB of 79 GiB (4.9 %) is the smallest real case in the research set.
fn meaningful(total: u64) -> u64 {
    (256.0 * MIB).max(0.025 * total as f64) as u64
}

/// "Free" only a little above the request still counts as full: allocations are rounded up to
/// driver granularity (symptoms.md §1.2 rule 4: max(64 MiB, 1 % of the device); P3 has 41.56 MiB
/// free against a 32 MiB request).
fn free_margin(total: u64) -> u64 {
    (64.0 * MIB).max(0.01 * total as f64) as u64
}

/// Memory elsewhere counts as a cause from max(1 GiB, 10 % of the device) (rule 5).
fn significant(total: u64) -> u64 {
    GIB.max(0.1 * total as f64) as u64
}

/// Non-PyTorch memory in the process counts as a cause above ~2 GiB (rule 7; P8 shows 3.88 GiB,
/// ordinary contexts stay under 1 GiB).
const IN_PROCESS_LIMIT: u64 = 2 * GIB as u64;

pub fn classify(f: &OomFigures, live: Option<&LiveSnapshot>) -> Classification {
    let r = f.requested;
    let total = f.total.or(live.map(|l| l.total_bytes)).unwrap_or(0);
    let reserved = f.reserved();
    let unalloc = f.unallocated.unwrap_or(0);
    let derived = derive(f, live, total);
    let mut classes = Vec::new();
    let mut push = |c| {
        if !classes.contains(&c) {
            classes.push(c);
        }
    };
    let capped = f.allowed.is_some_and(|cap| total == 0 || cap < total);

    if total > 0 && r > total {
        push(MessageClass::ImpossibleRequest);
    }
    if capped {
        push(MessageClass::Cap);
    }
    if total > 0 && reserved.is_some_and(|res| res > total) {
        push(MessageClass::Spill);
    }
    if let Some(free) = f.free
        && !capped
        && free >= r.saturating_add(free_margin(total))
    {
        push(MessageClass::Unexplained);
    }
    if derived.foreign >= significant(total) {
        push(MessageClass::AnotherProcess);
    }
    if let Some(free) = f.free
        && f.unallocated.is_some()
        && unalloc > r
        && unalloc >= meaningful(total)
        && free.saturating_add(unalloc) >= r
    {
        // Trapped memory larger than the request and a real share of the card: defragmenting
        // would have served it (symptoms.md §1.2 rule 6, tightened by issue 16).
        push(MessageClass::Fragmentation);
    }
    if f.format == Format::MallocAsync
        && let (Some(free), Some(alloc)) = (f.free, f.allocated)
    {
        // cudaMallocAsync prints no "unallocated" figure; memory neither allocated nor free
        // beyond the process's own overhead is most likely cached in the async pool
        // (pytorch/pytorch#110194, [M2]) — not another process, which the message cannot show.
        let outside = total as f64 - free as f64 - alloc as f64 - OWN_OVERHEAD_MAX;
        if outside >= significant(total) as f64 && outside >= r as f64 {
            push(MessageClass::Fragmentation);
        }
    }
    if derived
        .in_process_other
        .is_some_and(|m| m > IN_PROCESS_LIMIT)
    {
        push(MessageClass::NonPytorchMemory);
    }
    push(MessageClass::PlainShortage);
    // A shortage is the fallback only; once a specific cause is found it adds nothing, except
    // that a huge request that defragmenting could not have served is still a shortage (P1).
    if classes.len() > 1 && classes[0] != MessageClass::PlainShortage {
        classes.retain(|c| *c != MessageClass::PlainShortage);
    }
    if classes == [MessageClass::PlainShortage] && unalloc >= r / 4 && unalloc >= meaningful(total)
    {
        // Large trapped memory that still would not have been enough: mention it second (P1).
        classes.push(MessageClass::Fragmentation);
    }
    Classification { classes, derived }
}

fn derive(f: &OomFigures, live: Option<&LiveSnapshot>, total: u64) -> Derived {
    let reserved = f.reserved();
    let in_process_other = match (f.this_process, reserved) {
        (Some(p), Some(res)) => Some(p.saturating_sub(res)),
        _ => None,
    };
    let listed: u64 = f.other_processes.iter().map(|(_, b)| b).sum();
    let (foreign, estimated) = if f.format == Format::Mps {
        // MPS: "other allocations" is unified memory used outside the MPS allocator — other
        // apps and the system (oom_messages.txt [S1], [S2]).
        (f.other_allocations.unwrap_or(0), false)
    } else if !f.other_processes.is_empty() {
        // Without a "this process" clause, the largest listed process that is about PyTorch's
        // own reservation plus at most the context is this process seen from a container's PID
        // namespace (P7); it is not foreign.
        let slack = 0.05 * total as f64;
        let own = match (f.this_process, reserved) {
            (None, Some(res)) => f
                .other_processes
                .iter()
                .map(|(_, b)| *b)
                .filter(|b| {
                    let b = *b as f64;
                    b >= res as f64 - slack && b <= res as f64 + OWN_OVERHEAD_MAX + slack
                })
                .max()
                .unwrap_or(0),
            _ => 0,
        };
        (listed - own, false)
    } else if f.this_process.is_some() {
        // NVML listed this process and no other.
        (0, false)
    } else if let Some(others) = live.and_then(|l| l.other_processes_bytes) {
        (others, false)
    } else if f.format == Format::MallocAsync {
        // cudaMallocAsync's figures cannot tell another process from the async pool (see
        // `classify`).
        (0, true)
    } else if let (Some(free), Some(res)) = (f.free, reserved.or(f.allocated)) {
        let rest = total as f64 - free as f64 - res as f64 - OWN_OVERHEAD_MAX;
        (rest.max(0.0) as u64, true)
    } else {
        (0, true)
    };
    Derived {
        reserved,
        in_process_other,
        foreign,
        foreign_estimated: estimated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::pytorch::parse;
    use MessageClass::*;

    fn classes(text: &str) -> Vec<MessageClass> {
        classify(&parse(text).expect("parses"), None).classes
    }

    #[test]
    fn research_samples_get_their_classes() {
        // P1: 12.73 free + 9.35 trapped < 22.78 requested → shortage, fragmentation second.
        assert_eq!(
            classes(
                "CUDA out of memory. Tried to allocate 22.78 GiB. GPU 0 has a total capacity of 31.47 GiB of which 12.73 GiB is free. Including non-PyTorch memory, this process has 18.73 GiB memory in use. Of the allocated memory 9.08 GiB is allocated by PyTorch, and 9.35 GiB is reserved by PyTorch but unallocated."
            ),
            vec![PlainShortage, Fragmentation]
        );
        // P5: 55.57 GiB on a 12 GiB card.
        assert_eq!(
            classes(
                "CUDA out of memory. Tried to allocate 55.57 GiB. GPU 0 has a total capacty of 12.00 GiB of which 9.02 GiB is free. Of the allocated memory 984.52 MiB is allocated by PyTorch, and 463.48 MiB is reserved by PyTorch but unallocated."
            )[0],
            ImpossibleRequest
        );
        // P6: 2.30 GiB trapped ≥ 1.70 GiB requested.
        assert_eq!(
            classes(
                "CUDA out of memory. Tried to allocate 1.70 GiB. GPU 0 has a total capacty of 6.00 GiB of which 0 bytes is free. Of the allocated memory 2.93 GiB is allocated by PyTorch, and 2.30 GiB is reserved by PyTorch but unallocated."
            ),
            vec![Fragmentation]
        );
        // P7: the one "Process" is this process seen from a container → not foreign.
        assert_eq!(
            classes(
                "CUDA out of memory. Tried to allocate 250.00 MiB. GPU 0 has a total capacity of 79.26 GiB of which 104.75 MiB is free. Process 1007710 has 79.14 GiB memory in use. Of the allocated memory 74.77 GiB is allocated by PyTorch, and 3.87 GiB is reserved by PyTorch but unallocated."
            ),
            vec![Fragmentation]
        );
        // Q4: 9.28 GiB free, 12.50 MiB requested; the 1.6 GiB not accounted for is about what the
        // process's own context and workspaces take, so no other process is implied.
        assert_eq!(
            classes(
                "CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total capacity; 8.57 MiB already allocated; 9.28 GiB free; 4.68 MiB cached)"
            ),
            vec![Unexplained]
        );
        // Q3: 17.20 GiB allocated on an 8 GiB card → spill, after the impossible request.
        assert_eq!(
            classes(
                "CUDA out of memory. Tried to allocate 10.73 GiB (GPU 0; 8.00 GiB total capacity; 17.20 GiB already allocated; 0 bytes free; 19.15 GiB reserved in total by PyTorch)"
            ),
            vec![ImpossibleRequest, Spill]
        );
    }

    #[test]
    fn cap_and_non_pytorch_memory() {
        let cap = classes(
            "HIP out of memory. Tried to allocate 2.00 MiB. GPU 0 has a total capacity of 287.98 GiB of which 275.86 GiB is free. 1.05 GiB allowed; Of the allocated memory 1017.01 MiB is allocated by PyTorch, with 17.00 MiB allocated in private pools (e.g., HIP Graphs), and 54.99 MiB is reserved by PyTorch but unallocated.",
        );
        assert_eq!(cap[0], Cap);
        assert!(
            !cap.contains(&Unexplained),
            "the cap explains the free memory"
        );
        // P8: 3.88 GiB outside the allocator in-process, 4.84 GiB trapped ≥ 3 GiB requested.
        let p8 = classify(&parse("CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacty of 23.65 GiB of which 1.66 GiB is free. Including non-PyTorch memory, this process has 20.81 GiB memory in use. Of the allocated memory 12.09 GiB is allocated by PyTorch, and 4.84 GiB is reserved by PyTorch but unallocated.").unwrap(), None);
        assert_eq!(p8.classes, vec![Fragmentation, NonPytorchMemory]);
        let other = p8.derived.in_process_other.unwrap() as f64 / GIB;
        assert!((other - 3.88).abs() < 0.01, "{other}");
    }

    #[test]
    fn foreign_process_from_listing_estimate_and_live() {
        let listed = classes(
            "CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 100.00 MiB is free. Including non-PyTorch memory, this process has 12.00 GiB memory in use. Process 42 has 11.00 GiB memory in use. Of the allocated memory 11.00 GiB is allocated by PyTorch, and 200.00 MiB is reserved by PyTorch but unallocated.",
        );
        assert_eq!(listed[0], AnotherProcess);
        // cudaMallocAsync [M2]: 25 GiB neither allocated nor free.
        let m2 = parse("Allocation on device 5 would exceed allowed memory. (out of memory)\nCurrently allocated     : 54.14 GiB\nRequested               : 686.41 MiB\nDevice limit            : 79.35 GiB\nFree (according to CUDA): 27.19 MiB").unwrap();
        // cudaMallocAsync [M2]: 25 GiB neither allocated nor free is the async pool as far as
        // the figures can tell; another process would need live numbers to show.
        let est = classify(&m2, None);
        assert_eq!(est.classes, vec![Fragmentation]);
        assert_eq!(est.derived.foreign, 0);
        // Live telemetry that shows another process holding 20 GiB names it.
        let live = LiveSnapshot {
            total_bytes: m2.total.unwrap(),
            other_processes_bytes: Some(20 << 30),
            ..Default::default()
        };
        assert_eq!(classify(&m2, Some(&live)).classes[0], AnotherProcess);
    }

    #[test]
    fn small_trapped_memory_is_a_shortage_not_fragmentation() {
        // 80 MiB reserved-but-unallocated on a 4 GiB card, 64 MiB requested.
        assert_eq!(
            classes(
                "CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total capacity of 3.81 GiB of which 12.00 MiB is free. Including non-PyTorch memory, this process has 3.79 GiB memory in use. Of the allocated memory 3.12 GiB is allocated by PyTorch, and 80.00 MiB is reserved by PyTorch but unallocated."
            ),
            vec![PlainShortage]
        );
        // Trapped memory larger than the card's 2.5 % but smaller than the request: a shortage.
        assert_eq!(
            classes(
                "CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 500.00 MiB is free. Including non-PyTorch memory, this process has 23.10 GiB memory in use. Of the allocated memory 19.00 GiB is allocated by PyTorch, and 3.00 GiB is reserved by PyTorch but unallocated."
            ),
            vec![PlainShortage, Fragmentation]
        );
    }

    #[test]
    fn own_context_and_own_pid_are_not_another_process() {
        // No process clauses (Windows): 1.2 GiB unaccounted is this process's own context.
        assert_eq!(
            classes(
                "CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 8.00 GiB of which 0 bytes is free. Of the allocated memory 6.60 GiB is allocated by PyTorch, and 200.00 MiB is reserved by PyTorch but unallocated."
            ),
            vec![PlainShortage]
        );
        // Its own PID as a container shows it: reserved 9.80 GiB, the process 10.90 GiB.
        assert_eq!(
            classes(
                "CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 11.00 GiB of which 50.00 MiB is free. Process 4242 has 10.90 GiB memory in use. Of the allocated memory 9.70 GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated."
            ),
            vec![PlainShortage]
        );
        // Beside it a second process with 6 GiB is foreign.
        assert_eq!(
            classes(
                "CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 50.00 MiB is free. Process 4242 has 16.00 GiB memory in use. Process 777 has 6.00 GiB memory in use. Of the allocated memory 14.70 GiB is allocated by PyTorch, and 300.00 MiB is reserved by PyTorch but unallocated."
            )[0],
            AnotherProcess
        );
    }
}
