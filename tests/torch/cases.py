"""Cases run on every rank of a pool (harness.RankPool): each builds its inputs from its rank,
runs one torch.distributed call on the default (trnccl) group and checks the result against a
reference computed from every rank's inputs."""

import functools

import torch
import torch.distributed as dist

DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool"]
OPS = ["SUM", "PRODUCT", "MIN", "MAX", "AVG"]


def value(rank, n, dtype, salt=0):
    """Small exact values (1..3, or alternating bools), different per rank and element."""
    i = torch.arange(n, dtype=torch.int64)
    v = (i + rank + salt) % 3 + 1
    if dtype == torch.bool:
        return (v % 2) == 0
    return v.to(dtype)


def reference(inputs, op, dtype):
    if dtype == torch.bool:
        fn = {"SUM": torch.logical_or, "MAX": torch.logical_or,
              "PRODUCT": torch.logical_and, "MIN": torch.logical_and}[op]
        return functools.reduce(fn, inputs)
    if op == "AVG":
        total = functools.reduce(torch.add, [x.to(torch.float64) for x in inputs])
        if dtype.is_floating_point:
            return (total / len(inputs)).to(dtype)
        return torch.div(total, len(inputs), rounding_mode="trunc").to(dtype)
    fn = {"SUM": torch.add, "PRODUCT": torch.mul,
          "MIN": torch.minimum, "MAX": torch.maximum}[op]
    return functools.reduce(fn, inputs)


def _ctx():
    return dist.get_rank(), dist.get_world_size()


def _check(got, want, what):
    assert got.dtype == want.dtype and torch.equal(got, want), \
        "%s: rank %d got %s, want %s" % (what, dist.get_rank(), got, want)


def all_reduce(dtype_name, op, n):
    rank, world = _ctx()
    dtype = getattr(torch, dtype_name)
    t = value(rank, n, dtype)
    dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
    _check(t, reference([value(r, n, dtype) for r in range(world)], op, dtype), "all_reduce")


def all_reduce_complex(n):
    rank, world = _ctx()
    t = torch.complex(value(rank, n, torch.float32), value(rank, n, torch.float32, salt=1))
    dist.all_reduce(t)
    want = sum(torch.complex(value(r, n, torch.float32), value(r, n, torch.float32, salt=1))
               for r in range(world))
    _check(t, want, "all_reduce complex")


def reduce(dtype_name, op, n, root):
    rank, world = _ctx()
    dtype = getattr(torch, dtype_name)
    t = value(rank, n, dtype)
    dist.reduce(t, root, op=getattr(dist.ReduceOp, op))
    if rank == root:
        _check(t, reference([value(r, n, dtype) for r in range(world)], op, dtype), "reduce")


def broadcast(dtype_name, n, root):
    rank, _ = _ctx()
    dtype = getattr(torch, dtype_name)
    t = value(rank, n, dtype)
    dist.broadcast(t, root)
    _check(t, value(root, n, dtype), "broadcast")


def all_gather(dtype_name, n):
    rank, world = _ctx()
    dtype = getattr(torch, dtype_name)
    out = [torch.zeros(n, dtype=dtype) for _ in range(world)]
    dist.all_gather(out, value(rank, n, dtype))
    for r in range(world):
        _check(out[r], value(r, n, dtype), "all_gather[%d]" % r)


def all_gather_into_tensor(dtype_name, n):
    rank, world = _ctx()
    dtype = getattr(torch, dtype_name)
    out = torch.zeros(world * n, dtype=dtype)
    dist._all_gather_base(out, value(rank, n, dtype))
    _check(out, torch.cat([value(r, n, dtype) for r in range(world)]), "_all_gather_base")


def all_gather_coalesced(n):
    rank, world = _ctx()
    inputs = [value(rank, n, torch.float32), value(rank, n + 2, torch.float32, salt=1)]
    out = [[torch.zeros_like(x) for x in inputs] for _ in range(world)]
    dist.all_gather_coalesced(out, inputs)
    for r in range(world):
        _check(out[r][0], value(r, n, torch.float32), "all_gather_coalesced[%d][0]" % r)
        _check(out[r][1], value(r, n + 2, torch.float32, salt=1), "all_gather_coalesced[%d][1]" % r)


def all_reduce_coalesced(op):
    rank, world = _ctx()
    shapes = [(5,), (3, 4), (0,), (17,)]
    ts = [value(rank, functools.reduce(lambda a, b: a * b, s, 1), torch.float64, salt=i).view(s)
          for i, s in enumerate(shapes)]
    dist.all_reduce_coalesced(ts, op=getattr(dist.ReduceOp, op))
    for i, s in enumerate(shapes):
        n = functools.reduce(lambda a, b: a * b, s, 1)
        want = reference([value(r, n, torch.float64, salt=i) for r in range(world)], op,
                         torch.float64).view(s)
        _check(ts[i], want, "all_reduce_coalesced[%d]" % i)


