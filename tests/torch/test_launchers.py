"""Launchers: torchrun (as torch_trnccl.run), plain env://, mpirun (rank and size from MPI's
environment), file:// and tcp:// init methods. Each runs launch_check.py on every rank."""

import os
import re
import shlex
import subprocess
import sys
import tempfile

import pytest

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "launch_check.py")
TIMEOUT = 120


def _run(cmd, env=None):
    full_env = dict(os.environ)
    for name in ["RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"]:
        full_env.pop(name, None)
    full_env.update(env or {})
    proc = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=TIMEOUT)
    return proc.returncode, proc.stdout + proc.stderr


def _ok_lines(output, world):
    oks = sorted(re.findall(r"OK rank (\d+) of (\d+) device (\d+)", output))
    assert [int(r) for r, _, _ in oks] == list(range(world)), output
    assert all(int(w) == world for _, w, _ in oks), output
    return {int(r): int(d) for r, _, d in oks}


def test_torchrun():
    code, out = _run([sys.executable, "-m", "torch_trnccl.run", "--nproc_per_node=3",
                      "--master_port=%d" % harness.free_port(), SCRIPT])
    assert code == 0, out
    devices = _ok_lines(out, 3)
    assert devices == {0: 0, 1: 1, 2: 2}, devices  # LOCAL_RANK


def test_env_init_method():
    port = str(harness.free_port())
    procs = [subprocess.Popen([sys.executable, SCRIPT], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE="2",
                                       MASTER_ADDR="127.0.0.1", MASTER_PORT=port))
             for r in range(2)]
    outs = [p.communicate(timeout=TIMEOUT)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert _ok_lines("".join(outs), 2) == {0: 0, 1: 1}  # no LOCAL_RANK: the rank


@pytest.mark.parametrize("scheme", ["file", "tcp"])
def test_file_and_tcp_init_methods(scheme):
    with tempfile.TemporaryDirectory() as tmp:
        url = ("file://" + os.path.join(tmp, "store") if scheme == "file"
               else "tcp://127.0.0.1:%d" % harness.free_port())
        procs = [subprocess.Popen([sys.executable, SCRIPT, url, str(r), "3"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for r in range(3)]
        outs = [p.communicate(timeout=TIMEOUT)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    _ok_lines("".join(outs), 3)


@pytest.mark.skipif(not os.environ.get("TRNCCL_TORCH_MPIRUN"),
                    reason="TRNCCL_TORCH_MPIRUN (set by CTest when MPI is found) names mpirun")
def test_mpirun():
    mpirun = shlex.split(os.environ["TRNCCL_TORCH_MPIRUN"])
    code, out = _run(mpirun + ["-np", "2", sys.executable, SCRIPT],
                     env={"MASTER_PORT": str(harness.free_port())})
    assert code == 0, out
    assert _ok_lines(out, 2) == {0: 0, 1: 1}  # OMPI_COMM_WORLD_LOCAL_RANK


def test_mpi_environment_is_adopted_only_without_rank():
    from torch_trnccl._launch import adopt_mpi_environment
    env = {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "8",
           "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}
    assert adopt_mpi_environment(env) == "OMPI_COMM_WORLD_RANK"
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"]) == ("3", "8", "1")
    assert "MASTER_ADDR" not in env  # two nodes: the user must say where rank 0 is
    single = {"PMI_RANK": "0", "PMI_SIZE": "2", "MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "2"}
    assert adopt_mpi_environment(single) == "PMI_RANK"
    assert single["MASTER_ADDR"] == "127.0.0.1" and single["MASTER_PORT"] == "29500"
    torchrun = {"RANK": "1", "OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"}
    assert adopt_mpi_environment(torchrun) is None and torchrun["RANK"] == "1"
