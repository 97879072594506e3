#!/bin/sh
# The README's watched run ("Watching your own run"): a shell script that "allocates" 150 MiB
# every 0.1 s on the fake NVML (tests/fake_nvml/fake_nvml.c, its `procs_dir` lists the script's
# pid with its memory) until the 24 GiB card is nearly full, then prints a PyTorch OOM. Shows what
# `vram-doctor run` prints on stderr, and writes its --report folder to OUT (default: a temp dir).
#
#   tools/run_example.sh [OUT] [BINARY]      (default binary: target/release/vram-doctor)
set -eu
out=${1:-$(mktemp -d)}
bin=${2:-target/release/vram-doctor}
[ -x "$bin" ] || { echo "build first: cargo build --release ($bin missing)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -shared -fPIC -O2 -Wl,-z,nodelete -o "$work/libnvidia-ml.so.1" tests/fake_nvml/fake_nvml.c
mkdir "$work/procs"
printf 'gpu0.name = Fake RTX 4090\ngpu0.used_mib = 500\ngpu0.procs = 77:300:Xorg\ngpu0.procs_dir = %s\n' \
    "$work/procs" > "$work/fake_nvml_scenario.txt"
cat > "$work/train.sh" <<'SCRIPT'
alloc() { printf '%s %s\n' $$ "$1" > "$PROCS/.$$" && mv "$PROCS/.$$" "$PROCS/$$"; }
m=3000
i=0
while [ $i -lt 134 ]; do alloc $m; m=$((m + 150)); i=$((i + 1)); sleep 0.1; done
echo 'Traceback (most recent call last):' >&2
echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 23.99 GiB of which 120.00 MiB is free. Including non-PyTorch memory, this process has 23.10 GiB memory in use. Of the allocated memory 22.90 GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.' >&2
exit 1
SCRIPT
status=0
PROCS="$work/procs" "$bin" run --nvml-lib "$work/libnvidia-ml.so.1" --report "$out" -- sh "$work/train.sh" || status=$?
echo "exit status $status; report in $out" >&2
