//! Builds the fake `libnvidia-ml.so.1` from `tests/fake_nvml/fake_nvml.c` with the system C
//! compiler and hands each test its own copy in its own temp dir, next to its own scenario file.
//! Separate copies are separate inodes, so `dlopen` gives every test a fresh instance and tests
//! running in parallel never share the fake's state (`monitor.md` §3.5).

// Each test binary and the bench include this file and use different parts of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Which exports the fake has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Everything the sampler uses.
    Full,
    /// No `nvmlDeviceGetMemoryInfo_v2`, like a driver before R510.
    NoMemV2,
}

impl Variant {
    fn defines(self) -> &'static [&'static str] {
        match self {
            Variant::Full => &[],
            Variant::NoMemV2 => &["-DNO_MEM_V2"],
        }
    }
    fn dir_name(self) -> &'static str {
        match self {
            Variant::Full => "full",
            Variant::NoMemV2 => "no-mem-v2",
        }
    }
}

fn compile(variant: Variant) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_nvml/fake_nvml.c");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("fake_nvml")
        .join(variant.dir_name());
    std::fs::create_dir_all(&dir).expect("create fake_nvml build dir");
    let out = dir.join("libnvidia-ml.so.1");
    // Compile to a private name and rename: other test binaries may build the same file at once.
    let tmp = dir.join(format!("libnvidia-ml.so.1.{}", std::process::id()));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        // `-z nodelete`: nvml-wrapper dlcloses the library when NVML is dropped after a failure;
        // staying loaded keeps the fake's counters (init calls, samples) across re-opens, as a
        // real driver keeps its state.
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Wl,-z,nodelete", "-o"])
        .arg(&tmp)
        .args(variant.defines())
        .arg(&src)
        .status()
        .unwrap_or_else(|e| {
            panic!("could not run the C compiler `{cc}` to build the fake NVML: {e}")
        });
    assert!(status.success(), "building the fake NVML failed: {status}");
    std::fs::rename(&tmp, &out).expect("move the fake NVML into place");
    out
}

fn built(variant: Variant) -> &'static Path {
    static FULL: OnceLock<PathBuf> = OnceLock::new();
    static NO_MEM_V2: OnceLock<PathBuf> = OnceLock::new();
    let cell = match variant {
        Variant::Full => &FULL,
        Variant::NoMemV2 => &NO_MEM_V2,
    };
    cell.get_or_init(|| compile(variant))
}

/// One private copy of the fake library with its scenario.
pub struct FakeNvml {
    /// Holds the copy and its scenario; deleted when the test ends.
    _dir: tempfile::TempDir,
    pub lib: PathBuf,
}

impl FakeNvml {
    pub fn new(scenario: &str) -> Self {
        Self::with_variant(scenario, Variant::Full)
    }

    pub fn with_variant(scenario: &str, variant: Variant) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let lib = dir.path().join("libnvidia-ml.so.1");
        std::fs::copy(built(variant), &lib).expect("copy the fake NVML");
        std::fs::write(dir.path().join("fake_nvml_scenario.txt"), scenario)
            .expect("write the scenario");
        FakeNvml { _dir: dir, lib }
    }
}
