#include "plan/planner.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>
#include <sstream>
#include <vector>

#include "algorithms/registry.h"
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

// INFO names each (collective, algorithm) pair the first time this process uses it.
void logChoice(const std::string& coll, const std::string& algo, const std::string& spec,
               double estimateUs) {
  if (!log::enabled(log::Level::kInfo, log::kTune)) return;
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu);
  if (seen.insert(coll + "/" + algo).second) {
    TRN_INFO(kTune, "{}: algorithm {} (estimate {:.1f} us on the modelled topology; TRNCCL_ALGO={})",
             coll, algo, estimateUs, spec.empty() ? "unset" : spec);
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

Result<Choice> choose(const algorithms::CollArgs& args, const LinkModel& links) {
  const std::string coll = algorithms::collectiveName(args.coll);
  const std::string spec = env::getString("TRNCCL_ALGO", "");
  Choice best;
  for (const auto& algo : algorithms::algorithmsFor(args.coll)) {
    if (!algoAllowed(spec, coll, algo.name) || !algo.supports(args)) continue;
    double est = estimateUs(algo.name, args, links).value_or(-1);
    // Prefer any estimate over none, then the smallest; ties keep the table's order.
    if (best.algorithm == nullptr || (est >= 0 && (best.estimateUs < 0 || est < best.estimateUs))) {
      best = Choice{&algo, est};
    }
  }
  if (best.algorithm == nullptr && !spec.empty()) {
    // As NCCL falls back when a forced algorithm can't run: warn once, then choose freely.
    static std::once_flag warned;
    std::call_once(warned, [&] {
      TRN_WARN(kTune, "TRNCCL_ALGO='{}' allows no {} algorithm for this call; falling back to "
               "the tuner's choice", spec, coll);
    });
    for (const auto& algo : algorithms::algorithmsFor(args.coll)) {
      if (!algo.supports(args)) continue;
      double est = estimateUs(algo.name, args, links).value_or(-1);
      if (best.algorithm == nullptr || (est >= 0 && (best.estimateUs < 0 || est < best.estimateUs))) {
        best = Choice{&algo, est};
      }
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
  logChoice(coll, c->algorithm->name, env::getString("TRNCCL_ALGO", ""), c->estimateUs);
  TRN_TRACE(kTune, "{} count {} type {}: {} (estimate {:.1f} us)", coll, args.count,
            device::dataTypeName(args.type), c->algorithm->name, c->estimateUs);
  return c->algorithm->build(args);
}

}  // namespace trnccl::plan
