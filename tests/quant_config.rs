//! Weight bytes from a config's `quantization_config` (issue 15 item 1): each method's storage
//! counted tensor by tensor from the format's own layout, or refused by name.
//!
//! Each test takes a real architecture (tests/data/configs) and the `quantization_config` a
//! checkpoint of that method carries, with the field names of the format (transformers
//! `GPTQConfig` / `AwqConfig` / `BitsAndBytesConfig` / `FineGrainedFP8Config`, compressed-tensors
//! `QuantizationConfig`, ModelOpt's export). The expected bytes are worked out here from the
//! model's published shapes and the format's tensors, independently of the importer.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use vram_doctor::import as imp;
use vram_doctor::types::dtype::WeightFormat;

fn config_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/configs")
        .join(name)
}

fn base(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(config_path(name)).unwrap()).unwrap()
}

fn with_quant(name: &str, q: Value) -> Value {
    let mut c = base(name);
    c["quantization_config"] = q;
    c
}

fn import(c: &Value) -> Result<imp::ImportedModel, String> {
    imp::from_bytes::hf_config(c.to_string().as_bytes()).map_err(String::from)
}

/// One `nn.Linear` as `(in, out)`.
type Shape = (f64, f64);

/// Llama 3.1 8B (config.json: hidden 4096, 32 layers, 32 heads, 8 KV heads, MLP 14336, vocab
/// 128256, untied head): its 7 block projections and its head.
const LLAMA_PARAMS: f64 = 8_030_261_248.0;
fn llama_blocks() -> Vec<Shape> {
    let one = [
        (4096.0, 4096.0),
        (4096.0, 1024.0),
        (4096.0, 1024.0),
        (4096.0, 4096.0),
        (4096.0, 14336.0),
        (4096.0, 14336.0),
        (14336.0, 4096.0),
    ];
    (0..32).flat_map(|_| one).collect()
}
const LLAMA_HEAD: Shape = (4096.0, 128256.0);

/// Bytes when `quantized` linears take `per(in, out)` bytes each and everything else 2 bytes
/// per parameter.
fn expected(total: f64, quantized: &[Shape], per: impl Fn(f64, f64) -> f64) -> f64 {
    let elems: f64 = quantized.iter().map(|(i, o)| i * o).sum();
    quantized.iter().map(|&(i, o)| per(i, o)).sum::<f64>() + (total - elems) * 2.0
}

fn bytes(m: &imp::ImportedModel) -> f64 {
    m.config_weight_bytes
        .unwrap_or_else(|| panic!("{}: no bytes from the config", m.name)) as f64
}

fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1.0 + want * 1e-9,
        "{what}: {got} bytes, expected {want}"
    );
}

#[test]
fn gptq_packs_qweight_qzeros_scales_and_g_idx() {
    // TheBloke/Llama-2-7b-GPTQ config.json (bits 4, group_size 128): Llama 2 7B's shapes.
    let m = imp::import_model(&config_path("llama-2-7b-gptq.json")).unwrap();
    let one = [
        (4096.0, 4096.0),
        (4096.0, 4096.0),
        (4096.0, 4096.0),
        (4096.0, 4096.0),
        (4096.0, 11008.0),
        (4096.0, 11008.0),
        (11008.0, 4096.0),
    ];
    let blocks: Vec<Shape> = (0..32).flat_map(|_| one).collect();
    // qweight int32 [in/8, out], qzeros int32 [in/128, out/8], scales fp16 [in/128, out],
    // g_idx int32 [in]; the head stays 16-bit.
    let per = |g: f64, bits: f64| {
        move |i: f64, o: f64| i * o * bits / 8.0 + (i / g).ceil() * o * (2.0 + bits / 8.0) + 4.0 * i
    };
    close(
        bytes(&m),
        expected(6_738_415_616.0, &blocks, per(128.0, 4.0)),
        "gptq 4-bit g128",
    );
    assert_eq!(m.weights, Some(WeightFormat::Gptq4));
    // 8 bits, one group per column (group_size -1).
    let c = with_quant(
        "llama-3.1-8b.json",
        json!({"quant_method": "gptq", "bits": 8, "group_size": -1, "desc_act": true, "sym": true}),
    );
    let m = import(&c).unwrap();
    let per_column = |i: f64, o: f64| i * o + o * 3.0 + 4.0 * i;
    close(
        bytes(&m),
        expected(LLAMA_PARAMS, &llama_blocks(), per_column),
        "gptq 8-bit per column",
    );
    assert_eq!(m.weights, Some(WeightFormat::Gptq8));
    // The head quantized too (GPTQModel `lm_head: true`).
    let c = with_quant(
        "llama-3.1-8b.json",
        json!({"quant_method": "gptq", "bits": 4, "group_size": 128, "lm_head": true}),
    );
    let mut with_head = llama_blocks();
    with_head.push(LLAMA_HEAD);
    close(
        bytes(&import(&c).unwrap()),
        expected(LLAMA_PARAMS, &with_head, per(128.0, 4.0)),
        "gptq with lm_head",
    );
}

