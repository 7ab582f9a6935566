// trncclGroupStart/End and point-to-point calls.
//
// Inside a group (per thread, nestable) calls are recorded and issued by the outermost
// trncclGroupEnd: first the communicator inits of the group, concurrently (so one thread can
// create several communicators); then, in call order, each collective, and each communicator's
// sends and receives as one schedule (algorithms/p2p/batch.cc) at the place of its first one.
// If any call of the group failed, GroupEnd issues nothing and returns that error.
#include <map>
#include <thread>
#include <variant>
#include <vector>

#include "api/enqueue.h"
#include "common/log.h"
#include "common/thread.h"
#include "sim/simulate.h"

namespace trnccl::api {
namespace {

struct CollectiveCall {
  const char* what;
  trncclComm_t comm;
  algorithms::CollArgs args;
  trnrtStream_t stream;
  std::optional<PreMul> premul;
};
struct P2pCall {
  trncclComm_t comm;
  algorithms::p2p::Op op;
  trnrtStream_t stream;
};
struct InitCall {
  trncclComm* handle;
  bootstrap::UniqueId id;
  comm::Config config;
};

struct Group {
  std::vector<std::variant<CollectiveCall, P2pCall>> calls;
  std::vector<InitCall> inits;
  Status error;
};
thread_local Group group;
// The nesting depth, apart from the group's calls: every collective asks inGroup(), and a
// thread_local of a trivial type is read without the lazy-initialisation guard that `group`
// (vectors, a Status) costs on each access (two __tls_get_addr calls, ~35 instructions).
thread_local int groupDepth = 0;

Status runInits(std::vector<InitCall>& inits) {
  std::vector<std::thread> threads;
  for (auto& init : inits) {
    threads.push_back(startThread([&init] { runInit(init.handle, init.id, init.config); }));
  }
  for (auto& t : threads) t.join();
  for (auto& init : inits) {
    if (!init.handle->impl) return init.handle->initStatus;
  }
  return Status::ok();
}

Status issue(const std::vector<std::variant<CollectiveCall, P2pCall>>& calls) {
  std::map<trncclComm_t, std::vector<algorithms::p2p::Op>> p2pOps;
  for (const auto& call : calls) {
    if (auto* p = std::get_if<P2pCall>(&call)) p2pOps[p->comm].push_back(p->op);
  }
  for (const auto& call : calls) {
    if (auto* c = std::get_if<CollectiveCall>(&call)) {
      auto comm = usable(c->comm);
      if (!comm) return comm.status();
      TRN_TRY(enqueueNow(c->what, **comm, c->args, c->stream, c->premul));
      continue;
    }
    const auto& p = std::get<P2pCall>(call);
    auto ops = p2pOps.find(p.comm);
    if (ops == p2pOps.end()) continue;  // already issued with the comm's first one
    auto comm = usable(p.comm);
    if (!comm) return comm.status();
    auto s = algorithms::p2p::batch(ops->second, (*comm)->rank(), (*comm)->nranks());
    std::string what = fmt::format("send/recv group of {} op(s)", ops->second.size());
    TRN_TRY(enqueueSchedule(**comm, std::move(s), p.stream, what, false));
    p2pOps.erase(ops);
  }
  return Status::ok();
}

// The simulator of a communicator's calls: its modelled topology, its pipeline slice.
Result<sim::Simulator> simulatorOf(const comm::Communicator& c) {
  sim::EngineOptions options;
  options.eagerBytes = 4 * c.sliceBytes();  // a connection's buffer holds four slices
  return sim::Simulator::create(c.topology(), options);
}

// The calls' time one after the other (trncclGroupSimulateEnd), from trnccl-sim's model: each
// collective as the tuner would run it, each communicator's sends and receives as one batch.
Result<double> simulate(const std::vector<std::variant<CollectiveCall, P2pCall>>& calls) {
  std::map<trncclComm_t, std::vector<algorithms::p2p::Op>> p2pOps;
  for (const auto& call : calls) {
    if (auto* p = std::get_if<P2pCall>(&call)) p2pOps[p->comm].push_back(p->op);
  }
  double total = 0;
  for (const auto& call : calls) {
    const trncclComm_t handle =
        std::visit([](const auto& c) { return static_cast<trncclComm_t>(c.comm); }, call);
    auto comm = usable(handle);
    if (!comm) return comm.status();
    auto simulator = simulatorOf(**comm);
    if (!simulator) return simulator.status();
    if (auto* c = std::get_if<CollectiveCall>(&call)) {
      algorithms::CollArgs args = c->args;
      args.sliceBytes = (*comm)->sliceBytes();
      const bool rooted = args.coll == algorithms::Collective::kBroadcast ||
                          args.coll == algorithms::Collective::kReduce;
      if (rooted && (args.root < 0 || args.root >= (*comm)->nranks())) {
        return invalidArgument("{}: root {} not in [0, {})", c->what, args.root, (*comm)->nranks());
      }
      auto run = simulator->collective(args);
      if (!run) return run.status();
      total += run->outcome.timeUs;
      continue;
    }
    auto ops = p2pOps.find(handle);
    if (ops == p2pOps.end()) continue;  // already counted with the comm's first one
    auto out = simulator->pointToPoint((*comm)->rank(), ops->second);
    if (!out) return out.status();
    total += out->timeUs;
    p2pOps.erase(ops);
  }
  return total;
}

using Calls = std::vector<std::variant<CollectiveCall, P2pCall>>;

// Closes one level of the group (`who`: the function). At the outermost level, takes the group's
// calls into `calls` and runs its inits; `outermost` says which. An error: the group's first.
Status closeGroup(const char* who, Calls& calls, bool& outermost) {
  outermost = false;
  if (groupDepth == 0) {
    return Status(Code::kInvalidUsage, fmt::format("{} without a matching trncclGroupStart", who));
  }
  if (--groupDepth > 0) return Status::ok();
  outermost = true;
  calls = std::move(group.calls);
  auto inits = std::move(group.inits);
  Status error = group.error;
  group = Group{};
  Status st = runInits(inits);
  return error ? st : error;
}

trncclResult_t p2pCall(const char* what, bool send, void* buf, size_t count, trncclDataType_t type,
                       int peer, trncclComm_t comm, trnrtStream_t stream) {
  if (Status s = checkArgs(what, buf, buf, count, type, trncclSum, false); !s) return fail(s);
  if (comm == nullptr) return fail(invalidArgument("{}: comm is NULL", what));
  if (peer < 0 || peer >= comm->nranks) {
    return fail(invalidArgument("{}: peer {} not in [0, {})", what, peer, comm->nranks));
  }
  algorithms::p2p::Op op{.send = send,
                         .peer = peer,
                         .buf = buf,
                         .count = count,
                         .type = static_cast<device::DataType>(type)};
  if (inGroup()) {
    recordP2p(comm, op, stream);
    return trncclSuccess;
  }
  Status st = issue({P2pCall{comm, op, stream}});
  return st ? trncclSuccess : fail(st);
}

}  // namespace

bool inGroup() { return groupDepth > 0; }

void recordCollective(const char* what, trncclComm_t comm, algorithms::CollArgs args,
                      trnrtStream_t stream, std::optional<PreMul> premul) {
  group.calls.push_back(CollectiveCall{what, comm, args, stream, premul});
}

void recordP2p(trncclComm_t comm, const algorithms::p2p::Op& op, trnrtStream_t stream) {
  group.calls.push_back(P2pCall{comm, op, stream});
}

void recordInit(trncclComm* handle, const bootstrap::UniqueId& id, const comm::Config& config) {
  group.inits.push_back(InitCall{handle, id, config});
}

void recordGroupError(const Status& status) {
  if (group.error.isOk()) group.error = status;
}

}  // namespace trnccl::api

