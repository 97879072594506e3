//! AMD GPUs on Linux through the amdgpu driver's sysfs files and DRM fdinfo; plain file reads, so
//! the tests point it at a fake tree in a temp dir.
//!
//! Files (Linux `drivers/gpu/drm/amd/amdgpu/amdgpu_vram_mgr.c`, `amdgpu_gtt_mgr.c`, documented in
//! `Documentation/gpu/amdgpu/driver-misc.rst`; `monitor.md` §4.4): `mem_info_vram_total/_used`
//! (bytes), `mem_info_gtt_total/_used` (GTT = system RAM mapped for the GPU, the Linux analogue of
//! Windows "shared GPU memory"), `gpu_busy_percent`, `mem_busy_percent`, `pp_dpm_sclk/_mclk`
//! (active level marked `*`), hwmon `temp1_input` (m°C), `power1_average` (µW), `power1_cap`.
//! Per process: `/proc/<pid>/fdinfo/<fd>` keys `drm-driver`, `drm-pdev`, `drm-client-id`,
//! `drm-memory-vram`, `drm-memory-gtt` (kernel ≥ 5.14, `Documentation/gpu/drm-usage-stats.rst`).

use super::sample::{
    GpuSample, GpuStatus, MemorySample, ProcessKind, ProcessSample, SharedMemory, Snapshot,
    SourceKind, SourceState, now_ms,
};
use super::source::Source;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// AMD's PCI vendor id.
const VENDOR_AMD: &str = "0x1002";
/// Scanning every process's fdinfo costs one read per open DRM file; do it every 5th tick only
/// (the same cadence as NVML's PCIe counters) and repeat the last list in between.
const PROC_EVERY: u64 = 5;
/// sysfs and fdinfo files are a few hundred bytes; never read more than this from one.
const MAX_FILE: u64 = 16 * 1024;

struct Card {
    index: u32,
    device: PathBuf,
    name: String,
    slot: Option<String>,
}

pub struct AmdSource {
    proc_root: PathBuf,
    cards: Vec<Card>,
    tick: u64,
    processes: HashMap<String, Vec<ProcessSample>>,
}

impl AmdSource {
    /// Reads the cards under `drm_root` (a `/sys/class/drm` look-alike) and processes under `proc_root`.
    pub fn new(drm_root: &Path, proc_root: &Path) -> Self {
        let mut cards = Vec::new();
        let mut dirs: Vec<(u32, PathBuf)> = fs::read_dir(drm_root)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let n: u32 = name.strip_prefix("card")?.parse().ok()?;
                Some((n, e.path().join("device")))
            })
            .collect();
        dirs.sort();
        for (n, device) in dirs {
            let vendor = read_small(&device.join("vendor")).unwrap_or_default();
            if vendor.trim() != VENDOR_AMD || !device.join("mem_info_vram_total").exists() {
                continue;
            }
            let uevent = read_small(&device.join("uevent")).unwrap_or_default();
            let key = |k: &str| {
                uevent
                    .lines()
                    .find_map(|l| l.strip_prefix(k))
                    .map(str::to_string)
            };
            let slot = key("PCI_SLOT_NAME=");
            let name = read_small(&device.join("product_name"))
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| {
                    format!(
                        "AMD GPU {}",
                        key("PCI_ID=").unwrap_or_else(|| format!("card{n}"))
                    )
                });
            cards.push(Card {
                index: cards.len() as u32,
                device,
                name,
                slot,
            });
        }
        AmdSource {
            proc_root: proc_root.to_path_buf(),
            cards,
            tick: 0,
            processes: HashMap::new(),
        }
    }

    pub fn gpu_count(&self) -> usize {
        self.cards.len()
    }

    fn read_card(&self, c: &Card) -> GpuSample {
        let f = |name: &str| read_u64(&c.device.join(name));
        let mut g = GpuSample {
            index: c.index,
            uuid: c.slot.clone(),
            name: c.name.clone(),
            ..Default::default()
        };
        let (Some(total), Some(used)) = (f("mem_info_vram_total"), f("mem_info_vram_used")) else {
            // The card answered at start-up but its memory files no longer read: it is gone
            // (unplugged eGPU, driver reset in progress).
            g.status = GpuStatus::Lost;
            return g;
        };
        g.memory = Some(MemorySample {
            total,
            used,
            reserved: None,
            used_includes_reserved: false,
        });
        g.shared = f("mem_info_gtt_used").map(|used| SharedMemory {
            used,
            total: f("mem_info_gtt_total"),
        });
        g.util_gpu_pct = f("gpu_busy_percent").map(|v| v as u32);
        g.util_mem_pct = f("mem_busy_percent").map(|v| v as u32);
        g.clock_graphics_mhz = read_small(&c.device.join("pp_dpm_sclk"))
            .as_deref()
            .and_then(active_level_mhz);
        g.clock_mem_mhz = read_small(&c.device.join("pp_dpm_mclk"))
            .as_deref()
            .and_then(active_level_mhz);
        if let Some(hw) = hwmon_dir(&c.device) {
            g.temp_c = read_u64(&hw.join("temp1_input")).map(|m| (m / 1000) as u32);
            g.power_w = read_u64(&hw.join("power1_average"))
                .or_else(|| read_u64(&hw.join("power1_input")))
                .map(|uw| uw as f64 / 1e6);
            g.power_limit_w = read_u64(&hw.join("power1_cap")).map(|uw| uw as f64 / 1e6);
        }
        g.processes = Some(
            c.slot
                .as_ref()
                .and_then(|s| self.processes.get(s))
                .cloned()
                .unwrap_or_default(),
        );
        g
    }
}

