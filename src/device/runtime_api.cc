// The C API of the emulated runtime (include/trnccl/trnrt.h) for devices, memory and streams:
// validates arguments, records a message for trnrtGetLastErrorMessage on every failure
// (api_util.h), and hands off to device::. Events are in event_api.cc.
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <string>

#include "device/api_util.h"
#include "device/device.h"
#include "device/stream.h"
#include "trnccl/trnrt.h"

namespace trnccl::device {
namespace {

// Runs `task` ordered after the work already on the current device's default stream and waits
// for it. Inline when called from that stream's own worker, where enqueue-and-wait would
// deadlock and the order already holds.
trnrtError_t runOnDefaultStream(Task task) {
  trnrtError_t error = trnrtSuccess;
  Result<trnrtStream*> stream = resolveOrFail(nullptr, &error);
  if (!stream) return error;
  if (Stream::current() == stream.value()) {
    Status status = task();
    return status.isOk() ? trnrtSuccess : fail(trnrtErrorLaunchFailure, status.message());
  }
  uint64_t sequence = stream.value()->enqueue(std::move(task));
  return streamResult(stream.value()->waitFor(sequence));
}

trnrtError_t checkCopy(const char* api, void* dst, const void* src, size_t count, int kind) {
  if (kind < trnrtMemcpyHostToHost || kind > trnrtMemcpyDefault) {
    return fail(trnrtErrorInvalidValue, fmt::format("{}: invalid memcpy kind {}", api, kind));
  }
  if (count > 0 && (dst == nullptr || src == nullptr)) {
    return fail(
        trnrtErrorInvalidValue,
        fmt::format("{}: null pointer (dst={}, src={}) for {} bytes", api, dst, src, count));
  }
  return trnrtSuccess;
}

Task copyTask(void* dst, const void* src, size_t count) {
  return [dst, src, count] {
    std::memcpy(dst, src, count);
    return Status::ok();
  };
}

}  // namespace
}  // namespace trnccl::device

using namespace trnccl::device;  // NOLINT: the C entry points below are thin wrappers

