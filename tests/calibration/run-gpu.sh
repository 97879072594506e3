#!/usr/bin/env bash
# Runs the calibration grid on the NVIDIA GPU of this machine in one command:
#
#     bash tests/calibration/run-gpu.sh h200            # writes tests/data/measured-h200.jsonl
#
# Each workload file is resolved by the planner itself (`vram-doctor plan --print-resolved`): the
# binary is $VRAM_DOCTOR_BIN where set (a machine without a Rust toolchain gets one built
# elsewhere), else built here with `cargo build --release --locked`.
# Wheels found in .whl/ (packages the machine lacks, e.g. diffusers and bitsandbytes; see
# tests/calibration/README.md) are installed into /tmp/site first. Where $OUT is set (the device
# tool's machine), the results and the log go there too, so they come back.
# DRY_RUN=1 runs the same steps with the harness's CPU dry run (no GPU) into
# /tmp/vram-doctor-calib/dry-GPU-NAME.jsonl, leaving tests/data alone.
set -uo pipefail
cd "$(dirname "$0")/../.."
gpu="${1:?usage: run-gpu.sh GPU-NAME (used in the file name and the row ids, e.g. h200)}"
deadline="${DEADLINE_S:-450}"
bin="${VRAM_DOCTOR_BIN:-}"
if [ -z "$bin" ]; then
    if ! command -v cargo >/dev/null; then
        echo "error: no cargo here to build vram-doctor: build it elsewhere (cargo build --release --locked) and set VRAM_DOCTOR_BIN" >&2
        exit 2
    fi
    cargo build --release --locked --bin vram-doctor || exit 1
    bin="${CARGO_TARGET_DIR:-target}/release/vram-doctor"
fi
if [ ! -x "$bin" ]; then
    echo "error: VRAM_DOCTOR_BIN=$bin is not an executable file" >&2
    exit 2
fi
VRAM_DOCTOR_BIN="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
export VRAM_DOCTOR_BIN
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
mode=()
out="tests/data/measured-$gpu.jsonl"
if [ -n "${DRY_RUN:-}" ]; then
    mode=(--dry-run)
    out="/tmp/vram-doctor-calib/dry-$gpu.jsonl"
fi
mkdir -p "$(dirname "$out")"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
PYTHONUNBUFFERED=1 python3 tests/calibration/harness.py ${mode[@]+"${mode[@]}"} tests/calibration/grid --out "$out" \
    --gpu-name "$gpu" --deadline-s "$deadline" --workdir /tmp/vram-doctor-calib 2>&1 | tee /tmp/calibration.log
status=${PIPESTATUS[0]}
if [ -n "${OUT:-}" ]; then
    cp "$out"* "$OUT/" 2>/dev/null
    cp /tmp/calibration.log "$OUT/"
fi
exit "$status"
