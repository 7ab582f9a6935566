// gloo_bench: Gloo's all-reduce (ring and halving-doubling), all-gather and reduce-scatter on
// float sum over its TCP transport on loopback, measured as the trnccl *_perf binaries measure.
//   mpirun -np 4 -x TRNCCL_GLOO_STORE=$(mktemp -d) gloo_bench all_reduce_ring -b 8 -e 64M -f 4
// mpirun only starts the processes: ranks come from OMPI_COMM_WORLD_RANK/SIZE (or RANK/SIZE),
// and the ranks meet through a Gloo FileStore in the fresh, shared directory TRNCCL_GLOO_STORE.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "peers/peer_driver.h"

namespace trnccl::perf::peers {
namespace {

int envInt(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  if (!v) v = std::getenv(fallback);
  if (!v) throw std::runtime_error(std::string("set ") + name + " (mpirun does) or " + fallback);
  return std::atoi(v);
}

class GlooGroup : public PeerGroup {
 public:
  GlooGroup() {
    const char* dir = std::getenv("TRNCCL_GLOO_STORE");
    if (!dir)
      throw std::runtime_error("set TRNCCL_GLOO_STORE to a fresh directory shared by ranks");
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";  // loopback only
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(dir);
    auto context = std::make_shared<gloo::rendezvous::Context>(
        envInt("OMPI_COMM_WORLD_RANK", "RANK"), envInt("OMPI_COMM_WORLD_SIZE", "SIZE"));
    context->connectFullMesh(store, device);
    context_ = std::move(context);
  }

  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  void barrier() override {
    gloo::BarrierOptions opts(context_);
    gloo::barrier(opts);
  }
  double sum(double value) override {
    double total = 0;
    gloo::AllreduceOptions opts(context_);
    opts.setInput(&value, 1);
    opts.setOutput(&total, 1);
    opts.setReduceFunction(sumOf<double>);
    gloo::allreduce(opts);
    return total;
  }

  const std::shared_ptr<gloo::Context>& context() const { return context_; }

  template <typename T>
  static void sumOf(void* c, const void* a, const void* b, size_t n) {
    gloo::sum<T>(c, a, b, n);
  }

 private:
  std::shared_ptr<gloo::Context> context_;
};

const std::shared_ptr<gloo::Context>& contextOf(PeerGroup& g) {
  return static_cast<GlooGroup&>(g).context();
}

// gloo::allreduce with its ring algorithm (reduce-scatter then all-gather in 1 MiB segments).
PeerCall allReduceRing(PeerGroup& g, float* send, float* recv, const Counts& c) {
  auto opts = std::make_shared<gloo::AllreduceOptions>(contextOf(g));
  opts->setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  opts->setInput(send, c.param);
  opts->setOutput(recv, c.param);
  opts->setReduceFunction(GlooGroup::sumOf<float>);
  return [opts] { gloo::allreduce(*opts); };
}

// The same in place, as torch's ProcessGroupGloo calls it: outputs only, read as the input.
PeerCall allReduceRingInPlace(PeerGroup& g, float*, float* recv, const Counts& c) {
  auto opts = std::make_shared<gloo::AllreduceOptions>(contextOf(g));
  opts->setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  opts->setOutput(recv, c.param);
  opts->setReduceFunction(GlooGroup::sumOf<float>);
  return [opts] { gloo::allreduce(*opts); };
}

// The classic halving-doubling algorithm object: in place, set up once per size.
PeerCall allReduceHalvingDoubling(PeerGroup& g, float*, float* recv, const Counts& c) {
  auto algo = std::make_shared<gloo::AllreduceHalvingDoubling<float>>(
      contextOf(g), std::vector<float*>{recv}, int(c.param));
  return [algo] { algo->run(); };
}

// Gloo divides by the element count: no call at 0 elements.
PeerCall allGather(PeerGroup& g, float* send, float* recv, const Counts& c) {
  if (c.param == 0) return nullptr;
  auto opts = std::make_shared<gloo::AllgatherOptions>(contextOf(g));
  opts->setInput(send, c.param);
  opts->setOutput(recv, c.recv);
  return [opts] { gloo::allgather(*opts); };
}

// Halving-doubling reduce-scatter: in one buffer, its result lands at the buffer's start.
PeerCall reduceScatterHalvingDoubling(PeerGroup& g, float* send, float*, const Counts& c) {
  if (c.param == 0) return nullptr;
  auto algo = std::make_shared<gloo::ReduceScatterHalvingDoubling<float>>(
      contextOf(g), std::vector<float*>{send}, int(c.send),
      std::vector<int>(size_t(g.size()), int(c.param)));
  return [algo] { algo->run(); };
}

const PeerCollective kCollectives[] = {
    {"all_reduce_ring", "gloo::allreduce(RING)", &kAllReduceTest, Placement::kOutOfPlace,
     allReduceRing},
    {"all_reduce_ring_in_place", "gloo::allreduce(RING), in place", &kAllReduceTest,
     Placement::kSameBuffer, allReduceRingInPlace},
    {"all_reduce_hd", "gloo::AllreduceHalvingDoubling", &kAllReduceTest, Placement::kSameBuffer,
     allReduceHalvingDoubling},
    {"all_gather", "gloo::allgather", &kAllGatherTest, Placement::kOutOfPlace, allGather},
    {"reduce_scatter_hd", "gloo::ReduceScatterHalvingDoubling", &kReduceScatterTest,
     Placement::kSameBuffer, reduceScatterHalvingDoubling},
};

}  // namespace
}  // namespace trnccl::perf::peers

int main(int argc, char** argv) {
  try {
    trnccl::perf::peers::GlooGroup group;
    return trnccl::perf::peers::runPeerBench(argc, argv, "Gloo (tcp, loopback)", group,
                                             trnccl::perf::peers::kCollectives);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_bench: %s\n", e.what());
    return 1;
  }
}
