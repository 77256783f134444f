#include "comm/rendezvous/acceptor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "comm/error.h"
#include "comm/rendezvous/handshake.h"

namespace cc::comm {

Acceptor::Acceptor(std::vector<tcp::Fd> listeners, std::string token,
                   std::chrono::milliseconds handshake_timeout)
    : listeners_(std::move(listeners)),
      token_(std::move(token)),
      handshake_timeout_(handshake_timeout) {
  for (const tcp::Fd& l : listeners_) addresses_.push_back(tcp::local_address(l.get()));
  int p[2];
  if (::pipe(p) != 0) throw_system("pipe", errno);
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
  if (!cv_.wait_until(lock, deadline, [this] { return !ready_.empty(); })) return std::nullopt;
  Accepted a = std::move(ready_.front());
  ready_.pop_front();
  return a;
}

void Acceptor::run() {
  std::vector<std::unique_ptr<ServerHandshake>> pending;
  std::vector<pollfd> pfds;
  while (!stop_) {
    pfds.clear();
    pfds.push_back(pollfd{wake_read_.get(), POLLIN, 0});
    for (const tcp::Fd& l : listeners_) pfds.push_back(pollfd{l.get(), POLLIN, 0});
    for (const auto& h : pending) pfds.push_back(pollfd{h->fd(), POLLIN, 0});
    ::poll(pfds.data(), pfds.size(), 100);
    if (stop_) break;
    for (const tcp::Fd& l : listeners_) {
      while (true) {
        const int fd = ::accept(l.get(), nullptr, nullptr);
        if (fd < 0) break;
        try {
          tcp::configure_stream(fd);
          fcntl(fd, F_SETFD, FD_CLOEXEC);
          pending.push_back(std::make_unique<ServerHandshake>(tcp::Fd(fd), token_,
                                                              Clock::now() + handshake_timeout_));
        } catch (const Error&) {
          ::close(fd);
          ++rejected_;
        }
      }
    }
    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < pending.size();) {
      const ServerHandshake::State s = pending[i]->step();
      if (s == ServerHandshake::State::kPending && now < pending[i]->deadline()) {
        ++i;
        continue;
      }
      if (s == ServerHandshake::State::kDone) {
        Accepted a;
        a.hello = pending[i]->hello();
        a.fd = pending[i]->take_fd();
        a.peer = tcp::peer_address(a.fd.get());
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
  }
}

}  // namespace cc::comm
