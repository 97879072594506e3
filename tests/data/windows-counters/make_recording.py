#!/usr/bin/env python3
"""Writes game-spill.csv: a typeperf recording (PDH-CSV 4.0, src/telemetry/pdh_csv.rs) of the
five counters vram-doctor reads, over 12 one-second samples.

It is CONSTRUCTED, not captured: no Windows machine with a GPU was reachable when it was made.
Its layout follows typeperf's output (header row of `\\\\MACHINE\\Object(Instance)\\Counter`,
quoted fields, `" "` for an instance with no value) and the instance names the GPU counters use
(`luid_0x<high>_0x<low>_phys_<n>`, `pid_<pid>_luid_…`); its numbers are a plausible story:

  - an RTX 4060 (8 GiB, adapter luid 0x0000C0DE) running Cyberpunk2077 (pid 9120), whose
    dedicated memory climbs to the card's limit while its shared memory (system RAM the GPU
    borrows) grows from 0.25 to 1.9 GiB: the spill that makes a game stutter;
  - dwm (1234), explorer (5678) and two chrome processes (3344, 3360) holding a little;
  - the integrated GPU (luid 0x00011A2B) with dwm and chrome on it;
  - chrome#1 exits after sample 8 (its cells are blank from then on, as typeperf writes them).

Replace it with a real recording when one is available (the typeperf command is in
src/telemetry/pdh_csv.rs); tests/windows_counters.rs reads whatever is here and checks what
the file itself says (totals against its own per-process values), plus the story above.
"""
from pathlib import Path

MIB = 1 << 20
GIB = 1 << 30
HOST = "DESKTOP-7Q3K2LM"
DGPU = "luid_0x00000000_0x0000C0DE_phys_0"
IGPU = "luid_0x00000000_0x00011A2B_phys_0"
SAMPLES = 12

# name, pid, {luid: (dedicated(t), shared(t))}, last sample with a value
PROCS = [
    ("dwm", 1234, {DGPU: (lambda t: 212 * MIB, lambda t: 38 * MIB),
                   IGPU: (lambda t: 0, lambda t: 96 * MIB)}, SAMPLES),
    ("explorer", 5678, {DGPU: (lambda t: 41 * MIB, lambda t: 12 * MIB)}, SAMPLES),
    ("chrome", 3344, {DGPU: (lambda t: 318 * MIB, lambda t: 64 * MIB),
                      IGPU: (lambda t: 0, lambda t: 20 * MIB)}, SAMPLES),
    ("chrome#1", 3360, {DGPU: (lambda t: 96 * MIB, lambda t: 8 * MIB)}, 8),
    ("Cyberpunk2077", 9120, {DGPU: (lambda t: min(5800 * MIB + t * 160 * MIB, 7380 * MIB),
                                    lambda t: GIB // 4 + t * 150 * MIB)}, SAMPLES),
]
OTHER_IDS = [("Idle", 0), ("System", 4), ("_Total", 0)]


def q(s):
    return '"' + str(s).replace('"', '""') + '"'


def main():
    cols = []  # (header, value(t) or None)
    for luid in (DGPU, IGPU):
        for counter, idx in (("Dedicated Usage", 0), ("Shared Usage", 1)):
            def total(t, luid=luid, idx=idx):
                return sum(f[luid][idx](t) for _, _, f, last in PROCS if luid in f and t < last)
            cols.append((f"\\\\{HOST}\\GPU Adapter Memory({luid})\\{counter}", total))
    for name, pid, per, last in PROCS:
        for luid, fns in per.items():
            for counter, fn in zip(("Dedicated Usage", "Shared Usage"), fns):
                cols.append((f"\\\\{HOST}\\GPU Process Memory(pid_{pid}_{luid})\\{counter}",
                             lambda t, fn=fn, last=last: fn(t) if t < last else None))
    for name, pid, _, last in PROCS:
        cols.append((f"\\\\{HOST}\\Process({name})\\ID Process",
                     lambda t, pid=pid, last=last: pid if t < last else None))
    for name, pid in OTHER_IDS:
        cols.append((f"\\\\{HOST}\\Process({name})\\ID Process", lambda t, pid=pid: pid))
    lines = [",".join([q("(PDH-CSV 4.0) (W. Europe Standard Time)(-60)")] + [q(h) for h, _ in cols])]
    for t in range(SAMPLES):
        stamp = f"12/01/2026 21:14:{5 + t:02d}.{(t * 137) % 1000:03d}"
        cells = [q(stamp)]
        for _, fn in cols:
            v = fn(t)
            cells.append(q(" " if v is None else f"{v:.6f}"))
        lines.append(",".join(cells))
    out = Path(__file__).with_name("game-spill.csv")
    out.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    print(f"wrote {out}: {len(cols)} counter columns, {SAMPLES} samples")


if __name__ == "__main__":
    main()
