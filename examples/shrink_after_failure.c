/* Carrying on after a rank dies: four ranks, one process each (fork), sum a vector in a loop.
 * Rank 2 kills itself (SIGKILL) after a few iterations; the other three see the failure, ask
 * which ranks failed, shrink the communicator without them and go on summing over three ranks.
 * The steps are those of docs/RELIABILITY.md, "What to do after an error". Build: see
 * examples/CMakeLists.txt, or
 *   cc shrink_after_failure.c $(pkg-config --cflags --libs trnccl) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <trnccl/trnccl.h>
#include <unistd.h>

#define NRANKS 4
#define VICTIM 2
#define COUNT (1 << 16)

static int fail(const char* what, trncclResult_t r) {
  fprintf(stderr, "%s failed: %s: %s\n", what, trncclGetErrorString(r), trncclGetLastError(NULL));
  return 1;
}

/* Sums (rank + 1) over comm; 0 on success with the sum in *sum, else the stream failed. */
static int sumOver(trncclComm_t comm, trnrtStream_t stream, float* dev, float* host, int value,
                   float* sum) {
  for (int i = 0; i < COUNT; ++i) host[i] = (float)value;
  trnrtMemcpy(dev, host, COUNT * sizeof(float), trnrtMemcpyHostToDevice);
  trncclAllReduce(dev, dev, COUNT, trncclFloat32, trncclSum, comm, stream);
  if (trnrtStreamSynchronize(stream) != trnrtSuccess) return 1;
  trnrtMemcpy(host, dev, COUNT * sizeof(float), trnrtMemcpyDeviceToHost);
  *sum = host[COUNT - 1];
  return 0;
}

static int rankMain(int rank, trncclUniqueId id) {
  trncclComm_t comm = NULL, shrunk = NULL;
  trnrtStream_t stream = NULL;
  float* host = malloc(COUNT * sizeof(float));
  float* dev = NULL;
  float sum = 0;
  trncclConfig_t config = TRNCCL_CONFIG_INITIALIZER;
  config.timeoutMs = 30000; /* a dead peer is noticed long before this */
  trnrtSetDevice(rank);
  trncclResult_t r = trncclCommInitRankConfig(&comm, NRANKS, id, rank, &config);
  if (r != trncclSuccess) return fail("trncclCommInitRankConfig", r);
  trnrtStreamCreate(&stream);
  trnrtMalloc((void**)&dev, COUNT * sizeof(float));
  /* 1. Work until a collective fails. */
  for (int iter = 0;; ++iter) {
    if (rank == VICTIM && iter == 5) raise(SIGKILL);
    if (sumOver(comm, stream, dev, host, rank + 1, &sum) != 0) break;
  }
  /* 2. Why: trncclCommGetAsyncError (trncclRemoteError: a peer failed), and which ranks. */
  trncclResult_t async = trncclSuccess;
  trncclCommGetAsyncError(comm, &async);
  int failed[NRANKS], nfailed = 0;
  r = trncclCommGetFailedRanks(comm, failed, &nfailed);
  if (r != trncclSuccess) return fail("trncclCommGetFailedRanks", r);
  printf("rank %d: %s (%s); failed ranks:", rank, trncclGetErrorString(async),
         trncclGetLastError(comm));
  for (int i = 0; i < nfailed; ++i) printf(" %d", failed[i]);
  printf("\n");
  /* 3. Shrink without them; TRNCCL_SHRINK_ABORT revokes the old communicator first. */
  r = trncclCommShrink(comm, failed, nfailed, &shrunk, NULL, TRNCCL_SHRINK_ABORT);
  if (r != trncclSuccess) return fail("trncclCommShrink", r);
  int newRank = -1, newCount = 0;
  trncclCommUserRank(shrunk, &newRank);
  trncclCommCount(shrunk, &newCount);
  /* 4. Go on with the new communicator, on a new stream (the old one keeps its error). */
  trnrtStream_t fresh = NULL;
  trnrtStreamCreate(&fresh);
  int bad = 0;
  for (int iter = 0; iter < 10; ++iter) {
    if (sumOver(shrunk, fresh, dev, host, rank + 1, &sum) != 0) return fail("all-reduce", 0);
    if (sum != 1.0f + 2.0f + 4.0f) bad = 1; /* ranks 0, 1 and 3 remain */
  }
  printf("rank %d: now rank %d of %d, sum %.0f\n", rank, newRank, newCount, sum);
  /* 5. The old communicator only takes destroy (or abort) now. */
  trncclCommDestroy(shrunk);
  trncclCommAbort(comm);
  trnrtStreamDestroy(fresh);
  trnrtStreamDestroy(stream);
  trnrtFree(dev);
  free(host);
  return bad;
}

int main(void) {
  /* Rank 0 makes the id (and hosts the bootstrap root); a pipe carries it to the others. */
  int pipes[NRANKS][2];
  pid_t pids[NRANKS];
  for (int r = 1; r < NRANKS; ++r) {
    if (pipe(pipes[r]) != 0) return 1;
  }
  for (int r = 0; r < NRANKS; ++r) {
    pids[r] = fork();
    if (pids[r] < 0) return 1;
    if (pids[r] > 0) continue;
    alarm(120); /* an example must not hang a test run */
    trncclUniqueId id;
    if (r == 0) {
      if (trncclGetUniqueId(&id) != trncclSuccess) _exit(1);
      for (int p = 1; p < NRANKS; ++p) {
        if (write(pipes[p][1], &id, sizeof(id)) != (ssize_t)sizeof(id)) _exit(1);
      }
    } else if (read(pipes[r][0], &id, sizeof(id)) != (ssize_t)sizeof(id)) {
      _exit(1);
    }
    int rc = rankMain(r, id);
    fflush(stdout);
    _exit(rc);
  }
  int failures = 0;
  for (int r = 0; r < NRANKS; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    int expected = r == VICTIM ? WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL
                               : WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!expected) ++failures;
  }
  printf("%s: rank %d died, the other %d ranks shrank the communicator and went on\n",
         failures ? "FAILED" : "OK", VICTIM, NRANKS - 1);
  return failures ? 1 : 0;
}
