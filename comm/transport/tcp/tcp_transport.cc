#include "comm/transport/tcp/tcp_transport.h"

#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "comm/error.h"

namespace cc::comm::tcp {
namespace {

constexpr uint32_t kMagic = 0x43430000u;  // "CC"
constexpr uint32_t kData = 1, kAbort = 2, kBye = 3;
// Bits 8..15 of the first word: the Signature of the message's call (DATA; 0 otherwise).
constexpr uint32_t kSigShift = 8;
constexpr size_t kHdr = sizeof(TcpTransport::Header);
constexpr int kMaxIov = 64;

std::string peer_name(int peer) {
  return "rank " + std::to_string(peer);
}

Error lost(int peer, const std::string& how) {
  return Error(ErrorKind::kPeerLost, "lost " + peer_name(peer) + ": " + how, {peer});
}

bool would_block(int err) {
  return err == EAGAIN || err == EWOULDBLOCK;
}

// Both ends of the connection on this host: one IP address at both ends (loopback, or a
// connection to one of this host's own addresses), or a local socket. Both ranks of a pair see
// the same two addresses, so they agree.
bool same_host(int fd) {
  const Address here = local_address(fd), there = peer_address(fd);
  const int family = here.storage.ss_family;
  if (family != there.storage.ss_family) return false;
  if (family == AF_UNIX) return true;
  if (family == AF_INET) {
    return reinterpret_cast<const sockaddr_in&>(here.storage).sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in&>(there.storage).sin_addr.s_addr;
  }
  if (family == AF_INET6) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in6&>(here.storage).sin6_addr,
                       &reinterpret_cast<const sockaddr_in6&>(there.storage).sin6_addr,
                       sizeof(in6_addr)) == 0;
  }
  return false;
}

}  // namespace

TcpTransport::TcpTransport(int rank, int size, std::vector<std::vector<Fd>> conns,
                           TcpOptions options)
    : rank_(rank),
      size_(size),
      options_(options),
      by_peer_(static_cast<size_t>(size)),
      control_(static_cast<size_t>(size), SIZE_MAX),
      bye_(static_cast<size_t>(size), false) {
  for (int p = 0; p < size; ++p) {
    auto& fds = conns[static_cast<size_t>(p)];
    for (size_t i = 0; i < fds.size(); ++i) {
      Conn c;
      c.fd = std::move(fds[i]);
      c.peer = p;
      c.control = i + 1 == fds.size();
      (c.control ? control_[static_cast<size_t>(p)]
                 : by_peer_[static_cast<size_t>(p)].emplace_back()) = conns_.size();
      conns_.push_back(std::move(c));
    }
  }
  pfds_.reserve(conns_.size());
  // Every rank of a mesh has a peer on another host unless all are on this one, and all of
  // them count the same online CPUs, so every rank reaches the same answer.
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  bool all_here = true;
  for (int p = 0; p < size && all_here; ++p) {
    // (No connection: a peer the shared-memory transport carries, transport/shm/.)
    const auto& mine = by_peer_[static_cast<size_t>(p)];
    if (p != rank && !mine.empty()) all_here = same_host(conns_[mine[0]].fd.get());
  }
  crowded_ = all_here && cpus > 0 && size > cpus;
}

TcpTransport::~TcpTransport() {
  if (aborted_) return;
  for (const Conn& c : conns_) {
    if (!c.sendq.empty()) {  // requests abandoned mid-flight: nothing clean is possible
      abort(-1);
      return;
    }
  }
  // Clean close: BYE, then wait until every peer has closed its side too, so nothing this
  // rank sent is still in flight when the socket goes (a close with unread data sends RST).
  const Deadline deadline = Clock::now() + options_.close_timeout;
  const Header bye{kMagic | kBye, rank_, 0};
  for (Conn& c : conns_) {
    if (c.closed) continue;
    try {
      if (c.control) write_all(c.fd.get(), &bye, kHdr, deadline, peer_name(c.peer));
      ::shutdown(c.fd.get(), SHUT_WR);
    } catch (const Error&) {
      c.closed = true;
    }
  }
  char sink[4096];
  while (Clock::now() < deadline) {
    pfds_.clear();
    for (Conn& c : conns_) {
      if (!c.closed) pfds_.push_back(pollfd{c.fd.get(), POLLIN, 0});
    }
    if (pfds_.empty()) break;
    if (::poll(pfds_.data(), pfds_.size(), poll_timeout_ms(deadline, 1000)) <= 0) continue;
    for (Conn& c : conns_) {
      if (c.closed) continue;
      const ssize_t n = ::recv(c.fd.get(), sink, sizeof(sink), 0);
      if (n == 0 || (n < 0 && !would_block(errno) && errno != EINTR)) c.closed = true;
    }
  }
}