impl Source for AmdSource {
    fn kind(&self) -> SourceKind {
        SourceKind::Amd
    }

    fn sample(&mut self) -> Snapshot {
        if self.tick.is_multiple_of(PROC_EVERY) {
            self.processes = scan_processes(&self.proc_root);
        }
        self.tick += 1;
        let gpus: Vec<GpuSample> = self.cards.iter().map(|c| self.read_card(c)).collect();
        let state = if gpus.is_empty() {
            SourceState::NoGpu
        } else if gpus.iter().all(|g| g.status == GpuStatus::Lost) {
            SourceState::GpuLost("amdgpu memory files stopped reading".into())
        } else {
            SourceState::Ok
        };
        Snapshot {
            time_ms: now_ms(),
            source: SourceKind::Amd,
            state,
            gpus,
            notes: Vec::new(),
        }
    }
}

/// Reads at most `MAX_FILE` bytes of a small text file.
fn read_small(path: &Path) -> Option<String> {
    let mut s = String::new();
    fs::File::open(path)
        .ok()?
        .take(MAX_FILE)
        .read_to_string(&mut s)
        .ok()?;
    Some(s)
}

fn read_u64(path: &Path) -> Option<u64> {
    read_small(path)?.trim().parse().ok()
}

fn hwmon_dir(device: &Path) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(device.join("hwmon"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs.into_iter().next()
}

/// The active level of a `pp_dpm_*` file: lines like `1: 2400Mhz *`.
fn active_level_mhz(text: &str) -> Option<u32> {
    let line = text.lines().find(|l| l.trim_end().ends_with('*'))?;
    let value = line.split(':').nth(1)?.trim().trim_end_matches('*').trim();
    value
        .to_ascii_lowercase()
        .strip_suffix("mhz")?
        .trim()
        .parse()
        .ok()
}

/// A DRM fdinfo size (`1234 KiB`, `5 MiB`, or bare bytes) in bytes.
fn fdinfo_bytes(v: &str) -> Option<u64> {
    let mut it = v.split_whitespace();
    let n: u64 = it.next()?.parse().ok()?;
    let mult = match it.next() {
        None => 1,
        Some("KiB") => 1024,
        Some("MiB") => 1024 * 1024,
        Some("GiB") => 1024 * 1024 * 1024,
        Some(_) => return None,
    };
    n.checked_mul(mult)
}

/// Per PCI slot, the processes with amdgpu DRM clients. A client shared by several fds or
/// processes is counted once (amdgpu_top#7 shows the double counting otherwise).
fn scan_processes(proc_root: &Path) -> HashMap<String, Vec<ProcessSample>> {
    let mut out: HashMap<String, Vec<ProcessSample>> = HashMap::new();
    let mut clients: HashSet<(String, String)> = HashSet::new();
    let Ok(entries) = fs::read_dir(proc_root) else {
        return out;
    };
    // Lowest pid first, so a client shared after a fork goes to the parent, every time.
    let mut pids: Vec<(u32, PathBuf)> = entries
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse::<u32>().ok()?, e.path())))
        .collect();
    pids.sort();
    for (pid, dir) in pids {
        let Ok(fds) = fs::read_dir(dir.join("fd")) else {
            continue;
        };
        let mut per_slot: HashMap<String, (u64, u64)> = HashMap::new();
        for fd in fds.flatten() {
            // Only DRM device files carry DRM fdinfo keys; checking the link first avoids a read
            // per socket and pipe.
            let is_drm = fs::read_link(fd.path()).is_ok_and(|t| t.starts_with("/dev/dri"));
            if !is_drm {
                continue;
            }
            let Some(info) = read_small(&dir.join("fdinfo").join(fd.file_name())) else {
                continue;
            };
            let kv: HashMap<&str, &str> = info
                .lines()
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim(), v.trim()))
                .collect();
            if kv.get("drm-driver") != Some(&"amdgpu") {
                continue;
            }
            let (Some(slot), Some(id)) = (kv.get("drm-pdev"), kv.get("drm-client-id")) else {
                continue;
            };
            if !clients.insert((slot.to_string(), id.to_string())) {
                continue;
            }
            let vram = kv
                .get("drm-memory-vram")
                .and_then(|v| fdinfo_bytes(v))
                .unwrap_or(0);
            let gtt = kv
                .get("drm-memory-gtt")
                .and_then(|v| fdinfo_bytes(v))
                .unwrap_or(0);
            let acc = per_slot.entry(slot.to_string()).or_default();
            acc.0 = acc.0.saturating_add(vram);
            acc.1 = acc.1.saturating_add(gtt);
        }
        if per_slot.is_empty() {
            continue;
        }
        let name = read_small(&dir.join("comm"))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        for (slot, (vram, gtt)) in per_slot {
            out.entry(slot).or_default().push(ProcessSample {
                pid,
                name: name.clone(),
                used: Some(vram),
                shared: Some(gtt),
                kind: ProcessKind::Graphics,
            });
        }
    }
    for list in out.values_mut() {
        list.sort_by_key(|p| p.pid);
    }
    out
}

