//! What each engine does with memory, time and its launch settings, one module per engine
//! (as the egui demo keeps one file per demo): `engines::<engine>` holds that engine's rules,
//! split by the layer each belongs to, so the layers of `tests/layering.rs` still hold:
//!
//! - `engines::<engine>::memory`: a memory-layer piece (placement, buffer sizes, the engine's
//!   breakdown), called by `memory`'s estimators; it imports what `memory` may.
//! - `engines::<engine>::speed`: a speed-layer piece (efficiencies, fixed costs), called by `speed`.
//! - `engines::<engine>::export`: the engine's launch files, rendered by `export`'s dispatch
//!   (`export::render_on`, which kinds apply in `export::kinds_of`).
//!
//! Callers name the layer in the path (`crate::engines::llama_cpp::memory::split`), so the layer
//! test checks every use as if the piece sat in that layer's own directory. The rules an engine
//! shares with others as one formula with a per-engine term stay in that formula's module; `grep
//! -rn 'Engine::' src` lists them.

pub mod comfyui;
pub mod diffusers;
pub mod llama_cpp;
pub mod transformers;
pub mod vllm;
