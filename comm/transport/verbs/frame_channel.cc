#include "comm/transport/verbs/frame_channel.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "comm/reduce.h"

namespace cc::comm::verbs {
namespace {

constexpr uint32_t kFrameMagic = 0xCC000000u;
constexpr uint32_t kData = 1, kCredit = 2;
constexpr uint32_t kFirst = 1;
constexpr uint32_t kSigShift = 1, kSigMask = 0x7fu;  // flags bits 1..7, on a first frame
constexpr uint32_t kSeqShift = 8, kSeqMask = 0xffffffu;  // flags bits 8..31
constexpr uint32_t kContextShift = 8, kContextMask = 0xffffu;  // first word's bits 8..23

// Little-endian on the wire; a plain copy on a little-endian host (every supported one).
template <class T>
void put(std::byte* p, T v) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &v, sizeof v);
  } else {
    for (size_t i = 0; i < sizeof v; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xffu);
  }
}
template <class T>
T get(const std::byte* p) {
  T v = 0;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&v, p, sizeof v);
  } else {
    for (size_t i = 0; i < sizeof v; ++i) v |= static_cast<T>(static_cast<T>(p[i]) << (8 * i));
  }
  return v;
}
void put32(std::byte* p, uint32_t v) { put(p, v); }
void put64(std::byte* p, uint64_t v) { put(p, v); }
uint32_t get32(const std::byte* p) { return get<uint32_t>(p); }
uint64_t get64(const std::byte* p) { return get<uint64_t>(p); }

}  // namespace

FrameChannel::FrameChannel(FrameLink& link, int peer, bool pad_frames, size_t zero_copy_min)
    : link_(link),
      peer_(peer),
      credits_(link.recv_slots()),
      credit_threshold_(std::max<uint32_t>(1, link.recv_slots() / 2)),
      signal_every_(std::max<uint32_t>(1, link.send_slots() / 2)),
      until_signal_(signal_every_),
      pad_(pad_frames),
      frame_bytes_(link.frame_bytes()),
      send_slots_(link.send_slots()),
      recv_slots_(link.recv_slots()) {
  if (link.recv_slots() < 4 || link.frame_bytes() == 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "a verbs link needs at least 4 receive frames of at least one payload byte");
  }
  if (zero_copy_min > 0 && link.max_send_sge() >= 2 && link.mr_cache() != nullptr) {
    cache_ = link.mr_cache();
    zc_min_ = zero_copy_min;
  }
  for (uint32_t s = 0; s < link.recv_slots(); ++s) link.post_recv(s);
}

FrameChannel::~FrameChannel() { clear(); }

void FrameChannel::fail(ErrorKind kind, const std::string& what) const {
  throw Error(kind, "rank " + std::to_string(peer_) + " on " + link_.name() + ": " + what,
              {peer_});
}

void FrameChannel::clear() {
  for (SendPart& p : sendq_) {
    if (p.zc) cache_->release(p.lease);
  }
  for (ZcPending& z : zc_pending_) cache_->release(z.lease);
  sendq_.clear();
  zc_pending_.clear();
  recvq_.clear();
}

void FrameChannel::send(const char* data, size_t bytes, Request& req, uint32_t context,
                        Signature sig) {
  // One frame, nothing queued before it, the credits and a free frame at hand: post it now,
  // without the queue (what send_frames() would do for it, in fewer steps: the latency path).
  if (bytes <= frame_bytes_ && sendq_.empty() && credits_ >= 2 && free_send() > 0 &&
      (cache_ == nullptr || bytes < zc_min_)) {
    post_frame(kData, data, static_cast<uint32_t>(bytes), true, bytes, context & kContextMask,
               sig);
    ++stats_.data_frames;
    --req.parts_left;
    return;
  }
  SendPart part{data, bytes, 0, &req, context & kContextMask, sig};
  if (cache_ != nullptr && bytes >= zc_min_) {
    part.zc = cache_->acquire(data, bytes, part.lease);
    if (!part.zc) ++stats_.zero_copy_fallbacks;
  }
  sendq_.push_back(part);
  send_frames();
}

void FrameChannel::recv(char* data, size_t bytes, Request& req, uint32_t context,
                        const Fold* fold, Signature sig) {
  recvq_.push_back(RecvPart{data, bytes, 0, &req, context & kContextMask, sig});
  if (fold != nullptr) {
    recvq_.back().own = static_cast<const char*>(fold->own);
    recvq_.back().fold = *fold;
  }
  if (!arrived_.empty()) match();
}

