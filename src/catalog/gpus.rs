//! GPU presets (`presets/gpus.toml`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vendor {
    Nvidia,
    Amd,
    Apple,
    Intel,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuKind {
    Desktop,
    Laptop,
    Workstation,
    Datacenter,
    /// Apple silicon and other unified-memory SoCs: "VRAM" is a share of system RAM.
    Unified,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    pub id: String,
    pub name: String,
    pub vendor: Vendor,
    pub kind: GpuKind,
    /// Memory capacity as marketed, in GiB (vendors' "GB" for VRAM are binary).
    pub vram_gib: f64,
    /// Peak memory bandwidth, GB/s.
    pub bandwidth_gbs: f64,
    /// PCIe generation and lanes (0 for SoCs and SXM/OAM boards on their own fabric).
    pub pcie_gen: u32,
    pub pcie_lanes: u32,
    /// Native bf16 math (Ampere and later, CDNA2+, RDNA3+ WMMA, Apple M2+).
    pub bf16: bool,
    /// Native fp8 tensor cores (Ada, Hopper, Blackwell, CDNA3, RDNA4).
    pub fp8: bool,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Where the numbers come from.
    pub source: String,
}

impl Gpu {
    pub fn vram_bytes(&self) -> u64 {
        crate::units::gib_to_bytes(self.vram_gib)
    }
}

pub(super) fn parse(text: &str) -> Result<Vec<Gpu>, String> {
    #[derive(Deserialize)]
    struct File {
        gpu: Vec<Gpu>,
    }
    let f: File = toml::from_str(text).map_err(|e| format!("presets/gpus.toml: {e}"))?;
    for g in &f.gpu {
        if !(g.vram_gib > 0.0 && g.vram_gib < 4096.0) {
            return Err(format!("presets/gpus.toml: {}: vram_gib out of range", g.id));
        }
    }
    Ok(f.gpu)
}
