//! Parsers for PyTorch's out-of-memory messages, the ones that carry figures.
//!
//! Grammars from `../shared/research/oom_messages.txt` and `symptoms.md` §1.1, which quote
//! pytorch/pytorch `c10/cuda/CUDACachingAllocator.cpp` (modern text, 2.1+; 2.0/2.1 spell
//! "capacty"), the ≤2.0 parenthesised text, `c10/cuda/CUDAMallocAsyncAllocator.cpp`
//! ("Allocation on device …") and the MPS allocator. Hand-written scanning over literal anchors:
//! linear in the input, no backtracking.

use super::size::{self, Size};
use serde::{Deserialize, Serialize};

/// Which allocator wrote the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// Native caching allocator, PyTorch ≥ 2.1 ("GPU 0 has a total capacity of …").
    #[default]
    Modern,
    /// Native caching allocator, PyTorch ≤ 2.0 ("(GPU 0; 6.00 GiB total capacity; …)").
    Legacy,
    /// `backend:cudaMallocAsync` ("Allocation on device 0 would exceed allowed memory").
    MallocAsync,
    /// Apple MPS ("MPS backend out of memory (MPS allocated: …").
    Mps,
}

/// The figures one PyTorch OOM message states. `None` = not in this format or printed as the
/// "unknown" sentinel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OomFigures {
    pub format: Format,
    /// "CUDA", "HIP", "MPS" …
    pub backend: String,
    pub gpu: Option<u32>,
    /// The single allocation that failed.
    pub requested: u64,
    /// Device total (MPS: the allocator's "max allowed" ceiling).
    pub total: Option<u64>,
    /// Device-wide free memory from `cudaMemGetInfo`.
    pub free: Option<u64>,
    /// Bytes in live tensors (modern text: includes private pools).
    pub allocated: Option<u64>,
    /// Reserved by PyTorch but unallocated — at OOM time, memory trapped in partly used segments.
    pub unallocated: Option<u64>,
    pub private_pools: Option<u64>,
    /// A per-process cap (`set_per_process_memory_fraction`), when one is in effect.
    pub allowed: Option<u64>,
    /// NVML's figure for this process, non-PyTorch memory included.
    pub this_process: Option<u64>,
    /// Other processes NVML listed on the same GPU: (pid, bytes).
    pub other_processes: Vec<(u32, u64)>,
    /// MPS: memory outside the MPS allocator (other apps on unified memory).
    pub other_allocations: Option<u64>,
    /// True when the message came from PyTorch ≤ 2.1 (advice differs: max_split_size_mb).
    pub old_wording: bool,
}

impl OomFigures {
    /// Reserved by PyTorch = allocated + unallocated (the modern text's "allocated" already
    /// counts private pools, CUDACachingAllocator.cpp).
    pub fn reserved(&self) -> Option<u64> {
        Some(
            self.allocated?
                .saturating_add(self.unallocated.unwrap_or(0)),
        )
    }
}

/// The first PyTorch OOM with figures found in `text`, whichever format.
pub fn parse(text: &str) -> Option<OomFigures> {
    parse_modern(text)
        .or_else(|| parse_legacy(text))
        .or_else(|| parse_malloc_async(text))
        .or_else(|| parse_mps(text))
}

fn bytes_after(text: &str, anchor: &str) -> Option<(Size, usize)> {
    let at = text.find(anchor)? + anchor.len();
    let (s, rest) = size::leading(&text[at..])?;
    Some((s, text.len() - rest.len()))
}

fn backend_before(text: &str, at: usize) -> String {
    let word: String = text[..at]
        .trim_end()
        .chars()
        .rev()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    word.chars().rev().collect()
}

fn leading_u32(s: &str) -> Option<u32> {
    let len = s.bytes().take_while(u8::is_ascii_digit).count();
    s.get(..len)?.parse().ok()
}