#[test]
fn awq_keeps_biases_and_modules_to_not_convert_in_16_bit() {
    // Qwen/Qwen2.5-7B-Instruct-AWQ config.json (gemm, group 128, zero_point): 28 layers, hidden
    // 3584, 28 heads, 4 KV heads of 128, MLP 18944; its q/k/v biases stay 16-bit.
    let m = imp::import_model(&config_path("qwen2.5-7b-instruct-awq.json")).unwrap();
    let one = [
        (3584.0, 3584.0),
        (3584.0, 512.0),
        (3584.0, 512.0),
        (3584.0, 3584.0),
        (3584.0, 18944.0),
        (3584.0, 18944.0),
        (18944.0, 3584.0),
    ];
    let blocks: Vec<Shape> = (0..28).flat_map(|_| one).collect();
    // qweight int32 [in, out/8], qzeros int32 [in/128, out/8], scales fp16 [in/128, out].
    let per = |i: f64, o: f64| i * o / 2.0 + (i / 128.0).ceil() * o * 2.5;
    close(
        bytes(&m),
        expected(7_615_616_512.0, &blocks, per),
        "awq gemm g128",
    );
    // modules_to_not_convert: a substring of the module names (here every down_proj).
    let mut q = base("qwen2.5-7b-instruct-awq.json")["quantization_config"].clone();
    q["modules_to_not_convert"] = json!(["down_proj"]);
    let c = with_quant("qwen2.5-7b-instruct-awq.json", q);
    let kept: Vec<Shape> = blocks
        .iter()
        .copied()
        .filter(|s| *s != (18944.0, 3584.0))
        .collect();
    close(
        bytes(&import(&c).unwrap()),
        expected(7_615_616_512.0, &kept, per),
        "awq with modules_to_not_convert",
    );
}

#[test]
fn bitsandbytes_blocks_and_double_quantization() {
    // unsloth/llama-3-8b-bnb-4bit config.json: nf4 with double quantization; the head is
    // skipped (llm_int8_skip_modules null).
    let m = imp::import_model(&config_path("llama-3-8b-bnb-4bit.json")).unwrap();
    // Two codes per byte, an uint8 absmax per 64 weights, an fp32 per 256 absmax.
    let nf4_dq = |i: f64, o: f64| {
        let blocks = (i * o / 64.0).ceil();
        (i * o / 2.0).ceil() + blocks + (blocks / 256.0).ceil() * 4.0
    };
    close(
        bytes(&m),
        expected(LLAMA_PARAMS, &llama_blocks(), nf4_dq),
        "nf4 double quant",
    );
    assert_eq!(m.weights, Some(WeightFormat::Nf4));
    // Without double quantization: an fp32 absmax per 64.
    let mut q = base("llama-3-8b-bnb-4bit.json")["quantization_config"].clone();
    q["bnb_4bit_use_double_quant"] = json!(false);
    let c = with_quant("llama-3-8b-bnb-4bit.json", q);
    let plain = |i: f64, o: f64| (i * o / 2.0).ceil() + (i * o / 64.0).ceil() * 4.0;
    close(
        bytes(&import(&c).unwrap()),
        expected(LLAMA_PARAMS, &llama_blocks(), plain),
        "nf4",
    );
    // LLM.int8: int8 codes and an fp32 SCB per output row.
    let c = with_quant(
        "llama-3.1-8b.json",
        json!({"quant_method": "bitsandbytes", "load_in_8bit": true, "load_in_4bit": false, "llm_int8_skip_modules": null}),
    );
    let m = import(&c).unwrap();
    close(
        bytes(&m),
        expected(LLAMA_PARAMS, &llama_blocks(), |i, o| i * o + 4.0 * o),
        "int8",
    );
    assert_eq!(m.weights, Some(WeightFormat::Int8));
}

