// The shared-memory transport: ranks on the same host exchange messages through the rings of
// one segment (shm_segment.h), with no system call per message. Peers on other hosts are
// forwarded to the cable transport (`remote`: TCP or verbs), so a job with several ranks per
// host runs shm inside each host and the cables between hosts.
//
// Message format in a ring: a 16-byte header {magic (its low byte: the Signature of the
// message's call, Transport::set_signature), context, payload bytes} and the payload,
// padded to a multiple of 16 bytes that are skipped, never written (so a header never wraps
// around the ring, and an element of a reduction never straddles its end or sits misaligned:
// irecv_reduce folds pieces straight out of the ring). The k-th isend
// from A to B fills the k-th irecv B posts from A, as the Transport contract says; a sender
// may run ahead of its receiver by at most one ring (ShmOptions::ring_bytes), after which its
// isend waits for space. Large messages are copied in pieces of a quarter ring, each published
// on its own, so the receiver copies one piece out while the sender copies the next one in.
//
// Waiting: spin (50 us busy, then calling sched_yield each turn - from the first turn when the
// host's ranks outnumber its cores - so a peer waiting for this core can run and answer:
// measured under load, a busy spin made an 8-byte all_reduce 15x slower than TCP's
// yielding one; yielding after 5 us gave the core to other processes whenever the peer was
// a little late), then block in poll() on the pair's
// socket: a sleeper sets its ring's sleep flag and the other side, seeing it, sends one 8-byte
// WAKE record. That socket is the bootstrap's TCP connection of the pair, kept for three more
// reasons: ABORT {failed rank} when a rank gives up, BYE on a clean close, and EOF when a
// process dies (kill -9 closes it): a dead peer is named as soon as this rank waits for it.
// A stopped peer (SIGSTOP) is silent: the call times out naming first, of the peers it still
// has requests with, those whose heartbeat (SegmentHeader::beats, a WaitBoard: refreshed by every
// waiting rank at least every 100 ms, in a wait handed to the cable transport too) is over
// 500 ms old, then the one that has moved no data for longest: a survivor waiting on another
// survivor that waits on the stopped rank names the stopped rank, not its neighbour. The board
// also says whom the waited-on rank's own wait is on, which the message names ("it is waiting
// in the library on rank 3 of another host"). The stall timeout (Transport::set_stall_timeout)
// counts a local peer's movement as movement: each rank publishes in the segment when it last saw
// data move on any of its connections (the cables too: the cable transport notes its movement in
// this transport's record, Transport::share_movement, from its waits and from the polls driven
// here), and a wait whose own limit has passed goes on while a local peer it has requests with
// moved data within the timeout. A rank that
// aborts also writes the segment's abort word, which spinning peers read on every turn, and
// every wait of the rank reads at its clock reads (Transport::watch_host_abort): a leader whose
// wait went to the cable transport alone (it waits on another host only) fails naming the rank
// of its host that gave up within about 100 ms (kBoardEvery: its longest sleep in poll()),
// not when the cable wait ends.
//
// Single copy (Linux; off by default: ShmOptions::single_copy_min, CLUSTERCOMM_SHM_SINGLE_COPY_MIN;
// it measured slower than the rings' two copies here, comm/README.md): a message
// of at least that many bytes, sent in a collective (Transport::set_sends_may_wait), to a peer
// that has proven it can read this rank's memory, is not copied into the ring. The sender writes
// a by-reference message instead: the 16-byte header (its own magic) and a 16-byte descriptor
// {u64 address of the payload in the sender, u64 0}; the receiver copies the payload straight
// out of the sender's buffer (read_peer_memory: process_vm_readv) into its receive, or in
// 64 KiB pieces through a small buffer that it folds from (irecv_reduce), and only then moves
// the ring's tail past the descriptor: that tail is the sender's acknowledgement, and the send
// completes when it sees it (until then the sender may write later messages behind it). One
// copy instead of two, as Open MPI's vader does with CMA. The proof: each rank publishes its pid
// and the address of its own mapping of the segment's nonce (SegmentHeader::reach); at its
// first wait or poll, a rank reads each peer's nonce there and publishes the peers whose memory
// it can read (Yama's ptrace_scope or a container may forbid it: then that pair keeps the
// rings, with no message). A sender that sees no proof yet uses the rings. The receiver checks
// the abort word after each read: a sender that gave up (and may have freed its buffer) while
// it was read is named, not its bytes used. Point-to-point send never goes by reference: a
// rank may send to a peer that sends to it before either receives, as long as a message fits
// in the ring. macOS has no such call: the rings carry everything there.
//
// With a remote transport, a wait that has shared-memory requests queued cannot block in the
// remote's poll(): it sleeps at most 1 ms at a time in poll() on the pair sockets, then drives
// the remote transport again. While it spins on a local peer's request it drives the remote
// transport every 16th turn only (a remote poll costs system calls; a local turn does not).
#pragma once

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/error.h"
#include "comm/transport/shm/shm_segment.h"
#include "comm/transport/tcp/socket.h"
#include "comm/transport/transport.h"

