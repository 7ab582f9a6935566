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
  int depth = 0;
  std::vector<std::variant<CollectiveCall, P2pCall>> calls;
  std::vector<InitCall> inits;
  Status error;
};
thread_local Group group;

Status runInits(std::vector<InitCall>& inits) {
  std::vector<std::thread> threads;
  for (auto& init : inits) {
    threads.emplace_back([&init] { runInit(init.handle, init.id, init.config); });
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

bool inGroup() { return group.depth > 0; }

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

extern "C" {

trncclResult_t trncclGroupStart(void) {
  ++group.depth;
  return trncclSuccess;
}

trncclResult_t trncclGroupEnd(void) {
  if (group.depth == 0) {
    return fail(trnccl::Status(trnccl::Code::kInvalidUsage,
                               "trncclGroupEnd without a matching trncclGroupStart"));
  }
  if (--group.depth > 0) return trncclSuccess;
  auto calls = std::move(group.calls);
  auto inits = std::move(group.inits);
  trnccl::Status error = group.error;
  group = trnccl::api::Group{};
  trnccl::Status st = trnccl::api::runInits(inits);
  if (!error) st = error;
  if (st) st = trnccl::api::issue(calls);
  return st ? trncclSuccess : fail(st);
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
