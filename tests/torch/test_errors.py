"""Refusals (a RuntimeError naming the problem, on every rank alike, nothing issued) and
failures (dead peer, silent peer, missing rank at init): bounded, with trnccl's message."""

import datetime
import os
import signal
import time

import pytest
import torch
import torch.distributed as dist

import harness


def expect_error(call, *needles):
    try:
        call()
    except RuntimeError as e:
        for needle in needles:
            assert needle in str(e), "%r not in %r" % (needle, str(e))
        return str(e)
    raise AssertionError("no RuntimeError")


def refusals():
    rank, world = dist.get_rank(), dist.get_world_size()
    strided = torch.ones(4, 4).t()
    expect_error(lambda: dist.all_reduce(strided), "not contiguous")
    expect_error(lambda: dist.broadcast(torch.ones(8)[::2], 0), "not contiguous")
    expect_error(lambda: dist.all_gather([torch.zeros(3)] * world, torch.ones(4)),
                 "tensor_list[0]", "expected 4 elements")
    # torch's Python layer checks dtypes first; the group itself checks them too.
    group = dist.distributed_c10d._get_default_group()
    expect_error(lambda: group.allgather([[torch.zeros(4, dtype=torch.int32)] * world],
                                         [torch.ones(4)]), "expected 4 elements of Float")
    expect_error(lambda: dist._all_gather_base(torch.zeros(4 * world + 1), torch.ones(4)),
                 "all_gather_into_tensor")
    expect_error(lambda: dist.reduce_scatter(torch.zeros(2), [torch.ones(3)] * world),
                 "input_list")
    expect_error(lambda: dist.all_to_all_single(torch.zeros(world * 2), torch.ones(world * 2),
                                                [1] * world, [3] * world), "splits")
    for op in ["BAND", "BOR", "BXOR"]:
        expect_error(lambda: dist.all_reduce(torch.ones(2, dtype=torch.int32),
                                             op=getattr(dist.ReduceOp, op)),
                     "ReduceOp." + op, "not supported")
    expect_error(lambda: dist.all_reduce(torch.ones(2, dtype=torch.bool),
                                         op=dist.ReduceOp.AVG), "ReduceOp.AVG")
    expect_error(lambda: dist.all_reduce(torch.ones(2, dtype=torch.int16)),
                 "dtype Short cannot be reduced")
    expect_error(lambda: dist.all_reduce(torch.ones(2, dtype=torch.complex64),
                                         op=dist.ReduceOp.MAX), "complex")
    expect_error(lambda: dist.send(torch.ones(2), rank), "is this rank")
    expect_error(lambda: dist.reduce(torch.ones(2), world + 3), "root rank")
    # The group is still in step after all of that.
    t = torch.ones(3)
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((3,), float(world)))
    # A dtype trnccl cannot reduce still moves.
    s = torch.full((5,), rank, dtype=torch.int16)
    dist.broadcast(s, world - 1)
    assert torch.equal(s, torch.full((5,), world - 1, dtype=torch.int16))


def premul_sum():
    # Each rank's input is multiplied by the factor before the sum (a double or a tensor factor).
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.full((5,), float(rank + 1))
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
    assert torch.equal(t, torch.full((5,), 2.0 * world * (world + 1) / 2)), t
    h = torch.full((3,), rank + 1, dtype=torch.float64)
    dist.all_reduce(h, op=dist._make_nccl_premul_sum([torch.tensor([0.5])]))
    assert torch.equal(h, torch.full((3,), 0.5 * world * (world + 1) / 2, dtype=torch.float64)), h
    out = torch.empty(2)
    dist.reduce_scatter(out, [torch.full((2,), float(r + rank)) for r in range(world)],
                        op=dist._make_nccl_premul_sum(3.0))
    expect = 3.0 * sum(rank + r for r in range(world))
    assert torch.equal(out, torch.full((2,), expect)), out
    return expect_error(lambda: dist.all_reduce(torch.ones(2, dtype=torch.bool),
                                                op=dist._make_nccl_premul_sum(2.0)),
                        "ReduceOp.PREMUL_SUM", "bool tensors")


def test_refusals_name_the_problem_and_issue_nothing(pools):
    pools(2).run(refusals)


def test_premul_sum_multiplies_each_input_by_its_factor(pools):
    pools(2).run(premul_sum)


def _init(rank, world, init_file, seconds):
    import torch_trnccl  # noqa: F401
    dist.init_process_group("trnccl", init_method="file://" + init_file, rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=seconds))


def dead_peer(rank, world, init_file, victim):
    _init(rank, world, init_file, 60)
    t = torch.ones(1 << 20)
    for _ in range(3):
        dist.all_reduce(t)
    if rank == victim:
        os.kill(os.getpid(), signal.SIGKILL)
    start = time.monotonic()
    try:
        for _ in range(1000):
            dist.all_reduce(t)
    except RuntimeError as e:
        return time.monotonic() - start, str(e)
    return None


def silent_peer(rank, world, init_file, seconds):
    _init(rank, world, init_file, seconds)
    dist.all_reduce(torch.ones(4))
    if rank == 1:
        time.sleep(seconds + 3)  # alive but never joins the next collective
        return None
    start = time.monotonic()
    work = dist.all_reduce(torch.ones(4), async_op=True)
    try:
        work.wait()
    except RuntimeError as e:
        return time.monotonic() - start, str(e)
    return None


def missing_rank(rank, world, init_file, seconds):
    if rank == 1:
        return None  # never joins
    start = time.monotonic()
    try:
        _init(rank, world, init_file, seconds)
    except RuntimeError as e:
        return time.monotonic() - start, str(e)
    return None


@pytest.mark.parametrize("victim", [1, 0])
def test_dead_peer_fails_survivors_within_seconds(victim):
    results = harness.spawn(3, dead_peer, victim, timeout=90)
    assert results[victim][0] == -signal.SIGKILL
    for rank, (code, result) in enumerate(results):
        if rank == victim:
            continue
        assert result and result[0] == "ok" and result[1], (rank, code, result)
        seconds, message = result[1]
        print("rank %d: %.2f s: %s" % (rank, seconds, message))
        assert seconds < 10, "rank %d noticed after %.1f s: %s" % (rank, seconds, message)
        assert "trnccl" in message and "all_reduce" in message, message


def test_silent_peer_is_a_timeout_at_the_groups_timeout():
    results = harness.spawn(2, silent_peer, 3, timeout=60)
    status, value = results[0][1]
    assert status == "ok" and value, results[0]
    seconds, message = value
    assert 1.5 <= seconds < 10, (seconds, message)
    assert "timed out" in message or "timeout" in message.lower(), message


def test_init_is_bounded_by_the_groups_timeout():
    results = harness.spawn(2, missing_rank, 3, timeout=60)
    status, value = results[0][1]
    assert status == "ok" and value, results[0]
    seconds, message = value
    assert seconds < 15, (seconds, message)
    assert "trnccl" in message, message


def comm_id_refused(rank, world, init_file):
    os.environ["TRNCCL_COMM_ID"] = "127.0.0.1:1"
    try:
        _init(rank, world, init_file, 10)
    except RuntimeError as e:
        return str(e)


def test_trnccl_comm_id_is_refused():
    results = harness.spawn(1, comm_id_refused)
    assert "TRNCCL_COMM_ID" in results[0][1][1], results
