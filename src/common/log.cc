#include "common/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "common/env.h"

namespace trnccl::log {
namespace {

thread_local int tlsRank = -1;

struct Config {
  Level level = Level::kNone;
  unsigned subsys = kAll;
  FILE* out = stderr;
  std::string host;
};

std::string expandFileName(std::string_view pattern, const std::string& host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[++i];
      if (c == 'h') {
        out += host;
        continue;
      }
      if (c == 'p') {
        out += std::to_string(getpid());
        continue;
      }
      if (c == '%') {
        out += '%';
        continue;
      }
      out += '%';
    }
    out += pattern[i];
  }
  return out;
}

const Config& config() {
  static const Config cfg = [] {
    Config c;
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    c.host = host;
    std::string level = env::getString("TRNCCL_DEBUG", "");
    for (auto& ch : level) ch = static_cast<char>(toupper(ch));
    if (level == "WARN")
      c.level = Level::kWarn;
    else if (level == "INFO")
      c.level = Level::kInfo;
    else if (level == "TRACE")
      c.level = Level::kTrace;
    c.subsys = parseSubsys(env::getString("TRNCCL_DEBUG_SUBSYS", "INIT,ENV,TUNE,NET,SHM,BOOT"));
    std::string file = env::getString("TRNCCL_DEBUG_FILE", "");
    if (!file.empty() && c.level != Level::kNone) {
      if (FILE* f = std::fopen(expandFileName(file, c.host).c_str(), "w")) c.out = f;
    }
    return c;
  }();
  return cfg;
}

const char* levelName(Level level) {
  switch (level) {
    case Level::kWarn:
      return "WARN";
    case Level::kInfo:
      return "INFO";
    case Level::kTrace:
      return "TRACE";
    default:
      return "";
  }
}

}  // namespace

unsigned parseSubsys(std::string_view spec) {
  bool invert = !spec.empty() && spec.front() == '^';
  if (invert) spec.remove_prefix(1);
  static constexpr std::pair<std::string_view, unsigned> kNames[] = {
      {"INIT", kInit}, {"COLL", kColl},     {"P2P", kP2p},   {"SHM", kShm},
      {"NET", kNet},   {"BOOT", kBoot},     {"TUNE", kTune}, {"SCHED", kSched},
      {"ENV", kEnv},   {"DEVICE", kDevice}, {"ALL", kAll}};
  unsigned mask = 0;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view name = spec.substr(0, comma);
    for (auto [n, bit] : kNames) {
      if (name.size() == n.size() && std::equal(name.begin(), name.end(), n.begin(),
                                                [](char a, char b) { return toupper(a) == b; }))
        mask |= bit;
    }
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return invert ? ~mask : mask;
}

std::atomic<int> detail::configuredLevel{-1};

bool detail::enabledSlow(Level level, unsigned subsys) {
  const Config& c = config();
  configuredLevel.store(static_cast<int>(c.level), std::memory_order_relaxed);
  return static_cast<int>(level) <= static_cast<int>(c.level) &&
         (level == Level::kWarn || (c.subsys & subsys) != 0);
}

void write(Level level, unsigned /*subsys*/, std::string_view message) {
  static std::mutex mu;
  const Config& c = config();
  std::string line =
      fmt::format("{}:{}:{} [{}] trnccl {} {}\n", c.host, getpid(),
                  static_cast<long>(syscall(SYS_gettid)), tlsRank, levelName(level), message);
  std::lock_guard<std::mutex> lock(mu);
  std::fputs(line.c_str(), c.out);
  std::fflush(c.out);
}

void setThreadRank(int rank) { tlsRank = rank; }

}  // namespace trnccl::log
