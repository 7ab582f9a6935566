// The cost model's estimates worked out by hand from what the schedules and the simulator do
// (docs/SIMULATOR.md, "The tuner checked against the simulator", eighth session). Each case
// was off before its fix; the simulated time trnccl-sim gives is in the comment.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "algorithms/cost.h"
#include "algorithms/registry.h"
#include "plan/topology_view.h"
#include "unit/plan/estimate_util.h"

namespace trnccl::plan {
namespace {

using algorithms::CollArgs;
using algorithms::Collective;

using test::call;
using test::estimateOf;

// 2 x trn1.32xlarge, mesh all-gather of 256 KiB (4 KiB a rank): a rank's 32 messages to the
// other instance leave through its rail's NIC with those of the rail's 3 other ranks, each a
// message (0.2 us) and its bytes (4,096 B at 12.5 GB/s), then 15 us of network; the local ones
// overlap. 15 + 128 x (0.2 + 0.32768) = 82.543 us, and the copy of the rank's own block
// (4,096 B at half of 410 GB/s). trnccl-sim: 91.1 us (the NICs' receiving side bunches at the
// end). Before: 188 us, every message charged to the rank's EFA share and the torus's hops.
TEST(Estimates, MeshAcrossInstancesChargesTheRailsNic) {
  auto view = describeTopology("trn1.32xlarge", 64);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kAllGather, 1024);
  EXPECT_NEAR(estimateOf("mesh", a, view->links), 82.543 + 4096 / 205e3, 1e-3);
}

// 2 ranks on one trn1 chip, ring all-gather of 16 MiB: 32 slices of 256 KiB, each sent (0.2
// us and 256 KiB through the DMA queue at 410 GB/s) and then the peer's in 0.5 us later, then
// the copy of the rank's 8 MiB block at 205 GB/s. trnccl-sim: 83.78 us. Before: 27.5 us.
TEST(Estimates, TwoRanksRingSliceBySlice) {
  auto view = describeTopology("trn1.32xlarge", 2);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kAllGather, 2 << 20);
  const double slice = 0.2 + 262144 / 410e3 + 0.5;
  EXPECT_NEAR(estimateOf("ring", a, view->links), 32 * slice + 8388608 / 205e3, 1e-2);
}

// 4 ranks on 2 trn1 chips, ring reduce-scatter of 256 KiB: 3 steps of one 64 KiB slice; each
// waits for its predecessor's message (0.2 us), the step's average latency (a NeuronLink's
// 1.5 us and a core-to-core 0.5 us), the piece's transfer at 96 GB/s and then its reduction
// (three passes of HBM at 410 GB/s) before it is forwarded. trnccl-sim: 7.06 us. Before: 5.6
// us (the slower of transfer and reduction, not both), and mesh, 20 % faster, was not picked.
TEST(Estimates, RingReducingStepForwardsAfterTransferAndReduction) {
  auto view = describeTopology("trn1.32xlarge", 4);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kReduceScatter, 16384);
  const double step = 0.2 + 1.0 + 65536 / 96e3 + 3 * 65536 / 410e3;
  EXPECT_NEAR(estimateOf("ring", a, view->links), 3 * step, 1e-3);
}

// 8 ranks on one Trn2 chip, Bruck all-gather of 16 MiB (2 MiB blocks, each rank's DMA queue at
// 362.5 GB/s; a message 0.2 us, the queue 0.5 us): step 1 one block, then the copy of the
// rank's own block (2 MiB at 181.25 GB/s); step 2: rank 7's range (blocks 7, 0) wraps, so it
// sends block 0 after its first group, which receives 2 blocks: it is over at 0.9 us + 3
// blocks. Step 4: rank 7 receives 4 blocks from rank 3, and 2 MiB does not fit the connection's
// buffer (four 256 KiB slices), so they leave when rank 7 begins the step; then it sends its
// wrapped 3 blocks to rank 3. trnccl-sim: 78.21 us. Before s8tune: 42.9 us; at s8tune (each
// level's worst rank added, not one rank's path): 77.71.
TEST(Estimates, BruckWrappedRangesCostTheirSecondMessage) {
  auto view = describeTopology("trn2.48xlarge", 8);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kAllGather, 524288);
  const double block = 2097152 / 362.5e3, message = 0.2 + 0.5, copy = 2097152 / 181.25e3;
  const double step2 = message + 2 * block + 0.2 + block;
  const double step4 = message + 4 * block + message + 3 * block;
  EXPECT_NEAR(estimateOf("bruck", a, view->links), message + block + copy + step2 + step4, 1e-2);
}

