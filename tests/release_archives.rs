//! The archives of the release command (`tools/release.sh`, issue 20): both are there, each holds
//! one folder with the binary and the documents the script's header lists, `SHA256SUMS` verifies
//! them, and the unpacked Linux binary runs.
//!
//! They are looked for in `target/dist/` (where `.ci/run` packs them with
//! `tools/release.sh --out target/dist`) or in `$VRAM_DOCTOR_DIST`. When they are absent, or
//! older than the sources (packed from another tree), the test says which command makes them and
//! does not run — and fails under CI=true.

#[path = "common/programs.rs"]
mod programs;
#[path = "common/sources.rs"]
mod sources;

use std::path::{Path, PathBuf};
use std::process::Command;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const MAKE: &str = "tools/release.sh --out target/dist";
/// The documents every archive carries besides the binary (tools/release.sh, `stage`).
const DOCUMENTS: [&str; 5] = [
    "README.md",
    "LICENSE-MIT",
    "LICENSE-APACHE",
    "FONT-LICENSE-OFL.txt",
    "THIRD-PARTY-LICENSES.txt",
];

fn dist() -> PathBuf {
    std::env::var_os("VRAM_DOCTOR_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dist"))
}

/// The two archive names, or `None` after saying what is missing (a failure under CI=true).
fn archives() -> Option<(PathBuf, [String; 2])> {
    let dir = dist();
    let names = [
        format!("vram-doctor-{VERSION}-linux-x86_64.tar.gz"),
        format!("vram-doctor-{VERSION}-windows-x86_64.zip"),
    ];
    let missing: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .chain(["SHA256SUMS"])
        .filter(|n| !dir.join(n).is_file())
        .collect();
    let msg = if !missing.is_empty() {
        format!(
            "{} missing in {} (`{MAKE}`; .ci/run runs it): the release archives were not checked",
            missing.join(", "),
            dir.display()
        )
    } else if let Some(old) = names
        .iter()
        .find(|n| sources::modified(&dir.join(n)) < sources::newest())
    {
        format!(
            "{} is older than the sources (`{MAKE}` packs them again): the release archives were not checked",
            dir.join(old).display()
        )
    } else {
        return Some((dir, names));
    };
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
    eprintln!("SKIPPED: {msg}");
    None
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Checks the entry list of one archive: one top folder named after the archive, holding
/// exactly the binary and the documents.
fn check_entries(archive: &str, entries: &str, binary: &str) {
    let folder = archive
        .strip_suffix(".tar.gz")
        .or_else(|| archive.strip_suffix(".zip"))
        .unwrap();
    let mut files: Vec<&str> = entries
        .lines()
        .map(|l| l.trim_end_matches('/'))
        .filter(|l| !l.is_empty() && *l != folder)
        .collect();
    files.sort();
    let mut want: Vec<String> = DOCUMENTS
        .iter()
        .chain(std::iter::once(&binary))
        .map(|f| format!("{folder}/{f}"))
        .collect();
    want.sort();
    assert_eq!(files, want, "{archive}: its entries");
}

/// One member of a zip archive, read by Python's zipfile (which also checks its CRC).
fn zip_member(zip: &Path, name: &str) -> Vec<u8> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))",
        ])
        .arg(zip)
        .arg(name)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "reading {name} from {}: {}",
        zip.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The packed `.exe` is a 64-bit x86 Windows program of the GUI subsystem (no console window of
/// its own; `windows_subsystem = "windows"` in src/main.rs). Fields from Microsoft's PE format
/// specification: `e_lfanew` at 0x3C, the "PE\0\0" signature, COFF `Machine` 0x8664 (AMD64), the
/// optional header's magic 0x20B (PE32+) and its `Subsystem` at offset 68, 2 for
/// IMAGE_SUBSYSTEM_WINDOWS_GUI.
fn check_windows_gui_exe(exe: &[u8]) {
    let u16_at = |o: usize| exe.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    assert_eq!(
        exe.get(..2),
        Some(&b"MZ"[..]),
        "vram-doctor.exe: no MZ header"
    );
    let pe = exe
        .get(0x3C..0x40)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .unwrap();
    assert_eq!(
        exe.get(pe..pe + 4),
        Some(&b"PE\0\0"[..]),
        "vram-doctor.exe: no PE signature"
    );
    assert_eq!(u16_at(pe + 4), Some(0x8664), "vram-doctor.exe: not x86-64");
    let optional = pe + 24;
    assert_eq!(u16_at(optional), Some(0x20B), "vram-doctor.exe: not PE32+");
    assert_eq!(
        u16_at(optional + 68),
        Some(2),
        "vram-doctor.exe: not a GUI-subsystem program (it would open a console window)"
    );
}

#[test]
fn both_archives_hold_the_binary_and_documents_and_their_checksums_verify() {
    if !programs::present(
        &[
            ("tar", "--version"),
            ("python3", "--version"),
            ("sha256sum", "--version"),
        ],
        "Debian's tar, python3 and coreutils",
    ) {
        return;
    }
    let Some((dir, [linux, windows])) = archives() else {
        return;
    };
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
    for name in [&linux, &windows] {
        assert!(
            sums.lines().any(|l| l.ends_with(&format!("  {name}"))),
            "SHA256SUMS does not list {name}:\n{sums}"
        );
    }
    run(Command::new("sha256sum")
        .arg("-c")
        .arg("SHA256SUMS")
        .current_dir(&dir));

    let tar_list = run(Command::new("tar").arg("-tzf").arg(dir.join(&linux)));
    check_entries(&linux, &tar_list, "vram-doctor");
    let zip_list = run(Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))",
        ])
        .arg(dir.join(&windows)));
    check_entries(&windows, &zip_list, "vram-doctor.exe");
    let wfolder = windows.strip_suffix(".zip").unwrap();
    let exe = zip_member(&dir.join(&windows), &format!("{wfolder}/vram-doctor.exe"));
    check_windows_gui_exe(&exe);
    let readme = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(
        zip_member(&dir.join(&windows), &format!("{wfolder}/README.md")) == readme,
        "{windows}: its README.md is not this checkout's"
    );

    // The packed Linux binary runs and is this version.
    let unpacked = tempfile::tempdir().unwrap();
    run(Command::new("tar")
        .arg("-xzf")
        .arg(dir.join(&linux))
        .arg("-C")
        .arg(unpacked.path()));
    let folder = linux.strip_suffix(".tar.gz").unwrap();
    let binary = unpacked.path().join(folder).join("vram-doctor");
    assert!(
        std::fs::read(unpacked.path().join(folder).join("README.md")).unwrap() == readme,
        "{linux}: its README.md is not this checkout's"
    );
    let version = run(Command::new(&binary).arg("--version"));
    assert!(
        version.contains(VERSION),
        "{} --version printed {version:?}, not {VERSION}",
        binary.display()
    );
    // And it lists the same presets as the binary this test was built with.
    let args = ["presets", "list", "gpus"];
    let packed = run(Command::new(&binary).args(args));
    let built = run(Command::new(env!("CARGO_BIN_EXE_vram-doctor")).args(args));
    assert!(
        packed.lines().count() > 1,
        "the packed binary listed no GPUs: {packed}"
    );
    assert_eq!(
        packed, built,
        "the packed binary's GPU presets differ from the sources'"
    );
}
