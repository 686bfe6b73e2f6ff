"""DDP step time and allreduce throughput, vigil backend vs gloo, in the same run of the same
script: every rank holds a vigil group (the default) and a gloo group over the same ranks, and
the two are timed alternately on the same tensors and model.

    PYTHONPATH=build/python python3 bench/torch/ddp_bench.py [-n 4] [--steps 20] [--iters 20]

Starts n ranks itself (fork; FileStore rendezvous in a temp folder), or runs as one rank under a
launcher that sets RANK / WORLD_SIZE (torchrun: then MASTER_ADDR/PORT are used). Rank 0 prints.
"""
import argparse
import copy
import json
import os
import shutil
import statistics
import sys
import tempfile
import time


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=4, help="ranks to start (self-launch)")
    p.add_argument("--sizes", default="4K,64K,1M,16M", help="allreduce sizes in bytes (fp32)")
    p.add_argument("--iters", type=int, default=20, help="allreduce iterations per size")
    p.add_argument("--steps", type=int, default=20, help="timed DDP steps per backend")
    p.add_argument("--width", type=int, default=1024, help="DDP model: 4 Linear(width, width)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p.parse_args()


def size_bytes(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def bench(rank, n, args, store_path):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import vigil_torch  # noqa: F401

    torch.set_num_threads(1)
    if store_path:
        dist.init_process_group("vigil", store=dist.FileStore(store_path, n), rank=rank, world_size=n)
    else:
        dist.init_process_group("vigil")
    groups = {"vigil": None, "gloo": dist.new_group(backend="gloo")}
    out = {"allreduce": [], "ddp": {}}

    for s in args.sizes.split(","):
        nbytes = size_bytes(s)
        t = torch.ones(nbytes // 4)
        row = {"bytes": nbytes}
        for name, g in groups.items():
            dist.all_reduce(t, group=g)  # warm-up (links, buffers)
            dist.barrier(group=g)
            t0 = time.perf_counter()
            for _ in range(args.iters):
                dist.all_reduce(t, group=g)
            dt = (time.perf_counter() - t0) / args.iters
            worst = torch.tensor([dt], dtype=torch.float64)
            dist.all_reduce(worst, op=dist.ReduceOp.MAX, group=g)
            us = worst.item() * 1e6
            row[name] = {"us": us, "algbw_GBs": nbytes / us / 1e3,
                         "busbw_GBs": nbytes / us / 1e3 * 2 * (n - 1) / n}
        out["allreduce"].append(row)

    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    base = torch.nn.Sequential(*layers)
    params = sum(p.numel() for p in base.parameters())
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(args.batch, args.width, generator=g)
    y = torch.randn(args.batch, args.width, generator=g)
    models = {}
    for name, grp in groups.items():
        m = DDP(copy.deepcopy(base), process_group=grp)
        models[name] = (m, torch.optim.SGD(m.parameters(), lr=0.001))
    times = {name: [] for name in groups}

    def step(name):
        m, opt = models[name]
        opt.zero_grad()
        torch.nn.functional.mse_loss(m(x), y).backward()
        opt.step()

    for name in groups:  # warm-up
        step(name)
        step(name)
    for _ in range(args.steps):  # alternate so both see the same machine load
        for name, grp in groups.items():
            dist.barrier(group=grp)
            t0 = time.perf_counter()
            step(name)
            times[name].append(time.perf_counter() - t0)
    for name, grp in groups.items():
        med = torch.tensor([statistics.median(times[name])], dtype=torch.float64)
        dist.all_reduce(med, op=dist.ReduceOp.MAX, group=grp)
        out["ddp"][name] = {"median_step_ms": med.item() * 1e3}
    out["ddp"]["params"] = params
    out["ddp"]["grad_MB"] = params * 4 / 2**20
    dist.destroy_process_group()
    return out


def report(out, n, args):
    if args.json:
        print(json.dumps({"ranks": n, **out}, indent=1))
        return
    print(f"allreduce fp32 sum, {n} ranks, {args.iters} iters per size (slowest rank's mean)")
    print(f"{'bytes':>10} {'vigil us':>10} {'busbw GB/s':>10} {'gloo us':>10} {'busbw GB/s':>10} {'gloo/vigil':>10}")
    for r in out["allreduce"]:
        v, g = r["vigil"], r["gloo"]
        print(f"{r['bytes']:>10} {v['us']:>10.1f} {v['busbw_GBs']:>10.3f} {g['us']:>10.1f} "
              f"{g['busbw_GBs']:>10.3f} {g['us'] / v['us']:>10.2f}")
    d = out["ddp"]
    print(f"DDP step (4 x Linear({args.width},{args.width}), {d['params']} params = "
          f"{d['grad_MB']:.1f} MB of gradients, batch {args.batch}, median of {args.steps}):")
    print(f"  vigil {d['vigil']['median_step_ms']:.1f} ms   gloo {d['gloo']['median_step_ms']:.1f} ms   "
          f"gloo/vigil {d['gloo']['median_step_ms'] / d['vigil']['median_step_ms']:.2f}")


def main():
    args = parse()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        out = bench(rank, n, args, None)
        if rank == 0:
            report(out, n, args)
        return
    import torch  # noqa: F401  (imported once, before the fork)
    n = args.n
    work = tempfile.mkdtemp(prefix="ddp_bench-")
    os.environ.setdefault("ASCEND_PROCESS_LOG_PATH", os.path.join(work, "logs"))
    os.environ.setdefault("HCCL_IF_BASE_PORT", "0")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    pids = []
    for rank in range(n):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                out = bench(rank, n, args, os.path.join(work, "store"))
                if rank == 0:
                    report(out, n, args)
            except BaseException as e:  # noqa: BLE001
                print(f"rank {rank}: {e!r}", file=sys.stderr)
                code = 1
            sys.stdout.flush()
            os._exit(code)  # torch's exit handlers are slow in a forked child
        pids.append(pid)
    codes = [os.waitpid(p, 0)[1] for p in pids]
    if any(codes):
        print(f"some ranks failed; logs in {work}/logs", file=sys.stderr)
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
