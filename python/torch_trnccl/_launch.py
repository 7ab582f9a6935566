"""Launchers: what torch's env:// rendezvous needs, taken from MPI's environment.

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT. mpirun sets its own
variables instead; when RANK is unset they become torch's, so that
``init_process_group("trnccl")`` works unchanged under ``mpirun -np N``. On one node
MASTER_ADDR defaults to 127.0.0.1; across nodes it must be set (``mpirun -x MASTER_ADDR=...``).
MASTER_PORT defaults to 29500, torchrun's default.
"""

import os

# (rank, size, local rank, local size) variables of each launcher.
_LAUNCHERS = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),  # Open MPI
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),  # MPICH (Hydra)
)


def adopt_mpi_environment(environ=os.environ):
    """Sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT from
    an MPI launcher's variables, if RANK is unset and one is found. Returns the launcher's
    rank variable name, or None when nothing was changed."""
    if "RANK" in environ:
        return None
    for rank, size, local_rank, local_size in _LAUNCHERS:
        if rank not in environ or size not in environ:
            continue
        environ["RANK"] = environ[rank]
        environ["WORLD_SIZE"] = environ[size]
        environ.setdefault("LOCAL_RANK", environ.get(local_rank, environ[rank]))
        environ.setdefault("LOCAL_WORLD_SIZE", environ.get(local_size, environ[size]))
        if environ["LOCAL_WORLD_SIZE"] == environ["WORLD_SIZE"]:
            environ.setdefault("MASTER_ADDR", "127.0.0.1")
        environ.setdefault("MASTER_PORT", "29500")
        return rank
    return None
