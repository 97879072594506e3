//! Figures printed by programs other than PyTorch, read from the lowercased, flattened text
//! (`flat.rs`), so case, wrapping and log prefixes do not matter. Each anchor is the program's
//! own wording; where it comes from is named beside it (and in `assets/doctor/signatures.toml`).

use super::size;
use crate::units::{MIB, human};
use std::collections::BTreeMap;

/// What the figures say beyond their values: sizes the reader compares with each other.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolFigures {
    /// Figures for the fact templates (facts.toml), already formatted.
    pub values: BTreeMap<String, String>,
    /// The single allocation that failed (llama.cpp/ggml on any backend, ollama, Metal).
    pub failed_buffer: Option<u64>,
    /// The device's total memory as the program printed it.
    pub card_total: Option<u64>,
    /// A1111's "Sys:" peak (whole device, every process) against its total.
    pub webui_sys: Option<(u64, u64)>,
}

/// Every offset just past `anchor` in `text`.
fn after_all<'t>(text: &'t str, anchor: &'t str) -> impl Iterator<Item = &'t str> + 't {
    text.match_indices(anchor)
        .map(move |(i, _)| &text[i + anchor.len()..])
}

fn size_after(text: &str, anchor: &str) -> Option<u64> {
    after_all(text, anchor).find_map(|rest| size::leading(rest)?.0.bytes())
}

fn number_after(text: &str, anchor: &str) -> Option<f64> {
    after_all(text, anchor).find_map(|rest| Some(size::leading_number(rest.trim_start())?.0))
}

/// The size printed just before `anchor` ("5.62 gib kv cache is needed").
fn size_before(text: &str, anchor: &str) -> Option<u64> {
    text.match_indices(anchor).find_map(|(i, _)| {
        let head = text[..i].trim_end();
        let head = head.trim_end_matches(['(', ',']);
        // At most the last two words: "<number> <unit>".
        let start = head
            .char_indices()
            .rev()
            .filter(|(_, c)| *c == ' ' || *c == '(')
            .nth(1)
            .map_or(0, |(j, _)| j + 1);
        size::trailing(&head[start..])?.bytes()
    })
}

/// The plain number just before `anchor` ("81152 total,").
fn number_before(text: &str, anchor: &str) -> Option<f64> {
    text.match_indices(anchor).find_map(|(i, _)| {
        let head = text[..i].trim_end();
        let start = head.rfind(' ').map_or(0, |j| j + 1);
        let (n, rest) = size::leading_number(&head[start..])?;
        rest.is_empty().then_some(n)
    })
}

fn mib(n: f64) -> u64 {
    (n * MIB).round() as u64
}