void TcpTransport::fail(Error e) {
  int failed = e.ranks().empty() ? -1 : e.ranks().front();
  abort(failed);
  throw e;
}

void TcpTransport::abort(int failed_rank) noexcept {
  if (aborted_) return;
  aborted_ = true;
  const Header h{kMagic | kAbort, failed_rank, 0};
  for (Conn& c : conns_) {
    if (c.closed) continue;
    if (c.control) {  // only headers travel there: always at a message boundary
      [[maybe_unused]] ssize_t n = ::send(c.fd.get(), &h, kHdr, send_flags() | MSG_DONTWAIT);
    }
    c.fd.reset();
    c.closed = true;
    c.sendq.clear();
    c.recvq.clear();
  }
}

template <class Part>
void TcpTransport::split(int peer, size_t bytes, Request& req, Part make) {
  if (aborted_) throw Error(ErrorKind::kBroken, "the transport was aborted by an earlier error");
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw Error(ErrorKind::kInvalidArgument, "bad peer " + std::to_string(peer));
  }
  const auto& idx = by_peer_[static_cast<size_t>(peer)];
  req.peer = peer;
  req.bytes = bytes;
  const size_t k = bytes >= options_.stripe_min_bytes ? idx.size() : 1;
  req.parts_left = static_cast<uint32_t>(k);
  const size_t base = bytes / k;
  size_t off = 0;
  for (size_t i = 0; i < k; ++i) {
    const size_t len = i + 1 == k ? bytes - off : base;
    make(conns_[idx[i]], off, len);
    off += len;
  }
}

void TcpTransport::isend(int peer, const void* data, size_t bytes, Request& req) {
  req.is_send = true;
  split(peer, bytes, req, [&](Conn& c, size_t off, size_t len) {
    c.sendq.push_back(SendPart{static_cast<const char*>(data) + off, len, &req,
                               Header{kMagic | uint32_t{signature()} << kSigShift | kData,
                                      static_cast<int32_t>(context()), len},
                               0});
  });
  // Try at once: small messages usually leave in this call.
  Conn& first = conns_[by_peer_[static_cast<size_t>(peer)][0]];
  if (first.sendq.size() == 1 && !first.closed) {
    try {
      progress_send(first);
    } catch (Error& e) {
      fail(std::move(e));
    }
  }
}

void TcpTransport::irecv(int peer, void* data, size_t bytes, Request& req) {
  req.is_send = false;
  split(peer, bytes, req, [&](Conn& c, size_t off, size_t len) {
    c.recvq.push_back(RecvPart{static_cast<char*>(data) + off, len, &req, 0, context(), signature()});
  });
}

bool TcpTransport::progress_send(Conn& c) {
  bool any = false;
  while (!c.sendq.empty()) {
    iovec iov[kMaxIov];
    int n = 0;
    size_t want = 0;
    for (auto it = c.sendq.begin(); it != c.sendq.end() && n < kMaxIov - 1; ++it) {
      size_t off = it->sent;
      if (off < kHdr) {
        iov[n++] = iovec{reinterpret_cast<char*>(&it->hdr) + off, kHdr - off};
        want += kHdr - off;
        off = kHdr;
      }
      const size_t poff = off - kHdr;
      if (poff < it->bytes) {
        iov[n++] = iovec{const_cast<char*>(it->data) + poff, it->bytes - poff};
        want += it->bytes - poff;
      }
    }
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = static_cast<decltype(m.msg_iovlen)>(n);
    const ssize_t w = ::sendmsg(c.fd.get(), &m, send_flags());
    if (w < 0) {
      if (would_block(errno)) break;
      if (errno == EINTR) continue;
      peer_lost(c.peer, std::string("send failed: ") + std::strerror(errno));
    }
    any = true;
    size_t left = static_cast<size_t>(w);
    while (!c.sendq.empty()) {
      SendPart& p = c.sendq.front();
      const size_t total = kHdr + p.bytes;
      const size_t take = std::min(left, total - p.sent);
      p.sent += take;
      left -= take;
      if (p.sent < total) break;
      --p.req->parts_left;
      c.sendq.pop_front();
    }
    if (static_cast<size_t>(w) < want) break;  // the kernel buffer is full
  }
  return any;
}

