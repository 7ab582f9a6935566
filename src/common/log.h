// Logging through fmt, configured as NCCL's: TRNCCL_DEBUG=WARN|INFO|TRACE selects the level,
// TRNCCL_DEBUG_SUBSYS=INIT,COLL,... (or ^SHM to exclude) the subsystems, TRNCCL_DEBUG_FILE a
// file name in which %h is the host name and %p the pid.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <string_view>

namespace trnccl::log {

enum class Level : int { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

enum Subsys : unsigned {
  kInit = 1u << 0,
  kColl = 1u << 1,
  kP2p = 1u << 2,
  kShm = 1u << 3,
  kNet = 1u << 4,
  kBoot = 1u << 5,
  kTune = 1u << 6,
  kSched = 1u << 7,
  kEnv = 1u << 8,
  kDevice = 1u << 9,
  kAll = ~0u,
};

namespace detail {
// The configured level once log.cc read it (-1 until then): enabled() answers a check above it
// inline, without a call into this library (~19 instructions, a few per collective call).
extern std::atomic<int> configuredLevel;
bool enabledSlow(Level level, unsigned subsys);
}  // namespace detail

inline bool enabled(Level level, unsigned subsys) {
  const int configured = detail::configuredLevel.load(std::memory_order_relaxed);
  if (configured >= 0 && static_cast<int>(level) > configured) return false;
  return detail::enabledSlow(level, subsys);
}
void write(Level level, unsigned subsys, std::string_view message);
// Rank shown in each line of this thread (-1: none). Set by the communicator's threads.
void setThreadRank(int rank);

// Parses TRNCCL_DEBUG_SUBSYS syntax; exposed for tests.
unsigned parseSubsys(std::string_view spec);

}  // namespace trnccl::log

#define TRN_LOG(level, subsys, ...)                                                 \
  do {                                                                              \
    if (::trnccl::log::enabled(::trnccl::log::Level::level, ::trnccl::log::subsys)) \
      ::trnccl::log::write(::trnccl::log::Level::level, ::trnccl::log::subsys,      \
                           fmt::format(__VA_ARGS__));                               \
  } while (0)
#define TRN_WARN(subsys, ...) TRN_LOG(kWarn, subsys, __VA_ARGS__)
#define TRN_INFO(subsys, ...) TRN_LOG(kInfo, subsys, __VA_ARGS__)
#define TRN_TRACE(subsys, ...) TRN_LOG(kTrace, subsys, __VA_ARGS__)
