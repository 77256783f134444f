// The verbs transport: the Transport interface over FrameChannels, one per (peer, cable),
// plus one TCP control connection per peer kept from the bootstrap.
//
// Data goes only over the channels (UC queue pairs in the Apple profile, frame_channel.h has
// the protocol). A message of at least `stripe_min_bytes` is split into equal parts over the
// pair's cables, as the TCP transport does; both ends derive the split from the byte count:
// k parts of floor(S / k) bytes rounded down to a multiple of 8 (so every part starts on an
// element of any type: irecv_reduce folds each part on its own), the last one taking the rest.
// The control connection carries 16-byte headers only: ABORT (aux = the rank that failed)
// when a rank gives up, BYE on a clean close, and its EOF tells at once that a peer process
// died (kill -9). A peer that is alive but silent (SIGSTOP, a pulled cable) produces nothing
// at all on UC - not even an error completion
// (docs/platform.md#failure-modes-of-the-apple-provider) - so it is found by the call's
// timeout, like on TCP, and the error names the rank and the devices it was waited on. A
// rank that is waiting sends ALIVE on its control connections every 200 ms, so the timeout
// names first the rank silent longest (frames and ALIVE): the stopped one, not the ranks
// that merely wait on it.
//
// Progress only inside wait()/poll() on the caller's thread: wait() busy-polls the
// completion queues for `spin`, then sleeps in one poll(2) on every link's completion
// channel and every control connection together (arm, poll the queues once more, sleep), so
// a completion wakes it at once and a waiting rank leaves the CPU to the peer and the
// provider (Soft-RoCE's kernel work). Links without a completion channel nap 1 ms instead.
#pragma once

#include <poll.h>

#include <chrono>
#include <limits>
#include <memory>
#include <vector>

#include "comm/error.h"
#include "comm/transport/tcp/socket.h"
#include "comm/transport/transport.h"
#include "comm/transport/verbs/frame_channel.h"

namespace cc::comm::verbs {

struct VerbsOptions {
  std::chrono::microseconds spin{200};
  /// Only waits for messages up to this size spin; longer ones sleep at once. Default: every
  /// size (bench/compare-rdma on Soft-RoCE: sleeping at once above 64 KiB, as TCP does, cut
  /// the 4 MiB send/recv bandwidth from 0.97x to 0.58x of perftest's).
  size_t spin_max_bytes = std::numeric_limits<size_t>::max();
  /// Messages at least this long are striped over all cables of a pair.
  size_t stripe_min_bytes = size_t{1} << 20;
  /// How long the destructor waits for peers to close (no frame lost in flight).
  std::chrono::milliseconds close_timeout{30000};
  /// The links resend lost packets (RC queue pairs); UC does not. Only the advice in a
  /// timeout's message depends on it.
  bool resends = false;
  /// Every frame is sent at its full posted size (FrameChannel's padding; Config::ibv_pad_frames).
  bool pad_frames = false;
  /// Message parts of at least this many bytes are sent zero-copy where the link can
  /// (FrameChannel's "Zero-copy sends"; Config::ibv_zero_copy gives kZeroCopyMinBytes); 0: never.
  size_t zero_copy_min_bytes = 0;
};

class VerbsTransport final : public Transport {
 public:
  /// links[p] = the links to peer p (empty for p == rank, and for a peer this transport does
  /// not serve: one on this host that shared memory carries, shm_transport.h; isend/irecv to
  /// it throw kInvalidArgument), already connected with every
  /// receive frame postable; control[p] = the control connection to p (may be invalid in
  /// unit tests: then no peer-death signal but the timeout). `keepalive` owns whatever the
  /// links need to outlive (device contexts, protection domains); released last.
  VerbsTransport(int rank, int size, std::vector<std::vector<std::unique_ptr<FrameLink>>> links,
                 std::vector<tcp::Fd> control, VerbsOptions options,
                 std::shared_ptr<void> keepalive = nullptr);
  ~VerbsTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void isend(int peer, const void* data, size_t bytes, Request& req) override;
  void irecv(int peer, void* data, size_t bytes, Request& req) override;
  /// Folds each frame into dst as it is taken from its receive frame (FrameChannel::recv with
  /// a Fold), in place of the copy out. False (nothing posted) when a link's frame size is not
  /// a multiple of the type's size.
  bool irecv_reduce(int peer, void* dst, size_t bytes, const Fold& fold, Request& req) override;
  void wait(Request& req, Deadline deadline) override;
  void poll() override;
  void abort(int failed_rank) noexcept override;
  /// Drops the zero-copy registrations overlapping the range from every device's MR cache.
  void release_buffer(const void* data, size_t bytes) noexcept override;

  /// Summed over the channels (tests use it to see credit frames and stalls happen).
  FrameChannel::Stats stats() const;

 private:
  struct Peer {
    std::vector<std::unique_ptr<FrameLink>> links;
    std::vector<std::unique_ptr<FrameChannel>> channels;
    tcp::Fd control;
    bool bye = false;
    bool closed = false;
    Clock::time_point last_heard = Clock::now();  // last ALIVE on the control connection
    bool alive_heard = false;                     // an ALIVE came at all
  };
  template <class F>
  void split(int peer, size_t bytes, Request& req, F part);
  bool progress_channels();
  void read_control(bool block, Deadline deadline);
  [[noreturn]] void fail(Error e);
  void send_alive();
  // Frames that arrived from `p` on all its links.
  static uint64_t received_from(const Peer& p);
  std::vector<int> waiting_on(const Request& req, std::string& text) const;

  std::shared_ptr<void> keepalive_;  // declared first: destroyed after the links
  int rank_;
  int size_;
  VerbsOptions options_;
  std::vector<Peer> peers_;
  std::vector<FrameLink*> links_;  // every link, in peer order (the sleep's descriptors)
  std::vector<MrCache*> caches_;   // the links' MR caches, each once (one per device)
  std::vector<pollfd> pfds_;
  bool aborted_ = false;
  Clock::time_point last_alive_{};
};

}  // namespace cc::comm::verbs
