//! Recorded Windows GPU counters: the CSV that `typeperf` writes (and PowerShell's
//! `Get-Counter … | Export-Counter -FileFormat CSV`), PDH's "PDH-CSV 4.0" log format. A
//! recording made on a Windows machine replays through the same grouping and merging as the
//! live counters (`pdh.rs`), on any OS.
//!
//! Recording one (Windows, a console; `-si 1` one sample a second, `-sc 60` for a minute):
//!
//! ```text
//! typeperf "\GPU Adapter Memory(*)\Dedicated Usage" "\GPU Adapter Memory(*)\Shared Usage" ^
//!   "\GPU Process Memory(*)\Dedicated Usage" "\GPU Process Memory(*)\Shared Usage" ^
//!   "\Process(*)\ID Process" -si 1 -sc 60 -f CSV -o gpu-counters.csv
//! ```
//!
//! The format (typeperf's documentation on learn.microsoft.com; PDH log files): the first row
//! names the columns, every later row is one sample; every field is in double quotes.
//!   - Column 1's name is `(PDH-CSV 4.0) (<time zone name>)(<bias>)`, the bias in minutes with
//!     UTC = local time + bias (`TIME_ZONE_INFORMATION.Bias`); its values are the local time of
//!     the sample, `MM/DD/YYYY HH:MM:SS.mmm`. What typeperf prints on the console (and so a
//!     `typeperf … > file.csv`) names it `(PDH-CSV 4.0)` alone: the zone is then unknown, the
//!     times are read as UTC and [`Recording::time_zone_known`] says so.
//!   - The console output also has typeperf's closing messages after the last row, in the
//!     system's language ("Exiting, please wait...", "The command completed successfully.";
//!     "Vorgang wird beendet..." on a German Windows): unquoted lines after the data are those
//!     and are skipped; an unquoted line with a sample row after it refuses the file.
//!   - Every other column is one counter instance, `\\MACHINE\Object(Instance)\Counter`; its
//!     values are numbers, or a blank (`" "`) when the instance had no value in that sample (a
//!     process that had exited). typeperf expands `(*)` once, at its start: processes started
//!     later are not in the file.
//!   - `\Process(<image name>)\ID Process` gives each process's PID, which is how the names of
//!     the processes holding GPU memory are known; duplicates are `name#1`, `name#2`.
//!
//! Columns of other counters are ignored and counted; a field that is neither a number nor a
//! blank, a time that cannot be read, or a row of the wrong width refuses the file, naming the
//! line.

use super::format::split_csv;
use super::pdh::Counters;

/// At most this many bytes are read (an hour of 1 s samples of a few hundred instances is ~30 MB).
pub const MAX_BYTES: u64 = 256 << 20;

/// A parsed recording: samples oldest first, each with its UTC time in ms since 1970.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    pub samples: Vec<(u64, Counters)>,
    /// Columns of counters other than the five this program reads.
    pub ignored_columns: usize,
    /// The header named the time zone; `false` for typeperf's console output, whose local
    /// times are then read as UTC.
    pub time_zone_known: bool,
}

/// Which list of [`Counters`] a column feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    AdapterDedicated,
    AdapterShared,
    ProcessDedicated,
    ProcessShared,
    ProcessId,
    Other,
}

/// `\\MACHINE\Object(Instance)\Counter` (or without the machine) → (object, instance, counter).
fn split_path(path: &str) -> Option<(&str, &str, &str)> {
    let rest = match path.strip_prefix("\\\\") {
        Some(r) => r.split_once('\\')?.1,
        None => path.strip_prefix('\\')?,
    };
    let (object_instance, counter) = rest.rsplit_once('\\')?;
    let (object, instance) = object_instance.split_once('(')?;
    Some((object, instance.strip_suffix(')')?, counter))
}

fn column(path: &str) -> (Column, String) {
    let Some((object, instance, counter)) = split_path(path) else {
        return (Column::Other, String::new());
    };
    let kind = match (
        object.to_ascii_lowercase().as_str(),
        counter.to_ascii_lowercase().as_str(),
    ) {
        ("gpu adapter memory", "dedicated usage") => Column::AdapterDedicated,
        ("gpu adapter memory", "shared usage") => Column::AdapterShared,
        ("gpu process memory", "dedicated usage") => Column::ProcessDedicated,
        ("gpu process memory", "shared usage") => Column::ProcessShared,
        ("process", "id process") => Column::ProcessId,
        _ => Column::Other,
    };
    (kind, instance.to_owned())
}

