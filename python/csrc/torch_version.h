// The PyTorch versions this backend builds against.
//
// Supported: 1.13 (Debian 12's python3-torch / libtorch-dev 1.13.1), where a third-party backend
// derives from c10d::ProcessGroup and its work from the top-level c10d::Work. PyTorch 2.x moved
// backends to c10d::Backend (pytorch PR #88330) and registers them per device type; older
// releases had ProcessGroup::Work. Neither is built or tested, so both stop here with a reason
// rather than failing somewhere inside the overrides.
#pragma once

#include <torch/version.h>

#if TORCH_VERSION_MAJOR != 1 || TORCH_VERSION_MINOR != 13
#error \
    "torch_trnccl supports PyTorch 1.13 only: 2.x backends derive from c10d::Backend (port process_group.h), before 1.13 Work was ProcessGroup::Work"
#endif
