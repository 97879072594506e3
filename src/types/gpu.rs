//! A GPU as its preset describes it (`presets/gpus.toml` holds the figures; `catalog` reads
//! them), and what its host link is worth.

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
    /// The largest dense 16-bit `torch.matmul` rate measured on the card and published, TFLOPS,
    /// given where it falls well short of `fp16_tflops`: a power-limited workstation or
    /// datacenter card does not hold the clock its data-sheet figure assumes (an RTX A6000
    /// measures 123 of its 154.8, an L40S 269 of 362). Speeds use the lower of the two
    /// ([`Gpu::sustained_tflops`]).
    #[serde(default)]
    pub matmul_tflops: Option<f64>,
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
    /// The 16-bit tensor rate speed estimates start from: the data sheet's, or the measured
    /// matmul rate where that is lower.
    pub fn sustained_tflops(&self) -> Option<f64> {
        match (self.fp16_tflops, self.matmul_tflops) {
            (Some(d), Some(m)) => Some(d.min(m)),
            (d, _) => d,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if !(self.vram_gib > 0.0 && self.vram_gib < 4096.0) {
            return Err("vram_gib must be between 0 and 4096".into());
        }
        match (self.fp16_tflops, self.matmul_tflops) {
            (_, None) => {}
            (Some(d), Some(m)) if m > 0.0 && m <= d => {}
            _ => {
                return Err(
                    "matmul_tflops must be positive, at most fp16_tflops, and given with it".into(),
                );
            }
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

/// Usable host-to-device bandwidth for streamed weights: 0.985 / 1.97 / 3.94 GB/s per lane for
/// PCIe 3/4/5 (PCI-SIG line rates after 128b/130b encoding), at 50% — copies from pageable
/// host memory reach about half the line rate in CUDA `bandwidthTest --memory=pageable` runs,
/// pinned ones ~80% [derived].
pub fn pcie_gbs(generation: u32, lanes: u32) -> f64 {
    let per_lane = match generation {
        0 => return 0.0,
        1 => 0.25,
        2 => 0.5,
        3 => 0.985,
        4 => 1.969,
        _ => 3.938,
    };
    per_lane * f64::from(lanes) * 0.5
}
