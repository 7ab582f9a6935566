// The TCP transport: reaches any peer. Each rank pair is joined by TRNCCL_SOCKET_NSOCKS
// sockets (setup.h), driven by one background I/O thread per transport instance (io_thread.h,
// link.h); messages are framed and checked as wire.h describes (tcp_connection.h).
//
// Environment:
//   TRNCCL_SOCKET_IFNAME   interfaces to listen on, NCCL syntax (transports/net/interfaces.h)
//   TRNCCL_SOCKET_FAMILY   AF_INET or AF_INET6 only (transports/net/interfaces.h)
//   TRNCCL_SOCKET_NSOCKS   sockets per peer, 1..16; a pair uses the smaller of its two ranks'
//                          values. Default 1: on the 2-core loopback test machine, 2 ranks
//                          exchanging 64 MiB messages both ways at once moved 0.99-1.15 GB/s
//                          per direction with 1 socket, 0.86-0.98 with 2 and 0.77-0.83 with 4
//                          (each rank's one I/O thread makes every socket call either way):
//                            TRNCCL_TRANSPORT=tcp TRNCCL_SOCKET_NSOCKS=N mpirun -np 2
//                              sendrecv_perf -b 64M -e 64M -n 8 -w 2
//                          More sockets may pay off on real NICs with more cores; striping is
//                          tested either way.
//   TRNCCL_TCP_BUFFER_BYTES staging per peer and direction (default 4 MiB, at least 64 KiB per
//                          socket); what bufferBytes() reports. Allocated when first used.
//
// The transport's doorbell must outlive its connections: the I/O thread rings it until each
// connection's destructor has closed its sockets.
#pragma once

#include <memory>

#include "transports/core/transport.h"

namespace trnccl::transport {

std::unique_ptr<Transport> makeTcpTransport();

}  // namespace trnccl::transport
