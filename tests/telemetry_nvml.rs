//! The NVML source against the fake `libnvidia-ml.so.1`: the real nvml-wrapper code path, no GPU.
//! Linux only: the fake is built as an ELF shared object with GNU linker flags.
#![cfg(target_os = "linux")]

#[path = "common/fake_nvml.rs"]
mod fake_nvml;

#[path = "common/fake_amd.rs"]
mod fake_amd;

use fake_amd::SECOND_VENDOR;
use fake_nvml::{FakeNvml, Variant};
use std::time::Duration;
use vram_doctor::telemetry::combined::Combined;
use vram_doctor::telemetry::detect::AlertKind;
use vram_doctor::telemetry::nvml::{NvmlSource, PCIE_EVERY};
use vram_doctor::telemetry::{
    GpuStatus, Probe, ProcessKind, Sampler, Session, Snapshot, Source, SourceKind, SourceState,
    ThrottleReason, detect_all,
};

const MIB: u64 = 1024 * 1024;

fn source(fake: &FakeNvml) -> NvmlSource {
    NvmlSource::new(Some(fake.lib.clone())).with_retry(Duration::ZERO)
}

fn run(fake: &FakeNvml, n: usize) -> Vec<Snapshot> {
    let mut s = source(fake);
    (0..n).map(|_| s.sample()).collect()
}

#[test]
fn reads_every_metric_of_two_gpus() {
    let fake = FakeNvml::new(
        "gpus = 2
         gpu0.name = Fake RTX 4090
         gpu0.total_mib = 24564
         gpu0.used_mib = 8000
         gpu0.reserved_mib = 300
         gpu0.util_gpu = 91
         gpu0.util_mem = 40
         gpu0.temp_c = 77
         gpu0.power_w = 390
         gpu0.power_limit_w = 450
         gpu0.clock_graphics = 2600
         gpu0.clock_mem = 10501
         gpu0.pcie_rx_kbps = 70000
         gpu0.pcie_tx_kbps = 3000
         gpu0.throttle = 0x24
         gpu0.procs = 4242:6000:python,77:100:Xorg
         gpu0.gprocs = 77:100:Xorg,88:250:firefox
         gpu1.name = Fake RTX 3060
         gpu1.total_mib = 12288
         gpu1.used_mib = 100
",
    );
    let s = run(&fake, 1).remove(0);
    assert_eq!((s.source, &s.state), (SourceKind::Nvml, &SourceState::Ok));
    assert_eq!(s.gpus.len(), 2);
    let g = &s.gpus[0];
    assert_eq!(g.name, "Fake RTX 4090");
    assert_eq!(
        g.uuid.as_deref(),
        Some("GPU-fa4e0000-0000-0000-0000-000000000000")
    );
    let m = g.memory.unwrap();
    assert_eq!(
        (m.total, m.used, m.reserved),
        (24564 * MIB, 8000 * MIB, Some(300 * MIB))
    );
    assert!(!m.used_includes_reserved);
    assert_eq!(
        (g.util_gpu_pct, g.util_mem_pct, g.temp_c),
        (Some(91), Some(40), Some(77))
    );
    assert_eq!((g.power_w, g.power_limit_w), (Some(390.0), Some(450.0)));
    assert_eq!(
        (g.clock_graphics_mhz, g.clock_mem_mhz),
        (Some(2600), Some(10501))
    );
    assert_eq!((g.pcie_rx_kbps, g.pcie_tx_kbps), (Some(70000), Some(3000)));
    assert_eq!(
        g.throttle.as_deref(),
        Some(&[ThrottleReason::SwPowerCap, ThrottleReason::SwThermal][..])
    );
    let procs = g.processes.as_ref().unwrap();
    assert_eq!(procs.len(), 3, "{procs:?}");
    let p = |pid| procs.iter().find(|p| p.pid == pid).unwrap();
    assert_eq!(
        (p(4242).name.as_deref(), p(4242).used, p(4242).kind),
        (Some("python"), Some(6000 * MIB), ProcessKind::Compute)
    );
    assert_eq!(
        p(77).kind,
        ProcessKind::Both,
        "in both lists: one row, not two"
    );
    assert_eq!(p(77).used, Some(100 * MIB), "the same figure, not summed");
    assert_eq!(p(88).kind, ProcessKind::Graphics);
    assert_eq!(s.gpus[1].name, "Fake RTX 3060");
    assert_eq!(s.gpus[1].memory.unwrap().total, 12288 * MIB);
    assert_eq!(
        s.gpus[1].processes.as_deref(),
        Some(&[][..]),
        "nothing running is an empty list"
    );
}

