#include "transports/shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>

#include "common/fd_guard.h"
#include "common/log.h"
#include "transports/shm/testing.h"

namespace trnccl::transport::shm {
namespace {

constexpr size_t kPage = 4096;

size_t roundUp(size_t value, size_t to) { return (value + to - 1) / to * to; }

Result<std::byte*> mapShared(int fd, size_t bytes, const std::string& name) {
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    return systemError("shm: cannot map {} bytes of {}: {}", bytes, name, std::strerror(errno));
  }
  return static_cast<std::byte*>(base);
}

}  // namespace

void touchPages(std::byte* base, size_t bytes) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  for (size_t off = 0; off < bytes; off += page) {
    volatile std::byte* p = base + off;
    *p = *p;
  }
}

size_t SegmentLayout::ctrlOffset() { return roundUp(sizeof(SegmentHeader), kCacheLine); }

size_t SegmentLayout::dataOffset() const {
  return roundUp(ctrlOffset() + size_t{slots} * sizeof(FifoCtrl), kPage);
}

size_t SegmentLayout::totalBytes() const {
  constexpr size_t kMax = std::numeric_limits<size_t>::max() / 2;
  if (fifoBytes > kMax || (slots != 0 && fifoBytes > (kMax - dataOffset()) / slots)) return 0;
  return dataOffset() + size_t{slots} * fifoBytes;
}

std::string segmentName(uint64_t commHash, int rank, uint64_t ownerNonce) {
  return fmt::format("/trnccl-{:016x}-r{}-{:016x}", commHash, rank, ownerNonce);
}

Result<std::shared_ptr<Segment>> Segment::create(const std::string& name, uint64_t commHash,
                                                 int ownerRank, const int* senderRanks,
                                                 uint32_t slots, uint64_t fifoBytes) {
  SegmentLayout layout{slots, fifoBytes};
  size_t bytes = layout.totalBytes();
  if (bytes == 0) {
    return invalidArgument("shm: {} FIFOs of {} bytes overflow a segment size", slots, fifoBytes);
  }
  FdGuard fd(::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) {
    return systemError("shm: cannot create {}: {}{}", name, std::strerror(errno),
                       errno == EEXIST ? " (left over from a job with the same id?)" : "");
  }
  // From here on the name exists: the Segment (or this failure path) must unlink it.
  auto fail = [&](Status status) {
    ::shm_unlink(name.c_str());
    return status;
  };
  // The umask may have narrowed the mode further; 0600 is what peers of the same user need.
  if (::fchmod(fd.get(), 0600) != 0) {
    return fail(systemError("shm: cannot chmod {}: {}", name, std::strerror(errno)));
  }
  // Reserve every page now: a tmpfs out of space then fails here, not as SIGBUS on first touch.
  if (int err = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes)); err != 0) {
    return fail(
        systemError("shm: cannot allocate {} bytes for {}: {}", bytes, name, std::strerror(err)));
  }
  Result<std::byte*> base = mapShared(fd.get(), bytes, name);
  if (!base) return fail(base.status());
  std::shared_ptr<Segment> segment(new Segment(name, std::move(fd), *base, bytes, true));
  touchPages(*base, bytes);  // nobody else knows the segment yet

  auto* header = new (*base) SegmentHeader();
  header->version = kSegmentVersion;
  header->ownerRank = ownerRank;
  header->ownerPid = static_cast<int32_t>(::getpid());
  header->slots = slots;
  header->fifoBytes = fifoBytes;
  header->commHash = commHash;
  for (uint32_t i = 0; i < slots; ++i) {
    FifoCtrl* ctrl = new (*base + SegmentLayout::ctrlOffset() + i * sizeof(FifoCtrl)) FifoCtrl();
    ctrl->senderRank = senderRanks[i];
  }
  // Peers validate the magic; written last (the oob exchange orders it before their reads).
  header->magic = kSegmentMagic;
  testing::runSegmentCreatedHook(segment->fd(), name);
  return segment;
}

Result<std::shared_ptr<Segment>> Segment::open(const std::string& name, uint64_t commHash,
                                               int ownerRank) {
  FdGuard fd(::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0));
  if (!fd) {
    return Status(Code::kSystemError,
                  fmt::format("shm: cannot open rank {}'s segment {}: {}", ownerRank, name,
                              std::strerror(errno)),
                  ownerRank);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 ||
      static_cast<size_t>(st.st_size) < SegmentLayout::ctrlOffset()) {
    return internalError("shm: segment {} of rank {} is too small ({} bytes)", name, ownerRank,
                         st.st_size);
  }
  size_t bytes = static_cast<size_t>(st.st_size);
  Result<std::byte*> base = mapShared(fd.get(), bytes, name);
  if (!base) return base.status();
  // Owns the mapping from here; the fd is not needed once mapped (closed on return).
  std::shared_ptr<Segment> segment(new Segment(name, FdGuard(), *base, bytes, false));
  const SegmentHeader* header = segment->header();
  SegmentLayout layout{header->slots, header->fifoBytes};
  if (header->magic != kSegmentMagic || header->version != kSegmentVersion ||
      header->commHash != commHash || header->ownerRank != ownerRank ||
      layout.totalBytes() != bytes) {
    return internalError(
        "shm: segment {} is not rank {}'s (magic {:#x} version {} comm {:#x} rank {} "
        "size {} for {} FIFOs of {} bytes)",
        name, ownerRank, header->magic, header->version, header->commHash, header->ownerRank, bytes,
        header->slots, header->fifoBytes);
  }
  return segment;
}

Segment::~Segment() {
  if (linked_) ::shm_unlink(name_.c_str());
  closeFd();
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

Status Segment::unlink() {
  if (!linked_) return Status::ok();
  linked_ = false;
  if (::shm_unlink(name_.c_str()) != 0) {
    return systemError("shm: cannot unlink {}: {}", name_, std::strerror(errno));
  }
  return Status::ok();
}

void Segment::closeFd() { fd_.reset(); }

FifoCtrl* Segment::ctrl(uint32_t slot) const {
  return reinterpret_cast<FifoCtrl*>(base_ + SegmentLayout::ctrlOffset() +
                                     size_t{slot} * sizeof(FifoCtrl));
}

std::byte* Segment::data(uint32_t slot) const {
  SegmentLayout layout{slots(), fifoBytes()};
  return base_ + layout.dataOffset() + size_t{slot} * fifoBytes();
}

int Segment::slotOf(int rank) const {
  for (uint32_t i = 0; i < slots(); ++i) {
    if (ctrl(i)->senderRank == rank) return static_cast<int>(i);
  }
  return -1;
}

namespace testing {
namespace {
std::mutex hookMutex;
SegmentHook& hook() {
  static SegmentHook h;
  return h;
}
}  // namespace

void setSegmentCreatedHook(SegmentHook h) {
  std::lock_guard lock(hookMutex);
  hook() = std::move(h);
}

void runSegmentCreatedHook(int fd, const std::string& name) {
  std::lock_guard lock(hookMutex);
  if (hook()) hook()(fd, name);
}
}  // namespace testing

}  // namespace trnccl::transport::shm
