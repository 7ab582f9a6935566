// Cheap signals of the machine's state around each run of the step program (library_step.cc),
// to tell a slow mode of the step program from a normal run (docs/SIMULATOR.md, eighteenth
// session): the steal and iowait time of this process's CPUs (/proc/stat: on this Firecracker
// VM, steal is the time the hypervisor ran something else on a vCPU that wanted to run), and the
// one-way time of a cache line between the first two of them (crossCpuHopUs: two processes, one
// on each CPU, bounce a counter by spinning; where the hypervisor runs the two vCPUs on cores far
// apart, a line written by one reaches the other later).
#pragma once

#include <sched.h>
#include <sys/mman.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <new>
#include <vector>

#include "placement.h"

namespace trnccl::calibrate {

// /proc/stat's jiffies summed over `cpus` (USER_HZ ticks, 10 ms here).
struct CpuJiffies {
  uint64_t busy = 0, idle = 0, iowait = 0, steal = 0;
};

inline CpuJiffies readCpuJiffies(const std::vector<int>& cpus) {
  CpuJiffies j;
  FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return j;
  char line[512];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    int cpu = -1;
    unsigned long long v[8] = {};
    if (std::sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1],
                    &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9) {
      continue;  // the "cpu " total line and every other line
    }
    bool mine = false;
    for (int c : cpus) mine = mine || c == cpu;
    if (!mine) continue;
    // user nice system idle iowait irq softirq steal
    j.busy += v[0] + v[1] + v[2] + v[5] + v[6];
    j.idle += v[3];
    j.iowait += v[4];
    j.steal += v[7];
  }
  std::fclose(f);
  return j;
}

// The one-way time of a cache line between the first two usable CPUs, us: process 0 (on the
// first) and process 1 (on the second) take turns incrementing a shared counter, each spinning
// until the other's increment arrives, `rounds` times each. Every wait spins briefly, then yields
// (the peer was not running), bounded by a 2 s deadline. 0 with fewer than two CPUs or on failure.
inline double crossCpuHopUs(int rounds = 20000) {
  if (usableCpus().size() < 2) return 0;
  struct Ping {
    std::atomic<uint32_t> turn{0};
    double seconds = 0;
    std::atomic<int> ready{0};
  };
  void* mem =
      mmap(nullptr, sizeof(Ping), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 0;
  auto* ping = new (mem) Ping;
  using Clock = std::chrono::steady_clock;
  const bool good = runProcesses(2, [ping, rounds](int i) {
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    // Waits until the counter is `want`; false past the deadline.
    const auto await = [&](uint32_t want) {
      for (uint32_t polls = 1; ping->turn.load(std::memory_order_acquire) != want; ++polls) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (polls % 4096 == 0) {
          if (Clock::now() > deadline) return false;
          sched_yield();
        }
      }
      return true;
    };
    ping->ready.fetch_add(1);
    while (ping->ready.load() < 2) {
      if (Clock::now() > deadline) return false;
    }
    const auto t0 = Clock::now();
    for (uint32_t r = 0; r < static_cast<uint32_t>(rounds); ++r) {
      if (!await(2 * r + static_cast<uint32_t>(i))) return false;
      ping->turn.store(2 * r + static_cast<uint32_t>(i) + 1, std::memory_order_release);
    }
    if (i == 0) ping->seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return true;
  });
  const double us = good ? ping->seconds / (2.0 * rounds) * 1e6 : 0;
  munmap(mem, sizeof(Ping));
  return us;
}

}  // namespace trnccl::calibrate