/// Reads every figure the programs print around a memory failure.
pub fn read(lower: &str) -> ToolFigures {
    let mut t = ToolFigures::default();
    let v = &mut t.values;
    let put = |v: &mut BTreeMap<String, String>, k: &str, b: Option<u64>| {
        if let Some(b) = b {
            v.entry(k.to_string()).or_insert_with(|| human(b));
        }
    };

    // --- the allocation that failed ---
    // ggml-cuda.cu ggml_backend_cuda_buffer_type_alloc_buffer: "allocating 144817.04 MiB on device 0:
    // cudaMalloc failed"; ggml-alloc.c alloc_tensor_range / ggml-backend.cpp: "failed to allocate
    // CUDA0 buffer of size 151851674624"; ggml-vulkan.cpp ggml_vk_create_buffer: "Device memory
    // allocation of size 1037832192 failed."; ggml-metal: "failed to allocate buffer, size =
    // 2048.00 MiB"; PyTorch's DefaultCPUAllocator: "you tried to allocate 1073741824 bytes".
    t.failed_buffer = size_after(lower, "allocating ")
        .or_else(|| number_after(lower, "buffer of size ").map(|b| b as u64))
        .or_else(|| number_after(lower, "memory allocation of size ").map(|b| b as u64))
        .or_else(|| size_after(lower, "failed to allocate buffer, size = "))
        .or_else(|| size_after(lower, "failed to allocate "))
        .or_else(|| size_after(lower, "you tried to allocate "));
    put(v, "buffer", t.failed_buffer);

    // --- the device's total ---
    // ggml-cuda.cu ggml_cuda_init: "found 1 CUDA devices (Total VRAM: 24123 MiB)" and per device
    // "VRAM: 24123 MiB"; common/arg.cpp --list-devices: "CUDA0: NAME (24080 MiB, 23000 MiB free)";
    // src/llama.cpp llama_params_fit_impl: "CUDA0 (NAME): 81152 total, 78810 used, 1839 free vs.
    // target of 4096"; ollama server/sched.go: total="11.8 GiB" available="3.1 GiB".
    t.card_total = number_after(lower, "(total vram: ")
        .or_else(|| number_after(lower, ", vram: "))
        .map(mib)
        .or_else(|| list_devices_total(lower))
        .or_else(|| number_before(lower, " total, ").map(mib))
        .or_else(|| size_after(lower, " total=\""));
    put(v, "total", t.card_total);
    // The context: llama.cpp's llama_context / llama_new_context_with_model "n_ctx = 8192", the
    // runner command line ollama logs ("--ctx-size 8192").
    if let Some(n) = number_after(lower, "n_ctx = ").or_else(|| number_after(lower, "--ctx-size "))
    {
        v.insert("n_ctx".into(), format!("{n:.0}"));
    }
    if let Some(f) = list_devices_free(lower)
        .or_else(|| number_before(lower, " mib free").map(mib))
        .or_else(|| size_after(lower, " available=\""))
        .or_else(|| size_after(lower, "memory.available=\"["))
    {
        put(v, "card_free", Some(f));
    }
    // ollama llm/memory.go (releases up to 0.11) EstimateGPULayers' "offload to" log line.
    put(
        v,
        "needed_vram",
        size_after(lower, "memory.required.full=\""),
    );

    // --- llama.cpp's buffer report: "load_tensors: CUDA0 model buffer size = 4403.49 MiB",
    // "llama_kv_cache: CUDA0 KV buffer size = 1024.00 MiB", "llama_context: CUDA0 compute buffer
    // size = 560.00 MiB"; 2023 builds: "KV self size = 2560.00 MiB".
    let (on_gpu, kv) = buffer_report(lower);
    put(v, "gpu_buffers", on_gpu);
    put(v, "kv", kv.or_else(|| size_after(lower, "kv self size = ")));

    // --- ollama: "model requires more system memory (164.8 GiB) than is available (13.4 GiB)"
    // (server/sched.go, releases 0.3–0.11); x/mlxrunner/client.go: "model requires 30 GiB but only
    // 20 GiB are available (after 1 GiB overhead)".
    put(v, "needed", size_after(lower, "more system memory ("));
    put(v, "available", size_after(lower, "than is available ("));
    put(v, "needed", size_after(lower, "model requires "));
    put(v, "available", size_after(lower, "but only "));

    // --- vLLM V0 (vllm/worker/worker.py raise_if_cache_size_invalid): "max seq len (4096) is
    // larger than ... stored in KV cache (3664)"; V1 (vllm/v1/core/kv_cache_utils.py
    // check_enough_kv_cache_memory): "max seq len (40960), (5.62 GiB KV cache is needed, which is
    // larger than the available KV cache memory (4.50 GiB). Based on the available memory, the
    // estimated maximum model length is 32768."
    if let Some(n) = number_after(lower, "max seq len (") {
        v.insert("max_seq".into(), format!("{n:.0}"));
    }
    if let Some(n) = number_after(lower, "stored in kv cache (") {
        v.insert("kv_tokens".into(), format!("{n:.0}"));
    }
    put(v, "kv_needed", size_before(lower, "kv cache is needed"));
    put(
        v,
        "kv_available",
        size_after(lower, "available kv cache memory ("),
    );
    if let Some(n) = number_after(lower, "maximum model length is ") {
        v.insert("max_len_fit".into(), format!("{n:.0}"));
    }
    // vLLM vllm/v1/worker/gpu_worker.py init_device (vllm/utils/mem_utils.py MemorySnapshot):
    // "Free memory on device cuda:0 (7.34/15.49 GiB) on startup is less than desired GPU memory
    // utilization (0.8, 12.39 GiB)".
    if let Some(rest) = after_all(lower, "free memory on device").next()
        && let Some((free, total)) = rest.find('(').and_then(|o| fraction(&rest[o + 1..]))
    {
        put(v, "card_free", Some(free));
        put(v, "total", Some(total));
        t.card_total = t.card_total.or(Some(total));
    }
    if let Some(u) = number_after(lower, "desired gpu memory utilization (") {
        v.insert("utilization".into(), format!("{u}"));
    }
    put(
        v,
        "wanted",
        after_all(lower, "desired gpu memory utilization (").find_map(|rest| {
            let comma = rest.find(", ")?;
            size::leading(&rest[comma + 2..])?.0.bytes()
        }),
    );

    // --- Forge backend/sampling/sampling_function.py: "[Low GPU VRAM Warning] Your current GPU
    // free memory is 512.00 MB for this diffusion iteration. ... lower than the safe value of
    // 1536.00 MB"; backend/memory_management.py: "[Memory Management] Target: ..., Free GPU: ...
    // MB, Model Require: ... MB, ..., Remaining: -500.00 MB".
    put(v, "free", size_after(lower, "gpu free memory is "));
    put(v, "safe", size_after(lower, "safe value of "));
    put(v, "free", size_after(lower, "free gpu: "));
    put(v, "model_require", size_after(lower, "model require: "));

    // --- A1111 modules/ui_common.py (update_generation_info's memory line): "A: 2.95 GB, R:
    // 3.32 GB, Sys: 7.8/8 GB (97.5%)" — torch's peak allocated and reserved, and the device's
    // peak use by every process.
    if let Some((used, total)) = after_all(lower, "sys: ").find_map(fraction) {
        t.webui_sys = Some((used, total));
        put(v, "sys", Some(used));
        put(v, "total", Some(total));
        put(v, "peak_allocated", size_after(lower, "a: "));
        put(v, "peak_reserved", size_after(lower, "r: "));
    }

    // --- D3D12 budget dump: "BudgetBytes": 3540794471, "UsageBytes": 4229804032.
    if let Some(b) = number_after(lower, "\"budgetbytes\":") {
        v.insert("budget".into(), human(b as u64));
    }
    if let Some(u) = number_after(lower, "\"usagebytes\":") {
        v.insert("usage".into(), human(u as u64));
    }
    if let Some(total) = t.card_total {
        v.entry("total_gib".into())
            .or_insert_with(|| format!("{:.2}", total as f64 / crate::units::GIB));
    }
    t
}

