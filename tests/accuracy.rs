//! The engine against measured reference data (tests/data/groundtruth-public.jsonl, a copy of
//! the shared public reference rows). These are the figures the README reports; a change to the
//! engine that makes them worse fails here.

use vram_doctor::accuracy::{self, Report};

fn report() -> Report {
    accuracy::run(include_str!("data/groundtruth-public.jsonl"))
}

#[test]
fn llm_inference_meets_its_goals() {
    let r = report();
    let s = r.stats_where(|k| k.starts_with("llm_inference")).unwrap();
    assert!(s.rows >= 25, "rows {}", s.rows);
    assert!(s.median <= 0.05, "median {:.3}", s.median);
    assert!(s.p90 <= 0.15, "p90 {:.3}", s.p90);
}

#[test]
fn llama_cpp_buffers_are_exact() {
    let r = report();
    let s = r.by_kind()["llm_inference_gguf"];
    assert_eq!(s.rows, 6);
    assert!(s.p90 <= 0.005, "p90 {:.4}", s.p90);
}

#[test]
fn llm_training_meets_its_goals() {
    let r = report();
    let s = r.stats_where(|k| k.starts_with("llm_training")).unwrap();
    assert!(s.rows >= 40, "rows {}", s.rows);
    assert!(s.median <= 0.10, "median {:.3}", s.median);
    assert!(s.p90 <= 0.25, "p90 {:.3}", s.p90);
}

#[test]
fn diffusion_meets_its_goals() {
    let r = report();
    let s = r.stats_where(|k| k.starts_with("diffusion")).unwrap();
    assert!(s.rows >= 20, "rows {}", s.rows);
    assert!(s.median <= 0.10, "median {:.3}", s.median);
    assert!(s.p90 <= 0.25, "p90 {:.3}", s.p90);
}

#[test]
fn skipped_rows_say_why() {
    let r = report();
    for s in &r.skipped {
        assert!(!s.why.is_empty(), "{}", s.id);
    }
    // OOM markers have no figure; everything else the engine can express is compared.
    assert!(
        r.skipped.len() <= 6,
        "{:?}",
        r.skipped
            .iter()
            .map(|s| (&s.id, &s.why))
            .collect::<Vec<_>>()
    );
}

/// The speed estimates against published llama.cpp measurements
/// (tests/data/speed-llama-cpp.jsonl, sources per row): every row within ±30%, full offload,
/// layer splits and experts on the CPU all covered.
#[test]
fn speed_is_within_30_percent_of_every_published_row() {
    let r = vram_doctor::accuracy::speed_rows::run(include_str!("data/speed-llama-cpp.jsonl"));
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    assert!(r.rows.len() >= 18, "rows {}", r.rows.len());
    let kinds = r.by_kind();
    for k in [
        "decode, full GPU",
        "decode, layers split",
        "decode, experts on CPU",
        "prefill, full GPU",
    ] {
        assert!(kinds.contains_key(k), "no rows of {k}: {:?}", kinds.keys());
    }
    let off: Vec<_> = r
        .rows
        .iter()
        .filter(|x| x.rel_error() > 0.30)
        .map(|x| (&x.id, x.measured_per_s, x.estimated_per_s))
        .collect();
    assert!(off.is_empty(), "rows off by more than 30%: {off:?}");
    let all = kinds["ALL speed"];
    assert!(all.median <= 0.15, "median {:.3}", all.median);
}

/// The held-out check (tests/data/speed-held-out.jsonl: published figures no constant of
/// `speed::llm` was fitted on, other hosts and cards than the in-sample rows): the median
/// error stays within ±30%, and the rows cover layer splits, all layers in system RAM and the
/// whole model on the GPU.
#[test]
fn speed_is_within_30_percent_median_on_held_out_rows() {
    let held = vram_doctor::accuracy::speed_rows::run(include_str!("data/speed-held-out.jsonl"));
    assert!(held.skipped.is_empty(), "{:?}", held.skipped);
    assert!(held.rows.len() >= 12, "rows {}", held.rows.len());
    let kinds = held.by_kind();
    for k in ["decode, full GPU", "decode, layers split"] {
        assert!(kinds.contains_key(k), "no rows of {k}: {:?}", kinds.keys());
    }
    assert!(
        kinds["ALL speed"].median <= 0.30,
        "median {:.3}",
        kinds["ALL speed"].median
    );
    // No row is in both sets: held out means not fitted on.
    let fitted = vram_doctor::accuracy::speed_rows::run(include_str!("data/speed-llama-cpp.jsonl"));
    let key = |r: &vram_doctor::accuracy::speed_rows::SpeedResult| r.measured_per_s.to_bits();
    for r in &held.rows {
        assert!(
            fitted.rows.iter().all(|f| key(f) != key(r)),
            "{} repeats an in-sample figure",
            r.id
        );
    }
}

