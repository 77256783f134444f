#include "comm/transport/shm/shm_transport.h"

#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "comm/error.h"
#include "comm/reduce.h"

namespace cc::comm::shm {
namespace {

// "\0CSM": the low byte carries the Signature of the message's call.
constexpr uint32_t kMsgMagic = 0x4d534300u;
// "\0RSM": a by-reference message (single copy), its header followed by a RefDescriptor.
constexpr uint32_t kRefMagic = 0x4d535200u;
constexpr uint32_t kMsgMagicMask = 0xffffff00u;
constexpr size_t kHdr = sizeof(ShmTransport::MsgHeader);
// A message's payload is padded to a multiple of kAlign bytes (the padding is skipped, never
// written): every header and payload then starts kAlign-aligned in the ring, so a header never
// wraps and no element of a reduction (1 to 8 bytes) straddles the ring's end or sits
// misaligned when it is folded straight out of the ring.
constexpr size_t kAlign = 16;
static_assert(kHdr % kAlign == 0);
struct RefDescriptor {
  uint64_t address;  // of the payload, in the sender's address space
  uint64_t zero;
};
static_assert(sizeof(RefDescriptor) == kHdr);
// Single copy into a fold reads this much of the sender's buffer at a time (kept in the cache
// between the read and the fold).
constexpr size_t kBouncePiece = 64 * 1024;
constexpr size_t padded(size_t bytes) {
  return (bytes + kAlign - 1) & ~(kAlign - 1);
}
// Socket records: {u32 type, i32 aux}.
constexpr uint32_t kWake = 1, kAbort = 2, kBye = 3;
constexpr size_t kRecord = 8;
// Busy turns before yielding (unless the host's ranks outnumber its cores: then yield from the
// first). 5 us gave the core away to any other process whenever the peer was a little late:
// with two CPU hogs beside 2 ranks on 2 cores, 8 B to 512 B all_reduce took 7-49 us a call
// (medians of 5), 0.4-3 us with 50 us.
constexpr std::chrono::microseconds kSpinWithoutYield{50};
// Waiting on a request of a local peer, the remote transport is polled every this many turns.
constexpr uint32_t kRemoteEvery = 16;
// A waiting rank's heartbeat is refreshed at least every kBoardEvery (transport.h); older than
// kStale, it is not waiting (stopped, or busy outside the library).
constexpr std::chrono::milliseconds kStale{500};

int64_t ns_of(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::string rank_name(int r) {
  return "rank " + std::to_string(r);
}

Error lost_rank(int r, const std::string& how) {
  return Error(ErrorKind::kPeerLost, "lost " + rank_name(r) + ": " + how, {r});
}

// Copies into / out of a ring of mask + 1 bytes at position `at` (a byte count), wrapping.
void copy_in(unsigned char* ring, uint64_t mask, uint64_t at, const void* src, size_t n) {
  const size_t pos = static_cast<size_t>(at & mask);
  const size_t first = std::min(n, static_cast<size_t>(mask + 1) - pos);
  std::memcpy(ring + pos, src, first);
  if (first < n) std::memcpy(ring, static_cast<const unsigned char*>(src) + first, n - first);
}

void copy_out(void* dst, const unsigned char* ring, uint64_t mask, uint64_t at, size_t n) {
  const size_t pos = static_cast<size_t>(at & mask);
  const size_t first = std::min(n, static_cast<size_t>(mask + 1) - pos);
  std::memcpy(dst, ring + pos, first);
  if (first < n) std::memcpy(static_cast<unsigned char*>(dst) + first, ring, n - first);
}

}  // namespace

ShmTransport::ShmTransport(int rank, int size, std::vector<int> local_ranks, Segment segment,
                           std::vector<tcp::Fd> socks, std::unique_ptr<Transport> remote,
                           ShmOptions options)
    : rank_(rank),
      size_(size),
      local_ranks_(std::move(local_ranks)),
      local_of_(static_cast<size_t>(size), -1),
      segment_(std::move(segment)),
      remote_(std::move(remote)),
      options_(options),
      now_(Clock::now()),
      ring_bytes_(segment_.ring_bytes()),
      mask_(ring_bytes_ - 1),
      piece_(static_cast<size_t>(ring_bytes_ / 4)) {
  for (size_t i = 0; i < local_ranks_.size(); ++i) {
    if (local_ranks_[i] == rank_) my_index_ = static_cast<int>(i);
  }
  peers_.reserve(local_ranks_.size());
  pfds_.reserve(local_ranks_.size());
  for (size_t i = 0; i < local_ranks_.size(); ++i) {
    const int r = local_ranks_[i];
    if (r == rank_) continue;
    Peer p;
    p.rank = r;
    p.index = static_cast<int>(i);
    p.sock = std::move(socks[static_cast<size_t>(r)]);
    p.out_ctl = &segment_.ctl(my_index_, p.index);
    p.out_data = segment_.data(my_index_, p.index);
    p.in_ctl = &segment_.ctl(p.index, my_index_);
    p.in_data = segment_.data(p.index, my_index_);
    // Both counters start at 0 in a fresh segment; read them anyway (one reader, one writer).
    p.out_head = p.out_ctl->head.load(std::memory_order_acquire);
    p.in_tail = p.in_ctl->tail.load(std::memory_order_acquire);
    p.out_tail_seen = p.out_ctl->tail.load(std::memory_order_acquire);
    p.last_active = now_;
    local_of_[static_cast<size_t>(r)] = static_cast<int>(peers_.size());
    peers_.push_back(std::move(p));
  }
  // This rank's waits and movement, on the rings and on the cables, are published for the
  // others here: the cable transport notes and dates its movement in this transport's record,
  // so its waits and its polls (driven from here) publish on the same board.
  publish_to(&segment_.header().beats[my_index_].board);
  // And the abort word is looked at there too: a wait handed to the cable transport (a leader
  // waiting on another host only) sees a rank of this host give up at its next clock read.
  watch_host_abort(&segment_.header().abort_word);
  if (remote_) remote_->share_movement(*this);
  // Single copy: say where this rank's nonce is, so peers can prove they may read its memory.
  if (options_.single_copy_min > 0 && peer_memory_readable() && !peers_.empty()) {
    SegmentHeader::Reach& me = segment_.header().reach[my_index_];
    me.nonce_at.store(reinterpret_cast<uintptr_t>(segment_.header().nonce),
                      std::memory_order_relaxed);
    me.pid.store(static_cast<int64_t>(::getpid()), std::memory_order_release);
    probed_all_ = false;
  }
}

ShmTransport::~ShmTransport() {
  if (aborted_) return;
  for (const Peer& p : peers_) {
    if (sending(p)) {  // requests abandoned mid-flight: nothing clean is possible
      abort(-1);
      return;
    }
  }
  // Clean close: what this rank sent is in the rings (readable after we unmap), so BYE and
  // close at once. Reading our socket empty first makes the close a FIN, not a reset.
  for (Peer& p : peers_) {
    if (!p.sock.valid() || p.gone) continue;
    char sink[256];
    while (::recv(p.sock.get(), sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
    send_record(p, kBye, rank_);
    ::shutdown(p.sock.get(), SHUT_WR);
  }
  // remote_ closes its own connections cleanly in its destructor.
}

bool ShmTransport::is_local(int peer) const {
  return local_of_[static_cast<size_t>(peer)] >= 0;
}

bool ShmTransport::local_busy() const {
  for (const Peer& p : peers_) {
    if (sending(p) || !p.recvq.empty()) return true;
  }
  return false;
}

void ShmTransport::fail(Error e) {
  abort(e.ranks().empty() ? -1 : e.ranks().front());
  throw e;
}

void ShmTransport::send_record(Peer& p, uint32_t type, int32_t aux) noexcept {
  if (!p.sock.valid() || p.gone) return;
  unsigned char rec[kRecord];
  std::memcpy(rec, &type, 4);
  std::memcpy(rec + 4, &aux, 4);
  // 8 bytes into a socket the peer drains whenever it wakes: never short in practice; a full
  // buffer (EAGAIN) means unread records are waiting there, which wake the peer as well.
  [[maybe_unused]] const ssize_t n =
      ::send(p.sock.get(), rec, kRecord, tcp::send_flags() | MSG_DONTWAIT);
}

void ShmTransport::abort(int failed_rank) noexcept {
  if (aborted_) return;
  aborted_ = true;
  if (segment_.mapped()) {
    uint64_t none = 0;
    const uint64_t word = (static_cast<uint64_t>(my_index_ + 1) << 32) |
                          static_cast<uint32_t>(failed_rank + 1);
    segment_.header().abort_word.compare_exchange_strong(none, word, std::memory_order_acq_rel);
  }
  for (Peer& p : peers_) {
    send_record(p, kAbort, failed_rank);
    p.sock.reset();
    p.sendq.clear();
    p.unacked.clear();
    p.recvq.clear();
  }
  if (remote_) remote_->abort(failed_rank);
}

void ShmTransport::isend(int peer, const void* data, size_t bytes, Request& req) {
  if (aborted_) throw Error(ErrorKind::kBroken, "the transport was aborted by an earlier error");
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw Error(ErrorKind::kInvalidArgument, "bad peer " + std::to_string(peer));
  }
  if (!is_local(peer)) {
    remote_->set_context(context());  // the communicator's message space, there too
    remote_->set_signature(signature());
    remote_->isend(peer, data, bytes, req);
    return;
  }
  req.peer = peer;
  req.bytes = bytes;
  req.is_send = true;
  req.parts_left = 1;
  Peer& p = local(peer);
  p.sendq.push_back(SendOp{static_cast<const unsigned char*>(data), bytes, &req, context(),
                           signature(), 0, sends_may_wait()});
  // Try at once: a small message usually leaves in this call.
  if (p.sendq.size() == 1) {
    try {
      if (p.gone) check_gone(p);
      progress_send(p);
    } catch (Error& e) {
      fail(std::move(e));
    }
  }
}

void ShmTransport::irecv(int peer, void* data, size_t bytes, Request& req) {
  if (aborted_) throw Error(ErrorKind::kBroken, "the transport was aborted by an earlier error");
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw Error(ErrorKind::kInvalidArgument, "bad peer " + std::to_string(peer));
  }
  if (!is_local(peer)) {
    remote_->set_context(context());
    remote_->set_signature(signature());
    remote_->irecv(peer, data, bytes, req);
    return;
  }
  post_local_recv(peer, data, bytes, req, Fold{});
}

void ShmTransport::post_local_recv(int peer, void* data, size_t bytes, Request& req,
                                   const Fold& fold) {
  req.peer = peer;
  req.bytes = bytes;
  req.is_send = false;
  req.parts_left = 1;
  local(peer).recvq.push_back(
      RecvOp{static_cast<unsigned char*>(data), bytes, &req, context(), signature(), 0, fold});
}

bool ShmTransport::irecv_reduce(int peer, void* dst, size_t bytes, const Fold& fold, Request& req) {
  if (aborted_) throw Error(ErrorKind::kBroken, "the transport was aborted by an earlier error");
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw Error(ErrorKind::kInvalidArgument, "bad peer " + std::to_string(peer));
  }
  if (is_local(peer)) {
    if (fold.own == nullptr) {
      throw Error(ErrorKind::kInvalidArgument, "irecv_reduce: the fold has no own bytes");
    }
    if (bytes % size_of(fold.type) != 0) {
      throw Error(ErrorKind::kInvalidArgument,
                  "irecv_reduce: " + std::to_string(bytes) + " bytes is not a whole number of " +
                      std::to_string(size_of(fold.type)) + "-byte elements");
    }
    post_local_recv(peer, dst, bytes, req, fold);
    return true;
  }
  remote_->set_context(context());
  remote_->set_signature(signature());
  return remote_->irecv_reduce(peer, dst, bytes, fold, req);
}

void ShmTransport::publish_head(Peer& p) {
  p.out_ctl->head.store(p.out_head, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (p.out_ctl->reader_sleeping.load(std::memory_order_relaxed) != 0 &&
      p.out_ctl->reader_sleeping.exchange(0) != 0) {
    send_record(p, kWake, 0);
  }
}

void ShmTransport::publish_tail(Peer& p) {
  p.in_ctl->tail.store(p.in_tail, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (p.in_ctl->writer_sleeping.load(std::memory_order_relaxed) != 0 &&
      p.in_ctl->writer_sleeping.exchange(0) != 0) {
    send_record(p, kWake, 0);
  }
}

bool ShmTransport::reads_me(Peer& p) {
  if (!p.reads_me) {
    const uint64_t mask =
        segment_.header().reach[p.index].reads_from.load(std::memory_order_relaxed);
    p.reads_me = ((mask >> my_index_) & 1u) != 0;
  }
  return p.reads_me;
}

void ShmTransport::probe_peers() {
  SegmentHeader& h = segment_.header();
  bool all = true;
  uint64_t readable = 0;
  for (Peer& p : peers_) {
    if (p.probed) continue;
    const int64_t pid = h.reach[p.index].pid.load(std::memory_order_acquire);
    if (pid == 0) {  // not published yet (or single copy is off there: it never will)
      all = false;
      continue;
    }
    p.probed = true;
    p.pid = pid;
    unsigned char seen[sizeof h.nonce];
    const uint64_t at = h.reach[p.index].nonce_at.load(std::memory_order_relaxed);
    if (read_peer_memory(pid, seen, at, sizeof seen) == 0 &&
        std::memcmp(seen, h.nonce, sizeof seen) == 0) {
      readable |= uint64_t{1} << p.index;
    }
  }
  if (readable != 0) h.reach[my_index_].reads_from.fetch_or(readable, std::memory_order_release);
  probed_all_ = all;
}

bool ShmTransport::retire_acked(Peer& p) {
  bool any = false;
  if (!p.unacked.empty()) {
    p.out_tail_seen = p.out_ctl->tail.load(std::memory_order_acquire);
    while (!p.unacked.empty() && p.out_tail_seen >= p.unacked.front().end) {
      --p.unacked.front().req->parts_left;
      p.unacked.pop_front();
      any = true;
    }
  }
  return any;
}

bool ShmTransport::progress_send(Peer& p) {
  bool any = retire_acked(p);
  while (!p.sendq.empty()) {
    SendOp& op = p.sendq.front();
    if (op.done == 0 && op.may_wait && options_.single_copy_min > 0 &&
        op.bytes >= options_.single_copy_min && reads_me(p)) {
      // By reference: the header and the descriptor, published together.
      if (ring_bytes_ - (p.out_head - p.out_tail_seen) < 2 * kHdr) {
        p.out_tail_seen = p.out_ctl->tail.load(std::memory_order_acquire);
        if (ring_bytes_ - (p.out_head - p.out_tail_seen) < 2 * kHdr) break;
      }
      const MsgHeader h{kRefMagic | op.signature, op.context, op.bytes};
      const RefDescriptor d{reinterpret_cast<uintptr_t>(op.data), 0};
      copy_in(p.out_data, mask_, p.out_head, &h, kHdr);
      copy_in(p.out_data, mask_, p.out_head + kHdr, &d, kHdr);
      p.out_head += 2 * kHdr;
      publish_head(p);
      p.unacked.push_back(Unacked{op.req, p.out_head});
      p.sendq.pop_front();
      any = true;
      continue;
    }
    const size_t end = kHdr + op.bytes;       // header and payload: copied
    const size_t total = kHdr + padded(op.bytes);  // and the padding: skipped
    // The tail last seen, reloaded only when it leaves too little room: reading it is a cache
    // miss (the reader writes it), on the critical path of every small send.
    uint64_t space = ring_bytes_ - (p.out_head - p.out_tail_seen);
    if (space < total - op.done) {
      p.out_tail_seen = p.out_ctl->tail.load(std::memory_order_acquire);
      space = ring_bytes_ - (p.out_head - p.out_tail_seen);
    }
    if (op.done == 0) {
      if (space < kHdr) break;
      const MsgHeader h{kMsgMagic | op.signature, op.context, op.bytes};
      copy_in(p.out_data, mask_, p.out_head, &h, kHdr);
      p.out_head += kHdr;
      op.done = kHdr;
      space -= kHdr;
      any = true;
    }
    while (op.done < total && space > 0) {
      const size_t n = std::min({total - op.done, static_cast<size_t>(space), piece_});
      if (op.done < end) {
        copy_in(p.out_data, mask_, p.out_head, op.data + (op.done - kHdr),
                std::min(n, end - op.done));
      }
      p.out_head += n;
      op.done += n;
      space -= n;
      any = true;
      if (op.done < total) publish_head(p);  // the reader starts on this piece
    }
    if (op.done < total) break;  // the ring is full: the rest when the reader frees space
    publish_head(p);
    --op.req->parts_left;
    p.sendq.pop_front();
  }
  return any;
}

// Folds n bytes (whole elements) of the incoming ring at `at` into op.data + op.got, with
// op.fold.own + op.got as the other source (Fold's order). The ring's end falls between elements
// (payloads start kAlign-aligned), so the part before it and the part after are folded apart.
void ShmTransport::fold_out(RecvOp& op, const unsigned char* ring, uint64_t at, size_t n) {
  const size_t pos = static_cast<size_t>(at & mask_);
  const size_t first = std::min(n, static_cast<size_t>(ring_bytes_) - pos);
  fold_piece(op, ring + pos, 0, first);
  if (first < n) fold_piece(op, ring, first, n - first);
  folded_bytes_ += n;
}

void ShmTransport::fold_piece(RecvOp& op, const unsigned char* m, size_t off, size_t len) {
  const void* own = static_cast<const unsigned char*>(op.fold.own) + op.got + off;
  const void* srcs[2] = {op.fold.incoming_first ? static_cast<const void*>(m) : own,
                         op.fold.incoming_first ? own : static_cast<const void*>(m)};
  reduce(op.fold.type, op.fold.op, op.data + op.got + off, srcs, 2, len / size_of(op.fold.type));
}

void ShmTransport::read_by_ref(Peer& p, RecvOp& op, uint64_t addr) {
  int err = 0;
  if (op.fold.own == nullptr) {
    err = read_peer_memory(p.pid, op.data, addr, op.bytes);
  } else {
    const size_t piece = kBouncePiece - kBouncePiece % size_of(op.fold.type);
    if (bounce_.size() < std::min(op.bytes, piece)) bounce_.resize(std::min(op.bytes, piece));
    for (size_t off = 0; off < op.bytes && err == 0; off += piece) {
      const size_t n = std::min(piece, op.bytes - off);
      err = read_peer_memory(p.pid, bounce_.data(), addr + off, n);
      if (err == 0) fold_piece(op, bounce_.data(), off, n);
    }
    if (err == 0) folded_bytes_ += op.bytes;
  }
  // A sender that gave up while we read may have freed its buffer: what we read is not its
  // message, and the reason is its, not ours. (It writes the abort word before it returns.)
  std::atomic_thread_fence(std::memory_order_seq_cst);
  check_abort_word();
  if (err == ESRCH) throw lost_rank(p.rank, "its process is gone (this rank was reading its send)");
  if (err != 0) {
    throw Error(ErrorKind::kSystem,
                "reading " + std::to_string(op.bytes) + " bytes out of " + rank_name(p.rank) +
                    "'s send buffer (shared memory's single copy) failed: " + std::strerror(err) +
                    "; CLUSTERCOMM_SHM_SINGLE_COPY_MIN=0 sends every message through the rings",
                {p.rank});
  }
  op.got = op.bytes;
  single_copy_bytes_ += op.bytes;
}

bool ShmTransport::progress_recv(Peer& p) {
  bool any = false;
  while (!p.recvq.empty()) {
    RecvOp& op = p.recvq.front();
    uint64_t avail = p.in_ctl->head.load(std::memory_order_acquire) - p.in_tail;
    if (!p.have_header) {
      if (avail < kHdr) break;
      copy_out(&p.header, p.in_data, mask_, p.in_tail, kHdr);
      p.in_tail += kHdr;
      avail -= kHdr;
      p.have_header = true;
      any = true;
      const uint32_t kind = p.header.magic & kMsgMagicMask;
      p.by_ref = kind == kRefMagic;
      if (kind != kMsgMagic && !(p.by_ref && p.probed && p.pid != 0)) {
        throw Error(ErrorKind::kProtocol,
                    "garbage in the shared-memory ring from " + rank_name(p.rank), {p.rank});
      }
      check_arrival(p.rank, p.header.context, op.context,
                    static_cast<Signature>(p.header.magic & 0xffu), op.signature, p.header.bytes,
                    op.bytes);
    }
    if (p.by_ref) {
      // The descriptor came with the header (published together). The tail moves past it
      // only once the payload is read: the sender's acknowledgement.
      if (avail < kHdr) break;
      RefDescriptor d;
      copy_out(&d, p.in_data, mask_, p.in_tail, kHdr);
      read_by_ref(p, op, d.address);
      p.in_tail += kHdr;
      publish_tail(p);
      p.have_header = false;
      p.by_ref = false;
      any = true;
      ++received_messages_;
      --op.req->parts_left;
      p.recvq.pop_front();
      continue;
    }
    // A fold takes whole elements only: the writer publishes pieces of any length.
    const bool folding = op.fold.own != nullptr;
    const size_t unit = folding ? size_of(op.fold.type) : 1;
    while (op.got < op.bytes && avail >= unit) {
      size_t n = std::min({op.bytes - op.got, static_cast<size_t>(avail), piece_});
      n -= n % unit;
      if (folding) {
        fold_out(op, p.in_data, p.in_tail, n);
      } else {
        copy_out(op.data + op.got, p.in_data, mask_, p.in_tail, n);
      }
      p.in_tail += n;
      op.got += n;
      avail -= n;
      any = true;
      if (op.got < op.bytes) publish_tail(p);  // the writer refills this piece meanwhile
    }
    // The padding comes with the payload's last piece: the writer publishes heads only at
    // kAlign-aligned positions (pieces start aligned and are piece_ or `space` long, and this
    // reader publishes only aligned tails: never mid-padding), so a head past the payload's
    // end is past its padding too, and avail < pad means the last piece is not published yet.
    const size_t pad = padded(op.bytes) - op.bytes;
    if (op.got < op.bytes || avail < pad) break;
    p.in_tail += pad;
    publish_tail(p);
    p.have_header = false;
    ++received_messages_;
    --op.req->parts_left;
    p.recvq.pop_front();
  }
  return any;
}

void ShmTransport::beat() {
  board()->beat_ns.store(ns_of(now_), std::memory_order_relaxed);
}

void ShmTransport::waiting_on(int peer) {
  if (peer == published_waiting_on_) return;
  published_waiting_on_ = peer;
  board()->waiting_on.store(peer + 1, std::memory_order_relaxed);
}

void ShmTransport::check_abort_word() {
  const uint64_t w = segment_.header().abort_word.load(std::memory_order_acquire);
  if (w == 0) return;
  const int by = static_cast<int>(w >> 32) - 1;
  if (by == my_index_ || by < 0 || by >= static_cast<int>(local_ranks_.size())) return;
  const int failed = static_cast<int>(static_cast<uint32_t>(w)) - 1;
  throw peer_gave_up(local_ranks_[static_cast<size_t>(by)], failed, rank_, size_);
}

bool ShmTransport::progress_local() {
  bool any = false;
  for (Peer& p : peers_) {
    bool moved = false;
    if (sending(p)) moved |= progress_send(p);
    if (!p.recvq.empty()) moved |= progress_recv(p);
    if (moved) p.last_active = now_;
    any |= moved;
  }
  // After the rings: a message a peer wrote before it gave up is still checked, so when two
  // ranks called different collectives the later one names the mismatch too (kProtocol), not
  // only that the other gave up. The peer may have published it between our ring read above
  // and this look (seen in CI: rank 3 told only that rank 2 gave up), so read them again.
  if (segment_.header().abort_word.load(std::memory_order_acquire) != 0) {
    read_rings_before_abort();
    check_abort_word();
  }
  return any;
}

void ShmTransport::read_rings_before_abort() {
  // The abort word (acq_rel) and the abort record are written after the peer published its
  // last message, and were seen with acquire: a ring read now sees that message.
  std::atomic_thread_fence(std::memory_order_acquire);
  for (Peer& p : peers_) {
    if (!p.recvq.empty()) progress_recv(p);
  }
}

void ShmTransport::read_socket(Peer& p) {
  while (p.sock.valid() && !p.gone) {
    const ssize_t r = ::recv(p.sock.get(), p.rec + p.rec_got, kRecord - p.rec_got, MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {  // EOF, or a reset: the process is gone (cleanly after BYE, or not)
      p.gone = true;
      check_gone(p);
      return;
    }
    p.rec_got += static_cast<size_t>(r);
    if (p.rec_got < kRecord) continue;
    p.rec_got = 0;
    uint32_t type;
    int32_t aux;
    std::memcpy(&type, p.rec, 4);
    std::memcpy(&aux, p.rec + 4, 4);
    if (type == kAbort) {
      read_rings_before_abort();
      throw peer_gave_up(p.rank, aux, rank_, size_);
    }
    if (type == kBye) {
      p.bye = true;
    } else if (type != kWake) {
      throw Error(ErrorKind::kProtocol, "garbage on the socket from " + rank_name(p.rank),
                  {p.rank});
    }
  }
}

void ShmTransport::check_gone(Peer& p) {
  // What the peer wrote before it closed is in the ring: take it first. And what it read of
  // ours by reference before it closed is acknowledged there: those sends are done.
  progress_recv(p);
  retire_acked(p);
  if (p.recvq.empty() && !sending(p)) return;
  if (p.bye) {
    throw lost_rank(p.rank, "it closed its communicator while this rank still expected data");
  }
  throw lost_rank(p.rank, "its socket closed (the process died)");
}

void ShmTransport::block(Deadline deadline) {
  for (Peer& p : peers_) {
    if (!p.recvq.empty()) p.in_ctl->reader_sleeping.store(1);
    if (sending(p)) p.out_ctl->writer_sleeping.store(1);
  }
  // Announce, then look again: a writer that published before seeing the flag is seen here.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!progress_local()) {
    pfds_.clear();
    for (const Peer& p : peers_) {
      if (p.sock.valid() && !p.gone) pfds_.push_back(pollfd{p.sock.get(), POLLIN, 0});
    }
    int cap_ms = sleep_cap_ms(static_cast<int>(kBoardEvery.count()));
    if (remote_) cap_ms = 1;  // the remote transport needs driving too
    ::poll(pfds_.data(), pfds_.size(), tcp::poll_timeout_ms(deadline, cap_ms));
  }
  for (Peer& p : peers_) {
    p.in_ctl->reader_sleeping.store(0, std::memory_order_relaxed);
    p.out_ctl->writer_sleeping.store(0, std::memory_order_relaxed);
    read_socket(p);
  }
}

void ShmTransport::timed_out(const Request& req) {
  // Blame first the peer that has been silent longest: the one the others wait on.
  std::vector<const Peer*> pending;
  for (const Peer& p : peers_) {
    if (!p.recvq.empty() || sending(p)) pending.push_back(&p);
  }
  // A peer whose heartbeat is stale is not waiting on anyone: it is the cause.
  const SegmentHeader& h = segment_.header();
  const auto stale = [&](const Peer* p) {
    return ns_of(now_) - h.beats[p->index].board.beat_ns.load(std::memory_order_relaxed) >
           std::chrono::duration_cast<std::chrono::nanoseconds>(kStale).count();
  };
  std::stable_sort(pending.begin(), pending.end(), [&](const Peer* a, const Peer* b) {
    const bool sa = stale(a), sb = stale(b);
    if (sa != sb) return sa;
    return a->last_active < b->last_active;
  });
  // With none of them stale, follow each one's wait through the board (waiting on whom, in the
  // library): a chain of waits that ends at a stale rank of this host names that rank as the
  // cause. The chain all-reduce makes such chains: rank 0 waits on rank n-1 alone, which waits
  // on rank n-2, which may be the stopped one.
  const Peer* cause = nullptr;
  const Peer* via = nullptr;
  if (!pending.empty() && !stale(pending.front())) {
    for (const Peer* start : pending) {
      const Peer* at = start;
      for (int hops = 0; hops < size_ && cause == nullptr; ++hops) {
        const int on = h.beats[at->index].board.waiting_on.load(std::memory_order_relaxed) - 1;
        if (on < 0 || on >= size_ || on == at->rank || on == rank_ || !is_local(on)) break;
        const Peer* next = &local(on);
        if (stale(next)) cause = next;
        at = next;
      }
      if (cause != nullptr) {
        via = start;
        break;
      }
    }
  }
  std::vector<int> ranks;
  ranks.reserve(pending.size() + 2);
  if (cause != nullptr) ranks.push_back(cause->rank);
  if (!is_local(req.peer) || pending.empty()) ranks.push_back(req.peer);
  for (const Peer* p : pending) {
    if (p != cause) ranks.push_back(p->rank);
  }
  const int first = ranks.front();
  std::string msg = "timed out waiting for " + rank_name(first);
  if (cause != nullptr) {
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(
        now_ - cause->last_active);
    msg += " (no data moved to or from it for " + std::to_string(silent.count()) + " ms" +
           what_it_does(*cause, true) + "; " + rank_name(via->rank) +
           ", which this rank waits on, waits in the library on it, directly or through others)";
  } else if (is_local(first)) {
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(
        now_ - local(first).last_active);
    msg += " (no data moved to or from it for " + std::to_string(silent.count()) + " ms" +
           what_it_does(*pending.front(), stale(pending.front())) + ")";
  }
  msg += "; this rank was " + std::string(req.is_send ? "sending to " : "receiving from ") +
         rank_name(req.peer) + (is_local(req.peer) ? " over shared memory" : " over the cables");
  if (ranks.size() > 1) msg += ", with requests pending with " + describe_ranks(ranks);
  throw Error(ErrorKind::kTimeout, msg, ranks);
}

std::string ShmTransport::what_it_does(const Peer& p, bool stale) const {
  if (stale) return ", and it is not waiting in the library: stopped, or busy elsewhere";
  const int on =
      segment_.header().beats[p.index].board.waiting_on.load(std::memory_order_relaxed) - 1;
  if (on < 0 || on >= size_ || on == p.rank) return ": hung, or slower than the timeout";
  if (on == rank_) {
    return "; it is waiting on this rank too: each waits for the other, so their calls do not "
           "match";
  }
  if (is_local(on)) return "; it is waiting in the library on " + rank_name(on) + " of this host";
  return "; it is waiting in the library on " + rank_name(on) +
         " of another host: that rank, or the cable to it, is the cause";
}

Deadline ShmTransport::peers_moved_until() const {
  const auto stall = stall_timeout();
  Deadline until{};
  if (stall.count() <= 0) return until;
  const SegmentHeader& h = segment_.header();
  for (const Peer& p : peers_) {
    if (p.recvq.empty() && !sending(p)) continue;
    const int64_t ns = h.beats[p.index].board.moved_ns.load(std::memory_order_relaxed);
    if (ns <= 0) continue;
    until = std::max(until, Deadline(std::chrono::duration_cast<Clock::duration>(
                                std::chrono::nanoseconds(ns))) +
                                stall);
  }
  return until;
}

void ShmTransport::poll() {
  if (aborted_) throw Error(ErrorKind::kBroken, "the transport was aborted by an earlier error");
  try {
    if (!probed_all_) probe_peers();
    if (progress_local()) moved();
    for (Peer& p : peers_) read_socket(p);
    if (remote_) remote_->poll();  // notes its movement in this transport's record
  } catch (Error& e) {
    fail(std::move(e));
  }
}

void ShmTransport::wait(Request& req, Deadline deadline) {
  if (aborted_) throw Error(ErrorKind::kBroken, "the transport was aborted by an earlier error");
  try {
    if (remote_ && !is_local(req.peer) && !local_busy()) {
      // Nothing here needs driving meanwhile. The cable transport's wait refreshes this
      // rank's heartbeat at its clock reads (the board is shared: share_movement), and the
      // board says whom it waits on, so a rank of this host that waits on this one names it
      // as waiting on a cable, not as stopped.
      waiting_on(req.peer);
      remote_->wait(req, deadline);
      return;
    }
    if (!probed_all_) probe_peers();
    Clock::time_point last = now_ = Clock::now();
    beat();
    waiting_on(req.peer);
    // A remote poll is a system call or more (TCP: a read per connection; verbs: a poll(2) of
    // the control connections), a local turn about 50 ns: waiting on a local request, the
    // remote transport is driven every kRemoteEvery turns only (and in block()).
    const bool remote_req = !is_local(req.peer);
    uint32_t turn = 0;
    while (!req.done()) {
      bool any = progress_local();
      // The cable transport notes what it moves in this transport's record (share_movement),
      // which limit() below dates and publishes: one place for both.
      if (remote_ && (remote_req || ++turn % kRemoteEvery == 0)) remote_->poll();
      if (any) moved();
      if (req.done()) return;
      const Clock::time_point now = Clock::now();
      now_ = now;
      beat();
      check_interrupt(now);
      if (any) {
        last = now;
        continue;
      }
      Deadline give_up = limit(deadline, now);
      if (now >= give_up) {
        give_up = std::max(give_up, peers_moved_until());
        if (now >= give_up) timed_out(req);
      }
      // Spin: the first few us without a system call (a reply between two running ranks
      // takes well under 1 us), then yielding on every turn, so a peer waiting for this core
      // (more ranks than cores, or other load) can run and answer.
      if (now - last < options_.spin) {
        if (options_.yield || now - last > kSpinWithoutYield) sched_yield();
        continue;
      }
      block(give_up);
      last = now_ = Clock::now();
    }
  } catch (Error& e) {
    fail(std::move(e));
  }
}

}  // namespace cc::comm::shm
