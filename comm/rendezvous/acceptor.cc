#include "comm/rendezvous/acceptor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "comm/error.h"
#include "comm/rendezvous/handshake.h"

namespace cc::comm {
namespace {

// Descriptors left to the rest of the process when accept() hits the limit.
constexpr size_t kFdReserve = 4;

size_t default_max_pending() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 64;
  return std::clamp(static_cast<size_t>(rl.rlim_cur / 4), size_t{4}, size_t{64});
}

struct Pending {
  std::unique_ptr<ServerHandshake> handshake;
  tcp::Address peer;
  Clock::time_point since;
};

}  // namespace

Acceptor::Acceptor(std::vector<tcp::Fd> listeners, std::string token,
                   std::chrono::milliseconds handshake_timeout, AcceptorLimits limits)
    : listeners_(std::move(listeners)),
      token_(std::move(token)),
      handshake_timeout_(handshake_timeout),
      limits_(limits) {
  for (const tcp::Fd& l : listeners_) addresses_.push_back(tcp::local_address(l.get()));
  max_pending_ = limits_.max_pending > 0 ? limits_.max_pending : default_max_pending();
  int p[2];
  if (::pipe(p) != 0) throw_system("pipe for the bootstrap acceptor", errno);
  wake_read_ = tcp::Fd(p[0]);
  wake_write_ = tcp::Fd(p[1]);
  fcntl(p[0], F_SETFL, O_NONBLOCK);
  fcntl(p[0], F_SETFD, FD_CLOEXEC);
  fcntl(p[1], F_SETFD, FD_CLOEXEC);
  thread_ = std::thread([this] { run(); });
}

Acceptor::~Acceptor() {
  stop_ = true;
  const char c = 0;
  [[maybe_unused]] ssize_t n = ::write(wake_write_.get(), &c, 1);
  thread_.join();
}

std::optional<Accepted> Acceptor::next(Deadline deadline) {
  std::unique_lock lock(mu_);
  // In slices of kInterruptCheckEvery, to ask this thread's tcp::InterruptScope in between.
  while (ready_.empty()) {
    const Deadline slice = std::min(deadline, Clock::now() + kInterruptCheckEvery);
    if (cv_.wait_until(lock, slice, [this] { return !ready_.empty(); })) break;
    if (Clock::now() >= deadline) return std::nullopt;
    lock.unlock();
    tcp::throw_if_interrupted();
    lock.lock();
  }
  Accepted a = std::move(ready_.front());
  ready_.pop_front();
  return a;
}

void Acceptor::run() {
  std::vector<Pending> pending;  // oldest first
  std::vector<pollfd> pfds;
  Clock::time_point paused_until{};  // no accept() before this (after EMFILE/ENFILE)
  const bool loopback_only = token_.empty();
  // Steps every handshake: hands on the authenticated, closes the failed and the expired.
  const auto step_all = [&](Clock::time_point now) {
    for (size_t i = 0; i < pending.size();) {
      ServerHandshake& h = *pending[i].handshake;
      const ServerHandshake::State s = h.step();
      if (s == ServerHandshake::State::kPending && now < h.deadline()) {
        ++i;
        continue;
      }
      if (s == ServerHandshake::State::kDone) {
        Accepted a;
        a.hello = h.hello();
        a.fd = h.take_fd();
        a.peer = pending[i].peer;
        {
          std::lock_guard lock(mu_);
          ready_.push_back(std::move(a));
        }
        cv_.notify_all();
      } else {
        ++rejected_;
      }
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
    }
  };
  while (!stop_) {
    Clock::time_point now = Clock::now();
    size_t cap = max_pending_.load();
    step_all(now);
    // At the cap: close the oldest handshakes that had their grace, to make room.
    while (!pending.empty() && pending.size() >= cap &&
           now - pending.front().since >= limits_.grace) {
      pending.erase(pending.begin());
      ++rejected_;
    }
    const bool accepting = now >= paused_until && pending.size() < cap;
    // Not accepting: sleep until the pause ends or the oldest handshake may be shed.
    Deadline wake = now + std::chrono::milliseconds(100);
    if (!accepting) {
      if (now < paused_until) wake = std::min(wake, paused_until);
      if (!pending.empty() && pending.size() >= cap) {
        wake = std::min(wake, pending.front().since + limits_.grace);
      }
    }
    pfds.clear();
    pfds.push_back(pollfd{wake_read_.get(), POLLIN, 0});
    if (accepting) {
      for (const tcp::Fd& l : listeners_) pfds.push_back(pollfd{l.get(), POLLIN, 0});
    }
    for (const Pending& h : pending) pfds.push_back(pollfd{h.handshake->fd(), POLLIN, 0});
    ::poll(pfds.data(), static_cast<nfds_t>(pfds.size()),
           std::max(1, tcp::poll_timeout_ms(wake, 100)));
    if (stop_) break;
    now = Clock::now();
    for (size_t li = 0; accepting && li < listeners_.size(); ++li) {
      while (pending.size() < cap && now >= paused_until) {
        const int fd = ::accept(listeners_[li].get(), nullptr, nullptr);
        if (fd < 0) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          if (errno == EMFILE || errno == ENFILE) {
            // Out of descriptors: leave some to the rest of the process, pause, go on.
            ++fd_limit_hits_;
            cap = pending.size() > kFdReserve ? pending.size() - kFdReserve : 1;
            max_pending_ = std::min(max_pending_.load(), cap);
            paused_until = now + limits_.backoff;
          } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
            paused_until = now + limits_.backoff;  // ENOBUFS, ENOMEM, ...: the same pause
          }
          break;
        }
        tcp::Fd conn(fd);
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        const tcp::Address peer = tcp::peer_address(fd);
        if (loopback_only && !peer.is_loopback()) {
          ++rejected_;  // no token: only this host's processes may join
          continue;
        }
        try {
          tcp::configure_stream(fd);
          pending.push_back(Pending{
              std::make_unique<ServerHandshake>(std::move(conn), token_, now + handshake_timeout_),
              peer, now});
        } catch (const std::exception&) {  // Error, or std::random_device out of descriptors
          ++rejected_;
        }
      }
    }
    step_all(now);
  }
}

}  // namespace cc::comm
