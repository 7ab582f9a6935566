#include "refit.h"

#include <fmt/format.h>

#include <cstdio>
#include <regex>

#include "step_cost.h"
#include "transports/shm/zero_copy.h"

namespace trnccl::calibrate {

uint64_t bandBytes(uint64_t measured, int ranks, int cpus) {
  if (cpus <= 0 || ranks <= cpus) return measured;
  return measured * static_cast<uint64_t>(cpus) / static_cast<uint64_t>(ranks);
}

namespace {

// The bands of a description written before kBandMarker, their bytes for its ranks on `cpus`.
bool rescaleBands(std::string& text, int cpus, std::string& error) {
  if (text.find(kBandMarker) != std::string::npos) return true;
  std::smatch chips;
  if (!std::regex_search(text, chips, std::regex(R"(chips_per_instance: (\d+))"))) {
    error = "no chips_per_instance in the description";
    return false;
  }
  const int ranks = std::stoi(chips[1].str());
  const std::regex band(R"(\{bytes: (\d+), gbps)");
  std::string scaled;
  auto last = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), band), end; it != end; ++it) {
    scaled.append(last, (*it)[0].first);
    scaled += fmt::format("{{bytes: {}, gbps", bandBytes(std::stoull((*it)[1].str()), ranks, cpus));
    last = (*it)[0].second;
  }
  scaled.append(last, text.cend());
  text = fmt::format("# Refitted: {} {} ranks on {} CPUs (refit.h, bandBytes).\n", kBandMarker,
                     ranks, cpus) +
         scaled;
  return true;
}

}  // namespace

bool refitDescription(const std::string& text, int cpus, std::string& out, std::string& error) {
  // The step program's medians: "took  8 B 0.54, 1024 B 0.87, ... 131072 B 7.73us;".
  std::smatch took;
  if (!std::regex_search(text, took, std::regex(R"(took((?:\s+\d+ B -?[0-9.]+,?)+)\s*us;)"))) {
    error = "no step times (\"took ... us;\") in the description";
    return false;
  }
  std::vector<StepTime> times;
  const std::string list = took[1].str();
  const std::regex pair(R"((\d+) B (-?[0-9.]+))");
  for (std::sregex_iterator it(list.begin(), list.end(), pair), end; it != end; ++it) {
    StepTime t;
    t.bytes = std::stoul((*it)[1].str());
    t.us = t.lowUs = t.highUs = std::stod((*it)[2].str());
    times.push_back(t);
  }
  StepFit fit;
  if (!fitStepCost(times, transport::shm::kDefaultZcopyBytes, fit)) {
    error = "the step times do not determine a fit (two sizes through the FIFO, one in place)";
    return false;
  }
  const std::regex latency(R"(latency_us: ([0-9.]+))");
  const std::regex message(R"(message_us: [0-9.]+(, in_place_fresh_us: [0-9.]+)?)");
  std::smatch hop;
  if (!std::regex_search(text, hop, latency) || !std::regex_search(text, message)) {
    error = "no message_us or latency_us in the description";
    return false;
  }
  const double hopUs = std::stod(hop[1].str());
  out = fmt::format(
      "# Refitted (trnccl-sim-calibrate --refit): latency {1:.2f} us (the token's hop {2:.2f}), "
      "message {3:.2f} us, fresh {4:.2f} us more\n"
      "# from the step times below: through the FIFO {0:.2f} us + {5:.4f} us/KiB, in place (fresh\n"
      "# data) {6:.2f} us a round. Every other figure as measured.\n",
      fit.fixedUs, linkLatencyUs(fit, hopUs), hopUs, messageUs(fit, hopUs), fit.freshUs,
      fit.usPerKiB, fit.inPlaceUs);
  std::string scaled = text;
  if (!rescaleBands(scaled, cpus, error)) return false;
  std::string body = std::regex_replace(scaled, message,
                                        fmt::format("message_us: {:.2f}, in_place_fresh_us: {:.2f}",
                                                    messageUs(fit, hopUs), fit.freshUs),
                                        std::regex_constants::format_first_only);
  out += std::regex_replace(body, latency,
                            fmt::format("latency_us: {:.2f}", linkLatencyUs(fit, hopUs)),
                            std::regex_constants::format_first_only);
  return true;
}

bool writeFile(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f != nullptr && std::fputs(text.c_str(), f) >= 0 && std::fclose(f) == 0) return true;
  std::fprintf(stderr, "trnccl-sim-calibrate: cannot write %s\n", path.c_str());
  return false;
}

// --refit: the description in `from`, converted (refit.h), written to `to`.
int refitFile(const std::string& from, const std::string& to, int cpus) {
  std::string text, converted, error;
  if (FILE* f = std::fopen(from.c_str(), "r"); f != nullptr) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    std::fclose(f);
  }
  if (!refitDescription(text, cpus, converted, error)) {
    std::fprintf(stderr, "trnccl-sim-calibrate: %s: %s\n", from.c_str(), error.c_str());
    return 1;
  }
  if (!writeFile(to, converted)) return 1;
  std::fputs(converted.substr(0, converted.find("\n# ") + 1).c_str(), stdout);  // its first line
  return 0;
}

}  // namespace trnccl::calibrate