using trnccl::api::fail;
using trnccl::api::group;
using trnccl::api::groupDepth;

extern "C" {

trncclResult_t trncclGroupStart(void) {
  ++groupDepth;
  return trncclSuccess;
}

trncclResult_t trncclGroupEnd(void) {
  trnccl::api::Calls calls;
  bool outermost = false;
  trnccl::Status st = trnccl::api::closeGroup("trncclGroupEnd", calls, outermost);
  if (st && outermost) st = trnccl::api::issue(calls);
  return st ? trncclSuccess : fail(st);
}

trncclResult_t trncclGroupSimulateEnd(trncclSimInfo_t* simInfo) {
  if (simInfo == nullptr) {
    return fail(trnccl::invalidArgument("trncclGroupSimulateEnd: simInfo is NULL"));
  }
  if (simInfo->magic != TRNCCL_SIM_INFO_MAGIC || simInfo->size < sizeof(trncclSimInfo_t)) {
    return fail(trnccl::invalidArgument(
        "trncclGroupSimulateEnd: simInfo was not set up with TRNCCL_SIM_INFO_INITIALIZER "
        "(size {}, magic {:#x})",
        simInfo->size, simInfo->magic));
  }
  trnccl::api::Calls calls;
  bool outermost = false;
  trnccl::Status st = trnccl::api::closeGroup("trncclGroupSimulateEnd", calls, outermost);
  if (!st) return fail(st);
  if (!outermost) return trncclSuccess;
  auto us = trnccl::api::simulate(calls);
  if (!us) return fail(us.status());
  simInfo->estimatedTime = static_cast<float>(*us);
  return trncclSuccess;
}

trncclResult_t trncclSend(const void* sendbuff, size_t count, trncclDataType_t datatype, int peer,
                          trncclComm_t comm, trnrtStream_t stream) {
  return trnccl::api::p2pCall("trncclSend", true, const_cast<void*>(sendbuff), count, datatype,
                              peer, comm, stream);
}

trncclResult_t trncclRecv(void* recvbuff, size_t count, trncclDataType_t datatype, int peer,
                          trncclComm_t comm, trnrtStream_t stream) {
  return trnccl::api::p2pCall("trncclRecv", false, recvbuff, count, datatype, peer, comm, stream);
}

}  // extern "C"
