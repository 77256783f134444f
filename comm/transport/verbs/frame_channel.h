// FrameChannel: the protocol of one (peer, cable) link - framing, credits and matching - on
// top of a FrameLink. No verbs calls here (they are behind FrameLink).
//
// Framing. A message of S bytes travels as ceil(S / F) frames (at least one), F = the agreed
// frame size (FrameLink::frame_bytes(), a power of two): each frame is a 24-byte little-endian
// header {u32 0xCC000000 | context << 8 | type (context: the communicator's id mod 2^16,
// Transport::set_context; 0 on CREDIT), u32 credits returned, u32 payload bytes, u32 flags
// (bit 0: first frame of a message; bits 1..7, on a first frame: the Signature of the
// message's call, Transport::set_signature, checked against the receive's; bits 8..31: the
// frame's sequence number mod 2^24), u64 message bytes} and up to F payload bytes. The header is outside the payload budget (a slot
// and a posted receive are F + 24 bytes), so a message of 2^k bytes fills whole frames: with
// the header inside, a 64 KiB message at F = 64 KiB took a second frame of 24 payload bytes (a
// work request, a credit and a completion more). Types: DATA, CREDIT (header only). The
// receiver checks the first word's magic, that the payload fits F and that the completion's
// byte count is the header plus the payload (or, padded, exactly F + 24).
//
// Padding (the Apple profile's default, Config::ibv_pad_frames). JACCL sends every buffer
// whole, its posted size, on Apple's stack, where a send shorter than the posted receive is
// unproved (docs/platform.md#transport-profile-and-limits); with padding on, every frame (DATA
// and CREDIT) is sent as F + 24 bytes, whatever its payload, the bytes after the payload being
// whatever the send slot held (this job's earlier frames to the same peer). The header's
// payload count still says what is real; the receiver takes both forms.
//
// Loss. Every frame (DATA or CREDIT) is numbered from 0 at connect, and the receiver checks
// that they arrive 0, 1, 2, ...: a UC queue pair drops a whole message when one of its
// packets is lost or arrives out of order, and never resends it (measured on Soft-RoCE: a
// sending process that moves between CPUs reorders the packets of 256 KiB frames; RC resends
// them). A gap fails the call at the next frame (kSystem, naming the peer, the device and the
// frame) instead of shifting every later message by one; a lost last frame is found by the
// timeout. There is no resend on UC.
//
// Credits. Each end posts all R receive frames at connect, before the peer may send
// (verbs_setup.cc exchanges "ready" only after that), so the sender starts with R credits:
// one credit = one posted receive on the other side. A frame is sent only against a credit,
// so a UC send never meets an empty receive queue (it would be dropped silently). The
// receiver reposts a frame once its payload is copied out (or at once for CREDIT) and
// returns the credit in the header of its next frame to that peer; when R/2 credits are owed
// and nothing goes the other way, it sends a CREDIT frame. DATA needs 2 credits and CREDIT
// needs 1: the last credit is kept for returning credits, and every CREDIT frame returns at
// least R/2 >= 2 credits, so neither end can be left with credits owed and none to send them
// with (the fake-link tests drive both ends to exhaustion to show it).
//
// Folding (Transport::irecv_reduce). A receive part may carry a Fold: each DATA frame taken
// into it is reduced with the matching bytes of `own` straight out of the receive frame
// (reduce() of two sources, in the fold's order) and written to the destination, in place of
// the copy out; the frame is reposted after. The wire is the same, so the sender does not
// know. Frame boundaries fall on elements: the transport folds only where F is a multiple of
// the element size, and message parts start on a multiple of 8 bytes. The result is
// bit-identical to receiving and then reducing (the same two sources, the same order, each
// element once); it saves the copy and a pass over scratch, and reduces each frame while the
// next ones are on the wire.
//
// Matching. DATA frames wait in the order they arrived (in their receive frames, which stay
// posted-out: that is the back-pressure) until the next posted irecv takes them; the first
// frame's message size must equal the irecv's byte count and its context the irecv's (else
// kProtocol). Costs: one copy
// into the send frame, one copy out of the receive frame; one work request per frame, one
// send completion per S/2 frames (S send frames); one CREDIT frame per R/2 frames only when
// traffic is one-way.
//
// Zero-copy sends (Config::ibv_zero_copy, CLUSTERCOMM_IBV_ZERO_COPY; per message by default on
// Linux; `zero_copy_min` > 0 here). A message part of at least zero_copy_min bytes (kZeroCopyMinBytes, mr_cache.h),
// on a link with max_send_sge() >= 2 and an MR cache, is leased a registration of the user's
// buffer (MrCache::acquire) and each of its frames goes out as one work request of two
// scatter/gather entries: the header, written into the frame's send slot as always, and the
// payload straight from the user buffer (FrameLink::post_send_gather). The receiver cannot
// tell: the same bytes land contiguous in its posted receive, so the wire format is unchanged
// and a zero-copy sender talks to a copying one. What changes is when the send is done: the
// payload is read from the user buffer until the hardware has sent it, so the part's last
// frame is always signaled and the request's parts_left drops only when that completion
// arrives (send queues complete in order: it covers every earlier frame); the lease is then
// released. Copied parts still complete at posting. Padding with zero-copy: full frames are
// already the posted size; a short last frame of a zero-copy part is copied into its slot and
// padded as usual (still signaled, and the part completes at its completion). The cache full
// of held registrations, or a refused registration, sends that part by copying (counted in
// Stats::zero_copy_fallbacks); a link with max_send_sge() < 2 or no cache never tries.
// Cost saved: the copy into the send frame (one memcpy of the payload per frame); cost added:
// a registration per message (a system call and page pinning; per new buffer when the cache
// keeps them), a signaled send per
// message, and the sender waits for the send completion instead of returning at posting.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "comm/error.h"
#include "comm/transport/transport.h"
#include "comm/transport/verbs/frame_link.h"
#include "comm/transport/verbs/mr_cache.h"

