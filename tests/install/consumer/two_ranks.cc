// A program of a trnccl user, built against an installed tree only (tests/install): two ranks
// of one thread (trncclCommInitAll), one all-reduce in a group, the result checked. With
// TRNCCL_EXPECT_VERSION (find_package's trnccl_VERSION) it also checks that the package, the
// header and the library agree on the version.
#include <trnccl/trnccl.h>

#include <cstdio>
#include <vector>

#define CHECK(call)                                                         \
  do {                                                                      \
    trncclResult_t r_ = (call);                                             \
    if (r_ != trncclSuccess) {                                              \
      std::fprintf(stderr, "%s: %s: %s\n", #call, trncclGetErrorString(r_), \
                   trncclGetLastError(nullptr));                            \
      return 1;                                                             \
    }                                                                       \
  } while (0)

int main() {
  int version = 0;
  CHECK(trncclGetVersion(&version));
  if (version != TRNCCL_VERSION_CODE) {
    std::fprintf(stderr, "library version %d, header %d\n", version, TRNCCL_VERSION_CODE);
    return 1;
  }
#ifdef TRNCCL_EXPECT_VERSION
  if (version != TRNCCL_EXPECT_VERSION) {
    std::fprintf(stderr, "library version %d, CMake package %d\n", version, TRNCCL_EXPECT_VERSION);
    return 1;
  }
#endif
  constexpr int kRanks = 2;
  constexpr size_t kCount = 1000;
  trncclComm_t comms[kRanks];
  CHECK(trncclCommInitAll(comms, kRanks, nullptr));
  std::vector<std::vector<float>> data(kRanks);
  for (int r = 0; r < kRanks; ++r) data[r].assign(kCount, float(r + 1));
  CHECK(trncclGroupStart());
  for (int r = 0; r < kRanks; ++r) {
    CHECK(trncclAllReduce(data[r].data(), data[r].data(), kCount, trncclFloat32, trncclSum,
                          comms[r], nullptr));
  }
  CHECK(trncclGroupEnd());
  for (int r = 0; r < kRanks; ++r) {
    trnrtSetDevice(r);
    if (trnrtDeviceSynchronize() != trnrtSuccess) return 1;
  }
  int wrong = 0;
  for (int r = 0; r < kRanks; ++r) {
    for (float x : data[r]) wrong += x != 3.0f;
    CHECK(trncclCommDestroy(comms[r]));
  }
  std::printf("%s: %d ranks summed %zu floats (trnccl %d)\n", wrong ? "FAILED" : "OK", kRanks,
              kCount, version);
  return wrong ? 1 : 0;
}
