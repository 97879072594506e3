//! What a process holds beyond its tensors: the CUDA context with loaded kernels, library
//! workspaces, and the caching allocator's slack.

use super::options::Engine;
use crate::units::MIB;

/// CUDA context + kernels of a PyTorch process, as nvidia-smi sees it before any tensor:
/// 1343 MiB measured by `torch.ones((1,1)).to("cuda")` on a V100 (transformers
/// `model_memory_anatomy.md`; reference row gt007). Newer CUDA with lazy module loading is
/// lower, so this errs on the safe side.
pub const TORCH_CONTEXT_BYTES: f64 = 1343.0 * MIB;

/// llama.cpp/ggml: the "unaccounted" memory in `llama_memory_breakdown_print` on an RTX 4090
/// was 451 MiB (llama.cpp PR #15860); ollama budgets 457 MiB per CUDA GPU
/// (`discover/gpu.go` cudaMinimumMemory).
pub const GGML_CONTEXT_BYTES: f64 = 457.0 * MIB;

/// vLLM's non-torch memory (NCCL, cuBLAS workspaces, custom all-reduce) on one GPU: 1.79 GiB in
/// the profiling log of vLLM PR #10511 (reference row gt009); TP=2 logged 3.58 GiB per GPU.
pub const VLLM_NON_TORCH_BYTES: f64 = 1.79 * crate::units::GIB;

/// The per-process context an engine brings.
pub fn context_bytes(engine: Engine) -> f64 {
    match engine {
        Engine::LlamaCpp => GGML_CONTEXT_BYTES,
        _ => TORCH_CONTEXT_BYTES,
    }
}

/// Reserved-minus-allocated slack of PyTorch's caching allocator at the peak. Blocks over 1 MiB
/// are rounded up to 2 MiB and freed blocks are cached, not returned
/// (`c10/cuda/CUDACachingAllocator.cpp`, kRoundLarge / kLargeBuffer), so transient tensors leave
/// unused cached segments behind. We charge a share of the transient (activation) bytes.
pub fn allocator_slack(persistent: f64, transient: f64) -> f64 {
    0.01 * persistent + 0.10 * transient
}
