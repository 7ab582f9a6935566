// Reliability anchor H3, on a running job: every shared-memory segment a rank maps is 0600 and
// owned by the job's user (their names are unlinked by then, so the mappings are inspected
// through /proc/<pid>/map_files), and no rank holds a Unix socket (abstract or not: no
// reliance on socket permissions) nor an open file outside /dev and its own executable and
// libraries (a memfd has no path). Opening a segment as another user is tested where the names
// still exist, in tests/unit/shm/shm_permission_test.cc.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fault/launcher.h"
#include "fault/scenario.h"
#include "fault/sockets.h"

namespace trnccl::fault {
namespace {

using namespace std::chrono_literals;

// "name -> target" of the links in a /proc directory (map_files or fd).
std::vector<std::pair<std::string, std::string>> links(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = d != nullptr ? ::readdir(d) : nullptr) {
    if (e->d_name[0] == '.') continue;
    char target[512] = {};
    std::string path = dir + "/" + e->d_name;
    if (::readlink(path.c_str(), target, sizeof(target) - 1) > 0) out.emplace_back(path, target);
  }
  if (d != nullptr) ::closedir(d);
  return out;
}

std::set<unsigned long> unixSocketInodes() {
  std::set<unsigned long> out;
  std::ifstream in("/proc/net/unix");
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string skip;
    unsigned long inode = 0;
    f >> skip >> skip >> skip >> skip >> skip >> skip >> inode;
    if (f) out.insert(inode);
  }
  return out;
}

TEST(Fault, JobFilesAndSocketsArePrivate) {
  if (::geteuid() != 0) skipTest("needs root to read /proc/<pid>/map_files");
  Job job("loop", 4, {"count=65536", "per_sync=1"}, {{"TRNCCL_TRANSPORT", "shm"}});
  job.startAll();
  waitAllIterating(job, 60s);
  if (::testing::Test::HasFatalFailure()) return;
  std::set<unsigned long> unixSockets = unixSocketInodes();
  std::set<std::string> inherited;
  for (const auto& [path, target] : links("/proc/self/fd")) inherited.insert(target);
  for (int r = 0; r < job.nranks(); ++r) {
    const std::string proc = "/proc/" + std::to_string(job.pid(r));
    int segments = 0;
    for (const auto& [path, target] : links(proc + "/map_files")) {
      if (target.rfind("/dev/shm/", 0) != 0) continue;
      struct stat st {};
      ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
      EXPECT_EQ(st.st_mode & 07777, 0600u) << "rank " << r << ": " << target;
      EXPECT_EQ(st.st_uid, ::geteuid()) << "rank " << r << ": " << target;
      ++segments;
    }
    // Its own segment and those of its 3 peers.
    EXPECT_GE(segments, 4) << "rank " << r << " maps fewer segments than expected";
    for (const auto& [path, target] : links(proc + "/fd")) {
      if (inherited.count(target) != 0) continue;  // the test's own (and CTest's log)
      unsigned long inode = 0;
      if (std::sscanf(target.c_str(), "socket:[%lu]", &inode) == 1) {
        EXPECT_EQ(unixSockets.count(inode), 0u) << "rank " << r << " holds a Unix socket";
      } else if (target[0] == '/' && target.rfind("/memfd:", 0) != 0) {
        // (A memfd, the emulated device's memory, has no name any other process can open.)
        EXPECT_EQ(target.rfind("/dev/", 0), 0u) << "rank " << r << " holds a file: " << target;
      }
    }
  }
}

}  // namespace
}  // namespace trnccl::fault
