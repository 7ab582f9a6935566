"""async_op=True: Work.wait / is_completed / get_future as with NCCL, completion driven by the
group's stream (no thread per operation), stream order, DDP's comm-hook contract."""

import datetime
import threading
import time

import pytest
import torch
import torch.distributed as dist

LATE = 1.0  # seconds rank 1 waits before joining, so rank 0's work is certainly pending


def _late_rank_one():
    if dist.get_rank() == 1:
        time.sleep(LATE)


def pending_until_every_rank_joined():
    _late_rank_one()
    t = torch.ones(10)
    work = dist.all_reduce(t, async_op=True)
    pending = not work.is_completed()
    # The completion callback marks the future; its then-callbacks run on that thread.
    completed_on = work.get_future().then(lambda _: threading.get_ident())
    assert work.wait() is True
    assert work.is_completed() and work.is_success()
    assert torch.equal(t, torch.full((10,), float(dist.get_world_size())))
    assert torch.equal(work.result()[0], t)
    return pending, completed_on.wait() == threading.get_ident()


def wait_with_timeout():
    _late_rank_one()
    work = dist.all_reduce(torch.ones(4), async_op=True)
    raised = None
    if dist.get_rank() == 0:
        try:
            work.wait(timeout=datetime.timedelta(milliseconds=100))
        except RuntimeError as e:
            raised = str(e)
    work.wait()  # still completes
    return raised


def future_value_and_then():
    t = torch.arange(6, dtype=torch.float64)
    fut = dist.all_reduce(t, async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2)
    value = fut.wait()
    assert isinstance(value, list) and len(value) == 1 and value[0] is not None
    world = dist.get_world_size()
    assert torch.equal(value[0], torch.arange(6, dtype=torch.float64) * world)
    assert torch.equal(doubled.wait(), value[0] * 2)


def _os_threads():
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("Threads:")).split()[1])


def many_in_flight_share_the_stream(n):
    before = _os_threads()
    tensors = [torch.full((1000,), float(i)) for i in range(n)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    peak = _os_threads()
    works[-1].wait()
    # In order on one stream: once the last completed, every earlier one has.
    assert all(w.is_completed() for w in works)
    world = dist.get_world_size()
    for i, t in enumerate(tensors):
        assert torch.equal(t, torch.full((1000,), float(i * world)))
    return peak - before


def mixed_async_operations():
    rank, world = dist.get_rank(), dist.get_world_size()
    a = torch.full((5,), float(rank))
    b = torch.full((3,), float(rank)) if rank == 0 else torch.zeros(3)
    out = [torch.zeros(2) for _ in range(world)]
    works = [dist.all_reduce(a, async_op=True), dist.broadcast(b, 0, async_op=True),
             dist.all_gather(out, torch.full((2,), float(rank)), async_op=True),
             dist.barrier(async_op=True)]
    for w in works:
        w.wait()
    assert torch.equal(a, torch.full((5,), float(sum(range(world)))))
    assert torch.equal(b, torch.zeros(3))
    assert all(torch.equal(out[r], torch.full((2,), float(r))) for r in range(world))


@pytest.mark.parametrize("world", [2, 4])
def test_work_is_pending_until_every_rank_joined(pools, world):
    results = pools(world).run(pending_until_every_rank_joined)
    pending, on_waiter = results[0]
    assert pending, "rank 0's work completed before rank 1 joined"
    # wait() synchronizes through the runtime, which runs the stream's pending tasks (the
    # callback among them) on the waiting thread (src/device/README.md).
    assert on_waiter, "rank 0's work was completed by another thread than the one in wait()"


def test_wait_with_timeout_raises_then_completes(pools):
    raised = pools(2).run(wait_with_timeout)
    assert raised[0] is not None and "timed out" in raised[0], raised[0]


@pytest.mark.parametrize("world", [2, 4])
def test_future_holds_the_tensors(pools, world):
    pools(world).run(future_value_and_then)


def test_no_thread_per_operation(pools):
    growth = pools(2).run(many_in_flight_share_the_stream, 200)
    assert max(growth) < 5, "threads grew by %s for 200 operations in flight" % growth


def test_mixed_async_operations(pools):
    pools(4).run(mixed_async_operations)
