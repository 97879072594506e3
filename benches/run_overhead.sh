#!/bin/sh
# The cost of `vram-doctor run`: the watcher's own CPU at the default 10 Hz, and how much slower a
# CPU-bound child runs under watch than alone. Reads the fake NVML (tests/fake_nvml/fake_nvml.c)
# with the child listed on the GPU through `procs_dir`, so the whole per-sample path runs:
# NVML calls, the /proc ancestry of each listed pid, the timeline, history and detectors, the
# recording.
#
#   benches/run_overhead.sh [SECONDS] [BINARY]     (defaults: 20, target/release/vram-doctor)
#
# Watcher CPU: the run time of all its threads from /proc/PID/task/*/schedstat (ns), read just
# before the child ends, over the run's wall time. Slowdown: the child times itself
# (python3, time.perf_counter) on a fixed amount of work, five times alone and five under watch,
# alternating; the medians are compared.
set -eu
secs=${1:-20}
bin=${2:-$(cargo metadata --format-version 1 --no-deps 2>/dev/null | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/release/vram-doctor}
[ -x "$bin" ] || { echo "build first: cargo build --release ($bin missing)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is needed for the slowdown part" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -shared -fPIC -O2 -Wl,-z,nodelete -o "$work/libnvidia-ml.so.1" tests/fake_nvml/fake_nvml.c
mkdir "$work/procs"
printf 'gpus = 1\ngpu0.used_mib = 800\ngpu0.procs = 77:300:Xorg\ngpu0.procs_dir = %s\n' "$work/procs" \
    > "$work/fake_nvml_scenario.txt"

# 1. The watcher's CPU over SECONDS with an idle child that holds GPU memory.
"$bin" run --nvml-lib "$work/libnvidia-ml.so.1" -- sh -c \
    "printf '%s 4000\n' \$\$ > '$work/procs/child'; sleep $secs" >/dev/null 2>"$work/err" &
watcher=$!
start=$(date +%s%N)
sleep $((secs - 1))
ns=0
for f in /proc/$watcher/task/*/schedstat; do
    ns=$((ns + $(cut -d' ' -f1 "$f")))
done
now=$(date +%s%N)
wait $watcher || true
wall=$((now - start))
echo "watcher at 10 Hz: $((ns / 1000000)) ms CPU in $((wall / 1000000)) ms wall = $(echo "$ns $wall" | awk '{printf "%.3f", 100 * $1 / $2}') % of one core"

# 2. The child's slowdown: a fixed CPU-bound job, alone and under watch.
job='import time; t = time.perf_counter(); sum(i * i for i in range(6_000_000)); print(time.perf_counter() - t)'
alone=""
watched=""
for i in 1 2 3 4 5; do
    alone="$alone $(python3 -c "$job")"
    watched="$watched $("$bin" run --nvml-lib "$work/libnvidia-ml.so.1" -- python3 -c "$job" 2>/dev/null | head -1)"
done
median() { echo "$@" | tr ' ' '\n' | grep . | sort -g | sed -n 3p; }
a=$(median $alone)
w=$(median $watched)
echo "child alone: median $a s; under watch: median $w s; slowdown $(echo "$a $w" | awk '{printf "%+.1f", 100 * ($2 / $1 - 1)}') %"
echo "  alone:$alone"
echo "  watched:$watched"
