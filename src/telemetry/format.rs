//! The two recording formats. JSON Lines: one [`Snapshot`] per line, lossless. CSV: one row per
//! GPU per snapshot for spreadsheets, with the processes packed into one column
//! (`pid:kind:used:shared:name;...`, `-` = not available); a snapshot without GPUs (no driver)
//! is one row with empty GPU columns, so the state is kept. Both replay.

use super::sample::{
    GpuSample, GpuStatus, MemorySample, ProcessKind, ProcessSample, SharedMemory, Snapshot,
    SourceKind, SourceState, ThrottleReason,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Csv,
}

impl Format {
    /// `.csv` is CSV; anything else is JSON Lines.
    pub fn from_path(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("csv") => Format::Csv,
            _ => Format::Jsonl,
        }
    }
}

pub const CSV_HEADER: &str = "time_ms,source,state,gpu_index,uuid,name,status,mem_total,mem_used,mem_reserved,\
used_includes_reserved,shared_used,shared_total,util_gpu_pct,util_mem_pct,temp_c,power_w,power_limit_w,\
clock_graphics_mhz,clock_mem_mhz,pcie_rx_kbps,pcie_tx_kbps,throttle,processes";

/// A serde unit-like enum as its snake_case name (`"no_driver"`).
fn name_of<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

fn from_name<T: DeserializeOwned>(s: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).ok()
}

fn state_str(s: &SourceState) -> String {
    match serde_json::to_value(s) {
        Ok(v) => {
            let tag = v.get("state").and_then(|t| t.as_str()).unwrap_or("error");
            match v.get("detail").and_then(|d| d.as_str()) {
                Some(d) => format!("{tag}: {d}"),
                None => tag.to_string(),
            }
        }
        Err(_) => "error".into(),
    }
}

fn parse_state(s: &str) -> Option<SourceState> {
    let v = match s.split_once(": ") {
        Some((tag, detail)) => serde_json::json!({ "state": tag, "detail": detail }),
        None => serde_json::json!({ "state": s }),
    };
    serde_json::from_value(v).ok()
}

