"""Every collective of the vigil backend against gloo's result on the same inputs, 4 ranks, every
dtype Vigil supports (int8/16/32/64, uint8, fp16, bf16, fp32, fp64, bool). Inputs are small
integers, so every summation order gives the exact same result. Where gloo (torch 1.13) lacks a
collective or a dtype, the reference is built from gloo's results of the collective it has or on
a wider dtype (noted per case)."""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_test_util as util  # noqa: E402

N = 4
DTYPES = ["int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32",
          "float64", "bool"]


def run(rank, n, work):
    import torch
    import torch.distributed as dist

    gloo = util.init_groups(rank, n, work)
    R = dist.ReduceOp
    checked = []
    failures = []

    def gen(case, dtype, shape, lo=0, hi=4):
        g = torch.Generator().manual_seed(1000 * case + rank)
        t = torch.randint(lo, hi, shape, generator=g)
        return t.bool() if dtype == torch.bool else t.to(dtype)

    def gloo_ref(dtype, fn, *tensors):
        """fn(*tensors, group=gloo) in dtype; on a dtype gloo lacks, on a wide one, cast back."""
        try:
            ts = [t.clone() for t in tensors]
            fn(*ts, group=gloo)
            return ts, "gloo"
        except RuntimeError:
            wide = torch.int64 if not dtype.is_floating_point else torch.float64
            ts = [t.to(wide) for t in tensors]
            fn(*ts, group=gloo)
            return [t.to(dtype) for t in ts], f"gloo({wide})"

    def expect(name, got, want, how):
        checked.append(name)
        if isinstance(got, torch.Tensor):
            got, want = [got], [want]
        for g, w in zip(got, want):
            if g.dtype != w.dtype or not torch.equal(g, w):
                failures.append(f"rank {rank} {name} vs {how}: got {g.tolist()} want {w.tolist()}")
                return

    def wide_op(dtype, op):
        # Bool reductions: SUM is "any", PRODUCT "all" (torch's NCCL semantics).
        if dtype == torch.bool:
            return {R.SUM: R.MAX, R.PRODUCT: R.MIN}.get(op, op)
        return op

    for di, dname in enumerate(DTYPES):
        dt = getattr(torch, dname)
        c = 100 * di
        # all_reduce, every op (PRODUCT on 1..2 so int8 cannot overflow).
        for oi, op in enumerate([R.SUM, R.PRODUCT, R.MIN, R.MAX]):
            lo, hi = (1, 3) if op == R.PRODUCT else (0, 4)
            x = gen(c + oi, dt, (5, 3), lo, hi)
            mine = x.clone()
            dist.all_reduce(mine, op=op)
            ref, how = gloo_ref(dt, lambda t, group: dist.all_reduce(t, op=wide_op(dt, op), group=group), x)
            expect(f"all_reduce/{dname}/{op}", mine, ref[0], how)
        # broadcast from rank 1
        x = gen(c + 10, dt, (7,))
        mine = x.clone()
        dist.broadcast(mine, src=1)
        ref, how = gloo_ref(dt, lambda t, group: dist.broadcast(t, src=1, group=group), x)
        expect(f"broadcast/{dname}", mine, ref[0], how)
        # reduce to rank 2 (only the root's result is defined)
        x = gen(c + 11, dt, (6,))
        mine = x.clone()
        dist.reduce(mine, dst=2, op=R.SUM)
        ref, how = gloo_ref(dt, lambda t, group: dist.reduce(t, dst=2, op=wide_op(dt, R.SUM), group=group), x)
        if rank == 2:
            expect(f"reduce/{dname}", mine, ref[0], how)
        # all_gather (list form) and _all_gather_base
        x = gen(c + 12, dt, (2, 3))
        mine = [torch.empty_like(x) for _ in range(n)]
        dist.all_gather(mine, x)
        theirs = [torch.empty_like(x) for _ in range(n)]
        ref, how = gloo_ref(dt, lambda t, *outs, group: dist.all_gather(list(outs), t, group=group), x, *theirs)
        expect(f"all_gather/{dname}", mine, ref[1:], how)
        flat = torch.empty((n * 2, 3), dtype=dt)
        dist.all_gather_into_tensor(flat, x)
        expect(f"all_gather_into_tensor/{dname}", flat, torch.cat(ref[1:]), how + " all_gather")
        # reduce_scatter (list) and _reduce_scatter_base: gloo has neither; the reference is
        # gloo's all_reduce of the whole input, this rank's chunk.
        inputs = [gen(c + 20 + i, dt, (4,)) for i in range(n)]
        out = torch.empty(4, dtype=dt)
        dist.reduce_scatter(out, inputs, op=R.SUM)
        whole = torch.cat(inputs)
        ref, how = gloo_ref(dt, lambda t, group: dist.all_reduce(t, op=wide_op(dt, R.SUM), group=group), whole)
        want = ref[0].chunk(n)[rank]
        expect(f"reduce_scatter/{dname}", out, want, how + " all_reduce")
        out2 = torch.empty(4, dtype=dt)
        dist.reduce_scatter_tensor(out2, whole, op=R.SUM)
        expect(f"reduce_scatter_tensor/{dname}", out2, want, how + " all_reduce")
        # all_to_all_single: equal splits, then uneven ones (rank r sends r+i+1 rows to rank i)
        x = gen(c + 30, dt, (n * 2, 3))
        mine = torch.empty_like(x)
        dist.all_to_all_single(mine, x)
        theirs = torch.empty_like(x)
        ref, how = gloo_ref(dt, lambda o, i, group: dist.all_to_all_single(o, i, group=group), theirs, x)
        expect(f"all_to_all_single/{dname}", mine, ref[0], how)
        in_splits = [rank + i + 1 for i in range(n)]
        out_splits = [i + rank + 1 for i in range(n)]
        x = gen(c + 31, dt, (sum(in_splits), 2))
        mine = torch.empty((sum(out_splits), 2), dtype=dt)
        dist.all_to_all_single(mine, x, out_splits, in_splits)
        theirs = torch.empty_like(mine)
        ref, how = gloo_ref(dt, lambda o, i, group: dist.all_to_all_single(o, i, out_splits, in_splits, group=group), theirs, x)
        expect(f"all_to_all_single_v/{dname}", mine, ref[0], how)
        # all_to_all (list form): gloo lacks it; the reference is gloo's all_to_all_single of
        # the concatenated inputs with the same splits.
        ins = [gen(c + 40 + i, dt, (i + rank + 1,)) for i in range(n)]
        outs = [torch.empty(rank + i + 1, dtype=dt) for i in range(n)]
        dist.all_to_all(outs, ins)
        cat_out = torch.empty(sum(o.numel() for o in outs), dtype=dt)
        ref, how = gloo_ref(dt, lambda o, i, group: dist.all_to_all_single(
            o, i, [o.numel() for o in outs], [t.numel() for t in ins], group=group), cat_out, torch.cat(ins))
        expect(f"all_to_all/{dname}", outs, list(ref[0].split([o.numel() for o in outs])), how + " all_to_all_single")
        # gather to / scatter from rank 3
        x = gen(c + 50, dt, (3,))
        mine = [torch.empty_like(x) for _ in range(n)] if rank == 3 else None
        dist.gather(x, mine, dst=3)
        theirs = [torch.empty_like(x) for _ in range(n)] if rank == 3 else None
        ref, how = gloo_ref(dt, lambda t, *o, group: dist.gather(t, list(o) if rank == 3 else None, dst=3, group=group),
                            x, *(theirs or []))
        if rank == 3:
            expect(f"gather/{dname}", mine, ref[1:], how)
        parts = [gen(c + 60 + i, dt, (3,)) for i in range(n)] if rank == 0 else None
        out = torch.empty(3, dtype=dt)
        dist.scatter(out, parts, src=0)
        theirs = torch.empty(3, dtype=dt)
        ref, how = gloo_ref(dt, lambda o, *p, group: dist.scatter(o, list(p) if rank == 0 else None, src=0, group=group),
                            theirs, *(parts or []))
        expect(f"scatter/{dname}", out, ref[0], how)
        # send/recv: a ring with isend/irecv (any order), and blocking pairs 0->1, 2->3
        x = gen(c + 70, dt, (5,))
        got = torch.empty_like(x)
        reqs = [dist.irecv(got, src=(rank - 1) % n), dist.isend(x, dst=(rank + 1) % n)]
        for r in reqs:
            r.wait()
        theirs = torch.empty_like(x)
        greqs = [dist.isend(x, dst=(rank + 1) % n, group=gloo), dist.irecv(theirs, src=(rank - 1) % n, group=gloo)]
        for r in greqs:
            r.wait()
        expect(f"isend_irecv_ring/{dname}", got, theirs, "gloo")
        if rank % 2 == 0:
            dist.send(x, dst=rank + 1)
        else:
            got = torch.empty_like(x)
            dist.recv(got, src=rank - 1)
        if rank % 2 == 0:
            dist.send(x, dst=rank + 1, group=gloo)
        else:
            theirs = torch.empty_like(x)
            dist.recv(theirs, src=rank - 1, group=gloo)
            expect(f"send_recv/{dname}", got, theirs, "gloo")

    # batch_isend_irecv (coalesced): both directions of the ring at once
    x = torch.arange(6, dtype=torch.float32) + 10 * rank
    a, b = torch.empty(6), torch.empty(6)
    ops = [dist.P2POp(dist.isend, x, (rank + 1) % n), dist.P2POp(dist.isend, x, (rank - 1) % n),
           dist.P2POp(dist.irecv, a, (rank - 1) % n), dist.P2POp(dist.irecv, b, (rank + 1) % n)]
    for r in dist.batch_isend_irecv(ops):
        r.wait()
    expect("batch_isend_irecv", [a, b], [torch.arange(6.0) + 10 * ((rank - 1) % n),
                                         torch.arange(6.0) + 10 * ((rank + 1) % n)], "expected")
    # A non-contiguous tensor, async works, futures, allreduce_coalesced.
    x = (torch.arange(12.0).reshape(3, 4) + rank).t()
    mine, theirs = x.clone().t().contiguous().t(), x.clone()
    assert not mine.is_contiguous()
    dist.all_reduce(mine)
    dist.all_reduce(theirs, group=gloo)
    expect("all_reduce/non_contiguous", mine, theirs, "gloo")
    ts = [torch.full((1000,), float(rank + i)) for i in range(8)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    futs = [w.get_future() for w in works]
    for w in works:
        w.wait()
    torch.futures.wait_all(futs)
    expect("async_all_reduce", ts, [torch.full((1000,), float(sum(range(n)) + n * i)) for i in range(8)], "expected")
    cs = [torch.full((3,), float(rank)), torch.full((2,), float(rank + 1))]
    dist.all_reduce_coalesced(cs)
    expect("all_reduce_coalesced", cs, [torch.full((3,), 6.0), torch.full((2,), 10.0)], "expected")
    # A subgroup on vigil (ranks 1 and 3): its own communicator next to the world's.
    sub = dist.new_group(ranks=[1, 3], backend="vigil")
    if rank in (1, 3):
        x = torch.full((4,), float(rank))
        dist.all_reduce(x, group=sub)
        expect("subgroup_all_reduce", x, torch.full((4,), 4.0), "expected")
    # barrier: every rank's file exists after it
    open(os.path.join(work, f"barrier-{rank}"), "w").close()
    dist.barrier()
    missing = [r for r in range(n) if not os.path.exists(os.path.join(work, f"barrier-{r}"))]
    expect("barrier", torch.tensor(missing, dtype=torch.int64), torch.tensor([], dtype=torch.int64), "expected")
    assert vigil_last_error_empty(), "no error expected"
    dist.destroy_process_group()
    return {"checked": len(checked), "failures": failures}


def vigil_last_error_empty():
    import vigil_torch
    return vigil_torch.last_error() == ""


def main():
    util.import_or_skip()
    work = util.workdir("collectives")
    results = util.launch(N, run, work=work, timeout=90)
    bad = False
    for rank, res in sorted(results.items()):
        if res is None or "error" in res:
            print(f"rank {rank} failed:\n{res and res.get('error')}")
            bad = True
            continue
        for f in res["failures"]:
            print(f)
        bad = bad or bool(res["failures"])
        print(f"rank {rank}: {res['checked']} checks, {len(res['failures'])} failures")
    if bad:
        print(f"logs: {work}/logs")
        sys.exit(1)
    print("all collectives match gloo")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
