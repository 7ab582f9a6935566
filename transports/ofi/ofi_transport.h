// The libfabric transport: reaches peers through any provider offering reliable datagram
// endpoints with tagged messages (efa on AWS; over TCP libfabric's native tcp RDM provider,
// "net" in libfabric 1.17 and "tcp" from 1.18 on, or tcp under ofi_rxm; shm, ...). provider.h
// says which provider and domain it opens, endpoint.h how one rank's endpoint progresses, wire.h
// what goes on the wire, channel.h how one peer's bytes are buffered.
//
// Setup (collective, like every transport's): each rank with ofi peers opens an endpoint,
// all ranks exchange endpoint names over the bootstrap (a fixed 256-byte blob each, empty for
// ranks without ofi peers), insert their peers' names into the address vector, post their
// header receives, and agree that every rank succeeded before any data moves.
//
// Environment (besides provider.h's):
//   TRNCCL_OFI_PIECE_BYTES  largest payload of a data piece (default 1 MiB; a first piece
//                           carries the 32-byte header too; capped by the provider's
//                           max_msg_size; a pair uses the smaller of its two ranks' values).
//                           Over tcp;ofi_rxm it also sets rxm's eager limit (provider.h).
//   TRNCCL_OFI_BUFFER_BYTES bounce ring per peer for sending, what bufferBytes() reports, and
//                           the receive slots posted ahead per peer (default 4 MiB each,
//                           allocated on first use).
//   TRNCCL_OFI_ZCOPY_BYTES  pieces of at least this many bytes are sent from the caller's
//                           buffer instead of the ring (0: always copy; default 64 KiB over
//                           the native tcp provider, 0 elsewhere: provider.h zeroCopyBytes;
//                           pieces of buffers registered with the communicator go in place
//                           anyway). Providers that need local registration (FI_MR_LOCAL) do
//                           so only from device memory and registered host buffers, through a
//                           registration cache (mr_cache.h); other host pieces are copied.
//                           The interface lets a sender's source be read until sendDone(); the
//                           shm transport reads it in place from 32 KiB too. (Ring
//                           reduce-scatter once rewrote a scratch slice its next rank might
//                           not have received: double-buffered since 19ca5ee.)
//   TRNCCL_OFI_MR_LOCAL     1: behave as if the provider required local registration
//                           (FI_MR_LOCAL, as efa does) even when it does not: register the
//                           transport's buffers and cache device-memory registrations for
//                           zero-copy sends (default 0; for tests on machines without efa).
//   TRNCCL_OFI_WAKER        0: no wait-descriptor thread; the executor then polls (default 1).
//   TRNCCL_OFI_LINGER_MS    how long closing waits for sends in flight (default 2000).
//   TRNCCL_SOCKET_CONGESTION  the TCP congestion control of a TCP provider's connections,
//                           set once they exist (sockets.h), by the tcp transport's rule
//                           (transports/core/congestion.h: reno within one host by default;
//                           `default`: the system's).
//
// Which provider (provider.h): the one named exactly by TRNCCL_OFI_PROVIDER or a plain
// FI_PROVIDER, else efa, then the native tcp RDM provider, then tcp;ofi_rxm. With libfabric
// 1.17: nothing set -> net; FI_PROVIDER=tcp -> tcp;ofi_rxm (libfabric lists nothing else);
// FI_PROVIDER=net or TRNCCL_OFI_PROVIDER=net -> net; TRNCCL_OFI_PROVIDER="tcp;ofi_rxm" -> rxm
// whatever else is listed. From 1.18 on, FI_PROVIDER=tcp -> the native tcp (what net became).
// A provider the user named is never replaced by another.
//
// On a single host, libfabric's tcp and net providers list every interface; trnccl prefers the
// loopback entry when all ranks share the host (provider.h). FI_TCP_IFACE=lo pins it too (and
// net's FI_NET_IFACE, which trnccl sets from it when unset).
#pragma once

#include <memory>

#include "transports/core/transport.h"

namespace trnccl::transport {

std::unique_ptr<Transport> makeOfiTransport();

}  // namespace trnccl::transport
