/* An NCCL program as NCCL's documentation writes one ("Example 1: single process, single
 * thread, multiple devices"), plus the calls a port leans on: only nccl* and cuda* names and
 * <nccl.h>. CTest compiles it against trnccl/nccl_compat.h (tests/compat/include/nccl.h) and
 * runs it; it prints OK when every result is right. Do not rename anything here to trnccl*. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDACHECK(cmd)                                                                      \
  do {                                                                                      \
    cudaError_t e = cmd;                                                                    \
    if (e != cudaSuccess) {                                                                 \
      printf("Failed: Cuda error %s:%d '%s'\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      exit(EXIT_FAILURE);                                                                   \
    }                                                                                       \
  } while (0)

#define NCCLCHECK(cmd)                                                                          \
  do {                                                                                          \
    ncclResult_t r = cmd;                                                                       \
    if (r != ncclSuccess) {                                                                     \
      printf("Failed, NCCL error %s:%d '%s' (%s)\n", __FILE__, __LINE__, ncclGetErrorString(r), \
             ncclGetLastError(NULL));                                                           \
      exit(EXIT_FAILURE);                                                                       \
    }                                                                                           \
  } while (0)

#define NDEV 4
#define SIZE (32 * 1024 + 3)

static int wrong = 0;
static void expect(float got, float want, const char* what, int dev) {
  if (got != want) {
    printf("%s on device %d: got %g, want %g\n", what, dev, got, want);
    ++wrong;
  }
}

int main(void) {
  ncclComm_t comms[NDEV];
  int devs[NDEV] = {0, 1, 2, 3};
  float* sendbuff[NDEV];
  float* recvbuff[NDEV];
  cudaStream_t s[NDEV];
  float* host = (float*)malloc(SIZE * NDEV * sizeof(float));
  int version = 0;

  NCCLCHECK(ncclGetVersion(&version));
  for (int i = 0; i < NDEV; ++i) {
    CUDACHECK(cudaSetDevice(i));
    CUDACHECK(cudaMalloc(sendbuff + i, SIZE * NDEV * sizeof(float)));
    CUDACHECK(cudaMalloc(recvbuff + i, SIZE * NDEV * sizeof(float)));
    for (int k = 0; k < SIZE * NDEV; ++k) host[k] = (float)(i + 1);
    CUDACHECK(cudaMemcpy(sendbuff[i], host, SIZE * NDEV * sizeof(float), cudaMemcpyHostToDevice));
    CUDACHECK(cudaStreamCreate(s + i));
  }
  NCCLCHECK(ncclCommInitAll(comms, NDEV, devs));

  /* All-reduce: 1 + 2 + 3 + 4. */
  NCCLCHECK(ncclGroupStart());
  for (int i = 0; i < NDEV; ++i) {
    NCCLCHECK(ncclAllReduce((const void*)sendbuff[i], (void*)recvbuff[i], SIZE, ncclFloat, ncclSum,
                            comms[i], s[i]));
  }
  NCCLCHECK(ncclGroupEnd());
  for (int i = 0; i < NDEV; ++i) {
    CUDACHECK(cudaSetDevice(i));
    CUDACHECK(cudaStreamSynchronize(s[i]));
    CUDACHECK(cudaMemcpy(host, recvbuff[i], SIZE * sizeof(float), cudaMemcpyDeviceToHost));
    expect(host[0], 10, "ncclAllReduce", i);
    expect(host[SIZE - 1], 10, "ncclAllReduce", i);
  }

  /* PREMUL_SUM with a host scalar: sum of (rank + 1) * 0.5 * (rank + 1) = 15. */
  NCCLCHECK(ncclGroupStart());
  for (int i = 0; i < NDEV; ++i) {
    ncclRedOp_t op;
    float scalar = 0.5f * (float)(i + 1);
    int rank = -1, count = -1;
    NCCLCHECK(ncclCommUserRank(comms[i], &rank));
    NCCLCHECK(ncclCommCount(comms[i], &count));
    if (rank != i || count != NDEV) ++wrong;
    NCCLCHECK(
        ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comms[i]));
    NCCLCHECK(ncclAllReduce(sendbuff[i], recvbuff[i], SIZE, ncclFloat32, op, comms[i], s[i]));
    NCCLCHECK(ncclRedOpDestroy(op, comms[i]));
  }
  NCCLCHECK(ncclGroupEnd());
  for (int i = 0; i < NDEV; ++i) {
    CUDACHECK(cudaStreamSynchronize(s[i]));
    CUDACHECK(cudaMemcpy(host, recvbuff[i], SIZE * sizeof(float), cudaMemcpyDeviceToHost));
    expect(host[SIZE - 1], 15, "ncclAllReduce(PreMulSum)", i);
  }

  /* Legacy in-place broadcast from the last rank, then an all-gather. */
  NCCLCHECK(ncclGroupStart());
  for (int i = 0; i < NDEV; ++i) {
    NCCLCHECK(ncclBcast(sendbuff[i], SIZE, ncclFloat, NDEV - 1, comms[i], s[i]));
  }
  NCCLCHECK(ncclGroupEnd());
  NCCLCHECK(ncclGroupStart());
  for (int i = 0; i < NDEV; ++i) {
    NCCLCHECK(ncclAllGather(sendbuff[i], recvbuff[i], SIZE, ncclFloat, comms[i], s[i]));
  }
  NCCLCHECK(ncclGroupEnd());
  for (int i = 0; i < NDEV; ++i) {
    CUDACHECK(cudaStreamSynchronize(s[i]));
    CUDACHECK(cudaMemcpy(host, recvbuff[i], SIZE * NDEV * sizeof(float), cudaMemcpyDeviceToHost));
    expect(host[0], NDEV, "ncclBcast + ncclAllGather", i);
    expect(host[SIZE * NDEV - 1], NDEV, "ncclBcast + ncclAllGather", i);
  }

  for (int i = 0; i < NDEV; ++i) {
    CUDACHECK(cudaFree(sendbuff[i]));
    CUDACHECK(cudaFree(recvbuff[i]));
    CUDACHECK(cudaStreamDestroy(s[i]));
  }
  for (int i = 0; i < NDEV; ++i) NCCLCHECK(ncclCommDestroy(comms[i]));
  free(host);
  printf("%s: NCCL example over trnccl %d, %d devices\n", wrong ? "FAILED" : "OK", version, NDEV);
  return wrong ? 1 : 0;
}
