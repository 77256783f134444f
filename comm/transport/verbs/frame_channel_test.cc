// The frame protocol on fake links (tests/fake_link.h), single-threaded: both ends are driven
// by hand, so every interleaving here is deterministic.
#include "comm/transport/verbs/frame_channel.h"

#include <doctest/doctest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "comm/reduce.h"
#include "comm/tests/fake_link.h"

namespace cc::comm::verbs {
namespace {

using test::FakeMode;
using test::FakeWire;

std::vector<char> payload(size_t n, int seed) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>((i * 7 + static_cast<size_t>(seed)) & 0xff);
  return v;
}

struct Pair {
  std::shared_ptr<FakeWire> wire = std::make_shared<FakeWire>();
  std::unique_ptr<test::FakeLink> la, lb;
  std::unique_ptr<FrameChannel> a, b;
  Pair(FakeMode mode, size_t frame, uint32_t slots) {
    wire->mode = mode;
    auto [x, y] = test::make_fake_pair(wire, frame, slots, "fakeA port 1", "fakeB port 1");
    la = std::move(x);
    lb = std::move(y);
    a = std::make_unique<FrameChannel>(*la, 1);
    b = std::make_unique<FrameChannel>(*lb, 0);
  }
  // Drives both ends until `done` or no progress is possible.
  template <class F>
  bool drive(F done) {
    for (int i = 0; i < 100000; ++i) {
      if (done()) return true;
      const bool pa = a->progress();
      const bool pb = b->progress();
      if (!pa && !pb && !done()) return false;
    }
    return done();
  }
};

TEST_CASE("frames: a message larger than many frames arrives intact, no frame dropped") {
  Pair p(FakeMode::kUcDrop, 4096, 8);
  const auto msg = payload(100000, 3);  // 25 frames: 24 of 4096 payload bytes, one of 1696
  std::vector<char> got(msg.size());
  Request s, r;
  s.parts_left = r.parts_left = 1;
  p.a->send(msg.data(), msg.size(), s);
  p.b->recv(got.data(), got.size(), r);
  REQUIRE(p.drive([&] { return s.done() && r.done(); }));
  CHECK(got == msg);
  CHECK(p.wire->drops == 0);
  CHECK(p.a->stats().data_frames == 25);
  REQUIRE(p.wire->send_sizes[0].size() == 25);
  CHECK(p.wire->send_sizes[0].front() == 4096 + kFrameHeaderBytes);
  CHECK(p.wire->send_sizes[0].back() == 100000 - 24 * 4096 + kFrameHeaderBytes);
}

TEST_CASE("frames: a message of N bytes takes ceil(N / frame) frames, 2^k messages no extra") {
  // The header is outside the frame's payload budget: 4 KiB at 4 KiB frames is one frame of
  // 4096 + 24 bytes, not a full one and a second of 24 payload bytes.
  for (size_t frame : {size_t{4096}, size_t{65536}}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{8}, size_t{4095}, size_t{4096}, size_t{4097},
                     size_t{65536}, size_t{65537}, size_t{131072}, size_t{1} << 20,
                     (size_t{1} << 20) + 24}) {
      CAPTURE(frame);
      CAPTURE(n);
      Pair p(FakeMode::kUcDrop, frame, 8);
      const auto msg = payload(n, 9);
      std::vector<char> got(n);
      Request s, r;
      s.parts_left = r.parts_left = 1;
      p.a->send(msg.data(), n, s);
      p.b->recv(got.data(), n, r);
      REQUIRE(p.drive([&] { return s.done() && r.done(); }));
      CHECK(got == msg);
      const uint64_t frames = n == 0 ? 1 : (n + frame - 1) / frame;
      CHECK(p.a->stats().data_frames == frames);
      uint64_t wire = 0;
      for (uint32_t b : p.wire->send_sizes[0]) {
        CHECK(b <= frame + kFrameHeaderBytes);
        wire += b;
      }
      // Side 0 only sends data (credits come back from side 1): payload + one header a frame.
      CHECK(p.a->stats().credit_frames == 0);
      CHECK(wire == n + frames * kFrameHeaderBytes);
      CHECK(p.wire->drops == 0);
    }
  }
}

