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
    /// Dense fp8 (e4m3) tensor TFLOPS with fp32 accumulate, the rate vLLM's and PyTorch's fp8
    /// GEMMs (`torch._scaled_mm`, CUTLASS `scaled_mm`) run at: the data sheet's figure, halved
    /// where it is given "with sparsity". Absent on cards without fp8 units or not looked up.
    #[serde(default)]
    pub fp8_tflops: Option<f64>,
    /// Dense int8 tensor TOPS (int32 accumulate): what llama.cpp's quantized matmuls (MMQ, int8
    /// tensor cores on Turing and later) and int8 W8A8 GEMMs run on.
    #[serde(default)]
    pub int8_tops: Option<f64>,
    /// Dense fp4 (e2m1) tensor TFLOPS, where the data sheet states it (Blackwell: NVFP4/MXFP4).
    #[serde(default)]
    pub fp4_tflops: Option<f64>,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Where the numbers come from.
    pub source: String,
}

impl Gpu {
    pub fn vram_bytes(&self) -> u64 {
        crate::units::gib_to_bytes(self.vram_gib)
    }

    /// The 16-bit tensor rate speed estimates start from: the data sheet's, or the measured
    /// matmul rate where that is lower.
    pub fn sustained_tflops(&self) -> Option<f64> {
        match (self.fp16_tflops, self.matmul_tflops) {
            (Some(d), Some(m)) => Some(d.min(m)),
            (d, _) => d,
        }
    }

    /// The card's tensor rates per precision as speed estimates use them: the 16-bit rate of
    /// [`Gpu::sustained_tflops`], and the fp8, int8 and fp4 data-sheet rates scaled by the same
    /// share where a measured matmul rate shows the card does not hold its data-sheet clock
    /// (a power limit slows every precision alike [derived]; stas00/ml-engineering's MAMF table,
    /// compute/accelerator/README.md: an H100 SXM reaches 80% of its bf16 and 71% of its fp8
    /// data-sheet rate).
    pub fn tensor_rates(&self) -> TensorRates {
        let share = match (self.fp16_tflops, self.sustained_tflops()) {
            (Some(d), Some(s)) if d > 0.0 => s / d,
            _ => 1.0,
        };
        TensorRates {
            fp16_tflops: self.sustained_tflops(),
            fp8_tflops: self.fp8_tflops.map(|t| t * share),
            int8_tops: self.int8_tops.map(|t| t * share),
            fp4_tflops: self.fp4_tflops.map(|t| t * share),
        }
    }

    /// Checks that the figures describe a real card; names the first bad field.
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
        for (field, v) in [
            ("fp16_tflops", self.fp16_tflops),
            ("fp8_tflops", self.fp8_tflops),
            ("int8_tops", self.int8_tops),
            ("fp4_tflops", self.fp4_tflops),
        ] {
            if v.is_some_and(|t| !(t > 0.0 && t < 100_000.0)) {
                return Err(format!("{field} must be between 0 and 100000"));
            }
        }
        if self.fp8_tflops.is_some() && !self.fp8 {
            return Err("fp8_tflops is given but fp8 = false".into());
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

/// Dense tensor rates of a card per input precision (`None`: not in its preset).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TensorRates {
    /// fp16/bf16 with fp32 accumulate, TFLOPS.
    pub fp16_tflops: Option<f64>,
    pub fp8_tflops: Option<f64>,
    pub int8_tops: Option<f64>,
    pub fp4_tflops: Option<f64>,
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
