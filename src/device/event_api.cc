// The C API for events (include/trnccl/trnrt.h). The semantics live in event.h.
#include <fmt/format.h>

#include <chrono>
#include <memory>

#include "device/api_util.h"
#include "device/event.h"
#include "device/stream.h"
#include "trnccl/trnrt.h"

// The opaque event handle: owns one reference to the shared event state, which pending records
// and waits also hold, so destroying a handle with work in flight is safe.
struct trnrtEvent {
  std::shared_ptr<trnccl::device::Event> impl = std::make_shared<trnccl::device::Event>();
};

using namespace trnccl::device;  // NOLINT: the C entry points below are thin wrappers

namespace {

trnrtError_t nullEvent(const char* api) {
  return fail(trnrtErrorInvalidResourceHandle, fmt::format("{}: null event", api));
}

// An event's state as a C result: kInProgress is trnrtErrorNotReady, a never-recorded event
// (for timing) trnrtErrorInvalidResourceHandle as in CUDA, a failed record
// trnrtErrorLaunchFailure.
trnrtError_t eventResult(const trnccl::Status& status) {
  if (status.code() == trnccl::Code::kInProgress) return trnrtErrorNotReady;
  if (status.code() == trnccl::Code::kInvalidArgument) {
    return fail(trnrtErrorInvalidResourceHandle, status.message());
  }
  return streamResult(status);
}

}  // namespace

extern "C" {

trnrtError_t trnrtEventCreate(trnrtEvent_t* event) {
  if (event == nullptr) return fail(trnrtErrorInvalidValue, "trnrtEventCreate: null event");
  *event = new trnrtEvent();
  return trnrtSuccess;
}

trnrtError_t trnrtEventDestroy(trnrtEvent_t event) {
  if (event == nullptr) return nullEvent("trnrtEventDestroy");
  delete event;
  return trnrtSuccess;
}

trnrtError_t trnrtEventRecord(trnrtEvent_t event, trnrtStream_t stream) {
  if (event == nullptr) return nullEvent("trnrtEventRecord");
  trnrtError_t error = trnrtSuccess;
  trnccl::Result<trnrtStream*> resolved = resolveOrFail(stream, &error);
  if (!resolved) return error;
  event->impl->record(*resolved.value());
  return trnrtSuccess;
}

trnrtError_t trnrtEventSynchronize(trnrtEvent_t event) {
  if (event == nullptr) return nullEvent("trnrtEventSynchronize");
  return streamResult(event->impl->synchronize());
}

trnrtError_t trnrtEventQuery(trnrtEvent_t event) {
  if (event == nullptr) return nullEvent("trnrtEventQuery");
  return eventResult(event->impl->query());
}

trnrtError_t trnrtEventElapsedTime(float* ms, trnrtEvent_t start, trnrtEvent_t end) {
  if (ms == nullptr) return fail(trnrtErrorInvalidValue, "trnrtEventElapsedTime: null ms");
  if (start == nullptr || end == nullptr) return nullEvent("trnrtEventElapsedTime");
  auto from = start->impl->timestamp();
  if (!from) return eventResult(from.status());
  auto to = end->impl->timestamp();
  if (!to) return eventResult(to.status());
  *ms = std::chrono::duration<float, std::milli>(to.value() - from.value()).count();
  return trnrtSuccess;
}

// The wait covers the event as recorded now: a later re-record does not change what the
// stream waits for. If that record failed, the waiting stream fails too.
trnrtError_t trnrtStreamWaitEvent(trnrtStream_t stream, trnrtEvent_t event, unsigned int flags) {
  if (event == nullptr) return nullEvent("trnrtStreamWaitEvent");
  if (flags != 0) {
    return fail(trnrtErrorInvalidValue,
                fmt::format("trnrtStreamWaitEvent: flags must be 0, got {}", flags));
  }
  trnrtError_t error = trnrtSuccess;
  trnccl::Result<trnrtStream*> resolved = resolveOrFail(stream, &error);
  if (!resolved) return error;
  std::shared_ptr<Event> shared = event->impl;
  uint64_t generation = shared->generation();
  if (generation == 0) return trnrtSuccess;  // never recorded: nothing to wait for
  resolved.value()->enqueue([shared, generation] { return shared->waitFor(generation); });
  return trnrtSuccess;
}

}  // extern "C"
