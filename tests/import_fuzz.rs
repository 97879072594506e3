//! The fuzz harness of `fuzz/` as a plain test: seeded random mutations of valid files (bytes for
//! GGUF and safetensors, JSON values for config.json and model_index.json) fed to every parser.
//! Each input must give `Ok` or a one-line error, never a panic. `IMPORT_FUZZ_ITERS` raises the
//! iteration count for a longer local run; crashes found are kept in `regressions()` below.

mod support;

use serde_json::Value;
use std::panic::{AssertUnwindSafe, catch_unwind};
use support::*;
use vram_doctor::import::from_bytes;

/// xorshift64*: deterministic, so a failure reproduces from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const INTERESTING: [u64; 12] = [
    0,
    1,
    2,
    3,
    4,
    255,
    1 << 16,
    (1 << 31) - 1,
    1 << 32,
    1 << 60,
    u64::MAX,
    u64::MAX / 2,
];

fn mutate_bytes(rng: &mut Rng, data: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        if data.is_empty() {
            data.push(0);
        }
        let at = rng.below(data.len());
        match rng.below(6) {
            0 => data[at] ^= 1 << rng.below(8),
            1 => data[at] = [0, 0xff, 0x7f, 0x80][rng.below(4)],
            2 => {
                let v = INTERESTING[rng.below(INTERESTING.len())].to_le_bytes();
                let n = [4, 8][rng.below(2)].min(data.len() - at);
                data[at..at + n].copy_from_slice(&v[..n]);
            }
            3 => data.truncate(at),
            4 => {
                let end = (at + rng.below(64)).min(data.len());
                let piece = data[at..end].to_vec();
                let to = rng.below(data.len());
                data.splice(to..to, piece);
            }
            _ => {
                let n = rng.below(16);
                data.splice(at..at, (0..n).map(|_| rng.next() as u8));
            }
        }
    }
}

fn mutate_json(rng: &mut Rng, v: &mut Value, depth: u32) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            let key = m
                .keys()
                .nth(rng.below(m.len()))
                .cloned()
                .unwrap_or_default();
            match rng.below(5) {
                0 => {
                    m.remove(&key);
                }
                1 => {
                    m.insert(key, Value::Null);
                }
                _ => {
                    if let Some(child) = m.get_mut(&key) {
                        mutate_json(rng, child, depth + 1);
                    }
                }
            }
        }
        Value::Array(a) if !a.is_empty() && depth < 8 => {
            let i = rng.below(a.len());
            mutate_json(rng, &mut a[i], depth + 1);
        }
        _ => {
            *v = match rng.below(8) {
                0 => Value::from(INTERESTING[rng.below(INTERESTING.len())]),
                1 => Value::from(-(rng.below(1000) as i64)),
                2 => Value::from(1e300),
                3 => Value::from(rng.below(100) as f64 + 0.5),
                4 => Value::from("gptq"),
                5 => Value::Bool(rng.below(2) == 0),
                6 => serde_json::json!([1, 2, 3]),
                _ => serde_json::json!({"quant_method": "awq", "bits": 4}),
            }
        }
    }
}

type Parser = fn(&[u8]) -> Result<(), String>;

/// Runs `parse` on `input`; a panic or a multi-line error fails with the input in hex.
fn check(name: &str, parse: Parser, input: &[u8]) {
    let hex = || input.iter().map(|b| format!("{b:02x}")).collect::<String>();
    match catch_unwind(AssertUnwindSafe(|| parse(input))) {
        Err(_) => panic!("{name} panicked on input {}", hex()),
        Ok(Err(e)) => assert!(
            !e.contains('\n'),
            "{name}: multi-line error {e:?} on {}",
            hex()
        ),
        Ok(Ok(())) => {}
    }
}

fn gguf(d: &[u8]) -> Result<(), String> {
    from_bytes::gguf(d).map(drop).map_err(String::from)
}
fn safetensors(d: &[u8]) -> Result<(), String> {
    from_bytes::safetensors(d).map(drop).map_err(String::from)
}
fn hf_config(d: &[u8]) -> Result<(), String> {
    from_bytes::hf_config(d).map(drop).map_err(String::from)
}
fn model_index(d: &[u8]) -> Result<(), String> {
    from_bytes::model_index(d).map(drop).map_err(String::from)
}
fn comfy_workflow(d: &[u8]) -> Result<(), String> {
    from_bytes::comfy_workflow(d)
        .map(drop)
        .map_err(String::from)
}

