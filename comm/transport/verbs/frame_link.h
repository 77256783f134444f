// FrameLink: the boundary between the frame protocol (frame_channel.h) and the verbs calls
// (verbs_link.h). One link is one queue pair's worth of state: a ring of registered send
// frames, a ring of registered receive frames, and its completions. The protocol never sees a
// verbs object, so it is unit-tested on a host without RDMA against fakes (tests/fake_link.h).
//
// Contract, taken from Apple's rules for UC over Thunderbolt
// (docs/platform.md#transport-profile-and-limits):
// - A frame is a kFrameHeaderBytes header followed by up to frame_bytes() of payload: the
//   header is outside the payload budget, so a slot holds wire_bytes() = frame_bytes() +
//   kFrameHeaderBytes, and a message of 2^k bytes fills whole frames (frame_channel.h).
// - post_send(slot, n, signaled) sends the first n (<= wire_bytes()) bytes of send frame `slot`
//   as one message.
//   On UC a send that finds no posted receive on the other side is dropped silently, and a
//   send completion does not mean the data arrived: the caller must only send against a
//   credit. Only a signaled send produces a completion; since a send queue completes in
//   posting order (verbs), it also means every earlier send is done and its frame free.
// - post_recv(slot) posts receive frame `slot` (wire_bytes() long). A message lands in the
//   oldest posted receive (posting order); one longer than it completes with an error.
// - poll() returns completions without blocking; a dead peer produces none (UC).
// - Sleeping: event_fd() is a descriptor poll(2) reports readable once a completion arrives
//   after arm() (a verbs completion channel: ibv_req_notify_cq); completions queued before
//   arm() wake nobody, so the caller arms, polls once more, and only then sleeps.
//   consume_events() takes the wake-up off the descriptor (ibv_get_cq_event + ack); after it
//   the link must be armed again. A link without a descriptor (-1) cannot wake a sleeper.
// - Zero-copy (Config::ibv_zero_copy): a link whose max_send_sge() is at least 2 and that has
//   an mr_cache() can post_send_gather(): one message of two scatter/gather entries, the
//   kFrameHeaderBytes header from send frame `slot`, then the payload straight from a user
//   buffer registered in that cache. The receiver sees the same bytes as from post_send
//   (header and payload contiguous in its posted receive). The payload is read until the send
//   completes: the caller keeps the buffer (and the lease) until a signaled completion at or
//   after it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace cc::comm::verbs {

class MrCache;

/// The frame header's size (its layout: frame_channel.h). It travels in front of the payload
/// and is not counted in FrameLink::frame_bytes().
inline constexpr size_t kFrameHeaderBytes = 24;

struct Completion {
  bool is_send = false;
  bool ok = true;       // wc.status == IBV_WC_SUCCESS
  uint32_t slot = 0;    // frame index in the send or receive ring
  uint32_t bytes = 0;   // receive: bytes that arrived
  int status = 0;       // wc.status when !ok (describe with FrameLink::status_text)
};

class FrameLink {
 public:
  virtual ~FrameLink() = default;
  /// Payload bytes per frame, agreed by both ends at connect (a power of two >= 4 KiB; Apple: a
  /// message, header included, is at most 16,773,120 bytes).
  virtual size_t frame_bytes() const = 0;
  /// Bytes of one slot, and the most one frame puts on the wire: header + payload.
  size_t wire_bytes() const { return frame_bytes() + kFrameHeaderBytes; }
  virtual uint32_t send_slots() const = 0;
  /// Receive frames; the same number on both ends (Apple: ~63 posted receives at most).
  virtual uint32_t recv_slots() const = 0;
  virtual std::byte* send_frame(uint32_t slot) = 0;
  virtual const std::byte* recv_frame(uint32_t slot) const = 0;
  /// Throw Error(kSystem) naming the device when the provider refuses.
  virtual void post_recv(uint32_t slot) = 0;
  virtual void post_send(uint32_t slot, uint32_t bytes, bool signaled) = 0;
  /// Up to `max` completions, in completion order; never blocks.
  virtual size_t poll(Completion* out, size_t max) = 0;
  virtual std::string status_text(int status) const = 0;
  /// What an operator should check after a completion with this status: by default "frame
  /// sizes must agree ..."; on RC a retry-exceeded status means the peer stopped answering.
  virtual std::string status_hint(int /*status*/) const {
    return "frame sizes must agree on both ends; check the cable and that the peer runs the "
           "same clustercomm";
  }
  /// The wake-up descriptor (see above), or -1 when this link has none.
  virtual int event_fd() const { return -1; }
  /// Requests one wake-up for the next completion; a no-op while one is still requested.
  virtual void arm() {}
  /// Reads and acknowledges the wake-ups that arrived; never blocks.
  virtual void consume_events() {}
  /// Scatter/gather entries one send may have (the queue pair's granted max_send_sge, capped by
  /// the device's); 1 = header and payload must sit together in the frame (copy only).
  virtual uint32_t max_send_sge() const { return 1; }
  /// The registration cache of this link's device (protection domain), or nullptr: no
  /// zero-copy on this link.
  virtual MrCache* mr_cache() { return nullptr; }
  /// Sends kFrameHeaderBytes from send frame `slot` followed by `bytes` payload bytes from
  /// `payload`, which lies in a registration of mr_cache() with `lkey`, as one message. Only
  /// when max_send_sge() >= 2. Throw Error(kSystem) naming the device when the provider refuses.
  virtual void post_send_gather(uint32_t /*slot*/, const std::byte* /*payload*/,
                                uint32_t /*bytes*/, uint32_t /*lkey*/, bool /*signaled*/) {
    throw std::logic_error("post_send_gather on a link without gather sends");
  }
  /// For errors: "rxe0_1 port 1" (the device and port this link uses).
  virtual std::string name() const = 0;
};

}  // namespace cc::comm::verbs