TEST_CASE("frames: padded frames go out at the full posted size and arrive intact") {
  // Side 0 pads (the Apple profile's default), side 1 does not: each takes the other's form.
  for (size_t n : {size_t{0}, size_t{8}, size_t{5000}, size_t{8192}, size_t{100000}}) {
    CAPTURE(n);
    auto wire = std::make_shared<FakeWire>();
    wire->mode = FakeMode::kUcDrop;
    auto [x, y] = test::make_fake_pair(wire, 4096, 8, "fakeA port 1", "fakeB port 1");
    FrameChannel a(*x, 1, /*pad_frames=*/true), b(*y, 0);
    const auto ma = payload(n, 1), mb = payload(n, 2);
    std::vector<char> ga(n), gb(n);
    Request sa, sb, ra, rb;
    sa.parts_left = sb.parts_left = ra.parts_left = rb.parts_left = 1;
    a.send(ma.data(), n, sa);
    b.send(mb.data(), n, sb);
    a.recv(gb.data(), n, ra);
    b.recv(ga.data(), n, rb);
    for (int i = 0; i < 10000 && !(sa.done() && sb.done() && ra.done() && rb.done()); ++i) {
      a.progress();
      b.progress();
    }
    REQUIRE((sa.done() && sb.done() && ra.done() && rb.done()));
    CHECK(ga == ma);
    CHECK(gb == mb);
    CHECK(wire->drops == 0);
    const uint64_t frames = n == 0 ? 1 : (n + 4095) / 4096;
    CHECK(a.stats().data_frames == frames);
    REQUIRE(!wire->send_sizes[0].empty());
    for (uint32_t bytes : wire->send_sizes[0]) CHECK(bytes == 4096 + kFrameHeaderBytes);
    CHECK(wire->send_sizes[1].front() == std::min<size_t>(n, 4096) + kFrameHeaderBytes);
  }
}

TEST_CASE("frames: ends whose frame sizes differ fail naming the rank, the device and the status") {
  // Side 0 sends full 8 KiB frames into side 1's 4 KiB receives: verbs completes such a
  // receive with an error (never a silent truncation), and the message says what to check.
  auto wire = std::make_shared<FakeWire>();
  auto [x, y] = test::make_fake_pair(wire, 8192, 4, "fakeA port 1", "fakeB port 1", 4096);
  FrameChannel a(*x, 1), b(*y, 0);
  const auto msg = payload(8192, 4);
  std::vector<char> got(8192);
  Request s, r;
  s.parts_left = r.parts_left = 1;
  a.send(msg.data(), msg.size(), s);
  b.recv(got.data(), got.size(), r);
  try {
    for (int i = 0; i < 100 && !r.done(); ++i) {
      a.progress();
      b.progress();
    }
    FAIL("a frame longer than the posted receive went unnoticed");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kSystem);
    CHECK(e.ranks() == std::vector<int>{0});
    CHECK(e.message().find("rank 0 on fakeB port 1: a receive completed with error 'local "
                           "length error' (frame sizes must agree") != std::string::npos);
  }
}

TEST_CASE("frames: zero-byte messages are one frame each and match in order") {
  Pair p(FakeMode::kUcDrop, 4096, 4);
  std::vector<Request> s(10), r(10);
  for (auto& q : s) q.parts_left = 1;
  for (auto& q : r) q.parts_left = 1;
  for (auto& q : s) p.a->send(nullptr, 0, q);
  for (auto& q : r) p.b->recv(nullptr, 0, q);
  REQUIRE(p.drive([&] { return r.back().done() && s.back().done(); }));
  CHECK(p.a->stats().data_frames == 10);
  CHECK(p.wire->drops == 0);
}

TEST_CASE("frames: a one-frame send posts at once, and a small one never passes a queued one") {
  Pair p(FakeMode::kUcDrop, 4096, 8);
  // Nothing queued and credits at hand: posted inside send(), done before any progress().
  const auto small = payload(8, 1);
  Request s0;
  s0.parts_left = 1;
  p.a->send(small.data(), small.size(), s0);
  CHECK(s0.done());
  CHECK(p.a->stats().data_frames == 1);
  // A receive posted before the frame's completion is polled takes it in that poll.
  std::vector<char> got0(8);
  Request r0;
  r0.parts_left = 1;
  p.b->recv(got0.data(), got0.size(), r0);
  CHECK_FALSE(r0.done());
  p.b->progress();
  CHECK(r0.done());
  CHECK(got0 == small);
  // b has no receive posted: a large message stalls on credits, and the small ones sent after
  // it queue behind it (no frame of theirs leaves first), then all arrive in order.
  const auto big = payload(300000, 2);
  std::vector<std::vector<char>> smalls{payload(8, 3), payload(0, 4), payload(4096, 5)};
  Request sb;
  sb.parts_left = 1;
  p.a->send(big.data(), big.size(), sb);
  const uint64_t before = p.a->stats().data_frames;
  std::vector<Request> ss(smalls.size());
  for (size_t i = 0; i < smalls.size(); ++i) {
    ss[i].parts_left = 1;
    p.a->send(smalls[i].data(), smalls[i].size(), ss[i]);
    CHECK_FALSE(ss[i].done());
  }
  CHECK(p.a->stats().data_frames == before);
  std::vector<char> gb(big.size());
  std::vector<std::vector<char>> gs{std::vector<char>(8), {}, std::vector<char>(4096)};
  Request rb;
  rb.parts_left = 1;
  std::vector<Request> rs(smalls.size());
  p.b->recv(gb.data(), gb.size(), rb);
  for (size_t i = 0; i < smalls.size(); ++i) {
    rs[i].parts_left = 1;
    p.b->recv(gs[i].data(), gs[i].size(), rs[i]);
  }
  REQUIRE(p.drive([&] { return rs.back().done() && ss.back().done(); }));
  CHECK(gb == big);
  for (size_t i = 0; i < smalls.size(); ++i) CHECK(gs[i] == smalls[i]);
  CHECK(p.wire->drops == 0);
}