/// "7.34/15.49 gib" → both in bytes (the unit is printed once, after the second number).
fn fraction(s: &str) -> Option<(u64, u64)> {
    let (used, tail) = size::leading_number(s)?;
    let tail = tail.strip_prefix('/')?;
    let (total_number, _) = size::leading_number(tail)?;
    let total = size::leading(tail)?.0.bytes()?;
    if total_number <= 0.0 {
        return None;
    }
    let factor = total as f64 / total_number;
    Some(((used * factor).round() as u64, total))
}

/// `--list-devices` lines: "(24080 mib, 23000 mib free)" → (total, free).
fn list_devices(lower: &str) -> Option<(u64, u64)> {
    lower.match_indices(" mib free)").find_map(|(i, _)| {
        let head = &lower[..i];
        let open = head.rfind('(')?;
        let (total, rest) = size::leading(&head[open + 1..])?;
        let free = rest.trim_start().strip_prefix(',')?;
        let (free, _) = size::leading_number(free.trim_start())?;
        Some((total.bytes()?, mib(free)))
    })
}

fn list_devices_total(lower: &str) -> Option<u64> {
    list_devices(lower).map(|(t, _)| t)
}

fn list_devices_free(lower: &str) -> Option<u64> {
    list_devices(lower).map(|(_, f)| f)
}

