// How a thread that polls connections waits when none made progress: on the connections'
// descriptors when they all have some (a TCP socket wakes the waiting thread itself, with no
// I/O thread in between), else on the communicator's doorbell, which every transport rings.
// Either wait is bounded by `max`, so the caller can check its deadline, abort flag and peers.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>

#include "common/sleeper.h"
#include "common/wait.h"
#include "transports/core/transport.h"

namespace trnccl::transport {

// Returns when one of `conns` has news, the sleeper's doorbell moved past `seen` (a snapshot
// taken before the caller last polled, so no ring is lost), or `max` elapsed. Empty `conns`:
// the doorbell. The caller announced `sleeper` and polled once more before calling (sleeper.h).
void waitForNews(std::span<Connection* const> conns, DoorbellSleeper& sleeper, uint32_t seen,
                 std::chrono::microseconds max);

}  // namespace trnccl::transport
