// trnccl-sim: the library's own schedules, executed on a discrete-event model of a Trainium
// fabric (src/sim), printed as nccl-tests' table (docs/SIMULATOR.md).
//   trnccl-sim TOPOLOGY [--instances K] [--ranks N] --coll C [-b -e -f -i -d -o -r]
//              [--algo NAME|all] [--channels K] [-J FILE] [--plot FILE.png] [--trace FILE]
#include <fmt/format.h>

#include <cstdio>

#include "options.h"
#include "report.h"
#include "sweep.h"

int main(int argc, char** argv) {
  using namespace trnccl::simtool;
  Parsed parsed = parse(argc, argv);
  if (parsed.exitCode) return *parsed.exitCode;
  const Options& o = parsed.options;
  auto fail = [](const trnccl::Status& s) {
    fmt::print(stderr, "trnccl-sim: {}\n", s.message());
    return 1;
  };
  auto setup = prepare(o);
  if (!setup) return fail(setup.status());
  auto sweep = runSweep(o, *setup);
  if (!sweep) return fail(sweep.status());
  fmt::print("{}", table(o, *sweep));
  std::fflush(stdout);
  if (!o.json.empty()) {
    if (auto s = writeJson(o, *sweep, o.json); !s) return fail(s);
  }
  if (!o.plot.empty()) {
    if (auto s = writePlot(*sweep, o.plot); !s) return fail(s);
  }
  if (!o.trace.empty()) {
    if (auto s = writeTrace(o, *setup); !s) return fail(s);
  }
  if (o.maxExcess >= 0) {
    int over = 0;
    for (const Row& row : sweep->rows) {
      if (const double e = tunerExcess(*sweep, row); e > o.maxExcess) {
        fmt::print(stderr, "trnccl-sim: {} bytes: the tuner's {} is {:.0f}% slower than {}\n",
                   row.bytes, row.tunerPick, 100 * e, sweep->groups[row.bestGroup]);
        ++over;
      }
    }
    if (over > 0) return 3;
  }
  return 0;
}
