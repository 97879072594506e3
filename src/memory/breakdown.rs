//! The result of an estimate: named components and the three peak figures users can measure.

use crate::types::message::Message;
use crate::types::options::choice;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

choice!(
    /// What a component is: the standard ids of `DESIGN.md` ("Standard component ids") and the
    /// ones a workload kind adds, written as these strings in `plan --json`.
    ComponentId, "components.id" {
        Weights = "weights",
        Gradients = "gradients",
        OptimizerStates = "optimizer_states",
        Activations = "activations",
        Logits = "logits",
        KvCache = "kv_cache",
        Workspace = "workspace",
        Adapters = "adapters",
        FusedQkv = "fused_qkv",
        TextEncoders = "text_encoders",
        VaeWeights = "vae_weights",
        VaeDecode = "vae_decode",
        Textures = "textures",
        RenderTargets = "render_targets",
        RayTracing = "ray_tracing",
        FrameGeneration = "frame_generation",
        Upscaler = "upscaler",
        Other = "other",
        CudaContext = "cuda_context",
        AllocatorOverhead = "allocator_overhead",
        ReservedVram = "reserved_vram",
        VramHeadroom = "vram_headroom",
        OsReserve = "os_reserve",
        OtherProcesses = "other_processes",
    }
);

/// Share of the card a plan leaves free: allocator fragmentation, a display, a driver update.
pub const SAFETY_MARGIN: f64 = 0.05;

/// The safety margin of a card, bytes.
pub fn margin_bytes(capacity_bytes: u64) -> u64 {
    (capacity_bytes as f64 * SAFETY_MARGIN) as u64
}

/// Where a component's bytes show up, which decides which measured figure it belongs to
/// (`DESIGN.md`, "compare like with like").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// Live tensors: what `torch.cuda.max_memory_allocated` counts (or a llama.cpp buffer).
    Tensor,
    /// Caching-allocator slack: the extra in `torch.cuda.max_memory_reserved`.
    Allocator,
    /// CUDA context, kernels and library workspaces outside the allocator: the rest of what
    /// nvidia-smi shows for the process.
    Process,
    /// Memory held by other programs on the same card.
    External,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Component {
    pub id: ComponentId,
    pub label: String,
    pub bytes: u64,
    #[serde(skip)]
    pub layer: Option<Layer>,
}

/// Peak memory per GPU in the three ways users measure it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peak {
    pub tensors_bytes: u64,
    pub reserved_bytes: u64,
    pub process_bytes: u64,
}

/// Which memory a row of the per-device breakdown is: `"gpu0"`, `"gpu1"` … or `"host"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// GPU `i` of the run's `gpu.count`.
    Gpu(u32),
    /// System RAM.
    Host,
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Gpu(i) => write!(f, "gpu{i}"),
            Device::Host => f.write_str("host"),
        }
    }
}

impl Serialize for Device {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Device {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == "host" {
            return Ok(Device::Host);
        }
        s.strip_prefix("gpu")
            .and_then(|i| i.parse().ok())
            .map(Device::Gpu)
            .ok_or_else(|| serde::de::Error::custom(format!("device '{s}': use gpuN or host")))
    }
}

/// One device's memory in the shape llama.cpp prints it at exit (`src/llama-context.cpp`,
/// `llama_memory_breakdown_print` over `llama_context::memory_breakdown`: per buffer type,
/// `model` = the model's weight buffers, `context` = the memory module's (KV cache, recurrent
/// state), `compute` = the scheduler's compute buffers; one row per GPU, "self = model +
/// context + compute", then a Host row of the same three). What the process holds outside
/// these buffers (CUDA context, allocator slack) is llama.cpp's "unaccounted" and stays in the
/// components only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceMemory {
    pub device: Device,
    pub model_bytes: u64,
    pub context_bytes: u64,
    pub compute_bytes: u64,
    /// Layers left here by `-ngl`, the output head counted as one as `-ngl` counts it
    /// (llama.cpp's host row).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<u32>,
}

impl DeviceMemory {
    /// llama.cpp's "self": model + context + compute.
    pub fn self_bytes(&self) -> u64 {
        self.model_bytes
            .saturating_add(self.context_bytes)
            .saturating_add(self.compute_bytes)
    }
}

