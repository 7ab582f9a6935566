// Little-endian encoding of integers into byte buffers, for every wire format of trnccl
// (bootstrap frames, TRNCCL_CHECK fingerprints): explicit byte order, no alignment needs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trnccl::bytes {

template <typename T>
void put(std::byte* at, T value) {
  auto v = static_cast<uint64_t>(value);
  for (size_t i = 0; i < sizeof(T); ++i) at[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

template <typename T>
T get(const std::byte* at) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(at[i]) << (8 * i);
  return static_cast<T>(v);
}

}  // namespace trnccl::bytes