// 4 ranks on 2 trn1 chips, Bruck reduce-scatter of 512 B (128 B blocks): at distance 2 every
// pair crosses the NeuronLink (1.5 us); rank 1's range (blocks 3, 0) wraps, so rank 3 gets
// block 0 only after rank 1's first group took its receive from rank 3: two messages and
// latencies one after the other. At distance 1 rank 0's partner, rank 3, is on the other chip:
// a third. 3 x (0.2 + 1.5) us plus about 0.01 us of bytes. trnccl-sim: 5.11 us. Before: 3.11
// us (each level the mix of its pairs' links, the wrap a share of a latency).
TEST(Estimates, BruckFollowsEachPairsLink) {
  auto view = describeTopology("trn1.32xlarge", 4);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kReduceScatter, 32);
  EXPECT_NEAR(estimateOf("bruck", a, view->links), 3 * (0.2 + 1.5), 0.02);
}

// 4 ranks on 2 trn1 chips, Bruck all-gather of 256 KiB (64 KiB blocks; b = a block over the
// NeuronLink at 96 GB/s, 1.5 us): first the copy of the rank's own block (at 205 GB/s). At
// distance 1 ranks 0 and 2 cross the link (0.2 + b, landing 1.5 us later); ranks 1 and 3 wait
// for that. At distance 2 both ranks of a chip cross the one link, which serves them one after
// another, each whole: rank 0 (ready at 0.2 + b) sends 2 blocks by 0.4 + 3b, rank 1 (ready
// 1.5 us later) finds the link free and its 2 blocks land on rank 3 at 1.9 + 3b + 1.5; rank
// 3's range (blocks 3, 0) wraps, so block 0 leaves for rank 1 after that group (a message, b,
// 1.5 us): 5.1 + 4b after the copy. trnccl-sim: 8.15 us. Before: 9.52 (every rank charged the
// link's full share, 2 blocks at half of it).
TEST(Estimates, BruckLinkServesTheChipsRanksInTurn) {
  auto view = describeTopology("trn1.32xlarge", 4);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kAllGather, 16384);
  const double b = 65536 / 96e3, copy = 65536 / 205e3;
  EXPECT_NEAR(estimateOf("bruck", a, view->links), copy + 5.1 + 4 * b, 1e-3);
}

// 16 ranks on 2 Trn2 chips, rdh all-reduce of 8 MiB. Halving at distance 8: the 8 ranks of a
// chip send 4 MiB each over the one NeuronLink (256 GB/s), which serves them one after another
// (16.384 us each, after a 0.2 us message); each reduces its half (3 x 4 MiB of HBM at 362.5
// GB/s: 34.71 us) as it streams in, so the last rank has it at 0.2 + 7 x 16.384 + 34.71 + 1.5
// us. The three on-chip levels (2, 1, 0.5 MiB through the DMA queue at 362.5 GB/s, reduced at
// twice that time) pair the chip's ranks, so all wait for the last; the doubling's on-chip
// levels, then 8 x 4 MiB over the link again. trnccl-sim: 327.6 us. Before: 310.2 (every
// off-chip level charged at the full share, the reduction as if it had the share's time).
TEST(Estimates, RdhLinkServesTheChipsRanksInTurn) {
  auto view = describeTopology("trn2.48xlarge", 16);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kAllReduce, 2 << 20);
  const double each = 4194304 / 256e3, reduce = 3 * 4194304 / 362.5e3;
  const double onChip = (2097152 + 1048576 + 524288) / 362.5e3;
  const double halving = 0.2 + 7 * each + reduce + 1.5 + 3 * 0.7 + 3 * onChip;
  const double doubling = 3 * 0.7 + onChip + 0.2 + 8 * each + 1.5;
  EXPECT_NEAR(estimateOf("rdh", a, view->links), halving + doubling, 1e-2);
}

