// --tune N: the tuner's choice per collective and message size for N ranks on the description,
// with the cost model's estimate (the same planner the communicator uses, src/plan/).
#include <fmt/format.h>

#include "plan/planner.h"
#include "plan/topology_view.h"
#include "sections.h"

namespace trnccl::tools {

Status printTuning(const std::string& nameOrPath, int nranks) {
  auto view = plan::describeTopology(nameOrPath, nranks);
  if (!view) return view.status();
  fmt::print(
      "# tuner choices for {} (float32; estimates on the modelled hardware; xN: N "
      "channels)\n",
      view->summary);
  fmt::print("# {:>12}  {:<26}  {:<26}  {:<26}\n", "bytes", "allreduce", "allgather",
             "reducescatter");
  for (size_t bytes = 8; bytes <= (size_t{1} << 30); bytes *= 8) {
    std::string row = fmt::format("  {:>12}", bytes);
    for (auto coll : {algorithms::Collective::kAllReduce, algorithms::Collective::kAllGather,
                      algorithms::Collective::kReduceScatter}) {
      algorithms::CollArgs a;
      a.coll = coll;
      a.type = device::DataType::kFloat32;
      bool perRank = coll != algorithms::Collective::kAllReduce;
      a.count = std::max<size_t>(1, bytes / 4 / (perRank ? nranks : 1));
      a.nranks = nranks;
      a.sliceBytes = 256 * 1024;  // the shared-memory transport's default pipeline slice
      a.shape = view->shape;
      auto c = plan::choose(a, view->links);
      if (!c) return c.status();
      std::string name = c->algorithm->name;
      if (c->channels > 1) name += fmt::format("x{}", c->channels);  // channels, e.g. ringx2
      row += fmt::format("  {:<26}", fmt::format("{} {:.1f} us", name, c->estimateUs));
    }
    fmt::print("{}\n", row);
  }
  return Status::ok();
}

}  // namespace trnccl::tools