def gather(dtype_name, n, root):
    rank, world = _ctx()
    dtype = getattr(torch, dtype_name)
    out = [torch.zeros(n, dtype=dtype) for _ in range(world)] if rank == root else None
    dist.gather(value(rank, n, dtype), out, dst=root)
    if rank == root:
        for r in range(world):
            _check(out[r], value(r, n, dtype), "gather[%d]" % r)


def scatter(dtype_name, n, root):
    rank, world = _ctx()
    dtype = getattr(torch, dtype_name)
    out = torch.zeros(n, dtype=dtype)
    inputs = [value(r, n, dtype, salt=root) for r in range(world)] if rank == root else None
    dist.scatter(out, inputs, src=root)
    _check(out, value(rank, n, dtype, salt=root), "scatter")


def reduce_scatter(dtype_name, op, n):
    rank, world = _ctx()
    dtype = getattr(torch, dtype_name)
    out = torch.zeros(n, dtype=dtype)
    dist.reduce_scatter(out, [value(rank, n, dtype, salt=j) for j in range(world)],
                        op=getattr(dist.ReduceOp, op))
    _check(out, reference([value(r, n, dtype, salt=rank) for r in range(world)], op, dtype),
           "reduce_scatter")


def reduce_scatter_tensor(dtype_name, op, n):
    rank, world = _ctx()
    dtype = getattr(torch, dtype_name)
    out = torch.zeros(n, dtype=dtype)
    inp = torch.cat([value(rank, n, dtype, salt=j) for j in range(world)])
    dist._reduce_scatter_base(out, inp, op=getattr(dist.ReduceOp, op))
    _check(out, reference([value(r, n, dtype, salt=rank) for r in range(world)], op, dtype),
           "_reduce_scatter_base")


def _block(src, dst, rows, dtype):
    """What rank src sends rank dst in the all-to-all cases: rows x 2 values."""
    return value(src * 7 + dst, rows * 2, dtype).view(rows, 2)


def all_to_all_single(dtype_name, unequal):
    rank, world = _ctx()
    dtype = getattr(torch, dtype_name)
    rows = (lambda src, dst: (src + 2 * dst) % 3) if unequal else (lambda src, dst: 2)
    inp = torch.cat([_block(rank, d, rows(rank, d), dtype) for d in range(world)])
    out = torch.zeros(sum(rows(s, rank) for s in range(world)), 2, dtype=dtype)
    if unequal:
        dist.all_to_all_single(out, inp, [rows(s, rank) for s in range(world)],
                               [rows(rank, d) for d in range(world)])
    else:
        dist.all_to_all_single(out, inp)
    _check(out, torch.cat([_block(s, rank, rows(s, rank), dtype) for s in range(world)]),
           "all_to_all_single")


def all_to_all(dtype_name):
    rank, world = _ctx()
    dtype = getattr(torch, dtype_name)
    rows = lambda src, dst: (src + dst) % 3 + 1  # noqa: E731
    inputs = [_block(rank, d, rows(rank, d), dtype) for d in range(world)]
    out = [torch.zeros(rows(s, rank), 2, dtype=dtype) for s in range(world)]
    dist.all_to_all(out, inputs)
    for s in range(world):
        _check(out[s], _block(s, rank, rows(s, rank), dtype), "all_to_all[%d]" % s)


def send_recv(dtype_name, n):
    """A ring: every rank sends to the next and receives from the previous, as isend/irecv;
    then rank 0 sends to every other rank with blocking send/recv."""
    rank, world = _ctx()
    dtype = getattr(torch, dtype_name)
    out = torch.zeros(n, dtype=dtype)
    reqs = [dist.isend(value(rank, n, dtype), (rank + 1) % world),
            dist.irecv(out, (rank - 1) % world)]
    for req in reqs:
        req.wait()
    _check(out, value((rank - 1) % world, n, dtype), "isend/irecv ring")
    if rank == 0:
        for dst in range(1, world):
            dist.send(value(dst, n, dtype, salt=1), dst)
    else:
        got = torch.zeros(n, dtype=dtype)
        assert dist.recv(got, 0) == 0
        _check(got, value(rank, n, dtype, salt=1), "send/recv")


def exchange(n):
    """Every rank isends to every other rank, then irecvs from each: with messages far above
    the shm FIFO and zero-copy thresholds, sends issued one by one would wait for each other."""
    rank, world = _ctx()
    outs = {p: torch.zeros(n) for p in range(world) if p != rank}
    reqs = [dist.isend(torch.full((n,), float(rank * 10 + p)), p) for p in outs]
    reqs += [dist.irecv(outs[p], p) for p in outs]
    for req in reqs:
        req.wait()
    for p, out in outs.items():
        _check(out, torch.full((n,), float(p * 10 + rank)), "exchange from %d" % p)


def barrier():
    dist.barrier()
    return True
