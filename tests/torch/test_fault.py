"""A rank killed mid-training (SIGKILL of itself at step K, inside a DDP job on the vigil backend)
makes every other rank raise RuntimeError naming the crimer rank and an EI code, from Vigil's
heartbeat (HCCL_EXEC_TIMEOUT is far above the test's bound, so no op timeout can be the cause).
With VIGIL_BIN set, `vigil diagnose` on the job's logs must name the killed rank too."""
import os
import shutil
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_test_util as util  # noqa: E402

N = 4
VICTIM = 2
KILL_STEP = 3


def run(rank, n, work):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import vigil_torch

    store = dist.FileStore(os.path.join(work, "store"), n)
    dist.init_process_group("vigil", store=store, rank=rank, world_size=n)
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    for step in range(1000):
        if rank == VICTIM and step == KILL_STEP:
            with open(os.path.join(work, "killed-at"), "w") as f:
                f.write(repr(time.time()))
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        except RuntimeError as e:
            res = {"step": step, "error_at": time.time(), "message": str(e),
                   "last_error": vigil_torch.last_error()}
            dist.destroy_process_group()
            return res
    return {"step": None, "message": "no error in 1000 steps"}


def main():
    util.import_or_skip()
    work = util.workdir("fault")
    env = {"HCCL_EXEC_TIMEOUT": "300"}  # the heartbeat, not an op timeout, must end the ops
    results = util.launch(N, run, work=work, env=env, timeout=60)
    killed_at = float(open(os.path.join(work, "killed-at")).read())
    bad = False
    for rank, res in sorted(results.items()):
        if rank == VICTIM:
            continue
        if res is None or "error" in res:
            print(f"rank {rank} failed unexpectedly:\n{res and res.get('error')}")
            bad = True
            continue
        msg = res["message"]
        print(f"--- rank {rank}: RuntimeError at step {res['step']}, "
              f"{res.get('error_at', killed_at) - killed_at:.2f} s after the kill:\n{msg}")
        if res["step"] is None:
            bad = True
        if f"crimer rank [{VICTIM}]" not in msg:
            print(f"rank {rank}: the message does not name rank {VICTIM} as the crimer")
            bad = True
        if not re.search(r"EI\d{4}", msg):
            print(f"rank {rank}: the message carries no EI code")
            bad = True
    vigil = os.environ.get("VIGIL_BIN")
    if vigil:
        out = subprocess.run([vigil, "diagnose", os.path.join(work, "logs")], capture_output=True,
                             text=True, timeout=60).stdout
        print("--- vigil diagnose:\n" + out)
        if not re.search(rf"root cause: \S+ \(rank {VICTIM},", out):
            print(f"vigil diagnose did not name rank {VICTIM} as the root cause")
            bad = True
    if bad:
        print(f"logs: {work}/logs")
        sys.exit(1)
    print(f"every survivor named rank {VICTIM}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
