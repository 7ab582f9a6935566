// Fuzz target: the TRNCCL_CHECK fingerprint a peer sends (48 untrusted bytes): decode, describe
// and compare must cope with any values (out-of-range enums, unprintable algorithm names).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "comm/check.h"

using namespace trnccl::comm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<check::Fingerprint> all;
  for (size_t at = 0; at + check::kWireBytes <= size; at += check::kWireBytes) {
    std::byte in[check::kWireBytes];
    std::memcpy(in, data + at, sizeof(in));
    check::Fingerprint fp = check::decode(in);
    std::byte out[check::kWireBytes];
    check::encode(fp, out);
    if (std::memcmp(in, out, sizeof(in)) != 0) std::abort();
    (void)check::describe(fp);
    all.push_back(fp);
  }
  trnccl::Status st = check::compare(all, "fuzz");
  bool same = true;
  for (const auto& fp : all) same = same && fp == all.front();
  if (st.isOk() != same) std::abort();
  return 0;
}
