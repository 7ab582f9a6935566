// The algorithms of the Trainium fabrics forced with TRNCCL_ALGO on the topologies they are made
// for (issue 16): kangaring on whole chips of trn1.32xlarge and trn2.48xlarge, torus3d on 3D-torus
// descriptions, oneshot, twoshot and twotier on the NeuronSwitch UltraServers; each at 16, 32
// and 64 in-process ranks (TRNCCL_EMU_RANKS_PER_NODE standing in for instances where the shape
// needs several), against the independent reference, bitwise identical on all ranks where the
// collective says so, and checking that the forced algorithm is the one planned.
//
// The matrix, each case out of place and in place: at 16 and 32 ranks every type x op x count
// {0, 1, 7}, and the odd large count for every op on float32 and for sum on bfloat16, int64 and
// uint8; at 64 ranks (64 threads on this machine's 2 cores) four types (float32, bfloat16,
// int32, fp8 e4m3) x sum, avg, max x {1, 7}, and the odd large count for float32 sum, bfloat16
// avg and int32 max. The long sweep (TRNCCL_TEST_LONG=1, label long) runs every type x op x
// {0, 1, 7, odd large} at every rank count. "Odd large" is (1<<18)+3 elements for all-reduce and
// about as many in total for all-gather and reduce-scatter; oneshot takes only what fits a
// connection buffer, so its largest is 4096+3.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "support/forced_algorithm.h"

namespace trnccl::testing {
namespace {

class FabricAlgorithms : public ::testing::TestWithParam<AlgoCase> {};

TEST_P(FabricAlgorithms, ForcedAlgorithmMatchesReference) {
  expectForcedMatchesReference(GetParam());
}

// The torus3d test description: 4 instances of 2 x 2 chips, one rank per chip.
const std::string kTorus3dSmall =
    std::string(TRNCCL_SOURCE_DIR) + "/tests/support/topologies/torus3d-2x2x4.yaml";

struct Setup {
  std::string algo;
  std::string topology;
  int nranks;
  int ranksPerInstance;  // TRNCCL_EMU_RANKS_PER_NODE, 0: unset
  std::vector<Coll> colls;
};

// Which cases of the odd large count run outside the long sweep: at 16 and 32 ranks every op on
// float32 and sum on three types of other widths and kinds; at 64 ranks three of those.
bool largeInCi(int nranks, trncclDataType_t type, trncclRedOp_t op) {
  if (nranks > 32) {
    return (type == trncclFloat32 && op == trncclSum) ||
           (type == trncclBfloat16 && op == trncclAvg) || (type == trncclInt32 && op == trncclMax);
  }
  return type == trncclFloat32 || (op == trncclSum && (type == trncclBfloat16 ||
                                                       type == trncclInt64 || type == trncclUint8));
}

void add(std::vector<AlgoCase>& cases, const Setup& s, bool longSweep) {
  const bool full = s.nranks <= 32 || longSweep;
  std::vector<trncclDataType_t> types;
  std::vector<trncclRedOp_t> ops;
  if (full) {
    for (int t = 0; t < trncclNumTypes; ++t) types.push_back(static_cast<trncclDataType_t>(t));
    for (int o = 0; o < trncclNumOps; ++o) ops.push_back(static_cast<trncclRedOp_t>(o));
  } else {
    types = {trncclFloat32, trncclBfloat16, trncclInt32, trncclFloat8e4m3};
    ops = {trncclSum, trncclAvg, trncclMax};
  }
  for (Coll coll : s.colls) {
    // Odd large: several pipeline slices of the whole buffer.
    size_t large = coll == Coll::kAllReduce ? (1u << 18) + 3 : ((1u << 18) / s.nranks) | 1;
    if (s.algo == "oneshot") large = 4096 + 3;
    std::vector<size_t> counts = {1, 7, large};
    if (full) counts.insert(counts.begin(), 0);
    for (auto type : types) {
      for (auto op : ops) {
        if (coll == Coll::kAllGather && op != trncclSum) continue;
        for (size_t count : counts) {
          if (count == large && !longSweep && !largeInCi(s.nranks, type, op)) continue;
          for (bool inPlace : {false, true}) {
            cases.push_back({s.algo, s.ranksPerInstance,
                             Case{coll, s.nranks, type, op, count, inPlace, 0}, s.topology});
          }
        }
      }
    }
  }
}

std::vector<AlgoCase> matrix() {
  const std::vector<Coll> ar = {Coll::kAllReduce};
  const std::vector<Coll> all = {Coll::kAllReduce, Coll::kAllGather, Coll::kReduceScatter};
  std::vector<AlgoCase> cases;
  for (const Setup& s : std::vector<Setup>{
           // 8 chips of trn1 (one ring of chips), all 16 (two), 16 trn2 chips of 4 ranks.
           {"kangaring", "trn1.32xlarge", 16, 0, ar},
           {"kangaring", "trn1.32xlarge", 32, 0, ar},
           {"kangaring", "trn2.48xlarge-lnc2", 64, 0, ar},
           // X, Y and Z of the small description; the UltraServer with 4 instances of one chip
           // (the chip's cores are X) and of two chips.
           {"torus3d", kTorus3dSmall, 16, 0, all},
           {"torus3d", "trn2-ultraserver", 32, 8, all},
           {"torus3d", "trn2-ultraserver", 64, 16, all},
           // Trn3 Gen1: 2, 4 and 8 chips of one server.
           {"oneshot", "trn3-ultraserver-gen1", 16, 0, ar},
           {"oneshot", "trn3-ultraserver-gen1", 32, 0, ar},
           {"oneshot", "trn3-ultraserver-gen1", 64, 0, ar},
           {"twoshot", "trn3-ultraserver-gen1", 16, 0, ar},
           {"twoshot", "trn3-ultraserver-gen1", 32, 0, ar},
           {"twoshot", "trn3-ultraserver-gen1", 64, 0, ar},
           // Trn3 Gen2: servers of half a chip, of one chip and 2 chips, and 2 whole servers.
           {"twotier", "trn3-ultraserver-gen2", 16, 4, ar},
           {"twotier", "trn3-ultraserver-gen2", 32, 16, ar},
           {"twotier", "trn3-ultraserver-gen2", 64, 0, ar},
       }) {
    add(cases, s, std::getenv("TRNCCL_TEST_LONG") != nullptr);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Forced, FabricAlgorithms, ::testing::ValuesIn(matrix()), algoCaseName);

}  // namespace
}  // namespace trnccl::testing
