/**
 * @file trnccl.h
 * @brief trnccl: NCCL-shaped collective communication for AWS Trainium topologies.
 *
 * A port from NCCL is a rename: the same argument order, enum values and in-place rules.
 * Every function returns a ::trncclResult_t; on failure trncclGetLastError() holds a message.
 */
#ifndef TRNCCL_TRNCCL_H_
#define TRNCCL_TRNCCL_H_

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "trnccl/trnrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The one version source: CMake reads these (cmake/Version.cmake); CHANGELOG.md's newest entry
 * must name the same version. */
#define TRNCCL_MAJOR 0
#define TRNCCL_MINOR 2
#define TRNCCL_PATCH 0
/** Version code as in NCCL: major*10000 + minor*100 + patch. */
#define TRNCCL_VERSION_CODE (TRNCCL_MAJOR * 10000 + TRNCCL_MINOR * 100 + TRNCCL_PATCH)

/** Size of the opaque bootstrap identifier, as NCCL_UNIQUE_ID_BYTES. */
#define TRNCCL_UNIQUE_ID_BYTES 128

/** trncclCommSplit color meaning "this rank joins no new communicator". */
#define TRNCCL_SPLIT_NOCOLOR (-1)

/** trncclCommShrink flags; values match NCCL_SHRINK_*. */
#define TRNCCL_SHRINK_DEFAULT 0x00 /**< comm is healthy: wait for its outstanding work first. */
#define TRNCCL_SHRINK_ABORT 0x01   /**< After an error: revoke comm (aborting its work) first. */
/** trncclCommRevoke flags; the only value, as NCCL_REVOKE_DEFAULT. */
#define TRNCCL_REVOKE_DEFAULT 0x00

/** Opaque communicator handle. */
typedef struct trncclComm* trncclComm_t;

/** Opaque identifier that every rank of a new communicator must share (sent out of band). */
typedef struct {
  char internal[TRNCCL_UNIQUE_ID_BYTES];
} trncclUniqueId;

/** Result codes; values match ncclResult_t. */
typedef enum {
  trncclSuccess = 0,
  trncclUnhandledDeviceError = 1,
  trncclSystemError = 2,
  trncclInternalError = 3,
  trncclInvalidArgument = 4,
  trncclInvalidUsage = 5,
  trncclRemoteError = 6,
  trncclInProgress = 7,
  trncclTimeout = 8,
  trncclNumResults = 9
} trncclResult_t;

/** Element types; values match ncclDataType_t where NCCL has a counterpart. */
typedef enum {
  trncclInt8 = 0,
  trncclChar = 0,
  trncclUint8 = 1,
  trncclInt32 = 2,
  trncclInt = 2,
  trncclUint32 = 3,
  trncclInt64 = 4,
  trncclUint64 = 5,
  trncclFloat16 = 6,
  trncclHalf = 6,
  trncclFloat32 = 7,
  trncclFloat = 7,
  trncclFloat64 = 8,
  trncclDouble = 8,
  trncclBfloat16 = 9,
  trncclFloat8e4m3 = 10,
  trncclFloat8e5m2 = 11,
  trncclNumTypes = 12
} trncclDataType_t;

/** Reduction operators; values match ncclRedOp_t. Avg = sum, then divide by the rank count.
 *  Values from trncclNumOps on are handles of operators made by trncclRedOpCreatePreMulSum. */
typedef enum {
  trncclSum = 0,
  trncclProd = 1,
  trncclMax = 2,
  trncclMin = 3,
  trncclAvg = 4,
  trncclNumOps = 5,
  trncclMaxRedOp = 0x7fffffff /**< the largest value a handle may take (as ncclMaxRedOp) */
} trncclRedOp_t;

/** Where the scalar of trncclRedOpCreatePreMulSum lives; values match ncclScalarResidence_t. */
typedef enum {
  trncclScalarDevice = 0,       /**< device-visible memory, read when the collective runs */
  trncclScalarHostImmediate = 1 /**< host memory, read before the create call returns */
} trncclScalarResidence_t;

