// The TCP transport: reaches any peer. Each rank pair is joined by TRNCCL_SOCKET_NSOCKS
// sockets (setup.h). The executor's thread reads them itself and writes them while they are
// idle; one background I/O thread per transport instance (io_thread.h, link.h) writes what
// the socket did not take at once, runs the heartbeats and, for an executor that sleeps on the
// doorbell, watches for arrivals. Messages are framed and checked as wire.h describes
// (tcp_connection.h).
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
//   TRNCCL_SOCKET_BUFSIZE  SO_SNDBUF and SO_RCVBUF of the data sockets, bytes (the kernel
//                          doubles it and clamps it to net.core.wmem_max / rmem_max). Default
//                          0: not set, the kernel autotunes (as NCCL and Gloo leave it); 4 MiB
//                          made no difference beyond the noise of the loaded 2-core machine
//                          (reduce_scatter_perf -b 1M -e 64M over tcp, 2 ranks).
//   TRNCCL_SOCKET_CONGESTION  TCP_CONGESTION of the data sockets (transports/core/congestion.h,
//   congestionControl).
//                          Unset: "reno" for a peer on this host (loopback), the system's for
//                          others; a name: that one for every peer; "default": never set. The
//                          system's BBR paced loopback and fired spurious tail-loss probes, 1.5-2x
//                          slower all-reduces from 64 KiB (README.md, "Congestion control over
//                          loopback").
// Socket options set on every data socket: TCP_NODELAY (each message leaves at once; both ends,
// at the handshake), the congestion control above, the buffers above when asked. SO_BUSY_POLL is
// not set: a receiver already polls its socket itself (non-blocking reads while it spins, link.h)
// before it blocks in poll(2), and busy-polling in the kernel would take the core its peer needs on
// a loopback machine with 2 cores. The send and receive paths (writes straight from the caller's
// buffer, reads straight into the destination) are in README.md.
//
// The transport's doorbell must outlive its connections: the I/O thread rings it until each
// connection's destructor has closed its sockets.
#pragma once

#include <memory>

#include "transports/core/transport.h"

namespace trnccl::transport {

std::unique_ptr<Transport> makeTcpTransport();

}  // namespace trnccl::transport