fn iterations() -> usize {
    std::env::var("IMPORT_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000)
}

fn seeds(dir: &str) -> Vec<Vec<u8>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(dir);
    let mut out: Vec<Vec<u8>> = std::fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no seeds in {}", path.display());
    out
}

fn fuzz_bytes(name: &str, parse: Parser, mut corpus: Vec<Vec<u8>>, seed: u64) {
    let mut rng = Rng(seed);
    for c in &corpus {
        check(name, parse, c);
    }
    for _ in 0..iterations() {
        let mut input = corpus[rng.below(corpus.len())].clone();
        mutate_bytes(&mut rng, &mut input);
        check(name, parse, &input);
        // Keep some mutants that still parse as seeds for deeper mutations.
        if corpus.len() < 64 && parse(&input).is_ok() {
            corpus.push(input);
        }
    }
}

fn fuzz_json(name: &str, parse: Parser, corpus: Vec<Vec<u8>>, seed: u64) {
    let values: Vec<Value> = corpus
        .iter()
        .filter_map(|c| serde_json::from_slice(c).ok())
        .collect();
    assert!(!values.is_empty());
    let mut rng = Rng(seed);
    for _ in 0..iterations() {
        let mut v = values[rng.below(values.len())].clone();
        for _ in 0..1 + rng.below(3) {
            mutate_json(&mut rng, &mut v, 0);
        }
        let mut bytes = serde_json::to_vec(&v).unwrap();
        check(name, parse, &bytes);
        mutate_bytes(&mut rng, &mut bytes);
        check(name, parse, &bytes);
    }
}

#[test]
fn fuzz_gguf() {
    let mut corpus = seeds("gguf");
    corpus.push(tiny_llama(1).bytes());
    fuzz_bytes("gguf", gguf, corpus, 0x9e37_79b9_7f4a_7c15);
}

#[test]
fn fuzz_safetensors() {
    let mut corpus = seeds("safetensors");
    corpus.push(llama_checkpoint(1, 8, 4, 16, 10, "F16").bytes());
    fuzz_bytes("safetensors", safetensors, corpus, 0xd1b5_4a32_d192_ed03);
}

#[test]
fn fuzz_hf_config() {
    fuzz_json(
        "hf_config",
        hf_config,
        seeds("hf_config"),
        0x94d0_49bb_1331_11eb,
    );
}

#[test]
fn fuzz_model_index() {
    fuzz_json(
        "model_index",
        model_index,
        seeds("model_index"),
        0xbf58_476d_1ce4_e5b9,
    );
}

/// ComfyUI workflows: the JSON seeds mutated as values and as bytes, the PNG seed as bytes.
#[test]
fn fuzz_comfy_workflow() {
    let corpus = seeds("comfy_workflow");
    let (png, json): (Vec<_>, Vec<_>) = corpus.into_iter().partition(|c| c.starts_with(b"\x89PNG"));
    assert!(!png.is_empty() && !json.is_empty());
    fuzz_json("comfy_workflow", comfy_workflow, json.clone(), 0xC0F1);
    fuzz_bytes("comfy_workflow", comfy_workflow, json, 0xC0F2);
    fuzz_bytes("comfy_workflow png", comfy_workflow, png, 0xC0F3);
}

/// The seeds must be valid files, or the mutations above explore nothing.
#[test]
fn seeds_parse() {
    for s in seeds("gguf") {
        gguf(&s).unwrap();
    }
    for s in seeds("safetensors") {
        safetensors(&s).unwrap();
    }
    for s in seeds("hf_config") {
        hf_config(&s).unwrap();
    }
    for s in seeds("comfy_workflow") {
        from_bytes::comfy_workflow(&s).unwrap();
    }
    for s in seeds("model_index") {
        model_index(&s).unwrap();
    }
}