#[test]
fn old_driver_without_memory_v2_falls_back_to_v1() {
    let fake = FakeNvml::with_variant(
        "gpu0.used_mib = 1024\ngpu0.reserved_mib = 300\n",
        Variant::NoMemV2,
    );
    for s in run(&fake, 2) {
        let m = s.gpus[0].memory.expect("v1 memory is read");
        assert!(m.used_includes_reserved);
        assert_eq!(m.used, 1324 * MIB, "v1 used = allocated + reserved");
        assert_eq!(m.reserved, None);
        assert_eq!(m.free(), (24564 - 1324) * MIB);
    }
}

#[test]
fn unsupported_metrics_are_absent_not_errors() {
    let fake =
        FakeNvml::new("gpu0.unsupported = temp,power,pcie,procs,throttle,clocks,util,uuid\n");
    let s = run(&fake, 1).remove(0);
    assert_eq!(s.state, SourceState::Ok);
    let g = &s.gpus[0];
    assert_eq!(g.status, GpuStatus::Ok);
    assert!(g.memory.is_some());
    assert_eq!(
        (
            g.temp_c,
            g.power_w,
            g.pcie_rx_kbps,
            g.clock_graphics_mhz,
            g.util_gpu_pct
        ),
        (None, None, None, None, None)
    );
    assert_eq!(
        (g.uuid.as_ref(), g.throttle.as_ref(), g.processes.as_ref()),
        (None, None, None)
    );
    assert_eq!(g.key(), "index-0");
}

#[test]
fn windows_style_unavailable_process_memory_is_not_zero() {
    let fake = FakeNvml::new("gpu0.procs = 10:500:game\ngpu0.proc_mem_na = 1\n");
    let s = run(&fake, 1).remove(0);
    let p = &s.gpus[0].processes.as_ref().unwrap()[0];
    assert_eq!((p.pid, p.used), (10, None));
}

#[test]
fn library_wide_failures_become_clear_states() {
    type Check = fn(&SourceState) -> bool;
    let cases: [(&str, Check); 4] = [
        ("init_rc = 9", |s| matches!(s, SourceState::NoDriver(_))),
        ("init_rc = 4", |s| matches!(s, SourceState::NoPermission(_))),
        ("init_rc = 18", |s| {
            matches!(s, SourceState::VersionMismatch(_))
        }),
        ("gpus = 0", |s| *s == SourceState::NoGpu),
    ];
    for (scenario, check) in cases {
        let s = run(&FakeNvml::new(scenario), 1).remove(0);
        assert!(check(&s.state), "{scenario}: {:?}", s.state);
        assert!(s.gpus.is_empty());
        assert!(!s.state.message().is_empty());
    }
    let mut missing = NvmlSource::new(Some("/nonexistent/libnvidia-ml.so.1".into()));
    let s = missing.sample();
    assert!(matches!(s.state, SourceState::NoDriver(_)), "{:?}", s.state);
    assert!(s.state.message().contains("--demo"));
}

#[test]
fn recovers_when_permission_is_granted_later() {
    let fake = FakeNvml::new("init_rc = 4\ninit_fail_times = 2\n");
    let states: Vec<bool> = run(&fake, 4).iter().map(|s| s.state.is_ok()).collect();
    assert_eq!(states, vec![false, false, true, true]);
}

#[test]
fn waits_between_retries() {
    let fake = FakeNvml::new("init_rc = 4\ninit_fail_times = 1\n");
    let mut s = NvmlSource::new(Some(fake.lib.clone())).with_retry(Duration::from_secs(3600));
    assert!(matches!(s.sample().state, SourceState::NoPermission(_)));
    // Within the retry wait NVML is not touched again, so the second init (which would succeed)
    // has not happened yet.
    assert!(matches!(s.sample().state, SourceState::NoPermission(_)));
}

