"""PyTorch's own distributed tests on trnccl.

Runs a selection of torch.testing._internal.distributed.distributed_test (TestDistBackend +
DistributedTest._DistTestBase) with BACKEND=trnccl, "trnccl" registered in DistTestCases as a
third-party backend (as torch_ucc's test/torch_tests.py does). Each test spawns WORLD_SIZE
processes of its own, rendezvous through a file store.

    WORLD_SIZE=4 /usr/bin/python3 pytorch_suite.py [--selection default|wide] [-k PATTERN ...]

The default selection is the families of issue 15 (docs/TORCH.md lists what passes and what is
skipped and why); `wide` is every test of the suite (label long). Exit status 0 when nothing
failed; skips are listed with their reasons.
"""

import argparse
import collections
import os
import shutil
import sys
import tempfile
import time
import unittest

# Debian 12 has no python3-expecttest, which torch's test utilities import (stubs/).
_STUBS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stubs")
sys.path.append(_STUBS)
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in [os.environ.get("PYTHONPATH"), _STUBS] if p)

os.environ.setdefault("BACKEND", "trnccl")
os.environ.setdefault("WORLD_SIZE", "2")
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")

import torch  # noqa: E402
import torch_trnccl  # noqa: E402,F401  registers the backend
from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

DistTestCases.backend_feature["plugin"].add("trnccl")
DistTestCases.backend_feature["ddp"].add("trnccl")
DistTestCases.backend_feature["subgroup"].add("trnccl")
DistTestCases.skip_collective["sendrecv anysource"].add("trnccl")  # no recv from any source

# TestDistBackend._run turns on DDP's ReplicatedTensor mode, which imports
# torch.distributed._shard; on Python 3.11 that import fails in torch 1.13 (a dataclass with a
# mutable default), whatever the backend. DDP is tested without that mode.
import torch.nn.parallel._replicated_tensor_ddp_utils as _replicated  # noqa: E402

_replicated._set_ddp_with_replicated_tensor = lambda value: None

# Imported after DistTestCases is set: its decorators read it at import time.
from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    Barrier, DistributedTest, TestDistBackend)

# The families issue 15 names.
DEFAULT = ["test_all_reduce", "test_broadcast", "test_reduce", "test_all_gather", "test_gather",
           "test_scatter", "test_all_to_all", "test_barrier", "test_send_recv", "test_isend",
           "test_irecv", "test_DistributedDataParallelCPU"]

# Tests of the selection that cannot pass on trnccl, and why (docs/TORCH.md).
_GLOO_ONLY_MONITORED_BARRIER = (
    "monitored_barrier is gloo's only in torch 1.13: dist.monitored_barrier refuses every other "
    "backend by name, before reaching the process group")
KNOWN = {name: _GLOO_ONLY_MONITORED_BARRIER for name in [
    "test_monitored_barrier_gloo", "test_monitored_barrier_gloo_subgroup",
    "test_monitored_barrier_gloo_rank_0_timeout", "test_monitored_barrier_failure_order",
    "test_monitored_barrier_wait_all_ranks"]}


# Every test starts and ends with the suite's file barrier, 10 s by default: on 2 shared cores
# four ranks setting up their communicators' transports can take longer to get there.
_sync = Barrier.sync.__func__
Barrier.sync = classmethod(lambda cls, wait_for=None, timeout=10: _sync(cls, wait_for,
                                                                        max(timeout, 60)))


class TestTrnccl(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        # Forked, not spawned: a spawned rank imports torch and this suite again (~4 s per rank
        # per test on 2 cores). The parent never creates a trnccl communicator or stream, so
        # there are no trnccl threads to lose in the fork.
        self._start_processes(torch.multiprocessing.get_context("fork").Process)


for _name, _why in KNOWN.items():
    setattr(TestTrnccl, _name, unittest.skip(_why)(getattr(TestTrnccl, _name)))


def _unguarded(test):
    """The test without its backend-name skip (the attribute unittest reads), same body."""
    def run(self):
        return test(self)
    run.__name__ = run.__qualname__ = test.__name__
    return run


def _guarded_by_name_only(name, why):
    """CPU tests the suite keeps to named backends for what trnccl has too: the CPU all-to-all
    ones ("Only MPI supports CPU all_to_all_single": gloo lacks it), all_reduce_coalesced and the
    *_object ones (`require_backend({"gloo"})`, `({"gloo", "nccl"})`), test_get_future ("get_future
    is only supported on mpi, nccl and gloo": a Work's future and `then`). Named tests only: the
    same skip reasons guard what trnccl lacks too (monitored_barrier, gloo's only in torch 1.13;
    unguarding every "Test requires backend" test ran those in the wide selection, which failed)."""
    if "cuda" in name:
        return False
    if why.startswith("Only MPI supports"):
        return name.startswith("test_all_to_all")
    if why.startswith("Test requires backend"):
        return name.startswith("test_all_reduce_coalesced") or "_object" in name
    if why.startswith("get_future is only supported"):
        # Not the test_accumulate_gradients_no_sync* ones: their bodies build the model only
        # for BACKEND "mpi", "gloo" or "nccl", by name.
        return name == "test_get_future"
    return False


for _name in unittest.TestLoader().getTestCaseNames(TestTrnccl):
    _test = getattr(TestTrnccl, _name)
    if _guarded_by_name_only(_name, getattr(_test, "__unittest_skip_why__", "")):
        setattr(TestTrnccl, _name, _unguarded(_test))


class TimedResult(unittest.TextTestResult):
    """Records each test's wall time (the slowest are printed at the end)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.times = []

    def startTest(self, test):  # noqa: N802 (unittest's name)
        self._started = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):  # noqa: N802
        self.times.append((time.monotonic() - self._started, test.id().split(".")[-1]))
        super().stopTest(test)


def select(selection, patterns):
    names = unittest.TestLoader().getTestCaseNames(TestTrnccl)
    if selection == "default":
        names = [n for n in names if any(n.startswith(p) for p in DEFAULT)]
    if patterns:
        names = [n for n in names if any(p in n for p in patterns)]
    return unittest.TestSuite(TestTrnccl(n) for n in names)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--selection", choices=["default", "wide"], default="default")
    parser.add_argument("-k", action="append", default=[], help="substring of test names")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    suite = select(args.selection, args.k)
    if args.list:
        for test in suite:
            print(test.id().split(".")[-1])
        return 0
    temp = tempfile.mkdtemp(prefix="trnccl_torch_suite_")
    os.environ["TEMP_DIR"] = temp
    try:
        result = unittest.TextTestRunner(verbosity=2, resultclass=TimedResult).run(suite)
        for seconds, name in sorted(result.times, reverse=True)[:10]:
            print("%6.1f s  %s" % (seconds, name))
        reasons = collections.Counter(why for _, why in result.skipped)
        for why, count in reasons.most_common():
            print("skipped %3d  %s" % (count, why))
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    failed = len(result.failures) + len(result.errors)
    print("world %s: %d run, %d passed, %d failed, %d skipped" % (
        os.environ["WORLD_SIZE"], result.testsRun,
        result.testsRun - failed - len(result.skipped), failed, len(result.skipped)))
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
