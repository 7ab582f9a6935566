// What the fault scenarios (fault_test.cc, resource_test.cc) share: skipping with a reason, the
// error lines ranks print (fault_rank.cc), the job's shm segment names, and the waits every
// scenario starts or ends with. Times are CLOCK_MONOTONIC ms.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "fault/launcher.h"

namespace trnccl::fault {

constexpr int kSkip = 77;  // CTest SKIP_RETURN_CODE of every fault test
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif
constexpr int kRemoteError = 6, kInvalidUsage = 5, kTimeout = 8;  // trncclResult_t

// CTest shows the test as skipped, with the reason, instead of a silent pass.
[[noreturn]] inline void skipTest(const std::string& reason) {
  std::printf("SKIPPED: %s\n", reason.c_str());
  std::fflush(stdout);
  std::exit(kSkip);
}

struct ErrorLine {
  long long t = 0;
  int sync = 0;   // trnrtError_t of trnrtStreamSynchronize
  int async = 0;  // trncclResult_t of trncclCommGetAsyncError
  long long since = 0;
  std::string message;
};

inline ErrorLine parseError(const std::string& rest) {
  ErrorLine e;
  std::istringstream in(rest);
  in >> e.t >> e.sync >> e.async >> e.since;
  std::getline(in, e.message);
  return e;
}

// Same formula as the library (unique_id.cc): the id made from TRNCCL_COMM_ID, whose magic
// begins the job's shm segment names "/trnccl-<magic hex>-r<rank>-<nonce>".
inline std::string shmPrefix(int port) {
  std::string commId = "127.0.0.1:" + std::to_string(port);
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : commId) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "trnccl-%016llx-", static_cast<unsigned long long>(h));
  return buf;
}

inline void waitAllIterating(Job& job, std::chrono::milliseconds timeout) {
  for (int r = 0; r < job.nranks(); ++r) {
    ASSERT_TRUE(job.waitLine(r, "ITER 0 ", timeout)) << "rank " << r << " never iterated:\n"
                                                     << job.output(r);
  }
}

// Releases held survivors, checks their abort is prompt and they exit cleanly.
inline void releaseAndCheckAbort(Job& job, const std::vector<int>& survivors) {
  for (int r : survivors) job.closeStdin(r);
  for (int r : survivors) {
    auto ms = job.waitLine(r, "ABORT_MS ", std::chrono::seconds(10));
    ASSERT_TRUE(ms) << "rank " << r << " did not finish its abort:\n" << job.output(r);
    EXPECT_LT(std::stol(*ms), 2000) << "rank " << r << " abort took " << *ms << " ms";
    auto status = job.waitExit(r, std::chrono::seconds(10));
    ASSERT_TRUE(status) << "rank " << r << " did not exit after abort";
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "rank " << r << " status " << *status << "\n"
        << job.output(r);
  }
}

}  // namespace trnccl::fault
