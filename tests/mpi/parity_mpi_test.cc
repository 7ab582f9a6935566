// The NCCL API beyond the core set across real processes (the cases of support/api_cases.h, as
// tests/inproc/parity_test.cc runs them in one process): PreMulSum operators, trncclBcast and
// all-to-all-v through grouped send/recv, registered buffers. Every rank checks its own output; the
// sum of wrong elements over the ranks must be zero.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "mpi_env.h"
#include "support/api_cases.h"
#include "transports/shm/testing.h"
#include "transports/shm/zero_copy.h"

namespace trnccl::testing {
namespace {

using ShmEvent = transport::shm::testing::Event;

unsigned long long totalOverRanks(size_t wrong) {
  unsigned long long mine = wrong, total = 0;
  MPI_Allreduce(&mine, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

TEST(MpiParity, PreMulSumEveryCollectiveTypeAndResidence) {
  for (PreMulColl coll :
       {PreMulColl::kAllReduce, PreMulColl::kReduceScatter, PreMulColl::kReduce}) {
    for (trncclDataType_t t : {trncclFloat32, trncclBfloat16, trncclFloat64, trncclInt32}) {
      for (auto residence : {trncclScalarDevice, trncclScalarHostImmediate}) {
        for (bool inPlace : {false, true}) {
          size_t bad = runPreMulSum(worldComm, worldStream, worldRank, worldSize, coll, t,
                                    residence, 4099, inPlace);
          EXPECT_EQ(totalOverRanks(bad), 0u)
              << "coll " << static_cast<int>(coll) << " " << typeName(t) << " residence "
              << residence << (inPlace ? " in place" : "");
        }
      }
    }
  }
}

TEST(MpiParity, LegacyInPlaceBcast) {
  for (int root : {0, worldSize - 1}) {
    size_t bad = runBcast(worldComm, worldStream, worldRank, root, trncclFloat16, 100003);
    EXPECT_EQ(totalOverRanks(bad), 0u) << "root " << root;
  }
}

TEST(MpiParity, GatherAndScatterWithoutTheRootOnlyBuffer) {
  for (int root : {0, worldSize - 1}) {
    for (bool inPlace : {false, true}) {
      size_t bad = runGather(worldComm, worldStream, worldRank, worldSize, root, trncclInt8, 70001,
                             inPlace) +
                   runScatter(worldComm, worldStream, worldRank, worldSize, root, trncclFloat32,
                              70001, inPlace);
      EXPECT_EQ(totalOverRanks(bad), 0u) << "root " << root << (inPlace ? " in place" : "");
    }
  }
}

TEST(MpiParity, AlltoAllvThroughGroupedSendRecv) {
  for (size_t scale : {size_t{1}, size_t{70001}}) {
    size_t bad = runAlltoAllv(worldComm, worldStream, worldRank, worldSize, scale);
    EXPECT_EQ(totalOverRanks(bad), 0u) << "scale " << scale;
  }
}

int64_t shmCount(ShmEvent e) { return transport::shm::testing::counters().get(e); }

// Whether this suite's peers are all reached over shm: several processes on this host (mpirun
// here), no transport list and no emulated instances from the environment.
bool peersOnShm() {
  return worldSize > 1 && std::getenv("TRNCCL_TRANSPORT") == nullptr &&
         std::getenv("TRNCCL_EMU_RANKS_PER_NODE") == nullptr;
}

// Registered buffers across processes: same-host peers read registered pieces in place from
// the registered floor up (device arenas mapped from the peer process, or process_vm_readv),
// 64 KiB (transports/shm/zero_copy.h), even where
// TRNCCL_SHM_ZCOPY_BYTES keeps unregistered ones in the FIFO, so the result must not depend on
// a FIFO copy having been taken, and the FIFOs must carry no payload of a registered piece at
// the floor. Each process counts its own shm paths (the counters of transports/shm/testing.h,
// which libtrnccl keeps per process): on a communicator made with the threshold raised above
// every piece and the ring forced, all-reduces of full pipeline slices (ring blocks of two)
// copy through the FIFOs unregistered, and registered copy nothing and send pieces by
// descriptor; a call of 1 element and one of half-slice blocks copy either way. If
// registration were ignored, the registered calls would copy as the others do.
TEST(MpiParity, RegisteredBuffers) {
  using transport::shm::kRegisteredMinBytes;
  const size_t n = static_cast<size_t>(worldSize);
  const size_t above = n * 2 * kRegisteredMinBytes / sizeof(float);
  const size_t below = n * (kRegisteredMinBytes / 2) / sizeof(float);
  // The communicator reads TRNCCL_ALGO and the transports' variables when it is created (a
  // split with a config does, not inheriting worldComm's).
  const char* forced = std::getenv("TRNCCL_ALGO");
  const std::string saved = forced != nullptr ? forced : "";
  setenv("TRNCCL_ALGO", "ring", 1);
  setenv("TRNCCL_SHM_ZCOPY_BYTES", std::to_string(16 * kRegisteredMinBytes).c_str(), 1);
  trncclConfig_t config = TRNCCL_CONFIG_INITIALIZER;
  trncclComm_t ring = nullptr;
  ASSERT_EQ(trncclCommSplit(worldComm, 0, worldRank, &ring, &config), trncclSuccess);
  unsetenv("TRNCCL_SHM_ZCOPY_BYTES");
  if (saved.empty()) {
    unsetenv("TRNCCL_ALGO");
  } else {
    setenv("TRNCCL_ALGO", saved.c_str(), 1);
  }
  int64_t copiedUnregistered = 0, registeredPieces = 0;
  for (size_t count : {size_t{1}, below, above}) {
    for (bool inPlace : {false, true}) {
      for (bool registered : {false, true}) {
        const int64_t inline0 = shmCount(ShmEvent::kInlineRecords);
        const int64_t reg0 = shmCount(ShmEvent::kRegisteredPieces);
        size_t bad = runRegisteredAllReduce(ring, worldStream, worldRank, worldSize, trncclFloat32,
                                            count, inPlace, registered);
        EXPECT_EQ(totalOverRanks(bad), 0u) << "count " << count << (inPlace ? " in place" : "")
                                           << (registered ? " registered" : "");
        const int64_t copied = shmCount(ShmEvent::kInlineRecords) - inline0;
        const int64_t pieces = shmCount(ShmEvent::kRegisteredPieces) - reg0;
        if (registered && count == above) {
          EXPECT_EQ(copied, 0) << "rank " << worldRank << " count " << count
                               << (inPlace ? " in place" : "")
                               << ": FIFO copies of registered pieces";
          registeredPieces += pieces;
        } else {
          EXPECT_EQ(pieces, 0) << "rank " << worldRank << " count " << count
                               << (registered ? " registered, below the floor" : "");
          if (!registered) copiedUnregistered += copied;
        }
      }
    }
  }
  EXPECT_EQ(trncclCommDestroy(ring), trncclSuccess);
  if (peersOnShm()) {
    EXPECT_GT(copiedUnregistered, 0) << "rank " << worldRank << ": unregistered calls copied "
                                     << "nothing through the FIFOs (counters not seen?)";
    EXPECT_GT(registeredPieces, 0) << "rank " << worldRank << ": no piece sent by descriptor";
  }
}

// trncclCommInitRankScalable across processes: ranks 0..nId-1 each make one id (each then
// hosts its root), MPI shares them, and the communicator must work (an all-reduce, right on
// every rank).
TEST(MpiParity, InitRankScalable) {
  const int nId = std::min(worldSize, 3);
  std::vector<trncclUniqueId> ids(nId);
  trncclUniqueId mine{};
  if (worldRank < nId) {
    ASSERT_EQ(trncclGetUniqueId(&mine), trncclSuccess);
  }
  std::vector<trncclUniqueId> all(worldSize);
  MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, all.data(), sizeof(mine), MPI_BYTE, MPI_COMM_WORLD);
  std::copy(all.begin(), all.begin() + nId, ids.begin());
  trncclComm_t comm = nullptr;
  ASSERT_EQ(trncclCommInitRankScalable(&comm, worldSize, worldRank, nId, ids.data(), nullptr),
            trncclSuccess)
      << trncclGetLastError(nullptr);
  size_t bad = runRegisteredAllReduce(comm, worldStream, worldRank, worldSize, trncclFloat32, 10007,
                                      false, false);
  EXPECT_EQ(totalOverRanks(bad), 0u) << "nId " << nId;
  EXPECT_EQ(trncclCommDestroy(comm), trncclSuccess);
}

}  // namespace
}  // namespace trnccl::testing
