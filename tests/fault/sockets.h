// What the kernel says about TCP sockets (/proc/net/tcp and tcp6, of the caller's network
// namespace) and which of them a process holds (/proc/<pid>/fd), for tests that check ports,
// find a job's connections to reset and its listeners to send junk to.
#pragma once

#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace trnccl::fault {

constexpr int kTcpEstablished = 0x01, kTcpListen = 0x0A;  // st column of /proc/net/tcp

struct TcpEntry {
  std::string localAddress, remoteAddress;  // as the kernel prints them (hex)
  uint16_t localPort = 0, remotePort = 0;
  int state = 0;
  unsigned long inode = 0;
};

inline std::vector<TcpEntry> tcpTable() {
  std::vector<TcpEntry> out;
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string slot, local, remote, state, skip;
      TcpEntry e;
      f >> slot >> local >> remote >> state >> skip >> skip >> skip >> skip >> skip >> e.inode;
      size_t lc = local.rfind(':'), rc = remote.rfind(':');
      if (!f || lc == std::string::npos || rc == std::string::npos) continue;
      e.localAddress = local.substr(0, lc);
      e.remoteAddress = remote.substr(0, rc);
      e.localPort = static_cast<uint16_t>(std::stoul(local.substr(lc + 1), nullptr, 16));
      e.remotePort = static_cast<uint16_t>(std::stoul(remote.substr(rc + 1), nullptr, 16));
      e.state = static_cast<int>(std::stoul(state, nullptr, 16));
      out.push_back(e);
    }
  }
  return out;
}

inline bool isListening(uint16_t port) {
  for (const TcpEntry& e : tcpTable()) {
    if (e.state == kTcpListen && e.localPort == port) return true;
  }
  return false;
}

// Established connections whose far end is `port` (the clients of a listener on it).
inline int connectionsTo(uint16_t port) {
  int n = 0;
  for (const TcpEntry& e : tcpTable()) n += e.state == kTcpEstablished && e.remotePort == port;
  return n;
}

// Inodes of the sockets process `pid` holds ("socket:[123]" in /proc/<pid>/fd).
inline std::set<unsigned long> socketInodes(pid_t pid) {
  std::set<unsigned long> out;
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    char target[64] = {};
    std::string link = dir + "/" + e->d_name;
    ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
    unsigned long inode = 0;
    if (n > 0 && std::sscanf(target, "socket:[%lu]", &inode) == 1) out.insert(inode);
  }
  ::closedir(d);
  return out;
}

// The TCP sockets process `pid` holds, in `state` (0: any).
inline std::vector<TcpEntry> tcpOf(pid_t pid, int state = 0) {
  std::set<unsigned long> inodes = socketInodes(pid);
  std::vector<TcpEntry> out;
  for (const TcpEntry& e : tcpTable()) {
    if (inodes.count(e.inode) != 0 && (state == 0 || e.state == state)) out.push_back(e);
  }
  return out;
}

}  // namespace trnccl::fault
