#include "comm/tests/fake_link.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace cc::comm::test {

FakeLink::FakeLink(std::shared_ptr<FakeWire> wire, int side, size_t frame_bytes,
                   uint32_t send_slots, uint32_t recv_slots, std::string name)
    : wire_(std::move(wire)),
      side_(side),
      frame_bytes_(frame_bytes),
      send_slots_(send_slots),
      recv_slots_(recv_slots),
      name_(std::move(name)),
      send_ring_(wire_bytes() * send_slots),
      recv_ring_(wire_bytes() * recv_slots) {
  if (::pipe(pipe_) != 0) throw std::runtime_error("fake: pipe");
  for (int fd : pipe_) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::lock_guard lock(wire_->mu);
  wire_->side[side].link = this;
}

FakeLink::~FakeLink() {
  {
    // As a destroyed queue pair: the peer's later frames are lost, not delivered to freed memory.
    std::lock_guard lock(wire_->mu);
    FakeWire::Side& s = wire_->side[side_];
    s.link = nullptr;
    s.posted.clear();
    s.armed = false;
  }
  ::close(pipe_[0]);
  ::close(pipe_[1]);
}

void FakeLink::arm() {
  std::lock_guard lock(wire_->mu);
  wire_->side[side_].armed = true;
}

void FakeLink::consume_events() {
  char buf[64];
  while (::read(pipe_[0], buf, sizeof(buf)) > 0) {
  }
}

void FakeWire::completed(int to) {
  Side& s = side[to];
  if (!s.armed) return;
  s.armed = false;
  const char b = 1;
  [[maybe_unused]] const ssize_t n = ::write(s.link->pipe_[1], &b, 1);
}

std::byte* FakeLink::send_frame(uint32_t slot) {
  return send_ring_.data() + size_t{slot} * wire_bytes();
}

const std::byte* FakeLink::recv_frame(uint32_t slot) const {
  return recv_ring_.data() + size_t{slot} * wire_bytes();
}

void FakeWire::deliver(int to, const std::byte* data, uint32_t bytes) {
  Side& s = side[to];
  const uint32_t slot = s.posted.front();
  s.posted.pop_front();
  verbs::Completion c;
  c.slot = slot;
  c.bytes = bytes;
  if (bytes > s.link->wire_bytes()) {  // longer than the posted receive, as verbs reports it
    c.ok = false;
    c.status = 1;  // IBV_WC_LOC_LEN_ERR
    c.bytes = 0;
  } else {
    std::memcpy(s.link->recv_ring_.data() + size_t{slot} * s.link->wire_bytes(), data, bytes);
  }
  if (fail_next_recv[to]) {
    fail_next_recv[to] = false;
    c.ok = false;
    c.status = 4;  // IBV_WC_LOC_PROT_ERR
  }
  s.cq.push_back(c);
  completed(to);
  ++delivered;
}

void FakeLink::post_recv(uint32_t slot) {
  std::lock_guard lock(wire_->mu);
  FakeWire::Side& s = wire_->side[side_];
  if (slot >= recv_slots_) throw std::logic_error("fake: bad receive slot");
  for (uint32_t p : s.posted) {
    if (p == slot) throw std::logic_error("fake: receive slot posted twice");
  }
  s.posted.push_back(slot);
  if (s.posted.size() > s.max_posted) s.max_posted = s.posted.size();
  if (!s.in_flight.empty()) {
    std::vector<std::byte> m = std::move(s.in_flight.front());
    s.in_flight.pop_front();
    wire_->deliver(side_, m.data(), static_cast<uint32_t>(m.size()));
  }
}

void* FakeRegistrar::reg(void* addr, size_t bytes, uint32_t& lkey, int& err) {
  if (fail_next > 0) {
    --fail_next;
    err = fail_errno;
    return nullptr;
  }
  const auto b = reinterpret_cast<uintptr_t>(addr);
  live.push_back(std::make_unique<Region>(Region{b, b + bytes, next_lkey++}));
  lkey = live.back()->lkey;
  ++regs;
  return live.back().get();
}

void FakeRegistrar::dereg(void* handle) {
  for (auto it = live.begin(); it != live.end(); ++it) {
    if (it->get() == handle) {
      live.erase(it);
      ++deregs;
      return;
    }
  }
  throw std::logic_error("fake: deregistering an unknown MR");
}

