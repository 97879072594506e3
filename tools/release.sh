#!/usr/bin/env bash
# Builds the release binaries and packs them with their documents and checksums:
#
#   tools/release.sh [--out DIR] [--only linux|windows]
#
#   DIR/vram-doctor-VERSION-linux-x86_64.tar.gz   vram-doctor (x86_64-unknown-linux-gnu)
#   DIR/vram-doctor-VERSION-windows-x86_64.zip    vram-doctor.exe (x86_64-pc-windows-gnu,
#                                                 cross-built with Debian's mingw-w64)
#   DIR/SHA256SUMS                                sha256sum's format, every archive of VERSION in DIR;
#                                                 check with `sha256sum -c SHA256SUMS`
#
# Each archive holds one folder vram-doctor-VERSION-PLATFORM/ with the binary, README.md,
# LICENSE-MIT, LICENSE-APACHE, FONT-LICENSE-OFL.txt (the bundled Noto Sans CJK subset's SIL OFL 1.1)
# and THIRD-PARTY-LICENSES.txt (every crate compiled in, tools/third_party_licenses.py).
# DIR defaults to dist/. Needs: cargo, the rustup target x86_64-pc-windows-gnu and
# x86_64-w64-mingw32-gcc (apt-get install mingw-w64) for the Windows build, python3.
# Archive entries carry the last commit's time and no owner, so the same tree packs the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
out=dist; only=
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "usage: $0 [--out DIR] [--only linux|windows]" >&2; exit 2 ;;
  esac
done
case $only in ""|linux|windows) ;; *) echo "--only takes linux or windows, not '$only'" >&2; exit 2 ;; esac

version=$(cargo metadata --format-version 1 --no-deps --locked |
  python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="vram-doctor"))')
target_dir=$(cargo metadata --format-version 1 --no-deps --locked |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
stamp=$(git log -1 --format=%ct 2>/dev/null || date +%s)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

# stage PLATFORM TRIPLE BINARY: the folder to pack, in $work.
stage() {
  local dir="$work/vram-doctor-$version-$1"
  mkdir -p "$dir"
  cp "$3" "$dir/"
  cp README.md LICENSE-MIT LICENSE-APACHE "$dir/"
  cp assets/fonts/OFL.txt "$dir/FONT-LICENSE-OFL.txt"
  python3 tools/third_party_licenses.py "$2" "$dir/THIRD-PARTY-LICENSES.txt" >/dev/null
  echo "$dir"
}

made=()
if [[ $only != windows ]]; then
  cargo build --release --locked
  dir=$(stage linux-x86_64 x86_64-unknown-linux-gnu "$target_dir/release/vram-doctor")
  name=$(basename "$dir").tar.gz
  tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$stamp" \
    -cf - "$(basename "$dir")" | gzip -n -9 >"$out/$name"
  made+=("$name")
fi
if [[ $only != linux ]]; then
  command -v x86_64-w64-mingw32-gcc >/dev/null ||
    { echo "x86_64-w64-mingw32-gcc not found: apt-get install mingw-w64 (the Windows linker)" >&2; exit 1; }
  cargo build --release --locked --target x86_64-pc-windows-gnu
  dir=$(stage windows-x86_64 x86_64-pc-windows-gnu "$target_dir/x86_64-pc-windows-gnu/release/vram-doctor.exe")
  name=$(basename "$dir").zip
  python3 - "$work" "$(basename "$dir")" "$out/$name" "$stamp" <<'PY'
import sys, time, zipfile
from pathlib import Path
base, folder, dest, stamp = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
when = time.gmtime(stamp)[:6]
with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    for f in sorted((base / folder).rglob("*")):
        info = zipfile.ZipInfo(f.relative_to(base).as_posix(), when)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        z.writestr(info, f.read_bytes())
PY
  made+=("$name")
fi
# The checksums cover every archive of this version in DIR (also one packed by an earlier --only).
(cd "$out" && shopt -s nullglob && sha256sum "vram-doctor-$version"-*.tar.gz "vram-doctor-$version"-*.zip >SHA256SUMS &&
  cat SHA256SUMS && echo "packed: ${made[*]}")
