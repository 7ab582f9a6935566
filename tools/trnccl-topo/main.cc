// trnccl-topo: describe, check and draw a topology description.
//   trnccl-topo [NAME | --file PATH]       summary (instances, chips, cores, links)
//     --neighbors                          neighbour table in neuron-ls order
//     --rings N                            ring channels and subgroups for N ranks
//     --tune N                             the tuner's algorithm per collective and size
//     --draw OUT                           OUT.dot, and OUT.png / OUT.svg with Graphviz
//     --dump                               the description as YAML (loads back equal)
//   trnccl-topo --check FILE               validate a description: exit 0, or 1 and the error
//   trnccl-topo --list                     the names on the search path
//   trnccl-topo --algorithms               the algorithms per collective (the registry)
#include <fmt/format.h>
#include <getopt.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "common/env.h"
#include "sections.h"
#include "topology/loader.h"

namespace {

using namespace trnccl;

struct Options {
  std::string topology;   // a name or a path
  bool fromFile = false;  // --file: a path even without '/' or .yaml
  bool neighbors = false;
  std::optional<int> rings;
  std::optional<int> tune;
  std::optional<std::string> check;
  std::optional<std::string> draw;
  bool dump = false;
  bool list = false;
  bool algorithms = false;
  // The tuner's section (--tune) goes here, with its printer in sections.h.
};

void usage(FILE* out) {
  fmt::print(
      out,
      "usage: trnccl-topo [NAME | --file PATH] [--neighbors] [--rings N] [--tune N] [--draw OUT] "
      "[--dump]\n"
      "       trnccl-topo --check FILE\n"
      "       trnccl-topo --list\n"
      "       trnccl-topo --algorithms\n"
      "NAME is a built-in (trnccl-topo --list) or a file; default $TRNCCL_TOPOLOGY or "
      "trn1.32xlarge.\nTRNCCL_TOPOLOGY_PATH adds directories of descriptions; "
      "TRNCCL_EMU_RANKS_PER_NODE sets ranks per instance for --rings.\n");
}

std::optional<Options> parse(int argc, char** argv) {
  static const option kLong[] = {{"file", required_argument, nullptr, 'f'},
                                 {"neighbors", no_argument, nullptr, 'n'},
                                 {"rings", required_argument, nullptr, 'r'},
                                 {"check", required_argument, nullptr, 'c'},
                                 {"draw", required_argument, nullptr, 'd'},
                                 {"dump", no_argument, nullptr, 'y'},
                                 {"list", no_argument, nullptr, 'l'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {"tune", required_argument, nullptr, 't'},
                                 {"algorithms", no_argument, nullptr, 'a'},
                                 {nullptr, 0, nullptr, 0}};
  Options o;
  o.topology = env::getString("TRNCCL_TOPOLOGY", "trn1.32xlarge");
  for (int c; (c = getopt_long(argc, argv, "f:nr:c:d:ylht:a", kLong, nullptr)) != -1;) {
    switch (c) {
      case 'f':
        o.topology = optarg;
        o.fromFile = true;
        break;
      case 'n':
        o.neighbors = true;
        break;
      case 'r': {
        char* end = nullptr;
        long n = std::strtol(optarg, &end, 10);
        if (*end != '\0' || n < 1) {
          fmt::print(stderr, "trnccl-topo: --rings needs a positive rank count, not '{}'\n",
                     optarg);
          return std::nullopt;
        }
        o.rings = static_cast<int>(n);
        break;
      }
      case 't': {
        long n = std::strtol(optarg, nullptr, 10);
        if (n < 1) {
          fmt::print(stderr, "trnccl-topo: --tune needs a positive rank count, not '{}'\n", optarg);
          return std::nullopt;
        }
        o.tune = static_cast<int>(n);
        break;
      }
      case 'c':
        o.check = optarg;
        break;
      case 'd':
        o.draw = optarg;
        break;
      case 'y':
        o.dump = true;
        break;
      case 'l':
        o.list = true;
        break;
      case 'a':
        o.algorithms = true;
        break;
      case 'h':
        usage(stdout);
        std::exit(0);
      default:
        usage(stderr);
        return std::nullopt;
    }
  }
  if (optind + 1 < argc) {
    usage(stderr);
    return std::nullopt;
  }
  if (optind < argc) o.topology = argv[optind];
  return o;
}

int fail(const Status& s) {
  fmt::print(stderr, "trnccl-topo: {}\n", s.message());
  return 1;
}

int run(const Options& o) {
  if (o.list) {
    for (const std::string& name : topology::listTopologies()) fmt::print("{}\n", name);
    return 0;
  }
  if (o.algorithms) {
    tools::printAlgorithms();
    return 0;
  }
  if (o.check) {
    auto t = topology::loadTopologyFile(*o.check);
    if (!t) return fail(t.status());
    fmt::print("{}: ok ({}, {} chips, {} ranks)\n", *o.check, t->name, t->totalChips(),
               t->totalRanks());
    return 0;
  }
  auto t = o.fromFile ? topology::loadTopologyFile(o.topology) : topology::loadTopology(o.topology);
  if (!t) return fail(t.status());
  if (o.dump) {
    fmt::print("{}", topology::dumpYaml(*t));
    return 0;
  }
  bool sectionChosen = o.neighbors || o.rings || o.draw || o.tune;
  if (!sectionChosen) tools::printSummary(*t);
  if (o.neighbors) tools::printNeighbors(*t);
  if (o.rings) {
    if (Status s = tools::printRings(*t, *o.rings); !s) return fail(s);
  }
  if (o.tune) {
    if (Status s = tools::printTuning(o.topology, *o.tune); !s) return fail(s);
  }
  if (o.draw) {
    if (Status s = tools::drawTopology(*t, *o.draw); !s) return fail(s);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto options = parse(argc, argv);
  if (!options) return 2;
  return run(*options);
}
