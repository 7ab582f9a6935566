// busbw against size, one line per column group, drawn by gnuplot (gnuplot-nox, a dependency):
// the data travels inline ('-'), so nothing is left behind but the PNG.
#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>

#include "report.h"

namespace trnccl::simtool {

Status writePlot(const Sweep& sw, const std::string& path) {
  std::string script = fmt::format(
      "set terminal pngcairo size 900,560 font ',9'\n"
      "set output '{}'\n"
      "set title \"{}\" noenhanced\n"
      "set logscale x 2\nset format x '%.0b%BB'\nset grid\nset key top left noenhanced\n"
      "set xlabel 'size (bytes)'\nset ylabel 'simulated busbw (GB/s)'\n"
      "plot ",
      path, sw.title);
  for (size_t g = 0; g < sw.groups.size(); ++g) {
    script +=
        fmt::format("{}'-' using 1:2 with linespoints title '{}'", g ? ", " : "", sw.groups[g]);
  }
  script += "\n";
  for (size_t g = 0; g < sw.groups.size(); ++g) {
    for (const Row& row : sw.rows) {
      if (row.cells[g].ran) script += fmt::format("{} {}\n", row.bytes, row.cells[g].busBw);
    }
    script += "e\n";
  }
  std::FILE* p = popen("gnuplot", "w");
  if (p == nullptr) return invalidArgument("--plot: cannot run gnuplot");
  std::fwrite(script.data(), 1, script.size(), p);
  const int status = pclose(p);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return invalidArgument("--plot {}: gnuplot failed (is gnuplot-nox installed?)", path);
  }
  return Status::ok();
}

}  // namespace trnccl::simtool
