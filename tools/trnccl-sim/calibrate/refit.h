// trnccl-sim-calibrate --refit: a description an earlier trnccl-sim-calibrate wrote, converted to
// the current rules from what it recorded, without measuring again (docs/SIMULATOR.md, "This
// machine", fifteenth session): the step program's medians (its comment's "took ... us;") are
// fitted again (step_cost.h: the FIFO's fixed cost, the in-place rounds' fresh cost) and the
// token's hand-off is its link's latency_us as written. Rewrites the device's message_us and
// in_place_fresh_us and the link's latency_us, and, in a description written before the
// sixteenth session (no kBandMarker), the bytes of its bands (bandBytes, with the CPUs the
// calibration ran on); every other line (the rates, call_us) is kept as it was.
#pragma once

#include <cstdint>
#include <string>

namespace trnccl::calibrate {

// What a description's bands say of their bytes since the sixteenth session (refit looks for it).
inline constexpr const char* kBandMarker = "band bytes for";

// The working set of a call that a band measured at `measured` bytes per process stands for,
// with `ranks` processes (the call's ranks) on `cpus` CPUs. With more ranks than CPUs the
// calibration's processes time-share the cores in slices of milliseconds, each reusing its own
// buffers within its slice: the caches hold cpus x measured of them at once. A ring's ranks hand
// over every few microseconds, so all their buffers cycle through the caches between two uses of
// a line: a call of `ranks` ranks whose ranks touch W bytes each matches the measurement at
// W x ranks / cpus, i.e. the band measured at `measured` stands for measured x cpus / ranks.
// (docs/SIMULATOR.md, "Sixteenth session": 4 ranks at 4 MiB ran at the rates of 32 MiB, not of
// the 8 MiB band it was given.) With ranks <= cpus, as measured.
uint64_t bandBytes(uint64_t measured, int ranks, int cpus);

// `text`: the old description; `out`: the converted one; `cpus`: the CPUs the old calibration
// ran on (for a description without kBandMarker). False, with `error`, when `text` does not hold
// the step program's times, a message_us, a latency_us or its chips_per_instance.
bool refitDescription(const std::string& text, int cpus, std::string& out, std::string& error);

// Writes `text` to `path`; false, with a message on stderr, when it cannot.
bool writeFile(const std::string& path, const std::string& text);

// --refit: the description in `from`, converted, written to `to` (its first line printed); the
// exit status.
int refitFile(const std::string& from, const std::string& to, int cpus);

}  // namespace trnccl::calibrate
