"""torchrun that works with Debian 12's torch 1.13 on Python 3.11.

torch 1.13's torchrun parses --redirects and --tee with ``Std.from_str``, which finds the
value by iterating the IntFlag ``Std``. Since Python 3.11, iterating a flag no longer yields
its zero and multi-bit members, so the default "0" parses to None and every torchrun run dies
in ``to_map`` with "AttributeError: 'NoneType' object has no attribute 'get'", whatever the
backend. This module is torchrun with that parse fixed (and nothing else changed):

    python3 -m torch_trnccl.run --nproc_per_node=4 train.py --backend trnccl

(``torchrun --redirects 1 --tee 1 ...`` also avoids the bug, at the cost of log files.)
"""

import re
import sys

from torch.distributed.elastic.multiprocessing import api as _api


def _from_str(vm):
    if re.match(_api._VALUE_REGEX, vm):
        return _api.Std(int(vm))
    if re.match(_api._MAPPING_REGEX, vm):
        return {int(i): _api.Std(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
    raise ValueError("%s does not match: <%s> or <%s>"
                     % (vm, _api._VALUE_REGEX, _api._MAPPING_REGEX))


def fix_std_parsing():
    """Replaces Std.from_str when it is broken (True if it was)."""
    if _api.Std.from_str("0") is not None:
        return False
    _api.Std.from_str = staticmethod(_from_str)
    return True


def main(argv=None):
    fix_std_parsing()
    from torch.distributed import run
    run.main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
