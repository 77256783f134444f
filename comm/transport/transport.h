// The transport interface: what every algorithm in comm/algorithms/ is written against.
//
// A transport connects this rank to its peers with reliable, ordered, two-sided channels.
// Between two ranks, messages are matched in posting order: the k-th isend from A to B
// fills the k-th irecv on B from A, and both must have the same byte count (a mismatch is
// ErrorKind::kProtocol: the ranks called different collectives or counts). There are no tags
// (each message carries its communicator's context, set_context, which the receive only
// checks) and no unexpected-message queue: a message waits in the sender (or the kernel) until its
// receive is posted, so the receiver's posted receives are its credits.
//
// That contract is chosen so an RDMA verbs transport fits behind it unchanged
// (docs/platform.md#transport-profile-and-limits): UC queue pairs with SEND/RECV only (no RDMA
// WRITE/READ), at most 10 QPs and ~100 memory regions per device, ~63 posted receives, frame sizes
// agreed at connect, messages <= 16,773,120 bytes. Such a transport splits each message into frames
// of the agreed size, copies them through a few registered frame rings, sends a frame only against
// a credit the receiver granted by posting a receive (a send without a posted receive is dropped
// silently on UC), and detects a dead peer by timeout (UC has no error completion). The TCP
// transport (tcp/) streams header + payload on non-blocking sockets instead.
//
// Progress is made only inside wait() and poll(), on the calling thread: no I/O thread, so
// no thread wake-up sits on the latency path (36 us per sleep and wake-up:
// docs/platform.md#open-mpi-and-gloo).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "comm/error.h"
#include "comm/types.h"

namespace cc::comm {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

/// Now + `timeout`, read from a coarse clock where there is one (Linux
/// CLOCK_MONOTONIC_COARSE: the epoch of steady_clock, up to a tick (1-4 ms) behind, no
/// hardware read), else from Clock. For per-call deadlines, which need ms: a precise read
/// costs about 1 us where the kernel reads an HPET (the emulated rdma-vm guest), on every
/// call on the latency path.
Deadline deadline_in(std::chrono::milliseconds timeout);

/// A call's deadline that starts counting at its first use: deadline_in(timeout) is read when
/// a wait first needs it (the conversion to Deadline), not when the call begins. A call's first
/// message is thus posted before any clock read, and a send whose request is done at posting
/// (copied into a frame) reads no clock at all: in the emulated guest the read (a vDSO call
/// chain) sat between a ping-pong's receive and its reply. Not copyable: every wait of one call
/// shares its one reading; a nested call takes a fixed Deadline from it.
class LazyDeadline {
 public:
  explicit LazyDeadline(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  LazyDeadline(Deadline at) : at_(at), set_(true) {}  // NOLINT: a fixed deadline converts
  LazyDeadline(const LazyDeadline&) = delete;
  LazyDeadline& operator=(const LazyDeadline&) = delete;
  operator Deadline() const {  // NOLINT: waits take it where they take a Deadline
    if (!set_) {
      at_ = deadline_in(timeout_);
      set_ = true;
    }
    return at_;
  }

 private:
  std::chrono::milliseconds timeout_{0};
  mutable Deadline at_{};
  mutable bool set_ = false;
};

/// How often a waiting call asks Config::interrupted, and the longest a blocking poll() sleeps
/// while one is installed (so Ctrl-C is seen within about twice this).
inline constexpr std::chrono::milliseconds kInterruptCheckEvery{20};

/// How Transport::irecv_reduce folds an arriving message into its destination: element by
/// element, dst[i] = incoming_first ? m[i] op own[i] : own[i] op m[i] (m: the message), as
/// reduce() with those two sources in that order, so the result is bit-identical to receiving
/// m and calling reduce(). `own` (count = bytes / size_of(type) elements) must stay unchanged
/// until the request is done; it may be dst itself (in place).
struct Fold {
  DataType type;
  ReduceOp op;
  const void* own;
  bool incoming_first;
};

/// What the call a message belongs to reduces: 0 (kReducesNothing) for a call that reduces
/// nothing (all_gather, broadcast, all_to_all, barrier, split, send/recv), else 1 + 4 x the
/// DataType + the ReduceOp of a reduction (all_reduce, reduce_scatter): 1..48, 7 bits. Every
/// message carries its call's (TCP: bits 8..15 of the header's first word; shared memory: the
/// low byte of the ring header's magic; verbs: bits 1..7 of a frame's flags word) and the
/// receive compares it with its own once per message (a DATA frame that starts one), before
/// the byte count: ranks that reduce with different types or ops, or where one reduces and
/// the other gathers, fail with kProtocol naming both calls instead of folding garbage. Point-
/// to-point send and recv carry 0: they are untyped.
using Signature = uint8_t;
inline constexpr Signature kReducesNothing = 0;
constexpr Signature reduction_signature(DataType type, ReduceOp op) {
  return static_cast<Signature>(1 + 4 * static_cast<unsigned>(type) + static_cast<unsigned>(op));
}
/// "an int32 sum reduction", "a call that reduces nothing (...)"; for messages.
std::string describe_signature(Signature s);
/// "sent data of an int32 sum reduction where this rank's call is a float32 sum reduction:
/// ...": the kProtocol text for a signature mismatch, shared by the transports.
std::string signature_mismatch(Signature got, Signature want);

/// One posted send or receive, owned by the caller. It must not move and must outlive its
/// completion (or the transport's abort()). A message may travel in several parts (one per
/// connection); the request is done when all have.
struct Request {
  int peer = -1;
  uint32_t parts_left = 0;
  bool is_send = false;
  size_t bytes = 0;
  bool done() const { return parts_left == 0; }
};

/// What a rank publishes about its waits for the ranks of its host (one per rank in the
/// shared-memory segment; written by that rank only, relaxed): beat_ns, when it last ran a
/// wait loop (Clock's nanoseconds since its epoch; refreshed at the clock reads its wait
/// already makes, the cable transport's included, at least every kBoardEvery while it waits);
/// moved_ns, when it last saw data move on any of its connections (0: never); waiting_on, the
/// world rank its latest wait is on + 1 (0: none yet). A rank whose beat is fresh is in the
/// library, waiting on waiting_on - 1; one whose beat is stale is stopped or busy elsewhere.
struct WaitBoard {
  std::atomic<int64_t> beat_ns;
  std::atomic<int64_t> moved_ns;
  std::atomic<int32_t> waiting_on;
};
/// A waiting rank refreshes its WaitBoard::beat_ns at least this often (a blocking poll()
/// sleeps at most this long while the rank publishes one).
inline constexpr std::chrono::milliseconds kBoardEvery{100};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Queues [data, data + bytes) for `peer` (!= rank()). The buffer must stay unchanged until
  /// `req` is done. bytes may be 0 (a pure synchronisation message). Never blocks.
  virtual void isend(int peer, const void* data, size_t bytes, Request& req) = 0;
  /// Queues a receive of exactly `bytes` from `peer` into `data`. Never blocks.
  virtual void irecv(int peer, void* data, size_t bytes, Request& req) = 0;

