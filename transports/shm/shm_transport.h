// The shared-memory transport: ranks on one host (same hostHash and bootId) exchange messages
// through FIFOs in POSIX shared memory, and large pieces by reading the sender's memory in
// place (shm_connection.h for the wire format, zero_copy.h for the in-place routes).
//
// Environment:
//   TRNCCL_SHM_FIFO_BYTES  bytes of each inbound FIFO (rounded up to 64, at least 4 KiB).
//                          Default 1 MiB when this rank has at most 8 shm peers, else 256 KiB,
//                          so a 32-rank host stays near 250 MiB of /dev/shm in total per rank
//                          set instead of 1 GiB.
//   TRNCCL_SHM_ZCOPY_BYTES pieces of at least this many bytes go by descriptor instead of
//                          being copied through the FIFO. Default 64 KiB, the collectives'
//                          pipeline slice (zero_copy.h); host memory of another process goes by
//                          process_vm_readv from 256 KiB only. 0 disables. A piece of a
//                          registered buffer goes from min(this, 64 KiB) (kRegisteredMinBytes).
//   TRNCCL_SHM_CMA         0 forbids process_vm_readv of peers' host memory (default 1).
//   TRNCCL_SHM_ARENA_MAP   0 forbids mapping peers' device arenas (default 1).
//   TRNCCL_SHM_LL_THRESHOLD messages of 1 .. this many bytes go by the low-latency protocol
//                          (ll.h), which takes up to a quarter of each FIFO's memory. Default 256;
//                          0 disables. The receiver's value decides, so ranks may differ.
//
// Lifetime: connect() rebinds the communicator's Doorbell into this rank's segment; the
// Doorbell keeps that mapping alive until it is destroyed itself (common/wait.h).
#pragma once

#include <memory>

#include "transports/core/transport.h"

namespace trnccl::transport {

std::unique_ptr<Transport> makeShmTransport();

}  // namespace trnccl::transport
