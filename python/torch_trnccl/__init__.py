"""trnccl as a torch.distributed backend.

``import torch_trnccl`` registers the backend ``"trnccl"``; then
``torch.distributed.init_process_group("trnccl")`` works with torchrun (env://), under
mpirun (rank and size from Open MPI's or MPICH's environment when RANK is unset), and with
``file://`` and ``tcp://`` init methods. Tensors are CPU tensors (host memory, which trnccl
accepts). See docs/TORCH.md.
"""

import os

import torch.distributed as dist

# libfabric (behind trnccl's ofi transport) loads libinfinipath, whose handler for fatal and
# termination signals calls exit() inside the handler; a rank terminated by its launcher
# (torchrun and torch's test harness send SIGTERM when another rank failed) was seen to hang in
# there for good. IPATH_NO_BACKTRACE is that library's switch to leave signals alone.
os.environ.setdefault("IPATH_NO_BACKTRACE", "1")

from . import _C  # noqa: E402
from ._launch import adopt_mpi_environment  # noqa: E402

__all__ = ["ProcessGroupTrnccl", "version", "BACKEND", "failed_ranks", "shrink_group"]

ProcessGroupTrnccl = _C.ProcessGroupTrnccl
BACKEND = "trnccl"


def version():
    """trnccl's version code (major*10000 + minor*100 + patch), as trncclGetVersion."""
    return _C.version()


def _trnccl_group(group):
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if not isinstance(pg, ProcessGroupTrnccl):
        raise TypeError("torch_trnccl: %r is not a trnccl process group" % (pg,))
    return pg


def failed_ranks(group=None):
    """The ranks of ``group`` (default: the default group) whose process is gone or cannot be
    reached, ascending (trncclCommGetFailedRanks; probes for at most ~1 s)."""
    return _trnccl_group(group).failed_ranks()


def shrink_group(group=None, exclude_ranks=None):
    """After a rank of ``group`` (default: the default group) failed: a new process group of
    the other ranks, over trncclCommShrink(TRNCCL_SHRINK_ABORT). Collective over those ranks,
    which must pass the same ``exclude_ranks`` (default: ``failed_ranks(group)``); their ranks
    in the new group keep their order. ``group`` is revoked: its later operations raise.

    torch 1.13 has no shrink of its own: use the returned group explicitly
    (``dist.all_reduce(t, group=new)``, ``new.rank()``, ``new.size()``, DDP's
    ``process_group=new``); ``dist.get_rank()`` and friends still describe the old world.
    See docs/RELIABILITY.md, "What to do after an error"."""
    pg = _trnccl_group(group)
    if exclude_ranks is None:
        exclude_ranks = pg.failed_ranks()
    return pg.shrink([int(r) for r in exclude_ranks])


def _create_process_group(store, rank, size, timeout):
    """The creator torch.distributed calls for every group: (prefix store, rank, size, timeout)."""
    if os.environ.get("TRNCCL_COMM_ID"):
        raise RuntimeError(
            "trnccl: TRNCCL_COMM_ID is set, which gives every communicator the same bootstrap "
            "address; with torch.distributed the c10d store carries each group's id: unset it")
    return _C.ProcessGroupTrnccl(store, rank, size, timeout)


adopt_mpi_environment()
if BACKEND.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND, _create_process_group)
