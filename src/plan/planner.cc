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
void logChoice(const std::string& coll, const std::string& algo, const std::string& spec) {
  if (!log::enabled(log::Level::kInfo, log::kTune)) return;
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu);
  if (seen.insert(coll + "/" + algo).second) {
    TRN_INFO(kTune, "{}: algorithm {} (TRNCCL_ALGO={})", coll, algo, spec.empty() ? "unset" : spec);
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

Result<schedule::Schedule> plan(const algorithms::CollArgs& args) {
  const std::string coll = algorithms::collectiveName(args.coll);
  const std::string spec = env::getString("TRNCCL_ALGO", "");
  for (const auto& algo : algorithms::algorithmsFor(args.coll)) {
    if (!algoAllowed(spec, coll, algo.name) || !algo.supports(args)) continue;
    logChoice(coll, algo.name, spec);
    TRN_TRACE(kTune, "{} count {} type {}: {}", coll, args.count,
              device::dataTypeName(args.type), algo.name);
    return algo.build(args);
  }
  return invalidArgument("no {} algorithm is available for TRNCCL_ALGO='{}'", coll, spec);
}

}  // namespace trnccl::plan
