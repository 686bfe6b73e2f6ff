"""Vigil's backend for torch.distributed.

    import vigil_torch                      # registers the "vigil" backend
    torch.distributed.init_process_group("vigil", ...)

CPU tensors; every collective of the c10d API runs on Vigil (its HCCL C API), asynchronously, and
a failure raises RuntimeError with Vigil's root cause (the rank at fault, the EI code). Logs go to
$ASCEND_PROCESS_LOG_PATH, where `vigil diagnose` reads them.
"""
import torch  # noqa: F401  (loads libtorch before the extension)
import torch.distributed as dist

from . import _C

__all__ = ["last_error"]


def _create_process_group(store, rank, world_size, timeout):
    return _C.create_process_group(store, rank, world_size, timeout)


if "VIGIL" not in dist.Backend._plugins:
    dist.Backend.register_backend("vigil", _create_process_group)


def last_error(group=None):
    """Vigil's root-cause text for the group's communicator ("" when it has no error)."""
    if group is None:
        group = dist.distributed_c10d._get_default_group()
    return _C.last_error(group)
