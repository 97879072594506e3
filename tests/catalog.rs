//! The embedded preset catalog: coverage, consistency and pinned figures from the vendors' spec
//! pages and the models' `config.json` files (sources are named in `presets/*.toml`).

use std::collections::HashSet;
use vram_doctor::catalog::{Catalog, GpuKind, Vendor};

fn gpu(id: &str) -> &'static vram_doctor::catalog::Gpu {
    Catalog::get().gpu(id).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn gpu_catalog_covers_every_vendor_and_kind() {
    let gpus = &Catalog::get().gpus;
    assert!(gpus.len() >= 70, "only {} GPU presets", gpus.len());
    for v in [Vendor::Nvidia, Vendor::Amd, Vendor::Apple, Vendor::Intel] {
        assert!(gpus.iter().any(|g| g.vendor == v), "no {v:?} GPU");
    }
    for k in [
        GpuKind::Desktop,
        GpuKind::Laptop,
        GpuKind::Workstation,
        GpuKind::Datacenter,
        GpuKind::Unified,
    ] {
        assert!(gpus.iter().any(|g| g.kind == k), "no {k:?} GPU");
    }
}

#[test]
fn gpu_names_and_aliases_are_unambiguous() {
    let mut seen = HashSet::new();
    for g in &Catalog::get().gpus {
        assert_eq!(
            g.id,
            g.id.to_ascii_lowercase(),
            "ids are lowercase: {}",
            g.id
        );
        assert!(!g.source.trim().is_empty(), "{} names no source", g.id);
        for name in std::iter::once(&g.id).chain(&g.aliases) {
            assert!(
                seen.insert(name.to_ascii_lowercase()),
                "'{name}' names two GPUs"
            );
        }
        // Every preset is found by each of its names.
        for a in &g.aliases {
            assert_eq!(
                Catalog::get().gpu(&a.to_ascii_uppercase()).map(|x| &x.id),
                Ok(&g.id)
            );
        }
    }
}

#[test]
fn gpu_figures_are_consistent() {
    for g in &Catalog::get().gpus {
        assert!(g.validate().is_ok(), "{}", g.id);
        // Every fp8 generation (Ada, Hopper, Blackwell, CDNA3, RDNA4) also does bf16.
        assert!(!g.fp8 || g.bf16, "{}: fp8 without bf16", g.id);
        // Unified-memory SoCs have no PCIe host link, discrete cards always have one.
        assert_eq!(
            g.kind == GpuKind::Unified,
            g.pcie_lanes == 0,
            "{}: host link",
            g.id
        );
        assert_eq!(
            g.kind == GpuKind::Unified,
            g.vendor == Vendor::Apple,
            "{}: kind",
            g.id
        );
    }
}

#[test]
fn original_gpu_ids_are_kept() {
    for id in [
        "rtx-4090",
        "rtx-3060-12gb",
        "a100-80gb",
        "h100-80gb",
        "v100-16gb",
    ] {
        assert_eq!(gpu(id).id, id);
    }
    assert_eq!(gpu("h100-sxm").id, "h100-80gb");
}

#[test]
fn gpu_spec_sheet_values() {
    // Laptop parts differ from the desktop cards of the same name.
    assert_eq!(gpu("rtx-4090-laptop").vram_gib, 16.0);
    assert_eq!(gpu("rtx-4060-laptop").vram_gib, 8.0);
    assert_eq!(gpu("rtx-3060-laptop").vram_gib, 6.0);
    assert_eq!(gpu("rtx-3060-laptop").kind, GpuKind::Laptop);
    // AD107 / AD106 cards have an x8 link.
    assert_eq!(
        (gpu("rtx-4060").pcie_gen, gpu("rtx-4060").pcie_lanes),
        (4, 8)
    );
    assert_eq!(gpu("rtx-4060-ti-16gb").pcie_lanes, 8);
    assert_eq!(gpu("rtx-5090").bandwidth_gbs, 1792.0);
    assert_eq!(gpu("rtx-3090").bandwidth_gbs, 936.0);
    assert!(!gpu("rtx-3090").fp8 && gpu("rtx-3090").bf16);
    assert!(!gpu("t4").bf16);
    assert_eq!(gpu("h200").vram_gib, 141.0);
    assert_eq!(gpu("mi300x").vram_gib, 192.0);
    assert!(gpu("mi300x").fp8);
    assert_eq!(gpu("rx-7900-xtx").vram_gib, 24.0);
    assert_eq!(gpu("m2-ultra-192gb").bandwidth_gbs, 800.0);
    assert_eq!(gpu("m3-max-128gb").kind, GpuKind::Unified);
    assert_eq!(gpu("arc-b580").vram_gib, 12.0);
}