TEST_CASE("frames: the receiver's queue runs dry - the sender stalls on credits, loses nothing") {
  Pair p(FakeMode::kUcDrop, 4096, 8);
  const auto msg = payload(300000, 5);
  Request s;
  s.parts_left = 1;
  p.a->send(msg.data(), msg.size(), s);
  // No receive posted on b: exactly 7 frames leave (8 credits, one kept back), then a stalls.
  CHECK_FALSE(p.drive([&] { return s.done(); }));
  CHECK(p.a->stats().data_frames == 7);
  CHECK(p.a->stats().stalls_no_credit > 0);
  CHECK(p.wire->drops == 0);
  std::vector<char> got(msg.size());
  Request r;
  r.parts_left = 1;
  p.b->recv(got.data(), got.size(), r);
  REQUIRE(p.drive([&] { return s.done() && r.done(); }));
  CHECK(got == msg);
  CHECK(p.wire->drops == 0);
  CHECK(p.b->stats().credit_frames > 0);  // one-way traffic: credits went back in CREDIT frames
}

TEST_CASE("frames: both ends send before receiving - credits never deadlock, nothing dropped") {
  // a: send X, then recv; b: send Y and wait for it to complete before posting its receive.
  // b's send can finish only if a returns credits while a's own data fills b's frames.
  for (uint32_t slots : {4u, 5u, 8u, 63u}) {
    CAPTURE(slots);
    Pair p(FakeMode::kUcDrop, 4096, slots);
    const auto x = payload(500000, 1), y = payload(700000, 2);
    std::vector<char> gx(x.size()), gy(y.size());
    Request sa, sb, ra, rb;
    sa.parts_left = sb.parts_left = ra.parts_left = rb.parts_left = 1;
    p.a->send(x.data(), x.size(), sa);
    p.a->recv(gy.data(), gy.size(), ra);
    p.b->send(y.data(), y.size(), sb);
    REQUIRE(p.drive([&] { return sb.done(); }));
    p.b->recv(gx.data(), gx.size(), rb);
    REQUIRE(p.drive([&] { return sa.done() && ra.done() && rb.done(); }));
    CHECK(gx == x);
    CHECK(gy == y);
    CHECK(p.wire->drops == 0);
    CHECK(p.wire->side[0].max_posted <= slots);
  }
}

TEST_CASE("frames: a size mismatch is a protocol error naming the rank and the device") {
  Pair p(FakeMode::kLossFree, 4096, 4);
  std::vector<char> m(100), g(50);
  Request s, r;
  s.parts_left = r.parts_left = 1;
  p.a->send(m.data(), m.size(), s);
  p.b->recv(g.data(), g.size(), r);
  try {
    p.drive([&] { return r.done(); });
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kProtocol);
    CHECK(e.message().find("rank 0 on fakeB port 1") != std::string::npos);
    CHECK(e.message().find("100 bytes where this rank expects 50") != std::string::npos);
  }
}

