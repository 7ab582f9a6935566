// Reliability anchor P2: the interface choice, between two emulated hosts. Host A (rank 0,
// which makes the unique id and hosts the root) and host B (ranks 1 and 2) are network
// namespaces joined by a veth pair (10.77.0.1 / 10.77.0.2); A also has a decoy, docker0
// (10.66.0.1, one end of a veth pair whose ends both stay in A), listed first and unreachable
// from B. The ranks take the id through a file
// (id_file.h) and choose their interfaces by the documented rule (transports/net/interfaces.h).
// Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN); skipped with the reason otherwise. The namespaces
// are per test process and deleted on the way out, failed or not.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "fault/launcher.h"
#include "fault/scenario.h"

namespace trnccl::fault {
namespace {

using namespace std::chrono_literals;

bool sh(const std::string& command) { return std::system((command + " 2>&1").c_str()) == 0; }

// Hosts A and B. The constructor leaves the test in its own namespace.
class TwoHosts {
 public:
  TwoHosts() {
    const std::string id = std::to_string(::getpid());
    a_ = "trnccl-p2a-" + id;
    b_ = "trnccl-p2b-" + id;
    dir_ = "/tmp/trnccl-p2-" + id;
    std::filesystem::create_directories(dir_);
    if (::geteuid() != 0) return;
    ok_ = sh("ip netns add " + a_) && sh("ip netns add " + b_) &&
          // The decoy first: getifaddrs lists A's interfaces in creation order.
          sh("ip -n " + a_ + " link add docker0 type veth peer name docker0p") &&
          sh("ip -n " + a_ + " addr add 10.66.0.1/24 dev docker0") &&
          sh("ip -n " + a_ + " link set docker0 up") &&
          sh("ip -n " + a_ + " link add eth1 type veth peer name eth1 netns " + b_) &&
          sh("ip -n " + a_ + " addr add 10.77.0.1/24 dev eth1") &&
          sh("ip -n " + b_ + " addr add 10.77.0.2/24 dev eth1") &&
          // B has a docker0 too (its own subnet), so that a rule naming docker0 finds one.
          sh("ip -n " + b_ + " link add docker0 type veth peer name docker0p") &&
          sh("ip -n " + b_ + " addr add 10.55.0.2/24 dev docker0") &&
          sh("ip -n " + b_ + " link set docker0 up");
    for (const std::string& ns : {a_, b_}) {
      ok_ = ok_ && sh("ip -n " + ns + " link set lo up") &&
            sh("ip -n " + ns + " link set eth1 up") && sh("ip -n " + ns + " link set docker0p up");
    }
  }
  ~TwoHosts() {
    std::system(("ip netns del " + a_ + " >/dev/null 2>&1").c_str());
    std::system(("ip netns del " + b_ + " >/dev/null 2>&1").c_str());
    std::filesystem::remove_all(dir_);
  }
  bool ok() const { return ok_; }
  std::string idFile() const { return dir_ + "/id"; }

  // Starts rank 0 in A and the others in B (children inherit the namespace at fork).
  void start(Job& job) {
    int self = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    for (int r = 0; r < job.nranks(); ++r) {
      int ns = ::open(("/run/netns/" + (r == 0 ? a_ : b_)).c_str(), O_RDONLY | O_CLOEXEC);
      ASSERT_EQ(::setns(ns, CLONE_NEWNET), 0) << "setns: " << std::strerror(errno);
      ::close(ns);
      job.start(r);
    }
    ASSERT_EQ(::setns(self, CLONE_NEWNET), 0);
    ::close(self);
  }

 private:
  std::string a_, b_, dir_;
  bool ok_ = false;
};

void skipWithoutNamespaces() {
#if !TRNCCL_HAVE_TCP
  skipTest("transports/tcp is not in this build (no trnccl_tcp target)");
#endif
  if (::geteuid() != 0) skipTest("needs root for network namespaces");
}

Job makeJob(const TwoHosts& hosts, const std::string& ifname, int timeoutMs) {
  return Job("loop", 3, {"count=4096", "per_sync=1", "iters=20", "id_file=" + hosts.idFile()},
             {{"TRNCCL_COMM_ID", ""},
              {"TRNCCL_BOOTSTRAP_HOST", ""},
              {"TRNCCL_SOCKET_IFNAME", ifname},
              {"TRNCCL_TRANSPORT", "tcp"},
              {"TRNCCL_TIMEOUT_MS", std::to_string(timeoutMs)}});
}

// Unset TRNCCL_SOCKET_IFNAME: the rule skips docker* (and lo) although docker0 comes first, so
// the root listens on A's eth1, which B reaches, and the job completes. Choosing docker0 (the
// first interface) would leave B's ranks without a route to the root.
TEST(Fault, DecoyInterfaceIsSkipped) {
  skipWithoutNamespaces();
  TwoHosts hosts;
  ASSERT_TRUE(hosts.ok()) << "could not build the namespaces (ip netns, veth)";
  Job job = makeJob(hosts, "", 20000);
  hosts.start(job);
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(job.waitLine(r, "DONE", 60s)) << "rank " << r << ":\n" << job.output(r);
  }
}

// TRNCCL_SOCKET_IFNAME==docker0 forces the unreachable choice: B's ranks fail their init within
// T + 2 s naming the root's address and interface; rank 0 learns which ranks never came.
TEST(Fault, UnreachableInterfaceFailsNamingIt) {
  skipWithoutNamespaces();
  TwoHosts hosts;
  ASSERT_TRUE(hosts.ok()) << "could not build the namespaces (ip netns, veth)";
  const int timeoutMs = 3000;
  Job job = makeJob(hosts, "=docker0", timeoutMs);
  long long started = nowMs();
  hosts.start(job);
  for (int r : {1, 2}) {
    auto line = job.waitLine(r, "INITFAIL ", std::chrono::milliseconds(timeoutMs + 5000));
    ASSERT_TRUE(line) << "rank " << r << " did not fail its init:\n" << job.output(r);
    std::printf("rank %d (host B): %s\n", r, line->c_str());
    EXPECT_LE(nowMs() - started, timeoutMs + 2000) << *line;
    EXPECT_EQ(std::atoi(line->c_str()), kTimeout) << *line;
    EXPECT_NE(line->find("10.66.0.1"), std::string::npos) << *line;
    EXPECT_NE(line->find("interface docker0"), std::string::npos) << *line;
    EXPECT_NE(line->find("TRNCCL_SOCKET_IFNAME"), std::string::npos) << *line;
  }
  auto root = job.waitLine(0, "INITFAIL ", std::chrono::milliseconds(timeoutMs + 5000));
  ASSERT_TRUE(root) << job.output(0);
  std::printf("rank 0 (host A): %s\n", root->c_str());
  EXPECT_NE(root->find("missing ranks 1, 2"), std::string::npos) << *root;
}

}  // namespace
}  // namespace trnccl::fault
