#include "transports/tcp/io_thread.h"

#include <boost/asio/post.hpp>
#include <future>

#include "common/thread.h"

namespace trnccl::transport::tcp {

IoThread::IoThread() : work_(boost::asio::make_work_guard(io_)) {
  thread_ = startThread([this] {
    // Handlers never throw (every socket call takes an error_code); a throw here is a bug,
    // and letting it escape would terminate the process anyway.
    io_.run();
  });
}

IoThread::~IoThread() {
  work_.reset();
  io_.stop();
  thread_.join();
}

void IoThread::runSync(const std::function<void()>& fn) {
  if (std::this_thread::get_id() == thread_.get_id()) {
    fn();
    return;
  }
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  boost::asio::post(io_, [&] {
    fn();
    done.set_value();
  });
  finished.wait();
}

}  // namespace trnccl::transport::tcp
