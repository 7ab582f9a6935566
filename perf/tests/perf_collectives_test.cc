// Unit tests of every collective's descriptor: counts, the size column and busbw against
// nccl-tests' formulas, and expected results against a host simulation of the collective.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/collective.h"
#include "common/data.h"

namespace trnccl::perf {
namespace {

// nccl-tests' getCollByteCount and getBw of each collective, written out independently of the
// descriptors: count is size / type size; baseBw = bwElems * type size / 1e9 / t.
struct NcclTestsFormula {
  const CollectiveTest* test;
  std::string_view name;
  bool reduces, rooted;
  Counts (*counts)(size_t count, size_t n);
  size_t (*bwElems)(const Counts& c, size_t n);  // elements behind baseBw
  double (*factor)(double n);
};

double twoNm1OverN(double n) { return 2 * (n - 1) / n; }
double nm1OverN(double n) { return (n - 1) / n; }
double one(double) { return 1; }
Counts same(size_t c, size_t) { return {c, c, c, 0, 0}; }
size_t param(const Counts& c, size_t) { return c.param; }
size_t paramTimesN(const Counts& c, size_t n) { return c.param * n; }

const NcclTestsFormula kFormulas[] = {
    {&kAllReduceTest, "all_reduce_perf", true, false, same, param, twoNm1OverN},
    {&kAllGatherTest, "all_gather_perf", false, false,
     [](size_t c, size_t n) {
       return Counts{c / n, c / n * n, c / n, c / n, 0};
     },
     paramTimesN, nm1OverN},
    {&kReduceScatterTest, "reduce_scatter_perf", true, false,
     [](size_t c, size_t n) {
       return Counts{c / n * n, c / n, c / n, 0, c / n};
     },
     paramTimesN, nm1OverN},
    {&kBroadcastTest, "broadcast_perf", false, true, same, param, one},
    {&kReduceTest, "reduce_perf", true, true, same, param, one},
    {&kAlltoallTest, "alltoall_perf", false, false,
     [](size_t c, size_t n) {
       return Counts{c / n * n, c / n * n, c / n, 0, 0};
     },
     paramTimesN, nm1OverN},
    {&kSendRecvTest, "sendrecv_perf", false, false, same, param, one},
};

TEST(PerfCollectives, CountsSizeAndBusBandwidthAsNcclTests) {
  for (const NcclTestsFormula& f : kFormulas) {
    const CollectiveTest& t = *f.test;
    SCOPED_TRACE(std::string(f.name));
    EXPECT_EQ(t.name, f.name);
    EXPECT_EQ(t.reduces, f.reduces);
    EXPECT_EQ(t.rooted, f.rooted);
    for (int n : {1, 2, 3, 4, 5, 8, 16}) {
      for (size_t ts : {1, 2, 4, 8}) {
        for (size_t bytes :
             {size_t{0}, size_t{8}, size_t{1000}, size_t{1} << 20, (size_t{64} << 20) + 24}) {
          const size_t count = bytes / ts;
          const Counts got = t.counts(count, n);
          const Counts want = f.counts(count, size_t(n));
          EXPECT_EQ(got.send, want.send) << n << " ranks, " << bytes << " B";
          EXPECT_EQ(got.recv, want.recv);
          EXPECT_EQ(got.param, want.param);
          EXPECT_EQ(got.sendInplaceOffset, want.sendInplaceOffset);
          EXPECT_EQ(got.recvInplaceOffset, want.recvInplaceOffset);
          EXPECT_EQ(rowBytes(got, ts), std::max(want.send, want.recv) * ts);
          const double sec = 1.25e-4;
          const double baseBw = double(f.bwElems(want, size_t(n)) * ts) / 1.0e9 / sec;
          const Bandwidth bw = rowBandwidth(t, got, ts, sec, n);
          EXPECT_DOUBLE_EQ(bw.algBw, baseBw);
          EXPECT_DOUBLE_EQ(bw.busBw, baseBw * f.factor(n));
        }
      }
    }
  }
}

TEST(PerfCollectives, BusBandwidthExamples) {
  // 4 ranks, 1 MiB of floats in 1 ms: algbw 1.048576 GB/s for every collective.
  const Counts ag = kAllGatherTest.counts(262144, 4);
  EXPECT_EQ(ag.param, 65536u);
  EXPECT_DOUBLE_EQ(rowBandwidth(kAllGatherTest, ag, 4, 1e-3, 4).busBw, 1.048576 * 0.75);
  const Counts rs = kReduceScatterTest.counts(262144, 4);
  EXPECT_EQ(rs.param, 65536u);
  EXPECT_DOUBLE_EQ(rowBandwidth(kReduceScatterTest, rs, 4, 1e-3, 4).busBw, 1.048576 * 0.75);
  const Counts a2a = kAlltoallTest.counts(262144, 4);
  EXPECT_EQ(a2a.param, 65536u);
  EXPECT_DOUBLE_EQ(rowBandwidth(kAlltoallTest, a2a, 4, 1e-3, 4).busBw, 1.048576 * 0.75);
  const Counts ar = kAllReduceTest.counts(262144, 4);
  EXPECT_DOUBLE_EQ(rowBandwidth(kAllReduceTest, ar, 4, 1e-3, 4).busBw, 1.048576 * 1.5);
  for (const CollectiveTest* t : {&kBroadcastTest, &kReduceTest, &kSendRecvTest}) {
    const Counts c = t->counts(262144, 4);
    EXPECT_EQ(c.param, 262144u);
    EXPECT_DOUBLE_EQ(rowBandwidth(*t, c, 4, 1e-3, 4).busBw, 1.048576);
  }
  // Sizes that do not divide by n: 10 floats over 4 ranks gather 2 each, an 8-float row.
  const Counts odd = kAllGatherTest.counts(10, 4);
  EXPECT_EQ(rowBytes(odd, 4), 32u);
  EXPECT_EQ(odd.param, 2u);
}

// Runs the collective on the host from the descriptors' inputs and compares every rank's
// result with what the descriptor expects.
void checkAgainstSimulation(const CollectiveTest& t, int n, size_t count, int root,
                            std::vector<double> (*simulate)(const std::vector<std::vector<double>>&,
                                                            const Counts&, int rank, int root)) {
  TestCase tc;
  tc.key = DataKey{trncclFloat, trncclSum, n, 3};
  tc.root = root;
  tc.counts = t.counts(count, n);
  std::vector<std::vector<double>> in(size_t(n), std::vector<double>(tc.counts.send));
  for (int r = 0; r < n; ++r) t.input(tc, r, 0, in[size_t(r)]);
  for (int r = 0; r < n; ++r) {
    std::vector<Expect> want(tc.counts.recv);
    if (!t.expected(tc, r, 0, want)) {
      EXPECT_TRUE(t.rooted && r != root) << t.name << " rank " << r;
      continue;
    }
    const std::vector<double> got = simulate(in, tc.counts, r, root);
    ASSERT_EQ(got.size(), want.size()) << t.name;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i].value, want[i].tolerance) << t.name << " rank " << r << " " << i;
    }
  }
}

