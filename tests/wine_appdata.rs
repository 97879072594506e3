//! The Windows convention of issue 20 under Wine: a presets file in Wine's own `%APPDATA%` that
//! cannot be read is set aside unchanged, and the app keeps running. Needs what
//! tests/wine_gui.rs needs (Wine, the `.exe`, Xvfb, ImageMagick, xdotool); without them it says
//! so, and fails under CI=true.

#[path = "common/programs.rs"]
mod programs;
#[path = "common/wine.rs"]
mod wine;
#[path = "common/wine_window.rs"]
mod wine_window;

use std::time::Duration;
use wine_window::{find_window, have_display_tools, open};

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
