// The MR cache on a fake registrar: hits, LRU eviction that never touches a held entry,
// refused registrations, drop(); per-message mode (nothing outlives its sends).
#include "comm/transport/verbs/mr_cache.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "comm/tests/fake_link.h"

namespace cc::comm::verbs {
namespace {

struct Cache {
  test::FakeRegistrar* reg;
  std::unique_ptr<MrCache> cache;
  std::vector<std::string> warnings;
  explicit Cache(size_t cap, bool keep = true) {
    auto r = std::make_unique<test::FakeRegistrar>();
    reg = r.get();
    cache = std::make_unique<MrCache>(std::move(r), "rank 0: fake0_1 port 1", cap, keep);
    cache->set_warning_sink([this](const std::string& w) { warnings.push_back(w); });
  }
};

size_t page() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

// Whole pages of its own: two buffers never share a page (heap vectors may, and a drop() of
// one then also forgets the other's registration of the shared page, which is only safe).
struct PageBuf {
  explicit PageBuf(size_t pages)
      : p(static_cast<char*>(std::aligned_alloc(page(), pages * page()))), n(pages * page()) {}
  ~PageBuf() { std::free(p); }
  PageBuf(const PageBuf&) = delete;
  char* data() const { return p; }
  size_t size() const { return n; }
  char* p;
  size_t n;
};

TEST_CASE("mr cache: a buffer is registered once, page-aligned, and then hit") {
  Cache c(4);
  std::vector<char> buf(10 * page());
  MrCache::Lease a, b, d;
  REQUIRE(c.cache->acquire(buf.data() + 100, 3 * page(), a));
  CHECK(c.reg->regs == 1);
  REQUIRE(c.reg->live.size() == 1);
  const auto begin = reinterpret_cast<uintptr_t>(buf.data() + 100) & ~(page() - 1);
  CHECK(c.reg->live[0]->begin == begin);
  CHECK((c.reg->live[0]->end - c.reg->live[0]->begin) % page() == 0);
  CHECK(c.reg->live[0]->end >= reinterpret_cast<uintptr_t>(buf.data() + 100 + 3 * page()));
  // A sub-range of it: the same registration, no new one.
  REQUIRE(c.cache->acquire(buf.data() + 200, page(), b));
  CHECK(b.lkey == a.lkey);
  CHECK(c.reg->regs == 1);
  CHECK(c.cache->stats().hits == 1);
  // Beyond it: a registration of its own.
  REQUIRE(c.cache->acquire(buf.data() + 5 * page(), page(), d));
  CHECK(d.lkey != a.lkey);
  CHECK(c.reg->regs == 2);
  c.cache->release(a);
  c.cache->release(b);
  c.cache->release(d);
  CHECK(c.reg->deregs == 0);  // released entries stay cached
  CHECK(c.cache->size() == 2);
}

TEST_CASE("mr cache: LRU eviction never deregisters a held entry, and all held means copy") {
  Cache c(3);
  std::vector<std::vector<char>> bufs(5, std::vector<char>(2 * page()));
  MrCache::Lease l[5];
  REQUIRE(c.cache->acquire(bufs[0].data(), page(), l[0]));  // held throughout
  REQUIRE(c.cache->acquire(bufs[1].data(), page(), l[1]));
  REQUIRE(c.cache->acquire(bufs[2].data(), page(), l[2]));
  const uint32_t key0 = l[0].lkey;
  c.cache->release(l[1]);
  c.cache->release(l[2]);
  // Touch 1 so that 2 is the least recently used unheld entry; 0 is older but held.
  MrCache::Lease t;
  REQUIRE(c.cache->acquire(bufs[1].data(), page(), t));
  c.cache->release(t);
  REQUIRE(c.cache->acquire(bufs[3].data(), page(), l[3]));
  CHECK(c.reg->deregs == 1);
  CHECK(c.cache->size() == 3);
  CHECK(c.reg->covers(bufs[0].data(), page(), key0));          // held: still there
  CHECK(c.reg->covers(bufs[1].data(), page(), t.lkey));        // recently used: still there
  CHECK_FALSE(c.reg->covers(bufs[2].data(), 1, l[2].lkey));    // the LRU one went
  // Hold the other two as well: nothing can be evicted, so the next buffer is refused.
  REQUIRE(c.cache->acquire(bufs[1].data(), page(), l[1]));
  CHECK_FALSE(c.cache->acquire(bufs[4].data(), page(), l[4]));
  CHECK(c.cache->stats().all_in_use == 1);
  CHECK(c.reg->deregs == 1);
  CHECK(c.reg->live.size() == 3);
  CHECK(c.warnings.empty());  // a full cache is normal, not a warning
  // One released: the next miss evicts exactly it.
  c.cache->release(l[3]);
  REQUIRE(c.cache->acquire(bufs[4].data(), page(), l[4]));
  CHECK(c.reg->deregs == 2);
  CHECK(c.reg->covers(bufs[0].data(), page(), key0));
  c.cache->release(l[0]);
  c.cache->release(l[1]);
  c.cache->release(l[4]);
}

TEST_CASE("mr cache: a refused registration is a copy and one warning naming device and errno") {
  Cache c(4);
  c.reg->fail_next = 3;
  std::vector<char> buf(4 * page());
  MrCache::Lease l;
  CHECK_FALSE(c.cache->acquire(buf.data(), page(), l));
  CHECK_FALSE(c.cache->acquire(buf.data(), page(), l));
  CHECK(c.cache->stats().failures == 2);
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0].find("rank 0: fake0_1 port 1: warning: cannot register a buffer of") !=
        std::string::npos);
  CHECK(c.warnings[0].find("errno 12") != std::string::npos);
  CHECK(c.warnings[0].find("ulimit -l") != std::string::npos);
  // With an unused entry cached, a refusal evicts it and retries once.
  c.reg->fail_next = 0;
  REQUIRE(c.cache->acquire(buf.data() + 2 * page(), page(), l));
  c.cache->release(l);
  c.reg->fail_next = 1;
  MrCache::Lease m;
  REQUIRE(c.cache->acquire(buf.data(), page(), m));
  CHECK(c.reg->deregs == 1);
  CHECK(c.reg->live.size() == 1);
  CHECK(c.warnings.size() == 1);
  c.cache->release(m);
}

