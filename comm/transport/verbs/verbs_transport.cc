#include "comm/transport/verbs/verbs_transport.h"

#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace cc::comm::verbs {
namespace {

constexpr uint32_t kControlMagic = 0x43560000u;  // "CV"
constexpr uint32_t kAbort = 2, kBye = 3, kAlive = 4;
// A waiting rank says it is alive this often on every control connection, so a timeout can
// tell a stopped rank (silent everywhere) from ranks that merely wait on it.
constexpr auto kAliveEvery = std::chrono::milliseconds(200);

struct ControlHeader {
  uint32_t magic_type;
  int32_t aux;
  // ABORT: the frames the aborting rank had posted to this peer (all its links), so the peer
  // takes those still on the wire before it acts on the ABORT. 0 otherwise (and from a rank
  // of an older build, which the peer then does not wait for).
  uint64_t frames;
};
// How long a rank that got a peer's ABORT waits for the frames that peer says it posted and
// that have not arrived: on UC a frame and the ABORT (TCP) race, and the frame, when it holds
// the message whose mismatch made the peer give up, is what this rank must name (kProtocol) as
// well. A lost frame never comes, so the wait is bounded; it is taken only on that error path.
constexpr auto kAbortGrace = std::chrono::milliseconds(250);
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
      peer.channels.push_back(
          std::make_unique<FrameChannel>(*l, static_cast<int>(p), options_.pad_frames,
                                         options_.zero_copy_min_bytes));
      if (MrCache* m = l->mr_cache(); m != nullptr &&
          std::find(caches_.begin(), caches_.end(), m) == caches_.end()) {
        caches_.push_back(m);
      }
      links_.push_back(l.get());
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
  const ControlHeader bye{kControlMagic | kBye, rank_, 0};
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
  for (Peer& p : peers_) {
    if (p.control.valid() && !p.closed) {
      ControlHeader h{kControlMagic | kAbort, failed_rank, 0};
      for (const auto& c : p.channels) h.frames += c->frames_posted();
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
  if (chans.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                "the verbs transport has no link to rank " + std::to_string(peer) +
                    " (it shares this rank's host: shared memory carries that pair)");
  }
  req.peer = peer;
  req.bytes = bytes;
  const size_t k = bytes >= options_.stripe_min_bytes ? chans.size() : 1;
  req.parts_left = static_cast<uint32_t>(k);
  // No division on the one-cable path; parts start on a multiple of 8 bytes (elements).
  const size_t base = k == 1 ? bytes : bytes / k / 8 * 8;
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
      c.send(static_cast<const char*>(data) + off, len, req, context(), signature());
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
      c.recv(static_cast<char*>(data) + off, len, req, context(), nullptr, signature());
    });
  } catch (Error& e) {
    if (e.kind() == ErrorKind::kInvalidArgument || e.kind() == ErrorKind::kBroken) throw;
    fail(std::move(e));
  }
}

bool VerbsTransport::irecv_reduce(int peer, void* dst, size_t bytes, const Fold& fold,
                                  Request& req) {
  const size_t elem = size_of(fold.type);
  if (peer >= 0 && peer < size_ && peer != rank_) {
    for (const auto& c : peers_[static_cast<size_t>(peer)].channels) {
      if (c->link().frame_bytes() % elem != 0) return false;
    }
  }
  if (bytes % elem != 0) {
    throw Error(ErrorKind::kInvalidArgument, "irecv_reduce: " + std::to_string(bytes) +
                                                 " bytes is not a whole number of elements");
  }
  req.is_send = false;
  try {
    split(peer, bytes, req, [&](FrameChannel& c, size_t off, size_t len) {
      Fold part = fold;
      part.own = static_cast<const char*>(fold.own) + off;
      c.recv(static_cast<char*>(dst) + off, len, req, context(), &part, signature());
    });
  } catch (Error& e) {
    if (e.kind() == ErrorKind::kInvalidArgument || e.kind() == ErrorKind::kBroken) throw;
    fail(std::move(e));
  }
  return true;
}

bool VerbsTransport::progress_channels() {
  bool any = false;
  for (Peer& p : peers_) {
    for (auto& c : p.channels) any = c->progress() || any;
  }
  return any;
}

