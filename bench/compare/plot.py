#!/usr/bin/env python3
"""One chart per op: busbw against message size, log-log, a line per library (and the bound,
when the spec has one). Shared by bench/compare (one host) and bench/cluster (shaped links).

    plot.py CHARTS.json OUTDIR

CHARTS.json: {"title": "...", "charts": [{"name": "allreduce", "title": "AllReduce fp32 sum",
  "series": [{"label": "vigil", "points": [[bytes, busbw_GBps], ...], "bound": false}, ...]}]}
Writes OUTDIR/<name>.png with matplotlib, else OUTDIR/<name>.svg with gnuplot; prints each path.
"""
import json
import os
import shutil
import subprocess
import sys


def human(n):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div:
            return f"{n / div:g}{unit}"
    return f"{n:g}"


def with_matplotlib(spec, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    paths = []
    for c in spec["charts"]:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for s in c["series"]:
            pts = sorted(p for p in s["points"] if p[1] and p[1] > 0)
            if not pts:
                continue
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            if s.get("bound"):
                ax.plot(xs, ys, "k--", linewidth=1.5, label=s["label"])
            else:
                ax.plot(xs, ys, marker="o", markersize=3, label=s["label"])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = sorted({p[0] for s in c["series"] for p in s["points"]})
        ax.set_xticks(ticks)
        ax.set_xticklabels([human(t) for t in ticks], rotation=45)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("busbw (GB/s)")
        ax.set_title(f"{spec.get('title', '')}\n{c['title']}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out, c["name"] + ".png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def with_gnuplot(spec, out):
    paths = []
    for c in spec["charts"]:
        series = [s for s in c["series"] if any(p[1] for p in s["points"])]
        if not series:
            continue
        data = os.path.join(out, c["name"] + ".dat")
        with open(data, "w") as f:
            for s in series:
                f.write(f"# {s['label']}\n")
                for x, y in sorted(s["points"]):
                    if y:
                        f.write(f"{x} {y}\n")
                f.write("\n\n")
        path = os.path.join(out, c["name"] + ".svg")
        plots = ", ".join(
            f"'{data}' index {i} with {'lines dt 2 lc black' if s.get('bound') else 'linespoints'}"
            f" title '{s['label']}'" for i, s in enumerate(series))
        script = (f"set terminal svg size 700,450\nset output '{path}'\nset logscale xy\n"
                  f"set xlabel 'message size (bytes)'\nset ylabel 'busbw (GB/s)'\n"
                  f"set title \"{spec.get('title', '')} {c['title']}\"\nset key left top\n"
                  f"set grid\nplot {plots}\n")
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        paths.append(path)
    return paths


def main():
    spec_path, out = sys.argv[1], sys.argv[2]
    with open(spec_path) as f:
        spec = json.load(f)
    os.makedirs(out, exist_ok=True)
    try:
        import matplotlib  # noqa: F401
        paths = with_matplotlib(spec, out)
    except ImportError:
        if not shutil.which("gnuplot"):
            print("plot.py: neither matplotlib nor gnuplot", file=sys.stderr)
            return 1
        paths = with_gnuplot(spec, out)
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