// 256 ranks of the Trn2 UltraServer (4 instances joined by Z links): a direct round's 255
// messages all leave through the rank's DMA queue, so the last lands no earlier than 255
// messages in. Before, the round's facts were those of one instance's 64 ranks.
TEST(Estimates, DirectRoundOverZLinksCoversEveryRank) {
  auto view = describeTopology("trn2-ultraserver", 256);
  ASSERT_TRUE(view) << view.status().message();
  ASSERT_FALSE(view->links.multiInstance);
  EXPECT_GE(view->links.directReachUs, 255 * view->links.messageUs);
}

// twoshot on one server of trn3-ultraserver-gen2 (16 ranks, 2 chips): the merged chip and
// server dimension is the chips' switch ports (2 us, 2,560 GB/s over 8 ranks), not the unused
// higher tier's (3 us, 320 GB/s). trnccl-sim: 9.6 us at 256 KiB; the estimate was 12.5.
TEST(Estimates, OneServerDimensionBringsNoLinks) {
  auto view = describeTopology("trn3-ultraserver-gen2", 16);
  ASSERT_TRUE(view) << view.status().message();
  const algorithms::RankDims merged = view->shape->switchDims.merged(1);
  ASSERT_EQ(merged.dims.size(), 2u);
  EXPECT_EQ(merged.dims[1].size, 2);
  EXPECT_DOUBLE_EQ(merged.dims[1].latencyUs, 2);
  EXPECT_DOUBLE_EQ(merged.dims[1].bandwidth, 2560.0 / 8);
}

// 2 x trn1.32xlarge, flat ring all-reduce of 256 KiB: the ring crosses the network twice in
// its 64 steps. trnccl-sim: 210.9 us; the estimate, every step at the network's latency and a
// rank's EFA share, was 2,055 us. Within 10 % now.
TEST(Estimates, RingAcrossInstancesCrossesTheNetworkOncePerInstance) {
  auto view = describeTopology("trn1.32xlarge", 64);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kAllReduce, 65536);
  EXPECT_NEAR(estimateOf("ring", a, view->links), 210.9, 21.1);
}

// 64 ranks of trn2.48xlarge (8 chips of 8 cores, one chip ring), KangaRing all-reduce of 2 MiB:
// one iteration of 256 KiB blocks. The up chain (7 -> 0) fills once: the first piece arrives
// (a message, 0.5 us and 64 KiB through the DMA queue at 362.5 GB/s), each further hop also
// reduces its piece (three passes of HBM at 362.5 GB/s), the primary reduces the whole block;
// then the chain's ranks run ahead a stage apart, so each group lasts the primary's ring step:
// the send, 7 reducing steps (forwarded after a piece's latency, transfer at 256 GB/s and
// reduction) and 7 passing the final blocks on (two messages: the ring's and the chip's); the
// last block goes down the chain's 7 hops. trnccl-sim: 50.9 us. Before: 101.5 us (every group
// paid the chain's 7 hops), and torus2d, 66 % slower, was picked.
TEST(Estimates, KangaRingChainFillsOncePerIteration) {
  auto view = describeTopology("trn2.48xlarge", 64);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kAllReduce, 524288);
  const double dma = 362.5e3, link = 256e3, arrive = 0.2 + 0.5 + 65536 / dma;
  const double reduceBlock = 3 * 262144 / dma, reducePiece = 3 * 65536 / dma;
  const double fill = arrive + 6 * (arrive + reducePiece) + reduceBlock;
  const double second = 0.2 + reduceBlock;  // the chain's next block, longer than the send
  const double up = 0.2 + 1.5 + 65536 / link + reducePiece;
  const double down = 0.4 + 1.5 + 65536 / link;
  EXPECT_NEAR(estimateOf("kangaring", a, view->links), fill + second + 7 * (up + down) + 7 * arrive,
              1e-3);
}

