#include "comm/transport/verbs/verbs_link.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include "comm/error.h"

namespace cc::comm::verbs {

void VerbsLink::Free::operator()(std::byte* p) const {
  std::free(p);
}

void VerbsLink::fail(const std::string& what, int err, bool advise) const {
  throw Error(ErrorKind::kSystem,
              "rank " + std::to_string(rank_) + ", link to rank " + std::to_string(peer_) + " on " +
                  dev_->where() + ": " + what +
                  (err != 0 ? std::string(" (") + std::strerror(err) + ")" : std::string()) +
                  (advise ? verbs_advice(err) : std::string()),
              {peer_});
}

VerbsLink::VerbsLink(std::shared_ptr<Device> dev, int rank, int peer_rank, uint32_t send_frames,
                     uint32_t recv_frames, bool rc, bool gather, bool keep_mrs)
    : dev_(std::move(dev)),
      rank_(rank),
      peer_(peer_rank),
      psn_(0),
      send_frames_(send_frames),
      recv_frames_(recv_frames),
      rc_(rc) {
  const IbvApi& api = *dev_->api;
  if (!rc_ && dev_->qps >= kMaxQpsPerDevice) {
    fail("would be queue pair number " + std::to_string(dev_->qps + 1) +
             " on this device; Apple's RDMA provider allows at most " +
             std::to_string(kMaxQpsPerDevice) +
             " UC QPs per device: use fewer cables per device in the device matrix",
         0);
  }
  std::random_device rd;
  psn_ = rd() & 0xffffffu;
  if (api.create_comp_channel != nullptr) {
    channel_ = ChannelOwner(api.create_comp_channel(dev_->context.get()), {&api});
    if (!channel_) fail("cannot create a completion channel", errno);
    const int fl = ::fcntl(channel_->fd, F_GETFL);
    if (fl < 0 || ::fcntl(channel_->fd, F_SETFL, fl | O_NONBLOCK) != 0) {
      fail("cannot make the completion channel non-blocking", errno);
    }
  }
  cq_ = CqOwner(api.create_cq(dev_->context.get(), static_cast<int>(send_frames + recv_frames),
                              nullptr, channel_.get(), 0),
                {&api});
  if (!cq_) fail("cannot create a completion queue", errno);
  ibv_qp_init_attr init{};
  init.send_cq = cq_.get();
  init.recv_cq = cq_.get();
  init.qp_type = rc_ ? IBV_QPT_RC : IBV_QPT_UC;
  init.cap.max_send_wr = send_frames;
  init.cap.max_recv_wr = recv_frames;
  init.cap.max_recv_sge = 1;
  init.sq_sig_all = 0;  // FrameChannel signals one send in send_frames / 2
  // Small frames go inline (copied into the work request: no MR read of the send ring). A
  // provider that refuses inline data (none is documented for Apple's) gets a QP without.
  // Zero-copy asks for 2 send SGEs (header from the ring, payload from the user buffer) when
  // the device reports max_sge >= 2; a provider that refuses gets 1 (then every send copies).
  const uint32_t want_sge = gather && dev_->max_sge >= 2 ? 2 : 1;
  for (const uint32_t sge : {want_sge, 1u}) {
    for (const uint32_t inl : {kInlineBytes, 0u}) {
      if (qp_) break;
      init.cap.max_send_sge = sge;
      init.cap.max_inline_data = inl;
      qp_ = QpOwner(api.create_qp(dev_->pd.get(), &init), {&api});
    }
  }
  if (!qp_) fail(rc_ ? "cannot create an RC queue pair" : "cannot create a UC queue pair", errno);
  max_inline_ = init.cap.max_inline_data;
  max_send_sge_ = std::min<uint32_t>(init.cap.max_send_sge, 2);
  if (max_send_sge_ >= 2 && !dev_->mr_cache) {
    dev_->mr_cache = std::make_unique<MrCache>(
        std::make_unique<PdRegistrar>(api, dev_->pd.get()),
        "rank " + std::to_string(rank_) + ": " + dev_->where(), kMrCacheCapPerDevice, keep_mrs);
  }
  if (!rc_) ++dev_->qps;
  hot_ = resolve_hot_path(api, qp_.get(), cq_.get());
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = dev_->port;
  a.qp_access_flags = 0;  // SEND/RECV only: no remote access (Apple: no RDMA WRITE/READ)
  const int err = api.modify_qp(qp_.get(), &a,
                                IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (err != 0) fail("cannot move the queue pair to INIT", err);
}

VerbsLink::~VerbsLink() {
  if (qp_ && !rc_) --dev_->qps;
}

QpInfo VerbsLink::local_info(uint32_t frame_bytes) const {
  QpInfo q;
  q.qpn = qp_->qp_num;
  q.psn = psn_;
  std::memcpy(q.gid, dev_->gid.raw, 16);
  q.frame_bytes = frame_bytes;
  q.recv_frames = recv_frames_;
  q.mtu = static_cast<uint32_t>(dev_->port_attr.active_mtu);
  return q;
}

void VerbsLink::connect(const QpInfo& remote, uint32_t frame_bytes, uint32_t recv_frames) {
  const IbvApi& api = *dev_->api;
  frame_bytes_ = frame_bytes;
  recv_frames_ = recv_frames;
  stride_ = (wire_bytes() + 4095) / 4096 * 4096;
  const size_t send_bytes = size_t{send_frames_} * stride_;
  const size_t recv_bytes = size_t{recv_frames_} * stride_;
  send_ring_.reset(static_cast<std::byte*>(std::aligned_alloc(4096, send_bytes)));
  recv_ring_.reset(static_cast<std::byte*>(std::aligned_alloc(4096, recv_bytes)));
  if (!send_ring_ || !recv_ring_) fail("cannot allocate the frame rings", ENOMEM);
  std::memset(send_ring_.get(), 0, send_bytes);
  std::memset(recv_ring_.get(), 0, recv_bytes);
  send_mr_ = MrOwner(api.reg_mr(dev_->pd.get(), send_ring_.get(), send_bytes, IBV_ACCESS_LOCAL_WRITE),
                     {&api});
  recv_mr_ = MrOwner(api.reg_mr(dev_->pd.get(), recv_ring_.get(), recv_bytes, IBV_ACCESS_LOCAL_WRITE),
                     {&api});
  if (!send_mr_ || !recv_mr_) fail("cannot register the frame rings", errno != 0 ? errno : ENOMEM);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  const uint32_t mtu = std::min(remote.mtu, static_cast<uint32_t>(dev_->port_attr.active_mtu));
  a.path_mtu = static_cast<ibv_mtu>(mtu);
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.ah_attr.is_global = 1;
  std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid, 16);
  a.ah_attr.grh.sgid_index = static_cast<uint8_t>(dev_->gid_index);
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = dev_->port;
  int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  if (rc_) {
    // RC needs the responder's read resources (none used: SEND only) and the receiver-not-
    // ready back-off; credits keep a receive posted for every frame, so RNR should not occur.
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;  // 0.64 ms
    rtr_mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  }
  int err = api.modify_qp(qp_.get(), &a, rtr_mask);
  if (err == EINVAL) {
    fail(
        "cannot move the queue pair to RTR (errno 22 on a Mac: the port's interface has no "
        "IPv4 address; run `clusterctl network apply`)",
        err, /*advise=*/false);
  }
  if (err != 0) fail("cannot move the queue pair to RTR", err);
  ibv_qp_attr s{};
  s.qp_state = IBV_QPS_RTS;
  s.sq_psn = psn_;
  int rts_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (rc_) {
    // Retransmission: 4.096 us x 2^14 = 67 ms per try, 1 + 6 retries: a peer that stops
    // answering gives "transport retry counter exceeded" after about 0.5 s. Not retry_cnt 7:
    // Soft-RoCE (rxe_comp.c) takes 7 as "retry forever", and a cable that loses every packet
    // then never gave an error (measured in the rdma-vm guest). RNR retries: 7 = forever.
    s.timeout = 14;
    s.retry_cnt = 6;
    s.rnr_retry = 7;
    s.max_rd_atomic = 1;
    rts_mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  }
  err = api.modify_qp(qp_.get(), &s, rts_mask);
  if (err != 0) fail("cannot move the queue pair to RTS", err);
}

void VerbsLink::post_recv(uint32_t slot) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(recv_frame(slot));
  sge.length = static_cast<uint32_t>(wire_bytes());
  sge.lkey = recv_mr_->lkey;
  ibv_recv_wr wr{};
  wr.wr_id = wr_id(false, slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  const int err = hot_.post_recv(qp_.get(), &wr, &bad);
  if (err != 0) fail("cannot post a receive", err);
}

void VerbsLink::post_send(uint32_t slot, uint32_t bytes, bool signaled) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(send_frame(slot));
  sge.length = bytes;
  sge.lkey = send_mr_->lkey;
  ibv_send_wr wr{};
  wr.wr_id = wr_id(true, slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = (signaled ? static_cast<unsigned>(IBV_SEND_SIGNALED) : 0u) |
                  (bytes <= max_inline_ ? static_cast<unsigned>(IBV_SEND_INLINE) : 0u);
  ibv_send_wr* bad = nullptr;
  const int err = hot_.post_send(qp_.get(), &wr, &bad);
  if (err != 0) fail("cannot post a send", err);
}

void VerbsLink::post_send_gather(uint32_t slot, const std::byte* payload, uint32_t bytes,
                                 uint32_t lkey, bool signaled) {
  ibv_sge sge[2]{};
  sge[0].addr = reinterpret_cast<uintptr_t>(send_frame(slot));
  sge[0].length = static_cast<uint32_t>(kFrameHeaderBytes);
  sge[0].lkey = send_mr_->lkey;
  sge[1].addr = reinterpret_cast<uintptr_t>(payload);
  sge[1].length = bytes;
  sge[1].lkey = lkey;
  ibv_send_wr wr{};
  wr.wr_id = wr_id(true, slot);
  wr.sg_list = sge;
  wr.num_sge = 2;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = signaled ? static_cast<unsigned>(IBV_SEND_SIGNALED) : 0u;
  ibv_send_wr* bad = nullptr;
  const int err = hot_.post_send(qp_.get(), &wr, &bad);
  if (err != 0) fail("cannot post a zero-copy send (2 scatter/gather entries)", err);
}

size_t VerbsLink::poll(Completion* out, size_t max) {
  ibv_wc wc[32];
  const int want = static_cast<int>(std::min<size_t>(max, 32));
  const int n = hot_.poll_cq(cq_.get(), want, wc);
  if (n < 0) fail("polling the completion queue failed", 0);
  for (int i = 0; i < n; ++i) {
    const ibv_wc& w = wc[i];
    if ((w.wr_id & (uint64_t{0xff} << 56)) != kWrTag) fail("a completion with a foreign wr_id", 0);
    Completion& c = out[i];
    c.is_send = (w.wr_id & kWrSend) != 0;
    c.slot = static_cast<uint32_t>(w.wr_id & 0xffffffffu);
    c.ok = w.status == IBV_WC_SUCCESS;
    c.status = static_cast<int>(w.status);
    c.bytes = w.byte_len;
  }
  return static_cast<size_t>(n);
}

void VerbsLink::arm() {
  if (!channel_ || armed_) return;
  const int err = dev_->api->req_notify_cq(cq_.get(), 0);
  if (err != 0) fail("cannot request a completion event", err);
  armed_ = true;
}

void VerbsLink::consume_events() {
  if (!channel_) return;
  const IbvApi& api = *dev_->api;
  for (;;) {
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    if (api.get_cq_event(channel_.get(), &cq, &ctx) != 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      fail("cannot read the completion channel", errno);
    }
    api.ack_cq_events(cq, 1);  // at once: ibv_destroy_cq waits for every event to be acked
    armed_ = false;
  }
}

std::string VerbsLink::status_hint(int status) const {
  if (status == IBV_WC_RETRY_EXC_ERR || status == IBV_WC_RNR_RETRY_EXC_ERR) {
    return "rank " + std::to_string(peer_) + " stopped acknowledging on this RC queue pair " +
           "(about 0.5 s of retries): check that the rank is alive and the cable is up";
  }
  if (status == IBV_WC_LOC_QP_OP_ERR) {
    return "this port could not send (is its link down? `rdma link show`; check the cable to "
           "rank " + std::to_string(peer_) + ")";
  }
  if (status == IBV_WC_WR_FLUSH_ERR) {
    return "the queue pair is in the error state after an earlier failed completion";
  }
  return FrameLink::status_hint(status);
}

std::string VerbsLink::status_text(int status) const {
  return dev_->api->wc_status_str(static_cast<ibv_wc_status>(status));
}

}  // namespace cc::comm::verbs