extern "C" {

trnrtError_t trnrtGetDeviceCount(int* count) {
  if (count == nullptr) return fail(trnrtErrorInvalidValue, "trnrtGetDeviceCount: null count");
  *count = deviceCount();
  return trnrtSuccess;
}

trnrtError_t trnrtSetDevice(int device) {
  if (!validDevice(device)) {
    return fail(trnrtErrorInvalidDevice, fmt::format("trnrtSetDevice: invalid device {} ({} "
                                                     "devices)",
                                                     device, deviceCount()));
  }
  setCurrentDevice(device);
  return trnrtSuccess;
}

trnrtError_t trnrtGetDevice(int* device) {
  if (device == nullptr) return fail(trnrtErrorInvalidValue, "trnrtGetDevice: null device");
  *device = currentDevice();
  return trnrtSuccess;
}

trnrtError_t trnrtDeviceSynchronize(void) {
  trnccl::Result<Device*> device = getDevice(currentDevice());
  if (!device) return deviceError(device.status());
  Stream* self = Stream::current();
  if (self != nullptr && self->device() == device.value()->index()) {
    return fail(trnrtErrorInvalidValue,
                "trnrtDeviceSynchronize: called from a task of the same device (would deadlock)");
  }
  return streamResult(device.value()->synchronize());
}

// A size of 0 returns a unique, valid pointer to a 256-byte block (so it can be freed and
// located like any other allocation), never nullptr.
trnrtError_t trnrtMalloc(void** devPtr, size_t size) {
  if (devPtr == nullptr) return fail(trnrtErrorInvalidValue, "trnrtMalloc: null devPtr");
  *devPtr = nullptr;
  trnccl::Result<Device*> device = getDevice(currentDevice());
  if (!device) return deviceError(device.status());
  trnccl::Result<void*> ptr = device.value()->arena().allocate(size);
  if (!ptr) return fail(trnrtErrorMemoryAllocation, ptr.status().message());
  *devPtr = ptr.value();
  return trnrtSuccess;
}

trnrtError_t trnrtFree(void* devPtr) {
  if (devPtr == nullptr) return trnrtSuccess;
  Device* device = findDevice(devPtr);
  if (device == nullptr) {
    return fail(trnrtErrorInvalidValue, fmt::format("trnrtFree: {} is not device memory", devPtr));
  }
  trnccl::Status status = device->arena().free(devPtr);
  return status.isOk() ? trnrtSuccess : fail(trnrtErrorInvalidValue, status.message());
}

trnrtError_t trnrtMemcpy(void* dst, const void* src, size_t count, trnrtMemcpyKind kind) {
  trnrtError_t error = checkCopy("trnrtMemcpy", dst, src, count, kind);
  if (error != trnrtSuccess || count == 0) return error;
  return runOnDefaultStream(copyTask(dst, src, count));
}

trnrtError_t trnrtMemcpyAsync(void* dst, const void* src, size_t count, trnrtMemcpyKind kind,
                              trnrtStream_t stream) {
  trnrtError_t error = checkCopy("trnrtMemcpyAsync", dst, src, count, kind);
  if (error != trnrtSuccess || count == 0) return error;
  trnccl::Result<trnrtStream*> resolved = resolveOrFail(stream, &error);
  if (!resolved) return error;
  resolved.value()->enqueue(copyTask(dst, src, count));
  return trnrtSuccess;
}

trnrtError_t trnrtMemset(void* devPtr, int value, size_t count) {
  if (count == 0) return trnrtSuccess;
  if (devPtr == nullptr) {
    return fail(trnrtErrorInvalidValue,
                fmt::format("trnrtMemset: null pointer for {} bytes", count));
  }
  return runOnDefaultStream([devPtr, value, count] {
    std::memset(devPtr, value, count);
    return trnccl::Status::ok();
  });
}

trnrtError_t trnrtStreamCreate(trnrtStream_t* stream) {
  if (stream == nullptr) return fail(trnrtErrorInvalidValue, "trnrtStreamCreate: null stream");
  trnccl::Result<Device*> device = getDevice(currentDevice());
  if (!device) return deviceError(device.status());
  *stream = device.value()->createStream();
  return trnrtSuccess;
}

trnrtError_t trnrtStreamDestroy(trnrtStream_t stream) {
  if (stream == nullptr) {
    return fail(trnrtErrorInvalidResourceHandle,
                "trnrtStreamDestroy: the default stream cannot be destroyed");
  }
  if (Stream::current() == stream) {
    return fail(trnrtErrorInvalidValue, "trnrtStreamDestroy: called from the stream's own task");
  }
  trnccl::Result<Device*> device = getDevice(stream->device());
  if (!device) return deviceError(device.status());
  trnccl::Status status = device.value()->destroyStream(stream);
  return status.isOk() ? trnrtSuccess : fail(trnrtErrorInvalidResourceHandle, status.message());
}

trnrtError_t trnrtStreamSynchronize(trnrtStream_t stream) {
  trnrtError_t error = trnrtSuccess;
  trnccl::Result<trnrtStream*> resolved = resolveOrFail(stream, &error);
  if (!resolved) return error;
  if (Stream::current() == resolved.value()) {
    return fail(trnrtErrorInvalidValue,
                "trnrtStreamSynchronize: called from the stream's own task (would deadlock)");
  }
  return streamResult(resolved.value()->synchronize());
}

trnrtError_t trnrtStreamQuery(trnrtStream_t stream) {
  trnrtError_t error = trnrtSuccess;
  trnccl::Result<trnrtStream*> resolved = resolveOrFail(stream, &error);
  if (!resolved) return error;
  trnccl::Status status = resolved.value()->query();
  if (status.code() == trnccl::Code::kInProgress) return trnrtErrorNotReady;
  return streamResult(status);
}

// The callback runs in the task when the stream is healthy and in the skip handler when it is
// in error; the handler first records the stream's message as the worker's last error, so the
// callback can read it with trnrtGetLastErrorMessage.
trnrtError_t trnrtStreamAddCallback(trnrtStream_t stream, trnrtStreamCallback_t callback,
                                    void* userData, unsigned int flags) {
  if (callback == nullptr) {
    return fail(trnrtErrorInvalidValue, "trnrtStreamAddCallback: null callback");
  }
  if (flags != 0) {
    return fail(trnrtErrorInvalidValue,
                fmt::format("trnrtStreamAddCallback: flags must be 0, got {}", flags));
  }
  trnrtError_t error = trnrtSuccess;
  trnccl::Result<trnrtStream*> resolved = resolveOrFail(stream, &error);
  if (!resolved) return error;
  trnrtStream* s = resolved.value();
  s->enqueue(
      [s, callback, userData] {
        callback(s, trnrtSuccess, userData);
        return trnccl::Status::ok();
      },
      [s, callback, userData](const trnccl::Status& status) {
        callback(s, fail(trnrtErrorLaunchFailure, status.message()), userData);
      });
  return trnrtSuccess;
}

}  // extern "C"
