/* Test scaffolding, not part of trnccl: the few CUDA runtime calls the NCCL example uses,
 * onto the emulated device runtime (trnrt.h), so that the example's source stays NVIDIA's. */
#ifndef TRNCCL_TESTS_COMPAT_CUDA_RUNTIME_H_
#define TRNCCL_TESTS_COMPAT_CUDA_RUNTIME_H_

#include "trnccl/trnrt.h"

typedef trnrtError_t cudaError_t;
typedef trnrtStream_t cudaStream_t;
#define cudaSuccess trnrtSuccess
#define cudaMemcpyHostToDevice trnrtMemcpyHostToDevice
#define cudaMemcpyDeviceToHost trnrtMemcpyDeviceToHost
#define cudaSetDevice trnrtSetDevice
#define cudaMalloc(ptr, bytes) trnrtMalloc((void**)(ptr), (bytes))
#define cudaFree trnrtFree
#define cudaMemcpy trnrtMemcpy
#define cudaStreamCreate trnrtStreamCreate
#define cudaStreamDestroy trnrtStreamDestroy
#define cudaStreamSynchronize trnrtStreamSynchronize
#define cudaGetErrorString(e) trnrtGetLastErrorMessage()

#endif