/** Communicator options. Start from TRNCCL_CONFIG_INITIALIZER and set what you need. */
typedef struct {
  size_t size;        /**< sizeof(trncclConfig_t); set by the initializer. */
  unsigned int magic; /**< Set by the initializer; detects an uninitialized config. */
  unsigned int version;
  int blocking;           /**< 1 (default): init blocks. 0: init returns trncclInProgress. */
  int timeoutMs;          /**< Deadline of every blocking wait; 0 = TRNCCL_TIMEOUT_MS or default. */
  const char* topology;   /**< Built-in topology name or YAML path; NULL = TRNCCL_TOPOLOGY. */
  const char* transports; /**< Transport preference, e.g. "shm,tcp"; NULL = TRNCCL_TRANSPORT. */
  const char* netName;    /**< Reserved for a network plugin name; NULL = default. */
  /** 1: all-reduce, reduce-scatter and reduce give bitwise identical results for the same
   *  inputs whatever the algorithm, channels, transport, topology and run (every element
   *  folded in rank order); 0: off; -1 (the initializer's): TRNCCL_DETERMINISTIC decides. */
  int deterministic;
} trncclConfig_t;

#define TRNCCL_CONFIG_MAGIC 0x7c0f1e5du
#define TRNCCL_CONFIG_INITIALIZER \
  { sizeof(trncclConfig_t), TRNCCL_CONFIG_MAGIC, TRNCCL_VERSION_CODE, 1, 0, NULL, NULL, NULL, -1 }

/** Writes TRNCCL_VERSION_CODE to *version. */
trncclResult_t trncclGetVersion(int* version);

/** Creates an id on the future rank 0 and starts the bootstrap root there.
 *  With TRNCCL_COMM_ID=host:port set, every caller gets the same id. */
trncclResult_t trncclGetUniqueId(trncclUniqueId* uniqueId);

/** Creates a communicator of nranks ranks; collective over all of them. */
trncclResult_t trncclCommInitRank(trncclComm_t* comm, int nranks, trncclUniqueId commId, int rank);
/** As trncclCommInitRank, with options. */
trncclResult_t trncclCommInitRankConfig(trncclComm_t* comm, int nranks, trncclUniqueId commId,
                                        int rank, trncclConfig_t* config);
/** As trncclCommInitRankConfig with nId unique ids (NCCL 2.23's ncclCommInitRankScalable), so
 *  that no single bootstrap root serves every rank: each id comes from its own
 *  trncclGetUniqueId (on nId different ranks, each then hosting that id's root) and every rank
 *  passes all nId ids in the same order. 1 <= nId <= nranks; nId = 1 is trncclCommInitRank.
 *  With nId >= 2 the ranks form nId - 1 groups of consecutive ranks, group g checking in at
 *  the root of commIds[g + 1] and its first rank also at commIds[0]'s (docs/COLLECTIVES.md). */
trncclResult_t trncclCommInitRankScalable(trncclComm_t* newcomm, int nranks, int myrank, int nId,
                                          trncclUniqueId* commIds, trncclConfig_t* config);
/** Creates ndev communicators in one process, one per device (devlist NULL: devices 0..ndev-1). */
trncclResult_t trncclCommInitAll(trncclComm_t* comms, int ndev, const int* devlist);

/** Splits comm by color (TRNCCL_SPLIT_NOCOLOR gives *newcomm = NULL), ordering ranks by key. */
trncclResult_t trncclCommSplit(trncclComm_t comm, int color, int key, trncclComm_t* newcomm,
                               trncclConfig_t* config);

/** Creates a communicator of the ranks of comm that are not in excludeRanksList
 *  (excludeRanksCount ranks of comm), numbered in comm's order. Collective over those ranks
 *  only: an excluded rank does not call it, and every caller passes the same list (else all of
 *  them fail alike). TRNCCL_SHRINK_DEFAULT waits for comm's outstanding work and leaves comm
 *  usable; TRNCCL_SHRINK_ABORT revokes comm first (trncclCommRevoke), for use after an error.
 *  config NULL: comm's options. Works while comm's first rank, or its bootstrap root, is dead.
 *  See docs/RELIABILITY.md, "What to do after an error". */
