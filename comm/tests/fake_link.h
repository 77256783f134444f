// In-memory FrameLinks for the frame protocol's unit tests: a pair of links joined by a
// mutex-protected "wire", usable from two threads. Two behaviours:
// - kLossFree: a send that finds no posted receive waits on the wire until one is posted.
// - kUcDrop: like Apple's UC queue pairs (docs/platform.md#transport-profile-and-limits), such
//   a send is dropped silently and counted in drops(): a correct protocol keeps drops() at 0.
// A send longer than the receive it lands in completes there with an error (status 1, "local
// length error"), as on verbs. Completions can be made to fail (fail_next_recv), and one send
// can be lost on the wire
// (lose_send: what UC does to a message whose packets were lost or reordered), to test error
// reporting. Each link has a
// wake-up descriptor (a non-blocking pipe) that behaves like a verbs completion channel: after
// arm(), the next completion writes one byte; consume_events() drains it.
// Zero-copy: a link given an MR cache (set_mr_cache, usually over a FakeRegistrar) and
// max_send_sge >= 2 takes post_send_gather: the header from the slot and the payload from the
// user buffer, sent as one message. The payload must lie in a live registration of the
// link's FakeRegistrar under that lkey (else std::logic_error: a deregistered MR in use).
// Send completions can be held back (hold_send_completions) and let go later
// (release_send_completions), to see what a sender does before its completion.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "comm/transport/verbs/frame_link.h"
#include "comm/transport/verbs/mr_cache.h"

namespace cc::comm::test {

enum class FakeMode { kLossFree, kUcDrop };

struct FakeWire;

/// Registrations without verbs: ranges with lkeys, counted. fail_next > 0 refuses that many
/// registrations with `fail_errno`. Shared with the test through a raw pointer (the cache owns it).
class FakeRegistrar final : public verbs::MrRegistrar {
 public:
  struct Region {
    uintptr_t begin, end;
    uint32_t lkey;
  };
  void* reg(void* addr, size_t bytes, uint32_t& lkey, int& err) override;
  void dereg(void* handle) override;
  /// Whether [p, p + n) lies in a live registration whose lkey is `lkey`.
  bool covers(const void* p, size_t n, uint32_t lkey) const;
  std::vector<std::unique_ptr<Region>> live;
  uint64_t regs = 0, deregs = 0;
  int fail_next = 0;
  int fail_errno = 12;  // ENOMEM
  uint32_t next_lkey = 100;
};

class FakeLink final : public verbs::FrameLink {
 public:
  FakeLink(std::shared_ptr<FakeWire> wire, int side, size_t frame_bytes, uint32_t send_slots,
           uint32_t recv_slots, std::string name);
  ~FakeLink() override;
  FakeLink(const FakeLink&) = delete;
  FakeLink& operator=(const FakeLink&) = delete;
  size_t frame_bytes() const override { return frame_bytes_; }
  uint32_t send_slots() const override { return send_slots_; }
  uint32_t recv_slots() const override { return recv_slots_; }
  std::byte* send_frame(uint32_t slot) override;
  const std::byte* recv_frame(uint32_t slot) const override;
  void post_recv(uint32_t slot) override;
  void post_send(uint32_t slot, uint32_t bytes, bool signaled) override;
  size_t poll(verbs::Completion* out, size_t max) override;
  std::string status_text(int status) const override;
  std::string name() const override { return name_; }
  int event_fd() const override { return pipe_[0]; }
  void arm() override;
  void consume_events() override;
  uint32_t max_send_sge() const override { return max_send_sge_; }
  verbs::MrCache* mr_cache() override { return cache_; }
  void post_send_gather(uint32_t slot, const std::byte* payload, uint32_t bytes, uint32_t lkey,
                        bool signaled) override;
  /// Zero-copy on this link: `cache` (not owned) over `registrar` (owned by the cache).
  void set_mr_cache(verbs::MrCache* cache, const FakeRegistrar* registrar, uint32_t sge = 2) {
    cache_ = cache;
    registrar_ = registrar;
    max_send_sge_ = sge;
  }