#[test]
fn gpu_lost_mid_run_then_back() {
    // Only GPU: lost in samples 2..3. Second scenario: GPU 1 of 2 falls off for good.
    let fake = FakeNvml::new("gpu0.name = Only\ngpu0.fail = 15@2-3\n");
    let snaps = run(&fake, 6);
    let states: Vec<&SourceState> = snaps.iter().map(|s| &s.state).collect();
    assert!(states[..2].iter().all(|s| s.is_ok()), "{states:?}");
    assert!(
        states[2..4]
            .iter()
            .all(|s| matches!(s, SourceState::GpuLost(_))),
        "{states:?}"
    );
    assert!(
        states[4..].iter().all(|s| s.is_ok()),
        "recovered: {states:?}"
    );
    for s in &snaps[2..4] {
        assert_eq!(s.gpus.len(), 1, "the lost GPU stays listed");
        assert_eq!(
            (s.gpus[0].name.as_str(), &s.gpus[0].status),
            ("Only", &GpuStatus::Lost)
        );
    }
    // The detectors turn this into one "lost" alert and one "back" alert.
    let mut session = Session::default();
    let mut kinds = vec![];
    for s in &snaps {
        kinds.extend(session.push(s.clone()).into_iter().map(|a| a.kind));
    }
    assert_eq!(kinds, vec![AlertKind::GpuLost, AlertKind::GpuBack]);

    let fake = FakeNvml::new("gpus = 2\ngpu1.fail = 15@1\n");
    let snaps = run(&fake, 3);
    assert_eq!(snaps[0].gpus[1].status, GpuStatus::Ok);
    for s in &snaps[1..] {
        assert_eq!(
            s.state,
            SourceState::Ok,
            "one GPU left is still a working source"
        );
        assert_eq!(
            (s.gpus[0].status.clone(), s.gpus[1].status.clone()),
            (GpuStatus::Ok, GpuStatus::Lost)
        );
        assert_eq!(
            s.gpus[1].name, "Fake NVIDIA GeForce RTX 4090 #1",
            "a lost GPU keeps its name"
        );
        assert!(s.gpus[1].memory.is_none());
    }
}

#[test]
fn memory_ramps_spikes_and_processes_come_and_go() {
    let fake = FakeNvml::new(
        "gpu0.used_mib = 1000\ngpu0.ramp_mib = 100\ngpu0.spike_at = 3\ngpu0.spike_mib = 5000\n\
         gpu0.procs = 4242:3000:python@1-2\n",
    );
    let snaps = run(&fake, 5);
    let used: Vec<u64> = snaps
        .iter()
        .map(|s| s.gpus[0].memory.unwrap().used / MIB)
        .collect();
    assert_eq!(used, vec![1000, 1100, 1200, 6300, 1400]);
    let n: Vec<usize> = snaps
        .iter()
        .map(|s| s.gpus[0].processes.as_ref().unwrap().len())
        .collect();
    assert_eq!(n, vec![0, 1, 1, 0, 0]);
}

#[test]
fn pcie_is_read_at_a_slower_cadence() {
    let fake = FakeNvml::new("gpu0.pcie_rx_kbps = 1000\ngpu0.pcie_ramp_kbps = 1\n");
    let rx: Vec<u32> = run(&fake, PCIE_EVERY as usize + 1)
        .iter()
        .map(|s| s.gpus[0].pcie_rx_kbps.unwrap())
        .collect();
    let expected: Vec<u32> = (0..=PCIE_EVERY)
        .map(|t| {
            if t < PCIE_EVERY {
                1000
            } else {
                1000 + PCIE_EVERY as u32
            }
        })
        .collect();
    assert_eq!(rx, expected, "the value is held between PCIe reads");
}

