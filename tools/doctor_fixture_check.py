#!/usr/bin/env python3
"""Runs `vram-doctor diagnose --json` on every message of a fixture file and prints, per message,
the top cause against the expected one, and the count that match. For the README's before/after
figure on tests/data/doctor_families.toml; works with older binaries too (before issue 16 the
causes of a finished walk were under `stop.diagnosis`).

    cargo build && python3 tools/doctor_fixture_check.py target/debug/vram-doctor \\
        tests/data/doctor_families.toml

A message answered with exit status 2 ("not a GPU error") counts as wrong and is listed as EXIT2.
"""

import json
import subprocess
import sys
import tomllib


def top_cause(report):
    diagnosis = report.get("diagnosis") or report.get("stop", {}).get("diagnosis") or {}
    causes = diagnosis.get("causes") or []
    return causes[0]["id"] if causes else "(none)"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, fixtures = sys.argv[1], sys.argv[2]
    with open(fixtures, "rb") as f:
        messages = tomllib.load(f)["message"]
    right = refused = 0
    for m in messages:
        p = subprocess.run(
            [binary, "diagnose", "--json"], input=m["text"].encode(), capture_output=True
        )
        if p.returncode != 0:
            refused += 1
            print(f"{m['id']} | EXIT{p.returncode} | expected {m['cause']}")
            continue
        top = top_cause(json.loads(p.stdout))
        ok = top == m["cause"]
        right += ok
        print(f"{m['id']} | {top} | expected {m['cause']}{'' if ok else ' | WRONG'}")
    print(f"top cause right: {right}/{len(messages)}; exit 2: {refused}")


if __name__ == "__main__":
    main()