  /// Like irecv, but the message is folded into `dst` as it arrives (see Fold) instead of being
  /// stored: no scratch buffer and no copy, and the reduction runs piece by piece while the
  /// rest is on the wire. `bytes` must be a multiple of the type's size. Returns false, with
  /// nothing posted, where this transport cannot (the caller then receives into scratch and
  /// calls reduce()); the answer depends only on the transport, the peer (shared memory
  /// forwards a peer on another host to its cable transport) and the type, so a caller may ask
  /// once per peer and collective. The sender uses a plain isend: the wire does not change.
  /// Verbs folds straight out of its receive frames, shared memory out of its rings (a peer on
  /// the same host); TCP says false.
  virtual bool irecv_reduce(int /*peer*/, void* /*dst*/, size_t /*bytes*/, const Fold& /*fold*/,
                            Request& /*req*/) {
    return false;
  }

  /// Makes progress on all queued requests until `req` is done. Spins briefly, then blocks in
  /// poll(). Throws Error: kTimeout naming the peers with unfinished requests once `deadline`
  /// has passed and nothing moved on this rank's connections for the stall timeout (see
  /// set_stall_timeout: data still moving keeps a wait going past its deadline), kPeerLost
  /// when a peer's connection closes or it reports a failure, kProtocol on a size mismatch.
  /// After throwing, the transport is aborted (see abort()).
  virtual void wait(Request& req, Deadline deadline) = 0;
  /// Makes whatever progress is possible now, without blocking. Throws like wait().
  virtual void poll() = 0;

  /// Gives up: tells the peers (best effort) that this rank failed because of `failed_rank`
  /// (or -1), closes every connection and forgets every queued request. Idempotent.
  virtual void abort(int failed_rank) noexcept = 0;

