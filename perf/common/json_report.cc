#include "common/json_report.h"

#include <fmt/format.h>

#include <cstdio>

#include "trnccl/trnccl.h"

namespace trnccl::perf {
namespace {

std::string number(double v) { return v == v ? fmt::format("{}", v) : "\"nan\""; }

std::string half(const JsonHalf& h) {
  return fmt::format(R"({{"time":{},"alg_bw":{},"bus_bw":{},"nwrong":{}}})", number(h.timeUs),
                     number(h.algBw), number(h.busBw),
                     h.checked ? fmt::format("{}", h.wrong) : "null");
}

}  // namespace

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", int(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

bool JsonReport::write(const std::string& path, const Options& o, int nranks, int64_t errors,
                       double avgBusBw) const {
  std::string doc = "{\"version\":1,\"args\":[";
  for (size_t i = 0; i < args_.size(); ++i) doc += (i ? "," : "") + jsonString(args_[i]);
  int version = 0;
  trncclGetVersion(&version);
  doc += fmt::format(
      "],\"trnccl_version\":{},\"config\":{{\"nthreads\":{},\"ngpus\":{},\"nranks\":{},"
      "\"minimum_bytes\":{},\"maximum_bytes\":{},\"{}\":{},\"warmup_iters\":{},"
      "\"iterations\":{},\"validation\":{},\"blocking_collectives\":{},\"bandwidth_unit\":"
      "\"GB/s (1e9 B/s)\"}},\"results\":[",
      version, o.threads, o.gpus, nranks, o.minBytes, o.maxBytes,
      o.stepFactor > 1 ? "step_factor" : "step_bytes",
      o.stepFactor > 1 ? o.stepFactor : o.stepBytes, o.warmupIters, o.iters, o.check, o.blocking);
  for (size_t i = 0; i < rows_.size(); ++i) {
    const JsonRow& r = rows_[i];
    doc += fmt::format(
        "{}{{\"size\":{},\"count\":{},\"type\":{},\"redop\":{},\"root\":{},\"out_of_place\":{},"
        "\"in_place\":{}}}",
        i ? "," : "", r.size, r.count, jsonString(r.type), jsonString(r.redop), r.root,
        half(r.outOfPlace), r.inPlace ? half(*r.inPlace) : std::string("null"));
  }
  doc += fmt::format(
      "],\"out_of_bounds\":{{\"count\":{},\"okay\":{}}},\"average_bus_bandwidth\":"
      "{{\"bandwidth\":{}}}}}\n",
      errors, errors == 0 ? "true" : "false", number(avgBusBw));
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "# skipping json output; %s not accessible\n", path.c_str());
    return false;
  }
  const bool ok = std::fwrite(doc.data(), 1, doc.size(), f) == doc.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace trnccl::perf
