// What a leak check samples about the calling process (/proc) and /dev/shm.
#pragma once

#include <dirent.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace trnccl::fault {

inline int countEntries(const char* dir, const char* prefix = "") {
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    if (std::strncmp(e->d_name, prefix, std::strlen(prefix)) == 0) ++n;
  }
  closedir(d);
  return n;
}

// Open descriptors (minus the one opendir itself holds while counting).
inline int openFds() { return countEntries("/proc/self/fd") - 1; }
inline int threads() { return countEntries("/proc/self/task"); }
inline int shmEntries(const std::string& prefix) {
  return countEntries("/dev/shm", prefix.c_str());
}

inline long rssKb() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
  }
  std::fclose(f);
  return kb;
}

}  // namespace trnccl::fault
