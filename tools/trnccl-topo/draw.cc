// --draw: Graphviz of the chips, their links and the two ring channels. Positions are pinned
// (neato with pos="x,y!") so a torus looks like neuron-ls draws it: row-major, instances side
// by side.
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sections.h"
#include "topology/rings.h"

extern char** environ;

namespace trnccl::tools {

using namespace topology;

namespace {

constexpr const char* kRingColors[] = {"red", "blue"};

// A chip's pinned position in inches: its torus cell, or a square grid when there is none.
std::pair<double, double> position(const Topology& t, const Chip& chip) {
  int cols =
      t.isTorus() ? t.fabric.cols : static_cast<int>(std::ceil(std::sqrt(t.chipsPerInstance)));
  int row = chip.local / cols, col = chip.local % cols;
  double instanceWidth = 1.5 * cols + 1.0;
  return {chip.instance * instanceWidth + 1.5 * col, -1.5 * row};
}

// Positions are written in points and rendered with neato -n2 and straight edges: Debian 12's
// neato 2.42 crashes (double free) routing curved splines around the pinned chips.
constexpr double kPointsPerInch = 72.0;

void writeChips(std::ostream& out, const Topology& t) {
  for (const Chip& chip : t.chips) {
    auto [x, y] = position(t, chip);
    out << fmt::format("  c{} [label=\"{}\\ni{} d{}\", pos=\"{},{}!\"];\n", chip.id, chip.id,
                       chip.instance, chip.local, x * kPointsPerInch, y * kPointsPerInch);
  }
  if (t.fabric.kind == FabricKind::kSwitch) {
    double width = t.instances * (1.5 * std::ceil(std::sqrt(t.chipsPerInstance)) + 1.0);
    // fixedsize=false: the chips' fixed circle size is too small for this label.
    out << fmt::format(
        "  switch [shape=box, fixedsize=false, label=\"NeuronSwitch\", "
        "pos=\"{},{}!\"];\n",
        width / 2 * kPointsPerInch, 1.5 * kPointsPerInch);
    for (const Chip& chip : t.chips)
      out << fmt::format("  switch -- c{} [color=gray70];\n", chip.id);
  }
}

void writeLinks(std::ostream& out, const Topology& t) {
  for (const Link& l : t.links) {
    out << fmt::format("  c{} -- c{} [color={}{}];\n", l.a, l.b, l.zLink ? "darkgreen" : "gray60",
                       l.zLink ? ", style=dashed" : "");
  }
}

// The ring channels of a full instance, drawn in every instance.
void writeRings(std::ostream& out, const Topology& t) {
  auto rings = instanceChipRings(t, t.chipsPerInstance);
  for (size_t k = 0; k < rings.size() && k < 2; ++k) {
    const auto& ring = rings[k];
    if (ring.size() < 2) continue;
    for (int inst = 0; inst < t.instances; ++inst) {
      int base = inst * t.chipsPerInstance;
      for (size_t i = 0; i < ring.size(); ++i) {
        out << fmt::format("  c{} -- c{} [color={}, penwidth=2, dir=forward];\n", base + ring[i],
                           base + ring[(i + 1) % ring.size()], kRingColors[k]);
      }
    }
  }
}

bool onPath(const std::string& program) {
  std::stringstream dirs(std::getenv("PATH") ? std::getenv("PATH") : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

Status render(const std::string& dotFile, const std::string& output, const char* format) {
  std::string typeArg = std::string("-T") + format;
  std::vector<std::string> args{"dot", "-Kneato", "-n2", typeArg, dotFile, "-o", output};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (int err = posix_spawnp(&pid, "dot", nullptr, nullptr, argv.data(), environ); err != 0) {
    return systemError("cannot run dot: {}", std::strerror(err));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return systemError("dot failed rendering {}", output);
  }
  return Status::ok();
}

}  // namespace

Status drawTopology(const Topology& t, const std::string& outArg) {
  std::string base = outArg;
  for (const char* ext : {".dot", ".png", ".svg"}) {
    if (std::filesystem::path(base).extension() == ext) base = base.substr(0, base.size() - 4);
  }
  std::string dotFile = base + ".dot";
  std::ofstream out(dotFile);
  if (!out) return systemError("cannot write {}", dotFile);
  out << fmt::format("// {} — gray: links, dashed green: Z links, red/blue: ring channels\n",
                     t.name);
  out << "graph topology {\n  graph [splines=line, overlap=true, outputorder=edgesfirst];\n";
  out << fmt::format("  label=\"{}: {}\";\n", t.name, t.description);
  out << "  node [shape=circle, fixedsize=true, width=0.6, fontsize=9];\n";
  writeChips(out, t);
  writeLinks(out, t);
  writeRings(out, t);
  out << "}\n";
  out.close();
  fmt::print("wrote {}\n", dotFile);
  if (!onPath("dot")) {
    fmt::print("Graphviz dot not found: install graphviz to render {}.png and {}.svg\n", base,
               base);
    return Status::ok();
  }
  for (const char* format : {"png", "svg"}) {
    std::string output = base + "." + format;
    TRN_TRY(render(dotFile, output, format));
    fmt::print("wrote {}\n", output);
  }
  return Status::ok();
}

}  // namespace trnccl::tools
