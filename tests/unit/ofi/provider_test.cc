// Which provider entry the ofi transport opens (transports/ofi/provider.h): a provider the
// user named exactly wins, else efa, then the native tcp RDM provider ("tcp" from libfabric
// 1.18 on, "net" in 1.17), then tcp;ofi_rxm, then the first listed; loopback within the
// chosen provider on a single host. The rules run on lists made here, whatever this machine's
// libfabric offers; the last tests check them on its real list.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "unit/ofi/ofi_test_util.h"

namespace trnccl::transport::ofi::test {
namespace {

struct Entry {
  const char* provider;
  bool loopback;
};

// A list in fi_getinfo's shape, freed with fi_freeinfo (which frees the names and addresses).
InfoPtr makeList(const std::vector<Entry>& entries) {
  InfoPtr head;
  fi_info* last = nullptr;
  for (const Entry& entry : entries) {
    fi_info* info = fi_allocinfo();
    info->fabric_attr->prov_name = ::strdup(entry.provider);
    auto* address = static_cast<sockaddr_in*>(std::calloc(1, sizeof(sockaddr_in)));
    address->sin_family = AF_INET;
    address->sin_addr.s_addr = htonl(entry.loopback ? 0x7f000001u : 0xc0000201u);  // 192.0.2.1
    info->src_addr = address;
    info->src_addrlen = sizeof(sockaddr_in);
    if (last == nullptr) {
      head.reset(info);
    } else {
      last->next = info;
    }
    last = info;
  }
  return head;
}

// The chosen entry as "provider/lo" or "provider/eth".
std::string pick(const std::vector<Entry>& entries, std::string_view named, bool singleHost) {
  InfoPtr list = makeList(entries);
  const fi_info* chosen = pickProvider(list.get(), named, singleHost);
  if (chosen == nullptr) return "none";
  const auto* address = static_cast<const sockaddr_in*>(chosen->src_addr);
  bool loopback = ntohl(address->sin_addr.s_addr) == 0x7f000001u;
  return std::string(chosen->fabric_attr->prov_name) + (loopback ? "/lo" : "/eth");
}

TEST(OfiProviderChoice, EfaFirstThenNativeTcpThenRxm) {
  EXPECT_EQ(pick({{"net", false}, {"tcp;ofi_rxm", false}, {"efa", false}}, "", false), "efa/eth");
  // libfabric 1.17's list without FI_PROVIDER: net, rxm over net, sockets, rxm over tcp.
  EXPECT_EQ(
      pick({{"net;ofi_rxm", false}, {"sockets", false}, {"tcp;ofi_rxm", false}, {"net", false}}, "",
           false),
      "net/eth");
  // 1.18 and later name the native provider tcp.
  EXPECT_EQ(pick({{"tcp;ofi_rxm", false}, {"tcp", false}}, "", false), "tcp/eth");
  EXPECT_EQ(pick({{"net;ofi_rxm", false}, {"sockets", false}, {"tcp;ofi_rxm", false}}, "", false),
            "tcp;ofi_rxm/eth");
  EXPECT_EQ(pick({{"shm", false}, {"udp;ofi_rxd", false}}, "", false), "shm/eth");
  EXPECT_EQ(pick({}, "", false), "none");
}

TEST(OfiProviderChoice, AProviderNamedExactlyWins) {
  EXPECT_EQ(pick({{"tcp;ofi_rxm", false}, {"net", false}}, "net", false), "net/eth");
  EXPECT_EQ(pick({{"net", false}, {"tcp;ofi_rxm", false}, {"efa", false}}, "tcp;ofi_rxm", false),
            "tcp;ofi_rxm/eth");
  // FI_PROVIDER=tcp from libfabric 1.18 on: the native provider, not rxm over it.
  EXPECT_EQ(pick({{"tcp;ofi_rxm", false}, {"tcp", false}}, "tcp", false), "tcp/eth");
}

TEST(OfiProviderChoice, APartialNameLeavesTheChoiceToThePreferences) {
  // FI_PROVIDER=tcp on libfabric 1.17: only rxm's entries are listed, and one of them opens.
  EXPECT_EQ(pick({{"tcp;ofi_rxm", false}, {"tcp;ofi_rxm", true}}, "tcp", false), "tcp;ofi_rxm/eth");
  EXPECT_EQ(pick({{"tcp;ofi_rxm", false}, {"tcp;ofi_rxm", true}}, "tcp", true), "tcp;ofi_rxm/lo");
}

TEST(OfiProviderChoice, LoopbackOnlyWithinTheChosenProvider) {
  const std::vector<Entry> list = {{"net", false}, {"tcp;ofi_rxm", true}, {"net", true}};
  EXPECT_EQ(pick(list, "", true), "net/lo");
  EXPECT_EQ(pick(list, "", false), "net/eth");
  EXPECT_EQ(pick(list, "tcp;ofi_rxm", true), "tcp;ofi_rxm/lo");
  EXPECT_EQ(pick({{"efa", false}, {"tcp;ofi_rxm", true}}, "", true), "efa/eth")
      << "no loopback entry of the chosen provider: it opens as listed";
}

TEST(OfiProviderChoice, TheNameComesFromTrncclFirstThenOnePlainFiProvider) {
  EnvGuard fi("FI_PROVIDER", "tcp");
  {
    EnvGuard ours("TRNCCL_OFI_PROVIDER", "net");
    EXPECT_EQ(namedProvider(), "net");
  }
  EnvGuard ours("TRNCCL_OFI_PROVIDER", "");
  EXPECT_EQ(namedProvider(), "tcp");
  for (const char* notOne : {"tcp,shm", "^net"}) {
    EnvGuard list("FI_PROVIDER", notOne);
    EXPECT_EQ(namedProvider(), "") << notOne;
  }
}

// This machine's libfabric: a provider named through TRNCCL_OFI_PROVIDER opens, on loopback.
class OfiProviderNamed : public PerProvider {};

TEST_P(OfiProviderNamed, OpensWhatWasNamed) {
  Result<InfoPtr> chosen = chooseProvider(/*singleHost=*/true);
  ASSERT_TRUE(chosen.isOk()) << chosen.status().message();
  const std::string name = (*chosen)->fabric_attr->prov_name;
  if (GetParam() == "tcp") {
    // rxm over tcp on libfabric 1.17, the native provider from 1.18 on.
    EXPECT_TRUE(name == "tcp;ofi_rxm" || name == "tcp") << name;
  } else {
    EXPECT_EQ(name, GetParam());
  }
  const auto* address = static_cast<const sockaddr*>((*chosen)->src_addr);
  if (address != nullptr && address->sa_family == AF_INET) {  // shm's are names
    EXPECT_EQ(ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr) >> 24, 127u)
        << describe(**chosen);
  }
}

INSTANTIATE_TEST_SUITE_P(Providers, OfiProviderNamed,
                         ::testing::Values("tcp", "net", "shm", "tcp;ofi_rxm"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), ';', '_');
                           return name;
                         });

