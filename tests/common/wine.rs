//! Runs the Windows build (`vram-doctor.exe`, cross-built for `x86_64-pc-windows-gnu`) under Wine
//! for the `tests/wine_*.rs` tests (../shared/research/windows_wine.md).
//!
//! Needs `wine` (Debian package `wine`), `x86_64-w64-mingw32-gcc` (package `mingw-w64`) and the
//! `.exe`, found at `$VRAM_DOCTOR_WINDOWS_EXE` or in this target dir's
//! `x86_64-pc-windows-gnu/{release,debug}/`. `.ci/run` installs both packages and builds the exe
//! before `cargo test`. When one is missing, or the exe is older than the sources, the tests say
//! so and do not run — and fail under CI=true.
//!
//! Debian's Wine 8 lacks `bcryptprimitives.dll`, from which Rust's standard library imports
//! `ProcessPrng`; a stand-in built from `tests/wine/bcryptprimitives.c` goes on Wine's `PATH`
//! (`WINEPATH`), never next to the exe and never into a release. The Wine prefix lives in this
//! target dir's test temp folder, is created once (about 20 s) and reused.

// Each Wine test binary uses different parts of this file.
#![allow(dead_code)]

#[path = "sources.rs"]
mod sources;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The MinGW C compiler that builds the test DLLs.
pub const MINGW_CC: &str = "x86_64-w64-mingw32-gcc";
const WINDOWS_EXE_ENV: &str = "VRAM_DOCTOR_WINDOWS_EXE";

pub struct Wine {
    pub exe: PathBuf,
    prefix: PathBuf,
    /// Holds the stand-in `bcryptprimitives.dll`; on Wine's `PATH`.
    dll_dir: PathBuf,
}

/// Wine, the exe and the stand-in DLL, ready; `None` after saying what is missing (a failure
/// under CI=true).
pub fn wine() -> Option<&'static Wine> {
    static WINE: OnceLock<Result<Wine, String>> = OnceLock::new();
    match WINE.get_or_init(set_up) {
        Ok(w) => Some(w),
        Err(msg) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
            eprintln!("SKIPPED: {msg}");
            None
        }
    }
}

fn target_dir() -> PathBuf {
    // CARGO_TARGET_TMPDIR is `<target dir>/tmp`.
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target dir")
        .to_path_buf()
}

fn runs(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn find_exe() -> Result<PathBuf, String> {
    let build = "cargo build --release --target x86_64-pc-windows-gnu";
    let exe = match std::env::var_os(WINDOWS_EXE_ENV) {
        Some(p) => PathBuf::from(p),
        None => ["release", "debug"]
            .iter()
            .map(|p| target_dir().join("x86_64-pc-windows-gnu").join(p).join("vram-doctor.exe"))
            .filter(|p| p.is_file())
            .max_by_key(|p| sources::modified(p))
            .ok_or_else(|| {
                format!("the Windows build is missing (`{build}`; .ci/run builds it): the Wine tests did not run")
            })?,
    };
    if !exe.is_file() {
        return Err(format!("{WINDOWS_EXE_ENV}={} is not a file", exe.display()));
    }
    if sources::modified(&exe) < sources::newest() {
        return Err(format!(
            "{} is older than the sources; rebuild it (`{build}`): the Wine tests did not run",
            exe.display()
        ));
    }
    Ok(exe)
}

/// Builds a DLL from C sources with MinGW into `dir`.
pub fn build_dll(sources: &[&Path], extra: &[&str], out: &Path) -> Result<(), String> {
    let tmp = out.with_extension(format!("{}.tmp", std::process::id()));
    let o = Command::new(MINGW_CC)
        .args(["-shared", "-O2", "-Wall", "-o"])
        .arg(&tmp)
        .args(sources)
        .args(extra)
        .output()
        .map_err(|e| format!("could not run {MINGW_CC}: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "{MINGW_CC} failed on {sources:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    std::fs::rename(&tmp, out).map_err(|e| format!("move {}: {e}", out.display()))
}

fn set_up() -> Result<Wine, String> {
    if !runs("wine", "--version") {
        return Err(
            "`wine` is missing (Debian package `wine`; .ci/run installs it): the Wine tests did not run"
                .into(),
        );
    }
    if !runs(MINGW_CC, "--version") {
        return Err(format!(
            "`{MINGW_CC}` is missing (Debian package `mingw-w64`; .ci/run installs it): the Wine tests did not run"
        ));
    }
    let exe = find_exe()?;
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wine");
    let dll_dir = base.join("dlls");
    std::fs::create_dir_all(&dll_dir).map_err(|e| e.to_string())?;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wine");
    build_dll(
        &[
            &src.join("bcryptprimitives.c"),
            &src.join("bcryptprimitives.def"),
        ],
        &["-ladvapi32"],
        &dll_dir.join("bcryptprimitives.dll"),
    )?;
    let w = Wine {
        exe,
        prefix: base.join("prefix"),
        dll_dir,
    };
    // Creates the prefix once (wineboot), before tests run the exe in parallel.
    let mut boot = Command::new("wineboot");
    let boot = w
        .env(&mut boot)
        .arg("--init")
        .output()
        .map_err(|e| format!("wineboot: {e}"))?;
    if !boot.status.success() {
        return Err(format!(
            "wineboot --init failed: {}",
            String::from_utf8_lossy(&boot.stderr)
        ));
    }
    Ok(w)
}

impl Wine {
    /// Wine's environment: the private prefix, no debug chatter, no Mono/Gecko installers, the
    /// stand-in DLL on Wine's PATH.
    pub fn env<'a>(&self, c: &'a mut Command) -> &'a mut Command {
        c.env("WINEPREFIX", &self.prefix)
            .env("WINEDEBUG", "-all")
            .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
            .env("WINEPATH", Wine::windows_path(&self.dll_dir))
    }

    /// `wine vram-doctor.exe ARGS`.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("wine");
        self.env(&mut c).arg(&self.exe).args(args);
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run wine")
    }

    /// This prefix's `%APPDATA%` (the roaming application data folder, where the app keeps its
    /// config) as a path of this machine: Wine's `cmd` expands the variable and `winepath -u`
    /// maps it, so the test follows whatever user folder layout this Wine version makes.
    pub fn appdata(&self) -> PathBuf {
        let mut cmd = Command::new("wine");
        let out = self
            .env(&mut cmd)
            .args(["cmd", "/c", "echo", "%APPDATA%"])
            .output()
            .expect("run wine cmd");
        let windows = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        assert!(
            out.status.success() && windows.contains(':') && !windows.contains('%'),
            "wine cmd /c echo %APPDATA% printed {windows:?}"
        );
        let mut cmd = Command::new("winepath");
        let out = self
            .env(&mut cmd)
            .arg("-u")
            .arg(&windows)
            .output()
            .expect("run winepath");
        let unix = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        assert!(
            out.status.success() && unix.starts_with('/'),
            "winepath -u {windows} printed {unix:?}"
        );
        PathBuf::from(unix)
    }

    /// A Windows path for a file of this machine: Wine maps the Unix root to drive Z:.
    pub fn windows_path(p: &Path) -> String {
        format!("Z:{}", p.display()).replace('/', "\\")
    }
}
