// Command-line options of the *_perf benchmarks: the nccl-tests flags, parsed with getopt_long.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trnccl/trnccl.h"

namespace trnccl::perf {

// Upper bound of -t: each thread drives its own devices, and a host has at most a few hundred.
constexpr int kMaxThreads = 1024;

struct Options {
  int threads = 1;              // -t: threads per process
  int gpus = 1;                 // -g: devices (ranks) per thread
  size_t minBytes = 32u << 20;  // -b
  size_t maxBytes = 32u << 20;  // -e
  size_t stepBytes = 1u << 20;  // -i
  size_t stepFactor = 1;        // -f: > 1 multiplies, else stepBytes adds
  int iters = 20;               // -n
  int warmupIters = 1;          // -w
  int check = 1;                // -c: checked runs per size (0 = no check, #wrong is N/A)
  std::vector<trncclRedOp_t> ops{trncclSum};         // -o
  std::vector<trncclDataType_t> types{trncclFloat};  // -d
  int root = 0;                                      // -r: root rank; -1 = all roots
  int average = 1;        // -a: 0 rank 0, 1 avg, 2 min, 3 max over processes x threads
  int blocking = 0;       // -z
  double timeoutSec = 0;  // -T: 0 = no timeout
  std::string jsonPath;   // -J
  int localRegister = 0;  // -R: 1 = buffers of trncclMemAlloc, registered (trncclCommRegister)
  // --rewrite_send (not in nccl-tests): 1 = before each timed call, a device copy on the stream
  // rewrites the call's send buffer, as a trainer's fresh gradients are. Out of place the send
  // buffer is otherwise written once, so the peers' zero-copy reads of it hit their own caches
  // from the second call on, while in place every call rewrites it (transports/shm/README.md,
  // "In place against out of place"). Both columns then pay the same copy.
  int rewriteSend = 0;
};

// Outcome of parsing: either options to run with, or an exit code (after -h or an error,
// whose message is in `message`).
struct ParseResult {
  Options options;
  std::optional<int> exitCode;
  std::string message;
};

ParseResult parseOptions(int argc, char** argv);

// "64", "1K", "32M", "2G" (binary multiples, as nccl-tests); nullopt on junk or overflow.
std::optional<size_t> parseSize(std::string_view text);

// Sizes of the sweep from minBytes to maxBytes, by factor or by fixed step.
std::vector<size_t> sizeSweep(const Options& options);

std::string usage(const char* program);

}  // namespace trnccl::perf
