//! `vram-doctor run -- CMD` end to end: the real binary watches small real child programs (shell
//! scripts) that "allocate" against the fake NVML by writing their pid and MiB into a file the
//! fake reads at every sample (`gpuN.procs_dir`, tests/fake_nvml/fake_nvml.c), leak steadily,
//! jump at the first step, print an out-of-memory message or exit cleanly.
#![cfg(target_os = "linux")]

#[path = "common/fake_nvml.rs"]
mod fake_nvml;

use fake_nvml::FakeNvml;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use vram_doctor::telemetry::Snapshot;

/// Shell function the scripts use: `alloc MIB` sets this process's memory on the fake GPU.
const ALLOC: &str = r#"alloc() { printf '%s %s\n' $$ "$1" > "$PROCS/.$$" && mv "$PROCS/.$$" "$PROCS/$$"; }
"#;

/// A PyTorch OOM whose figures say only that the memory is full (symptoms.md §1.2: plain
/// shortage), so what caused it must come from the timeline.
const PLAIN_OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 23.99 GiB of which 120.00 MiB is free. Including non-PyTorch memory, this process has 23.10 GiB memory in use. Of the allocated memory 22.90 GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.";

/// A fragmented cache (the research sample P6): the top fix is an environment setting.
const FRAGMENTED_OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.70 GiB. GPU 0 has a total capacity of 6.00 GiB of which 0 bytes is free. Of the allocated memory 2.93 GiB is allocated by PyTorch, and 2.30 GiB is reserved by PyTorch but unallocated.";