TEST_CASE("frames: a folding receive reduces each frame into place, bit for bit as copy-then-reduce") {
  // 10,000 floats = 40,000 bytes = 10 frames of 4 KiB (the last 3,136 bytes): each frame is
  // reduced with `own` straight out of its receive frame. Both orders, out of place and in
  // place (dst == own), against reduce() of the received message.
  std::vector<float> msg(10000), own(10000);
  for (size_t i = 0; i < msg.size(); ++i) {
    msg[i] = 0.1f * static_cast<float>(i % 97) - 3.3f;
    own[i] = 1.0f / static_cast<float>(i + 1) + 1e-7f * static_cast<float>(i);
  }
  for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kProd}) {
    for (const bool first : {true, false}) {
      for (const bool in_place : {false, true}) {
        CAPTURE(static_cast<int>(op));
        CAPTURE(first);
        CAPTURE(in_place);
        Pair p(FakeMode::kUcDrop, 4096, 8);
        std::vector<float> want(msg.size()), mine = own, out(msg.size(), -1.0f);
        const void* srcs[2] = {first ? msg.data() : own.data(), first ? own.data() : msg.data()};
        reduce(DataType::kF32, op, want.data(), srcs, 2, msg.size());
        float* dst = in_place ? mine.data() : out.data();
        const Fold f{DataType::kF32, op, mine.data(), first};
        Request s, r;
        s.parts_left = r.parts_left = 1;
        p.a->send(reinterpret_cast<const char*>(msg.data()), msg.size() * 4, s);
        p.b->recv(reinterpret_cast<char*>(dst), msg.size() * 4, r, 0, &f);
        REQUIRE(p.drive([&] { return s.done() && r.done(); }));
        CHECK(std::memcmp(dst, want.data(), want.size() * 4) == 0);
        if (!in_place) CHECK(mine == own);  // `own` is only read
        CHECK(p.b->stats().folded_frames == 10);
        CHECK(p.a->stats().folded_frames == 0);
      }
    }
  }
  // A frame that is not whole elements (a 6-byte message into a float fold): kProtocol.
  Pair p(FakeMode::kLossFree, 4096, 4);
  std::vector<char> m(6), g(6), o(6);
  const Fold f{DataType::kF32, ReduceOp::kSum, o.data(), true};
  Request s, r;
  s.parts_left = r.parts_left = 1;
  p.a->send(m.data(), m.size(), s);
  p.b->recv(g.data(), g.size(), r, 0, &f);
  try {
    p.drive([&] { return r.done(); });
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kProtocol);
    CHECK(e.message().find("a frame of 6 bytes into a reduction of 4-byte elements") !=
          std::string::npos);
  }
}

TEST_CASE("frames: an error completion names the rank, the device and the status") {
  Pair p(FakeMode::kLossFree, 4096, 4);
  p.wire->fail_next_recv[1] = true;
  std::vector<char> m(10), g(10);
  Request s, r;
  s.parts_left = r.parts_left = 1;
  p.a->send(m.data(), m.size(), s);
  p.b->recv(g.data(), g.size(), r);
  try {
    p.drive([&] { return r.done(); });
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kSystem);
    CHECK(e.message().find("rank 0 on fakeB port 1: a receive completed with error 'local "
                           "protection error'") != std::string::npos);
    CHECK(e.ranks() == std::vector<int>{0});
  }
}

TEST_CASE("frames: a frame lost on the wire fails at the next frame, not by a shifted message") {
  // Three equal messages of one frame each; UC loses the second. Without sequence numbers the
  // third would fill the second receive (same size) and every later message would shift by one.
  Pair p(FakeMode::kLossFree, 4096, 8);
  p.wire->lose_send[0] = 2;
  std::vector<std::vector<char>> m{payload(100, 1), payload(100, 2), payload(100, 3)};
  std::vector<std::vector<char>> g(3, std::vector<char>(100));
  std::vector<Request> s(3), r(3);
  for (size_t i = 0; i < 3; ++i) {
    s[i].parts_left = r[i].parts_left = 1;
    p.a->send(m[i].data(), 100, s[i]);
    p.b->recv(g[i].data(), 100, r[i]);
  }
  try {
    p.drive([&] { return r[2].done(); });
    FAIL("the lost frame went unnoticed");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kSystem);
    CHECK(e.ranks() == std::vector<int>{0});
    CHECK(e.message().find("rank 0 on fakeB port 1: frame 1 never arrived (frame 2 came next)") !=
          std::string::npos);
    CHECK(e.message().find("CLUSTERCOMM_IBV_PROFILE=rc") != std::string::npos);
  }
  // Nothing reached the second and third receives.
  CHECK_FALSE(r[1].done());
  CHECK_FALSE(r[2].done());
  CHECK(g[1] == std::vector<char>(100, 0));
}

TEST_CASE("frames: too few receive frames are refused") {
  auto wire = std::make_shared<FakeWire>();
  auto [x, y] = test::make_fake_pair(wire, 4096, 3, "a", "b");
  CHECK_THROWS_AS(FrameChannel(*x, 1), Error);
}

