//! This machine's memory modules from its SMBIOS table (DMTF DSP0134, "System Management BIOS
//! Reference Specification" 3.7: §6.1 structure layout, §7.18 Type 17 Memory Device), for the
//! RAM bandwidth CPU offload runs at. Windows hands the table to any user
//! (`GetSystemFirmwareTable('RSMB')`, prefixed by its `RawSMBIOSData` header); Linux exposes the
//! same table as `/sys/firmware/dmi/tables/DMI`, readable by root only. The parser takes any
//! bytes: it reads only what lies inside the table and each structure's stated length, so a
//! truncated or hostile table gives fewer modules, never a panic.

/// One populated memory device (Type 17) as the table describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryDevice {
    pub size_bytes: u64,
    /// §7.18.2 Memory Type (0x1A DDR4, 0x22 DDR5, 0x23 LPDDR5 …).
    pub memory_type: u8,
    /// Configured speed in MT/s (the speed the memory runs at), else the module's rated
    /// speed; `None` when the table gives neither.
    pub speed_mts: Option<u32>,
    /// Data width in bits (64 for a DIMM; LPDDR devices 16 or 32); `None` when unknown.
    pub data_width_bits: Option<u16>,
    pub device_locator: String,
    pub bank_locator: String,
}

/// Structures read at most: real tables hold a few hundred.
const MAX_STRUCTURES: usize = 4096;

/// The SMBIOS table inside what `GetSystemFirmwareTable('RSMB', 0, …)` returns: an 8-byte
/// `RawSMBIOSData` header (calling method, major, minor, DMI revision, then the table's length
/// as a little-endian u32) before the table. `None` when the header does not fit.
pub fn windows_raw_table(buf: &[u8]) -> Option<&[u8]> {
    let len = u32::from_le_bytes(buf.get(4..8)?.try_into().ok()?) as usize;
    let end = 8usize.checked_add(len)?.min(buf.len());
    buf.get(8..end)
}

fn byte(s: &[u8], at: usize) -> Option<u8> {
    s.get(at).copied()
}

fn word(s: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(s.get(at..at + 2)?.try_into().ok()?))
}

fn dword(s: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(s.get(at..at + 4)?.try_into().ok()?))
}

