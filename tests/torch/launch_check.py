"""One rank of a launcher test: init the default group as a user script would, all-reduce,
check, and print "OK rank R of W device D" (run by test_launchers.py)."""

import sys

import torch
import torch.distributed as dist

import torch_trnccl  # noqa: F401

if len(sys.argv) > 1:  # an init method and the rank and world size, as with file:// or tcp://
    dist.init_process_group("trnccl", init_method=sys.argv[1], rank=int(sys.argv[2]),
                            world_size=int(sys.argv[3]))
else:  # env:// from the launcher
    dist.init_process_group("trnccl")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.full((1000,), float(rank + 1))
dist.all_reduce(t)
assert torch.equal(t, torch.full((1000,), float(world * (world + 1) // 2))), t
dist.barrier()
print("OK rank %d of %d device %d" % (rank, world, dist.distributed_c10d._get_default_group()
                                      .device), flush=True)
dist.destroy_process_group()
