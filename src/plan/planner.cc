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
#include "plan/cost_model.h"

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

// INFO names each (collective, algorithm, channels) the first time this process uses it.
void logChoice(const std::string& coll, const Choice& c, const std::string& spec) {
  if (!log::enabled(log::Level::kInfo, log::kTune)) return;
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu);
  const std::string algo = c.algorithm->name;
  if (seen.insert(fmt::format("{}/{}/{}", coll, algo, c.channels)).second) {
    const int64_t forced = env::getInt("TRNCCL_NCHANNELS", 0);
    TRN_INFO(kTune,
             "{}: algorithm {}, {} channel(s) (estimate {:.1f} us on the modelled topology; "
             "TRNCCL_ALGO={}, TRNCCL_NCHANNELS={})",
             coll, algo, c.channels, c.estimateUs, spec.empty() ? "unset" : spec,
             forced > 0 ? std::to_string(forced) : "unset");
  }
}

bool usesChannels(const std::string& algo, algorithms::Collective coll) {
  using algorithms::Collective;
  return algo == "ring" && (coll == Collective::kAllReduce || coll == Collective::kAllGather ||
                            coll == Collective::kReduceScatter);
}

// The algorithm's estimate with its best channel count.
Choice estimate(const algorithms::Algorithm& algo, const algorithms::CollArgs& args,
                const LinkModel& links) {
  algorithms::CollArgs a = args;
  a.channels = chooseChannels(algo.name, args, links);
  return Choice{&algo, estimateUs(algo.name, a, links).value_or(-1), a.channels};
}

// Keeps `c` if it beats `best`: any estimate over none, then the smallest; ties keep the
// table's order.
void consider(Choice& best, const Choice& c) {
  const double est = c.estimateUs;
  if (best.algorithm == nullptr || (est >= 0 && (best.estimateUs < 0 || est < best.estimateUs))) {
    best = c;
  }
}

}  // namespace

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

int chooseChannels(const std::string& algorithm, const algorithms::CollArgs& args,
                   const LinkModel& links) {
  if (!usesChannels(algorithm, args.coll) || args.nranks <= 1) return 1;
  const int usable =
      static_cast<int>(algorithms::channelRings(args.shape.get(), args.nranks).size());
  if (int64_t forced = env::getInt("TRNCCL_NCHANNELS", 0); forced > 0) {
    return static_cast<int>(std::min<int64_t>(forced, usable));
  }
  algorithms::CollArgs a = args;
  int best = 1;
  double bestUs = -1;
  for (a.channels = 1; a.channels <= usable; ++a.channels) {
    double us = estimateUs(algorithm, a, links).value_or(-1);
    if (us >= 0 && (bestUs < 0 || us < bestUs)) {
      best = a.channels;
      bestUs = us;
    }
  }
  return best;
}

Result<Choice> choose(const algorithms::CollArgs& args, const LinkModel& links) {
  const std::string coll = algorithms::collectiveName(args.coll);
  const std::string spec = env::getString("TRNCCL_ALGO", "");
  Choice best;
  for (const auto& algo : algorithms::algorithmsFor(args.coll)) {
    if (!algoAllowed(spec, coll, algo.name) || !algo.supports(args)) continue;
    consider(best, estimate(algo, args, links));
  }
  if (best.algorithm == nullptr && !spec.empty()) {
    // As NCCL falls back when a forced algorithm can't run: warn once, then choose freely.
    static std::once_flag warned;
    std::call_once(warned, [&] {
      TRN_WARN(kTune,
               "TRNCCL_ALGO='{}' allows no {} algorithm for this call; falling back to "
               "the tuner's choice",
               spec, coll);
    });
    for (const auto& algo : algorithms::algorithmsFor(args.coll)) {
      if (!algo.supports(args)) continue;
      consider(best, estimate(algo, args, links));
    }
  }
  if (best.algorithm == nullptr) {
    return internalError("no {} algorithm supports this call", coll);
  }
  return best;
}

Result<schedule::Schedule> plan(const algorithms::CollArgs& args, const LinkModel& links) {
  auto c = choose(args, links);
  if (!c) return c.status();
  const std::string coll = algorithms::collectiveName(args.coll);
  logChoice(coll, *c, env::getString("TRNCCL_ALGO", ""));
  TRN_TRACE(kTune, "{} count {} type {}: {}, {} channel(s) (estimate {:.1f} us)", coll, args.count,
            device::dataTypeName(args.type), c->algorithm->name, c->channels, c->estimateUs);
  algorithms::CollArgs a = args;
  a.channels = c->channels;
  return c->algorithm->build(a);
}

}  // namespace trnccl::plan
