#!/usr/bin/env python3
"""Tables of bench/cluster/run.sh's results against the link bound (README.md: the model).

    summarize.py RESULTS_DIR        # Markdown on stdout, RESULTS_DIR/charts.json for plot.py

File names: <op>-<lat|bw>__<tool>.rN.json (N: the round), tool in {vigil, ompi, gloo, gloo-ring,
gloo-bcube}; meta.json holds the cluster (hosts, ranks per host, rate, MTU, measured round trip).
Each size's figure is the median over the rounds of its time per call.
"""
import json
import math
import os
import re
import statistics
import sys

# The summaries' shared helpers: scripts/lib/bench_tables.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts/lib"))
from bench_tables import fmt, human, load, print_targets  # noqa: E402

OPS = [
    ("allreduce", "AllReduce fp32 sum"),
    ("allgather", "AllGather fp32"),
    ("reducescatter", "ReduceScatter fp32 sum"),
    ("broadcast", "Broadcast fp32"),
    ("alltoall", "AlltoAll fp32"),
]
TARGET_MIN_BYTES = 4 << 20


def pct(v):
    return "—" if v is None else f"{100 * v:.0f}%"


def bus_factor(op, n):
    if op == "allreduce":
        return 2.0 * (n - 1) / n
    if op in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def rtt_runs(meta):
    """The round trips measured, as `before X us, after Y us`."""
    runs = [f"before {meta['rtt']['rtt_us_median']:.1f} µs"]
    after = meta.get("rtt_after") or {}
    if "rtt_us_median" in after:
        runs.append(f"after {after['rtt_us_median']:.1f} µs")
    return ", ".join(runs)


def rtt_min(meta):
    """The shortest single round trip of the measurements."""
    return min(r["rtt_us_min"] for r in (meta["rtt"], meta.get("rtt_after") or meta["rtt"]))


class Model:
    """Lower bound on one op's time on p hosts of k ranks, links of `rate` bit/s each way."""

    def __init__(self, meta):
        self.p = meta["hosts"]
        self.k = meta["ranks_per_host"]
        self.n = self.p * self.k
        mtu = meta.get("mtu", 1500)
        # TCP payload per frame the shaper counts: MTU - IP/TCP headers with timestamps (52 B)
        # out of MTU + the 14-byte Ethernet header.
        self.efficiency = (mtu - 52) / (mtu + 14)
        self.payload_Bps = meta["rate_bps"] / 8 * self.efficiency
        # The round trip is measured before the runs and after them; the machine's speed moves
        # between the two (17 and 46 us medians on the same rig minutes apart), so the bound
        # takes the shorter: the stricter one.
        self.rtt_us = meta["rtt"]["rtt_us_median"]
        after = meta.get("rtt_after") or {}
        if "rtt_us_median" in after:
            self.rtt_us = min(self.rtt_us, after["rtt_us_median"])

    def link_bytes(self, op, size):
        """Bytes that must cross the busiest host link (one direction), size = the nccl-tests
        size of the op (the whole buffer; AllGather/AlltoAll/ReduceScatter: n blocks)."""
        p, k = self.p, self.k
        if op == "allreduce":
            return 2.0 * (p - 1) / p * size
        if op in ("allgather", "reducescatter"):
            return (p - 1) / p * size
        if op == "broadcast":
            return float(size)
        if op == "alltoall":
            return k * (p - 1) / p * size  # every rank's blocks for other hosts, no sharing
        raise ValueError(op)

    def steps(self, op):
        return 1 if op == "alltoall" else math.ceil(math.log2(self.p))

    def time_us(self, op, size):
        bw = self.link_bytes(op, size) / self.payload_Bps * 1e6
        return max(bw, self.steps(op) * self.rtt_us)

    def busbw(self, op, size):
        return size * bus_factor(op, self.n) / self.time_us(op, size) / 1e3


