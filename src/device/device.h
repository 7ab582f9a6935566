// Emulated NeuronCores: each device owns its HBM arena, its default stream and the streams
// created on it. Devices are created on first use, so a process that touches one core does
// not reserve 32 arenas or start 32 workers.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "common/status.h"
#include "device/arena.h"
#include "device/device_api.h"
#include "device/stream.h"

namespace trnccl::device {

constexpr int kDefaultDeviceCount = 32;                // trn1.32xlarge: 16 chips x 2 cores
constexpr size_t kDefaultHbmBytes = size_t{16} << 30;  // per NeuronCore-v2

class Device {
 public:
  // Reserves the arena (TRNRT_HBM_BYTES, read now, so tests can vary it per device) and starts
  // the default stream.
  static Result<std::unique_ptr<Device>> create(int index);

  int index() const { return index_; }
  Arena& arena() { return *arena_; }
  trnrtStream& defaultStream() { return *defaultStream_; }

  trnrtStream* createStream();
  // Drains and joins the stream; kInvalidArgument when it is not a stream of this device.
  Status destroyStream(trnrtStream* stream);
  // Waits for every stream of the device; returns the first stream error seen.
  Status synchronize();

 private:
  Device(int index, std::unique_ptr<Arena> arena);

  const int index_;
  std::unique_ptr<Arena> arena_;
  std::unique_ptr<trnrtStream> defaultStream_;
  std::mutex mutex_;
  // shared_ptr so synchronize() can wait on a snapshot while another thread destroys a stream.
  std::map<trnrtStream*, std::shared_ptr<trnrtStream>> streams_;
};

// TRNRT_NUM_DEVICES, read once.
int deviceCount();
bool validDevice(int index);
// The device, created on first use. kInvalidArgument for an index out of range, the arena's
// error if it cannot be reserved.
Result<Device*> getDevice(int index);
// The device whose arena holds `ptr`, among those created; nullptr when none does.
Device* findDevice(const void* ptr);
// Sets the calling thread's current device without validation (the stream workers' path).
void setCurrentDevice(int index);
// nullptr: the current device's default stream; otherwise `stream` itself.
Result<trnrtStream*> resolveStream(trnrtStream_t stream);

}  // namespace trnccl::device
