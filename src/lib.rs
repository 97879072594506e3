//! VRAM Doctor: GPU memory planner, monitor and doctor.
//!
//! Layers (see `DESIGN.md` in the shared notes): `ui` and `cli` sit on top and stay thin; the domain
//! layers below them (`plan`, `memory`, `catalog`, …) never import egui and are plain data in,
//! plain data out.

pub mod accuracy;
pub mod atomic_write;
pub mod catalog;
pub mod cli;
pub mod doctor;
pub mod engines;
pub mod export;
pub mod file_error;
pub mod import;
pub mod input_file;
pub mod memory;
pub mod plan;
pub mod png;
pub mod printable;
pub mod resolve;
pub mod speed;
pub mod suggest;
pub mod tabs;
pub mod telemetry;
pub mod toml_file;
pub mod types;
pub mod ui;
pub mod units;
pub mod watch;
