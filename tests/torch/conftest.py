"""Shared rank pools: one per world size for the whole session (starting one costs seconds)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from harness import RankPool  # noqa: E402

_pools = {}


@pytest.fixture(scope="session")
def pools():
    def get(world):
        if world not in _pools:
            _pools[world] = RankPool(world)
        return _pools[world]
    yield get
    for pool in _pools.values():
        pool.stop()
