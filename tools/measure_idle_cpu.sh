#!/usr/bin/env bash
# Measures the desktop app's cost on the software renderer: time until the window is on screen,
# CPU (utime+stime from /proc/PID/stat) over a quiet stretch with the monitor tab showing demo data
# at one reading a second, and resident memory (VmRSS, VmHWM).
#
#   tools/measure_idle_cpu.sh [BINARY]            (default target/release/vram-doctor)
#   WARM=6 SPAN=20 TAB=monitor DEMO=1 AWAY=0 tools/measure_idle_cpu.sh
#
# Setup (the README's figures): Xvfb with Mesa's software OpenGL (llvmpipe), a 1200×780 window
# (the app's default size) on a larger screen so the pointer can rest outside it, a fresh HOME
# (no restored state), no window manager. DEMO=1 clicks "Show demo data" on the no-GPU panel;
# on a machine with a GPU set DEMO=0 to measure the live source. AWAY=1 then clicks the Planner
# tab, to measure the monitor sampling in the background while another tab is shown. Needs Xvfb and xdotool
# (Debian: xvfb xdotool libgl1-mesa-dri). Extra environment (LP_NUM_THREADS=…) is passed through.
set -euo pipefail
bin=${1:-target/release/vram-doctor}
warm=${WARM:-6}
span=${SPAN:-20}
tab=${TAB:-monitor}
demo=${DEMO:-1}
away=${AWAY:-0}
[[ -x $bin ]] || { echo "no binary at $bin (cargo build --release)" >&2; exit 2; }
for t in Xvfb xdotool; do
  command -v "$t" >/dev/null || { echo "$t is missing (apt-get install xvfb xdotool)" >&2; exit 2; }
done

tmp=$(mktemp -d)
chmod 700 "$tmp"
disp=:$(( 200 + RANDOM % 300 ))
Xvfb "$disp" -screen 0 1600x1000x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
app=
cleanup() {
  [[ -n $app ]] && kill "$app" 2>/dev/null || true
  kill "$xvfb" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
export DISPLAY=$disp XDG_RUNTIME_DIR=$tmp HOME=$tmp/home
unset WAYLAND_DISPLAY XDG_CONFIG_HOME XDG_DATA_HOME
mkdir -p "$HOME"
for _ in $(seq 100); do xdotool getmouselocation >/dev/null 2>&1 && break; sleep 0.05; done

start=$(date +%s.%N)
"$bin" --tab "$tab" >"$tmp/app.log" 2>&1 &
app=$!
shown=
for _ in $(seq 1000); do
  if xdotool search --onlyvisible --name '^VRAM Doctor$' >/dev/null 2>&1; then
    shown=$(date +%s.%N)
    break
  fi
  kill -0 "$app" 2>/dev/null || { cat "$tmp/app.log" >&2; exit 1; }
  sleep 0.01
done
[[ -n $shown ]] || { echo "no window after 10 s" >&2; exit 1; }

if [[ $demo == 1 && $tab == monitor ]]; then
  sleep 1
  # "Show demo data" sits centred under the no-GPU message (x = half the window's width).
  xdotool mousemove 600 163 click 1
  if [[ $away == 1 ]]; then
    sleep 1
    xdotool mousemove 139 12 click 1   # the "Planner" tab in the top bar
  fi
fi
# Rest the pointer outside the window so no hover or tooltip is involved.
xdotool mousemove 1500 950

ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$app/stat"; }
sleep "$warm"
c0=$(cpu); t0=$(date +%s.%N)
sleep "$span"
c1=$(cpu); t1=$(date +%s.%N)
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$app/status")
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$app/status")
threads=$(awk '/^Threads/ {print $2}' "/proc/$app/status")
awk -v s="$start" -v w="$shown" -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$ticks" \
    -v rss="$rss" -v hwm="$hwm" -v th="$threads" -v tab="$tab" -v demo="$demo" -v away="$away" 'BEGIN {
  printf "tab %s%s%s: window on screen after %.2f s\n", tab, (demo == 1 && tab == "monitor") ? " (demo data)" : "", away == 1 ? ", then the planner tab" : "", w - s
  printf "CPU %.2f %% of one core over %.1f s (utime+stime %d ticks at %d Hz)\n", (c1 - c0) / hz / (t1 - t0) * 100, t1 - t0, c1 - c0, hz
  printf "RSS %.0f MB (peak %.0f MB), %d threads\n", rss / 1024, hwm / 1024, th
}'