// Zero-copy: side 0 (a) has an MR cache over a fake registrar and 2 send SGEs; side 1 (b)
// copies as before. Frames 4096 bytes, parts of at least 8192 bytes go zero-copy.
struct ZcPair {
  std::shared_ptr<FakeWire> wire = std::make_shared<FakeWire>();
  std::unique_ptr<test::FakeLink> la, lb;
  test::FakeRegistrar* reg = nullptr;
  std::unique_ptr<MrCache> cache;
  std::vector<std::string> warnings;
  std::unique_ptr<FrameChannel> a, b;
  ZcPair(bool pad = false, uint32_t sge = 2, size_t cap = kMrCacheCapPerDevice,
         size_t zc_min = 8192) {
    wire->mode = FakeMode::kUcDrop;
    auto [x, y] = test::make_fake_pair(wire, 4096, 8, "fakeA port 1", "fakeB port 1");
    la = std::move(x);
    lb = std::move(y);
    auto r = std::make_unique<test::FakeRegistrar>();
    reg = r.get();
    cache = std::make_unique<MrCache>(std::move(r), "rank 0: fakeA port 1", cap);
    cache->set_warning_sink([this](const std::string& w) { warnings.push_back(w); });
    la->set_mr_cache(cache.get(), reg, sge);
    a = std::make_unique<FrameChannel>(*la, 1, pad, zc_min);
    b = std::make_unique<FrameChannel>(*lb, 0);
  }
  ~ZcPair() {
    a.reset();  // channels (and their leases) before the cache
    b.reset();
  }
  template <class F>
  bool drive(F done) {
    for (int i = 0; i < 100000; ++i) {
      if (done()) return true;
      const bool pa = a->progress();
      const bool pb = b->progress();
      if (!pa && !pb && !done()) return false;
    }
    return done();
  }
};

// Sends `msgs` from a to b (each its own message), returns every message a put on the wire.
std::vector<std::vector<std::byte>> wire_bytes_of(FrameChannel& a, FrameChannel& b, FakeWire& w,
                                                  const std::vector<std::vector<char>>& msgs) {
  w.record = true;
  std::vector<std::vector<char>> got;
  for (const auto& m : msgs) got.emplace_back(m.size());
  std::vector<Request> s(msgs.size()), r(msgs.size());
  for (size_t i = 0; i < msgs.size(); ++i) {
    s[i].parts_left = r[i].parts_left = 1;
    a.send(msgs[i].data(), msgs[i].size(), s[i]);
    b.recv(got[i].data(), got[i].size(), r[i]);
  }
  for (int i = 0; i < 100000 && !(s.back().done() && r.back().done()); ++i) {
    a.progress();
    b.progress();
  }
  for (size_t i = 0; i < msgs.size(); ++i) {
    CHECK(s[i].done());
    CHECK(r[i].done());
    CHECK(got[i] == msgs[i]);
  }
  return w.sent[0];
}

TEST_CASE("frames: zero-copy frames carry exactly the bytes copied frames carry") {
  // 100000 bytes = 24 full frames + one of 1696; 8192 = 2 full frames; 5000 stays below the
  // threshold (copied either way).
  const std::vector<std::vector<char>> msgs{payload(100000, 1), payload(8192, 2),
                                            payload(5000, 3), payload(100000, 4)};
  Pair copy(FakeMode::kUcDrop, 4096, 8);
  const auto copied = wire_bytes_of(*copy.a, *copy.b, *copy.wire, msgs);
  ZcPair zc;
  REQUIRE(zc.a->zero_copy());
  const auto gathered = wire_bytes_of(*zc.a, *zc.b, *zc.wire, msgs);
  CHECK(copy.wire->gather_sends[0] == 0);
  CHECK(zc.wire->gather_sends[0] == 25 + 2 + 25);  // every frame of the three large parts
  CHECK(zc.a->stats().zero_copy_frames == 52);
  CHECK(zc.a->stats().zero_copy_fallbacks == 0);
  CHECK(zc.a->stats().data_frames == copy.a->stats().data_frames);
  REQUIRE(gathered.size() == copied.size());
  for (size_t i = 0; i < copied.size(); ++i) {
    CAPTURE(i);
    CHECK(gathered[i] == copied[i]);  // header and payload, byte for byte
  }
  CHECK(zc.wire->drops == 0);
  CHECK(zc.reg->regs == 3);  // one registration per large buffer (the 5000 B one is copied)
  CHECK(zc.warnings.empty());
}

