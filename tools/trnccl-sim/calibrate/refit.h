// trnccl-sim-calibrate --refit: a description an earlier trnccl-sim-calibrate wrote, converted to
// the current rules from what it recorded, without measuring again (docs/SIMULATOR.md, "This
// machine", fifteenth session): the step program's medians (its comment's "took ... us;") are
// fitted again (step_cost.h: the FIFO's fixed cost, the in-place rounds' fresh cost) and the
// token's hand-off is its link's latency_us as written. Rewrites the device's message_us and
// in_place_fresh_us and the link's latency_us; every other line (the rates, the bands, call_us)
// is kept as it was.
#pragma once

#include <string>

namespace trnccl::calibrate {

// `text`: the old description; `out`: the converted one. False, with `error`, when `text` does
// not hold the step program's times, a message_us or a latency_us.
bool refitDescription(const std::string& text, std::string& out, std::string& error);

}  // namespace trnccl::calibrate
