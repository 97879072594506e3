//! The plain domain types `catalog`, `import`, `memory` and the resolution step share: a
//! model's architecture, number formats, run options, a GPU as its preset describes it, and
//! the workload in its file and checked forms. The lowest domain layer: it imports only the
//! leaf helpers (`units`, `toml_file`, `input_file`), never a layer above (`tests/layering.rs`).

pub mod arch;
pub mod dtype;
pub mod error;
pub mod gpu;
pub mod lora_targets;
pub mod message;
pub mod options;
pub mod run_fields;
pub mod workload;
