// Which libfabric provider and domain the ofi transport opens.
//
// Hints (what trnccl needs and supports): FI_EP_RDM with FI_TAGGED | FI_MSG; modes FI_CONTEXT
// and FI_CONTEXT2 (every operation carries an fi_context2); mr_mode FI_MR_LOCAL,
// FI_MR_VIRT_ADDR, FI_MR_ALLOCATED and FI_MR_PROV_KEY (buffers are registered when the provider
// asks for FI_MR_LOCAL); FI_THREAD_DOMAIN (one lock per endpoint serialises every call);
// progress left to the provider: trnccl polls the completion queue either way.
//
// Environment:
//   TRNCCL_OFI_PROVIDER  a provider name for the hints (e.g. "tcp", "shm", "efa"); libfabric's
//                        own FI_PROVIDER filters the list as usual. Unlike FI_PROVIDER, which
//                        libfabric reads once per process, this one is read at every decision.
//   TRNCCL_OFI_DOMAIN    only entries of this domain (e.g. "lo", "eth0", "rdmap0s31-rdm").
// Without them, the first entry of provider efa wins, then tcp;ofi_rxm, then whatever
// fi_getinfo listed first. When every rank of a communicator is on this host, a loopback
// entry (source address 127.0.0.0/8 or ::1) is preferred within the chosen provider, so a
// single-host job never listens on an external interface.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "transports/ofi/fid.h"

namespace trnccl::transport::ofi {

// The fi_getinfo answer for the current environment: decided once per distinct value of the
// variables above and cached. An error carries fi_getinfo's reason.
Result<std::shared_ptr<const fi_info>> providerList();

// A copy of the entry to open (fi_dupinfo: one entry, no `next`).
Result<InfoPtr> chooseProvider(bool singleHost);

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

}  // namespace trnccl::transport::ofi
