// Reliability anchor H3: every segment a communicator creates is 0600 and owned by the job's
// user whatever the umask, and another user cannot open it while it exists (between its
// creation and the unlink once every peer mapped it; the hook runs in that window).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "transports/shm/testing.h"
#include "unit/shm/shm_test_util.h"

namespace trnccl::transport::shm::test {
namespace {

struct Seen {
  std::string name;
  unsigned mode = 0;
  uid_t uid = 0;
  int asSelf = -1;    // exit status of reading /dev/shm/<name> as this user
  int asNobody = -1;  // ... as uid/gid 65534 (setpriv)
};

// Exit status of `command` (its output dropped).
int run(const std::string& command) {
  int status = std::system((command + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ShmPermissions, SegmentsArePrivateToTheJobsUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another user (setpriv)";
  if (run("setpriv --version") != 0) GTEST_SKIP() << "setpriv is not installed";
  mode_t oldMask = ::umask(0);  // the most permissive umask: the segment must still be 0600
  std::mutex mutex;
  std::vector<Seen> seen;
  testing::setSegmentCreatedHook([&](int fd, const std::string& name) {
    Seen s;
    s.name = name;
    struct stat st {};
    if (::fstat(fd, &st) == 0) {
      s.mode = st.st_mode & 07777;
      s.uid = st.st_uid;
    }
    const std::string path = "/dev/shm" + name;
    s.asSelf = run("cat " + path);
    s.asNobody = run("setpriv --reuid=65534 --regid=65534 --clear-groups cat " + path);
    std::lock_guard lock(mutex);
    seen.push_back(s);
  });
  Cluster cluster(3);
  Status status = cluster.connect([](int r) {
    std::vector<int> peers;
    for (int p = 0; p < 3; ++p) {
      if (p != r) peers.push_back(p);
    }
    return peers;
  });
  testing::setSegmentCreatedHook(nullptr);
  ::umask(oldMask);
  ASSERT_TRUE(status.isOk()) << status.message();
  ASSERT_EQ(seen.size(), 3u);
  for (const Seen& s : seen) {
    EXPECT_EQ(s.mode, 0600u) << s.name;
    EXPECT_EQ(s.uid, ::geteuid()) << s.name;
    EXPECT_EQ(s.asSelf, 0) << s.name << " could not be read by its owner (wrong path?)";
    EXPECT_NE(s.asNobody, 0) << s.name << " could be read by uid 65534";
  }
  EXPECT_TRUE(leftoverSegments(cluster.hash).empty());
}

}  // namespace
}  // namespace trnccl::transport::shm::test