/// Inputs the mutation runs above found, kept as fixed cases.
#[test]
fn regressions() {
    // DeepSeek-V3 with n_shared_experts = 2^31 - 1: the shared width overflowed u32 (a panic in
    // debug builds) when turned into a count of shared experts.
    let mut v: Value = serde_json::from_slice(
        &std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/configs/deepseek-v3.json"),
        )
        .unwrap(),
    )
    .unwrap();
    v["n_shared_experts"] = Value::from(2_147_483_647u32);
    let e = from_bytes::hf_config(&serde_json::to_vec(&v).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("model.params"), "{e}");
    // A GGUF whose general.architecture string swallowed the following bytes (newlines
    // included): the key named in "… is missing" must not break the one-line message.
    let g = Gguf::new().kv("general.architecture", Val::Str("llama\n\0junk".into()));
    let e = from_bytes::gguf(&g.bytes()).unwrap_err().to_string();
    assert!(
        !e.contains('\n') && e.contains(r#""llama\n\u{0}junk.block_count" is missing"#),
        "{e}"
    );
    // Same for a config value echoed back in an error.
    let e = from_bytes::hf_config(br#"{"model_type":"llama","hidden_size":"a\nb"}"#)
        .unwrap_err()
        .to_string();
    assert!(!e.contains('\n'), "{e}");
}

// ---------------------------------------------------------------- issue 23's classes

/// Runs `f` on another thread and fails if it has not answered in 10 s: a reader that opens a
/// FIFO blocks forever, and that must fail the test rather than hang it.
fn within_10s<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()).ok());
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("{what}: no answer in 10 s (blocked on a FIFO?)"))
}

/// Every reader and writer of user paths, given a path that is not a regular file: a folder,
/// a FIFO, a device, a link to nothing, a link to a device, a missing path. Each answers with
/// one line (or, for a missing path that a writer may create, succeeds), never blocks, never
/// replaces the thing at the path.
#[test]
fn fuzz_paths_that_are_not_regular_files() {
    use std::path::{Path, PathBuf};
    use vram_doctor::telemetry::{record::Recorder, replay::ReplaySource};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Only Unix adds the FIFO and the symlinks below.
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut odd: Vec<PathBuf> = vec![d.to_path_buf(), d.join("missing").join("x")];
    #[cfg(unix)]
    {
        let fifo = d.join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .is_ok_and(|s| s.success()),
            "mkfifo is missing (coreutils)"
        );
        let dangling = d.join("dangling");
        std::os::unix::fs::symlink(d.join("nothing"), &dangling).unwrap();
        let to_dev = d.join("to-dev");
        std::os::unix::fs::symlink("/dev/zero", &to_dev).unwrap();
        let to_dir = d.join("to-dir");
        std::os::unix::fs::symlink(d, &to_dir).unwrap();
        odd.extend([fifo, dangling, to_dev, to_dir, PathBuf::from("/dev/zero")]);
    }
    type Reader = fn(&Path) -> Result<(), String>;
    let readers: [(&str, Reader); 7] = [
        ("import", |p| {
            vram_doctor::import::import(p)
                .map(drop)
                .map_err(String::from)
        }),
        ("workload", |p| {
            vram_doctor::memory::WorkloadFile::load(p)
                .map(drop)
                .map_err(String::from)
        }),
        ("replay", |p| ReplaySource::open(p).map(drop)),
        ("reference", |p| {
            vram_doctor::accuracy::run_file(p)
                .map(drop)
                .map_err(String::from)
        }),
        ("read_capped", |p| {
            vram_doctor::input_file::read_capped(p, 1 << 20, "a file")
                .map(drop)
                .map_err(String::from)
        }),
        ("gguf", |p| {
            vram_doctor::import::gguf::read(p)
                .map(drop)
                .map_err(String::from)
        }),
        ("nvml-lib", vram_doctor::telemetry::nvml::check_lib),
    ];
    for p in &odd {
        for (name, read) in readers {
            let q = p.clone();
            let what = format!("{name} {}", p.display());
            let r = within_10s(&what, move || read(&q));
            let e = r.expect_err(&what);
            assert!(!e.contains('\n'), "{what}: {e}");
        }
        // Writers: a path that is something other than a file is refused and left as it is.
        let kind = std::fs::symlink_metadata(p).ok().map(|m| m.file_type());
        let q = p.clone();
        let wrote = within_10s("write_atomic", move || {
            vram_doctor::atomic_write::write_atomic(&q, "x").map_err(String::from)
        });
        let q = p.clone();
        let recorded = within_10s("record", move || {
            Recorder::open(&q, 1 << 20)
                .map(drop)
                .map_err(|e| e.to_string())
        });
        for (what, r) in [("write_atomic", wrote), ("record", recorded)] {
            match r {
                Err(e) => assert!(!e.contains('\n'), "{what} {}: {e}", p.display()),
                Ok(()) => panic!("{what} {} succeeded", p.display()),
            }
        }
        assert_eq!(
            std::fs::symlink_metadata(p).ok().map(|m| m.file_type()),
            kind,
            "{} was replaced",
            p.display()
        );
    }
}