/// The bias in minutes from `(PDH-CSV 4.0) (Zone name)(bias)`; `Some(None)` for the console's
/// `(PDH-CSV 4.0)` without a zone; `None` when the column is not a PDH-CSV time column.
fn bias_minutes(first: &str) -> Option<Option<i64>> {
    let rest = first.trim().strip_prefix("(PDH-CSV 4.0)")?.trim();
    if rest.is_empty() {
        return Some(None);
    }
    let open = rest.rfind('(')?;
    rest[open + 1..]
        .strip_suffix(')')?
        .trim()
        .parse()
        .ok()
        .map(Some)
}

/// Days from 1970-01-01 to a civil date (proleptic Gregorian; H. Hinnant's `days_from_civil`,
/// "chrono-Compatible Low-Level Date Algorithms").
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `MM/DD/YYYY HH:MM:SS.mmm` local time with the zone's bias → UTC ms since 1970.
fn time_ms(s: &str, bias: i64) -> Option<u64> {
    let (date, clock) = s.trim().split_once(' ')?;
    let d: Vec<i64> = date
        .split('/')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let (hms, frac) = clock.split_once('.').unwrap_or((clock, "0"));
    let t: Vec<i64> = hms
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let (&[mon, day, year], &[h, min, sec]) = (d.as_slice(), t.as_slice()) else {
        return None;
    };
    let valid = (1..=12).contains(&mon)
        && (1..=31).contains(&day)
        && (1601..=9999).contains(&year)
        && (0..24).contains(&h)
        && (0..60).contains(&min)
        && (0..=60).contains(&sec)
        && !frac.is_empty()
        && frac.len() <= 9
        && frac.bytes().all(|b| b.is_ascii_digit());
    if !valid {
        return None;
    }
    let ms: i64 = format!("{frac:0<3}")[..3].parse().ok()?;
    let local = (days_from_civil(year, mon, day) * 86_400 + h * 3600 + min * 60 + sec) * 1000 + ms;
    u64::try_from(local + bias * 60_000).ok()
}

/// Reads a typeperf CSV (see the module doc). `Err` names the line and what is wrong.
pub fn parse(text: &str) -> Result<Recording, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err("empty file: no typeperf header".into());
    };
    let names = split_csv(header.trim_start_matches('\u{feff}'));
    let bias = bias_minutes(&names[0]).ok_or_else(|| {
        format!(
            "line 1: not a typeperf CSV: its first column is {:?}, not \"(PDH-CSV 4.0) (time zone)(bias)\"",
            names[0].chars().take(60).collect::<String>()
        )
    })?;
    let time_zone_known = bias.is_some();
    let bias = bias.unwrap_or(0);
    let columns: Vec<(Column, String)> = names[1..].iter().map(|n| column(n)).collect();
    let processes_missing = !columns.iter().any(|(c, _)| *c == Column::ProcessDedicated);
    let ignored_columns = columns.iter().filter(|(c, _)| *c == Column::Other).count();
    if ignored_columns == columns.len() {
        return Err(
            "line 1: none of the columns is a GPU Adapter Memory, GPU Process Memory or Process ID counter"
                .into(),
        );
    }
    let mut samples = Vec::new();
    // typeperf's closing messages: the unquoted lines after the data.
    let mut messages: Option<usize> = None;
    for (i, line) in lines {
        if !line.trim_start().starts_with('"') {
            *messages.get_or_insert(0) += 1;
            continue;
        }
        if let Some(n) = messages {
            return Err(format!(
                "line {}: a sample after {n} line(s) that are not quoted CSV (typeperf quotes every field)",
                i + 1
            ));
        }
        let row = split_csv(line);
        if row.len() != names.len() {
            return Err(format!(
                "line {}: {} fields where the header has {}",
                i + 1,
                row.len(),
                names.len()
            ));
        }
        let time = time_ms(&row[0], bias).ok_or_else(|| {
            format!(
                "line {}: {:?} is not a time like 12/02/2026 04:50:00.123",
                i + 1,
                row[0]
            )
        })?;
        let mut c = Counters {
            processes_missing,
            ..Counters::default()
        };
        for ((kind, instance), value) in columns.iter().zip(&row[1..]) {
            let value = value.trim();
            if *kind == Column::Other || value.is_empty() {
                continue;
            }
            let v: f64 = value
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| {
                    format!(
                        "line {}: {value:?} for {instance} is not a counter value",
                        i + 1
                    )
                })?;
            let entry = (instance.clone(), v.round() as u64);
            match kind {
                Column::AdapterDedicated => c.adapter_dedicated.push(entry),
                Column::AdapterShared => c.adapter_shared.push(entry),
                Column::ProcessDedicated => c.process_dedicated.push(entry),
                Column::ProcessShared => c.process_shared.push(entry),
                Column::ProcessId => c.process_ids.push(entry),
                Column::Other => {}
            }
        }
        samples.push((time, c));
    }
    if samples.is_empty() {
        return Err("no samples after the header".into());
    }
    Ok(Recording {
        samples,
        ignored_columns,
        time_zone_known,
    })
}

