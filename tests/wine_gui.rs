//! The desktop app of the Windows build starts under Wine on a virtual X display (Xvfb), opens
//! its window titled "VRAM Doctor" on the planner, draws it, and keeps running. The screenshot
//! it takes is left at `<target dir>/tmp/wine/planner-windows.png`; the README's "on Windows"
//! picture (`assets/screenshots/planner-windows.png`) is a copy of it.
//!
//! Needs Wine and the `.exe` (`tests/common/wine.rs`) and Debian's `xvfb`, `imagemagick`
//! (`import`, `convert`) and `xdotool`; without them it says so, and fails under CI=true.
//! What the planner shows is checked pixel by pixel on Linux (tests/ui_snapshots.rs); here the
//! check is that the Windows build gets that far: a window of the app's size, drawn with many
//! colours (text and bars, not a blank or an error box), still up 10 s after it first drew.

#[path = "common/programs.rs"]
mod programs;
#[path = "common/wine.rs"]
mod wine;
#[path = "common/wine_window.rs"]
mod wine_window;

use std::path::Path;
use std::process::Command;
use std::time::Duration;
use wine_window::{have_display_tools, open};

fn geometry(display: &str, window: &str) -> (u32, u32) {
    let out = Command::new("xdotool")
        .args(["getwindowgeometry", "--shell", window])
        .env("DISPLAY", display)
        .output()
        .expect("xdotool getwindowgeometry");
    let text = String::from_utf8_lossy(&out.stdout);
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (get("WIDTH="), get("HEIGHT="))
}

/// The screen as RGB pixels (ImageMagick's `import` as a binary PPM, P6).
fn grab(display: &str) -> (u32, u32, Vec<u8>) {
    let out = Command::new("import")
        .args(["-window", "root", "-depth", "8", "ppm:-"])
        .env("DISPLAY", display)
        .output()
        .expect("run import");
    assert!(out.status.success(), "import failed: {out:?}");
    let b = out.stdout;
    // P6\n<w> <h>\n<max>\n<data>, fields separated by whitespace.
    let mut fields = Vec::new();
    let mut i = 0;
    while fields.len() < 4 {
        while b[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while !b[i].is_ascii_whitespace() {
            i += 1;
        }
        fields.push(String::from_utf8_lossy(&b[start..i]).into_owned());
    }
    assert_eq!(fields[0], "P6");
    let (w, h): (u32, u32) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
    let data = b[i + 1..].to_vec();
    assert_eq!(data.len(), (w * h * 3) as usize, "a {w}x{h} PPM");
    (w, h, data)
}

fn distinct_colours(rgb: &[u8]) -> usize {
    let mut seen = std::collections::HashSet::new();
    for px in rgb.chunks_exact(3) {
        seen.insert([px[0], px[1], px[2]]);
    }
    seen.len()
}

#[test]
fn the_app_starts_under_wine_and_draws_the_planner() {
    let Some(w) = wine::wine() else { return };
    if !have_display_tools() {
        return;
    }
    let mut r = open(w, &["--tab", "planner"], "gui");
    let (ww, wh) = geometry(&r.display, &r.window);
    assert!(
        ww >= 640 && wh >= 420,
        "the window is {ww}x{wh}, smaller than the app's minimum 640x420"
    );

    // Drawn: many colours on the screen (text, bars, the plan), waited for up to 90 s.
    let drawn = loop {
        let (_, _, rgb) = grab(&r.display);
        let n = distinct_colours(&rgb);
        if n >= 64 {
            break n;
        }
        assert!(
            r.started.elapsed() < Duration::from_secs(210),
            "the window shows only {n} colours after {:?}: not drawn; the app's log:\n{}",
            r.started.elapsed(),
            r.log()
        );
        std::thread::sleep(Duration::from_secs(2));
    };
    // Let the first plan finish and settle, then check the app is still running.
    std::thread::sleep(Duration::from_secs(10));
    r.assert_up("after drawing");
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wine/planner-windows.png");
    let saved = Command::new("import")
        .args(["-window", &r.window])
        .arg(&shot)
        .env("DISPLAY", &r.display)
        .status()
        .expect("run import");
    assert!(saved.success(), "saving the screenshot failed");
    eprintln!(
        "window {ww}x{wh}, {drawn} colours; screenshot: {}",
        shot.display()
    );
}
