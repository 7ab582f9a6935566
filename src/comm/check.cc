#include "comm/check.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <vector>

#include "comm/communicator.h"
#include "common/bytes.h"
#include "device/reduce.h"

namespace trnccl::comm::check {
namespace {

using bytes::get;
using bytes::put;

std::string collName(int32_t c) {
  if (c < 0 || c >= static_cast<int32_t>(std::size(algorithms::kCollectives))) {
    return fmt::format("collective#{}", c);
  }
  return algorithms::collectiveName(static_cast<algorithms::Collective>(c));
}

std::string typeName(int32_t t) {
  if (t < 0 || t >= device::kNumDataTypes) return fmt::format("datatype#{}", t);
  return device::dataTypeName(static_cast<device::DataType>(t));
}

std::string opName(int32_t o) {
  if (o == -1) return "-";
  if (o < 0 || o > static_cast<int32_t>(device::RedOp::kAvg)) return fmt::format("op#{}", o);
  return device::redOpName(static_cast<device::RedOp>(o));
}

std::string algoName(const Fingerprint& fp) {
  const char* s = fp.algorithm.data();
  std::string name(s, strnlen(s, fp.algorithm.size()));
  // A peer's bytes: keep messages printable.
  for (char& c : name) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return name;
}

}  // namespace

Fingerprint make(const algorithms::CollArgs& args, const std::string& algorithm) {
  using algorithms::Collective;
  Fingerprint fp;
  fp.coll = static_cast<int32_t>(args.coll);
  fp.type = static_cast<int32_t>(args.type);
  fp.count = args.count;
  fp.op = algorithms::reduces(args.coll) ? static_cast<int32_t>(args.op) : -1;
  fp.root = algorithms::rooted(args.coll) ? args.root : -1;
  size_t n = std::min(algorithm.size(), fp.algorithm.size() - 1);
  std::memcpy(fp.algorithm.data(), algorithm.data(), n);
  return fp;
}

void encode(const Fingerprint& fp, std::byte out[kWireBytes]) {
  put<uint64_t>(out + 0, fp.seq);
  put<uint32_t>(out + 8, static_cast<uint32_t>(fp.coll));
  put<uint32_t>(out + 12, static_cast<uint32_t>(fp.type));
  put<uint64_t>(out + 16, fp.count);
  put<uint32_t>(out + 24, static_cast<uint32_t>(fp.op));
  put<uint32_t>(out + 28, static_cast<uint32_t>(fp.root));
  std::memcpy(out + 32, fp.algorithm.data(), fp.algorithm.size());
}

Fingerprint decode(const std::byte in[kWireBytes]) {
  Fingerprint fp;
  fp.seq = get<uint64_t>(in + 0);
  fp.coll = static_cast<int32_t>(get<uint32_t>(in + 8));
  fp.type = static_cast<int32_t>(get<uint32_t>(in + 12));
  fp.count = get<uint64_t>(in + 16);
  fp.op = static_cast<int32_t>(get<uint32_t>(in + 24));
  fp.root = static_cast<int32_t>(get<uint32_t>(in + 28));
  std::memcpy(fp.algorithm.data(), in + 32, fp.algorithm.size());
  return fp;
}

std::string describe(const Fingerprint& fp) {
  return fmt::format("{} #{} count {} {} op {} root {} ({})", collName(fp.coll), fp.seq, fp.count,
                     typeName(fp.type), opName(fp.op), fp.root, algoName(fp));
}

Status compare(std::span<const Fingerprint> all, const std::string& what) {
  if (all.empty()) return Status::ok();
  const Fingerprint& a = all[0];
  for (size_t r = 1; r < all.size(); ++r) {
    const Fingerprint& b = all[r];
    if (a == b) continue;
    std::string field, va, vb;
    if (a.seq != b.seq) {
      field = "sequence number", va = fmt::format("{}", a.seq), vb = fmt::format("{}", b.seq);
    } else if (a.coll != b.coll) {
      field = "collective", va = collName(a.coll), vb = collName(b.coll);
    } else if (a.count != b.count) {
      field = "count", va = fmt::format("{}", a.count), vb = fmt::format("{}", b.count);
    } else if (a.type != b.type) {
      field = "datatype", va = typeName(a.type), vb = typeName(b.type);
    } else if (a.op != b.op) {
      field = "reduction op", va = opName(a.op), vb = opName(b.op);
    } else if (a.root != b.root) {
      field = "root", va = fmt::format("{}", a.root), vb = fmt::format("{}", b.root);
    } else {
      field = "algorithm (TRNCCL_ALGO or topology differs?)", va = algoName(a), vb = algoName(b);
    }
    return Status(Code::kInvalidUsage,
                  fmt::format("{}: TRNCCL_CHECK: ranks disagree on the {}: rank 0 has {}, rank {} "
                              "has {} (rank 0: {}; rank {}: {})",
                              what, field, va, r, vb, describe(a), r, describe(b)),
                  static_cast<int>(r));
  }
  return Status::ok();
}

schedule::Schedule exchangeSchedule(int rank, int nranks, const std::byte* mine, std::byte* all) {
  schedule::Schedule s;
  s.algorithm = "check";
  s.type = device::DataType::kUint8;
  s.nranks = nranks;
  using schedule::Primitive;
  std::vector<schedule::Step> exchange;  // one group: every send and receive at once
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    exchange.push_back({.prim = Primitive::kSend, .sendPeer = p, .src = mine, .count = kWireBytes});
    exchange.push_back({.prim = Primitive::kRecv,
                        .recvPeer = p,
                        .dst = all + p * kWireBytes,
                        .count = kWireBytes});
  }
  s.addGroup(std::move(exchange));
  return s;
}

Status verify(Communicator& comm, Fingerprint fp, uint64_t seq, const std::string& what) {
  const int n = comm.nranks();
  if (n < 2) return Status::ok();
  fp.seq = seq;
  std::vector<std::byte> mine(kWireBytes), all(kWireBytes * static_cast<size_t>(n));
  encode(fp, mine.data());
  std::memcpy(all.data() + static_cast<size_t>(comm.rank()) * kWireBytes, mine.data(), kWireBytes);
  schedule::Schedule s = exchangeSchedule(comm.rank(), n, mine.data(), all.data());
  const std::string exchange = what + " [TRNCCL_CHECK exchange]";
  TRN_TRY(comm.run(s, seq, schedule::CallName(exchange.c_str())));
  std::vector<Fingerprint> prints;
  for (int r = 0; r < n; ++r) prints.push_back(decode(all.data() + r * kWireBytes));
  Status st = compare(prints, what);
  if (!st) comm.setAsyncError(st);
  return st;
}

}  // namespace trnccl::comm::check