bool FakeRegistrar::covers(const void* p, size_t n, uint32_t lkey) const {
  const auto b = reinterpret_cast<uintptr_t>(p);
  for (const auto& r : live) {
    if (r->lkey == lkey && r->begin <= b && b + n <= r->end) return true;
  }
  return false;
}

void FakeWire::release_send_completions(int s) {
  std::lock_guard lock(mu);
  while (!held[s].empty()) {
    side[s].cq.push_back(held[s].front());
    held[s].pop_front();
  }
  completed(s);
}

void FakeWire::release_delivery(int s) {
  std::lock_guard lock(mu);
  hold_delivery[s] = false;
  Side& peer = side[1 - s];
  while (!delayed[s].empty()) {
    const std::vector<std::byte> m = std::move(delayed[s].front());
    delayed[s].pop_front();
    if (peer.link == nullptr) continue;
    if (!peer.posted.empty() && peer.in_flight.empty()) {
      deliver(1 - s, m.data(), static_cast<uint32_t>(m.size()));
    } else if (mode == FakeMode::kUcDrop) {
      ++drops;
    } else {
      peer.in_flight.push_back(m);
    }
  }
}

void FakeLink::post_send_gather(uint32_t slot, const std::byte* payload, uint32_t bytes,
                                uint32_t lkey, bool signaled) {
  if (max_send_sge_ < 2 || registrar_ == nullptr) throw std::logic_error("fake: no gather sends");
  if (!registrar_->covers(payload, bytes, lkey)) {
    throw std::logic_error("fake: a gather send from memory no live MR with that lkey covers");
  }
  std::vector<std::byte> m(verbs::kFrameHeaderBytes + bytes);
  std::memcpy(m.data(), send_frame(slot), verbs::kFrameHeaderBytes);
  std::memcpy(m.data() + verbs::kFrameHeaderBytes, payload, bytes);
  std::lock_guard lock(wire_->mu);
  if (slot >= send_slots_ || m.size() > wire_bytes()) throw std::logic_error("fake: bad send");
  ++wire_->gather_sends[side_];
  send_message(slot, m.data(), static_cast<uint32_t>(m.size()), signaled);
}

void FakeLink::post_send(uint32_t slot, uint32_t bytes, bool signaled) {
  std::lock_guard lock(wire_->mu);
  if (slot >= send_slots_ || bytes > wire_bytes()) throw std::logic_error("fake: bad send");
  send_message(slot, send_frame(slot), bytes, signaled);
}

void FakeLink::send_message(uint32_t slot, const std::byte* data, uint32_t bytes, bool signaled) {
  const int to = 1 - side_;
  wire_->send_sizes[side_].push_back(bytes);
  if (wire_->record) wire_->sent[side_].emplace_back(data, data + bytes);
  FakeWire::Side& peer = wire_->side[to];
  if (++wire_->sends[side_] == wire_->lose_send[side_]) {
    // lost on the wire: the sender still sees its send complete (UC has no acknowledgement)
  } else if (peer.link == nullptr) {
    // the peer's queue pair is gone: the frame is lost (the sender still sees it complete)
  } else if (wire_->hold_delivery[side_]) {
    wire_->delayed[side_].emplace_back(data, data + bytes);
  } else if (!peer.posted.empty() && peer.in_flight.empty()) {
    wire_->deliver(to, data, bytes);
  } else if (wire_->mode == FakeMode::kUcDrop) {
    ++wire_->drops;
  } else {
    peer.in_flight.emplace_back(data, data + bytes);
  }
  if (!signaled) return;
  verbs::Completion c;
  c.is_send = true;
  c.slot = slot;
  if (wire_->hold_send_completions[side_]) {
    wire_->held[side_].push_back(c);
    return;
  }
  wire_->side[side_].cq.push_back(c);
  wire_->completed(side_);
}

size_t FakeLink::poll(verbs::Completion* out, size_t max) {
  std::lock_guard lock(wire_->mu);
  auto& cq = wire_->side[side_].cq;
  size_t n = 0;
  while (n < max && !cq.empty()) {
    out[n++] = cq.front();
    cq.pop_front();
  }
  return n;
}