TEST_CASE("frames: a zero-copy send completes at its send completion, not at posting") {
  ZcPair p;
  p.wire->hold_send_completions[0] = true;
  const auto msg = payload(20000, 5);  // 5 frames, all gathered
  std::vector<char> got(msg.size());
  Request s, r;
  s.parts_left = r.parts_left = 1;
  p.a->send(msg.data(), msg.size(), s);
  p.b->recv(got.data(), got.size(), r);
  REQUIRE(p.drive([&] { return r.done(); }));
  CHECK(got == msg);
  for (int i = 0; i < 10; ++i) p.a->progress();
  // Every frame is posted and has arrived, but the sender has no completion yet: the
  // hardware may still read the user buffer, so the request is not done.
  CHECK_FALSE(s.done());
  CHECK_FALSE(p.a->idle());
  CHECK(p.a->has_sends());
  REQUIRE(p.wire->held[0].size() >= 1);
  CHECK(p.wire->held[0].back().slot == 4);  // the last frame (slot 4) was signaled
  // The registration is held: a drop now leaves it registered until the completion.
  CHECK(p.cache->drop(msg.data(), msg.size()) == 1);
  CHECK(p.reg->live.size() == 1);
  p.wire->release_send_completions(0);
  p.a->progress();
  CHECK(s.done());
  CHECK(p.a->idle());
  CHECK(p.reg->live.empty());  // deregistered at its last release
  // The copy path, for contrast: done at posting even with completions held.
  Pair c(FakeMode::kUcDrop, 4096, 8);
  c.wire->hold_send_completions[0] = true;
  Request s2;
  s2.parts_left = 1;
  c.a->send(msg.data(), msg.size(), s2);
  CHECK(s2.done());
}

TEST_CASE("frames: zero-copy with padding gathers full frames and copies a short last one") {
  ZcPair p(/*pad=*/true);
  p.wire->hold_send_completions[0] = true;
  const auto msg = payload(100000, 6);  // 24 full frames and one of 1696 bytes
  std::vector<char> got(msg.size());
  Request s, r;
  s.parts_left = r.parts_left = 1;
  p.a->send(msg.data(), msg.size(), s);
  p.b->recv(got.data(), got.size(), r);
  for (int i = 0; i < 10000 && !r.done(); ++i) {
    p.a->progress();
    p.b->progress();
    p.wire->release_send_completions(0);
  }
  p.wire->hold_send_completions[0] = false;
  REQUIRE(p.drive([&] { return s.done() && r.done(); }));
  CHECK(got == msg);
  CHECK(p.wire->gather_sends[0] == 24);
  CHECK(p.a->stats().zero_copy_frames == 24);
  REQUIRE(p.wire->send_sizes[0].size() == 25);
  for (uint32_t b : p.wire->send_sizes[0]) CHECK(b == 4096 + kFrameHeaderBytes);
}

TEST_CASE("frames: zero-copy never evicts a registration in flight, a full cache copies") {
  // Cap 2: three buffers queued at once; the third cannot evict either registration the first
  // two hold, so it is copied. The fake link throws if a gather send meets a registration
  // that was deregistered.
  ZcPair p(false, 2, /*cap=*/2);
  const std::vector<std::vector<char>> m{payload(12288, 1), payload(12288, 2), payload(12288, 3)};
  std::vector<std::vector<char>> g(3, std::vector<char>(12288));
  std::vector<Request> s(3), r(3);
  for (size_t i = 0; i < 3; ++i) {
    s[i].parts_left = r[i].parts_left = 1;
    p.a->send(m[i].data(), m[i].size(), s[i]);
    p.b->recv(g[i].data(), g[i].size(), r[i]);
  }
  CHECK(p.a->stats().zero_copy_fallbacks == 1);
  CHECK(p.cache->stats().all_in_use == 1);
  CHECK(p.reg->regs == 2);
  CHECK(p.reg->deregs == 0);
  REQUIRE(p.drive([&] { return s[2].done() && r[2].done() && s[0].done() && s[1].done(); }));
  CHECK(p.wire->gather_sends[0] == 6);  // 3 frames each of the first two, none of the third
  CHECK(p.reg->deregs == 0);
  for (size_t i = 0; i < 3; ++i) CHECK(g[i] == m[i]);
  // Now both are free: a fourth buffer evicts the least recently used one (the first).
  const auto m4 = payload(12288, 4);
  std::vector<char> g4(m4.size());
  Request s4, r4;
  s4.parts_left = r4.parts_left = 1;
  p.a->send(m4.data(), m4.size(), s4);
  p.b->recv(g4.data(), g4.size(), r4);
  REQUIRE(p.drive([&] { return s4.done() && r4.done(); }));
  CHECK(g4 == m4);
  CHECK(p.reg->deregs == 1);
  CHECK_FALSE(p.reg->covers(m[0].data(), 1, 100));  // the first registration (lkey 100) went
  CHECK(p.cache->size() == 2);
}

