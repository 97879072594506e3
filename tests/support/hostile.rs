//! Crafted hostile inputs (issue 23), shared by `hostile_inputs.rs` (one per defect) and
//! `hostile_limits.rs` (all of them under a memory cap).

use super::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// Runs with `args` and no stdin, killed after 20 s (a read that blocks is a failure, not a
/// hang of the suite). The output is read while it runs, so a long one cannot block the child.
pub fn run_in(cmd: &mut Command, args: &[&str]) -> Output {
    let child = cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()).ok());
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            Command::new("kill")
                .arg("-9")
                .arg(pid.to_string())
                .status()
                .ok();
            panic!("{args:?} still runs after 20 s (blocked on its input?)");
        }
    }
}

#[cfg(unix)]
pub fn fifo(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    let ok = Command::new("mkfifo")
        .arg(&p)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo is missing or failed (coreutils)");
    p
}

/// A sparse GGUF with 1,200 metadata strings of 1 MiB before the real metadata: at most the
/// budget is kept, the rest skipped unread, and the model still imports.
pub fn many_strings(dir: &Path) -> PathBuf {
    use std::io::{Seek, SeekFrom};
    let g = tiny_llama(1);
    let head = g.header();
    let extra = 1200u64;
    let p = dir.join("strings.gguf");
    let mut f = std::fs::File::create(&p).unwrap();
    // Magic, version and tensor count as they are; the metadata count grows by the junk.
    f.write_all(&head[..16]).unwrap();
    f.write_all(&(g.kv.len() as u64 + extra).to_le_bytes())
        .unwrap();
    for i in 0..extra {
        let mut k = Vec::new();
        put_str(&mut k, &format!("junk.{i}"));
        k.extend(8u32.to_le_bytes());
        k.extend((1u64 << 20).to_le_bytes());
        f.write_all(&k).unwrap();
        // The string's 1 MiB of zeros as a hole.
        f.seek(SeekFrom::Current(1 << 20)).unwrap();
    }
    // The real metadata and tensor infos follow; the file is then long enough for the data.
    f.write_all(&head[24..]).unwrap();
    let (_, data) = g.layout();
    let len = f.stream_position().unwrap();
    f.set_len(len + ALIGN + data).unwrap();
    p
}

/// A safetensors header just under the 100 MB limit, holding 1.6 million tensor entries.
pub fn huge_safetensors(dir: &Path) -> PathBuf {
    let sub = dir.join("st");
    std::fs::create_dir_all(&sub).unwrap();
    let p = sub.join("model.safetensors");
    let mut json = String::with_capacity(105_000_000);
    json.push('{');
    for i in 0..1_600_000u32 {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            "\"t{i:07}\":{{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}"
        ));
    }
    json.push('}');
    let mut f = std::fs::File::create(&p).unwrap();
    f.write_all(&(json.len() as u64).to_le_bytes()).unwrap();
    f.write_all(json.as_bytes()).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/configs/llama-3.2-1b.json"),
        sub.join("config.json"),
    )
    .unwrap();
    p
}

/// A CSV recording of `rows` rows that all have one time.
pub fn one_time_csv(dir: &Path, rows: usize) -> PathBuf {
    use vram_doctor::telemetry::Source;
    let mut demo = vram_doctor::telemetry::demo::DemoSource::new(1);
    let snap = demo.sample();
    let text = vram_doctor::telemetry::format::csv_rows(&snap);
    let row = text.lines().next().unwrap();
    let p = dir.join("one-time.csv");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
    writeln!(f, "{}", vram_doctor::telemetry::format::CSV_HEADER).unwrap();
    for _ in 0..rows {
        writeln!(f, "{row}").unwrap();
    }
    f.flush().unwrap();
    p
}

/// Eight tensors of 2^61 elements of an unknown ggml type (sized from the offsets: 0 bytes,
/// all at one offset): their elements add up to 2^64, which wraps to 0 in a plain `u64` sum and
/// leaves the real tensors' count, a plausible figure.
pub fn wrapping_gguf(path: &Path) {
    let mut g = tiny_llama(1);
    for i in 0..8 {
        g.tensors
            .push(Tensor::new(&format!("huge.{i}"), &[0, 0], 0));
    }
    let mut bytes = g.bytes();
    for i in 0..8 {
        let mut pat = Vec::new();
        put_str(&mut pat, &format!("huge.{i}"));
        pat.extend(2u32.to_le_bytes());
        let at = bytes.windows(pat.len()).position(|w| w == pat).unwrap() + pat.len();
        bytes[at..at + 8].copy_from_slice(&(1u64 << 31).to_le_bytes());
        bytes[at + 8..at + 16].copy_from_slice(&(1u64 << 30).to_le_bytes());
        bytes[at + 16..at + 20].copy_from_slice(&99u32.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

/// A workload naming a preset of a million characters (an argument cannot be that long).
pub fn megabyte_name(dir: &Path) -> PathBuf {
    let p = dir.join("long-name.toml");
    let name = "x".repeat(1_000_000);
    std::fs::write(
        &p,
        format!("[gpu]\nvram_gib = 8\n[model]\npreset = \"{name}\"\n"),
    )
    .unwrap();
    p
}
