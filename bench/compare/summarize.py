#!/usr/bin/env python3
"""Side-by-side table of compare.sh's results (one JSON file per run in RESULTS_DIR).

File names: <series>__<config>[.rN].json (N: the round; each size keeps its best round), series in
{allreduce-lat, allreduce-latz, broadcast-latz, allgather-latz, reducescatter-latz, reduce-latz,
alltoall-latz, allreduce, allgather, reducescatter, broadcast, alltoall}, config in {vigil-shm, ompi-shm, vigil-tcp, ompi-tcp,
gloo, gloo-ring, gloo-bcube}. Prints Markdown: latency (us) and busbw (GB/s) with the ratios
Vigil/peer, the memcpy ceiling, and each performance target as PASS/MISS (min ratio over sizes).
Also writes RESULTS_DIR/charts.json: busbw against size per series and config, for plot.py.
"""
import json
import os
import re
import sys

# The summaries' shared helpers: scripts/lib/bench_tables.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts/lib"))
from bench_tables import fmt, human, load, print_targets  # noqa: E402

SERIES = [
    ("allreduce-lat", "AllReduce fp32 sum, latency"),
    ("allreduce-latz", "AllReduce fp32 sum, latency, Vigil synchronizing after every op (-z 1)"),
    ("broadcast-latz", "Broadcast fp32, latency, Vigil synchronizing after every op (-z 1)"),
    ("allgather-latz", "AllGather fp32, latency, Vigil synchronizing after every op (-z 1)"),
    ("reducescatter-latz", "ReduceScatter fp32 sum, latency, Vigil synchronizing after every op (-z 1)"),
    ("reduce-latz", "Reduce fp32 sum, latency, Vigil synchronizing after every op (-z 1)"),
    ("alltoall-latz", "AlltoAll fp32, latency, Vigil synchronizing after every op (-z 1)"),
    ("allreduce", "AllReduce fp32 sum"),
    ("allgather", "AllGather fp32"),
    ("reducescatter", "ReduceScatter fp32 sum"),
    ("broadcast", "Broadcast fp32"),
    ("alltoall", "AlltoAll fp32"),
]


def rows_by_size(doc):
    """size -> (time_us, busbw) from out_of_place, else in_place."""
    out = {}
    if not doc:
        return out
    for r in doc.get("rows", []):
        cell = r.get("out_of_place") or r.get("in_place")
        if cell:
            out[r["size"]] = (cell["time_us"], cell["busbw_gbps"])
    return out


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def line_trips(d):
    """series -> the line_rtt.c round trips (ns) measured before its rounds, in round order."""
    trips = {}
    for name in sorted(os.listdir(d), key=lambda n: [int(t) if t.isdigit() else t
                                                      for t in re.split(r"(\d+)", n)]):
        m = re.fullmatch(r"line_rtt\.(.+)\.r\d+\.json", name)
        doc = load(os.path.join(d, name)) if m else None
        if doc and doc.get("rtt_ns") is not None:
            trips.setdefault(m.group(1), []).append(f"{doc['rtt_ns']:.0f} ns")
    return trips