// 128 ranks of trn2.48xlarge (16 chips, two chip rings): the channels' up chains run through
// a chip's cores in opposite directions (7 -> 0 and 2 -> 7 -> 1), and a rank begins a group
// only when both of its chain steps are over, so core 2 waits for core 7's block (5 hops) and
// core 7 for core 2's: every group of the reduce-scatter half lasts 5 hops and a block's
// reduction (8.75 us simulated a group), those of the all-gather half 5 hops and a block.
// trnccl-sim: 224.8 us at 8 MiB; the old estimate charged 7 hops a group (214.7 us, but 2x
// at 64 ranks, where one chain runs ahead).
TEST(Estimates, KangaRingOppositeChainsWaitForEachOther) {
  auto view = describeTopology("trn2.48xlarge", 128);
  ASSERT_TRUE(view) << view.status().message();
  ASSERT_EQ(view->shape->chipRings.size(), 2u);
  const CollArgs a = call(*view, Collective::kAllReduce, 2097152);
  const double dma = 362.5e3, arrive = 0.2 + 0.5 + 65536 / dma;
  const double hopUp = arrive + 3 * 65536 / dma, reduceBlock = 3 * 262144 / dma;
  const double fill = arrive + 6 * hopUp + reduceBlock;
  const double up = 4 * hopUp + arrive + reduceBlock, down = 5 * arrive + 262144 / dma;
  EXPECT_NEAR(estimateOf("kangaring", a, view->links), fill + 16 * up + 15 * down + 7 * arrive,
              1e-3);
}

// 2 x trn1n.32xlarge (64 ranks, 2 a rail), mesh all-reduce of 8 floats: only ranks 0-7 own a
// block. Round 1: every rank sends its 8 elements to the owners; the other instance's ranks
// through their rails, 2 ranks x 8 messages (0.2 us each) a rail, then 15 us of network. Round
// 2: the owners (2 a rail on rails 0-3) send their element to every rank: the 31 within the
// instance from their DMA queues while the rail's send queue takes the 2 x 32 to the other
// instance (0.2 us and 4 B at 12.5 GB/s each), then 15 us. trnccl-sim: 45.8 us. Before: 52.0
// (the DMA queue's 31 messages added to the rail's), and rdh, 13 % slower, was picked.
TEST(Estimates, MeshOwnersRoundOverlapsTheRailWithTheInstance) {
  auto view = describeTopology("trn1n.32xlarge", 64);
  ASSERT_TRUE(view) << view.status().message();
  ASSERT_TRUE(view->links.multiInstance);
  const CollArgs a = call(*view, Collective::kAllReduce, 8);
  const double toOwners = 15 + 2 * 8 * 0.2, fromOwners = 15 + 2 * 32 * (0.2 + 4 / 12.5e3);
  const double fold = 3 * (63 * 32 / 64.0) / 410e3;
  EXPECT_NEAR(estimateOf("mesh", a, view->links), toOwners + fromOwners + fold, 1e-3);
}

// 256 ranks of the Trn2 UltraServer (2 instances of 16 chips, 8 ranks a chip), rdh all-reduce
// of 512 KiB: at distance 128 each chip's 8 ranks cross their one Z link (128 GB/s), which
// serves their 256 KiB one after another (2.05 us each, traced), so the first go on early, as
// within an instance. trnccl-sim: 65.67 us. Before: 78.7 (the Z level charged every rank the
// link's full share), and torus3d, 10 % slower, was picked.
TEST(Estimates, RdhZLinkServesTheChipsRanksInTurn) {
  auto view = describeTopology("trn2-ultraserver", 256);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kAllReduce, 131072);
  EXPECT_NEAR(estimateOf("rdh", a, view->links), 65.67, 0.05 * 65.67);
}