/// GGUF and safetensors headers whose counts (tensors, metadata entries, array and string
/// lengths) are set to large values: each must be refused or parsed quickly, with no allocation
/// proportional to the claim (a claim of 2^60 entries that were allocated would abort the test).
#[test]
fn fuzz_headers_with_large_counts() {
    let mut rng = Rng(23);
    let base = tiny_llama(1).bytes();
    let big: [u64; 6] = [100_001, 1 << 20, 1 << 32, 1 << 40, 1 << 60, u64::MAX];
    for _ in 0..iterations() / 3 {
        let mut g = base.clone();
        // The tensor count (offset 8), the metadata count (16), or any 8 aligned bytes further on
        // (string and array lengths).
        let at = match rng.below(3) {
            0 => 8,
            1 => 16,
            _ => 8 * rng.below(g.len() / 8),
        };
        let v = big[rng.below(big.len())].to_le_bytes();
        g[at..at + 8].copy_from_slice(&v);
        let start = std::time::Instant::now();
        check("gguf (large count)", gguf, &g);
        assert!(start.elapsed().as_secs() < 2, "slow on a count at {at}");
    }
    // A safetensors header announcing more tensors than any model has.
    let mut json = String::from("{");
    for i in 0..vram_doctor::import::safetensors::MAX_TENSORS + 1 {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            "\"t{i}\":{{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}"
        ));
    }
    json.push('}');
    let mut st = (json.len() as u64).to_le_bytes().to_vec();
    st.extend(json.as_bytes());
    let e = from_bytes::safetensors(&st).unwrap_err().to_string();
    assert!(e.contains("more than any model has"), "{e}");
}

/// Names with control characters (newlines, ESC, BEL, C1 controls, bidi overrides) in the
/// fields that are printed: none survives raw into what the importer hands on.
#[test]
fn fuzz_names_with_control_characters() {
    let mut rng = Rng(5);
    let nasty = [
        '\n', '\r', '\u{1b}', '\u{7}', '\u{0}', '\u{85}', '\u{9b}', '\u{202e}', '\u{7f}',
    ];
    for _ in 0..iterations() / 10 {
        let name: String = (0..1 + rng.below(24))
            .map(|_| {
                if rng.below(3) == 0 {
                    nasty[rng.below(nasty.len())]
                } else {
                    (b'a' + rng.below(26) as u8) as char
                }
            })
            .collect();
        let mut g = tiny_llama(1);
        for (k, v) in &mut g.kv {
            if k == "general.name" {
                *v = Val::Str(name.clone());
            }
        }
        let m = from_bytes::gguf(&g.bytes()).expect("a tiny llama");
        for field in [&m.name, &m.model_type] {
            assert!(
                !field
                    .chars()
                    .any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
                "{field:?} from {name:?}"
            );
        }
        let cfg = serde_json::json!({
            "model_type": name, "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
            "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
            "vocab_size": 100
        });
        if let Ok(m) = from_bytes::hf_config(cfg.to_string().as_bytes()) {
            assert!(
                !m.model_type.chars().any(char::is_control),
                "{:?}",
                m.model_type
            );
        }
    }
}

// ---- SMBIOS tables (src/catalog/smbios.rs): this machine's memory modules ----

use vram_doctor::catalog::smbios::{memory_devices, ram_reading, windows_raw_table};

fn smbios(d: &[u8]) -> Result<(), String> {
    let devices = memory_devices(d);
    if let Some(r) = ram_reading(&devices) {
        assert!(r.gbps.is_finite() && r.gbps >= 0.0, "{r:?}");
    }
    if let Some(t) = windows_raw_table(d) {
        memory_devices(t);
    }
    Ok(())
}

/// A desktop's table: a BIOS structure with a string, two DDR4 DIMMs on two channels, an
/// empty slot, the end marker.
fn smbios_desktop() -> Vec<u8> {
    [
        vec![0, 4, 0, 0, b'x', 0, 0],
        smbios_type17(16384, 0x1A, 3200, 64, "DIMM_A1", "BANK 0"),
        smbios_type17(0, 0x1A, 0, 64, "DIMM_A2", "BANK 1"),
        smbios_type17(16384, 0x1A, 3200, 64, "DIMM_B1", "BANK 2"),
        smbios_end(),
    ]
    .concat()
}

