//! `PYTORCH_CUDA_ALLOC_CONF` advice. With `expandable_segments:True` the caching allocator grows
//! one mapped segment instead of carving fixed blocks, which removes most of the gap between
//! reserved and allocated memory that fragmentation causes (PyTorch docs, "CUDA semantics →
//! Optimizing memory usage with PYTORCH_CUDA_ALLOC_CONF"). The Windows builds do not support
//! it, so `kinds_for_os` offers this export on Linux only.

use crate::memory::ComponentId;
use crate::memory::any::{AnyWorkload, estimate_any};
use crate::units::human;

/// Advice for the planned workload, with the allocator slack its estimate counts.
pub fn render(planned: &AnyWorkload) -> String {
    let slack = estimate_any(planned).get(ComponentId::AllocatorOverhead);
    format!(
        "# PyTorch caching allocator (Linux, PyTorch 2.1 or newer).\n\
         # With the plan applied, {} sits between reserved and allocated memory at the peak; expandable\n\
         # segments let freed blocks be reused for tensors of other sizes, so most of that gap\n\
         # (and \"reserved but unallocated\" OOMs) goes away.\n\
         # Set it in the shell that starts the program, before Python imports torch.\n\
         export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n",
        human(slack)
    )
}