struct Setup {
    fake: FakeNvml,
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("procs")).unwrap();
        let fake = FakeNvml::new(&format!(
            "gpu0.name = Fake RTX 4090\ngpu0.used_mib = 500\ngpu0.procs = 77:300:Xorg\ngpu0.procs_dir = {}\n",
            dir.path().join("procs").display()
        ));
        Setup { fake, dir }
    }

    fn script(&self, name: &str, body: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, format!("{ALLOC}{body}")).unwrap();
        p
    }

    fn command(&self, args: &[&str], script: &Path) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_vram-doctor"));
        c.arg("run")
            .args([
                "--nvml-lib",
                self.fake.lib.to_str().unwrap(),
                "--interval",
                "50",
            ])
            .args(args)
            .arg("--")
            .arg("sh")
            .arg(script)
            .env("PROCS", self.dir.path().join("procs"))
            .env_remove("PYTORCH_CUDA_ALLOC_CONF")
            .env_remove("VRAM_DOCTOR_NVML_LIB");
        c
    }

    fn run(&self, args: &[&str], body: &str) -> Output {
        let s = self.script("child.sh", body);
        self.command(args, &s)
            .stdin(Stdio::null())
            .output()
            .expect("run vram-doctor")
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The `--json` object: the last line of stdout.
fn json(out: &Output) -> serde_json::Value {
    let stdout = text(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\nstderr: {}", text(&out.stderr)))
}

fn facts(j: &serde_json::Value) -> Vec<String> {
    j["timeline"]["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["fact"].as_str().unwrap().to_string())
        .collect()
}

fn top_cause(j: &serde_json::Value) -> String {
    j["diagnosis"]["causes"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_clean_run_passes_its_output_and_status_through_and_shows_its_peak() {
    let s = Setup::new();
    let out = s.run(
        &["--json"],
        "alloc 2000\nsleep 0.6\necho 'line one'\nprintf 'no newline'\necho ' then one' >&2\nexit 0\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("line one\nno newline"),
        "unchanged: {stdout:?}"
    );
    let j = json(&out);
    assert_eq!(j["failed"], false);
    assert_eq!(j["exit_code"], 0);
    assert!(j.get("stop").is_none(), "no diagnosis for a clean run: {j}");
    let peak = &j["timeline"]["peak"];
    assert_eq!(
        peak["bytes"].as_u64(),
        Some(2000 << 20),
        "the run's own memory: {j}"
    );
    assert_eq!(peak["basis"], "processes");
    assert_eq!(
        peak["card_bytes"].as_u64(),
        Some((500 + 2000 + 300) << 20),
        "the card: base + run + reserved"
    );
    assert!(
        text(&out.stderr).contains("then one"),
        "stderr passes through"
    );
    assert!(
        text(&out.stderr).contains("Peak: the run's processes held 1.95 GiB"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn exit_codes_and_signals_pass_through() {
    let s = Setup::new();
    assert_eq!(s.run(&[], "exit 7\n").status.code(), Some(7));
    assert_eq!(
        s.run(&[], "kill -9 $$\n").status.code(),
        Some(137),
        "128 + SIGKILL"
    );
}

#[test]
fn stdin_passes_through() {
    let s = Setup::new();
    let script = s.script("echo.sh", "read x\necho \"got $x\"\n");
    let mut child = s
        .command(&[], &script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(text(&out.stdout), "got hello\n");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_command_that_cannot_start_gets_one_line_and_exit_2() {
    // A library that loads and reports no GPU (a missing one is a bad flag, exit 2).
    let no_gpu = FakeNvml::new("gpus = 0\n");
    let out = Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args([
            "run",
            "--nvml-lib",
            no_gpu.lib.to_str().unwrap(),
            "--",
            "/nonexistent/program",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot start /nonexistent/program"), "{err}");
}

/// A report folder the system cannot make (under a file) is the machine's failure: exit 1, one
/// line naming the folder, and the command is not started (before: exit 2, as for a typo).
#[test]
fn a_report_folder_that_cannot_be_made_exits_1() {
    let no_gpu = FakeNvml::new("gpus = 0\n");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    let report = file.join("report");
    let out = Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args([
            "run",
            "--nvml-lib",
            no_gpu.lib.to_str().unwrap(),
            "--report",
        ])
        .arg(&report)
        .args(["--", "echo", "should-not-run"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("--report {}", report.display())),
        "{err}"
    );
    assert!(!text(&out.stdout).contains("should-not-run"));
}

#[test]
fn a_steady_leak_before_the_oom_is_diagnosed_as_a_leak_with_its_rate() {
    let s = Setup::new();
    let dir = s.dir.path().join("report");
    let report = dir.to_str().unwrap();
    let body = format!(
        "m=2000\ni=0\nwhile [ $i -lt 60 ]; do alloc $m; m=$((m + 150)); i=$((i + 1)); sleep 0.1; done\necho 'Traceback (most recent call last):' >&2\necho '{PLAIN_OOM}' >&2\nexit 1\n"
    );
    let out = s.run(&["--json", "--report", report], &body);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let j = json(&out);
    assert_eq!(j["failed"], true);
    assert!(
        j["failure_line"]
            .as_str()
            .unwrap()
            .contains("CUDA out of memory")
    );
    assert!(facts(&j).contains(&"timeline_leak".to_string()), "{j}");
    assert_eq!(top_cause(&j), "leak_history", "{j}");
    let leak = j["timeline"]["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["fact"] == "timeline_leak")
        .unwrap()["text"]
        .as_str()
        .unwrap()
        .to_string();
    // 150 MiB every 0.1 s plus the shell's own time: tens of GiB a minute.
    assert!(
        leak.contains("per minute") && leak.contains("a leak"),
        "{leak}"
    );
    assert!(
        stderr.contains("Likely causes") && stderr.contains(&leak),
        "{stderr}"
    );

    // The report: recording, Markdown, plot.
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("## Diagnosis") && md.contains("a leak") && md.contains("memory.png"),
        "{md}"
    );
    let rec = std::fs::read_to_string(dir.join("recording.jsonl")).unwrap();
    let snaps: Vec<Snapshot> = rec
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(snaps.len() >= 50, "10+ Hz over 6 s: {}", snaps.len());
    let max_used = snaps
        .iter()
        .filter_map(|s| s.gpus[0].memory)
        .map(|m| m.used)
        .max()
        .unwrap();
    assert!(
        max_used >= (500 + 10_000) << 20,
        "the recording saw the rise: {max_used}"
    );
    let png = std::fs::read(dir.join("memory.png")).unwrap();
    let img = decode_png(&png);
    assert_eq!((img.width, img.height), (800, 360));
    let run_pixels = img.pixels.iter().filter(|&&p| p == 3).count();
    assert!(run_pixels > 500, "the run's line is drawn: {run_pixels}");
    let mut colours: Vec<u8> = img.pixels.clone();
    colours.sort_unstable();
    colours.dedup();
    assert!(
        colours.len() >= 5,
        "background, grid, axis, run, card, capacity: {colours:?}"
    );
    // The run's line rises from left to right: its pixels in the right third sit higher.
    let mean_y = |x0: u32, x1: u32| {
        let ys: Vec<u32> = (0..img.height)
            .flat_map(|y| (x0..x1).map(move |x| (x, y)))
            .filter(|&(x, y)| img.pixels[(y * img.width + x) as usize] == 3)
            .map(|(_, y)| y)
            .collect();
        ys.iter().sum::<u32>() as f64 / ys.len().max(1) as f64
    };
    assert!(mean_y(550, 780) < mean_y(70, 300), "rising line");
    let run_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run_json["failed"], true);
    // The same directory again would mix two runs: refused before the command starts.
    let again = s.run(&["--report", report], "echo should-not-run\n");
    assert_eq!(again.status.code(), Some(2));
    assert!(!text(&again.stdout).contains("should-not-run"));
}

#[test]
fn a_jump_at_the_first_step_points_at_the_step_not_a_leak() {
    let s = Setup::new();
    let body =
        format!("alloc 6000\nsleep 1.5\nalloc 23000\nsleep 0.4\necho '{PLAIN_OOM}' >&2\nexit 1\n");
    let out = s.run(&["--json"], &body);
    let j = json(&out);
    let f = facts(&j);
    assert!(f.contains(&"timeline_first_step_spike".to_string()), "{j}");
    assert!(!f.contains(&"timeline_leak".to_string()), "{j}");
    let top = top_cause(&j);
    assert!(
        ["optimizer_states", "activations"].contains(&top.as_str()),
        "{top}: {j}"
    );
    let path = j["path"].to_string();
    assert!(path.contains("At the first training step"), "{path}");
    assert_eq!(
        j["timeline"]["peak"]["bytes"].as_u64(),
        Some(23000 << 20),
        "{j}"
    );
}

#[test]
fn retry_on_oom_sets_the_top_fix_when_it_is_an_environment_setting() {
    let s = Setup::new();
    let body = format!(
        "alloc 3000\nsleep 0.3\ncase \"$PYTORCH_CUDA_ALLOC_CONF\" in\n  *expandable_segments:True*) echo \"fixed: $PYTORCH_CUDA_ALLOC_CONF\"; exit 0 ;;\nesac\necho '{FRAGMENTED_OOM}' >&2\nexit 1\n"
    );
    let out = s.run(&["--retry-on-oom", "--json"], &body);
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the second run's status: {stderr}"
    );
    assert!(
        stderr.contains("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (was unset)"),
        "{stderr}"
    );
    assert!(text(&out.stdout).contains("fixed: expandable_segments:True"));
    let j = json(&out);
    assert_eq!(j["retry"]["changed"]["var"], "PYTORCH_CUDA_ALLOC_CONF");
    assert_eq!(j["retry"]["run"]["failed"], false);
    // Without the flag: no second run.
    let once = s.run(&[], &body);
    assert_eq!(once.status.code(), Some(1));
    assert!(!text(&once.stdout).contains("fixed"));
    // A top fix that is not an environment setting: said, not retried.
    let leak = s.run(
        &["--retry-on-oom"],
        &format!("alloc 2000\nsleep 0.3\necho '{PLAIN_OOM}' >&2\nexit 1\n"),
    );
    assert_eq!(leak.status.code(), Some(1));
    assert!(
        text(&leak.stderr).contains("not retrying"),
        "{}",
        text(&leak.stderr)
    );
}

#[test]
fn without_per_process_figures_the_whole_card_is_used_and_said() {
    let s = Setup::new();
    std::fs::write(
        s.fake.lib.with_file_name("fake_nvml_scenario.txt"),
        format!(
            "gpu0.used_mib = 500\ngpu0.proc_mem_na = 1\ngpu0.procs_dir = {}\n",
            s.dir.path().join("procs").display()
        ),
    )
    .unwrap();
    let out = s.run(&["--json"], "alloc 1000\nsleep 0.5\n");
    let j = json(&out);
    assert_eq!(j["timeline"]["peak"]["basis"], "whole_card", "{j}");
    assert!(
        j["timeline"]["notes"]
            .to_string()
            .contains("no per-process figures"),
        "{j}"
    );
}

#[test]
fn without_a_gpu_the_command_still_runs_and_it_says_so() {
    // A library that loads and reports no GPU (a missing one is a bad flag, exit 2).
    let no_gpu = FakeNvml::new("gpus = 0\n");
    let out = Command::new(env!("CARGO_BIN_EXE_vram-doctor"))
        .args([
            "run",
            "--nvml-lib",
            no_gpu.lib.to_str().unwrap(),
            "--json",
            "--",
            "sh",
            "-c",
            "echo hi; exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stdout).starts_with("hi\n"));
    let j = json(&out);
    assert!(
        j["timeline"]["notes"]
            .to_string()
            .contains("no GPU readings"),
        "{j}"
    );
}

fn alive(pid: u32) -> bool {
    // A zombie is gone for this purpose: it runs nothing and holds no GPU memory.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| vram_doctor::watch::tree::parse_stat(&s))
        .is_some_and(|s| s.state != 'Z' && s.state != 'X')
}

fn wait_for_pids(path: &Path, n: usize) -> Vec<u32> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let pids: Vec<u32> = std::fs::read_to_string(path)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.len() >= n {
            return pids;
        }
        assert!(
            Instant::now() < until,
            "the script did not start its processes"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigterm_to_the_watcher_ends_the_child_and_every_descendant() {
    let s = Setup::new();
    let pids = s.dir.path().join("pids");
    // A grandchild in the child's group, one in a session of its own, and the child itself.
    let script = s.script(
        "tree.sh",
        &format!(
            "alloc 1000\nsleep 300 &\na=$!\nsetsid sleep 300 &\nb=$!\necho \"$$ $a $b\" > {0}.tmp && mv {0}.tmp {0}\nwait\n",
            pids.display()
        ),
    );
    let mut watcher = s
        .command(&[], &script)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let all = wait_for_pids(&pids, 3);
    assert!(all.iter().all(|p| alive(*p)), "{all:?}");
    Command::new("kill")
        .args(["-TERM", &watcher.id().to_string()])
        .status()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(st) = watcher.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < until, "the watcher did not end");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        status.code(),
        Some(128 + 15),
        "the child's status: killed by the forwarded SIGTERM"
    );
    let left: Vec<u32> = all.iter().copied().filter(|p| alive(*p)).collect();
    assert!(
        left.is_empty(),
        "still running after the watcher ended: {left:?} of {all:?}"
    );
}

#[test]
fn a_child_that_exits_leaves_no_background_process_behind() {
    let s = Setup::new();
    let pids = s.dir.path().join("pids");
    let out = s.run(
        &[],
        &format!("sleep 300 &\necho $! > {}\nexit 0\n", pids.display()),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let left = wait_for_pids(&pids, 1);
    assert!(
        !alive(left[0]),
        "the background sleep {} outlived the watcher",
        left[0]
    );
}

/// A palette PNG as written by `vram_doctor::png`: checks every chunk's CRC and reads the
/// stored (uncompressed) deflate blocks back.
struct Image {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
}

fn decode_png(b: &[u8]) -> Image {
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "signature");
    let mut at = 8;
    let (mut width, mut height, mut idat) = (0, 0, Vec::new());
    while at < b.len() {
        let len = u32::from_be_bytes(b[at..at + 4].try_into().unwrap()) as usize;
        let kind = &b[at + 4..at + 8];
        let data = &b[at + 8..at + 8 + len];
        let crc = u32::from_be_bytes(b[at + 8 + len..at + 12 + len].try_into().unwrap());
        let mut c = vram_doctor::png::Crc32::default();
        c.update(kind);
        c.update(data);
        assert_eq!(c.finish(), crc, "CRC of {}", String::from_utf8_lossy(kind));
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(data[0..4].try_into().unwrap());
                height = u32::from_be_bytes(data[4..8].try_into().unwrap());
                assert_eq!(&data[8..10], &[8, 3], "8-bit palette");
            }
            b"IDAT" => idat.extend_from_slice(data),
            _ => {}
        }
        at += 12 + len;
    }
    // zlib: 2-byte header, stored blocks, Adler-32.
    let mut raw = Vec::new();
    let mut p = 2;
    loop {
        let last = idat[p] & 1 == 1;
        assert_eq!(idat[p] >> 1 & 3, 0, "stored block");
        let len = u16::from_le_bytes([idat[p + 1], idat[p + 2]]) as usize;
        raw.extend_from_slice(&idat[p + 5..p + 5 + len]);
        p += 5 + len;
        if last {
            break;
        }
    }
    assert_eq!(
        u32::from_be_bytes(idat[p..p + 4].try_into().unwrap()),
        vram_doctor::png::adler32(&raw)
    );
    let mut pixels = Vec::new();
    for row in raw.chunks(width as usize + 1) {
        assert_eq!(row[0], 0, "filter none");
        pixels.extend_from_slice(&row[1..]);
    }
    assert_eq!(pixels.len(), (width * height) as usize);
    Image {
        width,
        height,
        pixels,
    }
}

#[test]
fn a_json_result_that_cannot_be_written_is_said_and_the_status_stands() {
    let s = Setup::new();
    let script = s.script("child.sh", "exit 3\n");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full, which Linux always has");
    let out = s
        .command(&["--json"], &script)
        .stdin(Stdio::null())
        .stdout(full)
        .output()
        .expect("run vram-doctor");
    assert_eq!(out.status.code(), Some(3), "the run's own status");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: the --json result was not written: cannot write to stdout"),
        "{err}"
    );
}
