#include "plan/planner.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>
#include <sstream>
#include <vector>

#include "algorithms/registry.h"
#include "algorithms/ring_steps.h"
#include "common/env.h"
#include "common/log.h"

namespace trnccl::plan {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool listAllows(std::string list, const std::string& algo) {
  bool exclude = !list.empty() && list.front() == '^';
  if (exclude) list.erase(0, 1);
  bool listed = false;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) listed = listed || lower(item) == algo;
  return exclude ? !listed : listed;
}

// INFO names each (collective, algorithm, channels, variant, mode) the first time this process
// uses it.
void logChoice(const std::string& coll, const Choice& c, const Overrides& overrides,
               const char* variant, bool deterministic) {
  if (!log::enabled(log::Level::kInfo, log::kTune)) return;
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu);
  const std::string algo = c.algorithm->name;
  const std::string step =
      variant != nullptr ? fmt::format(", inter-instance step {}", variant) : "";
  if (seen.insert(fmt::format("{}/{}/{}{}/{}", coll, algo, c.channels, step, deterministic))
          .second) {
    const std::string& spec = overrides.algo;
    const int forced = overrides.channels;
    TRN_INFO(kTune,
             "{}: algorithm {}{}, {} channel(s){} (estimate {:.1f} us on the modelled topology; "
             "TRNCCL_ALGO={}, TRNCCL_NCHANNELS={})",
             coll, algo, deterministic ? " (deterministic mode on: folds in rank order)" : "",
             c.channels, step, c.estimateUs, spec.empty() ? "unset" : spec,
             forced > 0 ? std::to_string(forced) : "unset");
  }
}

// Deterministic mode runs a reducing collective only on an algorithm whose descriptor claims
// the rank-order fold (Algorithm::foldsInRankOrder); a descriptor that says nothing declines.
bool keepsOrder(const algorithms::Algorithm& algo, const algorithms::CollArgs& args) {
  return !args.deterministic || !algorithms::reduces(args.coll) || algo.foldsInRankOrder;
}

// The algorithm's estimate with its best channel count.
Choice estimate(const algorithms::Algorithm& algo, const algorithms::CollArgs& args,
                const algorithms::LinkModel& links, int forcedChannels) {
  algorithms::CollArgs a = args;
  a.channels = chooseChannels(algo, args, links, forcedChannels);
  return Choice{&algo, algo.estimate(a, links), a.channels};
}

// Keeps `c` if it beats `best`: the smallest estimate; ties keep the registry's order.
void consider(Choice& best, const Choice& c) {
  if (best.algorithm == nullptr || c.estimateUs < best.estimateUs) best = c;
}

}  // namespace

Overrides Overrides::fromEnvironment() {
  const int64_t channels = env::getInt("TRNCCL_NCHANNELS", 0);
  return Overrides{env::getString("TRNCCL_ALGO", ""),
                   static_cast<int>(std::clamp<int64_t>(channels, 0, 1 << 20))};
}

bool algoAllowed(const std::string& spec, const std::string& coll, const std::string& algo) {
  if (spec.empty()) return true;
  if (spec.find(':') == std::string::npos) return listAllows(spec, algo);
  std::stringstream in(spec);
  for (std::string part; std::getline(in, part, ';');) {
    size_t colon = part.find(':');
    if (colon != std::string::npos && lower(part.substr(0, colon)) == coll) {
      return listAllows(part.substr(colon + 1), algo);
    }
  }
  return true;  // this collective is not mentioned
}

int chooseChannels(const algorithms::Algorithm& algorithm, const algorithms::CollArgs& args,
                   const algorithms::LinkModel& links, int forced) {
  if (!algorithm.usesChannels || args.nranks <= 1) return 1;
  const int usable =
      static_cast<int>(algorithms::channelRings(args.shape.get(), args.nranks).size());
  if (forced > 0) return std::min(forced, usable);
  algorithms::CollArgs a = args;
  int best = 1;
  double bestUs = -1;
  for (a.channels = 1; a.channels <= usable; ++a.channels) {
    const double us = algorithm.estimate(a, links);
    if (a.channels == 1 || us < bestUs) {
      best = a.channels;
      bestUs = us;
    }
  }
  return best;
}

Result<Choice> choose(const algorithms::CollArgs& call, const algorithms::LinkModel& links,
                      const Overrides& overrides) {
  // An algorithm may decline by the links too (oneshot over the host's shm transport).
  algorithms::CollArgs args = call;
  args.links = &links;
  const std::string coll = algorithms::collectiveName(args.coll);
  const std::string& spec = overrides.algo;
  Choice best;
  for (const algorithms::Algorithm* algo : algorithms::algorithmsFor(args.coll)) {
    if (!algoAllowed(spec, coll, algo->name) || !keepsOrder(*algo, args) || !algo->supports(args)) {
      continue;
    }
    consider(best, estimate(*algo, args, links, overrides.channels));
  }
  if (best.algorithm == nullptr && !spec.empty()) {
    // As NCCL falls back when a forced algorithm can't run: warn once, then choose freely.
    static std::once_flag warned;
    std::call_once(warned, [&] {
      TRN_WARN(kTune,
               "TRNCCL_ALGO='{}' allows no {} algorithm for this call{}; falling back to "
               "the tuner's choice",
               spec, coll,
               args.deterministic && algorithms::reduces(args.coll)
                   ? " in deterministic mode (only algorithms that fold in rank order run)"
                   : "");
    });
    for (const algorithms::Algorithm* algo : algorithms::algorithmsFor(args.coll)) {
      if (keepsOrder(*algo, args) && algo->supports(args)) {
        consider(best, estimate(*algo, args, links, overrides.channels));
      }
    }
  }
  if (best.algorithm == nullptr) {
    return internalError("no {} algorithm supports this call", coll);
  }
  return best;
}

Result<schedule::Schedule> plan(const algorithms::CollArgs& args,
                                const algorithms::LinkModel& links, const Overrides& overrides) {
  auto c = choose(args, links, overrides);
  if (!c) return c.status();
  const std::string coll = algorithms::collectiveName(args.coll);
  algorithms::CollArgs a = args;
  a.channels = c->channels;
  a.links = &links;
  const char* variant =
      c->algorithm->variant != nullptr ? c->algorithm->variant(a, links) : nullptr;
  logChoice(coll, *c, overrides, variant, args.deterministic && algorithms::reduces(args.coll));
  TRN_TRACE(kTune, "{} count {} type {}: {}, {} channel(s) (estimate {:.1f} us)", coll, args.count,
            device::dataTypeName(args.type), c->algorithm->name, c->channels, c->estimateUs);
  return c->algorithm->build(a);
}

}  // namespace trnccl::plan
