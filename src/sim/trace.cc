#include "sim/trace.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>

namespace trnccl::sim {
namespace {

constexpr int kRanksPid = 1;
constexpr int kLinksPid = 2;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// JSON string contents: the names written here hold no quotes or backslashes but a title might.
std::string escaped(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

}  // namespace

Status writeChromeTrace(const Recorder& rec, const Fabric& fabric, const std::string& title,
                        const std::string& path) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "w"));
  if (!f) return invalidArgument("trace file {}: {}", path, std::strerror(errno));
  std::FILE* out = f.get();
  fmt::print(out, "{{\"displayTimeUnit\": \"ns\", \"otherData\": {{\"title\": \"{}\"}},\n",
             escaped(title));
  fmt::print(out, "\"traceEvents\": [\n");
  fmt::print(out,
             "{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {}, \"args\": {{\"name\": "
             "\"ranks\"}}}},\n",
             kRanksPid);
  fmt::print(out,
             "{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {}, \"args\": {{\"name\": "
             "\"links\"}}}}",
             kLinksPid);
  std::set<int> ranks, busy;
  for (const auto& s : rec.steps) ranks.insert(s.rank);
  for (const auto& t : rec.transfers) busy.insert(t.resource);
  for (int r : ranks) {
    fmt::print(out,
               ",\n{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": {}, "
               "\"args\": {{\"name\": \"rank {}\"}}}}",
               kRanksPid, r, r);
  }
  for (int res : busy) {
    fmt::print(out,
               ",\n{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": {}, "
               "\"args\": {{\"name\": \"{}\"}}}}",
               kLinksPid, res, fabric.resourceName(res));
  }
  for (const auto& s : rec.steps) {
    fmt::print(out,
               ",\n{{\"ph\": \"X\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, \"ts\": {:.4f}, "
               "\"dur\": {:.4f}, \"args\": {{\"step\": {}, \"from\": {}, \"to\": {}, \"bytes\": "
               "{}}}}}",
               schedule::primitiveName(s.prim), kRanksPid, s.rank, s.beginUs, s.endUs - s.beginUs,
               s.step, s.recvPeer, s.sendPeer, s.bytes);
  }
  for (const auto& t : rec.transfers) {
    fmt::print(out,
               ",\n{{\"ph\": \"X\", \"name\": \"{} -> {}\", \"pid\": {}, \"tid\": {}, \"ts\": "
               "{:.4f}, \"dur\": {:.4f}, \"args\": {{\"bytes\": {}}}}}",
               t.from, t.to, kLinksPid, t.resource, t.startUs, t.endUs - t.startUs, t.bytes);
  }
  fmt::print(out, "\n]}}\n");
  if (std::ferror(out)) return invalidArgument("trace file {}: write failed", path);
  return Status::ok();
}

}  // namespace trnccl::sim
