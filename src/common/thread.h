// Every thread trnccl starts goes through startThread.
//
// glibc's getenv() is not safe against a setenv()/unsetenv() on another thread (the
// environment array is scanned without a lock), and programs change their environment once
// init has returned: launchers' wrappers, Python's os.environ, our own tests. So no thread of
// the library reads the environment: the settings read lazily at first use (TRNCCL_DEBUG*,
// TRNCCL_WAIT_*) are read by startThread on the thread that starts one, which is the user's
// thread inside an init call (stream creation, communicator init, trncclGetUniqueId). The rest
// is read by the init calls themselves.
#pragma once

#include <thread>
#include <utility>

namespace trnccl {

// Reads the process-wide settings that are read once, at first use (log::enabled,
// WaitPolicy::process), now. Idempotent and cheap after the first call.
void readProcessSettings();

template <class Fn>
std::thread startThread(Fn&& fn) {
  readProcessSettings();
  return std::thread(std::forward<Fn>(fn));
}

}  // namespace trnccl