/// An estimate: per-GPU components, their peaks, and what the card offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    pub capacity_bytes: u64,
    pub components: Vec<Component>,
    /// The run's memory per device and on the host (LLM inference; empty for other kinds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceMemory>,
    pub peak: Peak,
    /// What the estimate should be read with, as messages each front end says in its language
    /// (stored as their English text).
    pub warnings: Vec<Message>,
}

impl Breakdown {
    pub fn new(capacity_bytes: u64) -> Self {
        Breakdown {
            capacity_bytes,
            ..Default::default()
        }
    }

    /// Adds a component (zero-byte ones are kept out of the list) and updates the peaks.
    pub fn add(&mut self, id: ComponentId, label: &str, bytes: f64, layer: Layer) {
        let bytes = if bytes.is_finite() && bytes > 0.0 {
            bytes.round().min(u64::MAX as f64) as u64
        } else {
            0
        };
        if bytes == 0 {
            return;
        }
        self.components.push(Component {
            id,
            label: label.into(),
            bytes,
            layer: Some(layer),
        });
        self.recompute();
    }

    pub fn warn(&mut self, w: Message) {
        self.warnings.push(w);
    }

    fn recompute(&mut self) {
        let sum = |l: Layer| -> u64 {
            self.components
                .iter()
                .filter(|c| c.layer == Some(l))
                .map(|c| c.bytes)
                .fold(0u64, u64::saturating_add)
        };
        let t = sum(Layer::Tensor);
        let r = t.saturating_add(sum(Layer::Allocator));
        let p = r.saturating_add(sum(Layer::Process));
        self.peak = Peak {
            tensors_bytes: t,
            reserved_bytes: r,
            process_bytes: p,
        };
    }

    /// Bytes of one component, zero when absent.
    pub fn get(&self, id: ComponentId) -> u64 {
        self.components
            .iter()
            .filter(|c| c.id == id)
            .map(|c| c.bytes)
            .sum()
    }

    /// One row per GPU of a run whose `gpus` GPUs each hold these components (a layer split or
    /// tensor-parallel share each): weights as model, KV cache as context, the forward pass's
    /// buffers as compute.
    pub fn gpu_rows(&self, gpus: u32) -> Vec<DeviceMemory> {
        use ComponentId::*;
        let sum = |ids: &[ComponentId]| ids.iter().map(|&id| self.get(id)).sum();
        (0..gpus.max(1))
            .map(|i| DeviceMemory {
                device: Device::Gpu(i),
                model_bytes: sum(&[Weights, FusedQkv]),
                context_bytes: sum(&[KvCache]),
                compute_bytes: sum(&[Activations, Logits]),
                layers: None,
            })
            .collect()
    }

    /// Memory other programs hold on the card.
    pub fn external_bytes(&self) -> u64 {
        self.components
            .iter()
            .filter(|c| c.layer == Some(Layer::External))
            .map(|c| c.bytes)
            .sum()
    }

    /// What the card must hold: this process plus everyone else.
    pub fn required_bytes(&self) -> u64 {
        self.peak
            .process_bytes
            .saturating_add(self.external_bytes())
    }

    pub fn fits(&self) -> bool {
        self.required_bytes() <= self.capacity_bytes
    }

    /// Free bytes left on the card at the peak (negative when it does not fit).
    pub fn headroom_bytes(&self) -> i128 {
        i128::from(self.capacity_bytes) - i128::from(self.required_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_stack_by_layer() {
        let mut b = Breakdown::new(1000);
        b.add(ComponentId::Weights, "Model weights", 500.0, Layer::Tensor);
        b.add(
            ComponentId::AllocatorOverhead,
            "Allocator",
            50.0,
            Layer::Allocator,
        );
        b.add(
            ComponentId::CudaContext,
            "CUDA context",
            300.0,
            Layer::Process,
        );
        b.add(
            ComponentId::OtherProcesses,
            "Other programs",
            100.0,
            Layer::External,
        );
        b.add(ComponentId::Logits, "Logits", -5.0, Layer::Tensor);
        assert_eq!(
            b.peak,
            Peak {
                tensors_bytes: 500,
                reserved_bytes: 550,
                process_bytes: 850
            }
        );
        assert_eq!(b.required_bytes(), 950);
        assert!(b.fits());
        assert_eq!(b.headroom_bytes(), 50);
        assert_eq!(b.components.len(), 4, "non-positive components are dropped");
    }
}