namespace cc::comm::verbs {

class FrameChannel {
 public:
  /// `link` stays owned by the caller. `peer` names the other rank in errors. Posts all
  /// receive frames (the caller then tells the peer it is ready). `pad_frames`: every frame
  /// goes out at the full posted size, wire_bytes() (see "Padding" above). `zero_copy_min`:
  /// parts of at least this many bytes are sent zero-copy when the link can (0: never; see
  /// "Zero-copy sends" above).
  FrameChannel(FrameLink& link, int peer, bool pad_frames = false, size_t zero_copy_min = 0);
  ~FrameChannel();  // releases the registrations still leased (after an abort)
  FrameChannel(const FrameChannel&) = delete;
  FrameChannel& operator=(const FrameChannel&) = delete;

  /// Queues a message part; the request's parts_left is decremented when its last frame is
  /// posted (the data then sits in registered frames: the user buffer is free again), or, for
  /// a zero-copy part, when the send completion covering its last frame arrives (until then
  /// the hardware reads the user buffer). `context`: the communicator's id (its low 16 bits
  /// travel).
  /// `sig`: the Signature of the message's call (transport.h), carried by its first frame.
  void send(const char* data, size_t bytes, Request& req, uint32_t context = 0,
            Signature sig = kReducesNothing);
  /// Queues a receive part of exactly `bytes`, of a message sent in `context`. With `fold`
  /// (transport.h; its `own` already offset to this part), each frame's payload is folded
  /// into data (reduce() of it and own, in the fold's order) instead of copied: a frame whose
  /// payload is not a whole number of elements is kProtocol.
  /// `sig`: the Signature the message's first frame must carry (else kProtocol naming both).
  void recv(char* data, size_t bytes, Request& req, uint32_t context = 0,
            const Fold* fold = nullptr, Signature sig = kReducesNothing);
  /// Polls completions, matches arrived frames, sends what credits allow. Returns whether
  /// anything happened. Throws Error: kProtocol (size mismatch, bad frame), kSystem (a
  /// completion with an error status), naming the peer and the link's device.
  bool progress();
  /// Parts still queued or, zero-copy, posted and not yet completed (for the timeout message
  /// and clean close).
  bool idle() const { return sendq_.empty() && recvq_.empty() && zc_pending_.empty(); }
  /// Frames posted to the link (data and credit), and frames that arrived from it: what a rank
  /// that aborts tells its peer it sent, and what the peer waits to have seen before it acts on
  /// the ABORT (VerbsTransport::read_control).
  uint64_t frames_posted() const { return sent_; }
  uint64_t frames_received() const { return received_; }
  bool has_sends() const { return !sendq_.empty() || !zc_pending_.empty(); }
  /// Whether parts of at least zero_copy_min bytes go zero-copy on this link (asked for, and
  /// the link has an MR cache and max_send_sge() >= 2).
  bool zero_copy() const { return cache_ != nullptr; }
  int peer() const { return peer_; }
  FrameLink& link() { return link_; }
  void clear();