namespace cc::comm::shm {

struct ShmOptions {
  /// Busy-poll this long without progress before blocking.
  std::chrono::microseconds spin{200};
  /// Yield the core on every spin turn (set when the host's ranks outnumber its cores).
  bool yield = false;
  /// Transport::crowded(): the whole world is on this host, with more ranks than cores.
  bool crowded = false;
  /// Transport::ranks_per_core() when crowded: ceil(ranks on this host / cores); at least 2
  /// is reported while crowded.
  unsigned ranks_per_core = 2;
  /// Single copy (see above) for collective messages of at least this many bytes; 0: never
  /// (every message through the rings). Config: CLUSTERCOMM_SHM_SINGLE_COPY_MIN.
  size_t single_copy_min = 0;
};

class ShmTransport final : public Transport {
 public:
  /// local_ranks: the world ranks sharing `segment`, ascending (this rank among them; local
  /// index i = position in the list). socks[p] = the pair socket to world rank p for every
  /// local peer p (invalid otherwise). remote: the transport for every other peer, or nullptr
  /// when all ranks are local.
  ShmTransport(int rank, int size, std::vector<int> local_ranks, Segment segment,
               std::vector<tcp::Fd> socks, std::unique_ptr<Transport> remote,
               ShmOptions options);
  ~ShmTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void isend(int peer, const void* data, size_t bytes, Request& req) override;
  void irecv(int peer, void* data, size_t bytes, Request& req) override;
  /// A peer on this host: true, and each piece the peer publishes is folded straight out of
  /// the ring into dst (no copy into a scratch buffer first). A peer on another host: the
  /// cable transport's (verbs folds from its frames; TCP says false).
  bool irecv_reduce(int peer, void* dst, size_t bytes, const Fold& fold, Request& req) override;
  void wait(Request& req, Deadline deadline) override;
  void poll() override;
  void abort(int failed_rank) noexcept override;
  bool crowded() const override { return options_.crowded; }
  unsigned ranks_per_core() const override {
    return options_.crowded ? std::max(options_.ranks_per_core, 2u) : 1u;
  }
  /// Transport::messages_are_copies(): the whole world is on this host (no cable transport).
  bool messages_are_copies() const override { return remote_ == nullptr; }

  /// The world ranks on this host (this one among them).
  const std::vector<int>& local_ranks() const { return local_ranks_; }
  /// The transport between hosts, or nullptr.
  const Transport* remote() const { return remote_.get(); }
  /// Payload bytes irecv_reduce folded straight out of the rings, or out of a peer's buffer
  /// (single copy), so far (tests, benchmarks).
  uint64_t folded_bytes() const { return folded_bytes_; }
  /// Messages received from local peers so far (tests: which algorithm ran).
  uint64_t received_messages() const { return received_messages_; }
  /// Payload bytes received by single copy (read out of the sender's buffer) so far.
  uint64_t single_copy_bytes() const { return single_copy_bytes_; }
  void set_interrupt_check(std::function<bool()> check) override {
    if (remote_) remote_->set_interrupt_check(check);
    Transport::set_interrupt_check(std::move(check));
  }
  void set_stall_timeout(std::chrono::milliseconds stall) override {
    if (remote_) remote_->set_stall_timeout(stall);
    Transport::set_stall_timeout(stall);
  }
  /// The cable transport's (verbs zero-copy registrations); shared memory keeps none.
  void release_buffer(const void* data, size_t bytes) noexcept override {
    if (remote_) remote_->release_buffer(data, bytes);
  }

  struct MsgHeader {
    uint32_t magic;
    uint32_t context;
    uint64_t bytes;
  };
  static_assert(sizeof(MsgHeader) == 16);

 private:
  struct SendOp {
    const unsigned char* data;
    size_t bytes;
    Request* req;
    uint32_t context;
    Signature signature;
    size_t done;  // bytes of header + payload + padding written so far
    bool may_wait;  // Transport::sends_may_wait() at isend: single copy allowed
  };
  // A by-reference message written to the ring, waiting for the reader's acknowledgement: the
  // ring's tail at or past `end` (its descriptor's end).
  struct Unacked {
    Request* req;
    uint64_t end;
  };
  struct RecvOp {
    unsigned char* data;
    size_t bytes;
    Request* req;
    uint32_t context;
    Signature signature;
    size_t got;  // payload bytes copied out (or folded)
    Fold fold;   // irecv_reduce's; fold.own == nullptr: a plain copy (irecv)
  };
  struct Peer {
    int rank = -1;
    int index = -1;  // local index
    tcp::Fd sock;
    RingCtl* out_ctl = nullptr;
    unsigned char* out_data = nullptr;
    RingCtl* in_ctl = nullptr;
    unsigned char* in_data = nullptr;
    uint64_t out_head = 0;  // our copy of the outgoing ring's head (we are its only writer)
    uint64_t in_tail = 0;   // our copy of the incoming ring's tail (we are its only reader)
    uint64_t out_tail_seen = 0;  // the outgoing ring's tail when we last loaded it (<= tail)
    bool have_header = false;  // the incoming message's header is read, its payload pending
    MsgHeader header{};
    std::deque<SendOp> sendq;
    std::deque<Unacked> unacked;  // written by reference, in order
    std::deque<RecvOp> recvq;
    bool by_ref = false;     // the incoming message whose header is read is by reference
    int64_t pid = 0;         // its process, once probed (single copy)
    bool probed = false;     // this rank has tried to read its memory (single copy)
    bool reads_me = false;   // it has proven it can read this rank's memory (single copy)
    char rec[8];  // a socket record being read
    size_t rec_got = 0;
    Clock::time_point last_active{};  // when data last moved to or from it (about)
    bool bye = false;   // it closed its communicator cleanly (its ring may still hold data)
    bool gone = false;  // its socket reached EOF
  };

