#include "common/options.h"

#include <fmt/format.h>
#include <getopt.h>

#include <charconv>
#include <cstdlib>
#include <limits>

#include "common/data.h"

namespace trnccl::perf {
namespace {

std::optional<long> parseInt(std::string_view text) {
  long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

template <typename T, size_t N>
std::optional<std::vector<T>> parseList(std::string_view text, const T (&all)[N],
                                        std::optional<T> (*parseOne)(std::string_view)) {
  if (text == "all") return std::vector<T>(all, all + N);
  if (auto one = parseOne(text)) return std::vector<T>{*one};
  return std::nullopt;
}

}  // namespace

std::optional<size_t> parseSize(std::string_view text) {
  if (text.empty()) return std::nullopt;
  size_t shift = 0;
  switch (text.back()) {
    case 'K':
    case 'k':
      shift = 10;
      break;
    case 'M':
    case 'm':
      shift = 20;
      break;
    case 'G':
    case 'g':
      shift = 30;
      break;
    default:
      break;
  }
  if (shift) text.remove_suffix(1);
  size_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (v > (std::numeric_limits<size_t>::max() >> shift)) return std::nullopt;
  return v << shift;
}

std::vector<size_t> sizeSweep(const Options& o) {
  std::vector<size_t> sizes;
  for (size_t s = o.minBytes; s <= o.maxBytes;) {
    sizes.push_back(s);
    const size_t next = o.stepFactor > 1 ? s * o.stepFactor : s + o.stepBytes;
    if (next <= s) break;  // -b 0 with a factor, a zero step, or overflow: stop
    s = next;
  }
  return sizes;
}

std::string usage(const char* program) {
  return fmt::format(
      "USAGE: {} \n"
      "\t[-t,--nthreads <num threads>] threads per process, each driving -g devices\n"
      "\t[-g,--ngpus <devices per thread>] ranks = processes x threads x devices\n"
      "\t[-b,--minbytes <min size in bytes>] (K/M/G suffixes: 2^10, 2^20, 2^30)\n"
      "\t[-e,--maxbytes <max size in bytes>] \n"
      "\t[-i,--stepbytes <increment size>] \n"
      "\t[-f,--stepfactor <increment factor>] \n"
      "\t[-n,--iters <iteration count>] \n"
      "\t[-w,--warmup_iters <warmup iteration count>] \n"
      "\t[-c,--check <check iteration count>] \n"
      "\t[-o,--op <sum/prod/min/max/avg/all>] \n"
      "\t[-d,--datatype <nccltype/all>] (int8 uint8 int32 uint32 int64 uint64 half float double "
      "bfloat16 f8e4m3 f8e5m2)\n"
      "\t[-r,--root <root|all>] \n"
      "\t[-z,--blocking <0/1/2/3>] \n"
      "\t[-T,--timeout <time in seconds>] \n"
      "\t[-a,--average <0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>] \n"
      "\t[-J,--output_file <file>] write results as JSON \n"
      "\t[-R,--local_register <0/1>] 1: buffers of trncclMemAlloc, registered with the "
      "communicator \n"
      "\t[--rewrite_send <0/1>] 1: rewrite the send buffer by a device copy before each timed "
      "call, so out of place reads data as freshly written as in place does\n"
      "\t[-h,--help]\n"
      "Bandwidths are in GB/s with 1 GB = 1e9 bytes; algbw = size/time, busbw = algbw * a\n"
      "collective-specific factor (2(n-1)/n for all-reduce).\n",
      program);
}

// Options without a short form (nccl-tests' letters are left free): getopt_long returns these.
constexpr int kRewriteSend = 256;

ParseResult parseOptions(int argc, char** argv) {
  static const option kLong[] = {{"nthreads", required_argument, nullptr, 't'},
                                 {"ngpus", required_argument, nullptr, 'g'},
                                 {"minbytes", required_argument, nullptr, 'b'},
                                 {"maxbytes", required_argument, nullptr, 'e'},
                                 {"stepbytes", required_argument, nullptr, 'i'},
                                 {"stepfactor", required_argument, nullptr, 'f'},
                                 {"iters", required_argument, nullptr, 'n'},
                                 {"warmup_iters", required_argument, nullptr, 'w'},
                                 {"check", required_argument, nullptr, 'c'},
                                 {"op", required_argument, nullptr, 'o'},
                                 {"datatype", required_argument, nullptr, 'd'},
                                 {"root", required_argument, nullptr, 'r'},
                                 {"blocking", required_argument, nullptr, 'z'},
                                 {"timeout", required_argument, nullptr, 'T'},
                                 {"average", required_argument, nullptr, 'a'},
                                 {"output_file", required_argument, nullptr, 'J'},
                                 {"local_register", required_argument, nullptr, 'R'},
                                 {"rewrite_send", required_argument, nullptr, kRewriteSend},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  ParseResult res;
  Options& o = res.options;
  auto fail = [&](std::string msg) {
    res.exitCode = 1;
    res.message = std::move(msg) + "\n" + usage(argv[0]);
    return res;
  };
  optind = 1;  // parseOptions may run more than once in a process (unit tests)
  opterr = 0;
  int c = 0;
  while ((c = getopt_long(argc, argv, "t:g:b:e:i:f:n:w:c:o:d:r:z:T:a:J:R:h", kLong, nullptr)) !=
         -1) {
    const std::string_view arg = optarg ? optarg : "";
    auto intArg = [&](int lo, int hi, int& out) {
      const auto v = parseInt(arg);
      if (!v || *v < lo || *v > hi) return false;
      out = int(*v);
      return true;
    };
    bool ok = true;
    switch (c) {
      case 't':
        ok = intArg(1, kMaxThreads, o.threads);
        break;
      case 'g':
        ok = intArg(1, 1 << 16, o.gpus);
        break;
      case 'n':
        ok = intArg(1, 1 << 30, o.iters);
        break;
      case 'w':
        ok = intArg(0, 1 << 30, o.warmupIters);
        break;
      case 'c':
        ok = intArg(0, 1 << 20, o.check);
        break;
      case 'z':
        ok = intArg(0, 3, o.blocking);
        break;
      case 'a':
        ok = intArg(0, 3, o.average);
        break;
      case 'b':
      case 'e':
      case 'i': {
        const auto v = parseSize(arg);
        ok = v.has_value();
        if (ok) (c == 'b' ? o.minBytes : c == 'e' ? o.maxBytes : o.stepBytes) = *v;
        break;
      }
      case 'f': {
        const auto v = parseInt(arg);
        ok = v && *v >= 1;
        if (ok) o.stepFactor = size_t(*v);
        break;
      }
      case 'o': {
        auto v = parseList<trncclRedOp_t>(arg, kAllOps, parseOp);
        ok = v.has_value();
        if (ok) o.ops = std::move(*v);
        break;
      }
      case 'd': {
        auto v = parseList<trncclDataType_t>(arg, kAllTypes, parseType);
        ok = v.has_value();
        if (ok) o.types = std::move(*v);
        break;
      }
      case 'r':
        if (arg == "all")
          o.root = -1;
        else
          ok = intArg(0, 1 << 30, o.root);
        break;
      case 'T': {
        char* end = nullptr;
        o.timeoutSec = std::strtod(optarg, &end);
        ok = end && *end == '\0' && o.timeoutSec >= 0;
        break;
      }
      case 'J':
        o.jsonPath = arg;
        break;
      case 'R':
        ok = intArg(0, 1, o.localRegister);
        break;
      case kRewriteSend:
        ok = intArg(0, 1, o.rewriteSend);
        break;
      case 'h':
        res.exitCode = 0;
        res.message = usage(argv[0]);
        return res;
      default:
        return fail(fmt::format("invalid option '{}'", argv[optind - 1]));
    }
    if (!ok) {
      if (c == 't') {
        return fail(
            fmt::format("invalid value '{}' for -t: the number of threads per process "
                        "must be an integer in [1, {}]",
                        arg, kMaxThreads));
      }
      if (c == kRewriteSend) return fail(fmt::format("invalid value '{}' for --rewrite_send", arg));
      return fail(fmt::format("invalid value '{}' for -{}", arg, char(c)));
    }
  }
  if (optind < argc) return fail(fmt::format("unexpected argument '{}'", argv[optind]));
  if (o.maxBytes < o.minBytes) {
    return fail(fmt::format("maxBytes {} < minBytes {}", o.maxBytes, o.minBytes));
  }
  if (o.stepFactor <= 1 && o.stepBytes == 0) return fail("-i 0 without -f would never end");
  return res;
}

}  // namespace trnccl::perf
