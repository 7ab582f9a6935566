#include "common/data_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace trnccl::perf {
namespace {

constexpr size_t kChunk = size_t{1} << 16;  // elements per host round trip
constexpr int kMaxReported = 5;             // wrong elements printed per check

}  // namespace

CallBuffers callBuffers(const LocalRank& r, const TestCase& tc, bool inPlace) {
  if (!inPlace) return {r.send, r.recv};
  const size_t ts = typeInfo(tc.key.type).size;
  const size_t rank = size_t(r.rank);
  return {r.recv + rank * tc.counts.sendInplaceOffset * ts,
          r.recv + rank * tc.counts.recvInplaceOffset * ts};
}

void initData(const CollectiveTest& test, const TestCase& tc, bool inPlace, LocalRanks& ranks) {
  const TypeInfo& t = typeInfo(tc.key.type);
  std::vector<double> values(kChunk);
  std::vector<char> bytes(kChunk * t.size);
  const int poison = tc.key.rep % 2 ? 0xA5 : 0x5A;
  for (LocalRank& r : ranks.ranks()) {
    check(trnrtSetDevice(r.device), "trnrtSetDevice");
    const CallBuffers b = callBuffers(r, tc, inPlace);
    // Poison the whole output region first; in place the input is written over part of it.
    size_t end = size_t(b.recv - r.recv) + tc.counts.recv * t.size;
    if (inPlace) end = std::max(end, size_t(b.send - r.recv) + tc.counts.send * t.size);
    check(trnrtMemset(r.recv, poison, std::min(end, ranks.bufferBytes())), "trnrtMemset");
    for (size_t begin = 0; begin < tc.counts.send; begin += kChunk) {
      const size_t n = std::min(kChunk, tc.counts.send - begin);
      test.input(tc, r.rank, begin, std::span(values.data(), n));
      for (size_t k = 0; k < n; ++k) encodeValue(t.type, values[k], bytes.data() + k * t.size);
      check(trnrtMemcpy(b.send + begin * t.size, bytes.data(), n * t.size, trnrtMemcpyHostToDevice),
            "trnrtMemcpy(host to device)");
    }
  }
}

int64_t countWrong(const CollectiveTest& test, const TestCase& tc, bool inPlace,
                   LocalRanks& ranks) {
  const TypeInfo& t = typeInfo(tc.key.type);
  std::vector<Expect> expect(kChunk);
  std::vector<char> bytes(kChunk * t.size);
  int64_t wrong = 0;
  for (size_t begin = 0; begin < tc.counts.recv; begin += kChunk) {
    const size_t n = std::min(kChunk, tc.counts.recv - begin);
    const std::span<Expect> want(expect.data(), n);
    bool defined = false;
    for (size_t i = 0; i < ranks.ranks().size(); ++i) {
      LocalRank& r = ranks.ranks()[i];
      if (i == 0 || !test.sameResultOnAllRanks) defined = test.expected(tc, r.rank, begin, want);
      if (!defined) continue;
      const CallBuffers b = callBuffers(r, tc, inPlace);
      check(trnrtSetDevice(r.device), "trnrtSetDevice");
      check(trnrtMemcpy(bytes.data(), b.recv + begin * t.size, n * t.size, trnrtMemcpyDeviceToHost),
            "trnrtMemcpy(device to host)");
      for (size_t k = 0; k < n; ++k) {
        const double got = decodeValue(t.type, bytes.data() + k * t.size);
        if (std::fabs(got - want[k].value) <= want[k].tolerance) continue;  // NaN fails
        if (wrong++ < kMaxReported) {
          std::fprintf(stderr, "# %s rank %d %s element %zu: got %.17g, expected %.17g (+-%g)\n",
                       std::string(test.name).c_str(), r.rank,
                       inPlace ? "in-place" : "out-of-place", begin + k, got, want[k].value,
                       want[k].tolerance);
        }
      }
    }
  }
  return wrong;
}

}  // namespace trnccl::perf