def main():
    d = sys.argv[1]
    meta = load(os.path.join(d, "meta.json")) or {}
    model = Model(meta)
    # runs[op][tool][size] = [time_us per round]; wrong[(op, tool)] = Vigil's wrong results
    runs, wrong, algs = {}, {}, {}
    for name in sorted(os.listdir(d)):
        m = re.match(r"(\w+)-(lat|bw)__([\w-]+)\.r\d+\.json$", name)
        if not m:
            continue
        op, kind, tool = m.groups()
        doc = load(os.path.join(d, name))
        if not doc:
            continue
        for r in doc.get("rows", []):
            cell = r.get("out_of_place") or r.get("in_place")
            if not cell:
                continue
            # A size both series ran (BW_MIN=1K) counts once: the latency loop's up to 1 KiB,
            # the bandwidth loop's above (their call counts differ by 1000x).
            if (kind == "lat") != (r["size"] <= 1024):
                continue
            runs.setdefault(op, {}).setdefault(tool, {}).setdefault(r["size"], []).append(cell["time_us"])
            if cell.get("wrong"):
                wrong[(op, tool)] = wrong.get((op, tool), 0) + cell["wrong"]
    print(f"# Vigil vs OpenMPI vs Gloo — {model.p} hosts x {model.k} ranks, "
          f"links {meta.get('rate')} each way\n")
    for k in ("date", "cpus", "load_before", "load_after", "vigil", "vigil_env", "openmpi", "gloo",
              "rounds", "failed_runs", "command"):
        if k in meta and meta[k] not in ("", None):
            print(f"- {k}: `{meta[k]}`")
    print(f"- link: {meta.get('rate')} (tbf, burst {meta.get('tbf_burst')} B), MTU {meta.get('mtu')}, "
          f"loss {meta.get('loss_pct')}%; TCP payload ceiling {model.payload_Bps / 1e9:.3f} GB/s "
          f"({100 * model.efficiency:.1f}% of the rate); measured single-stream goodput "
          f"{meta['stream']['goodput_gbit_s'] / 8:.3f} GB/s; round trip (8-byte TCP ping-pong) median "
          f"{model.rtt_us:.1f} µs (the shorter of {rtt_runs(meta)}), min "
          f"{rtt_min(meta):.1f} µs")
    print("- figures: median over the rounds; busbw in GB/s (nccl-tests' bus factors over "
          f"{model.n} ranks); bound: README.md's model; % = fraction of the bound\n")

    med = lambda xs: statistics.median(xs) if xs else None
    charts = []
    targets = []
    for op, title in OPS:
        tools = runs.get(op)
        if not tools:
            continue
        gloos = [t for t in ("gloo-ring", "gloo-bcube", "gloo") if t in tools]
        sizes = sorted({s for t in tools.values() for s in t})

        def time(tool, s):
            return med(tools.get(tool, {}).get(s, []))

        def gloo_time(s):
            ts = [time(g, s) for g in gloos if time(g, s) is not None]
            return min(ts) if ts else None

        def bw(t, s):
            return None if t is None else s * bus_factor(op, model.n) / t / 1e3

        gl_note = " (gloo: best of ring and bcube)" if len(gloos) > 1 else ""
        small = [s for s in sizes if s <= 1024]
        big = [s for s in sizes if s > 1024]
        if small:
            print(f"## {title}: time per call (µs, lower is better){gl_note}\n")
            print("| size | vigil | ompi | gloo | bound | bound/vigil | bound/ompi | bound/gloo |")
            print("|---|---|---|---|---|---|---|---|")
            for s in small:
                v, o, g, b = time("vigil", s), time("ompi", s), gloo_time(s), model.time_us(op, s)
                fr = lambda t: None if t is None else b / t
                print(f"| {human(s)} | {fmt(v, 1)} | {fmt(o, 1)} | {fmt(g, 1)} | {b:.1f} | "
                      f"{pct(fr(v))} | {pct(fr(o))} | {pct(fr(g))} |")
                if op == "allreduce" and s == 8 and v is not None:
                    targets.append(("AllReduce 8 B time ≤ 1.2× the round-trip bound", v / b, 1.2, False))
            print()
        if big:
            print(f"## {title}: busbw (GB/s, higher is better){gl_note}\n")
            print("| size | vigil | ompi | gloo | bound | vigil % | ompi % | gloo % | vigil / best peer |")
            print("|---|---|---|---|---|---|---|---|---|")
            worst_frac, worst_peer = None, None
            for s in big:
                v, o, g = bw(time("vigil", s), s), bw(time("ompi", s), s), bw(gloo_time(s), s)
                b = model.busbw(op, s)
                fr = lambda x: None if x is None else x / b
                peer = max([x for x in (o, g) if x is not None], default=None)
                vp = None if v is None or not peer else v / peer
                print(f"| {human(s)} | {fmt(v, 3)} | {fmt(o, 3)} | {fmt(g, 3)} | {b:.3f} | "
                      f"{pct(fr(v))} | {pct(fr(o))} | {pct(fr(g))} | {fmt(vp)} |")
                if s >= TARGET_MIN_BYTES and v is not None:
                    worst_frac = fr(v) if worst_frac is None else min(worst_frac, fr(v))
                    if vp is not None:
                        worst_peer = vp if worst_peer is None else min(worst_peer, vp)
            print()
            targets.append((f"{title} ≥ 4 MiB: busbw ≥ 90% of the bound", worst_frac, 0.9, True))
            targets.append((f"{title} ≥ 4 MiB: busbw ≥ 1.1× the better of OpenMPI and Gloo",
                            worst_peer, 1.1, True))
        series = []
        for t in ["vigil", "ompi"] + gloos:
            if t in tools:
                series.append({"label": t, "points": [[s, bw(time(t, s), s)] for s in sizes]})
        series.append({"label": "bound", "bound": True,
                       "points": [[s, model.busbw(op, s)] for s in sizes]})
        charts.append({"name": op, "title": title, "series": series})

    print_targets("Targets (worst over the sizes)", "worst", targets)
    total_wrong = sum(v for (op, t), v in wrong.items() if t == "vigil")
    print(f"\nVigil's checked results: {total_wrong} wrong.")
    with open(os.path.join(d, "charts.json"), "w") as f:
        json.dump({"title": f"{model.p} hosts x {model.k} ranks, {meta.get('rate')} links",
                   "charts": charts}, f)


if __name__ == "__main__":
    main()
