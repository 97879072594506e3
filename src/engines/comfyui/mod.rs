//! ComfyUI.
//!
//! - [`memory`]: which memory mode a run gets (dynamic VRAM or classic loading) and the VRAM it
//!   keeps free, how many images its VAE decodes at once and in which dtype, where each mode puts
//!   the pipeline's weights stage by stage (resident, streamed, "loaded partially"), and the
//!   breakdown's rows and notes that follow from them.
//! - [`export`]: `python main.py` flags and the nodes to use.
//!
//! Its terms in shared formulas: what it keeps free in the diffusion placement
//! (`memory::diffusion::residency::place`, which dispatches to [`memory`]), `VAEDecodeTiled`'s
//! tile (`memory::diffusion::stages`), the strategies the planner offers it (GGUF weights,
//! `--lowvram`: `plan::diffusion::Strategy::applies`), its step times (`speed::diffusion`) and its
//! setting rows in `export::report`. Reading ComfyUI's own files sits with the layer that reads
//! them: workflows in `import::comfy` (nodes in `presets/comfyui_nodes.toml`) and
//! `plan::workflow`, its console log in `doctor::comfy_log`.

pub mod export;
pub mod memory;
