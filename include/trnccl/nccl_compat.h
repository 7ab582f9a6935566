/**
 * @file nccl_compat.h
 * @brief Opt-in NCCL names for trnccl: a program written against NCCL's nccl.h compiles
 *        unchanged when an nccl.h of its include path includes this header.
 *
 * Every nccl* function, type and enum value trnccl has is mapped to its trncclX counterpart
 * (same argument order, enum values and in-place rules; trnccl.h). Not mapped, so a program
 * that uses them fails to compile rather than misbehave: NCCL_MAJOR/MINOR/PATCH and
 * NCCL_VERSION_CODE (ncclGetVersion returns trnccl's code; docs/COLLECTIVES.md), the CUDA-only
 * fields of ncclConfig_t (cgaClusterSize, minCTAs, maxCTAs, splitShare, ...), and the NCCL calls
 * trnccl does not have (CHANGELOG.md lists what it has). Streams are trnrtStream_t: the device
 * runtime's own names (cudaStream_t, cudaMalloc, ...) are the program's business.
 * Including this header and <nccl.h> from NVIDIA in one translation unit is an error.
 */
#ifndef TRNCCL_NCCL_COMPAT_H_
#define TRNCCL_NCCL_COMPAT_H_

#include "trnccl/trnccl.h"

#ifdef NCCL_H_
#error "trnccl/nccl_compat.h and NVIDIA's nccl.h cannot be used together"
#endif
#define NCCL_H_

/* NCCL's version arithmetic (2.9 on); NCCL_VERSION_CODE is left undefined, see above. */
#define NCCL_VERSION(X, Y, Z) ((X)*10000 + (Y)*100 + (Z))
#define NCCL_UNIQUE_ID_BYTES TRNCCL_UNIQUE_ID_BYTES
#define NCCL_SPLIT_NOCOLOR TRNCCL_SPLIT_NOCOLOR
#define NCCL_SHRINK_DEFAULT TRNCCL_SHRINK_DEFAULT
#define NCCL_SHRINK_ABORT TRNCCL_SHRINK_ABORT
#define NCCL_REVOKE_DEFAULT TRNCCL_REVOKE_DEFAULT
#define NCCL_CONFIG_INITIALIZER TRNCCL_CONFIG_INITIALIZER
#define NCCL_SIM_INFO_INITIALIZER TRNCCL_SIM_INFO_INITIALIZER

typedef trncclComm_t ncclComm_t;
typedef trncclUniqueId ncclUniqueId;
typedef trncclResult_t ncclResult_t;
typedef trncclDataType_t ncclDataType_t;
typedef trncclRedOp_t ncclRedOp_t;
typedef trncclScalarResidence_t ncclScalarResidence_t;
typedef trncclConfig_t ncclConfig_t;
typedef trncclSimInfo_t ncclSimInfo_t;

/* ncclResult_t */
#define ncclSuccess trncclSuccess
#define ncclUnhandledCudaError trncclUnhandledDeviceError
#define ncclSystemError trncclSystemError
#define ncclInternalError trncclInternalError
#define ncclInvalidArgument trncclInvalidArgument
#define ncclInvalidUsage trncclInvalidUsage
#define ncclRemoteError trncclRemoteError
#define ncclInProgress trncclInProgress
#define ncclTimeout trncclTimeout
#define ncclNumResults trncclNumResults

/* ncclDataType_t */
#define ncclInt8 trncclInt8
#define ncclChar trncclChar
#define ncclUint8 trncclUint8
#define ncclInt32 trncclInt32
#define ncclInt trncclInt
#define ncclUint32 trncclUint32
#define ncclInt64 trncclInt64
#define ncclUint64 trncclUint64
#define ncclFloat16 trncclFloat16
#define ncclHalf trncclHalf
#define ncclFloat32 trncclFloat32
#define ncclFloat trncclFloat
#define ncclFloat64 trncclFloat64
#define ncclDouble trncclDouble
#define ncclBfloat16 trncclBfloat16
#define ncclFloat8e4m3 trncclFloat8e4m3
#define ncclFloat8e5m2 trncclFloat8e5m2
#define ncclNumTypes trncclNumTypes

/* ncclRedOp_t and ncclScalarResidence_t */
#define ncclSum trncclSum
#define ncclProd trncclProd
#define ncclMax trncclMax
#define ncclMin trncclMin
#define ncclAvg trncclAvg
#define ncclNumOps trncclNumOps
#define ncclMaxRedOp trncclMaxRedOp
#define ncclScalarDevice trncclScalarDevice
#define ncclScalarHostImmediate trncclScalarHostImmediate

/* Functions */
#define ncclGetVersion trncclGetVersion
#define ncclGetUniqueId trncclGetUniqueId
#define ncclCommInitRank trncclCommInitRank
#define ncclCommInitRankConfig trncclCommInitRankConfig
#define ncclCommInitAll trncclCommInitAll
#define ncclCommInitRankScalable trncclCommInitRankScalable
#define ncclCommSplit trncclCommSplit
#define ncclCommShrink trncclCommShrink
#define ncclCommRevoke trncclCommRevoke
#define ncclCommFinalize trncclCommFinalize
#define ncclCommDestroy trncclCommDestroy
#define ncclCommAbort trncclCommAbort
#define ncclMemAlloc trncclMemAlloc
#define ncclMemFree trncclMemFree
#define ncclCommRegister trncclCommRegister
#define ncclCommDeregister trncclCommDeregister
#define ncclCommGetAsyncError trncclCommGetAsyncError
#define ncclCommCount trncclCommCount
#define ncclCommCuDevice trncclCommDevice
#define ncclCommUserRank trncclCommUserRank
#define ncclGetErrorString trncclGetErrorString
#define ncclGetLastError trncclGetLastError
#define ncclAllReduce trncclAllReduce
#define ncclAllGather trncclAllGather
#define ncclReduceScatter trncclReduceScatter
#define ncclBroadcast trncclBroadcast
#define ncclBcast trncclBcast
#define ncclReduce trncclReduce
#define ncclAlltoAll trncclAlltoAll
#define ncclGather trncclGather
#define ncclScatter trncclScatter
#define ncclSend trncclSend
#define ncclRecv trncclRecv
#define ncclRedOpCreatePreMulSum trncclRedOpCreatePreMulSum
#define ncclRedOpDestroy trncclRedOpDestroy
#define ncclGroupStart trncclGroupStart
#define ncclGroupEnd trncclGroupEnd
#define ncclGroupSimulateEnd trncclGroupSimulateEnd

#endif /* TRNCCL_NCCL_COMPAT_H_ */