fn parse_modern(text: &str) -> Option<OomFigures> {
    const OOM: &str = " out of memory. Tried to allocate ";
    let start = text.find(OOM)?;
    let t = &text[start..];
    let (requested, _) = bytes_after(t, OOM)?;
    let gpu_at = t.find(". GPU ")? + ". GPU ".len();
    let gpu = leading_u32(&t[gpu_at..]);
    let (cap_anchor, old_wording) = if t.contains("has a total capacty of ") {
        ("has a total capacty of ", true)
    } else {
        ("has a total capacity of ", false)
    };
    let (total, after_total) = bytes_after(t, cap_anchor)?;
    let (free, after_free) = bytes_after(&t[after_total..], " of which ")?;
    let after_free = after_total + after_free;
    // A message cut after "is free." (pasted from a narrow terminal, or a log line that was
    // wrapped) still states the card and the request; the allocator's split is then unknown.
    let of_alloc = t[after_free..]
        .find("Of the allocated memory ")
        .map(|i| i + after_free);
    // Between "is free." and "Of the allocated memory": process clauses and the cap.
    let middle = &t[after_free..of_alloc.unwrap_or(t.len())];
    let (allocated, private_pools, unallocated) = match of_alloc {
        Some(of_alloc) => {
            let (allocated, after_alloc) = bytes_after(&t[of_alloc..], "Of the allocated memory ")?;
            let tail = &t[of_alloc + after_alloc..];
            let end = tail.find("reserved by PyTorch but unallocated")?;
            let tail = &tail[..end];
            let private_pools = bytes_after(tail, "with ").map(|(s, _)| s);
            let (unallocated, _) = bytes_after(tail, "and ")?;
            (Some(allocated), private_pools, Some(unallocated))
        }
        None => (None, None, None),
    };
    let mut f = OomFigures {
        format: Format::Modern,
        backend: backend_before(text, start),
        gpu,
        requested: requested.bytes()?,
        total: total.bytes(),
        free: free.bytes(),
        allocated: allocated.and_then(Size::bytes),
        unallocated: unallocated.and_then(Size::bytes),
        private_pools: private_pools.and_then(Size::bytes),
        old_wording: old_wording || t.contains("max_split_size_mb"),
        ..OomFigures::default()
    };
    read_process_clauses(middle, &mut f);
    Some(f)
}

/// "Including non-PyTorch memory, this process has X memory in use. Process 123 has Y memory in
/// use. Z allowed; " — each clause optional, in any number.
fn read_process_clauses(middle: &str, f: &mut OomFigures) {
    for clause in middle.split(". ") {
        let clause = clause.trim();
        if let Some(i) = clause.find("allowed;") {
            f.allowed = size::trailing(&clause[..i]).and_then(Size::bytes);
        }
        let Some(has) = clause.find(" has ") else {
            continue;
        };
        let Some((bytes, _)) = size::leading(&clause[has + 5..]) else {
            continue;
        };
        let Some(bytes) = bytes.bytes() else { continue };
        if clause.contains("this process") {
            f.this_process = Some(bytes);
        } else if let Some(pid) = clause
            .find("Process ")
            .and_then(|i| leading_u32(&clause[i + 8..]))
        {
            f.other_processes.push((pid, bytes));
        }
    }
}

fn parse_legacy(text: &str) -> Option<OomFigures> {
    const ANCHOR: &str = "out of memory. Tried to allocate ";
    let start = text.find(ANCHOR)?;
    let (requested, after) = size::leading(&text[start + ANCHOR.len()..])?;
    let inner = after.trim_start().strip_prefix("(GPU ")?;
    let inner = &inner[..inner.find(')')?];
    let mut f = OomFigures {
        format: Format::Legacy,
        backend: backend_before(text, start),
        gpu: leading_u32(inner),
        requested: requested.bytes()?,
        old_wording: true,
        ..OomFigures::default()
    };
    let mut reserved = None;
    for part in inner.split(';').skip(1) {
        let Some((s, label)) = size::leading(part) else {
            continue;
        };
        let value = s.bytes();
        match label.trim() {
            "total capacity" => f.total = value,
            "already allocated" => f.allocated = value,
            "free" => f.free = value,
            "allowed" => f.allowed = value,
            "reserved in total by PyTorch" | "cached" => reserved = value,
            _ => {}
        }
    }
    f.total?;
    f.unallocated = Some(reserved?.saturating_sub(f.allocated?));
    Some(f)
}

fn labelled(block: &str, label: &str) -> Option<Size> {
    let at = block.find(label)? + label.len();
    let rest = block[at..].trim_start().strip_prefix(':')?;
    size::leading(rest).map(|(s, _)| s)
}

fn parse_malloc_async(text: &str) -> Option<OomFigures> {
    const ANCHOR: &str = "Allocation on device ";
    let start = text.find(ANCHOR)?;
    let t = &text[start..];
    let gpu = leading_u32(&t[ANCHOR.len()..]);
    let requested = labelled(t, "Requested")?.bytes()?;
    Some(OomFigures {
        format: Format::MallocAsync,
        backend: "CUDA".into(),
        gpu,
        requested,
        allocated: labelled(t, "Currently allocated").and_then(Size::bytes),
        total: labelled(t, "Device limit").and_then(Size::bytes),
        free: labelled(t, "Free (according to CUDA)").and_then(Size::bytes),
        allowed: labelled(t, "(set by user-supplied memory fraction)").and_then(Size::bytes),
        ..OomFigures::default()
    })
}

