#!/usr/bin/env python3
"""Builds assets/fonts/NotoSansCJKsc-subset.otf: Noto Sans CJK SC cut down to the characters the
app's texts use, so Chinese renders on machines without any CJK font.

Run it after adding or changing Chinese text (tests/ui_i18n.rs names this script when a character
is missing from the subset):

    apt-get install fonts-noto-cjk      # Debian/Ubuntu; or pass --source FILE
    pip install fonttools
    python3 tools/make_cjk_subset.py

Characters taken: every non-ASCII character of
  - assets/i18n/*.toml (the UI tables, keys and values),
  - assets/doctor/**/*.toml texts in English and Chinese (`*.en = "…"`, `*.zh = "…"`),
  - assets/glossary/*.toml texts (`en = "…"`, `zh = "…"`), the planner's tooltips,
  - string literals in src/ui/**/*.rs (e.g. the language switch's "简体中文").
The font is SIL OFL 1.1 (assets/fonts/OFL.txt); it has no Reserved Font Name, so the subset
keeps its name.
"""

import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "assets" / "fonts" / "NotoSansCJKsc-subset.otf"
# Debian's fonts-noto-cjk: a collection whose font 2 is the Simplified Chinese one.
DEFAULT_SOURCE = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
SC_NAME = "Noto Sans CJK SC"

DOCTOR_TEXT = re.compile(r'^\s*[\w.-]*\.(?:en|zh)\s*=\s*"(.*)"\s*$')
GLOSSARY_TEXT = re.compile(r'^\s*(?:en|zh)\s*=\s*"(.*)"\s*$')
RUST_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def wanted_chars():
    chars = set()
    for f in sorted((ROOT / "assets" / "i18n").glob("*.toml")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if not line.lstrip().startswith("#"):
                chars.update(line)
    for f in sorted((ROOT / "assets" / "doctor").rglob("*.toml")):
        for line in f.read_text(encoding="utf-8").splitlines():
            m = DOCTOR_TEXT.match(line)
            if m:
                chars.update(m.group(1))
    for f in sorted((ROOT / "assets" / "glossary").glob("*.toml")):
        for line in f.read_text(encoding="utf-8").splitlines():
            m = GLOSSARY_TEXT.match(line)
            if m:
                chars.update(m.group(1))
    for f in sorted((ROOT / "src" / "ui").rglob("*.rs")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith("//"):
                continue
            for m in RUST_STRING.finditer(line):
                chars.update(m.group(1))
    return {c for c in chars if ord(c) > 0x7E}


def open_sc(path):
    from fontTools.ttLib import TTCollection, TTFont

    if path.endswith((".ttc", ".otc")):
        for font in TTCollection(path).fonts:
            if font["name"].getDebugName(1) == SC_NAME:
                return font
        sys.exit(f"{path}: no '{SC_NAME}' font in this collection")
    return TTFont(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=DEFAULT_SOURCE, help="Noto Sans CJK SC (.otf, or the .ttc)")
    args = ap.parse_args()
    try:
        from fontTools import subset
    except ImportError:
        sys.exit("fonttools is missing: pip install fonttools")
    if not pathlib.Path(args.source).exists():
        sys.exit(f"{args.source}: not found; apt-get install fonts-noto-cjk, or pass --source")

    chars = wanted_chars()
    font = open_sc(args.source)
    cmap = font.getBestCmap()
    missing = sorted(c for c in chars if ord(c) not in cmap)
    # Characters the CJK font lacks must come from egui's own fonts; name them so a reviewer can
    # check (the kittest harness fails on any glyph no font has).
    if missing:
        print("not in the CJK font (egui's fonts must have them):",
              " ".join(f"{c}(U+{ord(c):04X})" for c in missing))
    unicodes = sorted(ord(c) for c in chars if ord(c) in cmap)

    options = subset.Options()
    options.layout_features = []  # egui does no OpenType shaping
    options.hinting = False  # egui rasterises without hints
    options.name_IDs = [0, 1, 2, 3, 4, 5, 6, 7, 13, 14]  # keep copyright and licence
    options.notdef_outline = True
    sub = subset.Subsetter(options)
    sub.populate(unicodes=unicodes)
    sub.subset(font)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".tmp")
    # Keep the source's modification date, so the same texts give the same bytes (no diff).
    font.recalcTimestamp = False
    font.save(tmp)
    tmp.replace(OUT)
    print(f"{OUT.relative_to(ROOT)}: {len(unicodes)} characters, "
          f"{font['maxp'].numGlyphs} glyphs, {OUT.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
