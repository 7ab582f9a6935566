// The emulated runtime's C++ side, used by the collectives library: enqueue work on a stream,
// find which device owns a pointer (so same-host peers can map it), and the element types and
// reduction kernels. The C API in include/trnccl/trnrt.h is a thin layer over this.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <utility>

#include "common/inline_function.h"
#include "common/memory_location.h"
#include "common/status.h"
#include "trnccl/trnrt.h"

namespace trnccl::device {

// Work executed in order by a stream's worker. An error Status puts the stream in error: later
// tasks are skipped and trnrtStreamSynchronize reports it. Captures live in the stream's ring
// slot (common/inline_function.h): enqueueing never allocates, and captures over kTaskBytes
// do not compile.
inline constexpr size_t kTaskBytes = 64;
using Task = InlineFunction<Status(), kTaskBytes>;
// Called instead of a task when its stream is already in error.
using SkipHandler = InlineFunction<void(const Status&), kTaskBytes>;

// Enqueues `task` on `stream` (nullptr: the current device's default stream). Returns at once.
// If the stream is already in error when the task's turn comes, the task is skipped and
// `onSkip` (if any) is called with the stream's error instead.
// Both are moved from once, into the stream's ring slot (taken by reference: a task passed on by
// value was moved through every layer on its way).
Status enqueue(trnrtStream_t stream, Task&& task, SkipHandler&& onSkip = nullptr);

// A claimed ring slot of a stream (claimSlot): its task and skip handler are empty.
struct TaskSlot {
  Task* task;
  SkipHandler* onSkip;
  uint64_t sequence;
};
// enqueue() in two halves, for enqueueInPlace: claimSlot takes the stream's producers' lock and
// waits for a free slot; publishSlot hands the slot to the runner and releases the lock.
TaskSlot claimSlot(trnrtStream_t stream);
void publishSlot(trnrtStream_t stream, uint64_t sequence);

// enqueue() on a given stream (not nullptr) for callables built in the stream's slot itself: no
// Task is built, moved through enqueue and destroyed on the way (issue 14: ~60 instructions of a
// small collective's call). Like enqueue, returns at once.
template <typename F, typename S>
void enqueueInPlace(trnrtStream_t stream, F&& task, S&& onSkip) {
  TaskSlot slot = claimSlot(stream);
  // The slot's functions are empty (the runner resets them): nothing to destroy first. A callable
  // moves without throwing (InlineFunction's requirement), so the lock is always released.
  ::new (static_cast<void*>(slot.task)) Task(std::forward<F>(task));
  ::new (static_cast<void*>(slot.onSkip)) SkipHandler(std::forward<S>(onSkip));
  publishSlot(stream, slot.sequence);
}

// The calling thread's current device (trnrtSetDevice; 0 by default).
int currentDevice();

// Where a device allocation lives (common/memory_location.h); std::nullopt for memory that is
// not device memory of this process.
std::optional<MemoryLocation> locate(const void* ptr);

}  // namespace trnccl::device