#[cfg(all(test, unix))]
#[path = "../../tests/common/fake_amd.rs"]
mod fake_amd;

#[cfg(all(test, unix))] // the fake tree uses Unix symlinks
mod tests {
    use super::*;

    use fake_amd::{FakeCard, write};

    /// A fake `/sys/class/drm` with one AMD card, one Intel card, and a connector entry.
    fn fake_tree(root: &Path) {
        let dev = FakeCard {
            card: 1,
            pci_id: "1002:744C",
            slot: "0000:03:00.0",
            vram_total: 25_753_026_560,
            vram_used: 4 << 30,
        }
        .write(&root.join("drm"));
        write(&dev.join("mem_info_gtt_total"), "33554432000\n");
        write(&dev.join("mem_info_gtt_used"), "104857600\n");
        write(&dev.join("gpu_busy_percent"), "87\n");
        write(&dev.join("mem_busy_percent"), "31\n");
        write(&dev.join("pp_dpm_sclk"), "0: 500Mhz\n1: 2482Mhz *\n");
        write(&dev.join("pp_dpm_mclk"), "0: 96Mhz *\n1: 1249Mhz\n");
        write(&dev.join("hwmon/hwmon4/temp1_input"), "61000\n");
        write(&dev.join("hwmon/hwmon4/power1_average"), "212000000\n");
        write(&dev.join("hwmon/hwmon4/power1_cap"), "355000000\n");
        let intel = root.join("drm/card0/device");
        write(&intel.join("vendor"), "0x8086\n");
        write(&intel.join("mem_info_vram_total"), "1\n");
        write(&root.join("drm/card1-DP-1/status"), "connected\n");
        // Two processes; pid 200 has the same client on two fds, pid 300 shares pid 200's client
        // (a fork) and has one of its own.
        let fdinfo = |slot: &str, id: u32, vram: &str| {
            format!(
                "pos:\t0\ndrm-driver:\tamdgpu\ndrm-pdev:\t{slot}\ndrm-client-id:\t{id}\ndrm-memory-vram:\t{vram}\ndrm-memory-gtt:\t2048 KiB\n"
            )
        };
        for (pid, fds) in [
            (
                200u32,
                vec![(5u32, 10u32, "1048576 KiB"), (6, 10, "1048576 KiB")],
            ),
            (300, vec![(4, 10, "1 KiB"), (7, 11, "512 MiB")]),
        ] {
            let p = root.join(format!("proc/{pid}"));
            write(
                &p.join("comm"),
                if pid == 200 { "blender\n" } else { "ollama\n" },
            );
            fs::create_dir_all(p.join("fd")).unwrap();
            for (fd, id, vram) in fds {
                std::os::unix::fs::symlink("/dev/dri/renderD128", p.join(format!("fd/{fd}")))
                    .unwrap();
                write(
                    &p.join(format!("fdinfo/{fd}")),
                    &fdinfo("0000:03:00.0", id, vram),
                );
            }
            std::os::unix::fs::symlink("socket:[1234]", p.join("fd/0")).unwrap();
            write(
                &p.join("fdinfo/0"),
                "drm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\ndrm-client-id:\t99\ndrm-memory-vram:\t9 GiB\n",
            );
        }
        write(&root.join("proc/self-not-a-pid/comm"), "x");
    }

