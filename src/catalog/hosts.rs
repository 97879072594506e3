//! The host a GPU sits in: how much system RAM it has (what CPU offload must fit in) and how
//! fast it reads (what layers and experts left in system RAM cost per token). Presets in
//! `presets/hosts.toml`; this machine's RAM from `/proc/meminfo`.

use crate::types::error::BadField;
use crate::types::workload::{GpuSection, Host};
use serde::Deserialize;
use std::sync::OnceLock;

/// A host memory preset.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostPreset {
    pub id: String,
    pub name: String,
    /// desktop | laptop | server
    pub kind: String,
    /// Theoretical peak bandwidth, GB/s.
    pub gbps: f64,
    pub source: String,
}

/// The preset assumed when the workload names none: dual-channel DDR4-3200, the most common
/// desktop memory of the cards people offload from (and DESIGN.md's example).
pub const DEFAULT_PRESET: &str = "ddr4-3200-2ch";

/// Every host preset, parsed once from `presets/hosts.toml`.
pub fn presets() -> &'static [HostPreset] {
    static P: OnceLock<Vec<HostPreset>> = OnceLock::new();
    P.get_or_init(|| {
        #[derive(Deserialize)]
        struct File {
            host: Vec<HostPreset>,
        }
        let f: File = toml::from_str(include_str!("../../presets/hosts.toml"))
            .expect("presets/hosts.toml is valid (checked by a test)");
        f.host
    })
}

/// A preset by id.
pub fn preset(id: &str) -> Result<&'static HostPreset, BadField> {
    let id = id.trim().to_ascii_lowercase();
    presets().iter().find(|p| p.id == id).ok_or_else(|| {
        let ids: Vec<&str> = presets().iter().map(|p| p.id.as_str()).collect();
        BadField(format!(
            "gpu.host = '{id}' is not a host preset; use one of: {}",
            ids.join(", ")
        ))
    })
}

pub fn default_preset() -> &'static HostPreset {
    preset(DEFAULT_PRESET).expect("the default host preset exists")
}

/// The host assumed when the workload names none: the default preset, RAM size unknown.
pub fn assumed() -> Host {
    let p = default_preset();
    Host {
        ram_bytes: None,
        ram_gbps: p.gbps,
        source: format!("{} (assumed; set gpu.host or gpu.host_ram_gbps)", p.name),
    }
}

/// The host of `[gpu]`: `host` (a preset), then `host_ram_gbps` and `host_ram_gib` override.
pub fn resolve(g: &GpuSection) -> Result<Host, BadField> {
    let mut h = match &g.host {
        Some(id) => {
            let p = preset(id)?;
            Host {
                ram_bytes: None,
                ram_gbps: p.gbps,
                source: p.name.clone(),
            }
        }
        None => assumed(),
    };
    if let Some(bw) = g.host_ram_gbps {
        if !(bw.is_finite() && bw > 0.0 && bw <= 100_000.0) {
            return Err(BadField(format!(
                "gpu.host_ram_gbps = {bw} is out of range; allowed more than 0 and at most 100000"
            )));
        }
        h.ram_gbps = bw;
        h.source = format!("{bw} GB/s (gpu.host_ram_gbps)");
    }
    if let Some(gib) = g.host_ram_gib {
        if !(gib.is_finite() && gib > 0.0 && gib <= 1_048_576.0) {
            return Err(BadField(format!(
                "gpu.host_ram_gib = {gib} is out of range; allowed more than 0 and at most 1048576"
            )));
        }
        h.ram_bytes = Some(crate::units::gib_to_bytes(gib));
    }
    Ok(h)
}

/// This machine's total RAM in GiB, from `MemTotal` of `/proc/meminfo` (Linux); `None`
/// elsewhere or when it cannot be read.
pub fn this_machine_ram_gib() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_total_gib(&text)
}

/// `MemTotal:  32791756 kB` → GiB (the kernel's "kB" is KiB).
pub fn meminfo_total_gib(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: f64 = line
        .trim_start_matches("MemTotal:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    (kib > 0.0).then_some(kib / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_parse_and_bandwidth_is_channels_times_rate() {
        for p in presets() {
            assert!(p.gbps > 10.0 && p.gbps < 1000.0, "{}", p.id);
            assert!(["desktop", "laptop", "server"].contains(&p.kind.as_str()));
        }
        // 2 channels × 8 bytes × 3200 MT/s.
        assert_eq!(preset("ddr4-3200-2ch").unwrap().gbps, 2.0 * 8.0 * 3.2);
        assert_eq!(preset("DDR5-5600-2ch").unwrap().gbps, 2.0 * 8.0 * 5.6);
        assert!(preset("ddr9").unwrap_err().0.contains("ddr5-6000-2ch"));
    }

    #[test]
    fn meminfo_total_is_read_in_gib() {
        let t = "MemTotal:       32791756 kB\nMemFree:  100 kB\n";
        let g = meminfo_total_gib(t).unwrap();
        assert!((g - 31.27).abs() < 0.01, "{g}");
        assert_eq!(meminfo_total_gib("nothing"), None);
        assert_eq!(meminfo_total_gib("MemTotal: lots kB"), None);
    }

    #[test]
    fn workload_fields_override_the_preset() {
        let g = GpuSection {
            host: Some("ddr5-6000-2ch".into()),
            host_ram_gib: Some(64.0),
            ..Default::default()
        };
        let h = resolve(&g).unwrap();
        assert_eq!(h.ram_gbps, 96.0);
        assert_eq!(h.ram_bytes, Some(64 << 30));
        let g = GpuSection {
            host_ram_gbps: Some(-1.0),
            ..Default::default()
        };
        assert!(resolve(&g).unwrap_err().0.contains("gpu.host_ram_gbps"));
    }
}
