#!/usr/bin/env python3
"""Summarizes a soak's samples.csv (bench/soak/soak.sh): per rank and series, the first, middle
and last sample and the max, then one verdict line per series.

A series is flat when, after the warm-up (the first WARMUP_FRACTION of the run), the floor (the
minimum) of its last quarter exceeds the floor of its first quarter by no more than the allowance.
Peaks do not count (a fresh 16 MiB buffer in flight while a sample is taken); a leak raises the
floor. Allowances:
  rss_kib    5 % of the warm-up value, at least 8 MiB (allocator caches settle slowly)
  threads    0
  fds        0
  log_bytes  64 KiB (a rank's logs must not grow with the op count)
"""
import csv
import sys
from collections import defaultdict

WARMUP_FRACTION = 0.2
SERIES = ("rss_kib", "threads", "fds", "log_bytes")


def allowance(series, base):
    if series == "rss_kib":
        return max(base * 0.05, 8 * 1024)
    if series == "log_bytes":
        return 64 * 1024
    return 0


def main(path):
    rows = defaultdict(list)  # rank -> [(t, {series: value})]
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows[int(r["rank"])].append((int(r["t_s"]), {s: int(r[s]) for s in SERIES}))
    if not rows:
        print("no samples")
        return 1
    t_end = max(t for samples in rows.values() for t, _ in samples)
    t_warm = t_end * WARMUP_FRACTION
    print(f"{len(rows)} ranks, {sum(len(v) for v in rows.values())} samples, {t_end} s; "
          f"warm-up: first {t_warm:.0f} s")
    header = f"{'rank':>4} {'series':<10} {'first':>12} {'middle':>12} {'last':>12} {'max':>12}"
    print(header)
    verdict = {s: [] for s in SERIES}  # series -> ranks that grew
    growth = {s: 0 for s in SERIES}
    for rank in sorted(rows):
        samples = sorted(rows[rank], key=lambda x: x[0])
        first, middle, last = samples[0][1], samples[len(samples) // 2][1], samples[-1][1]
        after = [v for t, v in samples if t >= t_warm] or [samples[-1][1]]
        quarter = max(1, len(after) // 4)
        for s in SERIES:
            mx = max(v[s] for _, v in samples)
            print(f"{rank:>4} {s:<10} {first[s]:>12} {middle[s]:>12} {last[s]:>12} {mx:>12}")
            base = min(v[s] for v in after[:quarter])
            grew = min(v[s] for v in after[-quarter:]) - base
            growth[s] = max(growth[s], grew)
            if grew > allowance(s, base):
                verdict[s].append(rank)
    ok = True
    for s in SERIES:
        bad = verdict[s]
        ok = ok and not bad
        state = "flat" if not bad else f"GROWING on ranks {bad}"
        print(f"verdict {s}: {state} (largest floor growth after warm-up: {growth[s]})")
    print("verdict: all series flat" if ok else "verdict: some series grew")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "samples.csv"))