// 256 ranks of trn3-ultraserver-gen2 (8 servers of 4 chips), rdh all-reduce of 32 MiB: the
// levels at distance 32, 64 and 128 all leave a chip through its one path into the switch's
// higher tier, which serves its ranks' transfers back to back across the levels (traced: the
// distance-64 transfers begin when the last distance-128 one is over, not when their rank is
// ready). trnccl-sim: 1,516.7 us; serving each level's queue afresh gives about two thirds.
TEST(Estimates, RdhHigherTierQueueCarriesAcrossLevels) {
  auto view = describeTopology("trn3-ultraserver-gen2", 256);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kAllReduce, 8388608);
  EXPECT_NEAR(estimateOf("rdh", a, view->links), 1516.7, 0.05 * 1516.7);
}

// 4 x trn2.48xlarge (512 ranks, a chip's 8 ranks on its NIC), rdh all-reduce of 256 KiB: at
// distances 256 and 128 a chip's ranks cross the network through their rail, whose send queue
// issues their messages one after another (a message and its bytes each), so the first go on
// early, as over a chip's link within an instance. trnccl-sim: 186.3 us. Before: 220.7 (the
// network's levels charged every rank the rail's full share), and torus2d, 15 % slower, was
// picked.
TEST(Estimates, RdhRailServesTheChipsRanksInTurn) {
  auto view = describeTopology("trn2.48xlarge", 512);
  ASSERT_TRUE(view) << view.status().message();
  ASSERT_TRUE(view->links.multiInstance);
  const CollArgs a = call(*view, Collective::kAllReduce, 65536);
  EXPECT_NEAR(estimateOf("rdh", a, view->links), 186.3, 0.05 * 186.3);
}

// The whole Trn2 UltraServer (512 ranks, 4 instances on Z rings of 4), Bruck all-gather of 16
// MiB: at distance 256 a chip's partner is 2 instances on, 2 Z hops the same way round, so every
// Z link carries its own chip's transfers and those of the chip behind it (the level's
// crossHops, 2). trnccl-sim: 1,592.3 us. Before: 1,079.2 (one chip's transfers a link, right on
// 2 instances), and Bruck, 11 % slower than torus3d, was picked at 256 KiB.
TEST(Estimates, BruckZLinkCarriesTheChipsInBetween) {
  auto view = describeTopology("trn2-ultraserver", 512);
  ASSERT_TRUE(view) << view.status().message();
  EXPECT_DOUBLE_EQ(view->links.shiftPartners[8].crossHops, 2);
  EXPECT_DOUBLE_EQ(view->links.shiftPartners[7].crossHops, 1);
  const CollArgs a = call(*view, Collective::kAllGather, 8192);
  EXPECT_NEAR(estimateOf("bruck", a, view->links), 1592.3, 0.05 * 1592.3);
}

// 4 x trn2.48xlarge (512 ranks), flat ring all-gather of 16 MiB: one 32 KiB slice a step; at
// each of the 4 crossings the rank's rail NIC issues the slice as a message of its own (0.2 us in
// its send queue) and then its bytes at 25 GB/s (1.31 us), so the crossing steps take 1.51 us,
// not 1.31. trnccl-sim: 787.2 us. Before: 670.0 (the NIC's bytes alone), and the ring was
// picked over the hierarchy, 16 % slower on 8 lnc2 instances.
TEST(Estimates, RingAcrossInstancesPaysTheNicsMessagePerSlice) {
  auto view = describeTopology("trn2.48xlarge", 512);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kAllGather, 8192);
  EXPECT_NEAR(estimateOf("ring", a, view->links), 787.2, 0.05 * 787.2);
}