void FrameChannel::post_frame(uint32_t type, const char* payload, uint32_t payload_bytes,
                              bool first, uint64_t msg_bytes, uint32_t context, Signature sig,
                              const uint32_t* lkey, bool force_signal) {
  const uint32_t slot = next_slot_;
  std::byte* f = link_.send_frame(slot);
  put32(f, kFrameMagic | context << kContextShift | type);
  put32(f + 4, owed_);
  put32(f + 8, payload_bytes);
  put32(f + 12, (first ? kFirst | (sig & kSigMask) << kSigShift : 0) |
                    static_cast<uint32_t>((sent_ & kSeqMask) << kSeqShift));
  put64(f + 16, msg_bytes);
  // The rhythm (frame sent_ is signaled when (sent_ + 1) % signal_every_ == 0) and the slot
  // (sent_ % send_slots_) are counted, not divided: a division is a slow call in the emulated
  // guest's CPU, and this runs for every frame.
  const bool rhythm = --until_signal_ == 0;
  if (rhythm) until_signal_ = signal_every_;
  const bool signaled = force_signal || rhythm || free_send() == 1;
  if (lkey != nullptr) {
    // Zero-copy: only full frames (or any frame unpadded) come here, so the wire size is
    // header + payload either way.
    link_.post_send_gather(slot, reinterpret_cast<const std::byte*>(payload), payload_bytes,
                           *lkey, signaled);
    ++stats_.zero_copy_frames;
  } else {
    if (payload_bytes > 0) std::memcpy(f + kFrameHeaderBytes, payload, payload_bytes);
    const size_t wire = kFrameHeaderBytes + (pad_ ? frame_bytes_ : payload_bytes);
    link_.post_send(slot, static_cast<uint32_t>(wire), signaled);
  }
  ++sent_;
  if (++next_slot_ == send_slots_) next_slot_ = 0;
  owed_ = 0;
  --credits_;
}

bool FrameChannel::send_frames() {
  bool any = false;
  const size_t max_payload = frame_bytes_;
  while (!sendq_.empty() && free_send() > 0) {
    if (credits_ < 2) {  // the last credit is kept for returning credits
      ++stats_.stalls_no_credit;
      break;
    }
    SendPart& p = sendq_.front();
    const bool first = p.sent == 0;
    const size_t n = std::min(max_payload, p.bytes - p.sent);
    const bool last = p.sent + n == p.bytes;
    // Zero-copy frames: full ones always; a short (last) one only when not padding (padded,
    // it is copied into the slot and padded as any other frame).
    const bool gather = p.zc && (n == max_payload || !pad_);
    post_frame(kData, p.data + p.sent, static_cast<uint32_t>(n), first, p.bytes, p.context, p.sig,
               gather ? &p.lease.lkey : nullptr, p.zc && last);
    ++stats_.data_frames;
    p.sent += n;
    any = true;
    if (last) {
      if (p.zc) {
        zc_pending_.push_back(ZcPending{sent_ - 1, p.req, p.lease});
      } else {
        --p.req->parts_left;
      }
      sendq_.pop_front();
    }
  }
  if (owed_ >= credit_threshold_ && credits_ >= 1 && free_send() > 0) {
    post_frame(kCredit, nullptr, 0, false, 0, 0, kReducesNothing);
    ++stats_.credit_frames;
    any = true;
  }
  return any;
}

