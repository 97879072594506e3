//! Byte units. GPU vendors sell "GB" that are really GiB for VRAM (a "24 GB" RTX 4090 has
//! 24 GiB = 25 769 803 776 bytes), and every tool we compare against (torch, nvidia-smi,
//! llama.cpp) prints binary units, so the whole app speaks GiB/MiB.

pub const KIB: f64 = 1024.0;
pub const MIB: f64 = 1024.0 * 1024.0;
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Bytes as a GiB figure.
pub fn gib(bytes: u64) -> f64 {
    bytes as f64 / GIB
}

/// A GiB figure as bytes, saturating at zero and `u64::MAX`.
pub fn gib_to_bytes(gib: f64) -> u64 {
    if gib.is_nan() || gib <= 0.0 {
        0
    } else {
        (gib * GIB).round().min(u64::MAX as f64) as u64
    }
}

/// Human-readable size with a binary unit: `512 MiB`, `13.4 GiB`.
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= GIB {
        format!("{:.2} GiB", b / GIB)
    } else if b >= MIB {
        format!("{:.0} MiB", b / MIB)
    } else if b >= KIB {
        format!("{:.0} KiB", b / KIB)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_units() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(3 * 1024 * 1024), "3 MiB");
        assert_eq!(human(24 * 1024 * 1024 * 1024), "24.00 GiB");
    }

    #[test]
    fn gib_round_trip_and_saturation() {
        assert_eq!(gib_to_bytes(24.0), 25_769_803_776);
        assert_eq!(gib_to_bytes(-1.0), 0);
        assert_eq!(gib_to_bytes(f64::NAN), 0);
        assert!((gib(gib_to_bytes(1.5)) - 1.5).abs() < 1e-12);
    }
}
