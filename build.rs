//! Build script: for a Windows build, the `.exe`'s icon and version resource (what Explorer shows
//! in the file's properties and the taskbar shows for the window before the app sets its own).
//!
//! It writes a resource script and compiles it with MinGW's `windres` (Debian's `mingw-w64`,
//! `x86_64-w64-mingw32-windres`; `windres` on an MSYS2 machine; or `$WINDRES`) into a COFF object
//! linked into the binaries. Without `windres` the build still works and says the resource is
//! missing. Resource script syntax: Microsoft, "VERSIONINFO resource" and "ICON resource".
//! Other targets: nothing to do.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=assets/icon/vram-doctor.ico");
    println!("cargo:rerun-if-env-changed=WINDRES");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os != "windows" {
        return;
    }
    if env != "gnu" {
        println!(
            "cargo:warning=no icon or version resource: this build script uses MinGW's windres (target *-windows-gnu)"
        );
        return;
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let rc = out.join("vram-doctor.rc");
    std::fs::write(
        &rc,
        resource_script(&manifest.join("assets/icon/vram-doctor.ico")),
    )
    .expect("write the resource script");
    let obj = out.join("vram-doctor-resources.o");
    let mut tried = Vec::new();
    for windres in windres_candidates() {
        let ran = Command::new(&windres)
            .arg("-i")
            .arg(&rc)
            .args(["-O", "coff", "-o"])
            .arg(&obj)
            .status();
        match ran {
            Ok(s) if s.success() => {
                println!("cargo:rustc-link-arg-bins={}", obj.display());
                return;
            }
            Ok(s) => panic!("{windres} failed on {}: {s}", rc.display()),
            Err(_) => tried.push(windres),
        }
    }
    println!(
        "cargo:warning=no icon or version resource in the .exe: none of {} found (Debian: apt-get install mingw-w64)",
        tried.join(", ")
    );
}

fn windres_candidates() -> Vec<String> {
    match std::env::var("WINDRES") {
        Ok(w) if !w.is_empty() => vec![w],
        _ => vec!["x86_64-w64-mingw32-windres".into(), "windres".into()],
    }
}

/// The resource script: icon 1 (the one Explorer shows) and the version block, with the
/// version from Cargo.toml.
fn resource_script(icon: &Path) -> String {
    let version = std::env::var("CARGO_PKG_VERSION").expect("cargo sets it");
    let mut parts: Vec<u16> = version
        .split(['.', '-', '+'])
        .take(3)
        .map(|p| p.parse().unwrap_or(0))
        .collect();
    parts.resize(4, 0);
    let numeric = format!("{},{},{},{}", parts[0], parts[1], parts[2], parts[3]);
    let description = std::env::var("CARGO_PKG_DESCRIPTION").unwrap_or_default();
    let licence = std::env::var("CARGO_PKG_LICENSE").unwrap_or_default();
    // windres reads forward slashes on every host; a quote would end the string.
    let icon = icon
        .display()
        .to_string()
        .replace('\\', "/")
        .replace('"', "");
    let esc = |s: &str| s.replace('"', "\"\"");
    format!(
        r#"1 ICON "{icon}"
1 VERSIONINFO
FILEVERSION {numeric}
PRODUCTVERSION {numeric}
FILEFLAGSMASK 0x3f
FILEFLAGS 0
FILEOS 0x40004
FILETYPE 1
FILESUBTYPE 0
BEGIN
  BLOCK "StringFileInfo"
  BEGIN
    BLOCK "040904B0"
    BEGIN
      VALUE "CompanyName", "VRAM Doctor"
      VALUE "FileDescription", "VRAM Doctor: GPU memory planner, monitor and doctor"
      VALUE "FileVersion", "{version}"
      VALUE "InternalName", "vram-doctor"
      VALUE "LegalCopyright", "Licensed {licence}"
      VALUE "OriginalFilename", "vram-doctor.exe"
      VALUE "ProductName", "VRAM Doctor"
      VALUE "ProductVersion", "{version}"
      VALUE "Comments", "{comments}"
    END
  END
  BLOCK "VarFileInfo"
  BEGIN
    VALUE "Translation", 0x409, 1200
  END
END
"#,
        licence = esc(&licence),
        comments = esc(&description),
    )
}