bool FrameChannel::on_completion(const Completion& c) {
  if (!c.ok) {
    fail(ErrorKind::kSystem, std::string(c.is_send ? "a send" : "a receive") +
                                 " completed with error '" + link_.status_text(c.status) +
                                 "' (" + link_.status_hint(c.status) + ")");
  }
  if (c.is_send) {
    const uint32_t slots = send_slots_;
    const uint64_t frame = done_ + (c.slot + slots - done_ % slots) % slots;
    if (c.slot >= slots || frame >= sent_) {
      fail(ErrorKind::kProtocol, "a send completion for frame slot " + std::to_string(c.slot) +
                                     " that has no send outstanding");
    }
    done_ = frame + 1;
    while (!zc_pending_.empty() && zc_pending_.front().last < done_) {
      ZcPending& z = zc_pending_.front();
      cache_->release(z.lease);
      --z.req->parts_left;
      zc_pending_.pop_front();
    }
    return true;
  }
  const std::byte* f = link_.recv_frame(c.slot);
  if (c.bytes < kFrameHeaderBytes || (get32(f) & 0xff000000u) != kFrameMagic ||
      get32(f + 8) > frame_bytes_ ||
      (get32(f + 8) + kFrameHeaderBytes != c.bytes && frame_bytes_ + kFrameHeaderBytes != c.bytes)) {
    fail(ErrorKind::kProtocol,
         "received a malformed frame (" + std::to_string(c.bytes) + " bytes, " +
             std::to_string(get32(f + 8)) + " payload bytes announced, frames hold " +
             std::to_string(frame_bytes_) +
             "): is the peer a clustercomm rank of this job, of the same version?");
  }
  const uint32_t seq = get32(f + 12) >> kSeqShift;
  if (seq != (received_ & kSeqMask)) {
    fail(ErrorKind::kSystem,
         "frame " + std::to_string(received_) + " never arrived (frame " +
             std::to_string(received_ + ((seq - received_) & kSeqMask)) +
             " came next): the link lost it, and a UC queue pair never resends. UC drops a "
             "message whose packets were lost or reordered (Soft-RoCE reorders them when the "
             "sending process moves between CPUs): on Soft-RoCE or an Ethernet RDMA NIC set "
             "CLUSTERCOMM_IBV_PROFILE=rc on every rank; on Thunderbolt check the cable");
  }
  ++received_;
  const uint32_t type = get32(f) & 0xffu;
  credits_ += get32(f + 4);
  if (credits_ > recv_slots_) fail(ErrorKind::kProtocol, "returned more credits than frames");
  if (type == kCredit) {
    link_.post_recv(c.slot);
    ++owed_;
  } else if (type == kData) {
    const uint32_t flags = get32(f + 12);
    const Arrived a{c.slot, get32(f + 8), (flags & kFirst) != 0, get64(f + 16),
                    get32(f) >> kContextShift & kContextMask,
                    static_cast<Signature>(flags >> kSigShift & kSigMask)};
    // Nothing waiting before it and a receive posted: deliver it now, without the queue.
    if (arrived_.empty() && !recvq_.empty()) {
      deliver(a);
    } else {
      arrived_.push_back(a);
    }
  } else {
    fail(ErrorKind::kProtocol, "received a frame of unknown type " + std::to_string(type));
  }
  return true;
}

void FrameChannel::deliver(const Arrived& a) {
  RecvPart& p = recvq_.front();
  // A message's first frame: its communicator, then its call, before its size.
  if (a.first && p.got == 0) {
    if (a.context != p.context) fail(ErrorKind::kProtocol, context_mismatch(a.context, p.context));
    if (a.sig != p.sig) fail(ErrorKind::kProtocol, signature_mismatch(a.sig, p.sig));
  }
  if (a.first != (p.got == 0) || (a.first && a.msg_bytes != p.bytes) ||
      a.payload > p.bytes - p.got) {
    fail(ErrorKind::kProtocol,
         "sent a message of " + std::to_string(a.first ? a.msg_bytes : p.bytes) +
             " bytes where this rank expects " + std::to_string(p.bytes) +
             ": the ranks called different collectives or counts");
  }
  if (a.payload > 0) {
    const std::byte* m = link_.recv_frame(a.slot) + kFrameHeaderBytes;
    if (p.own == nullptr) {
      std::memcpy(p.data + p.got, m, a.payload);
    } else {
      const size_t e = size_of(p.fold.type);
      if (a.payload % e != 0) {
        fail(ErrorKind::kProtocol, "sent a frame of " + std::to_string(a.payload) +
                                       " bytes into a reduction of " + std::to_string(e) +
                                       "-byte elements: the ranks called different collectives");
      }
      const void* own = p.own + p.got;
      const void* srcs[2] = {p.fold.incoming_first ? static_cast<const void*>(m) : own,
                             p.fold.incoming_first ? own : static_cast<const void*>(m)};
      reduce(p.fold.type, p.fold.op, p.data + p.got, srcs, 2, a.payload / e);
      ++stats_.folded_frames;
    }
  }
  p.got += a.payload;
  link_.post_recv(a.slot);
  ++owed_;
  if (p.got == p.bytes) {
    --p.req->parts_left;
    recvq_.pop_front();
  }
}

bool FrameChannel::match() {
  bool any = false;
  while (!arrived_.empty() && !recvq_.empty()) {
    const Arrived a = arrived_.front();
    arrived_.pop_front();
    deliver(a);
    any = true;
  }
  return any;
}

bool FrameChannel::progress() {
  bool any = false;
  for (;;) {
    const size_t n = link_.poll(polled_.data(), polled_.size());
    for (size_t i = 0; i < n; ++i) {
      any = on_completion(polled_[i]) || any;
      if (!polled_[i].is_send) ++arrivals_;
    }
    if (n < polled_.size()) break;
  }
  if (!arrived_.empty() && !recvq_.empty()) any = match() || any;
  any = send_frames() || any;
  return any;
}

}  // namespace cc::comm::verbs
