"""Every operation x dtype (x op for reductions) on 2 and 4 ranks, counts 0, 1, 7 and odd
large, checked against references computed from every rank's inputs (cases.py)."""

import pytest

import cases

WORLDS = [2, 4]
COUNTS = [0, 7, 65539]


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("dtype", cases.DTYPES)
@pytest.mark.parametrize("op", cases.OPS)
def test_all_reduce(pools, world, dtype, op):
    if dtype == "bool" and op == "AVG":
        pytest.skip("AVG of bool is refused (test_errors.py)")
    for n in COUNTS:
        pools(world).run(cases.all_reduce, dtype, op, n)


@pytest.mark.parametrize("world", WORLDS)
def test_all_reduce_complex(pools, world):
    pools(world).run(cases.all_reduce_complex, 1001)


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("op", cases.OPS)
def test_all_reduce_coalesced(pools, world, op):
    pools(world).run(cases.all_reduce_coalesced, op)


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_reduce(pools, world, dtype):
    for op in ["SUM", "MAX"] if dtype == "bool" else cases.OPS:
        for root in range(world):
            pools(world).run(cases.reduce, dtype, op, 1001, root)


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_broadcast(pools, world, dtype):
    for n in COUNTS:
        for root in range(world):
            pools(world).run(cases.broadcast, dtype, n, root)


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_all_gather(pools, world, dtype):
    for n in COUNTS:
        pools(world).run(cases.all_gather, dtype, n)
        pools(world).run(cases.all_gather_into_tensor, dtype, n)


@pytest.mark.parametrize("world", WORLDS)
def test_all_gather_coalesced(pools, world):
    pools(world).run(cases.all_gather_coalesced, 33)


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_gather_scatter(pools, world, dtype):
    for root in range(world):
        pools(world).run(cases.gather, dtype, 1001, root)
        pools(world).run(cases.scatter, dtype, 1001, root)


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_reduce_scatter(pools, world, dtype):
    for op in ["SUM", "MIN"] if dtype == "bool" else cases.OPS:
        for n in [0, 1, 1001]:
            pools(world).run(cases.reduce_scatter, dtype, op, n)
            pools(world).run(cases.reduce_scatter_tensor, dtype, op, n)


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_all_to_all(pools, world, dtype):
    pools(world).run(cases.all_to_all_single, dtype, False)
    pools(world).run(cases.all_to_all_single, dtype, True)
    pools(world).run(cases.all_to_all, dtype)


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_send_recv(pools, world, dtype):
    for n in [1, 4099]:
        pools(world).run(cases.send_recv, dtype, n)


@pytest.mark.parametrize("world", WORLDS)
def test_isend_irecv_exchange_of_large_messages(pools, world):
    pools(world).run(cases.exchange, 1 << 20)


@pytest.mark.parametrize("world", WORLDS)
def test_barrier(pools, world):
    assert pools(world).run(cases.barrier) == [True] * world