  bool is_local(int peer) const;
  static bool sending(const Peer& p) { return !p.sendq.empty() || !p.unacked.empty(); }
  Peer& local(int peer) { return peers_[static_cast<size_t>(local_of_[static_cast<size_t>(peer)])]; }
  bool local_busy() const;
  bool progress_local();
  bool progress_send(Peer& p);
  // Completes the by-reference sends whose descriptor the reader has moved the tail past (it
  // does so only after it has read the payload out of our buffer).
  bool retire_acked(Peer& p);
  bool progress_recv(Peer& p);
  // Queues a receive from local peer `peer` (fold.own == nullptr: copied, else folded).
  void post_local_recv(int peer, void* data, size_t bytes, Request& req, const Fold& fold);
  void fold_out(RecvOp& op, const unsigned char* ring, uint64_t at, size_t n);
  // Folds len bytes (whole elements) of incoming bytes at m into op.data + op.got + off, with
  // op.fold.own + op.got + off as the other source (Fold's order).
  void fold_piece(RecvOp& op, const unsigned char* m, size_t off, size_t len);
  // Whether peer p has proven that it can read this rank's memory (cached once it has).
  bool reads_me(Peer& p);
  // Publishes, once per peer that has published its pid, whether this rank can read its memory.
  void probe_peers();
  // Single copy: op's whole payload from address `addr` in p's process (see above).
  void read_by_ref(Peer& p, RecvOp& op, uint64_t addr);
  void publish_head(Peer& p);
  void publish_tail(Peer& p);
  void send_record(Peer& p, uint32_t type, int32_t aux) noexcept;
  void read_socket(Peer& p);
  void check_gone(Peer& p);
  void check_abort_word();
  // A peer gave up (its abort word or record is seen): before saying so, read once more what
  // it wrote to this rank's rings, so a message it published before giving up (a mismatched
  // call, say) is checked and named (kProtocol) rather than lost in a race between the two
  // looks: the ring read first, then the abort word. Throws what that read finds, if anything.
  void read_rings_before_abort();
  // The abort word is set (Transport::watch_host_abort, seen at a clock read of any wait,
  // the cable transport's included): what the host's peers wrote first, then check_abort_word().
  void host_aborted() override {
    read_rings_before_abort();
    check_abort_word();
  }
  void beat();  // this rank's heartbeat := now_
  // Publishes that this rank's wait is on world rank `peer` (WaitBoard::waiting_on), storing
  // only when it changed.
  void waiting_on(int peer);
  // What a local peer this rank timed out on is doing, from its board: ", and it is not waiting
  // in the library: ..." (stale heartbeat), "; it is waiting in the library on rank 3 of another
  // host: ...", "; it is waiting on this rank too: ...".
  std::string what_it_does(const Peer& p, bool stale) const;
  // The stall timeout after the latest movement that a local peer this rank has requests
  // with published (SegmentHeader::Beat::moved_ns): a rank waiting on a peer of its host that
  // moves data elsewhere (its leader on the cables) is not silent. Read only when the wait's
  // own limit has passed; never published as this rank's own movement, so ranks that wait on
  // each other cannot keep each other alive. The epoch (Deadline{}) when none.
  Deadline peers_moved_until() const;
  void block(Deadline deadline);
  [[noreturn]] void timed_out(const Request& req);
  [[noreturn]] void fail(Error e);

  int rank_;
  int size_;
  std::vector<int> local_ranks_;
  std::vector<int> local_of_;  // world rank -> index into peers_, or -1
  int my_index_ = -1;
  Segment segment_;
  std::vector<Peer> peers_;
  std::vector<pollfd> pfds_;
  std::unique_ptr<Transport> remote_;
  ShmOptions options_;
  Clock::time_point now_;  // the wait loop's latest clock read (stamps Peer::last_active)
  uint64_t ring_bytes_;
  uint64_t mask_;
  size_t piece_;  // largest copy published at once
  bool aborted_ = false;
  uint64_t folded_bytes_ = 0;
  uint64_t received_messages_ = 0;
  uint64_t single_copy_bytes_ = 0;
  bool probed_all_ = true;  // probe_peers() has nothing left to do (or single copy is off)
  std::vector<unsigned char> bounce_;  // single copy into a fold: one piece at a time
  int published_waiting_on_ = -1;  // the last rank stored in the board's waiting_on
};

}  // namespace cc::comm::shm