void TcpTransport::check_size(Conn& c, const RecvPart& part) {
  check_arrival(c.peer, static_cast<uint32_t>(c.hdr.aux), part.context,
                static_cast<Signature>(c.hdr.magic_type >> kSigShift & 0xffu), part.signature,
                c.hdr.bytes, part.bytes);
}

void TcpTransport::on_header(Conn& c) {
  const uint32_t type = c.hdr.magic_type & 0xffu;
  if ((c.hdr.magic_type & 0xffff0000u) != kMagic || type < kData || type > kBye) {
    throw Error(ErrorKind::kProtocol, "garbage on the connection from " + peer_name(c.peer),
                {c.peer});
  }
  if (type == kAbort) {
    throw peer_gave_up(c.peer, c.hdr.aux, rank_, size_);
  }
  if (type == kBye) {
    bye_[static_cast<size_t>(c.peer)] = true;
    c.hdr_got = 0;
    return;
  }
  if (c.control) {
    throw Error(ErrorKind::kProtocol, "data on the control connection of " + peer_name(c.peer),
                {c.peer});
  }
}

void TcpTransport::on_eof(Conn& c) {
  // BYE and ABORT travel on the control connection, which may be read after this EOF.
  if (!c.control) read_control(c.peer);
  const bool bye = bye_[static_cast<size_t>(c.peer)];
  if (bye && c.recvq.empty() && c.sendq.empty()) {
    c.closed = true;
    c.fd.reset();
    return;
  }
  if (bye) throw lost(c.peer, "it closed its communicator while this rank still expected data");
  throw lost(c.peer, "connection closed (the process died or the network failed)");
}

void TcpTransport::peer_lost(int peer, const std::string& how) {
  read_control(peer);  // throws when the peer reported why it gave up
  throw lost(peer, how);
}

void TcpTransport::read_control(int peer) {
  // Give a BYE or ABORT written before the data connections closed a moment to arrive.
  Conn& ctl = conns_[control_[static_cast<size_t>(peer)]];
  const Deadline until = Clock::now() + std::chrono::milliseconds(200);
  while (!ctl.closed && ctl.fd.valid() && !bye_[static_cast<size_t>(peer)] &&
         Clock::now() < until) {
    const ssize_t r = ::recv(ctl.fd.get(), reinterpret_cast<char*>(&ctl.hdr) + ctl.hdr_got,
                             kHdr - ctl.hdr_got, 0);
    if (r > 0) {
      ctl.hdr_got += static_cast<size_t>(r);
      if (ctl.hdr_got == kHdr) {
        ctl.hdr_got = 0;
        on_header(ctl);  // throws on ABORT, records BYE
      }
      continue;
    }
    if (r == 0 || (r < 0 && !would_block(errno) && errno != EINTR)) break;
    pollfd p{ctl.fd.get(), POLLIN, 0};
    ::poll(&p, 1, 20);
  }
}

bool TcpTransport::read_stopped(Conn& c, ssize_t r) {
  if (r == 0) {
    on_eof(c);  // closes c or throws
    return true;
  }
  if (would_block(errno)) return true;
  if (errno == EINTR) return false;
  peer_lost(c.peer, std::string("receive failed: ") + std::strerror(errno));
}

bool TcpTransport::progress_recv(Conn& c) {
  bool any = false;
  while (!c.closed) {
    ssize_t r;
    if (c.hdr_got < kHdr) {
      // A data connection reads the next header only once its receive is posted, so header
      // and payload arrive in one readv (reading ahead cost a second syscall per message).
      if (c.hdr_got == 0 && c.recvq.empty() && !c.control) return any;
      iovec iov[2];
      iov[0] = iovec{reinterpret_cast<char*>(&c.hdr) + c.hdr_got, kHdr - c.hdr_got};
      int n = 1;
      if (!c.recvq.empty() && c.recvq.front().got == 0 && c.recvq.front().bytes > 0) {
        iov[n++] = iovec{c.recvq.front().data, c.recvq.front().bytes};
      }
      r = ::readv(c.fd.get(), iov, n);
      if (r <= 0) {
        if (read_stopped(c, r)) break;
        continue;
      }
      any = true;
      const size_t h = std::min(static_cast<size_t>(r), kHdr - c.hdr_got);
      c.hdr_got += h;
      const size_t extra = static_cast<size_t>(r) - h;
      if (c.hdr_got < kHdr) continue;
      on_header(c);
      if (c.hdr_got < kHdr) continue;   // BYE consumed
      if (c.recvq.empty()) return any;  // payload waits until a receive is posted
      check_size(c, c.recvq.front());
      c.recvq.front().got += extra;
    } else {
      if (c.recvq.empty()) return any;
      RecvPart& p = c.recvq.front();
      if (p.got == 0) check_size(c, p);
      if (p.got < p.bytes) {
        r = ::recv(c.fd.get(), p.data + p.got, p.bytes - p.got, 0);
        if (r <= 0) {
          if (read_stopped(c, r)) break;
          continue;
        }
        any = true;
        p.got += static_cast<size_t>(r);
      }
    }
    RecvPart& p = c.recvq.front();
    if (p.got == p.bytes) {
      --p.req->parts_left;
      c.recvq.pop_front();
      c.hdr_got = 0;
    }
  }
  return any;
}

