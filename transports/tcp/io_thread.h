// The background thread of one TCP transport instance: an io_context that runs every socket
// operation of its connections, so the executor's thread never blocks on a socket.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <thread>

namespace trnccl::transport::tcp {

class IoThread {
 public:
  IoThread();
  ~IoThread();  // stops the context, joins; pending handlers (and what they hold) are destroyed
  IoThread(const IoThread&) = delete;
  IoThread& operator=(const IoThread&) = delete;

  boost::asio::io_context& context() { return io_; }
  // Runs `fn` on the I/O thread and waits for it to finish.
  void runSync(const std::function<void()>& fn);

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
};

}  // namespace trnccl::transport::tcp