fn parse_mps(text: &str) -> Option<OomFigures> {
    let start = text.find("MPS backend out of memory (")?;
    let t = &text[start..];
    let after = |label: &str| bytes_after(t, label).and_then(|(s, _)| s.bytes());
    Some(OomFigures {
        format: Format::Mps,
        backend: "MPS".into(),
        requested: after("Tried to allocate ")?,
        allocated: after("MPS allocated: "),
        other_allocations: after("other allocations: "),
        total: after("max allowed: "),
        ..OomFigures::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{GIB, MIB};

    fn gib(x: f64) -> u64 {
        (x * GIB).round() as u64
    }

    #[test]
    fn modern_with_process_clauses() {
        let f = parse("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 250.00 MiB. GPU 0 has a total capacity of 79.26 GiB of which 104.75 MiB is free. Process 1007710 has 79.14 GiB memory in use. Of the allocated memory 74.77 GiB is allocated by PyTorch, and 3.87 GiB is reserved by PyTorch but unallocated.").unwrap();
        assert_eq!(f.format, Format::Modern);
        assert_eq!(f.backend, "CUDA");
        assert_eq!(f.requested, (250.0 * MIB) as u64);
        assert_eq!(f.total, Some(gib(79.26)));
        assert_eq!(f.other_processes, vec![(1007710, gib(79.14))]);
        assert_eq!(f.this_process, None);
        assert_eq!(f.unallocated, Some(gib(3.87)));
        assert!(!f.old_wording);
    }

    #[test]
    fn modern_hip_cap_and_private_pools() {
        let f = parse("HIP out of memory. Tried to allocate 2.00 MiB. GPU 0 has a total capacity of 287.98 GiB of which 275.86 GiB is free. 1.05 GiB allowed; Of the allocated memory 1017.01 MiB is allocated by PyTorch, with 17.00 MiB allocated in private pools (e.g., HIP Graphs), and 54.99 MiB is reserved by PyTorch but unallocated.").unwrap();
        assert_eq!(f.backend, "HIP");
        assert_eq!(f.allowed, Some(gib(1.05)));
        assert_eq!(f.private_pools, Some((17.0 * MIB) as u64));
        assert_eq!(f.unallocated, Some((54.99 * MIB).round() as u64));
    }

    #[test]
    fn modern_sentinel_process_is_unknown() {
        let f = parse("CUDA out of memory. Tried to allocate 30.00 GiB. GPU 0 has a total capacty of 15.99 GiB of which 0 bytes is free. Including non-PyTorch memory, this process has 17179869184.00 GiB memory in use. Of the allocated memory 30.00 GiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.").unwrap();
        assert_eq!(f.this_process, None);
        assert_eq!(f.free, Some(0));
        assert!(f.old_wording);
    }

    #[test]
    fn legacy_reserved_minus_allocated() {
        let f = parse("CUDA out of memory. Tried to allocate 2.26 GiB (GPU 0; 6.00 GiB total capacity; 781.59 MiB already allocated; 3.03 GiB free; 1.24 GiB reserved in total by PyTorch)").unwrap();
        assert_eq!(f.format, Format::Legacy);
        assert_eq!(f.free, Some(gib(3.03)));
        assert_eq!(
            f.unallocated,
            Some(gib(1.24) - (781.59 * MIB).round() as u64)
        );
        let cached = parse("RuntimeError: CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total capacity; 8.57 MiB already allocated; 9.28 GiB free; 4.68 MiB cached)").unwrap();
        assert_eq!(cached.total, Some(gib(10.92)));
    }

    #[test]
    fn malloc_async_and_mps() {
        let f = parse("Allocation on device 0 would exceed allowed memory. (out of memory)\nCurrently allocated : 14.81 GiB\nRequested : 320.00 MiB\nDevice limit : 15.92 GiB\nFree (according to CUDA): 0 bytes\nPyTorch limit (set by user-supplied memory fraction)\n: 17179869184.00 GiB").unwrap();
        assert_eq!(f.format, Format::MallocAsync);
        assert_eq!(f.allowed, None, "the sentinel means no cap");
        assert_eq!(f.total, Some(gib(15.92)));
        let m = parse("MPS backend out of memory (MPS allocated: 8.89 GB, other allocations: 172.98 MB, max allowed: 9.07 GB). Tried to allocate 6.25 MB on private pool.").unwrap();
        assert_eq!(m.format, Format::Mps);
        assert_eq!(m.other_allocations, Some((172.98 * MIB).round() as u64));
        assert_eq!(m.requested, (6.25 * MIB) as u64);
    }

    #[test]
    fn truncated_or_foreign_text_is_none() {
        assert_eq!(
            parse("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total"),
            None
        );
        assert_eq!(parse("CUDA error: out of memory"), None);
        assert_eq!(parse(""), None);
    }

    #[test]
    fn a_message_cut_after_the_free_figure_keeps_what_it_states() {
        let f = parse(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a \
             total capacity of 23.65 GiB of which 1.05 GiB is free. Including non-PyTorch memory, \
             this process has 22.58 GiB memory in use.",
        )
        .expect("the card and the request are stated");
        assert_eq!(f.requested, gib(2.0));
        assert_eq!(f.total, Some(gib(23.65)));
        assert_eq!(f.free, Some(gib(1.05)));
        assert_eq!(f.this_process, Some(gib(22.58)));
        assert_eq!(
            (f.allocated, f.unallocated, f.reserved()),
            (None, None, None)
        );
    }
}