bool TcpTransport::progress_all(bool with_control) {
  bool any = false;
  for (Conn& c : conns_) {
    if (c.closed) {
      if (!c.recvq.empty() || !c.sendq.empty()) {
        throw lost(c.peer, "it closed its communicator while this rank still expected data");
      }
      continue;
    }
    // Control connections carry only ABORT and BYE; a peer that aborts also closes its data
    // connections (whose EOF reads the control connection), so the busy loop skips them and
    // saves a syscall per peer per spin.
    if (c.control && !with_control) continue;
    if (!c.sendq.empty()) any |= progress_send(c);
    any |= progress_recv(c);
  }
  return any;
}

void TcpTransport::block_in_poll(Deadline deadline) {
  pfds_.clear();
  for (const Conn& c : conns_) {
    if (c.closed) continue;
    short ev = 0;
    if (!c.sendq.empty()) ev = static_cast<short>(ev | POLLOUT);
    if (c.control || c.hdr_got > 0 || !c.recvq.empty()) ev = static_cast<short>(ev | POLLIN);
    if (ev != 0) pfds_.push_back(pollfd{c.fd.get(), ev, 0});
  }
  ::poll(pfds_.data(), pfds_.size(), poll_timeout_ms(deadline, sleep_cap_ms(1000)));
}

void TcpTransport::poll() {
  if (aborted_) throw Error(ErrorKind::kBroken, "the transport was aborted by an earlier error");
  try {
    if (progress_all(true)) moved();  // dated and published by the next limit(), ours or shm's
  } catch (Error& e) {
    fail(std::move(e));
  }
}

void TcpTransport::wait(Request& req, Deadline deadline) {
  if (aborted_) throw Error(ErrorKind::kBroken, "the transport was aborted by an earlier error");
  Clock::time_point last = Clock::now();
  const auto spin =
      req.bytes <= options_.spin_max_bytes ? options_.spin : std::chrono::microseconds(0);
  try {
    bool with_control = false;  // read after blocking, when poll() may have woken for it
    while (!req.done()) {
      const bool any = progress_all(with_control);
      with_control = false;
      if (any) moved();
      if (req.done()) return;
      const Clock::time_point now = Clock::now();
      check_interrupt(now);
      if (any) {
        last = now;
        continue;
      }
      const Deadline give_up = limit(deadline, now);
      if (now >= give_up) {
        std::vector<int> waiting;
        for (const Conn& c : conns_) {
          if (!c.recvq.empty() || !c.sendq.empty()) waiting.push_back(c.peer);
        }
        std::sort(waiting.begin(), waiting.end());
        waiting.erase(std::unique(waiting.begin(), waiting.end()), waiting.end());
        if (waiting.empty()) waiting.push_back(req.peer);
        throw Error(ErrorKind::kTimeout,
                    "timed out waiting for " + describe_ranks(waiting) + " (" +
                        (req.is_send ? "sending to " : "receiving from ") + peer_name(req.peer) +
                        ")",
                    waiting);
      }
      // Spin: a non-blocking read per data connection is cheaper here than one poll() over
      // all of them (measured: poll(0) + sched_yield was 5% slower at n = 2 and 4). Yield on
      // every turn: a peer sharing this core must run to answer (measured: yielding only after
      // 50 us made n = 4 on 2 cores 2x slower and n = 2 bimodal, 6 vs 63 us).
      if (now - last < spin) {
        sched_yield();
        continue;
      }
      block_in_poll(give_up);
      with_control = true;
      last = Clock::now();
    }
  } catch (Error& e) {
    fail(std::move(e));
  }
}

}  // namespace cc::comm::tcp