// Sleeps (when `block`) until a completion may have arrived on any link, a control message
// came, or the next ALIVE is due; then reads ABORT/BYE/ALIVE/EOF from the control connections.
// Every link is armed before the sleep and its completion queue polled once more after the
// arm (a completion that landed in between would wake nobody); any progress there skips the
// sleep. Links without a completion channel (fakes, a library without the calls) cap the
// sleep at a 1 ms nap.
void VerbsTransport::read_control(bool block, Deadline deadline) {
  pfds_.clear();
  const size_t nlinks = links_.size();
  bool can_sleep = block;
  int cap_ms = sleep_cap_ms(static_cast<int>(kAliveEvery.count()));
  if (block) {
    for (FrameLink* l : links_) {
      if (l->event_fd() < 0) {
        cap_ms = 1;
        continue;
      }
      l->arm();  // a wake-up already pending makes the fd readable: consumed after poll()
      pfds_.push_back(pollfd{l->event_fd(), POLLIN, 0});
    }
    if (progress_channels()) can_sleep = false;
  }
  if (pfds_.size() != nlinks) pfds_.clear();  // only all-or-nothing: keep indices simple
  const size_t first_control = pfds_.size();
  for (Peer& p : peers_) {
    if (p.control.valid() && !p.closed) pfds_.push_back(pollfd{p.control.get(), POLLIN, 0});
  }
  if (pfds_.empty()) {
    if (can_sleep) ::usleep(1000);
    return;
  }
  const int r = ::poll(pfds_.data(), pfds_.size(),
                       can_sleep ? tcp::poll_timeout_ms(deadline, cap_ms) : 0);
  if (r <= 0) return;
  for (size_t i = 0; i < first_control; ++i) {
    if (pfds_[i].revents != 0) links_[i]->consume_events();
  }
  bool control = false;
  for (size_t i = first_control; i < pfds_.size(); ++i) control = control || pfds_[i].revents != 0;
  if (!control) return;
  for (size_t i = 0; i < peers_.size(); ++i) {
    Peer& p = peers_[i];
    while (p.control.valid() && !p.closed) {
      ControlHeader h{};
      const ssize_t n = ::recv(p.control.get(), &h, sizeof(h), MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
      const int peer = static_cast<int>(i);
      if (n == static_cast<ssize_t>(sizeof(h)) && h.magic_type == (kControlMagic | kAlive)) {
        p.last_heard = Clock::now();
        p.alive_heard = true;
        continue;
      }
      if (n == static_cast<ssize_t>(sizeof(h)) && h.magic_type == (kControlMagic | kBye)) {
        p.bye = true;  // the peer finished cleanly; its EOF follows
        continue;
      }
      if (n == static_cast<ssize_t>(sizeof(h)) && h.magic_type == (kControlMagic | kAbort)) {
        p.closed = true;
        // The frames the peer posted before it are checked first, so ranks that called
        // different collectives both name the mismatch (kProtocol), not only that the other
        // gave up: those in the completion queue, then those still on the wire (the ABORT
        // came by TCP and may overtake them), for at most kAbortGrace.
        progress_channels();
        const Deadline until = Clock::now() + kAbortGrace;
        while (received_from(p) < h.frames && Clock::now() < until) {
          if (!progress_channels()) sched_yield();
        }
        fail(peer_gave_up(peer, h.aux, rank_, size_));
      }
      p.closed = true;
      // After BYE the peer has finished every call: the frames it owes this rank were all
      // posted before it, and it keeps its queue pairs until this rank says BYE too.
      if (p.bye) break;
      fail(Error(ErrorKind::kPeerLost,
                 "lost rank " + std::to_string(peer) + ": its control connection closed (process "
                 "died?) while " + devices_of(p.links) + " had work queued",
                 {peer}));
    }
  }
}

uint64_t VerbsTransport::received_from(const Peer& p) {
  uint64_t n = 0;
  for (const auto& c : p.channels) n += c->frames_received();
  return n;
}

void VerbsTransport::send_alive() {
  const ControlHeader h{kControlMagic | kAlive, rank_, 0};
  for (Peer& p : peers_) {
    if (p.control.valid() && !p.closed && !p.bye) {
      [[maybe_unused]] ssize_t n =
          ::send(p.control.get(), &h, sizeof(h), tcp::send_flags() | MSG_DONTWAIT);
    }
  }
  last_alive_ = Clock::now();
}

void VerbsTransport::poll() {
  if (aborted_) throw Error(ErrorKind::kBroken, "the transport was aborted by an earlier error");
  try {
    if (progress_channels()) moved();  // dated and published by the next limit(), ours or shm's
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
    Clock::time_point last = std::max(p.channels.front()->last_arrival(), p.last_heard);
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
            devices_of(peers_[static_cast<size_t>(r)].links) + " (silent for " +
            std::to_string(silent.count()) + " ms)";
    ranks.push_back(r);
  }
  return ranks;
}

// The hot loop polls the completion queues only; the clock (spin, deadline) is read once
// per kPolls polls. A clock read is cheap on a TSC or a Mac, but costs about 1 us where the
// kernel reads an HPET (the emulated rdma-vm guest), and a ping-pong reply comes after a few
// dozen polls; reading it on every poll cost bench/compare-rdma about 10 us of latency.
void VerbsTransport::wait(Request& req, Deadline deadline) {
  if (aborted_) throw Error(ErrorKind::kBroken, "the transport was aborted by an earlier error");
  constexpr uint32_t kPolls = 512;
  try {
    const auto spin =
        req.bytes <= options_.spin_max_bytes ? options_.spin : std::chrono::microseconds(0);
    Clock::time_point last{};  // the last progress seen at a clock read; none read yet
    bool progressed = true;    // progress since the last clock read (or none read yet)
    uint32_t polls = 0, reads = 0;
    while (!req.done()) {
      if (progress_channels()) {
        progressed = true;
        moved();
        if (req.done()) break;
      }
      if (++polls < kPolls && spin.count() > 0) continue;
      polls = 0;
      const auto now = Clock::now();
      check_interrupt(now);
      for (Peer& p : peers_) {
        for (auto& c : p.channels) c->stamp(now);
      }
      if (progressed) {
        last = now;
        progressed = false;
      } else if (now - last >= spin) {
        read_control(true, limit(deadline, now));
        if (Clock::now() - last_alive_ > kAliveEvery) send_alive();
      }
      if ((++reads & 15u) == 0) {
        read_control(false, limit(deadline, now));
        if (now - last_alive_ > kAliveEvery) send_alive();
      }
      if (now >= limit(deadline, now)) {
        std::string text;
        const std::vector<int> ranks = waiting_on(req, text);
        // The first named rank still sends ALIVE on its control connection: it is not dead
        // or stopped, so it waits in another call or one of its frames was lost.
        std::string why =
            " (no frame arrived: on UC a dead or stopped peer sends no error completion; check "
            "that the rank is alive and the cable is up)";
        if (!ranks.empty()) {
          const Peer& first = peers_[static_cast<size_t>(ranks.front())];
          const auto heard =
              std::chrono::duration_cast<std::chrono::milliseconds>(now - first.last_heard);
          if (first.alive_heard && heard < 3 * kAliveEvery) {
            why = " (rank " + std::to_string(ranks.front()) + " is alive: its control connection "
                  "spoke " + std::to_string(heard.count()) + " ms ago. It waits in another "
                  "call, or " +
                  (options_.resends
                       ? std::string("its frames do not get through: check the cable")
                       : std::string("the link lost its last frame: a UC queue pair never "
                                     "resends; on Soft-RoCE or an Ethernet RDMA NIC set "
                                     "CLUSTERCOMM_IBV_PROFILE=rc on every rank")) +
                  ")";
          }
        }
        fail(Error(ErrorKind::kTimeout, "timed out waiting for " + text + why, ranks));
      }
    }
  } catch (Error& e) {
    if (!aborted_) fail(std::move(e));
    throw;
  }
}

void VerbsTransport::release_buffer(const void* data, size_t bytes) noexcept {
  for (MrCache* m : caches_) m->drop(data, bytes);
}

FrameChannel::Stats VerbsTransport::stats() const {
  FrameChannel::Stats s;
  for (const Peer& p : peers_) {
    for (const auto& c : p.channels) {
      s.data_frames += c->stats().data_frames;
      s.credit_frames += c->stats().credit_frames;
      s.stalls_no_credit += c->stats().stalls_no_credit;
      s.zero_copy_frames += c->stats().zero_copy_frames;
      s.zero_copy_fallbacks += c->stats().zero_copy_fallbacks;
      s.folded_frames += c->stats().folded_frames;
    }
  }
  return s;
}

}  // namespace cc::comm::verbs
