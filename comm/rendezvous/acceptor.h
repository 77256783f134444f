// Accepts connections on the listening sockets in a background thread during start-up and
// runs the server side of the token handshake on all of them at once, so a silent or hostile
// connection delays nobody. Authenticated connections queue up for next(); the others are
// closed and counted. Destroying the Acceptor stops the thread and closes the listeners.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "comm/transport/tcp/socket.h"

namespace cc::comm {

struct Accepted {
  tcp::Fd fd;
  std::string hello;  // what the client sent after proving the token
  tcp::Address peer;  // its address as seen here
};

class Acceptor {
 public:
  Acceptor(std::vector<tcp::Fd> listeners, std::string token,
           std::chrono::milliseconds handshake_timeout);
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  /// The next authenticated connection, or nullopt at the deadline.
  std::optional<Accepted> next(Deadline deadline);
  /// Local addresses of the listeners (port filled in).
  const std::vector<tcp::Address>& addresses() const { return addresses_; }
  /// Connections refused so far (wrong token, garbage, silence).
  size_t rejected() const { return rejected_.load(); }

 private:
  void run();

  std::vector<tcp::Fd> listeners_;
  std::vector<tcp::Address> addresses_;
  std::string token_;
  std::chrono::milliseconds handshake_timeout_;
  tcp::Fd wake_read_, wake_write_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Accepted> ready_;
  std::atomic<size_t> rejected_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace cc::comm