def main():
    d = sys.argv[1]
    data = {}
    for name in sorted(os.listdir(d)):
        if name.endswith(".json") and "__" in name:
            series, cfg = name[:-5].split("__", 1)
            cfg = re.sub(r"\.r\d+$", "", cfg)  # rounds of one run: keep each size's best
            best = data.setdefault(series, {}).setdefault(cfg, {})
            for size, cell in rows_by_size(load(os.path.join(d, name))).items():
                if size not in best or cell[0] < best[size][0]:
                    best[size] = cell
    targets = []  # (text, min ratio, threshold, higher_is_better)

    def track(text, values, threshold, higher=True):
        vals = [v for v in values if v is not None]
        targets.append((text, (min(vals) if higher else max(vals)) if vals else None, threshold, higher))

    memcpy = load(os.path.join(d, "memcpy.json"))
    meta = load(os.path.join(d, "meta.json")) or {}
    print(f"# Vigil vs OpenMPI vs Gloo — {meta.get('nranks', '?')} ranks on one host\n")
    for k in ("date", "host", "cpus", "load_before", "load_after", "vigil", "openmpi", "gloo", "command"):
        if k in meta:
            print(f"- {k}: `{meta[k]}`")
    if memcpy:
        print(f"- memcpy ceiling (one thread, {human(memcpy['bytes'])}): **{memcpy['best_gbps']:.2f} GB/s**")
    trips = line_trips(d)
    if trips:
        print("- core-to-core round trip before each round (line_rtt.c; on a virtual machine it "
              "moves with where the host runs the vCPUs): " +
              "; ".join(f"{series} " + ", ".join(trips[series]) for series in trips))
    print()

    for series, title in SERIES:
        cfgs = data.get(series)
        if not cfgs:
            continue
        sizes = sorted({s for rows in cfgs.values() for s in rows})
        get = lambda cfg, s, i: (cfgs.get(cfg, {}).get(s) or (None, None))[i]
        gloo_cfgs = [c for c in ("gloo-ring", "gloo-bcube", "gloo") if c in cfgs]
        if series.endswith(("-lat", "-latz")):
            target = ", target ≤ 1.2 vs OpenMPI shm" if series == "allreduce-lat" else ""
            print(f"## {title}: time per call (µs, lower is better; ratio = Vigil/peer{target})\n")
            hdr = ["size", "vigil shm", "ompi shm", "ratio", "vigil tcp", "ompi tcp", "ratio"] + gloo_cfgs
            print("| " + " | ".join(hdr) + " |")
            print("|" + "---|" * len(hdr))
            shm_r = []
            for s in sizes:
                vs, os_, vt, ot = (get(c, s, 0) for c in ("vigil-shm", "ompi-shm", "vigil-tcp", "ompi-tcp"))
                shm_r.append(ratio(vs, os_))
                cells = [human(s), fmt(vs, 1), fmt(os_, 1), fmt(ratio(vs, os_)), fmt(vt, 1), fmt(ot, 1),
                         fmt(ratio(vt, ot))] + [fmt(get(g, s, 0), 1) for g in gloo_cfgs]
                print("| " + " | ".join(cells) + " |")
            print()
            if series == "allreduce-lat":
                track("AllReduce shm 8 B–1 KiB latency ≤ 1.2× OpenMPI", shm_r, 1.2, higher=False)
            continue
        print(f"## {title}: busbw (GB/s, higher is better; ratio = Vigil/peer)\n")
        hdr = ["size", "vigil shm", "ompi shm", "ratio", "vigil tcp", "ompi tcp", "ratio"] + gloo_cfgs
        if gloo_cfgs:
            hdr.append("tcp/gloo")
        print("| " + " | ".join(hdr) + " |")
        print("|" + "---|" * len(hdr))
        shm_r, tcp_r, gloo_r = [], [], []
        for s in sizes:
            vs, os_, vt, ot = (get(c, s, 1) for c in ("vigil-shm", "ompi-shm", "vigil-tcp", "ompi-tcp"))
            gl = [get(g, s, 1) for g in gloo_cfgs]
            best_gloo = max([g for g in gl if g is not None], default=None)
            shm_r.append(ratio(vs, os_))
            tcp_r.append(ratio(vt, ot))
            gloo_r.append(ratio(vt, best_gloo))
            cells = [human(s), fmt(vs), fmt(os_), fmt(ratio(vs, os_)), fmt(vt), fmt(ot), fmt(ratio(vt, ot))]
            cells += [fmt(g) for g in gl]
            if gloo_cfgs:
                cells.append(fmt(ratio(vt, best_gloo)))
            print("| " + " | ".join(cells) + " |")
        print()
        if series == "allreduce":
            track("AllReduce shm 1–64 MiB busbw ≥ 1.0× OpenMPI shm", shm_r, 1.0)
            track("AllReduce tcp 1–64 MiB busbw ≥ 1.0× OpenMPI tcp", tcp_r, 1.0)
            track("AllReduce tcp 1–64 MiB busbw ≥ 1.2× Gloo (best of ring/bcube)", gloo_r, 1.2)
        else:
            track(f"{title} shm ≥ 1 MiB busbw ≥ 0.9× OpenMPI shm", shm_r, 0.9)

    charts = []
    for series, title in SERIES:
        cfgs = data.get(series)
        if not cfgs or series.endswith(("-lat", "-latz")):
            continue
        charts.append({"name": series, "title": title, "series": [
            {"label": cfg, "points": [[s, cell[1]] for s, cell in sorted(rows.items())]}
            for cfg, rows in sorted(cfgs.items())]})
    with open(os.path.join(d, "charts.json"), "w") as f:
        json.dump({"title": f"{meta.get('nranks', '?')} ranks on one host", "charts": charts}, f)

    print_targets("Performance targets (worst ratio over the sizes)", "worst ratio", targets)


if __name__ == "__main__":
    main()
