// Cases of the API beyond the core collectives (issue 19: PreMulSum operators, gather, scatter,
// the legacy in-place broadcast, all-to-all-v through grouped send/recv, registered buffers),
// shared by the in-process and the mpirun suites. Each function runs one rank's part of a call
// that every rank of the communicator makes, on device memory, and returns the number of wrong
// elements in that rank's output (against values computed here, independently).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "support/reference.h"

namespace trnccl::testing {

// Device memory of the current device, freed on scope exit.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) {
    EXPECT_EQ(trnrtMalloc(&ptr_, std::max<size_t>(bytes, 1)), trnrtSuccess);
  }
  ~DeviceBuffer() { trnrtFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  unsigned char* get() const { return static_cast<unsigned char*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

// Element i of a buffer of `t` as a double (integers exactly).
inline double decodeAny(trncclDataType_t t, const void* buf, size_t i) {
  const auto* p = static_cast<const unsigned char*>(buf) + i * typeSize(t);
  switch (t) {
    case trncclInt8:
      return static_cast<int8_t>(*p);
    case trncclUint8:
      return *p;
    case trncclInt32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case trncclUint32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case trncclInt64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case trncclUint64: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    default:
      return decodeFloat(t, buf, i);
  }
}

// Host-visible buffer of `count` elements of rank r's usual input (reference.h's sum inputs).
inline std::vector<unsigned char> rankInput(trncclDataType_t t, int r, size_t count) {
  std::vector<unsigned char> in(count * typeSize(t));
  for (size_t i = 0; i < count; ++i)
    encode(t, inputValue(trncclSum, r, i), in.data() + i * typeSize(t));
  return in;
}

// ---- PreMulSum ----

enum class PreMulColl { kAllReduce, kReduceScatter, kReduce };

// Rank r's scalar: (r+1)/2 for floating types, r+1 for integers. With inputs in -4..4 every
// product and partial sum is exact in every type used (up to 8 ranks: |sum| <= 72, halves).
inline double preMulScalar(trncclDataType_t t, int r) { return isFloat(t) ? (r + 1) / 2.0 : r + 1; }

// The call with a trncclRedOpCreatePreMulSum operator of `residence`. A device-resident scalar
// is changed after the operator was made (the call must read it when it runs); a host-immediate
// one is overwritten on the host (the operator must have copied it). The operator is destroyed
// right after the call returns, as NCCL allows.
inline size_t runPreMulSum(trncclComm_t comm, trnrtStream_t stream, int r, int n, PreMulColl coll,
                           trncclDataType_t t, trncclScalarResidence_t residence, size_t count,
                           bool inPlace) {
  const size_t elem = typeSize(t), root = static_cast<size_t>(n - 1);
  const size_t sendCount = coll == PreMulColl::kReduceScatter ? count * n : count;
  std::vector<unsigned char> in = rankInput(t, r, sendCount), scalar(8), wrong(8);
  encode(t, preMulScalar(t, r), scalar.data());
  encode(t, 3, wrong.data());
  DeviceBuffer mem(2 * sendCount * elem), deviceScalar(8);
  trncclRedOp_t op;
  if (residence == trncclScalarDevice) {
    std::memcpy(deviceScalar.get(), wrong.data(), elem);
    EXPECT_EQ(trncclRedOpCreatePreMulSum(&op, deviceScalar.get(), t, residence, comm),
              trncclSuccess)
        << trncclGetLastError(comm);
    std::memcpy(deviceScalar.get(), scalar.data(), elem);
  } else {
    EXPECT_EQ(trncclRedOpCreatePreMulSum(&op, scalar.data(), t, residence, comm), trncclSuccess)
        << trncclGetLastError(comm);
    scalar = wrong;
  }
  EXPECT_GE(static_cast<int>(op), static_cast<int>(trncclNumOps));
  unsigned char* send = mem.get();
  unsigned char* recv = inPlace ? send : send + sendCount * elem;
  if (inPlace && coll == PreMulColl::kReduceScatter) recv = send + r * count * elem;
  if (!in.empty()) std::memcpy(send, in.data(), in.size());
  trncclResult_t res =
      coll == PreMulColl::kAllReduce ? trncclAllReduce(send, recv, count, t, op, comm, stream)
      : coll == PreMulColl::kReduceScatter
          ? trncclReduceScatter(send, recv, count, t, op, comm, stream)
          : trncclReduce(send, recv, count, t, op, static_cast<int>(root), comm, stream);
  EXPECT_EQ(res, trncclSuccess) << trncclGetLastError(comm);
  EXPECT_EQ(trncclRedOpDestroy(op, comm), trncclSuccess);
  EXPECT_EQ(trnrtStreamSynchronize(stream), trnrtSuccess) << trnrtGetLastErrorMessage();
  if (coll == PreMulColl::kReduce && static_cast<size_t>(r) != root) return 0;
  size_t bad = 0;
  const size_t first = coll == PreMulColl::kReduceScatter ? r * count : 0;
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int k = 0; k < n; ++k) want += preMulScalar(t, k) * inputValue(trncclSum, k, first + i);
    bad += decodeAny(t, recv, i) != want;
  }
  return bad;
}