TEST_CASE("frames: a refused registration or a link with one SGE copies, the call succeeds") {
  {
    ZcPair p;
    p.reg->fail_next = 1;
    p.reg->fail_errno = 12;  // ENOMEM: the memlock limit
    const auto msg = payload(50000, 7);
    std::vector<char> got(msg.size());
    Request s, r;
    s.parts_left = r.parts_left = 1;
    p.a->send(msg.data(), msg.size(), s);
    p.b->recv(got.data(), got.size(), r);
    REQUIRE(p.drive([&] { return s.done() && r.done(); }));
    CHECK(got == msg);
    CHECK(p.a->stats().zero_copy_fallbacks == 1);
    CHECK(p.wire->gather_sends[0] == 0);
    REQUIRE(p.warnings.size() == 1);
    CHECK(p.warnings[0].find("rank 0: fakeA port 1: warning: cannot register") != std::string::npos);
    CHECK(p.warnings[0].find("errno 12") != std::string::npos);
    // The next message registers (the refusal was one-off) and no second warning comes.
    Request s2, r2;
    s2.parts_left = r2.parts_left = 1;
    p.a->send(msg.data(), msg.size(), s2);
    p.b->recv(got.data(), got.size(), r2);
    REQUIRE(p.drive([&] { return s2.done() && r2.done(); }));
    CHECK(p.wire->gather_sends[0] == 13);
    CHECK(p.warnings.size() == 1);
  }
  {
    ZcPair p(false, /*sge=*/1);
    CHECK_FALSE(p.a->zero_copy());
    const auto msg = payload(20000, 8);
    std::vector<char> got(msg.size());
    Request s, r;
    s.parts_left = r.parts_left = 1;
    p.a->send(msg.data(), msg.size(), s);
    CHECK(s.done());  // copied: done at posting
    p.b->recv(got.data(), got.size(), r);
    REQUIRE(p.drive([&] { return r.done(); }));
    CHECK(got == msg);
    CHECK(p.reg->regs == 0);
    CHECK(p.wire->gather_sends[0] == 0);
    CHECK(p.a->stats().zero_copy_fallbacks == 0);  // never tried
  }
}

TEST_CASE("transport: release_buffer drops the zero-copy registration of a buffer") {
  VerbsOptions o;
  o.close_timeout = std::chrono::milliseconds(2000);
  o.zero_copy_min_bytes = 8192;
  auto w = test::make_fake_verbs_world(2, 1, FakeMode::kUcDrop, 4096, 8, o);
  REQUIRE(w.registrars.size() == 2);
  const auto msg = payload(300000, 9);
  std::vector<char> got(msg.size());
  auto round = [&] {
    std::thread peer([&] {
      Request r;
      w.transports[1]->irecv(0, got.data(), got.size(), r);
      w.transports[1]->wait(r, Clock::now() + std::chrono::seconds(10));
    });
    Request s;
    w.transports[0]->isend(1, msg.data(), msg.size(), s);
    w.transports[0]->wait(s, Clock::now() + std::chrono::seconds(10));
    peer.join();
    CHECK(got == msg);
  };
  round();
  CHECK(w.registrars[0]->regs == 1);
  CHECK(w.registrars[0]->live.size() == 1);
  CHECK(w.transports[0]->stats().zero_copy_frames == (300000 + 4095) / 4096);
  round();  // cached: no new registration
  CHECK(w.registrars[0]->regs == 1);
  w.transports[0]->release_buffer(msg.data(), msg.size());
  CHECK(w.registrars[0]->live.empty());
  CHECK(w.registrars[0]->deregs == 1);
  round();  // registered afresh
  CHECK(w.registrars[0]->regs == 2);
  w.transports[1]->release_buffer(got.data(), got.size());  // never registered: a no-op
  CHECK(w.registrars[1]->regs == 0);
}

}  // namespace
}  // namespace cc::comm::verbs

