#!/usr/bin/env python3
"""Confusion matrices of a chaos results folder (DIR/run-*/result.json): injected fault (the one
whose answer was expected) x reported class, for the ranks' own reports (one count per checked
surviving rank) and for `vigil diagnose` (one count per run); then the counts of hangs, wrong
ranks named, corruptions, crashes and failed runs with their seeds.

  chaos_matrix.py DIR
"""
import collections
import glob
import json
import os
import sys


def table(title, counts, rows, cols):
    lines = [title]
    w0 = max([len(r) for r in rows] + [16])
    widths = [max(len(c), 4) for c in cols]
    lines.append(" " * w0 + " | " + " ".join(c.rjust(w) for c, w in zip(cols, widths)) + " | total")
    for r in rows:
        cells = [counts[(r, c)] for c in cols]
        lines.append(r.ljust(w0) + " | " + " ".join((str(x) if x else ".").rjust(w)
                                                    for x, w in zip(cells, widths))
                     + " | %d" % sum(cells))
    return "\n".join(lines)


def main(d):
    results = []
    for path in sorted(glob.glob(os.path.join(d, "run-*", "result.json"))):
        with open(path) as f:
            results.append(json.load(f))
    if not results:
        print("no results in %s" % d)
        return 1
    ranks = collections.Counter()
    diag = collections.Counter()
    rows, rcols, dcols = set(), set(), set()
    stats = collections.Counter()
    failed = []
    for res in results:
        row = "+".join(sorted({e["kind"] for e in res["expected"]}))
        if len(res["params"]["faults"]) == 2:
            row += " (2 faults)"
        rows.add(row)
        for r, rep in res["ranks"].items():
            if rep["verdict"] in (None, "unchecked"):
                continue
            col = rep["class"] + ("*" if rep["verdict"] == "wrong_rank" else "")
            ranks[(row, col)] += 1
            rcols.add(col)
            stats["rank reports"] += 1
            if rep["verdict"] == "wrong_rank":
                stats["ranks naming a wrong rank"] += 1
            if rep["verdict"] == "misclassified":
                stats["ranks misclassifying"] += 1
        dg = res["diagnose"]
        col = dg["class"] + ("*" if dg["verdict"] == "wrong_rank" else "")
        diag[(row, col)] += 1
        dcols.add(col)
        stats["diagnose verdicts wrong rank"] += dg["verdict"] == "wrong_rank"
        stats["diagnose verdicts misclassified"] += dg["verdict"] == "misclassified"
        stats["hangs"] += bool(res["run"]["hang"])
        stats["runs with corruption"] += bool(res.get("corrupt"))
        stats["crashes"] += sum(p.startswith("crash") for p in res["problems"])
        stats["undetected mismatches"] += sum("reported success" in p for p in res["problems"])
        if not res["passed"]:
            failed.append(res["seed"])
    rows = sorted(rows)
    print("%d runs, %d passed, %d failed" % (len(results), len(results) - len(failed), len(failed)))
    print("(* = right class, wrong rank named)\n")
    print(table("ranks' own reports (injected x reported, one per checked surviving rank):",
                ranks, rows, sorted(rcols)))
    print()
    print(table("vigil diagnose verdicts (injected x reported, one per run):", diag, rows,
                sorted(dcols)))
    print()
    for k in ("hangs", "ranks misclassifying", "ranks naming a wrong rank",
              "diagnose verdicts misclassified", "diagnose verdicts wrong rank",
              "runs with corruption", "crashes", "undetected mismatches", "rank reports"):
        print("%-32s %d" % (k, stats[k]))
    if failed:
        print("failed seeds: %s" % ",".join(str(s) for s in failed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
