"""torch.distributed on trnccl against gloo: all_reduce bus bandwidth and DDP step time.

Every rank creates both groups (the default one on trnccl, a gloo group over the same ranks),
so both backends run on the same machine, the same ranks and in the same run; each size and
each DDP round measures trnccl then gloo, alternating, so that a noisy neighbour hurts both.

    python3 -m torch_trnccl.run --nproc_per_node=4 perf/torch_bench.py [--max-bytes 64M]

(torch_trnccl.run is torchrun, usable on Debian 12.) Rank 0 prints nccl-tests-like columns:
time in us (the slowest rank's mean), algbw = bytes / time and busbw = algbw * 2(n-1)/n in
GB/s (1e9 B/s), for float32 sum all-reduces from 8 B to --max-bytes (x4 steps), then the DDP
step time (forward, backward with the gradient all-reduce, optimizer step) of
examples/ddp_train.py's model. --json FILE writes the figures.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

import torch_trnccl  # noqa: F401  registers "trnccl"

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from ddp_train import make_data, make_model  # noqa: E402


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--min-bytes", type=parse_size, default=8)
    p.add_argument("--max-bytes", type=parse_size, default=64 << 20)
    p.add_argument("--ddp-width", type=int, default=1024, help="hidden units of the model")
    p.add_argument("--ddp-batch", type=int, default=64)
    p.add_argument("--ddp-steps", type=int, default=10, help="steps per round and backend")
    p.add_argument("--ddp-rounds", type=int, default=5)
    p.add_argument("--json", help="rank 0 writes the figures here")
    return p.parse_args()


def sizes(lo, hi):
    out, n = [], lo
    while n < hi:
        out.append(n)
        n *= 4
    return out + [hi]


def iterations(nbytes):
    return max(5, min(200, (256 << 20) // max(nbytes, 1) // 8))


def slowest(seconds, ctl):
    """The largest value over the ranks, through the gloo control group."""
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=ctl)
    return t.item()


def time_all_reduce(group, ctl, nbytes):
    t = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
    iters = iterations(nbytes)
    for _ in range(2):
        dist.all_reduce(t, group=group)
    dist.barrier(group=ctl)
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t, group=group)
    return slowest((time.perf_counter() - start) / iters, ctl)


def time_ddp(model, opt, x, y, steps, ctl):
    dist.barrier(group=ctl)
    start = time.perf_counter()
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return slowest((time.perf_counter() - start) / steps, ctl)


def main():
    args = parse_args()
    dist.init_process_group("trnccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    groups = {"trnccl": dist.group.WORLD, "gloo": dist.new_group(backend="gloo")}
    ctl = dist.new_group(backend="gloo")  # measurement bookkeeping, outside both timings
    factor = 2 * (world - 1) / world if world > 1 else 1.0
    rows = []
    if rank == 0:
        print("# torch.distributed.all_reduce float32 sum, %d ranks; times in us, GB/s = 1e9 B/s"
              % world)
        print("# %10s %12s %9s %9s %12s %9s %9s %8s" % (
            "bytes", "trnccl us", "algbw", "busbw", "gloo us", "algbw", "busbw", "ratio"))
    for nbytes in sizes(args.min_bytes, args.max_bytes):
        row = {"bytes": nbytes}
        for name in ["trnccl", "gloo"]:
            seconds = time_all_reduce(groups[name], ctl, nbytes)
            algbw = nbytes / seconds / 1e9
            row[name] = {"us": seconds * 1e6, "algbw": algbw, "busbw": algbw * factor}
        rows.append(row)
        if rank == 0:
            a, b = row["trnccl"], row["gloo"]
            print("  %10d %12.1f %9.3f %9.3f %12.1f %9.3f %9.3f %8.2f" % (
                nbytes, a["us"], a["algbw"], a["busbw"], b["us"], b["algbw"], b["busbw"],
                a["busbw"] / b["busbw"]), flush=True)
    ddp = ddp_steps(args, groups, ctl, world)
    if rank == 0:
        print("# DDP step (MLP width %d, batch %d per rank): trnccl %.2f ms, gloo %.2f ms "
              "(median of %d rounds of %d steps)" % (args.ddp_width, args.ddp_batch,
                                                     ddp["trnccl"], ddp["gloo"],
                                                     args.ddp_rounds, args.ddp_steps))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"world": world, "all_reduce": rows, "ddp_ms": ddp}, f, indent=1)
    dist.destroy_process_group()


def ddp_steps(args, groups, ctl, world):
    x, y = make_data(0, args.ddp_batch * world)
    rank = dist.get_rank()
    x, y = x[rank * args.ddp_batch:(rank + 1) * args.ddp_batch], y[rank * args.ddp_batch:
                                                                      (rank + 1) * args.ddp_batch]
    runs = {}
    for name, group in groups.items():
        torch.manual_seed(0)
        model = DistributedDataParallel(make_model(args.ddp_width), process_group=group)
        runs[name] = (model, torch.optim.SGD(model.parameters(), lr=0.01))
    times = {name: [] for name in groups}
    for _ in range(args.ddp_rounds):
        for name, (model, opt) in runs.items():
            times[name].append(time_ddp(model, opt, x, y, args.ddp_steps, ctl) * 1e3)
    return {name: sorted(t)[len(t) // 2] for name, t in times.items()}


if __name__ == "__main__":
    main()