// 16 x trn1.32xlarge (512 ranks), hierarchical reduce-scatter of 2 MiB: each instance's row ring
// takes its ranks in rank order, so its chips in number order on the 4 x 4 torus, where chip 3
// to 4 (and 7 to 8, 11 to 12, 15 to 0) is 2 NeuronLink hops: (12 x 1.5 + 4 x 3.0) / 16 = 1.875
// us a chip's step. 16 row rings of 31 steps of 4 KiB, each a message (0.2 us), the average of
// that step and a core's (0.5 us), the piece at the average of 96 GB/s (the chip step) and 410
// (the core step's DMA queue) and its reduction (3 x 4,096 B at 410 GB/s): 496 x 1.44380 =
// 716.12 us (the trace's steps: 3.27, 0.74, 1.77, 0.74, ... 1.444 us on average; the rows end at
// 716 us); then the column's 15 steps across the network, 0.2 + 15 us and 4 KiB at the rail's
// rate (12.5 GB/s: the NIC's 4 ranks take turns within the latency) and its reduction: 233.37
// us. trnccl-sim: 948.3 us. Before: 879.3 (every chip's step 1.5 us, the column's 4 KiB at the
// rank's share of the NIC), and the hierarchy was picked over the ring, 10.3 % faster.
TEST(Estimates, HierarchyRowRingTakesTheChipsInNumberOrder) {
  auto view = describeTopology("trn1.32xlarge", 512);
  ASSERT_TRUE(view) << view.status().message();
  EXPECT_DOUBLE_EQ(view->links.instanceRingLatencyUs, 1.875);
  const CollArgs a = call(*view, Collective::kReduceScatter, 1024);
  const double piece = 4096 / (2 / (1 / 96e3 + 1 / 410e3));
  const double row = 0.2 + (1.875 + 0.5) / 2 + piece + 3 * 4096 / 410e3;
  const double column = 0.2 + 15 + 4096 / 12.5e3 + 3 * 4096 / 410e3;
  EXPECT_NEAR(estimateOf("hierarchical", a, view->links), 16 * 31 * row + 15 * column, 0.01);
  EXPECT_NEAR(estimateOf("hierarchical", a, view->links), 948.3, 0.05 * 948.3);
  EXPECT_LT(estimateOf("ring", a, view->links), estimateOf("hierarchical", a, view->links));
}

// 8 x trn2.48xlarge (1,024 ranks, a chip's 8 ranks on its NIC), hierarchical all-reduce of 16
// MiB: the rows' rings over 128 ranks (127 steps of 128 KiB, a chip's step 1.875 us as above,
// averaged with 7 core steps of 0.5 us; a piece at the average of 256 GB/s and 7 DMA steps at
// 362.5, 344.58 GB/s): reduce-scatter 127 x (0.2 + 0.671875 + 64 KiB at 344.58 GB/s + its
// reduction at 362.5 GB/s) = 203.76 us (the trace's: 204), all-gather 127 x 1.06206 = 134.88
// us (the trace's: 169, left). Between them each column's fused ring over the 8 instances, 16
// KiB steps: the rail's NIC serves its 8 ranks' messages in turn at 25 GB/s (0.66 us each),
// within the 15 us latency, so a step is 0.2 + 15 + 0.66 (+ 0.14 reducing): 7 x 15.991 + 7 x
// 15.855 = 222.93 us (the trace's: 205). trnccl-sim: 564.9 us (with the library's ring; the
// simulator built the hierarchy on default links, which chose the tree: 569.6). Before: 638.8
// (every step paid the rail's 8 ranks' bytes, unpipelined), and torus2d (663.8 us simulated, 17
// % slower) was picked.
TEST(Estimates, HierarchyRailRingTakesTurnsWithinTheLatency) {
  auto view = describeTopology("trn2.48xlarge", 1024);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kAllReduce, 4 << 20);  // slices of 256 KiB
  const double reduce = 3 * 65536 / 362.5e3, chipStep = (1.875 + 7 * 0.5) / 8;
  const double piece = 65536 / (8 / (1 / 256e3 + 7 / 362.5e3));
  const double rows = 127 * (0.2 + chipStep + piece + reduce) + 127 * (0.2 + chipStep + piece);
  const double column =
      7 * (0.2 + 15 + 16384 / 25e3 + 3 * 16384 / 362.5e3) + 7 * (0.2 + 15 + 16384 / 25e3);
  const double hierarchical = estimateOf("hierarchical", a, view->links);
  EXPECT_NEAR(hierarchical, rows + column, 0.01);
  EXPECT_NEAR(hierarchical, 564.9, 0.05 * 564.9);
  EXPECT_LT(hierarchical, estimateOf("torus2d", a, view->links));
}

