"""new_group: each subgroup its own communicator (a fresh id through the group's prefixed
store), used beside the world group and beside one another."""

import torch
import torch.distributed as dist


def disjoint_pairs():
    rank = dist.get_rank()
    low, high = dist.new_group([0, 1]), dist.new_group([2, 3])
    mine = low if rank < 2 else high
    other = high if rank < 2 else low
    assert other == dist.GroupMember.NON_GROUP_MEMBER
    assert dist.get_backend(mine) == "trnccl"
    assert dist.get_world_size(mine) == 2 and dist.get_rank(mine) == rank % 2
    t = torch.full((100,), float(rank))
    work = dist.all_reduce(t, group=mine, async_op=True)
    w = torch.full((10,), float(rank))
    dist.all_reduce(w)  # the world group meanwhile
    work.wait()
    pair = [0, 1] if rank < 2 else [2, 3]
    assert torch.equal(t, torch.full((100,), float(sum(pair))))
    assert torch.equal(w, torch.full((10,), 6.0))
    b = torch.full((3,), float(rank))
    dist.broadcast(b, src=pair[1], group=mine)  # src is a global rank
    assert torch.equal(b, torch.full((3,), float(pair[1])))
    dist.destroy_process_group(low if rank < 2 else high)


def strided_subgroup():
    rank = dist.get_rank()
    odd = dist.new_group([1, 3])
    if rank % 2 == 0:
        assert odd == dist.GroupMember.NON_GROUP_MEMBER
        return
    out = [torch.zeros(2) for _ in range(2)]
    dist.all_gather(out, torch.full((2,), float(rank)), group=odd)
    assert torch.equal(out[0], torch.full((2,), 1.0)) and torch.equal(out[1], torch.full((2,), 3.0))
    t = torch.full((4,), float(rank))
    if rank == 1:
        dist.send(t, 3, group=odd)
    else:
        got = torch.zeros(4)
        dist.recv(got, 1, group=odd)
        assert torch.equal(got, torch.full((4,), 1.0))


def many_groups_in_turn(n):
    rank, world = dist.get_rank(), dist.get_world_size()
    for i in range(n):
        members = sorted({i % world, (i + 1) % world, (i + 3) % world})
        group = dist.new_group(members)
        if rank in members:
            t = torch.ones(5)
            dist.all_reduce(t, group=group)
            assert torch.equal(t, torch.full((5,), float(len(members))))
            dist.destroy_process_group(group)


def test_disjoint_subgroups_beside_the_world_group(pools):
    pools(4).run(disjoint_pairs)


def test_strided_subgroup(pools):
    pools(4).run(strided_subgroup)


def test_many_subgroups_created_and_destroyed(pools):
    pools(4).run(many_groups_in_turn, 6)
