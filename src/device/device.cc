#include "device/device.h"

#include <unistd.h>

#include <atomic>
#include <vector>

#include "common/env.h"
#include "common/log.h"

namespace trnccl::device {
namespace {

constexpr int kMaxDeviceCount = 4096;

thread_local int tlsCurrentDevice = 0;

// The process-wide table of devices. Deliberately leaked: stream workers may still be running
// (or blocked on their condition variable) while static destructors run at exit, and destroying
// a joinable std::thread or an arena under them would crash. The OS reclaims it all.
class Registry {
 public:
  static Registry& instance() {
    static Registry* registry = new Registry();
    return *registry;
  }

  int count() const { return count_; }

  Result<Device*> get(int index) {
    if (index < 0 || index >= count_) {
      return invalidArgument("invalid device {}: {} devices (TRNRT_NUM_DEVICES)", index, count_);
    }
    Device* device = devices_[index].load(std::memory_order_acquire);
    if (device != nullptr) return device;
    std::lock_guard<std::mutex> lock(createMutex_);
    device = devices_[index].load(std::memory_order_acquire);
    if (device != nullptr) return device;
    Result<std::unique_ptr<Device>> created = Device::create(index);
    if (!created) return created.status();
    device = created.value().release();
    devices_[index].store(device, std::memory_order_release);
    return device;
  }

  Device* find(const void* ptr) const {
    for (int i = 0; i < count_; ++i) {
      Device* device = devices_[i].load(std::memory_order_acquire);
      if (device != nullptr && device->arena().contains(ptr)) return device;
    }
    return nullptr;
  }

 private:
  Registry() : count_(readCount()), devices_(count_) {}

  static int readCount() {
    int64_t count = env::getInt("TRNRT_NUM_DEVICES", kDefaultDeviceCount);
    if (count < 1 || count > kMaxDeviceCount) {
      TRN_WARN(kDevice, "ignoring TRNRT_NUM_DEVICES={}: must be in [1, {}]", count,
               kMaxDeviceCount);
      return kDefaultDeviceCount;
    }
    return static_cast<int>(count);
  }

  const int count_;
  std::vector<std::atomic<Device*>> devices_;  // created once, never destroyed
  std::mutex createMutex_;
};

}  // namespace

Result<std::unique_ptr<Device>> Device::create(int index) {
  int64_t bytes = env::getInt("TRNRT_HBM_BYTES", static_cast<int64_t>(kDefaultHbmBytes));
  if (bytes < static_cast<int64_t>(OffsetAllocator::kAlignment)) {
    TRN_WARN(kDevice, "ignoring TRNRT_HBM_BYTES={}: must be at least {}", bytes,
             OffsetAllocator::kAlignment);
    bytes = static_cast<int64_t>(kDefaultHbmBytes);
  }
  Result<std::unique_ptr<Arena>> arena = Arena::create(index, static_cast<size_t>(bytes));
  if (!arena) return arena.status();
  TRN_INFO(kDevice, "device {} created: {} bytes of HBM", index, bytes);
  return std::unique_ptr<Device>(new Device(index, std::move(arena.value())));
}

Device::Device(int index, std::unique_ptr<Arena> arena)
    : index_(index),
      arena_(std::move(arena)),
      defaultStream_(std::make_unique<trnrtStream>(index)) {}

trnrtStream* Device::createStream() {
  auto stream = std::make_shared<trnrtStream>(index_);
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.emplace(stream.get(), stream);
  return stream.get();
}

Status Device::destroyStream(trnrtStream* stream) {
  std::shared_ptr<trnrtStream> owned;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = streams_.find(stream);
    if (it == streams_.end()) {
      return invalidArgument("stream {} is not a live stream of device {}",
                             static_cast<void*>(stream), index_);
    }
    owned = std::move(it->second);
    streams_.erase(it);
  }
  owned.reset();  // drains and joins outside the lock, unless a synchronize() still holds it
  return Status::ok();
}

Status Device::synchronize() {
  std::vector<std::shared_ptr<trnrtStream>> streams;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& entry : streams_) streams.push_back(entry.second);
  }
  Status first = defaultStream_->synchronize();
  for (const auto& stream : streams) {
    Status status = stream->synchronize();
    if (first.isOk()) first = std::move(status);
  }
  return first;
}

int deviceCount() { return Registry::instance().count(); }

bool validDevice(int index) { return index >= 0 && index < deviceCount(); }

Result<Device*> getDevice(int index) { return Registry::instance().get(index); }

Device* findDevice(const void* ptr) { return Registry::instance().find(ptr); }

int currentDevice() { return tlsCurrentDevice; }

void setCurrentDevice(int index) { tlsCurrentDevice = index; }

Result<trnrtStream*> resolveStream(trnrtStream_t stream) {
  if (stream != nullptr) return stream;
  Result<Device*> device = getDevice(currentDevice());
  if (!device) return device.status();
  return &device.value()->defaultStream();
}

Status enqueue(trnrtStream_t stream, Task&& task, SkipHandler&& onSkip) {
  if (stream != nullptr) {  // the common case: no lookup, no Result to build
    stream->enqueue(std::move(task), std::move(onSkip));
    return Status::ok();
  }
  Result<trnrtStream*> resolved = resolveStream(stream);
  if (!resolved) return resolved.status();
  resolved.value()->enqueue(std::move(task), std::move(onSkip));
  return Status::ok();
}

TaskSlot claimSlot(trnrtStream_t stream) { return stream->claim(); }

void publishSlot(trnrtStream_t stream, uint64_t sequence) { stream->publish(sequence); }

std::optional<MemoryLocation> locate(const void* ptr) {
  Device* device = findDevice(ptr);
  if (device == nullptr) return std::nullopt;
  MemoryLocation location;
  location.device = device->index();
  location.pid = ::getpid();
  location.arenaFd = device->arena().fd();
  location.arenaBytes = device->arena().bytes();
  location.offset = device->arena().offsetOf(ptr);
  return location;
}

}  // namespace trnccl::device