trncclResult_t trncclCommShrink(trncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                trncclComm_t* newcomm, trncclConfig_t* config, int shrinkFlags);
/** Declares comm broken on every rank: this rank's running work fails now and its later calls
 *  on comm return trncclInvalidUsage; the other ranks' waits on comm fail within ~50 ms and
 *  their trncclCommGetAsyncError reports trncclRemoteError naming this rank. Afterwards comm
 *  may only be shrunk, queried or destroyed/aborted. revokeFlags: TRNCCL_REVOKE_DEFAULT. */
trncclResult_t trncclCommRevoke(trncclComm_t comm, int revokeFlags);
/** The ranks of comm whose process has exited or that cannot be reached, as probed now (at most
 *  ~1 s), ascending: written to failedRanks (room for trncclCommCount() ints; NULL: only the
 *  count) and their number to *failedCount. A rank that is alive but stuck is not reported. */
trncclResult_t trncclCommGetFailedRanks(trncclComm_t comm, int* failedRanks, int* failedCount);

/** Allocates size bytes of device memory on the current device (trnrtMalloc), for buffers to
 *  register with trncclCommRegister; as ncclMemAlloc. size 0 is an invalid argument. */
trncclResult_t trncclMemAlloc(void** ptr, size_t size);
/** Frees memory of trncclMemAlloc; NULL is a no-op, as ncclMemFree. */
trncclResult_t trncclMemFree(void* ptr);
/** Registers [buff, buff + size) with comm, as ncclCommRegister: until trncclCommDeregister the
 *  buffer must stay allocated, and collectives whose send and receive buffers are registered
 *  (on every rank, as NCCL requires) hand their pieces to same-host peers in place instead of
 *  copying them through the shm FIFOs (docs/COLLECTIVES.md, "Registered buffers"). Host or
 *  device memory; a range may be registered more than once (each handle is deregistered). */
trncclResult_t trncclCommRegister(const trncclComm_t comm, void* buff, size_t size, void** handle);
/** Deregisters a handle of trncclCommRegister on the same comm; a handle that is not a live
 *  registration of comm (NULL, deregistered already) is an invalid argument. Collectives
 *  enqueued before must have completed (as in NCCL). */
trncclResult_t trncclCommDeregister(const trncclComm_t comm, void* handle);

/** Waits for all work issued on comm, then detaches it from its peers. */
trncclResult_t trncclCommFinalize(trncclComm_t comm);
/** Frees the communicator (finalizing it first if needed). */
trncclResult_t trncclCommDestroy(trncclComm_t comm);
/** Stops all work of comm at once, unblocking every wait, then frees it. */
trncclResult_t trncclCommAbort(trncclComm_t comm);
/** Writes the communicator's sticky asynchronous error (trncclSuccess if none). */
trncclResult_t trncclCommGetAsyncError(trncclComm_t comm, trncclResult_t* asyncError);

trncclResult_t trncclCommCount(const trncclComm_t comm, int* count);
trncclResult_t trncclCommDevice(const trncclComm_t comm, int* device);
trncclResult_t trncclCommUserRank(const trncclComm_t comm, int* rank);

/** A static string naming the result code. */
const char* trncclGetErrorString(trncclResult_t result);
/** The last error message of this thread (comm may be NULL), or "" when there is none. */
const char* trncclGetLastError(trncclComm_t comm);

/** recvbuff[i] = op over ranks of sendbuff[i]; in place when sendbuff == recvbuff. */
trncclResult_t trncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                               trncclDataType_t datatype, trncclRedOp_t op, trncclComm_t comm,
                               trnrtStream_t stream);
/** recvbuff[r*sendcount ...] = sendbuff of rank r; in place when sendbuff == recvbuff +
 * rank*sendcount. */
trncclResult_t trncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                               trncclDataType_t datatype, trncclComm_t comm, trnrtStream_t stream);
/** recvbuff = block `rank` of the reduction of sendbuff (nranks*recvcount elements);
 *  in place when recvbuff == sendbuff + rank*recvcount. */
trncclResult_t trncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                   trncclDataType_t datatype, trncclRedOp_t op, trncclComm_t comm,
                                   trnrtStream_t stream);
/** Copies root's sendbuff to every rank's recvbuff; in place when sendbuff == recvbuff. */
trncclResult_t trncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                               trncclDataType_t datatype, int root, trncclComm_t comm,
                               trnrtStream_t stream);