/// Sum of llama.cpp's "<device> <kind> buffer size = N MiB" lines on devices other than the
/// CPU and host memory, and the KV part of it.
fn buffer_report(lower: &str) -> (Option<u64>, Option<u64>) {
    let mut on_gpu: Option<u64> = None;
    let mut kv: Option<u64> = None;
    for (i, _) in lower.match_indices(" buffer size = ") {
        let Some((s, _)) = size::leading(&lower[i + " buffer size = ".len()..]) else {
            continue;
        };
        let Some(bytes) = s.bytes() else { continue };
        let mut words = lower[..i].rsplit(' ');
        let kind = words.next().unwrap_or("");
        let device = words.next().unwrap_or("");
        if device.starts_with("cpu") || device.contains("host") || device.is_empty() {
            continue;
        }
        *on_gpu.get_or_insert(0) += bytes;
        if kind == "kv" {
            *kv.get_or_insert(0) += bytes;
        }
    }
    (on_gpu, kv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::flat::Flat;

    fn read_text(s: &str) -> ToolFigures {
        read(&Flat::new(s, true).text)
    }

    #[test]
    fn ollama_vllm_and_ggml_figures() {
        let t = read_text(
            "Error: model requires more system memory (164.8 GiB) than is available (13.4 GiB)",
        );
        assert_eq!(t.values["needed"], "164.80 GiB");
        assert_eq!(t.values["available"], "13.40 GiB");
        let t = read_text(
            "The model's max seq len (4096) is larger than the maximum number of tokens that can be stored in KV cache (3664).",
        );
        assert_eq!(
            (t.values["max_seq"].as_str(), t.values["kv_tokens"].as_str()),
            ("4096", "3664")
        );
        let t =
            read_text("alloc_tensor_range: failed to allocate CUDA0 buffer of size 151851674624");
        assert_eq!(t.values["buffer"], "141.42 GiB");
        let t = read_text(
            "ValueError: To serve at least one request with the models's max seq len (40960),\n(5.62 GiB KV cache is needed, which is larger than the available KV cache memory (4.50 GiB). Based on the available memory, the estimated maximum model length is 32768.",
        );
        assert_eq!(t.values["kv_needed"], "5.62 GiB");
        assert_eq!(t.values["kv_available"], "4.50 GiB");
        assert_eq!(t.values["max_len_fit"], "32768");
    }

    #[test]
    fn card_totals_from_each_program() {
        let t = read_text("ggml_cuda_init: found 1 CUDA devices (Total VRAM: 10239 MiB):");
        assert_eq!(t.card_total, Some(mib(10239.0)));
        let t = read_text("  CUDA0: NVIDIA GeForce RTX 3060 (12287 MiB, 11245 MiB free)");
        assert_eq!(t.card_total, Some(mib(12287.0)));
        assert_eq!(t.values["card_free"], human(mib(11245.0)));
        let t = read_text(
            "common_params_fit_impl:   - CUDA0 (NVIDIA GeForce RTX 2080 Ti): 11263 total, 66676 used, -56571 free vs. target of 1024",
        );
        assert_eq!(t.card_total, Some(mib(11263.0)));
        let t = read_text(
            "ValueError: Free memory on device cuda:0 (7.34/15.49 GiB) on startup is less than desired GPU memory utilization (0.8, 12.39 GiB).",
        );
        assert_eq!(t.values["card_free"], "7.34 GiB");
        assert_eq!(t.values["total"], "15.49 GiB");
        assert_eq!(t.values["wanted"], "12.39 GiB");
        assert_eq!(t.values["utilization"], "0.8");
    }

    #[test]
    fn buffer_report_sums_gpu_lines_only() {
        let t = read_text(
            "load_tensors:        CUDA0 model buffer size =  4403.49 MiB\nload_tensors:   CPU_Mapped model buffer size =   281.81 MiB\nllama_kv_cache:      CUDA0 KV buffer size =  1024.00 MiB\nllama_context:  CUDA_Host  output buffer size =     0.58 MiB",
        );
        assert_eq!(t.values["kv"], "1.00 GiB");
        assert_eq!(t.values["gpu_buffers"], human(mib(4403.49 + 1024.0)));
    }

    #[test]
    fn webui_status_line() {
        let t =
            read_text("Time taken: 1 min. 2.1 sec. A: 7.12 GB, R: 7.60 GB, Sys: 8.0/8 GB (99.5%)");
        assert_eq!(t.webui_sys, Some((8 << 30, 8 << 30)));
        assert_eq!(t.values["peak_reserved"], "7.60 GiB");
    }
}
