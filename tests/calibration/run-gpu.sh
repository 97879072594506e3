#!/usr/bin/env bash
# Runs the calibration grid on the NVIDIA GPU of this machine in one command:
#
#     bash tests/calibration/run-gpu.sh h200            # writes tests/data/measured-h200.jsonl
#
# Wheels found in .whl/ (packages the machine lacks, e.g. diffusers and bitsandbytes; see
# tests/calibration/README.md) are installed into /tmp/site first. Where $OUT is set (the device
# tool's machine), the results and the log go there too, so they come back.
set -uo pipefail
cd "$(dirname "$0")/../.."
gpu="${1:?usage: run-gpu.sh GPU-NAME (used in the file name and the row ids, e.g. h200)}"
deadline="${DEADLINE_S:-450}"
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
out="tests/data/measured-$gpu.jsonl"
mkdir -p tests/data
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
PYTHONUNBUFFERED=1 python3 tests/calibration/harness.py tests/calibration/grid --out "$out" \
    --gpu-name "$gpu" --deadline-s "$deadline" --workdir /tmp/vram-doctor-calib 2>&1 | tee /tmp/calibration.log
status=${PIPESTATUS[0]}
if [ -n "${OUT:-}" ]; then
    cp "$out"* "$OUT/" 2>/dev/null
    cp /tmp/calibration.log "$OUT/"
fi
exit "$status"
