"""Vigil's backend for torch.distributed.

    import vigil_torch                      # registers the "vigil" backend
    torch.distributed.init_process_group("vigil", ...)

CPU tensors; every collective of the c10d API runs on Vigil (its HCCL C API), asynchronously, and
a failure raises RuntimeError with Vigil's root cause (the rank at fault, the EI code). Logs go to
$ASCEND_PROCESS_LOG_PATH, where `vigil diagnose` reads them. After a rank is lost, `shrink` gives
the survivors a process group of their own and the job carries on.
"""
import torch  # noqa: F401  (loads libtorch before the extension)
import torch.distributed as dist

from . import _C

__all__ = ["last_error", "shrink"]


def _create_process_group(store, rank, world_size, timeout):
    return _C.create_process_group(store, rank, world_size, timeout)


if "VIGIL" not in dist.Backend._plugins:
    dist.Backend.register_backend("vigil", _create_process_group)


def last_error(group=None):
    """Vigil's root-cause text for the group's communicator ("" when it has no error)."""
    if group is None:
        group = dist.distributed_c10d._get_default_group()
    return _C.last_error(group)


def shrink(group=None, exclude=None, abort=False):
    """A process group of the survivors of `group` (default: the default group).

    Every surviving rank calls it, typically after a collective raised RuntimeError naming a lost
    rank; a rank being excluded does not. `exclude` lists ranks of `group` to leave out; None
    takes those Vigil's heartbeat knows lost. `abort` aborts the group's collectives still in
    flight first (else shrink waits for them; the heartbeat has ended those waiting on a lost
    rank). The survivors agree on the excluded ranks before building (VigilCommShrink in
    vigil/ext.h); when they do not (different lists, a survivor that never calls within
    HCCL_CONNECT_TIMEOUT) every caller raises RuntimeError.

    The new group numbers the survivors 0..n-1 in their old order. It is registered with
    torch.distributed (pass it as `group=`; `dist.get_rank(group)` works) under the survivors'
    global ranks, learnt with one all-gather, the group's first collective. The old group stays
    until destroyed (`dist.destroy_process_group()` ends both).
    """
    import torch

    c10d = dist.distributed_c10d
    if group is None:
        group = c10d._get_default_group()
    global_rank = dist.get_rank()
    pg = _C.shrink(group, None if exclude is None else [int(r) for r in exclude], bool(abort))
    mine = torch.tensor([global_rank], dtype=torch.int64)
    ranks = [torch.zeros(1, dtype=torch.int64) for _ in range(pg.size())]
    pg.allgather([ranks], [mine]).wait()
    members = [int(t.item()) for t in ranks]
    try:  # torch's bookkeeping of groups: best effort, the group works without it
        c10d._pg_group_ranks[pg] = {g: i for i, g in enumerate(members)}
        c10d._pg_map[pg] = (dist.Backend("vigil"), None)
    except (AttributeError, TypeError):
        pass
    return pg
