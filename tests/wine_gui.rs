//! The desktop app of the Windows build starts under Wine on a virtual X display (Xvfb), opens
//! its window titled "VRAM Doctor" on the planner, draws it, and keeps running. The screenshot
//! it takes is left at `<target dir>/tmp/wine/planner-windows.png`; the README's "on Windows"
//! picture (`assets/screenshots/planner-windows.png`) is a copy of it. A presets file in
//! `%APPDATA%` that cannot be read is set aside unchanged, and the app keeps running.
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

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills a child when the test ends, however it ends.
struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Xvfb on a display number it picks itself (`-displayfd`), so parallel runs never collide.
fn xvfb() -> (Reaper, String) {
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
fn find_window(display: &str) -> Option<String> {
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

/// The app under Wine on its own virtual display, its window found.
struct Running {
    app: Reaper,
    display: String,
    window: String,
    log: std::path::PathBuf,
    started: Instant,
    // Dropped last: the display outlives the app.
    _xvfb: Reaper,
}

impl Running {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Panics, with the app's log, when the app is no longer running.
    fn assert_up(&mut self, when: &str) {
        if let Ok(Some(status)) = self.app.0.try_wait() {
            panic!("the app exited {when}: {status}; its log:\n{}", self.log());
        }
    }
}

/// Xvfb, ImageMagick and xdotool are there (else said, and a failure under CI=true).
fn have_display_tools() -> bool {
    programs::present(
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
fn open(w: &wine::Wine, args: &[&str], name: &str) -> Running {
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

/// The Windows convention of issue 20: the user's presets live in
/// `%APPDATA%\vram-doctor\config\user-presets.toml`, and one that cannot be read is renamed to
/// `user-presets.toml.corrupt-<time>` with its bytes kept (src/catalog/user/store.rs), never
/// deleted, while the app goes on. The catalog tab opens the file (src/ui/catalog/mod.rs).
#[test]
fn a_corrupt_presets_file_in_appdata_is_set_aside_and_the_app_keeps_running() {
    let Some(w) = wine::wine() else { return };
    if !have_display_tools() {
        return;
    }
    let config = w.appdata().join("vram-doctor").join("config");
    std::fs::create_dir_all(&config).unwrap();
    // A file left by an earlier run of this test would hide this one's copy.
    for e in std::fs::read_dir(&config).unwrap().flatten() {
        if e.file_name()
            .to_string_lossy()
            .starts_with("user-presets.toml")
        {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    let file = config.join("user-presets.toml");
    // Not TOML (an unclosed table header), with CRLF line ends and a non-ASCII name, as an
    // editor on Windows leaves it.
    let bytes = "[[gpu]\r\nname = \"Zoë's RTX 4070\"\r\nvram_gib = 12\r\n".as_bytes();
    std::fs::write(&file, bytes).unwrap();

    let mut r = open(w, &["--tab", "catalog"], "appdata");
    let aside = loop {
        let copies: Vec<_> = std::fs::read_dir(&config)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    n.to_string_lossy()
                        .starts_with("user-presets.toml.corrupt-")
                })
            })
            .collect();
        if let [one] = copies.as_slice() {
            break one.clone();
        }
        assert!(copies.len() < 2, "more than one copy set aside: {copies:?}");
        r.assert_up("before setting the file aside");
        assert!(
            r.started.elapsed() < Duration::from_secs(120),
            "{} was not set aside after {:?}; the app's log:\n{}",
            file.display(),
            r.started.elapsed(),
            r.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(
        std::fs::read(&aside).unwrap(),
        bytes,
        "{} does not hold the file's bytes",
        aside.display()
    );
    assert!(
        !file.exists(),
        "{} is still there beside its copy",
        file.display()
    );
    // The app goes on: still running, its window still there, a few seconds later.
    std::thread::sleep(Duration::from_secs(5));
    r.assert_up("after setting the file aside");
    assert!(
        find_window(&r.display).is_some(),
        "the window is gone after setting the file aside; the app's log:\n{}",
        r.log()
    );
}