namespace cc::comm::verbs {
namespace {

TEST_CASE("transport: frames still moving keep a wait past its deadline and silence ends it") {
  using std::chrono::milliseconds;
  VerbsOptions o;
  o.close_timeout = milliseconds(200);
  auto w = test::make_fake_verbs_world(2, 1, FakeMode::kLossFree, 4096, 8, o);
  for (auto& t : w.transports) t->set_stall_timeout(milliseconds(300));
  // Rank 0 posts frames only when it polls, every 25 ms, and 8 receive frames of 4 KiB allow
  // 7 in flight: 1 MiB takes about 40 polls, 1 s, well past the receive's 300 ms deadline,
  // without ever stopping for 300 ms.
  const auto msg = payload(size_t{1} << 20, 5);
  std::vector<char> got(msg.size());
  Request s, r;
  w.transports[1]->irecv(0, got.data(), got.size(), r);
  std::thread sender([&] {
    w.transports[0]->isend(1, msg.data(), msg.size(), s);
    for (int i = 0; i < 400 && !s.done(); ++i) {  // at most 10-24 s, should the receiver fail
      try {
        w.transports[0]->poll();
      } catch (const Error&) {
        break;  // the receiver gave up: the checks below say why
      }
      std::this_thread::sleep_for(milliseconds(25));
    }
  });
  const auto start = Clock::now();
  std::string failed;
  try {
    w.transports[1]->wait(r, start + milliseconds(300));
  } catch (const Error& e) {
    failed = e.what();
  }
  const auto end = Clock::now();
  sender.join();
  CHECK(failed == "");
  REQUIRE(r.done());
  CHECK(std::chrono::duration_cast<milliseconds>(end - start).count() > 300);
  CHECK(got == msg);
  // Silence: 300 ms after the last frame, though this wait's own deadline is 1 ms away.
  Request quiet;
  w.transports[1]->irecv(0, got.data(), 8, quiet);
  try {
    w.transports[1]->wait(quiet, Clock::now() + milliseconds(1));
    FAIL("no timeout");
  } catch (const Error& e) {
    const auto after = std::chrono::duration_cast<milliseconds>(Clock::now() - end);
    CHECK(e.kind() == ErrorKind::kTimeout);
    CHECK(e.ranks() == std::vector<int>{0});
    CHECK(after.count() >= 290);
    CHECK(after.count() < 2000);
  }
}

TEST_CASE("transport: a silent peer is a timeout naming the rank and its devices") {
  VerbsOptions o;
  o.close_timeout = std::chrono::milliseconds(200);
  auto w = test::make_fake_verbs_world(2, 2, FakeMode::kUcDrop, 4096, 4, o);
  std::vector<char> buf(10);
  Request r;
  w.transports[0]->irecv(1, buf.data(), buf.size(), r);
  try {
    w.transports[0]->wait(r, Clock::now() + std::chrono::milliseconds(50));
    FAIL("no timeout");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kTimeout);
    CHECK(e.ranks() == std::vector<int>{1});
    CHECK(e.message().find("timed out waiting for rank 1 on fake0_1.0 port 1, fake0_1.1 port 1 "
                           "(silent for ") != std::string::npos);
  }
  // Rank 0 aborted: rank 1 hears it on the control connection.
  Request s;
  w.transports[1]->isend(0, buf.data(), buf.size(), s);
  try {
    w.transports[1]->wait(s, Clock::now() + std::chrono::milliseconds(2000));
    // the send may complete locally (UC: no acknowledgement); the abort shows on the next wait
    Request r2;
    w.transports[1]->irecv(0, buf.data(), buf.size(), r2);
    w.transports[1]->wait(r2, Clock::now() + std::chrono::milliseconds(2000));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kPeerLost);
    CHECK(e.message().find("rank 0 gave up on this rank (1): its own error names this rank") !=
          std::string::npos);
    CHECK(e.ranks() == std::vector<int>{1, 0});
  }
}

TEST_CASE("transport: a timeout on a peer that is still alive says so and points at loss") {
  // Both ranks wait to receive from each other (as after a lost frame): rank 1 keeps sending
  // ALIVE, so rank 0's timeout names it as alive, not as dead or stopped.
  VerbsOptions o;
  o.close_timeout = std::chrono::milliseconds(200);
  auto w = test::make_fake_verbs_world(2, 1, FakeMode::kUcDrop, 4096, 4, o);
  std::vector<char> b0(10), b1(10);
  std::thread other([&] {
    Request r;
    w.transports[1]->irecv(0, b1.data(), b1.size(), r);
    try {
      w.transports[1]->wait(r, Clock::now() + std::chrono::milliseconds(5000));
    } catch (const Error&) {  // rank 0 gives up first
    }
  });
  Request r;
  w.transports[0]->irecv(1, b0.data(), b0.size(), r);
  try {
    w.transports[0]->wait(r, Clock::now() + std::chrono::milliseconds(900));
    FAIL("no timeout");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kTimeout);
    CHECK(e.ranks() == std::vector<int>{1});
    CHECK(e.message().find("(rank 1 is alive: its control connection spoke ") != std::string::npos);
    CHECK(e.message().find("CLUSTERCOMM_IBV_PROFILE=rc") != std::string::npos);
  }
  other.join();
}

}  // namespace
}  // namespace cc::comm::verbs
