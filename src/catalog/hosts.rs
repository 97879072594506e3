//! The host a GPU sits in: how much system RAM it has (what CPU offload must fit in) and how
//! fast it reads (what layers and experts left in system RAM cost per token). Presets in
//! `presets/hosts.toml`; this machine's RAM size from `/proc/meminfo` (Linux) or
//! `GlobalMemoryStatusEx` (Windows), its bandwidth from the memory modules its SMBIOS table
//! lists (`smbios`).

use super::smbios;
use crate::types::error::BadField;
use crate::types::message::Message;
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
        BadField(
            Message::new("resolve.host_unknown")
                .text("value", &id)
                .text("allowed", ids.join(", ")),
        )
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
            return Err(BadField::positive_range("gpu.host_ram_gbps", bw, 100_000));
        }
        h.ram_gbps = bw;
        h.source = format!("{bw} GB/s (gpu.host_ram_gbps)");
    }
    if let Some(gib) = g.host_ram_gib {
        if !(gib.is_finite() && gib > 0.0 && gib <= 1_048_576.0) {
            return Err(BadField::positive_range("gpu.host_ram_gib", gib, 1_048_576));
        }
        h.ram_bytes = Some(crate::units::gib_to_bytes(gib));
    }
    Ok(h)
}

/// This machine's total RAM in GiB: `MemTotal` of `/proc/meminfo` on Linux, `ullTotalPhys` of
/// `GlobalMemoryStatusEx` on Windows; `None` elsewhere or when it cannot be read.
pub fn this_machine_ram_gib() -> Option<f64> {
    #[cfg(windows)]
    {
        windows::total_phys().map(|b| b as f64 / f64::from(1u32 << 30))
    }
    #[cfg(not(windows))]
    {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        meminfo_total_gib(&text)
    }
}

/// This machine's memory modules as its SMBIOS table lists them, or why they cannot be read.
pub fn this_machine_ram() -> Result<smbios::RamReading, String> {
    let table = smbios_table()?;
    smbios::ram_reading(&smbios::memory_devices(&table))
        .ok_or_else(|| "its SMBIOS table lists no memory module with a speed".into())
}

/// The host of a plan for this machine that names no host (neither `gpu.host` nor
/// `gpu.host_ram_gbps`): its modules' bandwidth where the SMBIOS table can be read, else the
/// assumed preset with the reason in the source the speed basis prints.
pub fn this_machine(h: &mut Host) {
    match this_machine_ram() {
        Ok(r) => {
            h.ram_gbps = r.gbps;
            h.source = format!("this machine: {}", r.description);
        }
        Err(why) => {
            h.source = format!(
                "{} (assumed: {why}; set gpu.host or gpu.host_ram_gbps)",
                default_preset().name
            );
        }
    }
}

/// Linux: `/sys/firmware/dmi/tables/DMI`, the raw table, which the kernel makes readable by
/// root only (`drivers/firmware/dmi-sysfs.c` / `dmi_scan.c`: mode 0400).
#[cfg(target_os = "linux")]
fn smbios_table() -> Result<Vec<u8>, String> {
    use std::io::Read;
    const PATH: &str = "/sys/firmware/dmi/tables/DMI";
    let f = std::fs::File::open(PATH).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => format!("{PATH} is readable by root only"),
        std::io::ErrorKind::NotFound => format!("this system has no {PATH}"),
        _ => format!("{PATH}: {e}"),
    })?;
    let mut table = Vec::new();
    f.take(1 << 20)
        .read_to_end(&mut table)
        .map_err(|e| format!("{PATH}: {e}"))?;
    Ok(table)
}

#[cfg(windows)]
fn smbios_table() -> Result<Vec<u8>, String> {
    windows::smbios().ok_or_else(|| "GetSystemFirmwareTable('RSMB') returned no table".into())
}

#[cfg(not(any(target_os = "linux", windows)))]
fn smbios_table() -> Result<Vec<u8>, String> {
    Err("memory modules are read on Linux and Windows only".into())
}

/// The two Windows calls, in kernel32 (which every Rust program on Windows links).
#[cfg(windows)]
mod windows {
    #[repr(C)]
    struct MemoryStatusEx {
        length: u32,
        memory_load: u32,
        total_phys: u64,
        avail_phys: u64,
        total_page_file: u64,
        avail_page_file: u64,
        total_virtual: u64,
        avail_virtual: u64,
        avail_extended_virtual: u64,
    }

    #[link(name = "kernel32")]
    unsafe extern "system" {
        fn GlobalMemoryStatusEx(buffer: *mut MemoryStatusEx) -> i32;
        fn GetSystemFirmwareTable(provider: u32, id: u32, buffer: *mut u8, size: u32) -> u32;
    }

    /// `GlobalMemoryStatusEx`'s physical memory, bytes.
    pub fn total_phys() -> Option<u64> {
        let mut m = MemoryStatusEx {
            length: std::mem::size_of::<MemoryStatusEx>() as u32,
            memory_load: 0,
            total_phys: 0,
            avail_phys: 0,
            total_page_file: 0,
            avail_page_file: 0,
            total_virtual: 0,
            avail_virtual: 0,
            avail_extended_virtual: 0,
        };
        // SAFETY: `m` is a MEMORYSTATUSEX with dwLength set, as the call requires.
        let ok = unsafe { GlobalMemoryStatusEx(&mut m) };
        (ok != 0 && m.total_phys > 0).then_some(m.total_phys)
    }

    /// The SMBIOS table without its `RawSMBIOSData` header: the first call asks the size,
    /// the second fills a buffer of that size (at most 1 MiB).
    pub fn smbios() -> Option<Vec<u8>> {
        const RSMB: u32 = u32::from_be_bytes(*b"RSMB");
        // SAFETY: a null buffer of size 0 asks for the size only.
        let n = unsafe { GetSystemFirmwareTable(RSMB, 0, std::ptr::null_mut(), 0) };
        if n == 0 || n > 1 << 20 {
            return None;
        }
        let mut buf = vec![0u8; n as usize];
        // SAFETY: `buf` holds `n` writable bytes.
        let got = unsafe { GetSystemFirmwareTable(RSMB, 0, buf.as_mut_ptr(), n) };
        if got == 0 || got > n {
            return None;
        }
        buf.truncate(got as usize);
        super::smbios::windows_raw_table(&buf).map(<[u8]>::to_vec)
    }
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
        assert!(
            preset("ddr9")
                .unwrap_err()
                .to_string()
                .contains("ddr5-6000-2ch")
        );
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
    fn this_machine_is_read_or_the_assumed_preset_says_why() {
        let mut h = assumed();
        this_machine(&mut h);
        match this_machine_ram() {
            Ok(r) => {
                assert_eq!(h.ram_gbps, r.gbps);
                assert!(h.source.starts_with("this machine: "), "{}", h.source);
            }
            Err(why) => {
                assert_eq!(h.ram_gbps, default_preset().gbps);
                assert!(
                    h.source.contains(&why) && h.source.contains("assumed"),
                    "{}",
                    h.source
                );
            }
        }
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
        assert!(
            resolve(&g)
                .unwrap_err()
                .to_string()
                .contains("gpu.host_ram_gbps")
        );
    }
}
