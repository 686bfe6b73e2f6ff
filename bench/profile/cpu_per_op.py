#!/usr/bin/env python3
"""CPU and wall time per op of small AllReduces, Vigil builds against each other and OpenMPI.

    bench/profile/cpu_per_op.py ROUNDS TOOL...

TOOL is `NAME=path/to/vigil` (optionally `@ENV=VALUE,...` appended) or `mpi` (OpenMPI's
harness, bench/compare's mpi_bench). Each round runs every tool twice under
`/usr/bin/time -f '%U %S %e %c %w'`: `vigil bench allreduce --ranks R --transport shm
--outofplace -b SIZE -e SIZE -n N -w 100 -z Z` (or `mpirun ... -np R mpi_bench allreduce -b SIZE
-e SIZE -n N -w 100`) with N and with 1,000 ops, and prints the difference divided by N - 1,000:
user, sys and wall µs per op (CPU of all ranks together) and involuntary context switches per op;
start-up and tear-down cancel out. Tools alternate within a round, so each round's figures share
the machine's load; compare medians over rounds, never single runs. Every Vigil result is
checked (a `#wrong` other than 0 is printed). The placement column counts, a quarter second into
the run, how many busy threads sit on each CPU (e.g. 2+2).

Environment: Z (0: ops back to back, nccl-tests' default; 1: synchronize after each), SIZE (64),
N (41000), RANKS (4), MPI_BENCH (default build-compare/compare/mpi_bench, built by
bench/compare/compare.sh).
"""
import collections
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
Z = os.environ.get("Z", "0")
SIZE = os.environ.get("SIZE", "64")
N = int(os.environ.get("N", "41000"))
RANKS = os.environ.get("RANKS", "4")
MPI_BENCH = os.environ.get("MPI_BENCH", os.path.join(REPO, "build-compare/compare/mpi_bench"))
SMALL = 1000


def command(tool, n):
    if tool == "mpi":
        return ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np",
                RANKS, MPI_BENCH, "allreduce", "-b", SIZE, "-e", SIZE, "-n", str(n), "-w", "100"]
    path = os.path.abspath(tool.split("=", 1)[1])  # runs in a scratch folder
    return [path, "bench", "allreduce", "--ranks", RANKS, "--transport", "shm", "--outofplace",
            "-b", SIZE, "-e", SIZE, "-n", str(n), "-w", "100", "-z", Z]


def busy_threads():
    """(utime+stime, cpu) of every vigil / mpi_bench thread."""
    found = {}
    for path in glob.glob("/proc/[0-9]*/task/[0-9]*/stat"):
        try:
            stat = open(path).read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        if not (name.startswith("vigil") or name.startswith("mpi_bench")):
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        found[path] = (int(fields[11]) + int(fields[12]), int(fields[36]))
    return found


def run(tool, n, sample, workdir):
    env = dict(os.environ, OMPI_MCA_btl_base_warn_component_unused="0")
    if "@" in tool:
        tool, extra = tool.split("@", 1)
        for kv in extra.split(","):
            key, value = kv.split("=", 1)
            env[key] = value
    proc = subprocess.Popen(["/usr/bin/time", "-f", "TIME %U %S %e %c %w"] + command(tool, n),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=workdir)
    placement = ""
    if sample:
        time.sleep(0.25)
        before = busy_threads()
        time.sleep(0.1)
        after = busy_threads()
        cpus = collections.Counter(after[k][1] for k in after
                                   if k in before and after[k][0] - before[k][0] >= 2)
        placement = "+".join(str(cpus[c]) for c in sorted(cpus, key=lambda c: -cpus[c]))
    out = proc.communicate()[0]
    times = re.findall(r"TIME ([\d.]+) ([\d.]+) ([\d.]+) (\d+) (\d+)", out)
    if proc.returncode != 0 or not times:
        sys.exit(f"{tool} failed (exit {proc.returncode}):\n{out[-2000:]}")
    latency = None
    for line in out.splitlines():
        cols = line.split()
        if tool != "mpi" and len(cols) > 9 and cols[0] == SIZE and cols[1].isdigit():
            latency = float(cols[5])
            if cols[8] != "0":
                print("WRONG", line)
        found = re.search(r'"time_us": ([\d.]+)', line)
        if tool == "mpi" and found:
            latency = float(found.group(1))
    return [float(x) for x in times[-1]], latency, placement


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rounds, tools = int(sys.argv[1]), sys.argv[2:]
    rows = {t: [] for t in tools}
    with tempfile.TemporaryDirectory(prefix="cpu-per-op.") as workdir:
        for r in range(rounds):
            for tool in tools:
                big, latency, placement = run(tool, N, True, workdir)
                small, _, _ = run(tool, SMALL, False, workdir)
                per_op = [(b - s) / (N - SMALL) * 1e6 for b, s in zip(big, small)]
                switches = (big[3] - small[3]) / (N - SMALL)
                rows[tool].append((per_op[0], per_op[1], per_op[2], switches, latency, placement))
                name = tool.split("=")[0]
                print(f"round {r} {name:8s} user {per_op[0]:5.2f} sys {per_op[1]:5.2f} "
                      f"wall {per_op[2]:5.2f} us/op  invcs {switches:.2f}/op  bench {latency}  "
                      f"place {placement}", flush=True)
    print(f"medians over {rounds} rounds (load {os.getloadavg()[0]:.2f} now):")
    for tool in tools:
        cols = list(zip(*rows[tool]))
        med = [statistics.median(c) for c in cols[:4]]
        print(f"{tool.split('=')[0]:8s} user {med[0]:5.2f} sys {med[1]:5.2f} "
              f"wall {med[2]:5.2f} [{min(cols[2]):.2f}-{max(cols[2]):.2f}] invcs {med[3]:.2f}")


if __name__ == "__main__":
    main()
