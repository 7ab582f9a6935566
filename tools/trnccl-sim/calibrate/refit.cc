#include "refit.h"

#include <fmt/format.h>

#include <cstdio>
#include <regex>

#include "step_cost.h"
#include "transports/shm/zero_copy.h"

namespace trnccl::calibrate {

bool refitDescription(const std::string& text, std::string& out, std::string& error) {
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
  std::string body = std::regex_replace(text, message,
                                        fmt::format("message_us: {:.2f}, in_place_fresh_us: {:.2f}",
                                                    messageUs(fit, hopUs), fit.freshUs),
                                        std::regex_constants::format_first_only);
  out += std::regex_replace(body, latency,
                            fmt::format("latency_us: {:.2f}", linkLatencyUs(fit, hopUs)),
                            std::regex_constants::format_first_only);
  return true;
}

}  // namespace trnccl::calibrate
