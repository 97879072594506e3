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
    /// PCIe generation and lanes of the link to the host CPU (what CPU offload and weight loading
    /// go through). SXM/OAM boards list their host link; SoCs (Apple silicon) have none: 0 and 0.
    pub pcie_gen: u32,
    pub pcie_lanes: u32,
    /// Native bf16 math (Ampere and later, CDNA2+, RDNA3+ WMMA, Apple M2+).
    pub bf16: bool,
    /// Native fp8 tensor cores (Ada, Hopper, Blackwell, CDNA3, RDNA4).
    pub fp8: bool,
    /// Dense fp16/bf16 tensor TFLOPS with fp32 accumulate (what cuBLAS and PyTorch reach), from
    /// the vendor's whitepaper or datasheet; absent where not looked up (prefill, training and
    /// diffusion speeds then say they are unknown).
    #[serde(default)]
    pub fp16_tflops: Option<f64>,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Where the numbers come from.
    pub source: String,
}

impl Gpu {
    pub fn vram_bytes(&self) -> u64 {
        crate::units::gib_to_bytes(self.vram_gib)
    }

    /// Checks that the figures describe a real card; names the first bad field.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.vram_gib > 0.0 && self.vram_gib < 4096.0) {
            return Err("vram_gib must be between 0 and 4096".into());
        }
        if !(self.bandwidth_gbs > 0.0 && self.bandwidth_gbs < 100_000.0) {
            return Err("bandwidth_gbs must be between 0 and 100000 GB/s".into());
        }
        // PCIe 1.0 … 6.0 with the link widths the spec defines; 0/0 means no host link.
        let lanes_ok = matches!(self.pcie_lanes, 1 | 2 | 4 | 8 | 16);
        match (self.pcie_gen, self.pcie_lanes) {
            (0, 0) => Ok(()),
            (1..=6, _) if lanes_ok => Ok(()),
            _ => Err(format!(
                "pcie_gen {} with pcie_lanes {} is not a PCIe link (gen 1-6, lanes 1/2/4/8/16, or 0 and 0)",
                self.pcie_gen, self.pcie_lanes
            )),
        }
    }
}

pub(super) fn parse(text: &str) -> Result<Vec<Gpu>, String> {
    #[derive(Deserialize)]
    struct File {
        gpu: Vec<Gpu>,
    }
    let f: File = toml::from_str(text).map_err(|e| format!("presets/gpus.toml: {e}"))?;
    for g in &f.gpu {
        g.validate()
            .map_err(|e| format!("presets/gpus.toml: {}: {e}", g.id))?;
    }
    Ok(f.gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CARD: &str = r#"
[[gpu]]
id = "x"
name = "X"
vendor = "nvidia"
kind = "desktop"
vram_gib = 8.0
bandwidth_gbs = 448.0
pcie_gen = 4
pcie_lanes = 16
bf16 = true
fp8 = false
source = "test"
"#;

    #[test]
    fn bad_figures_name_the_field() {
        assert!(parse(CARD).is_ok());
        let bad_lanes = parse(&CARD.replace("pcie_lanes = 16", "pcie_lanes = 12")).unwrap_err();
        assert!(
            bad_lanes.contains("pcie_lanes 12") && bad_lanes.contains(": x:"),
            "{bad_lanes}"
        );
        let no_link = parse(&CARD.replace("pcie_gen = 4", "pcie_gen = 0")).unwrap_err();
        assert!(no_link.contains("pcie_gen 0"), "{no_link}");
        let bw = parse(&CARD.replace("448.0", "-1.0")).unwrap_err();
        assert!(bw.contains("bandwidth_gbs"), "{bw}");
        let vram = parse(&CARD.replace("vram_gib = 8.0", "vram_gib = 0.0")).unwrap_err();
        assert!(vram.contains("vram_gib"), "{vram}");
    }
}
