// trnccl-sim-calibrate: measures this machine for trnccl-sim's `host` description, the model of
// N ranks of one machine talking over the shm transport (docs/SIMULATOR.md, "This machine"):
//   - copy bandwidth: one process copying a buffer far larger than the caches into shared
//     memory (the shm transport copies each byte in and out once, in a pipeline);
//   - hand-off latency: half the round trip of a flag bounced between two processes through
//     shared memory, each waiting the way the library does (spin, then sleep).
// Writes a description (YAML) in which every rank is a chip of its own on a switch whose port has
// the copy bandwidth and the hand-off latency, and whose "HBM" does two bytes of memory traffic
// per byte copied. Usage: trnccl-sim-calibrate [--chips N] [--out FILE]
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "common/wait.h"

namespace {

using trnccl::Backoff;
using trnccl::Deadline;
using Seconds = std::chrono::duration<double>;

constexpr size_t kCopyBytes = size_t{64} << 20;
constexpr int kCopyRounds = 8;
constexpr int kBounces = 20000;

double copyGbps() {
  void* shared =
      mmap(nullptr, kCopyBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return 0;
  std::string local(kCopyBytes, 'x');
  std::memcpy(shared, local.data(), kCopyBytes);  // fault the pages in
  double best = 0;
  for (int i = 0; i < kCopyRounds; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(shared, local.data(), kCopyBytes);
    const double s = Seconds(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(kCopyBytes) / s / 1e9);
  }
  munmap(shared, kCopyBytes);
  return best;
}

// Waits until *word holds `want`; false after 10 s (a peer that died).
bool await(const std::atomic<uint64_t>* word, uint64_t want) {
  Backoff backoff;
  const Deadline deadline = Deadline::after(std::chrono::seconds(10));
  while (word->load(std::memory_order_acquire) != want) {
    if (deadline.expired()) return false;
    if (!backoff.next()) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return true;
}

double handOffUs() {
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 0;
  auto* ping = new (mem) std::atomic<uint64_t>(0);
  auto* pong = new (static_cast<char*>(mem) + 64) std::atomic<uint64_t>(0);
  const pid_t child = fork();
  if (child == 0) {
    for (uint64_t i = 1; i <= kBounces; ++i) {
      if (!await(ping, i)) _exit(1);
      pong->store(i, std::memory_order_release);
    }
    _exit(0);
  }
  auto t0 = std::chrono::steady_clock::now();
  bool ok = true;
  for (uint64_t i = 1; i <= kBounces && ok; ++i) {
    ping->store(i, std::memory_order_release);
    ok = await(pong, i);
  }
  const double s = Seconds(std::chrono::steady_clock::now() - t0).count();
  int status = 0;
  waitpid(child, &status, 0);
  munmap(mem, 4096);
  return ok ? s / kBounces / 2 * 1e6 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  int chips = 4;
  std::string out = "host.yaml";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--chips") chips = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--out") out = argv[i + 1];
  }
  if (chips < 2 || argc % 2 == 0) {
    std::fprintf(stderr, "usage: trnccl-sim-calibrate [--chips N>=2] [--out FILE]\n");
    return 2;
  }
  const double gbps = copyGbps(), us = handOffUs();
  if (gbps <= 0 || us <= 0) {
    std::fprintf(stderr, "trnccl-sim-calibrate: measurement failed\n");
    return 1;
  }
  const std::string yaml = fmt::format(
      "# This machine as trnccl-sim sees the shm transport, measured by trnccl-sim-calibrate:\n"
      "# copy bandwidth {:.2f} GB/s, hand-off latency {:.2f} us (docs/SIMULATOR.md).\n"
      "name: host\n"
      "description: \"{} ranks of this machine over shared memory (measured)\"\n"
      "instances: 1\nchips_per_instance: {}\nlnc: 1\n"
      "device: {{kind: host, cores_per_chip: 1, hbm_gib_per_chip: 1, hbm_bandwidth_gbps: {:.2f}}}\n"
      "fabric:\n  kind: switch\n"
      "  link: {{class: pcie, bandwidth_gbps: {:.2f}, latency_us: {:.2f}}}\n",
      gbps, us, chips, chips, 2 * gbps, gbps, us);
  FILE* f = std::fopen(out.c_str(), "w");
  if (f == nullptr || std::fputs(yaml.c_str(), f) < 0 || std::fclose(f) != 0) {
    std::fprintf(stderr, "trnccl-sim-calibrate: cannot write %s\n", out.c_str());
    return 1;
  }
  std::printf("copy %.2f GB/s, hand-off %.2f us: %s\n", gbps, us, out.c_str());
  return 0;
}
