// Which libfabric provider and domain the ofi transport opens.
//
// Hints (what trnccl needs and supports): FI_EP_RDM with FI_TAGGED | FI_MSG; modes FI_CONTEXT
// and FI_CONTEXT2 (every operation carries an fi_context2); mr_mode FI_MR_LOCAL,
// FI_MR_VIRT_ADDR, FI_MR_ALLOCATED and FI_MR_PROV_KEY (buffers are registered when the provider
// asks for FI_MR_LOCAL); FI_THREAD_DOMAIN (one lock per endpoint serialises every call);
// progress left to the provider: trnccl polls the completion queue either way.
//
// Environment:
//   TRNCCL_OFI_PROVIDER  a provider name for the hints (e.g. "tcp", "net", "shm", "efa",
//                        "tcp;ofi_rxm"); libfabric's own FI_PROVIDER filters the list as usual.
//                        Unlike FI_PROVIDER, which libfabric reads once per process, this one
//                        is read at every decision.
//   TRNCCL_OFI_DOMAIN    only entries of this domain (e.g. "lo", "eth0", "rdmap0s31-rdm").
// Which entry of the list opens (pickProvider):
//   1. the provider the user named, when an entry has exactly that name: TRNCCL_OFI_PROVIDER,
//      else FI_PROVIDER when it is one plain name (not a list, not "^..."); a name that is
//      only part of the entries' names (FI_PROVIDER=tcp, whose entries are "tcp;ofi_rxm" in
//      libfabric 1.17) leaves the choice to 2 among what libfabric listed for it;
//   2. else efa, then the native tcp RDM provider (xnet: "tcp" from libfabric 1.18 on, "net"
//      in 1.17), then tcp;ofi_rxm, then whatever fi_getinfo listed first.
// So nothing the user named is ever replaced: libfabric lists only what FI_PROVIDER allows,
// and an exact name wins. FI_PROVIDER=tcp keeps meaning what libfabric makes of it: rxm over
// tcp in 1.17 (net is not listed then), the native provider from 1.18 on (rule 1).
// TRNCCL_OFI_PROVIDER="tcp;ofi_rxm" (or FI_PROVIDER="^net") asks for rxm where both exist.
// Why native first: on libfabric 1.17, net took 1.0-1.3x our tcp transport's time at 8 B-32 KiB
// where tcp;ofi_rxm took 1.6-2.1x, and about the same as rxm from 256 KiB (README.md, session
// 8); it starts a progress thread per endpoint (one that sleeps in epoll_wait between
// arrivals). FI_TCP_IFACE pins net too (copied to FI_NET_IFACE when that is unset).
// When every rank of a communicator is on this host, a loopback entry (source address
// 127.0.0.0/8 or ::1) is preferred within the chosen provider, so a single-host job never
// listens on an external interface.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "transports/ofi/fid.h"

namespace trnccl::transport::ofi {

// The fi_getinfo answer for the current environment: decided once per distinct value of the
// variables above and cached. An error carries fi_getinfo's reason.
Result<std::shared_ptr<const fi_info>> providerList();

// A copy of the entry to open (fi_dupinfo: one entry, no `next`): pickProvider over
// providerList() with namedProvider().
Result<InfoPtr> chooseProvider(bool singleHost);

// The entry of `list` to open, by the rules above; null only for an empty list.
const fi_info* pickProvider(const fi_info* list, std::string_view named, bool singleHost);

// The one provider the user named (rule 1 above), "" when none.
std::string namedProvider();

// "tcp;ofi_rxm, domain lo, fabric 127.0.0.1/32, max message 1073741824, mr_mode 0x..."
std::string describe(const fi_info& info);

// Before the first endpoint of `info` opens: over tcp;ofi_rxm, every piece of up to
// `pieceBytes` goes eager (FI_OFI_RXM_EAGER_LIMIT, which rxm reads at each fi_endpoint),
// instead of by rendezvous above 16 KiB. Rendezvous is a request, an RMA read served by the
// sender's provider only while the sender polls, and an acknowledgement: a round trip and
// usually a wake-up of each side per piece (64 KiB-2 MiB all-reduces took 1.2-3.9x our tcp
// transport's time). Over tcp, rxm lets the provider place eager data straight into the posted
// receive (dynamic receive buffers), so a large eager message costs no bounce copy; one that
// arrives before its receive is posted is buffered by the provider. Once per process, and a
// value the user set wins. Returns the limit in force ("" when untouched: another provider).
std::string tuneProvider(const fi_info& info, size_t pieceBytes);

// libfabric's native tcp RDM provider (protocol FI_PROTO_XNET: `net` in 1.17, `tcp` from 1.18).
bool nativeTcp(const fi_info& info);

// The header slot a rank proposes for `info` (wire.h: a header and the largest message that
// travels inside it): TRNCCL_OFI_INLINE_BYTES plus the header when set (at least 64 bytes of
// payload, at most 4 MiB and the provider's largest message), else kNativeHeaderSlotBytes over
// libfabric's native tcp RDM provider (no eager limit, so a 32 KiB message is one message
// without a data piece), else kHeaderSlotBytes (ofi_rxm's default eager limit). The pair takes
// the smaller of its two proposals.
size_t headerSlotBytes(const fi_info& info);

// Above which size a message streams (ChannelConfig::streamBytes: the waker rings the executor
// at every arrival while it is in flight, instead of once per sleep): TRNCCL_OFI_STREAM_BYTES
// when set, else kNativeStreamBytes over libfabric's native tcp RDM provider, whose progress
// runs without the executor (single pieces up to 256 KiB were 0.66-0.77x the time watched
// once; README.md, session 10), else 0 (every message above the inline bound streams: rxm
// moves bytes only while the executor reads its queue).
size_t streamBytes(const fi_info& info);

// From which size a data piece goes from the caller's buffer instead of the ring
// (ChannelConfig::zcopyBytes; 0: never): TRNCCL_OFI_ZCOPY_BYTES when set, else
// kNativeZeroCopyBytes over libfabric's native tcp RDM provider, which writes a posted send to
// its socket from where it lies (the ring's copy cost 2 MiB of memcpy per rank and 2 MiB
// all-reduce; README.md, session 16), else 0: ofi_rxm copies an eager message into a buffer of
// its own anyway, and efa's registrations of host memory are not cached (mr_cache.h).
size_t zeroCopyBytes(const fi_info& info);

// Above which size a message's pieces are posted per message and a copying receiver's go
// straight to its destination (ChannelConfig::placeBytes; 0: never): TRNCCL_OFI_PLACE_BYTES when
// set, else kNativePlaceBytes over libfabric's native tcp RDM provider, which leaves a piece that
// arrives before its receive in the socket and reads it into the receive once posted (README.md,
// session 17), else 0: ofi_rxm, shm and efa copy an early piece into a buffer of their own.
// The transport offers 0 where buffers need local registration; the pair takes 0 if either
// offers it, else the larger.
size_t placeBytes(const fi_info& info);

}  // namespace trnccl::transport::ofi
