"""Data-parallel training with torch.distributed on trnccl (or gloo, to compare).

A small MLP classifies synthetic data (no downloads) with DistributedDataParallel. Every rank
draws the same dataset from the seed and trains on its own shard; rank 0 prints the mean loss
over all ranks at every step. At the end the ranks compare their parameters.

    torchrun --nproc_per_node=4 examples/ddp_train.py --backend trnccl
    torchrun --nproc_per_node=4 examples/ddp_train.py --backend gloo

The same seed gives the same losses on both backends, to float tolerance. On Debian 12
(torch 1.13 on Python 3.11) torchrun itself fails before starting any rank; use
`python3 -m torch_trnccl.run` in its place (same arguments). Without a launcher the script
runs as one rank.
"""

import argparse
import json
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=["trnccl", "gloo"], default="trnccl")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=64, help="samples per rank and step")
    p.add_argument("--width", type=int, default=256, help="hidden units")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--losses", help="rank 0 writes the losses to this JSON file")
    return p.parse_args()


def make_model(width, inputs=32, classes=10):
    return nn.Sequential(nn.Linear(inputs, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, classes))


def make_data(seed, samples, inputs=32, classes=10):
    """A fixed random teacher labels Gaussian inputs: learnable, the same on every rank."""
    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(samples, inputs, generator=g)
    teacher = torch.randn(inputs, classes, generator=g)
    return x, (x @ teacher).argmax(dim=1)


def init(backend):
    if "RANK" not in os.environ:  # no launcher: one rank
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(port))
    if backend == "trnccl":
        import torch_trnccl  # noqa: F401  registers the backend
    dist.init_process_group(backend)


def parameters_identical(model):
    """True on every rank if every rank holds exactly the same parameters."""
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    return all(torch.equal(g, gathered[0]) for g in gathered)


def main():
    args = parse_args()
    init(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)  # the same initial model everywhere (DDP broadcasts it anyway)
    model = DistributedDataParallel(make_model(args.width))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = make_data(args.seed, args.steps * args.batch * world)
    losses = []
    for step in range(args.steps):
        lo = (step * world + rank) * args.batch
        loss = nn.functional.cross_entropy(model(x[lo:lo + args.batch]), y[lo:lo + args.batch])
        opt.zero_grad()
        loss.backward()  # DDP all-reduces the gradients here
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)  # SUM: gloo has no AVG
        losses.append(mean.item() / world)
        if rank == 0:
            print("step %3d  loss %.6f" % (step, losses[-1]), flush=True)
    same = parameters_identical(model)
    if rank == 0:
        print("backend %s, %d ranks: parameters %s on every rank" % (
            args.backend, world, "identical" if same else "DIFFER"), flush=True)
        if args.losses:
            with open(args.losses, "w") as f:
                json.dump({"backend": args.backend, "world": world, "losses": losses,
                           "identical": same}, f)
    # Drop DDP (its Reducer holds the group) while the group is still registered: torch 1.13's
    # ProcessGroupGloo, destroyed from the Reducer with the GIL held, can deadlock with its own
    # worker thread freeing a tensor (seen at exit with --backend gloo).
    del model, opt
    dist.destroy_process_group()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
