#include "comm/transport/verbs/verbs_transport.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace cc::comm::verbs {
namespace {

constexpr uint32_t kMagic = 0x43560000u;  // "CV"
constexpr uint32_t kAbort = 2, kBye = 3;

struct ControlHeader {
  uint32_t magic_type;
  int32_t aux;
  uint64_t zero;
};
static_assert(sizeof(ControlHeader) == 16);

std::string devices_of(const std::vector<std::unique_ptr<FrameLink>>& links) {
  std::string s;
  for (const auto& l : links) s += (s.empty() ? "" : ", ") + l->name();
  return s;
}

}  // namespace

VerbsTransport::VerbsTransport(int rank, int size,
                               std::vector<std::vector<std::unique_ptr<FrameLink>>> links,
                               std::vector<tcp::Fd> control, VerbsOptions options,
                               std::shared_ptr<void> keepalive)
    : keepalive_(std::move(keepalive)),
      rank_(rank),
      size_(size),
      options_(options),
      peers_(static_cast<size_t>(size)) {
  for (size_t p = 0; p < peers_.size(); ++p) {
    Peer& peer = peers_[p];
    peer.links = std::move(links[p]);
    if (p < control.size()) peer.control = std::move(control[p]);
    for (auto& l : peer.links) {
      peer.channels.push_back(std::make_unique<FrameChannel>(*l, static_cast<int>(p)));
    }
    if (static_cast<int>(p) != rank && peer.links.empty()) {
      throw Error(ErrorKind::kInvalidArgument,
                  "the verbs transport has no link to rank " + std::to_string(p));
    }
  }
}

VerbsTransport::~VerbsTransport() {
  if (aborted_) return;
  // Post what is still queued, then BYE; wait for every peer's BYE (or EOF) so that no
  // frame this rank sent is lost when the queue pairs go (UC: nothing acknowledges them).
  const Deadline deadline = Clock::now() + options_.close_timeout;
  try {
    for (;;) {
      bool pending = false;
      for (const Peer& p : peers_) {
        for (const auto& c : p.channels) pending = pending || c->has_sends();
      }
      if (!pending) break;
      if (Clock::now() > deadline) {
        abort(-1);
        return;
      }
      progress_channels();
    }
  } catch (const Error&) {
    abort(-1);
    return;
  }
  const ControlHeader bye{kMagic | kBye, rank_, 0};
  for (Peer& p : peers_) {
    if (!p.control.valid()) continue;
    [[maybe_unused]] ssize_t n =
        ::send(p.control.get(), &bye, sizeof(bye), tcp::send_flags() | MSG_DONTWAIT);
    ::shutdown(p.control.get(), SHUT_WR);
  }
  for (;;) {
    bool open = false;
    for (const Peer& p : peers_) open = open || (p.control.valid() && !p.closed && !p.bye);
    if (!open || Clock::now() >= deadline) break;
    try {
      progress_channels();  // keep returning credits to peers still finishing their calls
      read_control(true, deadline);
    } catch (const Error&) {
      break;
    }
  }
}

void VerbsTransport::fail(Error e) {
  abort(e.ranks().empty() ? -1 : e.ranks().front());
  throw e;
}

void VerbsTransport::abort(int failed_rank) noexcept {
  if (aborted_) return;
  aborted_ = true;
  const ControlHeader h{kMagic | kAbort, failed_rank, 0};
  for (Peer& p : peers_) {
    if (p.control.valid() && !p.closed) {
      [[maybe_unused]] ssize_t n =
          ::send(p.control.get(), &h, sizeof(h), tcp::send_flags() | MSG_DONTWAIT);
    }
    p.control.reset();
    p.closed = true;
    for (auto& c : p.channels) c->clear();
  }
}

template <class F>
void VerbsTransport::split(int peer, size_t bytes, Request& req, F part) {
  if (aborted_) throw Error(ErrorKind::kBroken, "the transport was aborted by an earlier error");
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw Error(ErrorKind::kInvalidArgument, "bad peer " + std::to_string(peer));
  }
  auto& chans = peers_[static_cast<size_t>(peer)].channels;
  req.peer = peer;
  req.bytes = bytes;
  const size_t k = bytes >= options_.stripe_min_bytes ? chans.size() : 1;
  req.parts_left = static_cast<uint32_t>(k);
  const size_t base = bytes / k;
  size_t off = 0;
  for (size_t i = 0; i < k; ++i) {
    const size_t len = i + 1 == k ? bytes - off : base;
    part(*chans[i], off, len);
    off += len;
  }
}

void VerbsTransport::isend(int peer, const void* data, size_t bytes, Request& req) {
  req.is_send = true;
  try {
    split(peer, bytes, req, [&](FrameChannel& c, size_t off, size_t len) {
      c.send(static_cast<const char*>(data) + off, len, req);
    });
  } catch (Error& e) {
    if (e.kind() == ErrorKind::kInvalidArgument || e.kind() == ErrorKind::kBroken) throw;
    fail(std::move(e));
  }
}

void VerbsTransport::irecv(int peer, void* data, size_t bytes, Request& req) {
  req.is_send = false;
  try {
    split(peer, bytes, req, [&](FrameChannel& c, size_t off, size_t len) {
      c.recv(static_cast<char*>(data) + off, len, req);
    });
  } catch (Error& e) {
    if (e.kind() == ErrorKind::kInvalidArgument || e.kind() == ErrorKind::kBroken) throw;
    fail(std::move(e));
  }
}

