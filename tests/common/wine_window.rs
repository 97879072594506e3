//! The Windows build's window under Wine on its own virtual X display (Xvfb), for
//! tests/wine_gui.rs and tests/wine_appdata.rs. Each of those runs one app in its own test
//! process: two apps started one after the other from one test process never showed the second
//! window within 120 s (seen here; either alone passes in ~15 s).
//!
//! Include with `#[path = "common/wine_window.rs"] mod wine_window;` beside `mod programs;` and
//! `mod wine;`.

// Each test binary uses different parts of this file.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills a child when the test ends, however it ends.
pub struct Reaper(pub Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Xvfb on a display number it picks itself (`-displayfd`), so parallel runs never collide.
pub fn xvfb() -> (Reaper, String) {
    let mut child = Command::new("Xvfb")
        .args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            "1280x800x24",
            "-nolisten",
            "tcp",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start Xvfb");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("Xvfb prints its display number");
    let display = format!(":{}", line.trim());
    assert!(line.trim().parse::<u32>().is_ok(), "Xvfb said {line:?}");
    (Reaper(child), display)
}

/// The id of the app's top-level window, once it is mapped.
pub fn find_window(display: &str) -> Option<String> {
    let out = Command::new("xdotool")
        .args(["search", "--onlyvisible", "--name", "^VRAM Doctor$"])
        .env("DISPLAY", display)
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(str::to_owned)
}

/// The app under Wine on its own virtual display, its window found.
pub struct Running {
    pub app: Reaper,
    pub display: String,
    pub window: String,
    pub log: std::path::PathBuf,
    pub started: Instant,
    // Dropped after the app: the display outlives it.
    _xvfb: Reaper,
    wine: &'static crate::wine::Wine,
}

impl Drop for Running {
    /// Ends the app and every Wine process of the prefix (`wineserver -k`, then waits for the
    /// server to go): killing the `wine` process alone left the next test's app without a window
    /// for 120 s (seen here).
    fn drop(&mut self) {
        let _ = self.app.0.kill();
        let _ = self.app.0.wait();
        for arg in ["-k", "-w"] {
            let mut c = Command::new("wineserver");
            let _ = self.wine.env(&mut c).arg(arg).status();
        }
    }
}

impl Running {
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Panics, with the app's log, when the app is no longer running.
    pub fn assert_up(&mut self, when: &str) {
        if let Ok(Some(status)) = self.app.0.try_wait() {
            panic!("the app exited {when}: {status}; its log:\n{}", self.log());
        }
    }
}

/// Xvfb, ImageMagick and xdotool are there (else said, and a failure under CI=true).
pub fn have_display_tools() -> bool {
    crate::programs::present(
        &[
            ("Xvfb", "-help"),
            ("import", "-version"),
            ("xdotool", "version"),
        ],
        "Debian packages xvfb, imagemagick, xdotool; .ci/run installs them: the Wine GUI test did not run",
    )
}

/// Starts `vram-doctor.exe ARGS` on a new display and waits for its window; `name` names the
/// log file (`<target tmp>/wine/NAME.log`).
pub fn open(w: &'static crate::wine::Wine, args: &[&str], name: &str) -> Running {
    let (xvfb, display) = xvfb();
    let log = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("wine/{name}.log"));
    let app = w
        .command(args)
        .env("DISPLAY", &display)
        .env_remove("WAYLAND_DISPLAY")
        // The OS config folder, not a test override: the point is Windows' own %APPDATA%.
        .env_remove("VRAM_DOCTOR_CONFIG_DIR")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("start wine");
    let mut r = Running {
        app: Reaper(app),
        display,
        window: String::new(),
        log,
        started: Instant::now(),
        _xvfb: xvfb,
        wine: w,
    };
    // Wine's first start of a window can take a while on a busy 2-core machine.
    loop {
        if let Some(id) = find_window(&r.display) {
            r.window = id;
            return r;
        }
        r.assert_up("before opening its window");
        assert!(
            r.started.elapsed() < Duration::from_secs(120),
            "no window titled \"VRAM Doctor\" after 120 s; the app's log:\n{}",
            r.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}
