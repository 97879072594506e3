//! Prometheus in both directions: [`exporter`] serves this machine's readings as metrics for a
//! Prometheus server to scrape, and [`remote`] reads a fleet's GPUs back from a Prometheus
//! server (or an exporter) as a [`crate::telemetry::Source`], so the monitor's history,
//! detectors and alerts work on remote GPUs as on local ones. Only `std::net`: [`http`] is the
//! small HTTP/1.1 both use, [`text`] the exposition format, [`families`] the exporters' metric
//! names (`presets/prometheus.toml`).

pub mod exporter;
pub mod families;
pub mod http;
pub mod remote;
pub mod text;

pub use exporter::{DEFAULT_ADDR, Exporter, Limits, Predicted, ServeError};
pub use remote::PrometheusSource;