/// One CSV field, quoted when it has to be (RFC 4180); line breaks become spaces so a row is
/// always one line.
fn field(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ");
    if s.contains([',', '"']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn dash<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// Rows for one snapshot, each ending in a newline.
pub fn csv_rows(s: &Snapshot) -> String {
    let head = format!(
        "{},{},{}",
        s.time_ms,
        name_of(&s.source),
        field(&state_str(&s.state))
    );
    if s.gpus.is_empty() {
        return format!(
            "{head}{}\n",
            ",".repeat(CSV_HEADER.matches(',').count() - 2)
        );
    }
    let mut out = String::new();
    for g in &s.gpus {
        let m = g.memory;
        let throttle = g
            .throttle
            .as_ref()
            .map(|t| t.iter().map(name_of).collect::<Vec<_>>().join("|"));
        // An empty column is "not read"; an empty list is written as "none".
        let none_if_empty = |s: String| if s.is_empty() { "none".to_string() } else { s };
        let procs = g.processes.as_ref().map(|ps| {
            ps.iter()
                .map(|p| {
                    let name = p.name.as_deref().unwrap_or("").replace(';', ",");
                    format!(
                        "{}:{}:{}:{}:{}",
                        p.pid,
                        name_of(&p.kind),
                        dash(p.used),
                        dash(p.shared),
                        name
                    )
                })
                .collect::<Vec<_>>()
                .join(";")
        });
        let cols = [
            g.index.to_string(),
            field(g.uuid.as_deref().unwrap_or("")),
            field(&g.name),
            name_of(&g.status),
            opt(m.map(|m| m.total)),
            opt(m.map(|m| m.used)),
            opt(m.and_then(|m| m.reserved)),
            opt(m.map(|m| m.used_includes_reserved)),
            opt(g.shared.map(|s| s.used)),
            opt(g.shared.and_then(|s| s.total)),
            opt(g.util_gpu_pct),
            opt(g.util_mem_pct),
            opt(g.temp_c),
            opt(g.power_w),
            opt(g.power_limit_w),
            opt(g.clock_graphics_mhz),
            opt(g.clock_mem_mhz),
            opt(g.pcie_rx_kbps),
            opt(g.pcie_tx_kbps),
            field(&throttle.map(none_if_empty).unwrap_or_default()),
            field(&procs.map(none_if_empty).unwrap_or_default()),
        ];
        out.push_str(&head);
        for c in cols {
            out.push(',');
            out.push_str(&c);
        }
        out.push('\n');
    }
    out
}

/// Splits one CSV line (RFC 4180 quoting, no embedded line breaks).
pub fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// One parsed CSV row: the snapshot-level columns and the GPU, if the row has one.
pub struct CsvRow {
    pub time_ms: u64,
    pub source: SourceKind,
    pub state: SourceState,
    pub gpu: Option<GpuSample>,
}

fn num<T: std::str::FromStr>(s: &str) -> Result<Option<T>, String> {
    if s.is_empty() {
        Ok(None)
    } else {
        s.parse()
            .map(Some)
            .map_err(|_| format!("not a number: {s:?}"))
    }
}

fn parse_process(s: &str) -> Result<ProcessSample, String> {
    let mut it = s.splitn(5, ':');
    let mut next = || {
        it.next()
            .ok_or_else(|| format!("process entry {s:?} has too few parts"))
    };
    let pid = next()?.parse().map_err(|_| format!("bad pid in {s:?}"))?;
    let kind: ProcessKind =
        from_name(next()?).ok_or_else(|| format!("bad process kind in {s:?}"))?;
    let bytes = |v: &str| if v == "-" { Ok(None) } else { num::<u64>(v) };
    let used = bytes(next()?)?;
    let shared = bytes(next()?)?;
    let name = next()?;
    Ok(ProcessSample {
        pid,
        name: (!name.is_empty()).then(|| name.to_string()),
        used,
        shared,
        kind,
    })
}

/// Parses one data row written by [`csv_rows`].
pub fn parse_csv_row(line: &str) -> Result<CsvRow, String> {
    let f = split_csv(line);
    let want = CSV_HEADER.split(',').count();
    if f.len() != want {
        return Err(format!("{} columns, expected {want}", f.len()));
    }
    let time_ms = f[0].parse().map_err(|_| format!("bad time {:?}", f[0]))?;
    let source = from_name(&f[1]).ok_or_else(|| format!("unknown source {:?}", f[1]))?;
    let state = parse_state(&f[2]).ok_or_else(|| format!("unknown state {:?}", f[2]))?;
    if f[3].is_empty() {
        return Ok(CsvRow {
            time_ms,
            source,
            state,
            gpu: None,
        });
    }
    let memory = match (num::<u64>(&f[7])?, num::<u64>(&f[8])?) {
        (Some(total), Some(used)) => Some(MemorySample {
            total,
            used,
            reserved: num(&f[9])?,
            used_includes_reserved: f[10] == "true",
        }),
        _ => None,
    };
    let throttle = if f[22].is_empty() {
        None
    } else if f[22] == "none" {
        Some(vec![])
    } else {
        Some(
            f[22]
                .split('|')
                .map(|t| from_name(t).ok_or_else(|| format!("unknown throttle reason {t:?}")))
                .collect::<Result<Vec<ThrottleReason>, _>>()?,
        )
    };
    let processes = match f[23].as_str() {
        "" => None,
        "none" => Some(vec![]),
        p => Some(
            p.split(';')
                .map(parse_process)
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let gpu = GpuSample {
        index: f[3]
            .parse()
            .map_err(|_| format!("bad GPU index {:?}", f[3]))?,
        uuid: (!f[4].is_empty()).then(|| f[4].clone()),
        name: f[5].clone(),
        host: None,
        source: None,
        status: from_name::<GpuStatus>(&f[6])
            .ok_or_else(|| format!("unknown status {:?}", f[6]))?,
        memory,
        shared: num::<u64>(&f[11])?.map(|used| SharedMemory { used, total: None }),
        util_gpu_pct: num(&f[13])?,
        util_mem_pct: num(&f[14])?,
        temp_c: num(&f[15])?,
        power_w: num(&f[16])?,
        power_limit_w: num(&f[17])?,
        clock_graphics_mhz: num(&f[18])?,
        clock_mem_mhz: num(&f[19])?,
        pcie_rx_kbps: num(&f[20])?,
        pcie_tx_kbps: num(&f[21])?,
        throttle,
        processes,
    };
    let shared_total = num::<u64>(&f[12])?;
    let gpu = GpuSample {
        shared: gpu.shared.map(|s| SharedMemory {
            total: shared_total,
            ..s
        }),
        ..gpu
    };
    Ok(CsvRow {
        time_ms,
        source,
        state,
        gpu: Some(gpu),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn rich() -> Snapshot {
        Snapshot {
            time_ms: 1_700_000_000_123,
            source: SourceKind::Nvml,
            state: SourceState::Ok,
            gpus: vec![
                GpuSample {
                    index: 0,
                    uuid: Some("GPU-1".into()),
                    name: "RTX \"4090\", the big one".into(),
                    memory: Some(MemorySample {
                        total: 100,
                        used: 50,
                        reserved: Some(3),
                        used_includes_reserved: false,
                    }),
                    shared: Some(SharedMemory {
                        used: 7,
                        total: Some(9),
                    }),
                    util_gpu_pct: Some(99),
                    power_w: Some(123.5),
                    pcie_rx_kbps: Some(0),
                    throttle: Some(vec![ThrottleReason::SwPowerCap, ThrottleReason::HwThermal]),
                    processes: Some(vec![
                        ProcessSample {
                            pid: 5,
                            name: Some("py:thon; x".into()),
                            used: None,
                            shared: Some(1),
                            kind: ProcessKind::Both,
                        },
                        ProcessSample {
                            pid: 6,
                            name: None,
                            used: Some(0),
                            shared: None,
                            kind: ProcessKind::Graphics,
                        },
                    ]),
                    ..Default::default()
                },
                GpuSample {
                    index: 1,
                    name: "lost".into(),
                    status: GpuStatus::Lost,
                    processes: Some(vec![]),
                    ..Default::default()
                },
            ],
            notes: Vec::new(),
        }
    }

    #[test]
    fn csv_round_trip_keeps_absent_apart_from_zero() {
        let s = rich();
        let text = csv_rows(&s);
        assert_eq!(text.lines().count(), 2);
        let rows: Vec<CsvRow> = text.lines().map(|l| parse_csv_row(l).unwrap()).collect();
        let mut want = s.gpus.clone();
        // The one lossy step: ';' in a process name becomes ','.
        want[0].processes.as_mut().unwrap()[0].name = Some("py:thon, x".into());
        let got: Vec<GpuSample> = rows.into_iter().map(|r| r.gpu.unwrap()).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn csv_keeps_the_state_of_a_snapshot_without_gpus() {
        let s = Snapshot {
            time_ms: 9,
            source: SourceKind::Nvml,
            state: SourceState::NoPermission("a, \"b\"".into()),
            gpus: vec![],
            notes: Vec::new(),
        };
        assert_eq!(
            split_csv(csv_rows(&s).trim_end()).len(),
            split_csv(CSV_HEADER).len()
        );
        let row = parse_csv_row(csv_rows(&s).trim_end()).unwrap();
        assert_eq!((row.time_ms, row.state, row.gpu), (9, s.state, None));
    }

    #[test]
    fn malformed_rows_are_errors_not_panics() {
        for bad in ["", "1,2,3", &"9,".repeat(23)] {
            assert!(parse_csv_row(bad).is_err(), "{bad:?}");
        }
        let good = csv_rows(&rich()).lines().next().unwrap().to_string();
        let join = |f: &[String]| f.iter().map(|x| field(x)).collect::<Vec<_>>().join(",");
        assert!(
            parse_csv_row(&join(&split_csv(&good))).is_ok(),
            "split and re-join is lossless"
        );
        for (col, junk) in [
            (0, "x"),
            (1, "gpu"),
            (2, "melted"),
            (6, "melted"),
            (7, "12x"),
            (22, "bogus"),
            (23, "1:compute"),
        ] {
            let mut f = split_csv(&good);
            f[col] = junk.into();
            assert!(parse_csv_row(&join(&f)).is_err(), "column {col} = {junk:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_survives_a_csv_field(text in ".*", other in "[a-z,\"]*") {
            let line = format!("{},{}", field(&text), field(&other));
            let cols = split_csv(&line);
            proptest::prop_assert_eq!(cols, vec![text.replace(['\n', '\r'], " "), other]);
        }

        #[test]
        fn any_line_parses_or_errs_without_panicking(line in ".{0,300}") {
            let _ = parse_csv_row(&line);
        }
    }
}
