#include "options.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <thread>

#include "common/data.h"
#include "common/options.h"

namespace trnccl::simtool {
namespace {

// A size option: nccl-tests' spelling ("64", "1K", "32M", "2G").
CLI::Option* sizeOption(CLI::App& app, const std::string& name, size_t& into,
                        const std::string& help) {
  return app.add_option_function<std::string>(
      name,
      [&into, name](const std::string& text) {
        auto v = perf::parseSize(text);
        if (!v) throw CLI::ValidationError(name, "not a size: '" + text + "'");
        into = *v;
      },
      help);
}

}  // namespace

Parsed parse(int argc, char** argv) {
  Parsed out;
  Options& o = out.options;
  CLI::App app{
      "trnccl-sim: the library's own schedules executed on a model of a Trainium fabric.\n"
      "Prints nccl-tests' table (GB/s = 1e9 B/s) of simulated times, #wrong replaced by the "
      "algorithm and its channel count.",
      "trnccl-sim"};
  app.add_option("topology", o.topology, "built-in description (trnccl-topo --list) or YAML path")
      ->required();
  app.add_option("--instances", o.instances,
                 "instances joined over EFA (default: the description's)")
      ->check(CLI::PositiveNumber);
  app.add_option("--ranks", o.ranks, "ranks, on the first chips (default: all of the instances)")
      ->check(CLI::PositiveNumber);
  app.add_option("--coll", o.coll, "collective")
      ->required()
      ->check(CLI::IsMember({"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
                             "alltoall", "sendrecv"}));
  sizeOption(app, "-b,--minbytes", o.minBytes, "smallest size (default 32M)");
  sizeOption(app, "-e,--maxbytes", o.maxBytes, "largest size (default 32M)");
  app.add_option("-f,--stepfactor", o.stepFactor, "multiply the size by this (default 2)")
      ->check(CLI::PositiveNumber);
  sizeOption(app, "-i,--stepbytes", o.stepBytes, "with -f 1: add this to the size");
  app.add_option_function<std::string>(
      "-d,--datatype",
      [&o](const std::string& t) {
        auto type = perf::parseType(t);
        if (!type) throw CLI::ValidationError("-d", "unknown type '" + t + "'");
        o.type = *type;
      },
      "element type, nccl-tests' names (default float)");
  app.add_option_function<std::string>(
      "-o,--op",
      [&o](const std::string& t) {
        auto op = perf::parseOp(t);
        if (!op) throw CLI::ValidationError("-o", "unknown op '" + t + "'");
        o.op = *op;
      },
      "reduction op (default sum)");
  app.add_option("-r,--root", o.root, "root of broadcast and reduce (default 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--algo", o.algo,
                 "an algorithm's name, or 'all' for one column group each (default: the tuner's)");
  app.add_option("--channels", o.channels, "channels of ring algorithms (default: the tuner's)")
      ->check(CLI::PositiveNumber);
  sizeOption(app, "--slice", o.sliceBytes, "pipeline slice (default 256K)");
  sizeOption(app, "--piece", o.pieceBytes,
             "what a forwarding step streams at a time (default 64K)");
  app.add_option_function<std::string>(
      "--eager",
      [&o](const std::string& text) {
        auto v = perf::parseSize(text);
        if (!v) throw CLI::ValidationError("--eager", "not a size: '" + text + "'");
        o.eagerBytes = *v;
      },
      "a send up to this size leaves before its receive (default 4 slices)");
  app.add_option("-J,--json", o.json, "write the results as JSON to this file");
  app.add_option("--plot", o.plot, "draw busbw against size per algorithm into this PNG (gnuplot)");
  app.add_option("--trace", o.trace,
                 "write a Chrome-trace JSON of the largest call (chrome://tracing, Perfetto)");
  app.add_option("--max-excess", o.maxExcess,
                 "with --algo all: exit 3 when the tuner's pick is slower than the fastest "
                 "algorithm by more than this fraction (e.g. 0.1)")
      ->check(CLI::NonNegativeNumber);
  o.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  app.add_option("-j,--jobs", o.jobs, "calls simulated at once (default: one per core)")
      ->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    out.exitCode = app.exit(e);
    return out;
  }
  if (o.maxExcess >= 0 && o.algo != "all") {
    fmt::print(stderr, "trnccl-sim: --max-excess needs --algo all\n");
    out.exitCode = 2;
  }
  if (o.minBytes > o.maxBytes) {
    fmt::print(stderr, "trnccl-sim: -b ({}) is larger than -e ({})\n", o.minBytes, o.maxBytes);
    out.exitCode = 2;
  }
  return out;
}

}  // namespace trnccl::simtool
