// A transparent TCP proxy that delays every byte by a fixed time, for the delay scenario of
// netfault_test.sh: the kernel here has no netem, so added latency comes from user space.
//
// The script redirects the connections another emulated host opens to this one to the proxy
// (iptables -t nat PREROUTING ... -j REDIRECT --to-ports <port>); the proxy accepts each,
// learns where it was going (SO_ORIGINAL_DST), connects there, and relays both directions,
// each chunk it reads leaving `delay` ms later, in order. SIGUSR1 switches to the second delay
// for every chunk read from then on. Each direction buffers at most kMaxQueued bytes (reading
// pauses beyond), so a slow side slows the other, as a real path would.
//
// Usage: delay_proxy <port> <delay ms> <delay ms after SIGUSR1> <watchdog s>
// Prints "LISTENING <port>" once it accepts, and "PAIR <address:port>" for each connection it
// relays. One thread, poll(); nothing spins.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kChunk = 64 << 10;
constexpr size_t kMaxQueued = 8 << 20;

volatile std::sig_atomic_t switched = 0;

struct Chunk {
  Clock::time_point due;
  std::vector<char> bytes;
  size_t sent = 0;
};

// One direction: bytes read from `from`, written to `to` once due.
struct Flow {
  int from = -1;
  int to = -1;
  std::deque<Chunk> queue;
  size_t queued = 0;
  bool eof = false;  // `from` ended: shut `to` down once the queue is empty
  bool shut = false;
};

struct Pair {
  Flow ab, ba;
  bool dead = false;
};

int listenOn(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof(at)) != 0 || ::listen(fd, 64) != 0) {
    std::perror("delay_proxy: listen");
    std::exit(1);
  }
  return fd;
}

// Accepts one redirected connection and connects to where it was going; null on failure.
std::unique_ptr<Pair> acceptOne(int listener) {
  int a = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (a < 0) return nullptr;
  sockaddr_in dst{};
  socklen_t len = sizeof(dst);
  int b = -1;
  if (::getsockopt(a, SOL_IP, SO_ORIGINAL_DST, &dst, &len) == 0) {
    b = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(b, reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) != 0) {
      ::close(b);
      b = -1;
    }
  }
  if (b < 0) {
    ::close(a);
    return nullptr;
  }
  char name[INET_ADDRSTRLEN] = "";
  ::inet_ntop(AF_INET, &dst.sin_addr, name, sizeof(name));
  std::printf("PAIR %s:%d\n", name, ntohs(dst.sin_port));
  std::fflush(stdout);
  for (int fd : {a, b}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  auto pair = std::make_unique<Pair>();
  pair->ab = {a, b, {}, 0, false, false};
  pair->ba = {b, a, {}, 0, false, false};
  return pair;
}

void readSome(Flow& f, std::chrono::milliseconds delay, bool& dead) {
  Chunk chunk{Clock::now() + delay, std::vector<char>(kChunk), 0};
  ssize_t n = ::read(f.from, chunk.bytes.data(), chunk.bytes.size());
  if (n > 0) {
    chunk.bytes.resize(static_cast<size_t>(n));
    f.queued += chunk.bytes.size();
    f.queue.push_back(std::move(chunk));
  } else if (n == 0) {
    f.eof = true;
  } else if (errno != EAGAIN && errno != EINTR) {
    dead = true;
  }
}

void writeDue(Flow& f, bool& dead) {
  while (!f.queue.empty() && f.queue.front().due <= Clock::now()) {
    Chunk& c = f.queue.front();
    ssize_t n = ::send(f.to, c.bytes.data() + c.sent, c.bytes.size() - c.sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno != EAGAIN && errno != EINTR) dead = true;
      return;
    }
    c.sent += static_cast<size_t>(n);
    if (c.sent < c.bytes.size()) return;
    f.queued -= c.bytes.size();
    f.queue.pop_front();
  }
  if (f.eof && f.queue.empty() && !f.shut) {
    ::shutdown(f.to, SHUT_WR);
    f.shut = true;
  }
}

// poll() interest of one flow's two descriptors, added to `fds`.
void want(const Flow& f, std::vector<pollfd>& fds) {
  short in = (!f.eof && f.queued < kMaxQueued) ? POLLIN : 0;
  bool due = !f.queue.empty() && f.queue.front().due <= Clock::now();
  fds.push_back({f.from, in, 0});
  fds.push_back({f.to, static_cast<short>(due ? POLLOUT : 0), 0});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s <port> <delay ms> <delay ms after SIGUSR1> <watchdog s>\n",
                 argv[0]);
    return 2;
  }
  const std::chrono::milliseconds delays[2] = {std::chrono::milliseconds(std::atol(argv[2])),
                                               std::chrono::milliseconds(std::atol(argv[3]))};
  std::signal(SIGUSR1, [](int) { switched = 1; });
  std::signal(SIGPIPE, SIG_IGN);
  alarm(static_cast<unsigned>(std::atoi(argv[4])));
  int listener = listenOn(std::atoi(argv[1]));
  std::printf("LISTENING %s\n", argv[1]);
  std::fflush(stdout);
  std::vector<std::unique_ptr<Pair>> pairs;
  while (true) {
    std::vector<pollfd> fds = {{listener, POLLIN, 0}};
    auto wake = Clock::now() + std::chrono::seconds(1);
    for (auto& p : pairs) {
      for (Flow* f : {&p->ab, &p->ba}) {
        want(*f, fds);
        if (!f->queue.empty()) wake = std::min(wake, f->queue.front().due);
      }
    }
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(wake - Clock::now());
    ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long>(0, wait.count())));
    auto delay = delays[switched ? 1 : 0];
    constexpr short kReadable = POLLIN | POLLHUP | POLLERR;
    for (size_t i = 0; i < pairs.size(); ++i) {
      Pair& p = *pairs[i];
      int j = 0;
      for (Flow* f : {&p.ab, &p.ba}) {
        if ((fds[1 + 4 * i + 2 * j++].revents & kReadable) != 0) readSome(*f, delay, p.dead);
        writeDue(*f, p.dead);
      }
    }
    if ((fds[0].revents & POLLIN) != 0) {
      if (auto p = acceptOne(listener)) pairs.push_back(std::move(p));
    }
    // A pair whose flows both ended closes; one that failed resets both sides, as a broken
    // path would.
    std::erase_if(pairs, [](const std::unique_ptr<Pair>& p) {
      bool done = p->dead || (p->ab.shut && p->ba.shut);
      if (!done) return false;
      for (int fd : {p->ab.from, p->ab.to}) {
        if (p->dead) {
          linger reset{1, 0};
          ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
        }
        ::close(fd);
      }
      return true;
    });
  }
}