// 2 instances of 2 ranks, each rank a chip of its own and each instance's ranks on one EFA NIC
// (a model built by hand), Bruck all-gather of 64 KiB blocks (t = 5.24288 us on the NIC at 12.5
// GB/s, messages 0.2 us, the network 15 us; the NeuronLink 96 GB/s, 1.5 us). After the copy of
// the rank's own block (c): at distance 1 ranks 0 and 2 cross the network, each NIC carrying one
// transfer (c + 0.2 + t, landing 15 us later), ranks 1 and 3 the NeuronLink. At distance 2
// ranks 0 and 2 (ready at c + 0.2 + t) send 2 blocks (handed on at c + 0.4 + 3t); ranks 1 and 3
// only once their receive has landed, 15 us later, when their NICs are free again: rank 3's
// range (blocks 3, 0) wraps, so it sends block 3 (c + 0.4 + 2t + 15), then block 0 once rank
// 1's 2 blocks have landed (c + 0.4 + 3t + 30): c + 0.6 + 4t + 45 in all. Before: 83.22 us,
// every transfer charged the rank's share of its NIC (half of it) whether or not the other
// rank sends then.
TEST(Estimates, BruckNicsServeTheirTransfersInTurn) {
  algorithms::LinkModel m;
  m.multiInstance = true;
  m.railBandwidth = 12.5;
  m.ranksPerRail = 2;
  m.interBandwidth = 6.25;
  m.partnerLevels = 2;
  m.shiftPartners[0] = {.offChip = 1, .hops = 1, .offInstance = 0.5};
  m.shiftPartners[1] = {.offChip = 1, .hops = 1, .offInstance = 1};
  auto shape = std::make_shared<algorithms::Shape>();
  shape->chips = {{0}, {1}, {2}, {3}};
  shape->instances.rows = {{0, 1}, {2, 3}};
  shape->rails = {0, 0, 0, 0};
  CollArgs a;
  a.coll = Collective::kAllGather;
  a.count = 16384;
  a.nranks = 4;
  a.shape = shape;
  const double t = 65536 / 12.5e3, c = 65536 / 205e3;
  EXPECT_NEAR(estimateOf("bruck", a, m), c + 0.6 + 4 * t + 45, 1e-6);
}

// 16 x trn1n.32xlarge (512 ranks, a chip's 2 ranks on its NIC), Bruck all-gather of 2 MiB: the
// last levels cross the network, and the receiving NIC is the busier one. A rank whose range
// at distance 128 wraps (386, sending to 258) is late, and rank 2's transfer of distance 256 (1
// MiB) takes NIC 8.1's receiving side first, so rank 258 gets its last blocks of distance 128
// only after it, and its own 1 MiB to rank 2 leaves that much later (the trace: NIC 8.1 in
// carries 2 -> 258, 386 -> 258, 387 -> 259 and 3 -> 259 one after another). trnccl-sim: 627.6
// us. Before: 511.9 (the senders' share alone), and Bruck was picked over mesh (531.2
// simulated, 521.6 estimated), 18 % slower.
TEST(Estimates, BruckReceivingNicTakesEveryLevelsTransfersInTurn) {
  auto view = describeTopology("trn1n.32xlarge", 512);
  ASSERT_TRUE(view) << view.status().message();
  ASSERT_TRUE(view->links.multiInstance);
  const CollArgs a = call(*view, Collective::kAllGather, 1024);
  const double bruck = estimateOf("bruck", a, view->links);
  EXPECT_NEAR(bruck, 627.6, 0.02 * 627.6);
  EXPECT_GT(bruck, estimateOf("mesh", a, view->links));
}