bool VerbsTransport::progress_channels() {
  bool any = false;
  for (Peer& p : peers_) {
    for (auto& c : p.channels) any = c->progress() || any;
  }
  return any;
}

// Reads ABORT/BYE/EOF from the control connections; with `block`, naps up to 1 ms first.
void VerbsTransport::read_control(bool block, Deadline deadline) {
  pfds_.clear();
  for (Peer& p : peers_) {
    if (p.control.valid() && !p.closed) pfds_.push_back(pollfd{p.control.get(), POLLIN, 0});
  }
  if (pfds_.empty()) {
    if (block) ::usleep(1000);
    return;
  }
  const int r = ::poll(pfds_.data(), pfds_.size(), block ? tcp::poll_timeout_ms(deadline, 1) : 0);
  if (r <= 0) return;
  for (size_t i = 0; i < peers_.size(); ++i) {
    Peer& p = peers_[i];
    if (!p.control.valid() || p.closed) continue;
    ControlHeader h{};
    const ssize_t n = ::recv(p.control.get(), &h, sizeof(h), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    const int peer = static_cast<int>(i);
    bool busy = false;
    for (const auto& c : p.channels) busy = busy || !c->idle();
    if (n == static_cast<ssize_t>(sizeof(h)) && h.magic_type == (kMagic | kBye)) {
      p.bye = true;  // the peer finished cleanly; its EOF follows
      continue;
    }
    if (n == static_cast<ssize_t>(sizeof(h)) && h.magic_type == (kMagic | kAbort)) {
      p.closed = true;
      const bool other = h.aux >= 0 && h.aux != rank_;
      const std::string why = other ? " because it lost rank " + std::to_string(h.aux)
                              : h.aux == rank_ ? " waiting for this rank (" + std::to_string(rank_) + ")"
                                               : "";
      fail(Error(ErrorKind::kPeerLost, "rank " + std::to_string(peer) + " gave up" + why,
                 {other ? h.aux : peer}));
    }
    p.closed = true;
    if (p.bye && !busy) continue;  // clean close, nothing owed: not an error
    fail(Error(ErrorKind::kPeerLost,
               "lost rank " + std::to_string(peer) + ": its control connection closed (process "
               "died?) while " + devices_of(p.links) + " had work queued",
               {peer}));
  }
}

void VerbsTransport::poll() {
  if (aborted_) throw Error(ErrorKind::kBroken, "the transport was aborted by an earlier error");
  try {
    progress_channels();
    read_control(false, Clock::now());
  } catch (Error& e) {
    fail(std::move(e));
  }
}

// The peers this rank still waits on, the longest-silent first: when one rank stops (SIGSTOP,
// a pulled cable), the others stall a little later, so the first named is the likely culprit.
std::vector<int> VerbsTransport::waiting_on(const Request& req, std::string& text) const {
  std::vector<std::pair<Clock::time_point, int>> busy;
  for (size_t i = 0; i < peers_.size(); ++i) {
    const Peer& p = peers_[i];
    if (p.channels.empty()) continue;
    bool b = static_cast<int>(i) == req.peer;
    Clock::time_point last = p.channels.front()->last_arrival();
    for (const auto& c : p.channels) {
      b = b || !c->idle();
      last = std::max(last, c->last_arrival());
    }
    if (b) busy.emplace_back(last, static_cast<int>(i));
  }
  std::sort(busy.begin(), busy.end());
  const auto now = Clock::now();
  std::vector<int> ranks;
  for (const auto& [last, r] : busy) {
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - last);
    text += (text.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " on " +
            devices_of(peers_[static_cast<size_t>(r)].links) + " (no frame for " +
            std::to_string(silent.count()) + " ms)";
    ranks.push_back(r);
  }
  return ranks;
}

void VerbsTransport::wait(Request& req, Deadline deadline) {
  if (aborted_) throw Error(ErrorKind::kBroken, "the transport was aborted by an earlier error");
  try {
    Clock::time_point last = Clock::now();
    uint32_t spins = 0;
    while (!req.done()) {
      const bool any = progress_channels();
      if (req.done()) break;
      const auto now = Clock::now();
      if (any) {
        last = now;
      } else if (now - last > options_.spin) {
        read_control(true, deadline);
      }
      if ((++spins & 1023u) == 0) read_control(false, deadline);
      if (Clock::now() >= deadline) {
        std::string text;
        const std::vector<int> ranks = waiting_on(req, text);
        fail(Error(ErrorKind::kTimeout,
                   "timed out waiting for " + text +
                       " (no frame arrived: on UC a dead or stopped peer sends no error "
                       "completion; check that the rank is alive and the cable is up)",
                   ranks));
      }
    }
  } catch (Error& e) {
    if (!aborted_) fail(std::move(e));
    throw;
  }
}

FrameChannel::Stats VerbsTransport::stats() const {
  FrameChannel::Stats s;
  for (const Peer& p : peers_) {
    for (const auto& c : p.channels) {
      s.data_frames += c->stats().data_frames;
      s.credit_frames += c->stats().credit_frames;
      s.stalls_no_credit += c->stats().stalls_no_credit;
    }
  }
  return s;
}

}  // namespace cc::comm::verbs