TEST_CASE("mr cache: drop forgets overlapping entries, at once or at their last release") {
  Cache c(8);
  PageBuf a(4), b(4);
  MrCache::Lease la, lb;
  REQUIRE(c.cache->acquire(a.data(), a.size(), la));
  REQUIRE(c.cache->acquire(b.data(), b.size(), lb));
  c.cache->release(la);
  CHECK(c.cache->drop(a.data(), a.size()) == 1);  // unused: deregistered now
  CHECK(c.reg->deregs == 1);
  CHECK(c.cache->drop(b.data() + 10, 1) == 1);  // held: leaves the cache, deregistered later
  CHECK(c.cache->size() == 0);
  CHECK(c.reg->deregs == 1);
  // A new send from b registers afresh (it must not reuse the dropped pin).
  MrCache::Lease lb2;
  REQUIRE(c.cache->acquire(b.data(), b.size(), lb2));
  CHECK(lb2.lkey != lb.lkey);
  c.cache->release(lb);
  CHECK(c.reg->deregs == 2);
  CHECK_FALSE(c.reg->covers(b.data(), 1, lb.lkey));
  CHECK(c.reg->covers(b.data(), b.size(), lb2.lkey));
  c.cache->release(lb2);
  CHECK(c.cache->drop(b.data(), b.size()) == 1);
  CHECK(c.reg->live.empty());
}

TEST_CASE("mr cache, per message: the last release deregisters, sends in flight share one") {
  Cache c(2, /*keep=*/false);
  CHECK_FALSE(c.cache->keeps());
  PageBuf a(4), b(4), d(4);
  MrCache::Lease l1, l2, l3;
  // Two sends in flight from the same pages: one registration, shared.
  REQUIRE(c.cache->acquire(a.data(), a.size(), l1));
  REQUIRE(c.cache->acquire(a.data() + page(), page(), l2));
  CHECK(l2.lkey == l1.lkey);
  CHECK(c.reg->regs == 1);
  CHECK(c.cache->stats().hits == 1);
  c.cache->release(l1);
  CHECK(c.reg->deregs == 0);  // still held by the second send
  CHECK(c.reg->covers(a.data(), a.size(), l2.lkey));
  c.cache->release(l2);
  CHECK(c.reg->deregs == 1);  // the last send completed: gone
  CHECK(c.cache->size() == 0);
  CHECK(c.reg->live.empty());
  // The next send from the same buffer registers afresh: whatever memory is there now.
  REQUIRE(c.cache->acquire(a.data(), a.size(), l1));
  CHECK(c.reg->regs == 2);
  CHECK(c.cache->stats().hits == 1);
  // The cap still bounds what is registered at once: two held, a third send copies.
  REQUIRE(c.cache->acquire(b.data(), b.size(), l2));
  CHECK_FALSE(c.cache->acquire(d.data(), d.size(), l3));
  CHECK(c.cache->stats().all_in_use == 1);
  c.cache->release(l2);
  REQUIRE(c.cache->acquire(d.data(), d.size(), l3));
  c.cache->release(l1);
  c.cache->release(l3);
  CHECK(c.reg->live.empty());
  CHECK(c.reg->regs == c.reg->deregs);
  // drop() of a held entry (release_buffer is harmless here): deregistered once, at release.
  REQUIRE(c.cache->acquire(b.data(), b.size(), l2));
  CHECK(c.cache->drop(b.data(), 1) == 1);
  c.cache->release(l2);
  CHECK(c.reg->live.empty());
  CHECK(c.reg->regs == c.reg->deregs);
}

}  // namespace
}  // namespace cc::comm::verbs