/// The diffusion speed estimate against published step times (tests/data/speed-diffusion.jsonl,
/// the rows `speed::diffusion::DENOISE_EFFICIENCY` was fitted on): every row within ±20%. The
/// held-out rows (tests/data/speed-diffusion-held-out.jsonl) are all estimated and none repeats
/// an in-sample figure; their median error is the one the README reports (105%: the RTX 6000
/// Ada does not reach its data-sheet rate) and must not grow.
#[test]
fn diffusion_speed_against_published_step_times() {
    use vram_doctor::accuracy::diffusion_speed_rows::run;
    let r = run(include_str!("data/speed-diffusion.jsonl"));
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    assert!(r.rows.len() >= 3, "rows {}", r.rows.len());
    let off: Vec<_> = r
        .rows
        .iter()
        .filter(|x| x.rel_error() > 0.20)
        .map(|x| (&x.id, x.measured_per_s, x.estimated_per_s))
        .collect();
    assert!(off.is_empty(), "rows off by more than 20%: {off:?}");
    let held = run(include_str!("data/speed-diffusion-held-out.jsonl"));
    assert!(held.skipped.is_empty(), "{:?}", held.skipped);
    assert!(held.rows.len() >= 5, "rows {}", held.rows.len());
    let key = |x: &vram_doctor::accuracy::speed_rows::SpeedResult| x.measured_per_s.to_bits();
    for h in &held.rows {
        assert!(
            r.rows.iter().all(|f| key(f) != key(h)),
            "{} repeats an in-sample figure",
            h.id
        );
    }
    let median = held.by_kind()["ALL speed"].median;
    assert!(median <= 1.10, "held-out median {median:.3}");
}

/// The training speed estimate against published training throughputs
/// (tests/data/speed-training.jsonl, the rows its efficiency is fitted on, and
/// tests/data/speed-training-held-out.jsonl, other cards, another model and another recipe
/// table, not fitted on): every row of both is estimated, each method and both one GPU and
/// FSDP over several are covered, and no held-out row repeats an in-sample figure. In-sample
/// rows within ±25% each; the held-out median within ±25% (the README's 11%: the H100 rows
/// and an uncompiled run come out fast, `speed::llm::TRAINING_EFFICIENCY`).
#[test]
fn training_speed_against_published_throughputs() {
    use vram_doctor::accuracy::training_speed_rows::run;
    let fitted = run(include_str!("data/speed-training.jsonl"));
    let held = run(include_str!("data/speed-training-held-out.jsonl"));
    for (name, r, min) in [("in-sample", &fitted, 6), ("held-out", &held, 10)] {
        assert!(r.skipped.is_empty(), "{name}: {:?}", r.skipped);
        assert!(r.rows.len() >= min, "{name}: rows {}", r.rows.len());
    }
    let kinds = held.by_kind();
    for k in [
        "training full, one GPU",
        "training full, several GPUs",
        "training lora, one GPU",
        "training qlora, one GPU",
    ] {
        assert!(
            kinds.contains_key(k),
            "no held-out rows of {k}: {:?}",
            kinds.keys()
        );
    }
    let key = |x: &vram_doctor::accuracy::speed_rows::SpeedResult| x.measured_per_s.to_bits();
    for h in &held.rows {
        assert!(
            fitted.rows.iter().all(|f| key(f) != key(h)),
            "{} repeats an in-sample figure",
            h.id
        );
    }
    let off: Vec<_> = fitted
        .rows
        .iter()
        .filter(|x| x.rel_error() > 0.25)
        .map(|x| (&x.id, x.measured_per_s, x.estimated_per_s))
        .collect();
    assert!(
        off.is_empty(),
        "in-sample rows off by more than 25%: {off:?}"
    );
    let median = held.by_kind()["ALL speed"].median;
    assert!(median <= 0.25, "held-out median {median:.3}");
}
