//! A fake amdgpu card in a `/sys/class/drm` look-alike: the files the AMD source needs to find
//! a card (PCI vendor, uevent, VRAM size and use; `src/telemetry/amd.rs` cites where the kernel
//! documents them). Shared by the source's unit tests and the detection tests.

// Each includer uses different parts of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Writes `text` to `path`, creating the folders on the way.
pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a file in a folder")).expect("create folders");
    std::fs::write(path, text).expect("write a fake sysfs file");
}

/// One card: `card{card}` under the root, its PCI id and slot, its VRAM in bytes.
pub struct FakeCard<'a> {
    pub card: u32,
    pub pci_id: &'a str,
    pub slot: &'a str,
    pub vram_total: u64,
    pub vram_used: u64,
}

impl FakeCard<'_> {
    /// Writes the card under `drm_root`; returns its `device` folder for more files.
    pub fn write(&self, drm_root: &Path) -> PathBuf {
        let dev = drm_root.join(format!("card{}/device", self.card));
        write(&dev.join("vendor"), "0x1002\n");
        write(
            &dev.join("uevent"),
            &format!(
                "DRIVER=amdgpu\nPCI_ID={}\nPCI_SLOT_NAME={}\n",
                self.pci_id, self.slot
            ),
        );
        write(
            &dev.join("mem_info_vram_total"),
            &format!("{}\n", self.vram_total),
        );
        write(
            &dev.join("mem_info_vram_used"),
            &format!("{}\n", self.vram_used),
        );
        dev
    }
}

/// The AMD card the detection tests put next to a fake NVIDIA one: a Radeon RX 7900 XTX's PCI
/// id (no product name file, so the source names it by the id), 24 GiB with 2 GiB in use.
pub const SECOND_VENDOR: FakeCard<'static> = FakeCard {
    card: 0,
    pci_id: "1002:744C",
    slot: "0000:03:00.0",
    vram_total: 24 << 30,
    vram_used: 2 << 30,
};
