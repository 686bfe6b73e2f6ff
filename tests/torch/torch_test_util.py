"""Shared pieces of the vigil_torch tests: a bounded fork launcher for N ranks on one host.

Every test skips (exit 77, ctest SKIP_RETURN_CODE) when torch or vigil_torch cannot be imported.
"""
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback

SKIP = 77


def import_or_skip():
    try:
        import torch  # noqa: F401
        import torch.distributed  # noqa: F401
        import vigil_torch  # noqa: F401
    except ImportError as e:  # torch not installed, or the extension not built
        print(f"SKIP: {e}")
        sys.exit(SKIP)


def workdir(name):
    base = os.environ.get("VIGIL_TORCH_TEST_TMP") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(prefix=name + "-", dir=base)


def base_env(work):
    """Vigil's env for a test job: logs under the job folder, ephemeral ports, small buffers."""
    return {
        "ASCEND_PROCESS_LOG_PATH": os.path.join(work, "logs"),
        "HCCL_IF_BASE_PORT": "0",
        "HCCL_BUFFSIZE": "4",
        "HCCL_CONNECT_TIMEOUT": "60",
        "HCCL_EXEC_TIMEOUT": "60",
        "ASCEND_GLOBAL_LOG_LEVEL": "3",
        "GLOO_SOCKET_IFNAME": "lo",
        "OMP_NUM_THREADS": "1",
    }


def _child(rank, n, work, fn, args):
    code = 0
    try:
        import torch
        torch.set_num_threads(1)
        result = fn(rank, n, work, *args)
    except BaseException:  # report everything, the parent decides
        result = {"error": traceback.format_exc()}
        code = 1
    with open(os.path.join(work, f"result-{rank}.pkl"), "wb") as f:
        pickle.dump(result, f)
    sys.stdout.flush()
    sys.stderr.flush()
    # Not exit(): a forked child of a process that imported torch spends seconds in torch's exit
    # handlers. Workers destroy their process groups first, as scripts do.
    os._exit(code)


def launch(n, fn, *args, work, env=None, timeout=60):
    """Forks n ranks running fn(rank, n, work, *args); returns {rank: result or None}. Ranks still
    running after `timeout` seconds are killed and the call raises."""
    os.environ.update(base_env(work))
    os.environ.update(env or {})
    pids = {}
    for rank in range(n):
        pid = os.fork()
        if pid == 0:
            _child(rank, n, work, fn, args)
        pids[pid] = rank
    deadline = time.monotonic() + timeout
    codes = {}
    while pids and time.monotonic() < deadline:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            time.sleep(0.02)
            continue
        codes[pids.pop(pid)] = status
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    for pid in pids:
        os.waitpid(pid, 0)
    if pids:
        raise AssertionError(f"ranks {sorted(pids.values())} still ran after {timeout} s "
                             f"(logs: {work}/logs)")
    results = {}
    for rank in range(n):
        path = os.path.join(work, f"result-{rank}.pkl")
        results[rank] = None
        if os.path.exists(path):
            with open(path, "rb") as f:
                results[rank] = pickle.load(f)
    return results


def init_groups(rank, n, work):
    """The default group on vigil, plus a gloo group over the same ranks for references."""
    import torch.distributed as dist
    import vigil_torch  # noqa: F401
    store = dist.FileStore(os.path.join(work, "store"), n)
    dist.init_process_group("vigil", store=store, rank=rank, world_size=n)
    gloo = dist.new_group(backend="gloo")
    return gloo