// ---- gather, scatter, bcast ----

// trncclGather to `root`: block k of the root's recvbuff is rank k's input, bitwise.
inline size_t runGather(trncclComm_t comm, trnrtStream_t stream, int r, int n, int root,
                        trncclDataType_t t, size_t count, bool inPlace) {
  const size_t elem = typeSize(t);
  DeviceBuffer mem((n + 1) * count * elem);
  unsigned char* recv = mem.get();
  unsigned char* send = recv + n * count * elem;  // past the receive buffer
  if (inPlace && r == root) send = recv + root * count * elem;
  const std::vector<unsigned char> in = rankInput(t, r, count);
  if (!in.empty()) std::memcpy(send, in.data(), in.size());
  // Non-root ranks pass no receive buffer (NCCL allows NULL there).
  EXPECT_EQ(trncclGather(send, r == root ? recv : nullptr, count, t, root, comm, stream),
            trncclSuccess)
      << trncclGetLastError(comm);
  EXPECT_EQ(trnrtStreamSynchronize(stream), trnrtSuccess) << trnrtGetLastErrorMessage();
  if (r != root || count == 0) return 0;
  size_t bad = 0;
  for (int k = 0; k < n; ++k) {
    bad += std::memcmp(recv + k * count * elem, rankInput(t, k, count).data(), count * elem) != 0;
  }
  return bad;
}

// trncclScatter from `root`: rank k's recvbuff is block k of the root's input (the root's
// input is rank n's usual input, n*count elements long).
inline size_t runScatter(trncclComm_t comm, trnrtStream_t stream, int r, int n, int root,
                         trncclDataType_t t, size_t count, bool inPlace) {
  const size_t elem = typeSize(t);
  DeviceBuffer mem((n + 1) * count * elem);
  unsigned char* send = mem.get();
  unsigned char* recv = send + n * count * elem;
  const std::vector<unsigned char> all = rankInput(t, n, n * count);
  if (r == root) {
    if (!all.empty()) std::memcpy(send, all.data(), all.size());
    if (inPlace) recv = send + root * count * elem;
  }
  EXPECT_EQ(trncclScatter(r == root ? send : nullptr, recv, count, t, root, comm, stream),
            trncclSuccess)
      << trncclGetLastError(comm);
  EXPECT_EQ(trnrtStreamSynchronize(stream), trnrtSuccess) << trnrtGetLastErrorMessage();
  return count > 0 && std::memcmp(recv, all.data() + r * count * elem, count * elem) != 0;
}

// The legacy in-place broadcast: every rank's buffer becomes the root's input.
inline size_t runBcast(trncclComm_t comm, trnrtStream_t stream, int r, int root, trncclDataType_t t,
                       size_t count) {
  DeviceBuffer buf(count * typeSize(t));
  const std::vector<unsigned char> want = rankInput(t, root, count);
  std::memset(buf.get(), 0x5a, count * typeSize(t));
  if (r == root && !want.empty()) std::memcpy(buf.get(), want.data(), want.size());
  EXPECT_EQ(trncclBcast(buf.get(), count, t, root, comm, stream), trncclSuccess)
      << trncclGetLastError(comm);
  EXPECT_EQ(trnrtStreamSynchronize(stream), trnrtSuccess) << trnrtGetLastErrorMessage();
  return !want.empty() && std::memcmp(buf.get(), want.data(), want.size()) != 0;
}

// ---- all-to-all-v as NCCL programs write it: grouped send/recv ----

// Elements rank i sends rank j (uneven, some 0, self included).
inline size_t alltoallvCount(int i, int j, size_t scale) {
  return static_cast<size_t>((3 * i + 5 * j) % 4) * scale;
}
inline int32_t alltoallvValue(int from, int to, size_t e) {
  return from * 1000000 + to * 10000 + static_cast<int32_t>(e % 10000);
}

