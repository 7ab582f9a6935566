/**
 * @file trnrt.h
 * @brief The emulated NeuronCore runtime: devices, device memory, streams and events.
 *
 * Signatures follow the CUDA runtime where a counterpart exists, so a port is a rename
 * (cudaMalloc -> trnrtMalloc). Each device is an emulated NeuronCore with an HBM arena of
 * its kind's capacity; each stream is executed in order by a worker thread, or by the host
 * thread that waits for it in trnrtStreamSynchronize or trnrtEventSynchronize (as on a CPU
 * runtime). A NULL stream is the current device's default stream.
 */
#ifndef TRNCCL_TRNRT_H_
#define TRNCCL_TRNRT_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  trnrtSuccess = 0,
  trnrtErrorInvalidValue = 1,
  trnrtErrorMemoryAllocation = 2,
  trnrtErrorInvalidDevice = 3,
  trnrtErrorInvalidResourceHandle = 4,
  trnrtErrorNotReady = 5,
  trnrtErrorLaunchFailure = 6, /**< A task on the stream failed; the stream stays in error. */
  trnrtErrorTimeout = 7,
  trnrtErrorUnknown = 8
} trnrtError_t;

typedef enum {
  trnrtMemcpyHostToHost = 0,
  trnrtMemcpyHostToDevice = 1,
  trnrtMemcpyDeviceToHost = 2,
  trnrtMemcpyDeviceToDevice = 3,
  trnrtMemcpyDefault = 4 /**< Direction inferred from the pointers. */
} trnrtMemcpyKind;

/** Opaque stream handle; NULL is the current device's default stream. */
typedef struct trnrtStream* trnrtStream_t;
/** Opaque event handle. */
typedef struct trnrtEvent* trnrtEvent_t;

/** Number of emulated NeuronCores (TRNRT_NUM_DEVICES, default 32 as on trn1.32xlarge). */
trnrtError_t trnrtGetDeviceCount(int* count);
trnrtError_t trnrtSetDevice(int device);
trnrtError_t trnrtGetDevice(int* device);
/** Blocks until every stream of the current device is idle. */
trnrtError_t trnrtDeviceSynchronize(void);

/**
 * Allocates device memory from the current device's HBM arena (256-byte aligned). A size of 0
 * returns a unique, non-NULL pointer that must be freed like any other. Thread-safe.
 */
trnrtError_t trnrtMalloc(void** devPtr, size_t size);
/** Frees a trnrtMalloc pointer; NULL is a no-op, any other pointer is trnrtErrorInvalidValue. */
trnrtError_t trnrtFree(void* devPtr);
trnrtError_t trnrtMemcpy(void* dst, const void* src, size_t count, trnrtMemcpyKind kind);
trnrtError_t trnrtMemcpyAsync(void* dst, const void* src, size_t count, trnrtMemcpyKind kind,
                              trnrtStream_t stream);
/** Sets count bytes of device memory to value (synchronous with respect to the host). */
trnrtError_t trnrtMemset(void* devPtr, int value, size_t count);

trnrtError_t trnrtStreamCreate(trnrtStream_t* stream);
trnrtError_t trnrtStreamDestroy(trnrtStream_t stream);
/** Waits for all work on the stream; returns the stream's error if a task failed. */
trnrtError_t trnrtStreamSynchronize(trnrtStream_t stream);
/** trnrtSuccess when idle, trnrtErrorNotReady while work is pending. */
trnrtError_t trnrtStreamQuery(trnrtStream_t stream);
/**
 * A host function run by trnrtStreamAddCallback. status is trnrtSuccess, or
 * trnrtErrorLaunchFailure when an earlier task of the stream failed; then
 * trnrtGetLastErrorMessage() on the calling thread holds that task's message.
 */
typedef void (*trnrtStreamCallback_t)(trnrtStream_t stream, trnrtError_t status, void* userData);
/**
 * Enqueues callback(stream, status, userData) on stream, as cudaStreamAddCallback: the thread
 * running the stream's work (its worker, or a host thread waiting for the stream or an event)
 * runs it after all work enqueued before it, and work enqueued after it waits for it. Unlike other
 * tasks it also runs when the stream is in error (with that error as status), so whoever waits on
 * it always learns the outcome. It must not throw, block for long, or call functions that wait for
 * this stream. flags must be 0.
 */
trnrtError_t trnrtStreamAddCallback(trnrtStream_t stream, trnrtStreamCallback_t callback,
                                    void* userData, unsigned int flags);
/** Work enqueued on stream after this call waits until event has completed. */
trnrtError_t trnrtStreamWaitEvent(trnrtStream_t stream, trnrtEvent_t event, unsigned int flags);

trnrtError_t trnrtEventCreate(trnrtEvent_t* event);
trnrtError_t trnrtEventDestroy(trnrtEvent_t event);
trnrtError_t trnrtEventRecord(trnrtEvent_t event, trnrtStream_t stream);
/**
 * Waits until the event's latest record completed, running the recording stream's pending work
 * up to the record on the calling thread when it can (as trnrtStreamSynchronize does); returns
 * trnrtErrorLaunchFailure when the record, or work before it, failed.
 */
trnrtError_t trnrtEventSynchronize(trnrtEvent_t event);
/** trnrtSuccess once the event completed, trnrtErrorNotReady before. */
trnrtError_t trnrtEventQuery(trnrtEvent_t event);
/** Milliseconds between two completed events. */
trnrtError_t trnrtEventElapsedTime(float* ms, trnrtEvent_t start, trnrtEvent_t end);

const char* trnrtGetErrorString(trnrtError_t error);
/** The last error message of this thread, or "" when there is none; successful calls keep it. */
const char* trnrtGetLastErrorMessage(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TRNCCL_TRNRT_H_