  /// The message space (communicator) of the isend and irecv calls that follow: each message
  /// carries it (TCP: the header's aux field, 32 bits; verbs: bits 8..23 of a DATA frame's first
  /// word, the id mod 2^16), and a receive that meets a message of another context fails with
  /// kProtocol naming both. 0 (the default) is the world; communicators split from it get
  /// others (Communicator::split). It separates the spaces by checking, not by buffering: the
  /// k-th message from A to B still fills the k-th receive B posts from A.
  void set_context(uint32_t id) { context_ = id; }
  uint32_t context() const { return context_; }
  /// The Signature of the isend and irecv calls that follow (the communicator sets it per
  /// call); kReducesNothing by default. A transport that runs another under it (shared memory
  /// over its cable transport) passes it on with each call, like the context.
  void set_signature(Signature s) { signature_ = s; }
  Signature signature() const { return signature_; }
  /// Whether the isend calls that follow may complete only once their receiver has taken the
  /// bytes (the shared-memory transport's single copy: the receiver reads them straight out of
  /// the sender's buffer). The communicator allows it for its collectives, whose algorithms
  /// post their receives before they wait on a send; not for point-to-point send (false, the
  /// default), which keeps buffering a message up to a ring, as before, so two ranks that each
  /// send to the other before receiving do not wait on each other.
  void set_sends_may_wait(bool yes) { sends_may_wait_ = yes; }
  bool sends_may_wait() const { return sends_may_wait_; }

  /// Where this rank publishes, for the ranks of its host, how its waits go (its slot in the
  /// shared-memory segment), or nullptr: the shared-memory transport points itself at its
  /// slot (see ShmTransport::wait) and lets its cable transport share its movement record
  /// (share_movement), so a wait anywhere under it publishes there. Only this rank's own
  /// movement is published, never a peer's.
  void publish_to(WaitBoard* board) { movement_->board = board; }
  /// Makes this transport note and date its movement in `outer`'s record (and so publish it on
  /// `outer`'s board): a transport run under another (the cables under shared memory) moves
  /// data for the same rank, whichever of the two waits or polls. `outer` must outlive it.
  void share_movement(Transport& outer) { movement_ = outer.movement_; }
  /// Makes every wait that dates its movement in this transport's record (its own, and those of
  /// a transport run under it: share_movement) load `word` at each clock read, in limit(), and
  /// call host_aborted() when it is not 0. The shared-memory transport points it at its
  /// segment's abort word, so a leader whose wait went to the cables alone still sees a rank
  /// of its host give up within one sleep (kBoardEvery), not at the cable's own timeout. One
  /// relaxed load of a line that is written only on an abort. `word` must outlive this
  /// transport and those sharing its record.
  void watch_host_abort(const std::atomic<uint64_t>* word) {
    movement_->host_abort = word;
    movement_->host = this;
  }

  /// Whether the whole world runs on this one host with more ranks than the host has cores
  /// (online CPUs), so ranks share cores and each message's syscalls take CPU from a peer.
  /// Every rank of a world sees the same value (it is derived from facts they share), so
  /// algorithms may be chosen by it. The TCP transport works it out from its connections
  /// (both ends of every one on one address), the shared-memory transport from its segment
  /// (every rank of the world in it); verbs says false.
  virtual bool crowded() const { return false; }

  /// When crowded(): how many ranks share each core, rounded up (the world's ranks on this
  /// host over its online CPUs); 1 otherwise. The same on every rank of a world. A crowded
  /// shared-memory world with at most 2 ranks a core takes its small all-reduce in one phase
  /// (one-shot) rather than a star's two (communicator.cc).
  virtual unsigned ranks_per_core() const { return 1; }

  /// Whether a message costs a copy through memory shared with the peer rather than system
  /// calls or a wire: true for the shared-memory transport of a world all on its host. A crowded
  /// world chooses its large all-reduce by it (all_reduce_chain.cc: n = 4 on 2 cores, 2 MiB,
  /// the chain took half the direct algorithm's time over shared memory and 1.6-2x its time over
  /// TCP loopback, where each of its hops is system calls). The same on every rank of a crowded
  /// world.
  virtual bool messages_are_copies() const { return false; }

  /// Forgets whatever this transport keeps about [data, data + bytes) before the caller frees
  /// it: the verbs transport's cached zero-copy registrations of it (ZeroCopy::kCached; a cached
  /// registration pins the pages that were there, and memory later mapped at the same address
  /// would be sent stale). No other transport keeps anything: a no-op there. Never throws.
  virtual void release_buffer(const void* /*data*/, size_t /*bytes*/) noexcept {}

  /// Installs Config::interrupted: wait() asks it at most every kInterruptCheckEvery while it
  /// waits, sleeps at most that long at a time, and throws kInterrupted when it says true.
  /// A transport that runs another under it (shared memory over TCP or verbs) installs it there
  /// too.
  virtual void set_interrupt_check(std::function<bool()> check) {
    interrupted_ = std::move(check);
  }
  /// Config::timeout, as a bound on silence: a frame, bytes or a completion that moves on this
  /// rank's connections while wait() waits puts its limit at least that long after. So a call
  /// that takes longer than the timeout but keeps moving data is not cut off, and a wait on a
  /// peer that stopped fails the timeout after the last movement (or at `deadline`, whichever
  /// is later). 0 (the default): at `deadline`. Forwarded like the interrupt check.
  virtual void set_stall_timeout(std::chrono::milliseconds stall) { stall_ = stall; }

