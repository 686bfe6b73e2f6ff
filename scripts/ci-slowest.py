#!/usr/bin/env python3
"""Prints the slowest tests of ctest runs and how each ended, from their LastTest.log.

usage: ci-slowest.py N BUILD_DIR...   (a build dir without a ctest log is skipped)
A test run several times (--repeat) is listed once per run.
"""
import re
import sys
from pathlib import Path

TEST = re.compile(r"^\d+/\d+ Test: (.+)$")
TIME = re.compile(r"^Test time =\s*([0-9.]+) sec")
END = re.compile(r"^Test (Passed|Failed|Not Run)|^Test time")


def runs(log: Path):
    name, secs = None, 0.0
    for line in log.read_text(errors="replace").splitlines():
        m = TEST.match(line)
        if m:
            name, secs = m.group(1), 0.0
            continue
        m = TIME.match(line)
        if m and name:
            secs = float(m.group(1))
            continue
        if name and line.startswith("Test ") and not line.startswith("Test time"):
            yield secs, name, line[len("Test "):].rstrip(".")
            name = None


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    n = int(sys.argv[1])
    for build in map(Path, sys.argv[2:]):
        log = build / "Testing" / "Temporary" / "LastTest.log"
        if not log.is_file():
            continue
        rows = list(runs(log))
        total = sum(t for t, _, _ in rows)
        bad = [r for r in rows if r[2] != "Passed"]
        print(f"{build}: {len(rows)} test runs, {total:.0f} s of test time, {len(bad)} not passed")
        for t, name, how in sorted(rows, reverse=True)[:n]:
            print(f"  {t:8.1f} s  {how:8}  {name}")
        for t, name, how in bad[:20]:
            print(f"  not passed: {how}: {name} ({t:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