    #[test]
    fn reads_a_fake_sysfs_tree() {
        let tmp = tempfile::tempdir().unwrap();
        fake_tree(tmp.path());
        let mut src = AmdSource::new(&tmp.path().join("drm"), &tmp.path().join("proc"));
        assert_eq!(
            src.gpu_count(),
            1,
            "the Intel card and the connector are skipped"
        );
        let s = src.sample();
        assert_eq!((s.source, &s.state), (SourceKind::Amd, &SourceState::Ok));
        let g = &s.gpus[0];
        assert_eq!(g.name, "AMD GPU 1002:744C");
        assert_eq!(g.uuid.as_deref(), Some("0000:03:00.0"));
        assert_eq!(g.memory.unwrap().total, 25_753_026_560);
        assert_eq!(g.memory.unwrap().used, 4 << 30);
        assert_eq!(
            g.shared,
            Some(SharedMemory {
                used: 100 << 20,
                total: Some(33_554_432_000)
            })
        );
        assert_eq!((g.util_gpu_pct, g.util_mem_pct), (Some(87), Some(31)));
        assert_eq!(
            (g.clock_graphics_mhz, g.clock_mem_mhz),
            (Some(2482), Some(96))
        );
        assert_eq!(g.temp_c, Some(61));
        assert_eq!((g.power_w, g.power_limit_w), (Some(212.0), Some(355.0)));
        assert_eq!(g.pcie_rx_kbps, None, "not read on AMD: absent, not zero");
        let procs = g.processes.as_ref().unwrap();
        let by_pid = |pid| procs.iter().find(|p| p.pid == pid).unwrap();
        assert_eq!(procs.len(), 2);
        // Client 10 counted once (for pid 200), the socket fd with a bogus fdinfo ignored.
        assert_eq!(by_pid(200).used, Some(1 << 30));
        assert_eq!(by_pid(200).name.as_deref(), Some("blender"));
        assert_eq!(by_pid(300).used, Some(512 << 20));
        assert_eq!(by_pid(300).shared, Some(2048 * 1024));
    }

    #[test]
    fn a_card_whose_files_vanish_is_lost_and_comes_back() {
        let tmp = tempfile::tempdir().unwrap();
        fake_tree(tmp.path());
        let mut src = AmdSource::new(&tmp.path().join("drm"), &tmp.path().join("proc"));
        let used = tmp.path().join("drm/card1/device/mem_info_vram_used");
        fs::remove_file(&used).unwrap();
        let s = src.sample();
        assert_eq!(s.gpus[0].status, GpuStatus::Lost);
        assert!(matches!(s.state, SourceState::GpuLost(_)));
        write(&used, "garbage\n");
        assert_eq!(
            src.sample().gpus[0].status,
            GpuStatus::Lost,
            "unparsable counts as unreadable"
        );
        write(&used, "1024\n");
        let s = src.sample();
        assert_eq!(
            (s.gpus[0].status.clone(), s.state),
            (GpuStatus::Ok, SourceState::Ok)
        );
    }

    #[test]
    fn parsers_reject_junk() {
        assert_eq!(active_level_mhz("0: 500Mhz\n1: 800Mhz\n"), None);
        assert_eq!(active_level_mhz("0: 500Mhz *\n"), Some(500));
        assert_eq!(fdinfo_bytes("12 KiB"), Some(12 * 1024));
        assert_eq!(fdinfo_bytes("12"), Some(12));
        assert_eq!(fdinfo_bytes("12 parsecs"), None);
        assert_eq!(fdinfo_bytes("99999999999999999999 GiB"), None);
        assert_eq!(
            AmdSource::new(Path::new("/nonexistent"), Path::new("/nonexistent")).gpu_count(),
            0
        );
    }
}