#[test]
fn sampler_thread_streams_snapshots_from_nvml() {
    let fake = FakeNvml::new("gpu0.ramp_mib = 10\n");
    let (sampler, rx) = Sampler::start(Box::new(source(&fake)), Duration::from_millis(5));
    let used: Vec<u64> = rx
        .iter()
        .take(3)
        .map(|s| s.gpus[0].memory.unwrap().used / MIB)
        .collect();
    assert_eq!(used, vec![1024, 1034, 1044]);
    assert!(sampler.is_running());
    sampler.stop();
}

#[test]
fn faults_injected_at_a_sample_make_metrics_absent_for_that_sample_only() {
    // NOT_SUPPORTED (3) at sample 1, NO_PERMISSION (4) at sample 2: the GPU stays listed and
    // working, its metrics are absent for that sample, and come back.
    for fault in ["3@1-1", "4@1-1"] {
        let fake = FakeNvml::new(&format!("gpu0.fail = {fault}\n"));
        let snaps = run(&fake, 3);
        let have: Vec<(bool, bool)> = snaps
            .iter()
            .map(|s| (s.gpus[0].memory.is_some(), s.gpus[0].temp_c.is_some()))
            .collect();
        assert_eq!(
            have,
            vec![(true, true), (false, false), (true, true)],
            "{fault}"
        );
        assert!(
            snaps
                .iter()
                .all(|s| s.state.is_ok() && s.gpus[0].status == GpuStatus::Ok)
        );
    }
}

/// A machine with an NVIDIA card (the fake NVML) and an AMD card (a fake sysfs tree).
fn two_vendor_probe(fake: &FakeNvml, dir: &std::path::Path) -> Probe {
    SECOND_VENDOR.write(&dir.join("drm"));
    Probe {
        nvml_lib: Some(fake.lib.clone()),
        drm_root: dir.join("drm"),
        proc_root: dir.join("proc"),
    }
}

#[test]
fn detection_lists_every_vendor_and_reads_them_as_one_machine() {
    let fake = FakeNvml::new("gpu0.name = Fake RTX 4090\ngpu0.used_mib = 8000\n");
    let dir = tempfile::tempdir().unwrap();
    let probe = two_vendor_probe(&fake, dir.path());
    let kinds = |p: &Probe| -> Result<Vec<SourceKind>, SourceState> {
        Ok(detect_all(p)?.iter().map(|s| s.kind()).collect())
    };
    assert_eq!(kinds(&probe), Ok(vec![SourceKind::Nvml, SourceKind::Amd]));

    let mut machine = Combined::of(detect_all(&probe).unwrap());
    let s = machine.sample();
    assert_eq!(s.state, SourceState::Ok);
    let gpus: Vec<(u32, &str, Option<SourceKind>, Option<u64>)> = s
        .gpus
        .iter()
        .map(|g| (g.index, g.name.as_str(), g.source, g.memory.map(|m| m.used)))
        .collect();
    assert_eq!(
        gpus,
        [
            (0, "Fake RTX 4090", None, Some(8000 * MIB)),
            (1, "AMD GPU 1002:744C", Some(SourceKind::Amd), Some(2 << 30)),
        ]
    );
    assert_eq!(s.source_label(), "NVIDIA (NVML) + AMD (sysfs)");
    // Histories are kept apart: the two cards have their own keys.
    let mut session = Session::default();
    session.push(s);
    assert_eq!(session.history().iter().count(), 2);

    // Each vendor alone, and neither: NVML's reason is the one given.
    let nvidia_only = Probe {
        drm_root: dir.path().join("no-drm"),
        ..probe.clone()
    };
    assert_eq!(kinds(&nvidia_only), Ok(vec![SourceKind::Nvml]));
    let amd_only = Probe {
        nvml_lib: Some(dir.path().join("no-libnvidia-ml.so.1")),
        ..probe.clone()
    };
    assert_eq!(kinds(&amd_only), Ok(vec![SourceKind::Amd]));
    let neither = Probe {
        drm_root: dir.path().join("no-drm"),
        ..amd_only
    };
    assert!(
        matches!(kinds(&neither), Err(SourceState::NoDriver(_))),
        "{:?}",
        kinds(&neither)
    );
}