#[test]
fn fuzz_smbios() {
    let lpddr: Vec<u8> = ["A", "B", "C", "D"]
        .iter()
        .flat_map(|c| smbios_type17(4096, 0x23, 7500, 16, &format!("Controller0-Channel{c}"), ""))
        .collect();
    let mut raw = vec![0, 3, 3, 0];
    raw.extend_from_slice(&(lpddr.len() as u32).to_le_bytes());
    raw.extend_from_slice(&lpddr);
    fuzz_bytes(
        "smbios",
        smbios,
        vec![smbios_desktop(), lpddr, raw],
        0x0053_1717,
    );
}

#[test]
fn smbios_modules_read_as_channels_times_width_times_speed() {
    let d = memory_devices(&smbios_desktop());
    assert_eq!(d.len(), 2, "the empty slot is not a module: {d:?}");
    let r = ram_reading(&d).unwrap();
    assert_eq!(r.ram_bytes, 32 << 30);
    assert!((r.gbps - 51.2).abs() < 1e-9, "{r:?}");
    assert_eq!(r.description, "2 x DDR4-3200, 2 channels x 64 bit (SMBIOS)");
    // Four DDR5 DIMMs on two channels share them: the bandwidth of two.
    let t: Vec<u8> = [
        ("DIMM 0", "A"),
        ("DIMM 1", "A"),
        ("DIMM 0", "B"),
        ("DIMM 1", "B"),
    ]
    .iter()
    .flat_map(|(dev, ch)| smbios_type17(8192, 0x22, 5600, 64, dev, &format!("P0 CHANNEL {ch}")))
    .collect();
    let r = ram_reading(&memory_devices(&t)).unwrap();
    assert!((r.gbps - 89.6).abs() < 1e-9, "{r:?}");
    // LPDDR5X: eight 16-bit devices on two controllers, each its own channel: 128 bits.
    let t: Vec<u8> = ["0", "1"]
        .iter()
        .flat_map(|ctl| {
            ["A", "B", "C", "D"].map(|c| {
                smbios_type17(
                    2048,
                    0x23,
                    7500,
                    16,
                    &format!("Controller{ctl}-Channel{c}"),
                    "BANK 0",
                )
            })
        })
        .flatten()
        .collect();
    let r = ram_reading(&memory_devices(&t)).unwrap();
    assert!((r.gbps - 120.0).abs() < 1e-9, "{r:?}");
    // Slots that name no channel count one channel per module, at the slowest module's speed,
    // and say so.
    let t = [
        smbios_type17(8192, 0x1A, 2666, 64, "Slot1", ""),
        smbios_type17(8192, 0x1A, 2400, 64, "Slot2", ""),
    ]
    .concat();
    let r = ram_reading(&memory_devices(&t)).unwrap();
    assert!((r.gbps - 2.0 * 8.0 * 2.4).abs() < 1e-9, "{r:?}");
    assert!(
        r.description.contains("one per module"),
        "{}",
        r.description
    );
}

#[test]
fn smbios_extended_fields_windows_header_and_broken_tables() {
    let mut s = smbios_type17(0x7FFF, 0x22, 0xFFFF, 64, "A", "B");
    s[0x1C..0x20].copy_from_slice(&65536u32.to_le_bytes());
    s[0x58..0x5C].copy_from_slice(&8000u32.to_le_bytes());
    s[0x54..0x58].copy_from_slice(&8000u32.to_le_bytes());
    let mut raw = vec![0, 3, 3, 0];
    raw.extend_from_slice(&(s.len() as u32).to_le_bytes());
    raw.extend_from_slice(&s);
    let d = memory_devices(windows_raw_table(&raw).unwrap());
    assert_eq!((d[0].size_bytes, d[0].speed_mts), (64 << 30, Some(8000)));
    assert!(windows_raw_table(&[1, 2, 3]).is_none());
    // A table cut short keeps only the structures that were whole.
    for cut in 0..s.len() {
        assert!(memory_devices(&s[..cut]).is_empty(), "cut at {cut}");
    }
    assert!(memory_devices(&[17, 2, 0, 0, 0, 0]).is_empty());
    assert!(ram_reading(&[]).is_none());
}