 protected:
  bool interruptible() const { return static_cast<bool>(interrupted_); }
  std::chrono::milliseconds stall_timeout() const { return stall_; }
  /// Called from wait() with the time just read: asks the check when it is due, and throws
  /// Error(kInterrupted) when it says to give up.
  void check_interrupt(Clock::time_point now);
  /// Notes that data moved (a wait or a poll saw progress), without reading the clock (a wait
  /// that is done at once reads none): the next limit() call, of this transport or of the one
  /// it shares its movement with, dates it and publishes it on the board. Kept across waits and
  /// calls, so a call of many waits that runs past its deadline while data moves is judged by
  /// its last movement, not by its start. Every path that sees data move calls it; limit() is
  /// the one place that dates and publishes.
  void moved() { movement_->unread = true; }
  /// When a wait with `deadline` gives up, `now` being the time just read: the deadline, or the
  /// stall timeout after the last movement, whichever is later. Also refreshes the board's
  /// heartbeat (a wait calls it at its clock reads: no clock read of its own), and throws what
  /// host_aborted() throws when the watched abort word is set (watch_host_abort).
  Deadline limit(Deadline deadline, Clock::time_point now) {
    Movement& m = *movement_;
    if (m.unread) {
      m.at = now;
      m.unread = false;
      if (m.board != nullptr)
        m.board->moved_ns.store(ns_since_epoch(now), std::memory_order_relaxed);
    }
    if (m.board != nullptr) m.board->beat_ns.store(ns_since_epoch(now), std::memory_order_relaxed);
    if (m.host_abort != nullptr && m.host_abort->load(std::memory_order_relaxed) != 0) {
      m.host->host_aborted();
    }
    return stall_.count() > 0 && m.at + stall_ > deadline ? m.at + stall_ : deadline;
  }
  /// The longest a blocking poll() may sleep when it would sleep `cap_ms`: at most
  /// kInterruptCheckEvery while an interrupt check is installed, kBoardEvery while the rank
  /// publishes a heartbeat.
  int sleep_cap_ms(int cap_ms) const {
    if (interruptible()) cap_ms = std::min(cap_ms, static_cast<int>(kInterruptCheckEvery.count()));
    if (movement_->board != nullptr)
      cap_ms = std::min(cap_ms, static_cast<int>(kBoardEvery.count()));
    return cap_ms;
  }
  WaitBoard* board() const { return movement_->board; }
  static int64_t ns_since_epoch(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }

 private:
  std::function<bool()> interrupted_;
  std::chrono::milliseconds stall_{0};
  // The last movement: dated by limit(), noted by moved(). A transport under another points
  // at the outer one's (share_movement).
  struct Movement {
    Clock::time_point at{};
    bool unread = false;
    WaitBoard* board = nullptr;
    const std::atomic<uint64_t>* host_abort = nullptr;  // watch_host_abort
    Transport* host = nullptr;                          // whose host_aborted() it calls
  };
  /// Called by limit() when the watched abort word is not 0: throws the Error it means (a rank
  /// of this host gave up), or returns when the word is this rank's own. Only the transport that
  /// called watch_host_abort is asked.
  virtual void host_aborted() {}
  Movement own_movement_;
  Movement* movement_ = &own_movement_;
  uint32_t context_ = 0;
  Signature signature_ = kReducesNothing;
  bool sends_may_wait_ = false;
  Clock::time_point next_interrupt_check_{};
};

/// "a message of communicator 3 where this rank expected one of communicator 0 (...)": the
/// kProtocol text for a context mismatch, shared by the transports.
std::string context_mismatch(uint32_t got, uint32_t want);

/// The error a peer's ABORT means, for every transport: `peer` gave up, and its own error
/// named `failed` (-1 or `peer` itself: none). It says what is known and no more: the named
/// rank may be alive (a count that differed, a timeout), so not "lost". kPeerLost, ranks
/// {failed, peer}: "rank 0 gave up because of rank 2: its own error names that rank (...)";
/// to the named rank itself (failed == self), "rank 0 gave up on this rank (2): ...".
Error peer_gave_up(int peer, int failed, int self, int size);

/// Throws Error(kProtocol) naming `peer` when a message it sent (communicator got_context,
/// of a call with signature got_sig, got_bytes long) does not fit the receive posted for it
/// (want_context, want_sig, want_bytes): the check every transport makes when a message's
/// header arrives. Checked in that order: the communicator, the call, the size.
void check_arrival(int peer, uint32_t got_context, uint32_t want_context, Signature got_sig,
                   Signature want_sig, uint64_t got_bytes, size_t want_bytes);

/// Waits for every request in `reqs` (in order).
void wait_all(Transport& t, std::span<Request> reqs, Deadline deadline);

}  // namespace cc::comm
