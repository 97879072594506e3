//! What a process holds beyond its tensors: the CUDA context with loaded kernels, library
//! workspaces, and the caching allocator's slack.

use super::breakdown::{Breakdown, ComponentId, Layer};
use crate::engines::llama_cpp::memory as llama_cpp;
use crate::types::options::Engine;
use crate::units::MIB;

/// CUDA context + kernels of a PyTorch process, as nvidia-smi sees it before any tensor:
/// 1343 MiB measured by `torch.ones((1,1)).to("cuda")` on a V100 (transformers
/// `model_memory_anatomy.md`; reference row gt007). Newer CUDA with lazy module loading is
/// lower, so this errs on the safe side.
pub const TORCH_CONTEXT_BYTES: f64 = 1343.0 * MIB;

/// The per-process context an engine brings.
pub fn context_bytes(engine: Engine) -> f64 {
    match engine {
        Engine::LlamaCpp => llama_cpp::GGML_CONTEXT_BYTES,
        _ => TORCH_CONTEXT_BYTES,
    }
}

/// Reserved-minus-allocated slack of PyTorch's caching allocator at the peak. Blocks over 1 MiB
/// are rounded up to 2 MiB and freed blocks stay cached (`c10/cuda/CUDACachingAllocator.cpp`,
/// kRoundLarge/kLargeBuffer), so transient tensors leave unused cached segments behind: we charge
/// 1% of the persistent bytes and 10% of the transient ones.
pub fn allocator_slack(persistent: f64, transient: f64) -> f64 {
    0.01 * persistent + 0.10 * transient
}

/// Adds the allocator slack and the CUDA context. The slack is capped by what the card has
/// left: before failing an allocation the caching allocator frees its cached blocks and retries
/// (`release_cached_blocks` in CUDACachingAllocator.cpp), so reserved memory never exceeds the
/// card while the live tensors still fit.
pub fn add_torch_overheads(b: &mut Breakdown, slack: f64, context: f64, other: u64) {
    let left = b.capacity_bytes as f64 - b.peak.tensors_bytes as f64 - context - other as f64;
    b.add(
        ComponentId::AllocatorOverhead,
        "Allocator cache and fragmentation",
        slack.min(left.max(0.0)),
        Layer::Allocator,
    );
    b.add(
        ComponentId::CudaContext,
        "CUDA context and kernels",
        context,
        Layer::Process,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_is_capped_by_the_card() {
        let mut b = Breakdown::new(10 * 1024);
        b.add(ComponentId::Weights, "w", 8000.0, Layer::Tensor);
        add_torch_overheads(&mut b, 5000.0, 1000.0, 200);
        assert_eq!(
            b.get(ComponentId::AllocatorOverhead),
            10 * 1024 - 8000 - 1000 - 200
        );
        assert!(b.fits());
        let mut tight = Breakdown::new(1000);
        tight.add(ComponentId::Weights, "w", 1500.0, Layer::Tensor);
        add_torch_overheads(&mut tight, 100.0, 10.0, 0);
        assert_eq!(tight.get(ComponentId::AllocatorOverhead), 0);
        assert!(!tight.fits());
    }
}
