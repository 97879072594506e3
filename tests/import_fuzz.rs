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
    from_bytes::gguf(d).map(drop)
}
fn safetensors(d: &[u8]) -> Result<(), String> {
    from_bytes::safetensors(d).map(drop)
}
fn hf_config(d: &[u8]) -> Result<(), String> {
    from_bytes::hf_config(d).map(drop)
}
fn model_index(d: &[u8]) -> Result<(), String> {
    from_bytes::model_index(d).map(drop)
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
    let e = from_bytes::hf_config(&serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert!(e.contains("model.params"), "{e}");
    // A GGUF whose general.architecture string swallowed the following bytes (newlines
    // included): the key named in "… is missing" must not break the one-line message.
    let g = Gguf::new().kv("general.architecture", Val::Str("llama\n\0junk".into()));
    let e = from_bytes::gguf(&g.bytes()).unwrap_err();
    assert!(
        !e.contains('\n') && e.contains(r#""llama\n\0junk.block_count" is missing"#),
        "{e}"
    );
    // Same for a config value echoed back in an error.
    let e = from_bytes::hf_config(br#"{"model_type":"llama","hidden_size":"a\nb"}"#).unwrap_err();
    assert!(!e.contains('\n'), "{e}");
}
