"""pytorch_suite.py's selection: which of PyTorch's backend-guarded tests it runs on trnccl.

The suite unguards the CPU tests PyTorch keeps to named backends for what trnccl has too. It
once unguarded every "Test requires backend" test, monitored_barrier's among them, which torch
1.13 refuses for every backend but gloo: torch.suite.wide.n2 and .n4 failed on them. No ranks
are started: the suite module is imported in a subprocess (it sets BACKEND and WORLD_SIZE).
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

_DUMP = r"""
import json, sys, unittest
sys.argv = ["pytorch_suite"]
import pytorch_suite as ps
from torch.testing._internal.distributed.distributed_test import DistributedTest
base = DistributedTest._DistTestBase
out = {}
for name in unittest.TestLoader().getTestCaseNames(ps.TestTrnccl):
    ours = getattr(getattr(ps.TestTrnccl, name), "__unittest_skip_why__", None)
    theirs = getattr(getattr(base, name, None), "__unittest_skip_why__", None)
    out[name] = [ours, theirs]
print(json.dumps(out))
"""


def _skips():
    env = dict(os.environ, WORLD_SIZE="4")
    proc = subprocess.run([sys.executable, "-c", _DUMP], cwd=HERE, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_unguards_only_the_named_families():
    unguarded = sorted(name for name, (ours, theirs) in _skips().items()
                       if theirs is not None and ours is None)
    families = [n for n in unguarded if n.startswith("test_all_to_all")
                or n.startswith("test_all_reduce_coalesced") or "_object" in n
                or n == "test_get_future"]
    assert unguarded == families
    # docs/TORCH.md: 12 CPU all-to-all, 12 all_reduce_coalesced, 6 *_object tests, get_future.
    assert "test_get_future" in unguarded
    assert len([n for n in unguarded if n.startswith("test_all_to_all")]) == 12
    assert len([n for n in unguarded if n.startswith("test_all_reduce_coalesced")]) == 12
    assert len([n for n in unguarded if "_object" in n]) == 6


def test_monitored_barrier_is_skipped_as_gloo_only():
    skips = _skips()
    calls_it_on_trnccl = ["test_monitored_barrier_gloo", "test_monitored_barrier_gloo_subgroup",
                          "test_monitored_barrier_gloo_rank_0_timeout",
                          "test_monitored_barrier_failure_order",
                          "test_monitored_barrier_wait_all_ranks"]
    for name in calls_it_on_trnccl:
        ours, _ = skips[name]
        assert ours is not None and "gloo's only in torch 1.13" in ours, (name, ours)
