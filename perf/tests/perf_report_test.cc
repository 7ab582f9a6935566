// Unit tests of the benchmark arithmetic: bandwidths, number formatting, size parsing and
// sweeps, option parsing, -t/-g rank numbering and time reductions, the data model's encodings and
// expected values, and every collective's descriptor (counts, size column, busbw against
// nccl-tests' formulas, and expected results against a host simulation of the collective).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/collective.h"
#include "common/data.h"
#include "common/options.h"
#include "common/rank_layout.h"
#include "common/report.h"

namespace trnccl::perf {
namespace {

TEST(PerfBandwidth, AlgAndBusBandwidthInDecimalGigabytes) {
  // 1e9 bytes in 1 s is 1 GB/s: GB is 1e9 bytes, not 2^30.
  const Bandwidth one = bandwidth(1000000000, 1.0, 1.0);
  EXPECT_DOUBLE_EQ(one.algBw, 1.0);
  EXPECT_DOUBLE_EQ(one.busBw, 1.0);
  // 32 MiB in 1 ms over 4 ranks of all-reduce: algbw 33.554432, busbw x 2*3/4.
  const Bandwidth ar = bandwidth(32u << 20, 1e-3, allReduceBusFactor(4));
  EXPECT_DOUBLE_EQ(ar.algBw, 33.554432);
  EXPECT_DOUBLE_EQ(ar.busBw, 33.554432 * 1.5);
  EXPECT_DOUBLE_EQ(bandwidth(100, 0.0, 1.0).algBw, 0.0);  // no division by zero
}

TEST(PerfBandwidth, BusFactors) {
  EXPECT_DOUBLE_EQ(allReduceBusFactor(1), 0.0);
  EXPECT_DOUBLE_EQ(allReduceBusFactor(2), 1.0);
  EXPECT_DOUBLE_EQ(allReduceBusFactor(8), 1.75);
  EXPECT_DOUBLE_EQ(gatherBusFactor(4), 0.75);
  EXPECT_DOUBLE_EQ(gatherBusFactor(1), 0.0);
  EXPECT_DOUBLE_EQ(unitBusFactor(16), 1.0);
}

TEST(PerfBandwidth, AverageOverHalfRows) {
  BusBwAverage avg;
  EXPECT_DOUBLE_EQ(avg.mean(), 0.0);
  avg.add(1.0);
  avg.add(2.0);
  avg.add(6.0);
  EXPECT_DOUBLE_EQ(avg.mean(), 3.0);
}

TEST(PerfFormat, FloatFieldsAsNcclTests) {
  EXPECT_EQ(formatFloat(12.345, 7), "  12.35");
  EXPECT_EQ(formatFloat(0.0, 6), "  0.00");
  EXPECT_EQ(formatFloat(1234.5, 7), "1234.50");
  EXPECT_EQ(formatFloat(12345.6, 7), "12345.6");
  EXPECT_EQ(formatFloat(123456.7, 7), " 123457");
  EXPECT_EQ(formatFloat(1234567.0, 7), "1234567");
  EXPECT_EQ(formatFloat(12345678.0, 7), "1.2e+07");
  EXPECT_EQ(formatFloat(123.456, 6), "123.46");
  EXPECT_EQ(formatFloat(1234.56, 6), "1234.6");
}

TEST(PerfFormat, RowAndFooter) {
  EXPECT_EQ(rowPrefix(1048576, 262144, "float", "sum", -1),
            "     1048576        262144     float     sum      -1");
  EXPECT_EQ(rowBody(21.5, {48.77, 73.16}, true, 0), "    21.50   48.77   73.16       0");
  EXPECT_EQ(rowBody(21.5, {48.77, 73.16}, false, 0), "    21.50   48.77   73.16    N/A");
  EXPECT_EQ(rowBodyNotRun(), "      N/A     N/A     N/A     N/A");
  EXPECT_EQ(rowBodyNotRun().size(), rowBody(21.5, {48.77, 73.16}, true, 0).size());
  EXPECT_EQ(footerLines(0, 2.5, "all_reduce_perf"),
            "# Out of bounds values : 0 OK\n"
            "# Avg bus bandwidth    : 2.5 \n"
            "#\n"
            "# Collective test concluded: all_reduce_perf\n");
  EXPECT_NE(footerLines(3, 0, "x").find("Out of bounds values : 3 FAILED"), std::string::npos);
  const std::string h = headerLines();
  EXPECT_NE(h.find("#        (B)    (elements)"), std::string::npos);
  EXPECT_NE(h.find("#       size         count      type   redop    root     time   algbw   busbw  "
                   "#wrong     time"),
            std::string::npos);
}

TEST(PerfOptions, SizeSuffixesAreBinary) {
  EXPECT_EQ(parseSize("8"), 8u);
  EXPECT_EQ(parseSize("0"), 0u);
  EXPECT_EQ(parseSize("1K"), 1024u);
  EXPECT_EQ(parseSize("64k"), 65536u);
  EXPECT_EQ(parseSize("32M"), size_t{32} << 20);
  EXPECT_EQ(parseSize("2G"), size_t{2} << 30);
  EXPECT_FALSE(parseSize(""));
  EXPECT_FALSE(parseSize("K"));
  EXPECT_FALSE(parseSize("1.5M"));
  EXPECT_FALSE(parseSize("-1"));
  EXPECT_FALSE(parseSize("12X"));
  EXPECT_FALSE(parseSize("99999999999999999999G"));
}

TEST(PerfOptions, Sweep) {
  Options o;
  o.minBytes = 8;
  o.maxBytes = 1 << 20;
  o.stepFactor = 4;
  const std::vector<size_t> s = sizeSweep(o);
  ASSERT_EQ(s.size(), 9u);  // 8, 32, ..., 524288 (2097152 > 1M)
  EXPECT_EQ(s.front(), 8u);
  EXPECT_EQ(s.back(), 524288u);
  o.stepFactor = 1;
  o.minBytes = 1000;
  o.maxBytes = 3500;
  o.stepBytes = 1000;
  EXPECT_EQ(sizeSweep(o), (std::vector<size_t>{1000, 2000, 3000}));
  o.minBytes = o.maxBytes = 0;
  o.stepFactor = 2;
  EXPECT_EQ(sizeSweep(o), (std::vector<size_t>{0}));
}

ParseResult parse(std::vector<std::string> args) {
  args.insert(args.begin(), "all_reduce_perf");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return parseOptions(int(args.size()), argv.data());
}

TEST(PerfOptions, DefaultsAsNcclTests) {
  const ParseResult r = parse({});
  ASSERT_FALSE(r.exitCode);
  EXPECT_EQ(r.options.minBytes, size_t{32} << 20);
  EXPECT_EQ(r.options.maxBytes, size_t{32} << 20);
  EXPECT_EQ(r.options.stepBytes, size_t{1} << 20);
  EXPECT_EQ(r.options.iters, 20);
  EXPECT_EQ(r.options.warmupIters, 1);
  EXPECT_EQ(r.options.check, 1);
  EXPECT_EQ(r.options.average, 1);
  EXPECT_EQ(r.options.types, std::vector{trncclFloat});
  EXPECT_EQ(r.options.ops, std::vector{trncclSum});
}

TEST(PerfOptions, Flags) {
  const ParseResult r = parse({"-b", "8", "-e", "1M", "-f", "4",   "-g", "4",       "-c", "0",
                               "-n", "2", "-w", "3",  "-d", "all", "-o", "all",     "-r", "all",
                               "-a", "3", "-z", "1",  "-T", "2.5", "-J", "out.json"});
  ASSERT_FALSE(r.exitCode) << r.message;
  const Options& o = r.options;
  EXPECT_EQ(o.minBytes, 8u);
  EXPECT_EQ(o.maxBytes, 1u << 20);
  EXPECT_EQ(o.stepFactor, 4u);
  EXPECT_EQ(o.gpus, 4);
  EXPECT_EQ(o.check, 0);
  EXPECT_EQ(o.iters, 2);
  EXPECT_EQ(o.warmupIters, 3);
  EXPECT_EQ(o.types.size(), 12u);
  EXPECT_EQ(o.ops.size(), 5u);
  EXPECT_EQ(o.root, -1);
  EXPECT_EQ(o.average, 3);
  EXPECT_EQ(o.blocking, 1);
  EXPECT_DOUBLE_EQ(o.timeoutSec, 2.5);
  EXPECT_EQ(o.jsonPath, "out.json");
  const ParseResult l = parse({"--minbytes", "1K", "--datatype", "bfloat16", "--op", "max"});
  ASSERT_FALSE(l.exitCode) << l.message;
  EXPECT_EQ(l.options.minBytes, 1024u);
  EXPECT_EQ(l.options.types, std::vector{trncclBfloat16});
  EXPECT_EQ(l.options.ops, std::vector{trncclMax});
}

TEST(PerfOptions, Threads) {
  const ParseResult r = parse({"-t", "3", "-g", "2"});
  ASSERT_FALSE(r.exitCode) << r.message;
  EXPECT_EQ(r.options.threads, 3);
  EXPECT_EQ(r.options.gpus, 2);
  EXPECT_EQ(parse({"--nthreads", "2"}).options.threads, 2);
  EXPECT_FALSE(parse({"-t", std::to_string(kMaxThreads)}).exitCode);
  for (const char* bad : {"0", "-1", "x", "2.5", ""}) {
    const ParseResult b = parse({"-t", bad});
    EXPECT_EQ(b.exitCode, 1) << bad;
    EXPECT_NE(b.message.find("the number of threads per process must be an integer in [1, "),
              std::string::npos)
        << b.message;
  }
  EXPECT_EQ(parse({"-t", std::to_string(kMaxThreads + 1)}).exitCode, 1);
}

TEST(PerfLayout, RanksAsNcclTests) {
  // mpirun -np 2 ... -t 2 -g 3: rank = (process * threads + thread) * gpus + gpu.
  const RankLayout l{2, 2, 3};
  EXPECT_EQ(l.nranks(), 12);
  EXPECT_EQ(l.rank(0, 0, 0), 0);
  EXPECT_EQ(l.rank(0, 0, 2), 2);
  EXPECT_EQ(l.rank(0, 1, 0), 3);
  EXPECT_EQ(l.rank(1, 0, 0), 6);
  EXPECT_EQ(l.rank(1, 1, 2), 11);
  // Every rank exactly once, in process, thread, device order.
  int next = 0;
  for (int p = 0; p < l.processes; ++p) {
    for (int t = 0; t < l.threads; ++t) {
      for (int g = 0; g < l.gpus; ++g) EXPECT_EQ(l.rank(p, t, g), next++);
    }
  }
  // Devices follow the local rank: two processes of one host use devices 0-5 and 6-11.
  EXPECT_EQ(l.device(1, 0, 0), 6);
  EXPECT_EQ(l.device(0, 1, 1), 4);
  // Stand-alone -t 2 -g 2: four ranks, thread 1 on devices 2 and 3.
  const RankLayout alone{1, 2, 2};
  EXPECT_EQ(alone.nranks(), 4);
  EXPECT_EQ(alone.rank(0, 1, 0), 2);
  EXPECT_EQ(alone.device(0, 1, 1), 3);
}

TEST(PerfLayout, ThreadTimesAsAverageFlag) {
  const std::vector<double> t{3.0, 1.0, 8.0, 4.0};
  EXPECT_DOUBLE_EQ(combineThreadTimes(t, TimeAverage::kRank0), 3.0);
  EXPECT_DOUBLE_EQ(combineThreadTimes(t, TimeAverage::kMean), 4.0);
  EXPECT_DOUBLE_EQ(combineThreadTimes(t, TimeAverage::kMin), 1.0);
  EXPECT_DOUBLE_EQ(combineThreadTimes(t, TimeAverage::kMax), 8.0);
  EXPECT_DOUBLE_EQ(combineThreadTimes(std::vector<double>{2.5}, TimeAverage::kMean), 2.5);
  EXPECT_DOUBLE_EQ(combineThreadTimes({}, TimeAverage::kMax), 0.0);
}

TEST(PerfOptions, Rejects) {
  EXPECT_EQ(parse({"-d", "float128"}).exitCode, 1);
  EXPECT_EQ(parse({"-o", "mulsum"}).exitCode, 1);
  EXPECT_EQ(parse({"-b", "2M", "-e", "1M"}).exitCode, 1);
  EXPECT_EQ(parse({"-g", "0"}).exitCode, 1);
  EXPECT_EQ(parse({"-x"}).exitCode, 1);
  EXPECT_EQ(parse({"-h"}).exitCode, 0);
}

TEST(PerfData, InputsAreExactInEveryType) {
  for (trncclDataType_t type : kAllTypes) {
    for (trncclRedOp_t op : kAllOps) {
      const DataKey key{type, op, 5, 3};
      for (int rank = 0; rank < 5; ++rank) {
        for (size_t i = 0; i < 200; ++i) {
          const double v = inputValue(key, rank, i);
          unsigned char buf[8];
          encodeValue(type, v, buf);
          ASSERT_EQ(decodeValue(type, buf), v) << typeInfo(type).name << " " << opName(op);
          if (!typeInfo(type).isSigned) {
            ASSERT_GE(v, 0);
          }
        }
      }
    }
  }
}

TEST(PerfData, NarrowFloatEncodings) {
  unsigned char b[2];
  encodeValue(trncclFloat16, 1.0, b);
  EXPECT_EQ(b[0] | b[1] << 8, 0x3c00);
  encodeValue(trncclBfloat16, -2.0, b);
  EXPECT_EQ(b[0] | b[1] << 8, 0xc000);
  encodeValue(trncclFloat8e4m3, 448.0, b);
  EXPECT_EQ(b[0], 0x7e);
  encodeValue(trncclFloat8e4m3, 1e6, b);  // saturates, no inf in e4m3
  EXPECT_EQ(b[0], 0x7e);
  encodeValue(trncclFloat8e5m2, 1e6, b);  // IEEE-like: inf
  EXPECT_EQ(b[0], 0x7c);
  encodeValue(trncclFloat8e5m2, 1.25, b);  // 1.01b: 0 01111 01
  EXPECT_EQ(b[0], 0x3d);
  b[0] = 0x01;  // smallest e4m3 subnormal 2^-9
  EXPECT_EQ(decodeValue(trncclFloat8e4m3, b), std::ldexp(1.0, -9));
  b[0] = 0x7f;
  EXPECT_TRUE(std::isnan(decodeValue(trncclFloat8e4m3, b)));
  encodeValue(trncclFloat16, 1.0 + std::ldexp(1.0, -11), b);  // tie: rounds to even (1.0)
  EXPECT_EQ(b[0] | b[1] << 8, 0x3c00);
}

TEST(PerfData, ReducedValuesMatchTheInputs) {
  for (trncclDataType_t type : kAllTypes) {
    for (trncclRedOp_t op : kAllOps) {
      const DataKey key{type, op, 4, 1};
      for (size_t i = 0; i < 100; ++i) {
        std::vector<double> in;
        for (int r = 0; r < 4; ++r) in.push_back(inputValue(key, r, i));
        const Expect e = reducedValue(key, i);
        double want = 0;
        switch (op) {
          case trncclSum:
            want = in[0] + in[1] + in[2] + in[3];
            break;
          case trncclProd:
            want = in[0] * in[1] * in[2] * in[3];
            break;
          case trncclMax:
            want = std::max(std::max(in[0], in[1]), std::max(in[2], in[3]));
            break;
          case trncclMin:
            want = std::min(std::min(in[0], in[1]), std::min(in[2], in[3]));
            break;
          default:
            want = in[0] + in[1] + in[2] + in[3];
            want = typeInfo(type).isFloat ? want / 4 : std::trunc(want / 4);
        }
        // 4 ranks: no integer type overflows with this data.
        ASSERT_NEAR(e.value, want, 1e-12) << typeInfo(type).name << " " << opName(op);
        if (!typeInfo(type).isFloat || op == trncclMax || op == trncclMin) {
          ASSERT_EQ(e.tolerance, 0);
        }
      }
    }
  }
}

TEST(PerfData, SmallFloatSumsAreCheckedExactly) {
  // Up to 4 ranks every partial sum is representable even in fp8 e5m2: no tolerance at all.
  for (trncclDataType_t type : kAllTypes) {
    const DataKey key{type, trncclSum, 4, 2};
    for (size_t i = 0; i < 100; ++i) ASSERT_EQ(reducedValue(key, i).tolerance, 0);
  }
  // 64 ranks of e4m3 may round: the bound is (n-1) * eps/2 * sum|x|.
  const DataKey big{trncclFloat8e4m3, trncclSum, 64, 0};
  double sumAbs = 0;
  for (int r = 0; r < 64; ++r) sumAbs += std::fabs(inputValue(big, r, 3));
  const double tol = sumAbs > 8 ? 63 * 0x1p-4 * sumAbs : 0;
  EXPECT_DOUBLE_EQ(reducedValue(big, 3).tolerance, tol);
}

TEST(PerfData, IntegerSumsWrapLikeTheType) {
  // 200 ranks of uint8 values up to 4 overflow 255: the expected value wraps modulo 256.
  const DataKey key{trncclUint8, trncclSum, 200, 0};
  uint64_t sum = 0;
  for (int r = 0; r < 200; ++r) sum += uint64_t(inputValue(key, r, 7));
  EXPECT_EQ(reducedValue(key, 7).value, double(sum % 256));
}

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