#[test]
fn fp8_block_scales_and_fbgemm_row_scales() {
    // Qwen/Qwen3-8B-FP8's quantization_config on Qwen3-8B's shapes (36 layers, hidden 4096,
    // 32 heads and 8 KV heads of 128, MLP 12288, vocab 151936, untied).
    let c = with_quant(
        "qwen3-8b.json",
        json!({"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}),
    );
    let m = import(&c).unwrap();
    let one = [
        (4096.0, 4096.0),
        (4096.0, 1024.0),
        (4096.0, 1024.0),
        (4096.0, 4096.0),
        (4096.0, 12288.0),
        (4096.0, 12288.0),
        (12288.0, 4096.0),
    ];
    let blocks: Vec<Shape> = (0..36).flat_map(|_| one).collect();
    let block = |i: f64, o: f64| i * o + (o / 128.0).ceil() * (i / 128.0).ceil() * 4.0;
    close(
        bytes(&m),
        expected(8_190_735_360.0, &blocks, block),
        "fp8 128x128",
    );
    assert_eq!(m.weights, Some(WeightFormat::Fp8));
    // fbgemm_fp8: one fp32 scale per output row.
    let c = with_quant(
        "qwen3-8b.json",
        json!({"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": ["lm_head"]}),
    );
    close(
        bytes(&import(&c).unwrap()),
        expected(8_190_735_360.0, &blocks, |i, o| i * o + 4.0 * o),
        "fbgemm fp8",
    );
    // DeepSeek-V3 as published (fp8, 128×128): about one byte per block parameter.
    let m = imp::import_model(&config_path("deepseek-v3.json")).unwrap();
    let b = bytes(&m);
    assert!(
        b > m.arch.params * 1.0 && b < m.arch.params * 1.01,
        "deepseek-v3 fp8: {b} bytes for {} params",
        m.arch.params
    );
}

fn ct(format: &str, weights: Value, input: Value, ignore: Value) -> Value {
    json!({
        "quant_method": "compressed-tensors",
        "format": format,
        "quantization_status": "compressed",
        "global_compression_ratio": null,
        "kv_cache_scheme": null,
        "sparsity_config": {},
        "config_groups": {"group_0": {
            "targets": ["Linear"],
            "weights": weights,
            "input_activations": input,
            "output_activations": null,
        }},
        "ignore": ignore,
    })
}

#[test]
fn compressed_tensors_w4a16_w8a8_fp8_and_nvfp4() {
    // W4A16 (llm-compressor's W4A16 preset): int4 group 128, symmetric, packed in int32; a bf16
    // scale per group; weight_shape int64[2] per module.
    let w4 = json!({"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group",
        "group_size": 128, "actorder": null, "dynamic": false, "observer": "minmax"});
    let c = with_quant(
        "llama-3.1-8b.json",
        ct(
            "pack-quantized",
            w4.clone(),
            Value::Null,
            json!(["lm_head"]),
        ),
    );
    let m = import(&c).unwrap();
    let w4a16 = |i: f64, o: f64| o * (i / 8.0).ceil() * 4.0 + o * (i / 128.0).ceil() * 2.0 + 16.0;
    close(
        bytes(&m),
        expected(LLAMA_PARAMS, &llama_blocks(), w4a16),
        "w4a16",
    );
    assert_eq!(m.weights, Some(WeightFormat::W4a16));
    // Asymmetric: packed int4 zero points per group too.
    let mut asym = w4.clone();
    asym["symmetric"] = json!(false);
    let c = with_quant(
        "llama-3.1-8b.json",
        ct("pack-quantized", asym, Value::Null, json!(["lm_head"])),
    );
    close(
        bytes(&import(&c).unwrap()),
        expected(LLAMA_PARAMS, &llama_blocks(), |i, o| {
            w4a16(i, o) + o * (i / 128.0).ceil() * 0.5
        }),
        "w4a16 asymmetric",
    );
    // W8A8 int8 (int-quantized): int8 codes, a bf16 scale per output row, dynamic per-token
    // activations (nothing stored for them).
    let c = with_quant(
        "llama-3.1-8b.json",
        ct(
            "int-quantized",
            json!({"num_bits": 8, "type": "int", "symmetric": true, "strategy": "channel", "dynamic": false}),
            json!({"num_bits": 8, "type": "int", "symmetric": true, "strategy": "token", "dynamic": true}),
            json!(["lm_head"]),
        ),
    );
    let m = import(&c).unwrap();
    close(
        bytes(&m),
        expected(LLAMA_PARAMS, &llama_blocks(), |i, o| i * o + 2.0 * o),
        "w8a8",
    );
    assert_eq!(m.weights, Some(WeightFormat::W8a8));
    // FP8 static per-tensor (float-quantized): one bf16 weight scale and one input scale.
    let c = with_quant(
        "llama-3.1-8b.json",
        ct(
            "float-quantized",
            json!({"num_bits": 8, "type": "float", "symmetric": true, "strategy": "tensor", "dynamic": false}),
            json!({"num_bits": 8, "type": "float", "symmetric": true, "strategy": "tensor", "dynamic": false}),
            json!(["lm_head"]),
        ),
    );
    let m = import(&c).unwrap();
    close(
        bytes(&m),
        expected(LLAMA_PARAMS, &llama_blocks(), |i, o| i * o + 2.0 + 2.0),
        "fp8 static",
    );
    assert_eq!(m.weights, Some(WeightFormat::Fp8));
    // NVFP4 (llm-compressor NVFP4 preset): E2M1 two per byte, an E4M3 scale per 16, an fp32
    // weight global scale, and the fp32 input global scale of its locally dynamic activations.
    let fp4 = json!({"num_bits": 4, "type": "float", "symmetric": true, "strategy": "tensor_group",
        "group_size": 16, "dynamic": false});
    let mut act = fp4.clone();
    act["dynamic"] = json!("local");
    let c = with_quant(
        "llama-3.1-8b.json",
        ct("nvfp4-pack-quantized", fp4, act, json!(["lm_head"])),
    );
    let m = import(&c).unwrap();
    close(
        bytes(&m),
        expected(LLAMA_PARAMS, &llama_blocks(), |i, o| {
            i * o / 2.0 + o * (i / 16.0).ceil() + 4.0 + 4.0
        }),
        "nvfp4",
    );
    assert_eq!(m.weights, Some(WeightFormat::Nvfp4));
}

#[test]
fn compressed_tensors_ignore_and_targets_by_name() {
    // Qwen3-30B-A3B with a W4A16 scheme: ignoring the routers (`re:.*mlp.gate$`, as
    // llm-compressor's MoE examples do) keeps 48 × [2048 → 128] in 16-bit.
    let w4 = json!({"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 128});
    let q = |ignore: Value| ct("pack-quantized", w4.clone(), Value::Null, ignore);
    let plain = import(&with_quant("qwen3-30b-a3b.json", q(json!(["lm_head"])))).unwrap();
    let routers = import(&with_quant(
        "qwen3-30b-a3b.json",
        q(json!(["lm_head", "re:.*mlp.gate$"])),
    ))
    .unwrap();
    let router = |i: f64, o: f64| o * (i / 8.0).ceil() * 4.0 + o * (i / 128.0).ceil() * 2.0 + 16.0;
    let diff = bytes(&routers) - bytes(&plain);
    let want = 48.0 * (2048.0 * 128.0 * 2.0 - router(2048.0, 128.0));
    close(diff, want, "routers kept 16-bit");
    // Named targets: only the experts quantized (a regex target), everything else 16-bit.
    let mut experts = ct("pack-quantized", w4.clone(), Value::Null, json!([]));
    experts["config_groups"]["group_0"]["targets"] = json!(["re:.*mlp.experts.*"]);
    let m = import(&with_quant("qwen3-30b-a3b.json", experts)).unwrap();
    // 48 layers × 128 experts × (gate, up: 2048 → 768; down: 768 → 2048).
    let e = 48.0 * 128.0;
    let per_expert = 2.0 * router(2048.0, 768.0) + router(768.0, 2048.0);
    let elems = e * 3.0 * 2048.0 * 768.0;
    close(
        bytes(&m),
        e * per_expert + (m.arch.params - elems) * 2.0,
        "experts only",
    );
    // An ignore entry that names no module of the model is said, not dropped silently.
    let m = import(&with_quant(
        "llama-3.1-8b.json",
        q(json!([
            "lm_head",
            "model.layers.0.block_sparse_moe.nothing"
        ])),
    ))
    .unwrap();
    assert!(
        m.notes
            .iter()
            .any(|n| n.to_string().contains("match no module")),
        "{:?}",
        m.notes
    );
    // A vision-language model whose list names the tower's modules one by one (as
    // llm-compressor writes it): the tower stays 16-bit, and no entry goes unexplained.
    let per_block: Vec<String> = (0..32)
        .flat_map(|b| {
            ["attn.qkv", "attn.proj", "mlp.gate_proj", "mlp.down_proj"]
                .map(|m| format!("model.visual.blocks.{b}.{m}"))
        })
        .chain(["lm_head".to_string()])
        .collect();
    let vl = |ignore: Value| import(&with_quant("qwen2.5-vl-7b-instruct.json", q(ignore))).unwrap();
    let listed = vl(json!(per_block));
    assert!(
        !listed
            .notes
            .iter()
            .any(|n| n.to_string().contains("match no module")),
        "{:?}",
        listed.notes
    );
    let whole = vl(json!(["lm_head", "re:model.visual.*"]));
    close(
        bytes(&listed),
        bytes(&whole),
        "tower listed per module or as a pattern",
    );
    let quantized = vl(json!(["lm_head"]));
    assert!(
        bytes(&quantized) < bytes(&whole),
        "a tower left out of the list is quantized"
    );
}

#[test]
fn modelopt_fp8_and_nvfp4_with_exclude_modules() {
    let c = with_quant(
        "llama-3.1-8b.json",
        json!({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
            "kv_cache_quant_algo": null, "exclude_modules": ["lm_head", "model.layers.*.self_attn.o_proj"]}),
    );
    let m = import(&c).unwrap();
    let kept: Vec<Shape> = (0..32)
        .flat_map(|_| {
            [
                (4096.0, 4096.0),
                (4096.0, 1024.0),
                (4096.0, 1024.0),
                (4096.0, 14336.0),
                (4096.0, 14336.0),
                (14336.0, 4096.0),
            ]
        })
        .collect();
    close(
        bytes(&m),
        expected(LLAMA_PARAMS, &kept, |i, o| {
            i * o / 2.0 + o * (i / 16.0).ceil() + 8.0
        }),
        "modelopt nvfp4",
    );
    assert_eq!(m.weights, Some(WeightFormat::Nvfp4));
    let c = with_quant(
        "llama-3.1-8b.json",
        json!({"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["lm_head"]}),
    );
    close(
        bytes(&import(&c).unwrap()),
        expected(LLAMA_PARAMS, &llama_blocks(), |i, o| i * o + 12.0),
        "modelopt fp8",
    );
}

#[test]
fn unsupported_methods_are_refused_by_name() {
    let cases = [
        (json!({"quant_method": "hqq", "nbits": 4}), "hqq"),
        (
            json!({"quant_method": "quanto", "weights": "int4"}),
            "quanto",
        ),
        (
            json!({"quant_method": "torchao", "quant_type": "int4_weight_only"}),
            "torchao",
        ),
        (json!({"quant_method": "eetq"}), "eetq"),
        (
            json!({"quant_method": "aqlm", "nbits_per_codebook": 16}),
            "aqlm",
        ),
        (
            json!({"quant_method": "gptq", "bits": 3, "group_size": 128}),
            "bits = 3",
        ),
        (
            json!({"quant_method": "gptq", "bits": 4, "checkpoint_format": "marlin"}),
            "marlin",
        ),
        (
            json!({"quant_method": "awq", "bits": 4, "version": "gemv_fast"}),
            "gemv_fast",
        ),
        (
            json!({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}),
            "W4A8_AWQ",
        ),
        (json!({"bits": 4}), "without a quant_method"),
        (
            {
                let mut q = ct(
                    "sparse-24-bitmask",
                    json!({"num_bits": 8, "type": "float", "strategy": "channel"}),
                    Value::Null,
                    json!([]),
                );
                q["sparsity_config"] =
                    json!({"format": "sparse-24-bitmask", "sparsity_structure": "2:4"});
                q
            },
            "sparsity_config",
        ),
        (
            ct(
                "marlin-24",
                json!({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}),
                Value::Null,
                json!([]),
            ),
            "marlin-24",
        ),
    ];
    for (q, named) in cases {
        let err = import(&with_quant("llama-3.1-8b.json", q.clone())).unwrap_err();
        assert!(err.contains(named), "{q}: {err}");
        assert!(!err.contains('\n'), "{err}");
    }
}

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn inspect_and_plan_use_the_stored_bytes_or_exit_2() {
    let dir = std::env::temp_dir().join(format!("vd-quant-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let w4 = json!({"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 128});
    let good = dir.join("w4a16.json");
    std::fs::write(
        &good,
        with_quant(
            "llama-3.1-8b.json",
            ct("pack-quantized", w4, Value::Null, json!(["lm_head"])),
        )
        .to_string(),
    )
    .unwrap();
    let m = imp::import_model(&good).unwrap();
    let stored = bytes(&m);
    let out = cli(&[
        "plan",
        "--model-file",
        good.to_str().unwrap(),
        "--gpu",
        "rtx-4090",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let weights = v["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "weights")
        .unwrap()["bytes"]
        .as_f64()
        .unwrap();
    close(weights, stored, "plan's weights");
    // About 5.7 GB, not Llama 3.1 8B's 16 GB of bf16.
    assert!(weights < LLAMA_PARAMS * 0.75, "{weights}");
    let out = cli(&["inspect", good.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("w4a16") && text.contains("as its quantization_config stores them"),
        "{text}"
    );
    let bad = dir.join("hqq.json");
    std::fs::write(
        &bad,
        with_quant("llama-3.1-8b.json", json!({"quant_method": "hqq"})).to_string(),
    )
    .unwrap();
    for args in [
        vec!["inspect", bad.to_str().unwrap()],
        vec![
            "plan",
            "--model-file",
            bad.to_str().unwrap(),
            "--gpu",
            "rtx-4090",
        ],
    ] {
        let out = cli(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("hqq"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every real config in tests/data/configs: `plan` resolves the same parameter count and the
/// same weight format as `inspect` reports, and the weight bytes `inspect` reads from a
/// quantization_config are the ones `plan` uses. A config the importer refuses (exit 2, the
/// feature named) is refused by `plan` too, with the same words.
#[test]
fn inspect_and_plan_agree_on_every_config() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/configs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 30, "{} configs", files.len());
    let mut refused = 0;
    for f in &files {
        let path = f.to_str().unwrap();
        let inspect = cli(&["inspect", "--json", path]);
        let out = cli(&[
            "plan",
            "--model-file",
            path,
            "--gpu",
            "h100-80gb",
            "--seq",
            "256",
            "--print-resolved",
        ]);
        if inspect.status.code() == Some(2) {
            let why = String::from_utf8_lossy(&inspect.stderr).trim().to_string();
            assert!(
                why.contains("not"),
                "{path}: a refusal that names nothing: {why}"
            );
            assert_eq!(
                out.status.code(),
                Some(2),
                "{path}: inspect refused, plan did not"
            );
            assert!(
                String::from_utf8_lossy(&out.stderr).contains(why.trim_start_matches("error: ")),
                "{path}: plan refused for another reason than inspect's {why}"
            );
            refused += 1;
            continue;
        }
        assert!(inspect.status.success(), "{path}: inspect failed");
        let inspected: Value = serde_json::from_slice(&inspect.stdout).unwrap();
        assert!(
            out.status.success(),
            "{path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let resolved: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            resolved["model"]["params"], inspected["arch"]["params"],
            "{path}: parameters"
        );
        if let Some(w) = inspected["weights"].as_str() {
            assert_eq!(resolved["run"]["weights"], w, "{path}: weight format");
        }
        if let Some(b) = inspected["config_weight_bytes"].as_f64() {
            assert_eq!(
                resolved["file_weights"]["total_bytes"].as_f64(),
                Some(b),
                "{path}: weight bytes"
            );
        }
    }
    // The folder is there to be counted: a refusal is the exception.
    assert!(
        refused * 4 < files.len(),
        "{refused} of {} configs refused",
        files.len()
    );
}
