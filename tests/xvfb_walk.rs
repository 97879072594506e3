//! The newcomer's three goals of issue 22 played in the real window: `tools/walk.py` starts this
//! build's app on a virtual X display (Xvfb) from a fresh profile, drives it with the mouse and
//! keyboard (xdotool) by the widgets' accessible labels, and checks that each goal (a Llama 3.1
//! 8B fine-tune's OOM on an RTX 3060 read by the doctor and opened in the planner; SDXL and Flux
//! in ComfyUI on an 8 GB RTX 4060; Cyberpunk 2077 at 1440p with ray tracing) ends with a
//! verdict that agrees with its own figures and the window, and a plan that applies. Its
//! screenshots are left in `<target dir>/tmp/walk/` (the README's are copies, from the release
//! build).
//!
//! Needs python3 and Debian's `xvfb`, `xdotool` and `imagemagick` (`import`); without them it
//! says so, and fails under CI=true.

#[path = "common/programs.rs"]
mod programs;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

#[test]
fn the_three_goals_end_with_a_consistent_verdict_and_a_plan_that_applies() {
    if !programs::present(
        &[
            ("python3", "--version"),
            ("Xvfb", "-help"),
            ("import", "-version"),
            ("xdotool", "version"),
        ],
        "Debian packages python3, xvfb, imagemagick, xdotool; .ci/run installs them: the walk in the real window did not run",
    ) {
        return;
    }
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("walk");
    let started = Instant::now();
    let out = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/walk.py"))
        .arg("--app")
        .arg(env!("CARGO_BIN_EXE_vram-doctor"))
        .arg("--shots")
        .arg(&shots)
        .output()
        .expect("run tools/walk.py");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}(walk took {:.0} s)", started.elapsed().as_secs_f64());
    assert!(out.status.success(), "tools/walk.py failed:\n{text}");
    for goal in ["beginner", "comfyui", "gamer"] {
        assert!(
            text.contains(&format!("{goal}: done in")),
            "{goal} did not finish:\n{text}"
        );
        let png = shots.join(format!("walk-{goal}.png"));
        let len = std::fs::metadata(&png).map_or(0, |m| m.len());
        assert!(len > 10_000, "{}: {len} bytes", png.display());
    }
}
