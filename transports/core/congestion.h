// The congestion control of a transport's TCP connections (TRNCCL_SOCKET_CONGESTION), one rule
// for every transport that owns or finds TCP sockets: the tcp transport's data sockets
// (transports/tcp/setup.cc) and libfabric's connections of an ofi endpoint
// (transports/ofi/sockets.h).
//
// Why: the system's default here is BBR, which without the fq qdisc the kernel paces itself;
// over loopback that paced bursts and fired spurious tail-loss probes (retransmissions on a
// link that cannot lose a packet), 2x the time of a 1 MiB all-reduce. Reno neither paces nor
// probes, and is always allowed to an unprivileged user. Peers on another host keep the
// system's choice (a real network may need it). transports/tcp/README.md, "Congestion control
// over loopback", has the measurements; transports/ofi/README.md, "Session 16", libfabric's.
#pragma once

#include <string>

namespace trnccl::transport {

// The congestion control for one connection; "" leaves the system's. `setting` is
// TRNCCL_SOCKET_CONGESTION (nullptr when unset): a name applies to every connection, "default"
// (or "") to none; unset, a connection on this host (`sameHost`) takes "reno", others the
// system's.
std::string congestionControl(const char* setting, bool sameHost);

// TRNCCL_SOCKET_CONGESTION, or nullptr when unset (unset and empty differ: env.h's getters do
// not tell them apart).
const char* congestionSetting();

// Whether the connected socket `fd` joins two ends on this host: its peer's address is a
// loopback address or its own (the kernel then carries it over loopback, whichever interface's
// address it names). False when either address cannot be read.
bool sameHostSocket(int fd);

// Sets TCP_CONGESTION `name` (not empty) on the TCP socket `fd`; true when the kernel took it.
// A name it refuses (not built, or not allowed for this user) keeps the system's, with one
// warning per process naming `who` and `rank`.
bool setCongestion(int fd, const std::string& name, const char* who, int rank);

// The socket's TCP_CONGESTION ("" when it cannot be read).
std::string congestionOf(int fd);

}  // namespace trnccl::transport
