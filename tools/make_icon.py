#!/usr/bin/env python3
"""Draws the app icon and writes it in the two forms the build uses (standard library only):

  assets/icon/vram-doctor.ico    Windows icon (16, 24, 32, 48, 64, 256 px, PNG-compressed
                                 entries, which Windows Vista and later read), linked into the
                                 .exe as its icon resource by build.rs
  assets/icon/vram-doctor-64.rgba  64 x 64 straight RGBA, 8 bits per channel, row by row from
                                 the top: the window and taskbar icon the app sets at start
                                 (src/ui/mod.rs), so no image decoder is needed at run time

The picture: a memory card (dark rounded square) with a fill bar, green for the part in use and
amber near the top, and a white cross of a first-aid sign. Run it again after changing the
drawing; the files are committed.

ICO layout: ICONDIR (reserved 0, type 1, count) then one 16-byte ICONDIRENTRY per image
(width, height with 0 meaning 256, colours 0, reserved 0, planes 1, bits 32, size, offset) then
the images (Microsoft, "Icons" in the Win32 resource documentation). PNG: ISO/IEC 15948.
"""
import struct
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "assets" / "icon"
SIZES = [16, 24, 32, 48, 64, 256]
SAMPLES = 4  # supersampling per axis, for smooth edges

BG = (30, 41, 59)
GREEN = (34, 197, 94)
AMBER = (245, 158, 11)
SLOT = (51, 65, 85)
WHITE = (248, 250, 252)


def inside_rounded(x, y, x0, y0, x1, y1, r):
    if not (x0 <= x <= x1 and y0 <= y <= y1):
        return False
    cx = min(max(x, x0 + r), x1 - r)
    cy = min(max(y, y0 + r), y1 - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def colour_at(x, y):
    """The colour at (x, y) in the unit square (y down), or None for transparent."""
    if not inside_rounded(x, y, 0.04, 0.04, 0.96, 0.96, 0.18):
        return None
    # The cross, upper right.
    cx, cy, arm, half = 0.70, 0.30, 0.17, 0.055
    if (abs(x - cx) <= half and abs(y - cy) <= arm) or (abs(y - cy) <= half and abs(x - cx) <= arm):
        return WHITE
    # The fill bar, left: a slot filled from the bottom to 80 %, the top fifth of the fill amber.
    bx0, bx1, by0, by1 = 0.18, 0.42, 0.16, 0.84
    if inside_rounded(x, y, bx0, by0, bx1, by1, 0.05):
        fill_top = by1 - 0.80 * (by1 - by0)
        if y < fill_top:
            return SLOT
        return AMBER if y < fill_top + 0.16 * (by1 - by0) else GREEN
    # Two memory-chip rows, lower right.
    for top in (0.58, 0.74):
        if inside_rounded(x, y, 0.53, top, 0.87, top + 0.10, 0.02):
            return GREEN
    return BG


def render(n):
    px = bytearray()
    for j in range(n):
        for i in range(n):
            acc = [0, 0, 0, 0]
            for sj in range(SAMPLES):
                for si in range(SAMPLES):
                    c = colour_at((i + (si + 0.5) / SAMPLES) / n, (j + (sj + 0.5) / SAMPLES) / n)
                    if c is not None:
                        acc[0] += c[0]
                        acc[1] += c[1]
                        acc[2] += c[2]
                        acc[3] += 1
            k = SAMPLES * SAMPLES
            a = acc[3]
            if a == 0:
                px += bytes(4)
            else:
                px += bytes((acc[0] // a, acc[1] // a, acc[2] // a, 255 * a // k))
    return bytes(px)


def png(n, rgba):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + rgba[r * n * 4:(r + 1) * n * 4] for r in range(n))
    ihdr = struct.pack(">IIBBBBB", n, n, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    images = {n: render(n) for n in SIZES}
    blobs = [png(n, images[n]) for n in SIZES]
    head = struct.pack("<HHH", 0, 1, len(SIZES))
    offset = len(head) + 16 * len(SIZES)
    entries = b""
    for n, blob in zip(SIZES, blobs):
        side = 0 if n == 256 else n
        entries += struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(blob), offset)
        offset += len(blob)
    (OUT / "vram-doctor.ico").write_bytes(head + entries + b"".join(blobs))
    (OUT / "vram-doctor-64.rgba").write_bytes(images[64])
    print(f"wrote {OUT}/vram-doctor.ico and vram-doctor-64.rgba")


if __name__ == "__main__":
    main()
