// VerbsLink: a FrameLink on one UC queue pair (Apple profile: unreliable connected, SEND/RECV
// only; no RDMA WRITE/READ), or on one RC queue pair (the rc profile for Linux NICs: the same
// SEND/RECV frames, reliable connected). It owns its completion channel (non-blocking descriptor, so a
// waiting rank sleeps in poll(2) instead of spinning; none when the library lacks the
// channel calls), its completion queue, its queue pair and two registered
// frame rings (send and receive: 2 memory regions a link, so <= 20 per device with Apple's
// 10 QPs, well under the ~100 MRs Apple allows; zero-copy adds at most kMrCacheCapPerDevice =
// 64 per device, mr_cache.h). Every completion's wc.status is reported.
//
// Life cycle: create() makes the CQ and a QP in INIT; the caller exchanges QpInfo with the
// peer (verbs_setup.cc), then connect() registers the rings at the agreed frame size and moves
// the QP to RTR and RTS. Receives are posted by FrameChannel after that, and the peer is told
// "ready" only then: no frame can arrive before its receive is posted.
//
// Path MTU: the smaller of the two ports' active_mtu (exchanged in QpInfo). A Mac's RDMA port
// reports 4096 (tests/data/fixtures/macos/pair-b.ibv_devinfo.txt); rxe reports its netdev's MTU
// less its headers (1500 gives 1024; docs/platform.md#soft-roce). A full 64 KiB frame (plus its
// 24-byte header) is then 16 packets of 4 KiB and one of 24 bytes, against 65 of 1 KiB.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "comm/transport/verbs/frame_link.h"
#include "comm/transport/verbs/verbs_objects.h"

namespace cc::comm::verbs {

/// What a peer needs to reach a queue pair; sent in the bootstrap (little-endian, fixed size).
struct QpInfo {
  uint32_t qpn = 0;
  uint32_t psn = 0;  // 24 bits
  uint8_t gid[16] = {};
  uint32_t frame_bytes = 0;
  uint32_t recv_frames = 0;
  uint32_t mtu = 0;  // enum ibv_mtu of the port's active MTU
};

class VerbsLink final : public FrameLink {
 public:
  /// Frames up to this many bytes (header included) are sent inline when the provider allows.
  static constexpr uint32_t kInlineBytes = 256;
  /// CQ + QP in INIT on `dev`: UC (`rc` false, the Apple profile; counted against Apple's 10
  /// QPs per device) or RC (`rc` true, for Linux NICs; no QP limit of ours). `peer_rank`
  /// names the other end in errors.
  /// `gather`: ask for 2 scatter/gather entries per send (zero-copy, Config::ibv_zero_copy)
  /// when the device's max_sge allows; the link then shares the device's MR cache, which the
  /// device's first such link creates: cached (`keep_mrs`, ZeroCopy::kCached) or per message.
  VerbsLink(std::shared_ptr<Device> dev, int rank, int peer_rank, uint32_t send_frames,
            uint32_t recv_frames, bool rc = false, bool gather = false, bool keep_mrs = false);
  ~VerbsLink() override;
  QpInfo local_info(uint32_t frame_bytes) const;
  /// Registers the rings (frame_bytes each frame) and moves the QP to RTR then RTS.
  void connect(const QpInfo& remote, uint32_t frame_bytes, uint32_t recv_frames);

  size_t frame_bytes() const override { return frame_bytes_; }
  uint32_t send_slots() const override { return send_frames_; }
  uint32_t recv_slots() const override { return recv_frames_; }
  std::byte* send_frame(uint32_t slot) override { return send_ring_.get() + size_t{slot} * stride_; }
  const std::byte* recv_frame(uint32_t slot) const override {
    return recv_ring_.get() + size_t{slot} * stride_;
  }
  void post_recv(uint32_t slot) override;
  void post_send(uint32_t slot, uint32_t bytes, bool signaled) override;
  size_t poll(Completion* out, size_t max) override;
  std::string status_text(int status) const override;
  std::string status_hint(int status) const override;
  std::string name() const override { return dev_->where(); }
  int event_fd() const override { return channel_ ? channel_->fd : -1; }
  void arm() override;
  void consume_events() override;
  uint32_t max_send_sge() const override { return max_send_sge_; }
  MrCache* mr_cache() override { return max_send_sge_ >= 2 ? dev_->mr_cache.get() : nullptr; }
  void post_send_gather(uint32_t slot, const std::byte* payload, uint32_t bytes, uint32_t lkey,
                        bool signaled) override;

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  // Throws kSystem naming this rank, the peer, the device and port, what failed, strerror(err)
  // and, when `advise`, what to do about err (verbs_advice).
  [[noreturn]] void fail(const std::string& what, int err, bool advise = true) const;

  // Declaration order = reverse release order: QP, MRs, CQ, channel, rings, then the device.
  std::shared_ptr<Device> dev_;
  int rank_, peer_;
  uint32_t psn_;
  uint32_t send_frames_, recv_frames_;
  uint32_t max_inline_ = 0;  // the QP's inline limit (bytes), 0 when the provider has none
  uint32_t max_send_sge_ = 1;  // granted scatter/gather entries per send (2: zero-copy)
  bool rc_ = false;          // an RC queue pair (the rc profile); false: UC (the Apple profile)
  size_t frame_bytes_ = 0;  // payload bytes per frame (the header comes on top)
  size_t stride_ = 0;       // wire_bytes() rounded up to a page: every slot starts page-aligned
  bool armed_ = false;
  DataPath hot_{};  // post_send, post_recv, poll_cq for qp_ and cq_ (resolve_hot_path)
  std::unique_ptr<std::byte, Free> send_ring_, recv_ring_;
  ChannelOwner channel_;
  CqOwner cq_;
  MrOwner send_mr_, recv_mr_;
  QpOwner qp_;
};

}  // namespace cc::comm::verbs
