"""Recovery (issue 18, F7) through torch: one of 4 ranks is killed in an all-reduce loop; the
survivors ask which ranks failed, build a new group over the shrunk communicator
(torch_trnccl.shrink_group) and get correct sums with torch.distributed calls on it, while the
old group keeps raising."""

import datetime
import os
import signal

import torch
import torch.distributed as dist

import harness


def shrink_after_death(rank, world, init_file, victim):
    import torch_trnccl
    dist.init_process_group("trnccl", init_method="file://" + init_file, rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=60))
    t = torch.ones(1 << 16)
    for _ in range(3):
        dist.all_reduce(t)
    if rank == victim:
        os.kill(os.getpid(), signal.SIGKILL)
    error = None
    try:
        for _ in range(1000):
            dist.all_reduce(t)
    except RuntimeError as e:
        error = str(e)
    failed = torch_trnccl.failed_ranks()
    group = torch_trnccl.shrink_group(exclude_ranks=failed)
    sums = []
    for _ in range(5):
        x = torch.full((1000,), float(rank + 1))
        dist.all_reduce(x, group=group)
        sums.append((x.min().item(), x.max().item()))
    # The old group is revoked: it keeps raising, and says why.
    olds = []
    for _ in range(2):
        try:
            dist.all_reduce(torch.ones(2))
            olds.append("no error")
        except RuntimeError as e:
            olds.append(str(e))
    return error, failed, group.rank(), group.size(), sums, olds


def test_survivors_shrink_and_go_on():
    victim = 2
    results = harness.spawn(4, shrink_after_death, victim, timeout=120)
    assert results[victim][0] == -signal.SIGKILL
    survivors = [r for r in range(4) if r != victim]
    want = float(sum(r + 1 for r in survivors))
    for index, rank in enumerate(survivors):
        code, result = results[rank]
        assert result and result[0] == "ok", (rank, code, result)
        error, failed, new_rank, new_size, sums, olds = result[1]
        print("rank %d: failed %s, now %d of %d: %s" % (rank, failed, new_rank, new_size, error))
        assert error and "trnccl" in error, error
        assert failed == [victim]
        assert (new_rank, new_size) == (index, 3)
        assert sums == [(want, want)] * 5, sums
        for old in olds:
            assert "revoked" in old, old
