// Accepts connections on the listening sockets in a background thread during start-up and
// runs the server side of the token handshake on all of them at once, so a silent or hostile
// connection delays nobody. Authenticated connections queue up for next(); the others are
// closed and counted. Destroying the Acceptor stops the thread and closes the listeners.
//
// Under a flood (hundreds of silent or wrong-token connections) the real ranks still get in:
// - at most max_pending handshakes run at once (the rest wait in the kernel's listen queue);
//   each has its own deadline (handshake_timeout) and fails alone when it passes;
// - at the cap, the oldest handshake that has run for at least `grace` is closed to make room
//   (a real rank answers the challenge within one round trip), so a flood is cycled through
//   and cannot park in front of the real ranks;
// - accept() failing with EMFILE/ENFILE (descriptor limit) pauses accepting for `backoff`
//   (the listener is not polled meanwhile: no spin) and lowers the cap below the number of
//   handshakes then open, so the rest of the process keeps a few descriptors for its own
//   connections; accepting then resumes.
// With the empty token only loopback peers are admitted: any other is closed at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
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

struct AcceptorLimits {
  /// Handshakes run at once; 0 = a quarter of the soft RLIMIT_NOFILE, clamped to 4..64.
  size_t max_pending = 0;
  /// A handshake younger than this is never closed to make room.
  std::chrono::milliseconds grace{250};
  /// Pause in accepting after accept() fails for lack of descriptors (EMFILE, ENFILE).
  std::chrono::milliseconds backoff{50};
};

class Acceptor {
 public:
  /// `handshake_timeout`: each connection's deadline to prove the token. An empty `token`
  /// admits loopback peers only. Throws kSystem when the wake-up pipe cannot be made.
  Acceptor(std::vector<tcp::Fd> listeners, std::string token,
           std::chrono::milliseconds handshake_timeout, AcceptorLimits limits = {});
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  /// The next authenticated connection, or nullopt at the deadline. Throws Error(kInterrupted)
  /// when the calling thread's tcp::InterruptScope says to give up.
  std::optional<Accepted> next(Deadline deadline);
  /// Local addresses of the listeners (port filled in).
  const std::vector<tcp::Address>& addresses() const { return addresses_; }
  /// Connections refused so far (wrong token, garbage, silence, shed to make room, not
  /// loopback without a token).
  size_t rejected() const { return rejected_.load(); }
  /// Times accept() failed for lack of descriptors (EMFILE, ENFILE).
  size_t fd_limit_hits() const { return fd_limit_hits_.load(); }
  /// The cap on concurrent handshakes in force now (it only goes down, after EMFILE).
  size_t max_pending() const { return max_pending_.load(); }

 private:
  void run();

  std::vector<tcp::Fd> listeners_;
  std::vector<tcp::Address> addresses_;
  std::string token_;
  std::chrono::milliseconds handshake_timeout_;
  AcceptorLimits limits_;
  tcp::Fd wake_read_, wake_write_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Accepted> ready_;
  std::atomic<size_t> rejected_{0};
  std::atomic<size_t> fd_limit_hits_{0};
  std::atomic<size_t> max_pending_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace cc::comm
