// The emulated runtime's C++ side, used by the collectives library: enqueue work on a stream,
// find which device owns a pointer (so same-host peers can map it), and the element types and
// reduction kernels. The C API in include/trnccl/trnrt.h is a thin layer over this.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>

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

// The calling thread's current device (trnrtSetDevice; 0 by default).
int currentDevice();

// Where a device allocation lives (common/memory_location.h); std::nullopt for memory that is
// not device memory of this process.
std::optional<MemoryLocation> locate(const void* ptr);

}  // namespace trnccl::device
