#!/usr/bin/env python3
"""Writes the licence texts of every crate compiled into the binary for one target, for the
release archives (MIT and Apache-2.0 ask that the notice travels with the binary).

    tools/third_party_licenses.py TARGET OUT.txt

The crates are those reachable from vram-doctor through normal (not dev, not build) dependencies
in `cargo metadata --filter-platform TARGET` (the resolve graph, cargo's documented JSON format
version 1). Each entry names the crate, its version, its declared licence, and holds the files in
its source folder named LICENSE*, LICENCE*, COPYING*, NOTICE* or COPYRIGHT*. A crate with
none of them is listed with its declared licence and the words "no licence file in the crate".
"""
import json
import subprocess
import sys
from pathlib import Path

PREFIXES = ("license", "licence", "copying", "notice", "copyright")


def main():
    target, out = sys.argv[1], Path(sys.argv[2])
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", target],
        check=True, capture_output=True, text=True).stdout)
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    root = meta["resolve"]["root"]
    seen, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        for dep in nodes[pid]["deps"]:
            if any(k["kind"] is None for k in dep["dep_kinds"]):
                todo.append(dep["pkg"])
    seen.discard(root)
    parts = [f"Third-party software in vram-doctor for {target}: {len(seen)} crates.\n"]
    for pid in sorted(seen, key=lambda i: (packages[i]["name"], packages[i]["version"])):
        p = packages[pid]
        folder = Path(p["manifest_path"]).parent
        files = sorted(f for f in folder.iterdir()
                       if f.is_file() and f.name.lower().startswith(PREFIXES))
        parts.append("=" * 78)
        parts.append(f"{p['name']} {p['version']} — {p.get('license') or 'licence not declared'}")
        if not files:
            parts.append("(no licence file in the crate)")
        for f in files:
            parts.append(f"--- {f.name}")
            parts.append(f.read_text(encoding="utf-8", errors="replace").rstrip())
        parts.append("")
    out.write_text("\n".join(parts) + "\n", encoding="utf-8")
    print(f"{out}: {len(seen)} crates")


if __name__ == "__main__":
    main()
