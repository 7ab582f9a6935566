#include "report.h"

#include <fmt/format.h>
#include <fmt/printf.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/data.h"
#include "common/report.h"

namespace trnccl::simtool {
namespace {

constexpr int kGroupWidth = 39;  // "  %7s  %6s  %6s  %13s"

std::string cellText(const Cell& c) {
  if (!c.ran) return fmt::sprintf("  %7s  %6s  %6s  %13s", "N/A", "N/A", "N/A", "declines");
  return fmt::sprintf("  %7s  %6s  %6s  %13s", perf::formatFloat(c.timeUs, 7),
                      perf::formatFloat(c.algBw, 6), perf::formatFloat(c.busBw, 6),
                      withChannels(c.algorithm, c.channels));
}

std::string centered(const std::string& s, int width) {
  const int pad = std::max(0, width - static_cast<int>(s.size()));
  return std::string(static_cast<size_t>(pad - pad / 2), ' ') + s +
         std::string(static_cast<size_t>(pad / 2), ' ');
}

}  // namespace

double tunerExcess(const Sweep& sw, const Row& row) {
  if (row.bestGroup < 0 || sw.groups.size() < 2) return -1;
  for (size_t g = 0; g < sw.groups.size(); ++g) {
    const Cell& c = row.cells[g];
    if (c.ran && withChannels(c.algorithm, c.channels) == row.tunerPick) {
      const double best = row.cells[static_cast<size_t>(row.bestGroup)].timeUs;
      return best > 0 ? c.timeUs / best - 1 : 0;  // a call of 0 bytes takes no time
    }
  }
  return -1;
}

std::string table(const Options& o, const Sweep& sw) {
  const bool all = sw.groups.size() > 1;
  std::string s = fmt::format("# trnccl-sim: {}\n", sw.title);
  s += "# Simulated times on the modelled fabric (GB/s = 1e9 B/s); each group's last column is\n"
       "# the algorithm that ran and its channel count (x2: two channels).\n#\n";
  s += fmt::sprintf("# %10s  %12s  %8s  %6s  %6s", "", "", "", "", "");
  for (const std::string& g : sw.groups) s += centered(g, kGroupWidth);
  if (all) s += "     tuner";
  s += "\n";
  s += fmt::sprintf("# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  for (size_t g = 0; g < sw.groups.size(); ++g) {
    s += fmt::sprintf("  %7s  %6s  %6s  %13s", "time", "algbw", "busbw", "algorithm");
  }
  if (all) s += fmt::sprintf("  %13s  %6s", "pick", "excess");
  s += "\n";
  s += fmt::sprintf("# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
  for (size_t g = 0; g < sw.groups.size(); ++g) {
    s += fmt::sprintf("  %7s  %6s  %6s  %13s", "(us)", "(GB/s)", "(GB/s)", "");
  }
  s += "\n";
  const perf::TypeInfo& type = perf::typeInfo(o.type);
  const bool rooted = o.coll == "broadcast" || o.coll == "reduce";
  const bool reduces = o.coll == "allreduce" || o.coll == "reducescatter" || o.coll == "reduce";
  perf::BusBwAverage avg;
  for (const Row& row : sw.rows) {
    s += perf::rowPrefix(row.bytes, row.count, type.name, reduces ? perf::opName(o.op) : "none",
                         rooted ? o.root : -1);
    for (const Cell& c : row.cells) s += cellText(c);
    if (all) {
      const double excess = tunerExcess(sw, row);
      s += fmt::sprintf("  %13s  %6s", row.tunerPick,
                        excess < 0 ? "N/A" : fmt::format("{:.0f}%", 100 * excess));
    }
    s += "\n";
    if (row.cells.front().ran) avg.add(row.cells.front().busBw);
  }
  s += fmt::sprintf("# %-20s : %g (%s)\n", "Avg bus bandwidth", avg.mean(), sw.groups.front());
  s += fmt::format("# Simulated {} steps of {} ranks in {:.2f} s\n#\n", sw.steps, sw.nranks,
                   sw.wallSeconds);
  return s;
}

Status writeJson(const Options& o, const Sweep& sw, const std::string& path) {
  nlohmann::json j;
  j["title"] = sw.title;
  j["topology"] = o.topology;
  j["ranks"] = sw.nranks;
  j["collective"] = o.coll;
  j["type"] = std::string(perf::typeInfo(o.type).name);
  j["op"] = std::string(perf::opName(o.op));
  j["unit"] = "time us, bandwidth GB/s (1e9 B/s)";
  j["groups"] = sw.groups;
  for (const Row& row : sw.rows) {
    nlohmann::json r;
    r["size"] = row.bytes;
    r["count"] = row.count;
    for (size_t g = 0; g < row.cells.size(); ++g) {
      const Cell& c = row.cells[g];
      nlohmann::json cell{{"group", sw.groups[g]}, {"ran", c.ran}};
      if (c.ran) {
        cell.update({{"algorithm", c.algorithm},
                     {"channels", c.channels},
                     {"time_us", c.timeUs},
                     {"algbw", c.algBw},
                     {"busbw", c.busBw},
                     {"estimate_us", c.estimateUs}});
      }
      r["results"].push_back(cell);
    }
    if (!row.tunerPick.empty()) r["tuner"] = row.tunerPick;
    if (const double e = tunerExcess(sw, row); e >= 0) r["tuner_excess"] = e;
    j["rows"].push_back(r);
  }
  std::ofstream out(path);
  out << j.dump(1) << "\n";
  if (!out) return invalidArgument("-J {}: cannot write", path);
  return Status::ok();
}

}  // namespace trnccl::simtool