/// The strings of a structure's string set, numbered from 1 (§6.1.3).
fn string(strings: &[&[u8]], index: Option<u8>) -> String {
    match index {
        Some(i) if i > 0 => strings
            .get(usize::from(i) - 1)
            .map(|s| String::from_utf8_lossy(s).trim().to_string())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// Size of a Type 17 device in bytes (§7.18.5): 0 = no module installed, 0xFFFF unknown,
/// 0x7FFF = see Extended Size (MiB, bits 30:0); else bit 15 says KiB (1) or MiB (0).
fn size_bytes(s: &[u8]) -> Option<u64> {
    match word(s, 0x0C)? {
        0 | 0xFFFF => None,
        0x7FFF => Some(u64::from(dword(s, 0x1C)? & 0x7FFF_FFFF) << 20),
        v if v & 0x8000 != 0 => Some(u64::from(v & 0x7FFF) << 10),
        v => Some(u64::from(v) << 20),
    }
}

/// A speed word (MT/s since SMBIOS 3.3, MHz before, the same number for DDR): 0 unknown, 0xFFFF
/// = see the extended dword at `extended`.
fn speed(s: &[u8], at: usize, extended: usize) -> Option<u32> {
    match word(s, at)? {
        0 => None,
        0xFFFF => dword(s, extended)
            .filter(|&v| v > 0)
            .map(|v| v & 0x7FFF_FFFF),
        v => Some(u32::from(v)),
    }
}

/// The populated memory devices of a raw SMBIOS table.
pub fn memory_devices(table: &[u8]) -> Vec<MemoryDevice> {
    let mut out = Vec::new();
    let mut at = 0usize;
    for _ in 0..MAX_STRUCTURES {
        let (Some(kind), Some(len)) = (byte(table, at), byte(table, at + 1)) else {
            break;
        };
        let len = usize::from(len);
        // A structure is at least its 4-byte header; anything shorter is a broken table.
        if len < 4 || at + len > table.len() {
            break;
        }
        let formatted = &table[at..at + len];
        // The string set: NUL-terminated strings ending with an empty one (two NULs in all
        // when there are none).
        let rest = &table[at + len..];
        let Some(end) = rest.windows(2).position(|w| w == [0, 0]) else {
            break;
        };
        let strings: Vec<&[u8]> = rest[..end].split(|&b| b == 0).collect();
        if kind == 17
            && let Some(size_bytes) = size_bytes(formatted)
        {
            out.push(MemoryDevice {
                size_bytes,
                memory_type: byte(formatted, 0x12).unwrap_or(0),
                speed_mts: speed(formatted, 0x20, 0x58).or_else(|| speed(formatted, 0x15, 0x54)),
                data_width_bits: word(formatted, 0x0A).filter(|&w| w > 0 && w != 0xFFFF),
                device_locator: string(&strings, byte(formatted, 0x10)),
                bank_locator: string(&strings, byte(formatted, 0x11)),
            });
        }
        if kind == 127 {
            break;
        }
        at += len + end + 2;
    }
    out
}

/// §7.18.2 names of the memory types desktops, laptops and servers use.
pub fn type_name(t: u8) -> Option<&'static str> {
    Some(match t {
        0x18 => "DDR3",
        0x1A => "DDR4",
        0x1B => "LPDDR",
        0x1C => "LPDDR2",
        0x1D => "LPDDR3",
        0x1E => "LPDDR4",
        0x22 => "DDR5",
        0x23 => "LPDDR5",
        _ => return None,
    })
}

/// The memory channel a device sits on, from its locators ("ChannelA-DIMM0", "P0 CHANNEL A",
/// "DIMM_A1", "Controller1-ChannelB"), or `None` when they do not say.
fn channel(d: &MemoryDevice) -> Option<String> {
    let text = format!("{} {}", d.bank_locator, d.device_locator).to_ascii_uppercase();
    let controller = text.find("CONTROLLER").map(|i| {
        text[i + 10..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
    });
    let socket = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| {
            w.len() >= 2
                && (w.starts_with('P') || w.starts_with("CPU"))
                && w[1..].chars().all(|c| c.is_ascii_digit())
        })
        .map(str::to_string);
    let after = |key: &str| {
        text.find(key).and_then(|i| {
            text[i + key.len()..]
                .trim_start_matches([' ', '_', '-'])
                .chars()
                .next()
                .filter(char::is_ascii_alphanumeric)
        })
    };
    let letter = after("CHANNEL").or_else(|| {
        // "DIMM_A1" / "DIMMA2": a channel letter before the slot number.
        let i = text.find("DIMM")?;
        let mut c = text[i + 4..].trim_start_matches(['_', ' ', '-']).chars();
        let (l, n) = (c.next()?, c.next()?);
        (l.is_ascii_alphabetic() && n.is_ascii_digit()).then_some(l)
    })?;
    Some(format!(
        "{}/{}/{letter}",
        controller.unwrap_or_default(),
        socket.unwrap_or_default()
    ))
}

/// What the modules give: total size, theoretical bandwidth and how it was counted.
#[derive(Debug, Clone, PartialEq)]
pub struct RamReading {
    pub ram_bytes: u64,
    pub gbps: f64,
    /// e.g. "2 x DDR4-3200, 2 channels x 64 bit (SMBIOS)".
    pub description: String,
}

/// Theoretical bandwidth of the populated modules: channels × bus width × transfer rate, at the
/// slowest module's speed (all run at it). Modules on one channel share it; where the locators
/// do not name channels, each module is taken as its own channel and the description says so.
/// `None` without a module or a speed.
pub fn ram_reading(devices: &[MemoryDevice]) -> Option<RamReading> {
    let speed = devices.iter().filter_map(|d| d.speed_mts).min()?;
    let ram_bytes = devices.iter().map(|d| d.size_bytes).sum();
    let named: Vec<Option<String>> = devices.iter().map(channel).collect();
    let by_locator = named.iter().all(Option::is_some);
    let mut widths: std::collections::BTreeMap<String, u16> = Default::default();
    for (i, (d, c)) in devices.iter().zip(&named).enumerate() {
        let key = match c {
            Some(c) if by_locator => c.clone(),
            _ => format!("#{i}"),
        };
        let w = widths.entry(key).or_insert(0);
        *w = (*w).max(d.data_width_bits.unwrap_or(64));
    }
    let bits: u64 = widths.values().map(|&w| u64::from(w)).sum();
    let gbps = bits as f64 / 8.0 * f64::from(speed) / 1000.0;
    let kind = type_name(devices[0].memory_type).unwrap_or("RAM");
    let width = widths.values().copied().max().unwrap_or(64);
    let description = format!(
        "{} x {kind}-{speed}, {} channel{} x {width} bit{} (SMBIOS)",
        devices.len(),
        widths.len(),
        if widths.len() == 1 { "" } else { "s" },
        if by_locator {
            ""
        } else {
            ", one per module: the slots do not name their channels"
        }
    );
    Some(RamReading {
        ram_bytes,
        gbps,
        description,
    })
}