/** Legacy in-place broadcast (as ncclBcast): trncclBroadcast(buff, buff, ...). */
trncclResult_t trncclBcast(void* buff, size_t count, trncclDataType_t datatype, int root,
                           trncclComm_t comm, trnrtStream_t stream);
/** Reduces sendbuff of all ranks into root's recvbuff; in place when sendbuff == recvbuff. */
trncclResult_t trncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                            trncclDataType_t datatype, trncclRedOp_t op, int root,
                            trncclComm_t comm, trnrtStream_t stream);
/** Block j of sendbuff goes to rank j, arriving as block `rank` of its recvbuff. */
trncclResult_t trncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                              trncclDataType_t datatype, trncclComm_t comm, trnrtStream_t stream);
/** Every rank's count elements of sendbuff go to the root, rank i's to recvbuff + i*count
 *  (NCCL 2.28's ncclGather); recvbuff is used on the root only. In place when
 *  sendbuff == recvbuff + root*count on the root. */
trncclResult_t trncclGather(const void* sendbuff, void* recvbuff, size_t count,
                            trncclDataType_t datatype, int root, trncclComm_t comm,
                            trnrtStream_t stream);
/** The root's sendbuff + i*count (count elements) goes to rank i's recvbuff (NCCL 2.28's
 *  ncclScatter); sendbuff is used on the root only. In place when
 *  recvbuff == sendbuff + root*count on the root. */
trncclResult_t trncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                             trncclDataType_t datatype, int root, trncclComm_t comm,
                             trnrtStream_t stream);
/** Point-to-point send of count elements to peer. */
trncclResult_t trncclSend(const void* sendbuff, size_t count, trncclDataType_t datatype, int peer,
                          trncclComm_t comm, trnrtStream_t stream);
/** Point-to-point receive of count elements from peer. */
trncclResult_t trncclRecv(void* recvbuff, size_t count, trncclDataType_t datatype, int peer,
                          trncclComm_t comm, trnrtStream_t stream);

/** Creates a reduction operator for collectives of `comm` on `datatype`: each rank's input is
 *  multiplied by its own *scalar (of `datatype`), then summed (PyTorch's PREMUL_SUM). The
 *  handle is accepted wherever a trncclRedOp_t is, on this communicator and datatype. */
trncclResult_t trncclRedOpCreatePreMulSum(trncclRedOp_t* op, void* scalar,
                                          trncclDataType_t datatype,
                                          trncclScalarResidence_t residence, trncclComm_t comm);
/** Destroys an operator of trncclRedOpCreatePreMulSum; calls that named it may still run. */
trncclResult_t trncclRedOpDestroy(trncclRedOp_t op, trncclComm_t comm);

/** What trncclGroupSimulateEnd reports (NCCL 2.22's ncclSimInfo_t). Start from
 *  TRNCCL_SIM_INFO_INITIALIZER. */
typedef struct {
  size_t size;          /**< sizeof(trncclSimInfo_t); set by the initializer. */
  unsigned int magic;   /**< Set by the initializer; detects an uninitialized struct. */
  unsigned int version; /**< TRNCCL_VERSION_CODE of the caller's header. */
  float estimatedTime;  /**< Out: the group's operations, one after the other, in microseconds. */
} trncclSimInfo_t;

#define TRNCCL_SIM_INFO_MAGIC 0x74685283u
#define TRNCCL_SIM_INFO_INITIALIZER \
  { sizeof(trncclSimInfo_t), TRNCCL_SIM_INFO_MAGIC, TRNCCL_VERSION_CODE, NAN }

/** Starts a group: operations until the matching trncclGroupEnd are issued together. */
trncclResult_t trncclGroupStart(void);
/** Ends a group and issues its operations; reports any error of the group. */
trncclResult_t trncclGroupEnd(void);
/** Ends the outermost group without issuing its operations: communicator inits of the group
 *  run, but no collective or send/receive does. simInfo->estimatedTime gets their time on the
 *  communicators' modelled topology, every rank's schedule run on trnccl-sim's fabric model
 *  (docs/SIMULATOR.md). An inner group just ends. */
trncclResult_t trncclGroupSimulateEnd(trncclSimInfo_t* simInfo);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TRNCCL_TRNCCL_H_