// 8 servers of trn3-ultraserver-gen2 (256 ranks), hierarchical all-gather of 128 MiB: after the
// copy of the rank's 512 KiB block (at 306.25 GB/s), the columns over the switch's higher tier
// (7 steps of 2 slices of 256 KiB, each a message and its bytes at a rank's share of the
// chip's 320 GB/s, 40), then 8 row rings of 31 steps over 32 ranks, every slice a pass of
// its own: each hop a message, the average step's latency (7 cores at 0.5 us, a chip at 2)
// and a piece at the steps' average rate (the DMA queue's 612.5 GB/s, the port's 2560), longer
// than the slice's 0.628 us. trnccl-sim: 589.6 us (the trace: rows 61.6 us a ring). Before:
// 1,664 (the columns over the network); with a step's slices sharing one hop, 407.7.
TEST(Estimates, HierarchyRowsPassSliceBySliceColumnsOnTheFabric) {
  auto view = describeTopology("trn3-ultraserver-gen2", 256);
  ASSERT_TRUE(view) << view.status().message();
  EXPECT_DOUBLE_EQ(view->links.instanceRingLatencyUs, 2);
  const CollArgs a = call(*view, Collective::kAllGather, 131072);
  const double column = 7 * 2 * (0.2 + 262144 / 40e3);
  const double rate = 8 / (1 / 2560e3 + 7 / 612.5e3);
  const double rows = 8 * 31 * 2 * (0.2 + (2 + 7 * 0.5) / 8 + 65536 / rate);
  const double hierarchical = estimateOf("hierarchical", a, view->links);
  EXPECT_NEAR(hierarchical, 524288 / 306.25e3 + column + rows, 0.01);
  EXPECT_NEAR(hierarchical, 589.6, 0.02 * 589.6);
}

// The same ring over all 256 ranks: of its 256 steps 8 cross servers (3 us, 320 GB/s), 24 leave
// a chip through the switch (2 us, 2560) and 224 go core to core (0.5 us, 612.5); a slice (256
// KiB, 2 a step) takes a message and 0.8192 us on the slowest, just under a hop. trnccl-sim:
// 526.0 us. Before: 622.5 (every chip step a crossing): with the hierarchy's fixes, 12 % off.
TEST(Estimates, FabricRingStepsOfThreeKinds) {
  auto view = describeTopology("trn3-ultraserver-gen2", 256);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kAllGather, 131072);
  const double rate = 256 / (224 / 612.5e3 + 24 / 2560e3 + 8 / 320e3);
  const double hop = 0.2 + (224 * 0.5 + 24 * 2 + 8 * 3) / 256.0 + 65536 / rate;
  const double ring = estimateOf("ring", a, view->links);
  EXPECT_NEAR(ring, 524288 / 306.25e3 + 255 * 2 * hop, 0.01);
  EXPECT_NEAR(ring, 526.0, 0.02 * 526.0);
  EXPECT_LT(ring, estimateOf("hierarchical", a, view->links));
}

// trn2-ultraserver, 512 ranks, all-gather of 128 MiB: the hierarchy (columns on the Z links,
// 674.7 us simulated) beats the ring on 2 channels (745.1). Before: 792.6, the ring picked.
TEST(Estimates, UltraServerHierarchyColumnsOnZLinks) {
  auto view = describeTopology("trn2-ultraserver", 512);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kAllGather, 65536);
  const double hierarchical = estimateOf("hierarchical", a, view->links);
  EXPECT_NEAR(hierarchical, 674.7, 0.02 * 674.7);
  CollArgs two = a;
  two.channels = 2;
  EXPECT_LT(hierarchical, estimateOf("ring", two, view->links));
}

}  // namespace
}  // namespace trnccl::plan