/// Reads a recording from a file (at most [`MAX_BYTES`], UTF-8 or UTF-16 with a BOM).
pub fn read(path: &std::path::Path) -> Result<Recording, String> {
    let bytes = crate::input_file::read_capped(path, MAX_BYTES, "a counter recording")?;
    parse(&crate::input_file::decode_text(&bytes)).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_local_plus_bias() {
        // 1970-01-02 00:00:00 UTC is 86 400 000 ms.
        assert_eq!(time_ms("01/02/1970 00:00:00.000", 0), Some(86_400_000));
        // Pacific Standard Time: bias 480, local 16:00 the day before.
        assert_eq!(time_ms("01/01/1970 16:00:00.000", 480), Some(86_400_000));
        assert_eq!(
            time_ms("12/02/2026 04:50:00.5", 0).map(|t| t % 1000),
            Some(500)
        );
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        for bad in [
            "",
            "2026-12-02 04:50:00",
            "13/01/2026 00:00:00.000",
            "12/02/2026 25:00:00.0",
        ] {
            assert_eq!(time_ms(bad, 0), None, "{bad:?}");
        }
    }

    #[test]
    fn paths_and_quoted_fields() {
        assert_eq!(
            split_path(r"\\DESKTOP-1\GPU Process Memory(pid_4_luid_0x0_0x1_phys_0)\Shared Usage"),
            Some((
                "GPU Process Memory",
                "pid_4_luid_0x0_0x1_phys_0",
                "Shared Usage"
            ))
        );
        assert_eq!(
            split_path(r"\Process(a (b))\ID Process"),
            Some(("Process", "a (b)", "ID Process"))
        );
        assert_eq!(split_csv(r#""a,b","c""d"," ""#), vec!["a,b", "c\"d", " "]);
        assert_eq!(
            bias_minutes("(PDH-CSV 4.0) (W. Europe Standard Time)(-60)"),
            Some(Some(-60))
        );
        assert_eq!(bias_minutes("(PDH-CSV 4.0)"), Some(None));
        assert_eq!(bias_minutes("(PDH-CSV 4.0) (Zone)(x)"), None);
        assert_eq!(bias_minutes("Time"), None);
    }

    #[test]
    fn refusals_name_the_line() {
        let head = r#""(PDH-CSV 4.0) (Coordinated Universal Time)(0)","\\H\GPU Adapter Memory(luid_0x0_0x1_phys_0)\Dedicated Usage""#;
        for (body, want) in [
            ("", "no samples"),
            (
                "\"12/02/2026 04:50:00.000\",\"12\",\"3\"",
                "line 2: 3 fields",
            ),
            ("\"12/02/2026 04:50:00.000\",\"lots\"", "line 2: \"lots\""),
            ("\"yesterday\",\"1\"", "line 2: \"yesterday\""),
            (
                "\"12/02/2026 04:50:00.000\",\"12\"\nExiting, please wait...\n\"12/02/2026 04:50:01.000\",\"12\"",
                "line 4: a sample after 1 line(s)",
            ),
        ] {
            let e = parse(&format!("{head}\n{body}\n")).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
        assert!(
            parse("\"Time\",\"x\"\n")
                .unwrap_err()
                .contains("not a typeperf CSV")
        );
        assert!(parse("").unwrap_err().contains("empty"));
    }
}
