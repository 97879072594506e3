//! Every crafted hostile input of issue 23 run through the binary under a 1 GiB address-space
//! cap (`ulimit -v`), with its peak resident memory and wall time measured by GNU time: none may
//! pass 256 MiB or 2 s. A test binary of its own, so that no other test of the suite runs
//! beside it and skews the times.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;
use support::hostile::*;
use support::*;

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Peak resident memory (KiB) and wall time of one run, measured by GNU time under a 1 GiB
/// address-space cap (`ulimit -v`); `None` when GNU time is missing.
fn measured(args: &[&str], env: &[(&str, &Path)]) -> Option<(u64, f64, Output)> {
    if !Path::new("/usr/bin/time").exists() {
        return None;
    }
    let mut script = String::from("ulimit -v 1048576; exec /usr/bin/time -v \"$0\"");
    for i in 1..=args.len() {
        script.push_str(&format!(" \"${i}\""));
    }
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(args);
    c.env(
        "VRAM_DOCTOR_CONFIG_DIR",
        std::env::temp_dir().join("vram-doctor-hostile-none"),
    );
    for (k, v) in env {
        c.env(k, v);
    }
    let start = Instant::now();
    let o = run_in(&mut c, &[]);
    let secs = start.elapsed().as_secs_f64();
    let e = err(&o);
    let kib = e
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Maximum resident set size (kbytes): ")
        })
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{args:?}: no RSS in GNU time's report: {e}"));
    Some((kib, secs, o))
}

#[test]
fn no_crafted_input_passes_256_mib_or_2_seconds() {
    if !Path::new("/usr/bin/time").exists() {
        let msg =
            "GNU time (/usr/bin/time, Debian package `time`) is missing: peak memory not measured";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
        eprintln!("{msg}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut g = tiny_llama(1);
    for i in 0..1_000_000 {
        g.tensors.push(Tensor::new(&format!("e{i}"), &[0], 0));
    }
    let million = d.join("million.gguf");
    g.write_sparse(&million);
    let strings = many_strings(d);
    let st = huge_safetensors(d);
    let csv = one_time_csv(d, 50_000);
    // Twenty "shards" that are one file of 90,000 empty tensors.
    let mut shard = tiny_llama(1).kv("split.count", Val::U32(20));
    for i in 0..90_000 {
        shard.tensors.push(Tensor::new(&format!("e{i}"), &[0], 0));
    }
    let first = d.join("m-00001-of-00020.gguf");
    shard.write_sparse(&first);
    for i in 2..=20 {
        std::fs::hard_link(&first, d.join(format!("m-{i:05}-of-00020.gguf"))).unwrap();
    }
    let wrap = d.join("wrap.gguf");
    wrapping_gguf(&wrap);
    // Only Unix adds cases below (/dev/zero and a FIFO).
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut cases: Vec<(String, Vec<String>)> = vec![
        (
            "GGUF of 20 shards that are one file".into(),
            vec!["inspect".into(), s(&first).into()],
        ),
        (
            "GGUF whose tensor sizes wrap u64".into(),
            vec!["inspect".into(), s(&wrap).into()],
        ),
        (
            "GGUF with a million tensors".into(),
            vec!["inspect".into(), s(&million).into()],
        ),
        (
            "GGUF with 1,200 strings of 1 MiB".into(),
            vec!["inspect".into(), s(&strings).into()],
        ),
        (
            "safetensors header of 1.6 M tensors".into(),
            vec!["inspect".into(), s(&st).into()],
        ),
        (
            "CSV replay of 50 k rows at one time".into(),
            vec![
                "monitor".into(),
                "--replay".into(),
                s(&csv).into(),
                "--json".into(),
            ],
        ),
        (
            "a megabyte preset name".into(),
            vec![
                "plan".into(),
                "--workload".into(),
                s(&megabyte_name(d)).into(),
            ],
        ),
    ];
    #[cfg(unix)]
    for f in ["/dev/zero", s(&fifo(d, "pipe"))] {
        for (what, args) in [
            ("workload", vec!["plan", "--workload", f]),
            ("diagnose --file", vec!["diagnose", "--file", f]),
            ("replay", vec!["monitor", "--replay", f]),
            ("reference", vec!["accuracy", "--reference", f]),
            (
                "record",
                vec!["monitor", "--demo", "--count", "1", "--record", f],
            ),
        ] {
            cases.push((
                format!("{what} {f}"),
                args.into_iter().map(String::from).collect(),
            ));
        }
    }
    let mut report = Vec::new();
    for (what, args) in &cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (kib, secs, o) = measured(&a, &[]).unwrap();
        let code = o.status.code();
        report.push(format!(
            "{what}: {} MiB, {secs:.2} s, exit {code:?}",
            kib >> 10
        ));
        assert!(code.is_some(), "{what}: killed by a signal; {}", err(&o));
        assert!(kib <= 256 << 10, "{what}: {} MiB resident", kib >> 10);
        assert!(secs <= 2.0, "{what}: {secs:.2} s");
    }
    eprintln!("{}", report.join("\n"));
}
