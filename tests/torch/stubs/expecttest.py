"""A stand-in for the `expecttest` package, which torch.testing._internal.common_utils imports
but Debian 12 does not package. Only its TestCase base class is needed by the distributed
tests; inline-expectation assertions skip the test instead of passing silently."""

import unittest

ACCEPT = False  # EXPECTTEST_ACCEPT: never, there is nothing to rewrite


class TestCase(unittest.TestCase):
    longMessage = True

    def assertExpectedInline(self, actual, expect, skip=0):  # noqa: N802 (expecttest's name)
        raise unittest.SkipTest("expecttest is not installed (tests/torch/stubs/expecttest.py)")
