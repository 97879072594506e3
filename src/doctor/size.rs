//! Sizes as error messages print them: `22.78 GiB`, `0 bytes`, `1900,00 MiB`, `8.89 GB`.
//!
//! PyTorch's `format_size` (pytorch/pytorch c10, quoted in `../shared/research/oom_messages.txt`
//! [P0b]) prints two decimals in binary units; old MPS builds print `KB/MB/GB` from the same
//! 1024-based helper, and llama.cpp prints `MiB` with the locale's decimal comma. A value of
//! `17179869184.00 GiB` (= 2^64 bytes) is PyTorch's sentinel for "unknown / unlimited" (NVML not
//! available, no memory-fraction cap), so anything that does not fit in 63 bits reads as unknown.

use serde::{Deserialize, Serialize};

/// A size read from a message: a byte count, or the "unknown / unlimited" sentinel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Size {
    Bytes(u64),
    Unknown,
}

impl Size {
    pub fn bytes(self) -> Option<u64> {
        match self {
            Size::Bytes(b) => Some(b),
            Size::Unknown => None,
        }
    }
}

/// Longest digit run we accept; real messages have at most ~15 digits (`17179869184.00`).
const MAX_NUMBER_CHARS: usize = 24;

/// Reads `<number> <unit>` at the start of `s` (leading spaces allowed) and returns the size and
/// the rest of the text. Units are binary whatever their spelling (see module comment).
pub fn leading(s: &str) -> Option<(Size, &str)> {
    let s = s.trim_start();
    let (value, rest) = leading_number(s)?;
    let rest = rest.trim_start();
    let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
    let factor = unit_factor(&rest[..unit_len])?;
    Some((to_size(value * factor), &rest[unit_len..]))
}

/// Reads the last `<number> <unit>` at the end of `s` (trailing spaces allowed).
pub fn trailing(s: &str) -> Option<Size> {
    let s = s.trim_end();
    let unit_start = s.len() - s.bytes().rev().take_while(u8::is_ascii_alphabetic).count();
    let head = s[..unit_start].trim_end();
    let num_start = head.len()
        - head
            .bytes()
            .rev()
            .take_while(|b| b.is_ascii_digit() || *b == b'.' || *b == b',')
            .count();
    let (value, rest) = leading_number(&head[num_start..])?;
    if !rest.is_empty() {
        return None;
    }
    Some(to_size(value * unit_factor(&s[unit_start..])?))
}

/// A plain decimal number (`1900,00` and `1900.00` both read as 1900.0) and the rest of `s`.
pub fn leading_number(s: &str) -> Option<(f64, &str)> {
    let len = s
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b'.' || *b == b',')
        .count();
    if len == 0 || len > MAX_NUMBER_CHARS || !s.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    let value: f64 = s[..len]
        .trim_end_matches(['.', ','])
        .replace(',', ".")
        .parse()
        .ok()?;
    Some((value, &s[len..]))
}

/// Units in any case: logs and pastes are lowercased or re-typed (`mib`, `Mb`), and every tool
/// quoted here means 1024-based units whatever it writes.
fn unit_factor(unit: &str) -> Option<f64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "bytes" | "byte" | "b" => 1.0,
        "kib" | "kb" => 1024.0,
        "mib" | "mb" => 1024.0 * 1024.0,
        "gib" | "gb" => 1024.0 * 1024.0 * 1024.0,
        "tib" | "tb" => 1024.0_f64.powi(4),
        _ => return None,
    })
}

fn to_size(bytes: f64) -> Size {
    // 2^63: at and above this the message printed PyTorch's 2^64 sentinel (or nonsense).
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !(0.0..LIMIT).contains(&bytes) {
        Size::Unknown
    } else {
        Size::Bytes(bytes.round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{GIB, MIB};

    #[test]
    fn reads_binary_units_and_rest() {
        let (s, rest) = leading(" 22.78 GiB. GPU 0").unwrap();
        assert_eq!(s, Size::Bytes((22.78 * GIB).round() as u64));
        assert_eq!(rest, ". GPU 0");
        assert_eq!(leading("0 bytes is free").unwrap().0, Size::Bytes(0));
        assert_eq!(leading("2.5 gib").unwrap().0, leading("2.5 GiB").unwrap().0);
        assert_eq!(
            leading("8.89 GB,").unwrap().0,
            Size::Bytes((8.89 * GIB).round() as u64)
        );
    }

    #[test]
    fn decimal_comma_and_trailing() {
        assert_eq!(
            leading("1900,00 MiB of").unwrap().0,
            Size::Bytes((1900.0 * MIB) as u64)
        );
        assert_eq!(
            trailing("is free. 1.05 GiB ").unwrap(),
            Size::Bytes((1.05 * GIB).round() as u64)
        );
        assert_eq!(trailing("allowed"), None);
    }

    #[test]
    fn sentinel_is_unknown() {
        assert_eq!(
            leading("17179869184.00 GiB memory").unwrap().0,
            Size::Unknown
        );
        assert_eq!(
            leading("16.00 GiB").unwrap().0.bytes(),
            Some(16 * GIB as u64)
        );
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(leading("GiB"), None);
        assert_eq!(leading("12 parsecs"), None);
        assert_eq!(leading("12 mbit"), None);
        assert_eq!(leading(".5 GiB"), None);
        assert_eq!(leading(&"9".repeat(100)), None);
    }
}
