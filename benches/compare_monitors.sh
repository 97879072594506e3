#!/usr/bin/env bash
# CPU cost of GPU monitors refreshing once a second, all reading the same fake
# libnvidia-ml.so.1 (tests/fake_nvml/fake_nvml.c), each in a pseudo-terminal as a user would run it.
# Method as in shared/research/monitor.md section 3.6: 5 s warm-up, then the run time of all the
# tool's threads (/proc/PID/task/*/schedstat, nanoseconds) over SECONDS.
#
# Usage: benches/compare_monitors.sh [SECONDS]
#   VRAM_DOCTOR  the binary to measure (default: target/release/vram-doctor)
#   PY_BIN       directory holding gpustat and nvitop (pip install gpustat nvitop); skipped if absent
set -euo pipefail
secs=${1:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${VRAM_DOCTOR:-$root/target/release/vram-doctor}
py=${PY_BIN:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -shared -fPIC -O2 -Wl,-z,nodelete -o "$work/libnvidia-ml.so.1" "$root/tests/fake_nvml/fake_nvml.c"
cat > "$work/fake_nvml_scenario.txt" <<'SCENARIO'
gpus = 2
gpu0.procs = 4242:18000:python,1201:260:Xorg,2417:410:firefox,3001:900:blender
gpu0.gprocs = 1201:260:Xorg,2417:410:firefox
gpu1.procs = 5000:2000:ollama
SCENARIO
export LD_LIBRARY_PATH=$work TERM=xterm-256color

cpu_ns() {
    local total=0 run
    for f in /proc/"$1"/task/*/schedstat; do
        read -r run _ < "$f" && total=$((total + run))
    done
    echo "$total"
}

# measure NAME PATTERN COMMAND: runs COMMAND in a pty; PATTERN finds the tool's own process.
measure() {
    local name=$1 pattern=$2 cmd=$3
    script -qfc "stty cols 120 rows 40; exec $cmd" /dev/null > /dev/null 2>&1 &
    local wrapper=$!
    sleep 5
    local pid
    pid=$(pgrep -n -f -- "$pattern" || true)
    if [ -z "$pid" ]; then
        echo "$name: did not start"
        kill "$wrapper" 2> /dev/null || true
        return
    fi
    local a b rss
    a=$(cpu_ns "$pid")
    sleep "$secs"
    b=$(cpu_ns "$pid")
    rss=$(awk '/VmRSS/ {print $2}' /proc/"$pid"/status)
    kill "$wrapper" 2> /dev/null || true
    wait "$wrapper" 2> /dev/null || true
    awk -v n="$name" -v d=$((b - a)) -v s="$secs" -v r="$rss" \
        'BEGIN { printf "%-12s %8.1f ms CPU in %s s = %.3f %% of one core, RSS %d MB\n", n, d / 1e6, s, d / 1e7 / s, r / 1024 }'
}

measure vram-doctor "monitor --interval 1 --nvml-lib" "$bin monitor --interval 1 --nvml-lib $work/libnvidia-ml.so.1"
if [ -n "$py" ] && [ -x "$py/gpustat" ]; then
    measure gpustat "gpustat -i 1" "$py/gpustat -i 1"
    measure nvitop "nvitop --interval 1" "$py/nvitop --interval 1"
fi
