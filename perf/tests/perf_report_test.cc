// Unit tests of the benchmark arithmetic: bandwidths, number formatting, size parsing and
// sweeps, option parsing, -t/-g rank numbering and time reductions. The data model is tested in
// perf_data_test.cc, the collectives' descriptors in perf_collectives_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

// --rewrite_send (no short form: nccl-tests' letters stay free), off by default.
TEST(PerfOptions, RewriteSend) {
  EXPECT_EQ(parse({}).options.rewriteSend, 0);
  const ParseResult r = parse({"--rewrite_send", "1", "-n", "2"});
  ASSERT_FALSE(r.exitCode) << r.message;
  EXPECT_EQ(r.options.rewriteSend, 1);
  EXPECT_EQ(r.options.iters, 2);
  const ParseResult b = parse({"--rewrite_send", "2"});
  EXPECT_EQ(b.exitCode, 1);
  EXPECT_NE(b.message.find("invalid value '2' for --rewrite_send"), std::string::npos) << b.message;
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

}  // namespace
}  // namespace trnccl::perf