  struct Stats {
    uint64_t data_frames = 0, credit_frames = 0, stalls_no_credit = 0;
    /// Frames sent with the payload gathered from the user buffer; parts that asked for
    /// zero-copy and were copied (cache full of held entries, registration refused).
    uint64_t zero_copy_frames = 0, zero_copy_fallbacks = 0;
    /// DATA frames folded into a receive (recv with a Fold) instead of copied out.
    uint64_t folded_frames = 0;
  };
  const Stats& stats() const { return stats_; }
  /// When a frame from the peer was last seen to have arrived (construction time before the
  /// first), as of the last stamp(): progress() reads no clock (one costs about 1 us in the
  /// emulated guest), so the transport stamps its channels whenever it reads the clock.
  Clock::time_point last_arrival() const { return last_arrival_; }
  void stamp(Clock::time_point now) {
    if (arrivals_ != stamped_arrivals_) {
      stamped_arrivals_ = arrivals_;
      last_arrival_ = now;
    }
  }

 private:
  struct SendPart {
    const char* data;
    size_t bytes;
    size_t sent;
    Request* req;
    uint32_t context;
    Signature sig;
    bool zc = false;  // payload gathered from the user buffer, under `lease`
    MrCache::Lease lease{};
  };
  // A zero-copy part whose frames are all posted: done when frame `last` has completed.
  struct ZcPending {
    uint64_t last;
    Request* req;
    MrCache::Lease lease;
  };
  struct RecvPart {
    char* data;
    size_t bytes;
    size_t got;
    Request* req;
    uint32_t context;
    Signature sig;
    const char* own = nullptr;  // set: fold each frame with it (the Fold below), not copy
    Fold fold{};
  };
  struct Arrived {
    uint32_t slot;
    uint32_t payload;
    bool first;
    uint64_t msg_bytes;
    uint32_t context;  // low 16 bits
    Signature sig;
  };

  bool on_completion(const Completion& c);
  bool match();
  // Takes one arrived DATA frame into the oldest posted receive (recvq_ not empty): checks it,
  // copies its payload out, reposts its receive frame.
  void deliver(const Arrived& a);
  bool send_frames();
  // `lkey` != nullptr: gather the payload from the user buffer under that key (zero-copy)
  // instead of copying it into the slot. `force_signal`: signal this send whatever the rhythm.
  void post_frame(uint32_t type, const char* payload, uint32_t payload_bytes, bool first,
                  uint64_t msg_bytes, uint32_t context, Signature sig,
                  const uint32_t* lkey = nullptr,
                  bool force_signal = false);
  [[noreturn]] void fail(ErrorKind kind, const std::string& what) const;

  FrameLink& link_;
  int peer_;
  uint32_t credits_;
  uint32_t owed_ = 0;  // receive frames reposted, not yet reported to the peer
  uint32_t credit_threshold_;
  // Send frames are used in ring order: frame k (k = 0, 1, ...) in slot k % send_slots().
  // One send in every signal_every_ is signaled (and the one taking the last free frame), and
  // its completion frees it and every frame before it (in-order completion).
  uint32_t free_send() const { return send_slots_ - static_cast<uint32_t>(sent_ - done_); }
  uint64_t sent_ = 0, done_ = 0;  // frames posted; frames known complete
  uint64_t received_ = 0;         // frames arrived (the next one's sequence number)
  uint32_t signal_every_;
  uint32_t until_signal_;    // frames until the rhythm's next signaled one (1: the next)
  uint32_t next_slot_ = 0;   // sent_ % send_slots_
  bool pad_;
  // The link's shape, fixed once it is connected: read once, not through a virtual call per
  // frame (an indirect call is a slow path in the emulated guest's CPU).
  size_t frame_bytes_;
  uint32_t send_slots_, recv_slots_;
  std::deque<SendPart> sendq_;
  std::deque<RecvPart> recvq_;
  std::deque<Arrived> arrived_;
  MrCache* cache_ = nullptr;  // set when zero-copy is on for this link
  size_t zc_min_ = 0;
  std::deque<ZcPending> zc_pending_;  // in posting order
  // progress()'s completion batch: a member, not a local array, because Completion has member
  // initializers and a local array of 32 was initialized on every poll of the spin loop
  // (512 bytes of stores per poll: in the emulated guest, more than the poll itself).
  std::array<Completion, 32> polled_{};
  Stats stats_;
  Clock::time_point last_arrival_ = Clock::now();
  uint64_t arrivals_ = 0, stamped_arrivals_ = 0;
};

}  // namespace cc::comm::verbs
