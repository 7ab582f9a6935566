// The process-wide registry of root threads. Why a registry: a root outlives the call that
// started it (it serves until the ranks say goodbye), and a thread still running when the
// process exits would touch destroyed state. The registry joins finished roots as new ones
// start, and stops and joins the rest from an atexit handler.
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "bootstrap/bootstrap_root.h"
#include "common/log.h"
#include "common/thread.h"

namespace trnccl::bootstrap {
namespace {

struct RootThread {
  // The thread owns the service and frees it (its io_context's descriptors) as soon as it is
  // done serving; the registry only needs it to stop() one still running.
  std::weak_ptr<RootService> service;
  std::thread thread;
  std::shared_ptr<std::atomic<bool>> done;
};

class Registry {
 public:
  static Registry& get() {
    // Leaked on purpose: the atexit handler below may run after static destructors of
    // objects constructed later.
    static Registry* registry = [] {
      // Constructs the logging configuration first, so it is destroyed after our handler runs.
      (void)log::enabled(log::Level::kWarn, log::kBoot);
      auto* r = new Registry;
      std::atexit([] { Registry::get().stopAll(); });
      return r;
    }();
    return *registry;
  }

  Result<uint16_t> start(const std::string& host, uint16_t port, uint64_t magic) {
    std::lock_guard<std::mutex> lock(mu_);
    if (exiting_) return internalError("bootstrap: cannot start a root while the process exits");
    reapLocked();
    if (port != 0 && roots_.count(key(host, port)) != 0) return port;  // already serving
    auto service = RootService::create(host, port, magic);
    if (!service) return service.status();
    uint16_t bound = (*service)->port();
    RootThread& root = roots_[key(host, bound)];
    std::shared_ptr<RootService> owned = std::move(service.value());
    root.service = owned;
    root.done = std::make_shared<std::atomic<bool>>(false);
    root.thread = startThread([svc = std::move(owned), done = root.done]() mutable {
      svc->run();
      svc.reset();
      done->store(true, std::memory_order_release);
    });
    return bound;
  }

  void stopAll() {
    std::lock_guard<std::mutex> lock(mu_);
    exiting_ = true;
    for (auto& [name, root] : roots_) {
      if (auto svc = root.service.lock()) svc->stop();
    }
    for (auto& [name, root] : roots_) {
      if (root.thread.joinable()) root.thread.join();
    }
    roots_.clear();
  }

 private:
  static std::string key(const std::string& host, uint16_t port) {
    return host + "|" + std::to_string(port);
  }

  void reapLocked() {
    for (auto it = roots_.begin(); it != roots_.end();) {
      if (it->second.done->load(std::memory_order_acquire)) {
        it->second.thread.join();
        it = roots_.erase(it);
      } else {
        ++it;
      }
    }
  }

  std::mutex mu_;
  bool exiting_ = false;
  std::map<std::string, RootThread> roots_;
};

}  // namespace

Result<uint16_t> startRoot(const std::string& host, uint16_t port, uint64_t magic) {
  return Registry::get().start(host, port, magic);
}

}  // namespace trnccl::bootstrap