std::string FakeLink::status_text(int status) const {
  return status == 4   ? "local protection error"
         : status == 1 ? "local length error"
                       : "status " + std::to_string(status);
}

std::pair<std::unique_ptr<FakeLink>, std::unique_ptr<FakeLink>> make_fake_pair(
    std::shared_ptr<FakeWire> wire, size_t frame_bytes, uint32_t slots, const std::string& name0,
    const std::string& name1, size_t frame_bytes1) {
  auto a = std::make_unique<FakeLink>(wire, 0, frame_bytes, slots, slots, name0);
  auto b = std::make_unique<FakeLink>(wire, 1, frame_bytes1 != 0 ? frame_bytes1 : frame_bytes,
                                      slots, slots, name1);
  return {std::move(a), std::move(b)};
}

}  // namespace cc::comm::test

#include <sys/socket.h>

namespace cc::comm::test {

uint64_t FakeVerbsWorld::drops() const {
  uint64_t d = 0;
  for (const auto& w : wires) {
    std::lock_guard lock(w->mu);
    d += w->drops;
  }
  return d;
}

uint64_t FakeVerbsWorld::delivered() const {
  uint64_t d = 0;
  for (const auto& w : wires) {
    std::lock_guard lock(w->mu);
    d += w->delivered;
  }
  return d;
}

size_t FakeVerbsWorld::max_posted() const {
  size_t m = 0;
  for (const auto& w : wires) {
    std::lock_guard lock(w->mu);
    for (const auto& s : w->side) m = std::max(m, s.max_posted);
  }
  return m;
}

FakeVerbsWorld make_fake_verbs_world(int n, int cables, FakeMode mode, size_t frame_bytes,
                                     uint32_t slots, verbs::VerbsOptions options, bool keep_mrs) {
  const size_t un = static_cast<size_t>(n);
  std::vector<std::vector<std::vector<std::unique_ptr<verbs::FrameLink>>>> links(un);
  std::vector<std::vector<tcp::Fd>> control(un);
  for (size_t r = 0; r < un; ++r) {
    links[r].resize(un);
    control[r].resize(un);
  }
  FakeVerbsWorld w;
  for (size_t a = 0; a < un; ++a) {
    for (size_t b = a + 1; b < un; ++b) {
      for (int k = 0; k < cables; ++k) {
        auto wire = std::make_shared<FakeWire>();
        wire->mode = mode;
        // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false positive) on the
        // chain of operator+ that built these names.
        auto name = [&](size_t x, size_t y) {
          std::string s = "fake";
          s += std::to_string(x);
          s += '_';
          s += std::to_string(y);
          s += '.';
          s += std::to_string(k);
          s += " port 1";
          return s;
        };
        auto [la, lb] = make_fake_pair(wire, frame_bytes, slots, name(a, b), name(b, a));
        links[a][b].push_back(std::move(la));
        links[b][a].push_back(std::move(lb));
        w.wires.push_back(std::move(wire));
      }
      int sv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) throw std::runtime_error("socketpair");
      control[a][b] = tcp::Fd(sv[0]);
      control[b][a] = tcp::Fd(sv[1]);
    }
  }
  if (options.zero_copy_min_bytes > 0) {
    for (size_t r = 0; r < un; ++r) {
      auto reg = std::make_unique<FakeRegistrar>();
      FakeRegistrar* raw = reg.get();
      w.registrars.push_back(raw);
      w.caches.push_back(std::make_unique<verbs::MrCache>(
          std::move(reg), "rank " + std::to_string(r) + ": fake" + std::to_string(r),
          verbs::kMrCacheCapPerDevice, keep_mrs));
      for (auto& per_peer : links[r]) {
        for (auto& l : per_peer) {
          static_cast<FakeLink*>(l.get())->set_mr_cache(w.caches.back().get(), raw);
        }
      }
    }
  }
  for (size_t r = 0; r < un; ++r) {
    w.transports.push_back(std::make_unique<verbs::VerbsTransport>(
        static_cast<int>(r), n, std::move(links[r]), std::move(control[r]), options));
  }
  return w;
}

}  // namespace cc::comm::test
