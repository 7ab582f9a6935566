/* Four ranks in one process, one thread each, summing a vector with trncclAllReduce.
 * Written in C to show the headers are plain C. Build: see examples/CMakeLists.txt, or
 *   cc allreduce_threads.c $(pkg-config --cflags --libs trnccl) -lpthread */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <trnccl/trnccl.h>

#define NRANKS 4
#define COUNT (1 << 20)

static trncclUniqueId id;
static int failures = 0;

#define CHECK(call)                                                           \
  do {                                                                        \
    trncclResult_t r_ = (call);                                               \
    if (r_ != trncclSuccess) {                                                \
      fprintf(stderr, "%s failed: %s: %s\n", #call, trncclGetErrorString(r_), \
              trncclGetLastError(NULL));                                      \
      __atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);                     \
      return NULL;                                                            \
    }                                                                         \
  } while (0)

static void* rankMain(void* arg) {
  int rank = (int)(long)arg;
  trncclComm_t comm;
  trnrtStream_t stream;
  float* host = malloc(COUNT * sizeof(float));
  void* dev = NULL;
  trnrtSetDevice(rank);
  CHECK(trncclCommInitRank(&comm, NRANKS, id, rank));
  trnrtStreamCreate(&stream);
  trnrtMalloc(&dev, COUNT * sizeof(float));
  for (int i = 0; i < COUNT; ++i) host[i] = (float)(rank + 1);
  trnrtMemcpy(dev, host, COUNT * sizeof(float), trnrtMemcpyHostToDevice);
  CHECK(trncclAllReduce(dev, dev, COUNT, trncclFloat32, trncclSum, comm, stream));
  trnrtStreamSynchronize(stream);
  trnrtMemcpy(host, dev, COUNT * sizeof(float), trnrtMemcpyDeviceToHost);
  if (host[0] != 10.0f || host[COUNT - 1] != 10.0f) {
    fprintf(stderr, "rank %d: got %f, expected 10\n", rank, host[0]);
    __atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);
  }
  trnrtFree(dev);
  trnrtStreamDestroy(stream);
  trncclCommDestroy(comm);
  free(host);
  return NULL;
}

int main(void) {
  pthread_t threads[NRANKS];
  if (trncclGetUniqueId(&id) != trncclSuccess) return 1;
  for (long r = 0; r < NRANKS; ++r) pthread_create(&threads[r], NULL, rankMain, (void*)r);
  for (int r = 0; r < NRANKS; ++r) pthread_join(threads[r], NULL);
  printf("%s: %d ranks summed %d floats\n", failures ? "FAILED" : "OK", NRANKS, COUNT);
  return failures ? 1 : 0;
}
