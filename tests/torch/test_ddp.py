"""A small DDP model trains for a few steps on the vigil backend and on gloo, in the same N
processes (argv[1], default 4), from the same initial weights on the same data: the losses and
final weights must agree (gradients are averaged by both backends; small buckets so several
allreduces are in flight at once).

With 2 ranks every element of a sum is x0 + x1, which IEEE addition gives exactly the same
whatever the algorithm: the losses and weights must be bit-identical to gloo's. With more ranks
the two libraries add the gradients in different orders (ring chunks start at different ranks),
so they agree to fp32 rounding."""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_test_util as util  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 4
STEPS = 6


def run(rank, n, work):
    import copy
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    gloo = util.init_groups(rank, n, work)
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32),
                               torch.nn.Tanh(), torch.nn.Linear(32, 4))
    g = torch.Generator().manual_seed(100 + rank)
    data = [(torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)) for _ in range(STEPS)]
    losses = {}
    params = {}
    for name, group in (("vigil", None), ("gloo", gloo)):
        model = DDP(copy.deepcopy(base), process_group=group, bucket_cap_mb=0.002)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        losses[name] = []
        for x, y in data:
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses[name].append(loss.item())
        params[name] = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    diff = (params["vigil"] - params["gloo"]).abs().max().item()
    dist.destroy_process_group()
    return {"losses": losses, "param_diff": diff}


def main():
    util.import_or_skip()
    work = util.workdir("ddp")
    results = util.launch(N, run, work=work, timeout=90)
    bad = False
    for rank, res in sorted(results.items()):
        if res is None or "error" in res:
            print(f"rank {rank} failed:\n{res and res.get('error')}")
            bad = True
            continue
        lv, lg = res["losses"]["vigil"], res["losses"]["gloo"]
        same = lv == lg
        print(f"rank {rank}: vigil {lv}\n        gloo  {lg}\n        identical={same} "
              f"max |param diff|={res['param_diff']:.3g}")
        if N == 2:
            close = same and res["param_diff"] == 0.0
        else:
            # Both backends sum N fp32 gradients, possibly in another order: equal to fp32 rounding.
            close = all(abs(a - b) <= 1e-6 * max(1.0, abs(b)) for a, b in zip(lv, lg))
        if not close or res["param_diff"] > 1e-5 or len(lv) != STEPS:
            bad = True
    if bad:
        print(f"logs: {work}/logs")
        sys.exit(1)
    print("DDP on vigil matches gloo")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