 private:
  friend struct FakeWire;
  std::shared_ptr<FakeWire> wire_;
  int side_;
  size_t frame_bytes_;
  uint32_t send_slots_, recv_slots_;
  std::string name_;
  std::vector<std::byte> send_ring_, recv_ring_;
  int pipe_[2] = {-1, -1};
  uint32_t max_send_sge_ = 1;
  verbs::MrCache* cache_ = nullptr;
  const FakeRegistrar* registrar_ = nullptr;
  void send_message(uint32_t slot, const std::byte* data, uint32_t bytes, bool signaled);  // mu held
};

struct FakeWire {
  std::mutex mu;
  FakeMode mode = FakeMode::kLossFree;
  struct Side {
    FakeLink* link = nullptr;
    std::deque<uint32_t> posted;                    // receive slots, posting order
    std::deque<verbs::Completion> cq;
    std::deque<std::vector<std::byte>> in_flight;   // kLossFree: waiting for a receive
    size_t max_posted = 0;
    bool armed = false;
  } side[2];
  uint64_t drops = 0;
  uint64_t delivered = 0;
  bool fail_next_recv[2] = {false, false};
  uint64_t lose_send[2] = {0, 0};  // side s's send number lose_send[s] (from 1) is lost
  uint64_t sends[2] = {0, 0};      // sends posted by each side
  std::vector<uint32_t> send_sizes[2];  // the byte count of every send each side posted
  uint64_t gather_sends[2] = {0, 0};    // of them, sends posted with post_send_gather
  bool record = false;                  // keep every message's bytes in sent[side]
  std::vector<std::vector<std::byte>> sent[2];
  /// Messages side s sends stay on the wire (as on a link slower than the TCP control path)
  /// until release_delivery(s); the sender sees its sends complete as usual.
  bool hold_delivery[2] = {false, false};
  std::deque<std::vector<std::byte>> delayed[2];
  /// Lets side s's delayed messages arrive, in order (locks mu).
  void release_delivery(int s);
  bool hold_send_completions[2] = {false, false};
  std::deque<verbs::Completion> held[2];  // send completions held back
  /// Lets side s's held send completions into its completion queue (locks mu).
  void release_send_completions(int s);
  void deliver(int to, const std::byte* data, uint32_t bytes);  // mu held
  void completed(int to);                                        // mu held: wake if armed
};

/// A connected pair: first is side 0 (for the lower rank), second side 1. `frame_bytes1`, when
/// not 0, gives side 1 other frames (ends that disagree: a send longer than the posted receive
/// completes with "local length error" there, as on verbs).
std::pair<std::unique_ptr<FakeLink>, std::unique_ptr<FakeLink>> make_fake_pair(
    std::shared_ptr<FakeWire> wire, size_t frame_bytes, uint32_t slots, const std::string& name0,
    const std::string& name1, size_t frame_bytes1 = 0);

}  // namespace cc::comm::test

#include "comm/transport/verbs/verbs_transport.h"

namespace cc::comm::test {

/// n VerbsTransports over fake links: `cables` links per pair, named "fake<r>_<p>.<k> port 1",
/// and real socketpairs as control connections.
struct FakeVerbsWorld {
  std::vector<std::shared_ptr<FakeWire>> wires;
  /// With options.zero_copy_min_bytes > 0: one MR cache per rank (as a rank's one device)
  /// over a FakeRegistrar, given to every link of that rank (cached, or per message with
  /// keep_mrs false); declared before the transports so they outlive them.
  std::vector<std::unique_ptr<verbs::MrCache>> caches;
  std::vector<FakeRegistrar*> registrars;
  std::vector<std::unique_ptr<verbs::VerbsTransport>> transports;  // by rank
  uint64_t drops() const;
  uint64_t delivered() const;
  size_t max_posted() const;  // the most receives ever posted on one link
};
FakeVerbsWorld make_fake_verbs_world(int n, int cables, FakeMode mode, size_t frame_bytes,
                                     uint32_t slots, verbs::VerbsOptions options = {},
                                     bool keep_mrs = true);

}  // namespace cc::comm::test