// Rank r sends alltoallvCount(r, j) int32s to each j and receives alltoallvCount(j, r) from
// each j into packed blocks, all inside one group; returns the wrong blocks.
inline size_t runAlltoAllv(trncclComm_t comm, trnrtStream_t stream, int r, int n, size_t scale) {
  std::vector<size_t> sdispl(n + 1, 0), rdispl(n + 1, 0);
  for (int j = 0; j < n; ++j) {
    sdispl[j + 1] = sdispl[j] + alltoallvCount(r, j, scale);
    rdispl[j + 1] = rdispl[j] + alltoallvCount(j, r, scale);
  }
  DeviceBuffer send(sdispl[n] * 4), recv(rdispl[n] * 4);
  auto* s = reinterpret_cast<int32_t*>(send.get());
  for (int j = 0; j < n; ++j) {
    for (size_t e = 0; e < alltoallvCount(r, j, scale); ++e)
      s[sdispl[j] + e] = alltoallvValue(r, j, e);
  }
  EXPECT_EQ(trncclGroupStart(), trncclSuccess);
  for (int j = 0; j < n; ++j) {
    EXPECT_EQ(trncclSend(s + sdispl[j], alltoallvCount(r, j, scale), trncclInt32, j, comm, stream),
              trncclSuccess);
    EXPECT_EQ(trncclRecv(reinterpret_cast<int32_t*>(recv.get()) + rdispl[j],
                         alltoallvCount(j, r, scale), trncclInt32, j, comm, stream),
              trncclSuccess);
  }
  EXPECT_EQ(trncclGroupEnd(), trncclSuccess) << trncclGetLastError(comm);
  EXPECT_EQ(trnrtStreamSynchronize(stream), trnrtSuccess) << trnrtGetLastErrorMessage();
  const auto* got = reinterpret_cast<const int32_t*>(recv.get());
  size_t bad = 0;
  for (int j = 0; j < n; ++j) {
    for (size_t e = 0; e < alltoallvCount(j, r, scale); ++e) {
      if (got[rdispl[j] + e] != alltoallvValue(j, r, e)) {
        ++bad;
        break;
      }
    }
  }
  return bad;
}

// ---- registered buffers ----

// trncclAllReduce (sum) of rank r's usual input over buffers of trncclMemAlloc, registered with
// trncclCommRegister for the call when `registered` (one handle each for the send and the
// receive buffer, deregistered after the call completed; in place: one buffer).
inline size_t runRegisteredAllReduce(trncclComm_t comm, trnrtStream_t stream, int r, int n,
                                     trncclDataType_t t, size_t count, bool inPlace,
                                     bool registered) {
  const size_t bytes = count * typeSize(t);
  void* send = nullptr;
  void* recv = nullptr;
  EXPECT_EQ(trncclMemAlloc(&send, bytes), trncclSuccess) << trncclGetLastError(comm);
  if (inPlace) {
    recv = send;
  } else {
    EXPECT_EQ(trncclMemAlloc(&recv, bytes), trncclSuccess);
  }
  std::vector<unsigned char> in = rankInput(t, r, count);
  std::memcpy(send, in.data(), bytes);
  void* handles[2] = {nullptr, nullptr};
  if (registered) {
    EXPECT_EQ(trncclCommRegister(comm, send, bytes, &handles[0]), trncclSuccess)
        << trncclGetLastError(comm);
    if (!inPlace) {
      EXPECT_EQ(trncclCommRegister(comm, recv, bytes, &handles[1]), trncclSuccess);
    }
  }
  EXPECT_EQ(trncclAllReduce(send, recv, count, t, trncclSum, comm, stream), trncclSuccess)
      << trncclGetLastError(comm);
  EXPECT_EQ(trnrtStreamSynchronize(stream), trnrtSuccess) << trnrtGetLastErrorMessage();
  for (void* h : handles) {
    if (h != nullptr) {
      EXPECT_EQ(trncclCommDeregister(comm, h), trncclSuccess);
    }
  }
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int k = 0; k < n; ++k) want += inputValue(trncclSum, k, i);
    bad += decodeAny(t, recv, i) != want;
  }
  EXPECT_EQ(trncclMemFree(send), trncclSuccess);
  if (!inPlace) {
    EXPECT_EQ(trncclMemFree(recv), trncclSuccess);
  }
  return bad;
}

}  // namespace trnccl::testing