TEST(PerfCollectives, ExpectedResultsMatchAHostSimulation) {
  using In = std::vector<std::vector<double>>;
  for (int n : {1, 2, 3, 4}) {
    const size_t count = 24 * size_t(n) + 5;
    checkAgainstSimulation(kAllReduceTest, n, count, -1,
                           [](const In& in, const Counts& c, int, int) {
                             std::vector<double> out(c.recv);
                             for (size_t i = 0; i < c.recv; ++i)
                               for (const auto& v : in) out[i] += v[i];
                             return out;
                           });
    checkAgainstSimulation(kAllGatherTest, n, count, -1,
                           [](const In& in, const Counts& c, int, int) {
                             std::vector<double> out;
                             for (const auto& v : in) out.insert(out.end(), v.begin(), v.end());
                             EXPECT_EQ(out.size(), c.recv);
                             return out;
                           });
    checkAgainstSimulation(kReduceScatterTest, n, count, -1,
                           [](const In& in, const Counts& c, int rank, int) {
                             std::vector<double> out(c.recv);
                             for (size_t i = 0; i < c.recv; ++i)
                               for (const auto& v : in) out[i] += v[size_t(rank) * c.recv + i];
                             return out;
                           });
    checkAgainstSimulation(
        kAlltoallTest, n, count, -1, [](const In& in, const Counts& c, int rank, int) {
          std::vector<double> out;
          for (const auto& v : in) {
            const auto block = v.begin() + std::ptrdiff_t(size_t(rank) * c.param);
            out.insert(out.end(), block, block + std::ptrdiff_t(c.param));
          }
          return out;
        });
    checkAgainstSimulation(kSendRecvTest, n, count, -1,
                           [](const In& in, const Counts&, int rank, int) {
                             return in[size_t((rank + int(in.size()) - 1) % int(in.size()))];
                           });
    for (int root = 0; root < n; ++root) {
      checkAgainstSimulation(
          kBroadcastTest, n, count, root,
          [](const In& in, const Counts&, int, int root) { return in[size_t(root)]; });
      checkAgainstSimulation(kReduceTest, n, count, root,
                             [](const In& in, const Counts& c, int, int) {
                               std::vector<double> out(c.recv);
                               for (size_t i = 0; i < c.recv; ++i)
                                 for (const auto& v : in) out[i] += v[i];
                               return out;
                             });
    }
  }
}

}  // namespace
}  // namespace trnccl::perf
