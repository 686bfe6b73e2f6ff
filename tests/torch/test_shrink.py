"""A training loop carries on after losing a rank: 4 ranks train a model with DDP on the vigil
backend; rank VICTIM SIGKILLs itself at step KILL_STEP; each survivor's backward raises
RuntimeError naming it, the survivors call vigil_torch.shrink, wrap the model in DDP again over the
group of the survivors, redo the step and finish. Every survivor's parameters must equal a
reference computed in one process: the same SGD steps on the gradients averaged over all ranks'
batches before the kill and over the survivors' batches from the failed step on. Each survivor's
run log has the shrink line; with VIGIL_BIN set, `vigil diagnose` names the lost rank as the root
cause and reports the recovery."""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_test_util as util  # noqa: E402

N = 4
VICTIM = 1
KILL_STEP = 3
STEPS = 8


def make_model():
    import torch
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def batch(rank, step):
    import torch
    g = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)


def reference():
    """The parameters after STEPS steps, gradients averaged over the members of each step."""
    import torch
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(STEPS):
        members = range(N) if step < KILL_STEP else [r for r in range(N) if r != VICTIM]
        grads = [torch.zeros_like(p) for p in model.parameters()]
        for r in members:
            model.zero_grad()
            x, y = batch(r, step)
            torch.nn.functional.mse_loss(model(x), y).backward()
            for g, p in zip(grads, model.parameters()):
                g += p.grad
        for g, p in zip(grads, model.parameters()):
            p.grad = g / len(members)
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def run(rank, n, work):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import vigil_torch

    store = dist.FileStore(os.path.join(work, "store"), n)
    dist.init_process_group("vigil", store=store, rank=rank, world_size=n)
    module = make_model()
    group = dist.distributed_c10d._get_default_group()
    model = DDP(module, process_group=group)
    opt = torch.optim.SGD(module.parameters(), lr=0.05)
    res = {"shrinks": 0, "errors": []}
    step = 0
    while step < STEPS:
        if rank == VICTIM and step == KILL_STEP:
            with open(os.path.join(work, "killed-at"), "w") as f:
                f.write(repr(time.time()))
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            opt.zero_grad()
            x, y = batch(rank, step)
            torch.nn.functional.mse_loss(model(x), y).backward()
        except RuntimeError as e:
            res["errors"].append(str(e))
            if res["shrinks"] >= 2:
                raise
            del model
            group = vigil_torch.shrink(group)
            res["shrinks"] += 1
            res["first_op_at"] = time.time()  # shrink's all-gather of the members succeeded
            res["size"] = group.size()
            res["rank_in_group"] = dist.get_rank(group)
            model = DDP(module, process_group=group)
            continue  # the same step again, on the survivors
        opt.step()
        step += 1
    res["params"] = [p.detach().clone() for p in module.parameters()]
    del model
    dist.destroy_process_group()
    return res


def main():
    util.import_or_skip()
    import torch
    work = util.workdir("shrink")
    env = {"HCCL_EXEC_TIMEOUT": "300"}  # the heartbeat, not an op timeout, ends the failed step
    results = util.launch(N, run, work=work, env=env, timeout=90)
    killed_at = float(open(os.path.join(work, "killed-at")).read())
    want = reference()
    bad = False
    survivors = [r for r in range(N) if r != VICTIM]
    for rank in survivors:
        res = results[rank]
        if res is None or "error" in res:
            print(f"rank {rank} failed:\n{res and res.get('error')}")
            bad = True
            continue
        print(f"--- rank {rank}: {res['shrinks']} shrink(s), now rank {res.get('rank_in_group')} "
              f"of {res.get('size')}; first op on the shrunk group "
              f"{res.get('first_op_at', killed_at) - killed_at:.3f} s after the kill")
        if res["shrinks"] != 1 or res.get("size") != N - 1:
            print(f"rank {rank}: expected one shrink to {N - 1} ranks")
            bad = True
        if res.get("rank_in_group") != survivors.index(rank):
            print(f"rank {rank}: not numbered in its old order among the survivors")
            bad = True
        if not res["errors"] or f"crimer rank [{VICTIM}]" not in res["errors"][0]:
            print(f"rank {rank}: the failed step's error does not name rank {VICTIM}: "
                  f"{res['errors'][:1]}")
            bad = True
        for got, ref in zip(res["params"], want):
            if not torch.allclose(got, ref, rtol=1e-5, atol=1e-6):
                print(f"rank {rank}: parameters differ from the reference over the survivors "
                      f"(max diff {(got - ref).abs().max().item():.3g})")
                bad = True
                break
    logs = os.path.join(work, "logs")
    shrink_lines = 0
    for root, _, files in os.walk(os.path.join(logs, "run")):
        for name in files:
            with open(os.path.join(root, name), errors="replace") as f:
                shrink_lines += len(re.findall(r"\[Shrink\]communicator\[[^\]]+\] rankSize\[4\] "
                                               r"shrunk to communicator\[[^\]]+\] rankSize\[3\]",
                                               f.read()))
    if shrink_lines != len(survivors):
        print(f"expected {len(survivors)} shrink lines in the run logs, found {shrink_lines}")
        bad = True
    vigil = os.environ.get("VIGIL_BIN")
    if vigil:
        out = subprocess.run([vigil, "diagnose", logs], capture_output=True, text=True,
                             timeout=60).stdout
        print("--- vigil diagnose:\n" + out)
        if not re.search(rf"root cause: \S+ \(rank {VICTIM},", out):
            print(f"vigil diagnose did not name rank {VICTIM} as the root cause")
            bad = True
        if not re.search(r"Recovered: communicator \S+ shrunk from 4 to 3 ranks by every "
                         rf"survivor \(excluded rank {VICTIM}\)", out):
            print("vigil diagnose did not report the recovery")
            bad = True
    if bad:
        print(f"logs: {logs}")
        sys.exit(1)
    print(f"the survivors of rank {VICTIM}'s death finished with the reference's parameters")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