// Nothing named (no TRNCCL_OFI_PROVIDER, no FI_PROVIDER): efa where listed, else libfabric's
// native tcp RDM provider ("tcp" from 1.18 on, "net" in 1.17).
TEST(OfiProviderDefault, NativeTcpWithoutAName) {
  if (std::getenv("FI_PROVIDER") != nullptr) GTEST_SKIP() << "FI_PROVIDER is set";
  EnvGuard ours("TRNCCL_OFI_PROVIDER", "");
  Result<std::shared_ptr<const fi_info>> list = providerList();
  if (!list) GTEST_SKIP() << list.status().message();
  std::string expected;
  for (const char* name : {"net", "tcp", "efa"}) {  // the last one listed wins below
    for (const fi_info* info = list->get(); info != nullptr; info = info->next) {
      if (std::strcmp(info->fabric_attr->prov_name, name) == 0) expected = name;
    }
  }
  if (expected.empty()) GTEST_SKIP() << "no efa and no native tcp RDM provider here";
  Result<InfoPtr> chosen = chooseProvider(/*singleHost=*/true);
  ASSERT_TRUE(chosen.isOk()) << chosen.status().message();
  EXPECT_EQ(std::string((*chosen)->fabric_attr->prov_name), expected);
}

}  // namespace
}  // namespace trnccl::transport::ofi::test
