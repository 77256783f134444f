// Pipelined ring algorithms, for when only a ring is cabled (Topology::kRing): each rank
// talks to its left (r-1) and right (r+1) neighbours only.
//
// Reduce-scatter: n-1 steps; at step s rank r passes the partial sum of shard r-s-1 to the
// right and folds its own contribution into shard r-s-2 from the left. A chunk is forwarded as
// soon as it is folded, so consecutive steps overlap (pipelining); shard q accumulates in
// ring order x_{q+1}, x_{q+2}, ..., x_q and ends on rank q. Over verbs and shared memory the
// partial sum from the left is folded straight out of the receive frames or rings
// (Transport::irecv_reduce). Partial
// sums are kept until forwarded: in the all-reduce's output, in reduce_scatter's scratch of
// the input's size (S bytes besides the window's slots). All-gather: n-1 steps passing
// finished shards to the right. Broadcast: a chain root -> root+1 -> ... in chunks.
//
// Cost (docs/platform.md#collective-cost-model): all-reduce 2(n-1)a + 2(n-1)/n S/B (+ (n-1)/n S
// gamma, overlapped); reduce-scatter and all-gather (n-1)a + (n-1)/n S/B; broadcast (n-1)a + S/B +
// (chunks-1) chunk/B. Strictly worse than the direct algorithms on a mesh, optimal on a ring.
#include <cstdint>
#include <cstring>
#include <vector>

#include "comm/algorithms/algorithm.h"
#include "comm/algorithms/shards.h"
#include "comm/reduce.h"

namespace cc::comm {
namespace {

struct Msg {
  size_t step, shard, chunk;
};

// partial_full: where intermediate partial sums go (the all-reduce output), or nullptr for a
// scratch buffer of the whole input's size (reduce_scatter: the output holds only shard r).
// Not the receive slots: a slot could be reused only once the partial sum in it had been
// forwarded, and that send waits behind this rank's first shard (all of it is queued at the
// start) until the right neighbour takes it, which that neighbour does only as fast as its
// own slots free up: on a transport that buffers less than a shard (verbs: its receive
// frames) every rank waited on its right neighbour, around the ring, until the timeout.
void ring_reduce_scatter(Ctx& c, const std::byte* in, const Shards& s, std::byte* partial_full,
                         std::byte* out_r, DataType t, ReduceOp op) {
  const int n = c.size, r = c.rank;
  const int left = static_cast<int>(mod(r - 1, n)), right = static_cast<int>(mod(r + 1, n));
  const size_t e = size_of(t), C = c.chunk_elems(t);
  std::vector<Msg> msgs;
  size_t total_sends = num_chunks(s.len[mod(r - 1, n)], C);
  for (int st = 0; st + 1 < n; ++st) {
    const size_t q = mod(r - st - 2, n);
    for (size_t ch = 0; ch < num_chunks(s.len[q], C); ++ch) {
      msgs.push_back(Msg{static_cast<size_t>(st), q, ch});
    }
    if (st + 2 < n) total_sends += num_chunks(s.len[q], C);
  }
  const size_t M = msgs.size();
  const size_t W = std::max<size_t>(1, std::min(c.tuning.window_chunks, M));
  const size_t total = (s.off[static_cast<size_t>(n - 1)] + s.len[static_cast<size_t>(n - 1)]) * e;
  std::byte* scratch = c.get_scratch(W * C * e + (partial_full == nullptr ? total : 0));
  if (partial_full == nullptr) partial_full = scratch + W * C * e;
  auto slot = [&](size_t m) { return scratch + (m % W) * C * e; };
  auto bytes_of = [&](const Msg& m) { return chunk_len(s.len[m.shard], C, m.chunk) * e; };
  std::vector<Request> recvs(W), sends(total_sends);
  const size_t last_step = static_cast<size_t>(n - 2);
  auto dst_of = [&](size_t m) {
    const Msg& g = msgs[m];
    return g.step == last_step ? out_r + g.chunk * C * e
                               : partial_full + (s.off[g.shard] + g.chunk * C) * e;
  };
  auto own_of = [&](const Msg& g) { return in + (s.off[g.shard] + g.chunk * C) * e; };
  // The partial sum from the left is folded into dst as its pieces arrive where the transport
  // can (Transport::irecv_reduce: verbs from its receive frames, shared memory from its rings),
  // in reduce()'s order below.
  // 1: folding, 0: not, -1: not asked yet.
  int folding = -1;
  auto post_recv = [&](size_t m) {
    if (folding != 0) {
      const Fold f{t, op, own_of(msgs[m]), true};
      if (c.t.irecv_reduce(left, dst_of(m), bytes_of(msgs[m]), f, recvs[m % W])) {
        folding = 1;
        return;
      }
      folding = 0;
    }
    c.t.irecv(left, slot(m), bytes_of(msgs[m]), recvs[m % W]);
  };
  for (size_t m = 0; m < W && m < M; ++m) post_recv(m);
  size_t si = 0;
  {
    const size_t q = mod(r - 1, n);
    for (size_t ch = 0; ch < num_chunks(s.len[q], C); ++ch) {
      c.t.isend(right, in + (s.off[q] + ch * C) * e, chunk_len(s.len[q], C, ch) * e, sends[si++]);
    }
  }
  for (size_t m = 0; m < M; ++m) {
    const Msg& g = msgs[m];
    c.t.wait(recvs[m % W], c.deadline);
    const size_t elems = chunk_len(s.len[g.shard], C, g.chunk);
    std::byte* dst = dst_of(m);
    if (folding != 1) {
      const void* srcs[2] = {slot(m), own_of(g)};
      reduce(t, op, dst, srcs, 2, elems);
    }
    if (g.step != last_step) {
      c.t.isend(right, dst, elems * e, sends[si++]);
    }
    if (m + W < M) post_recv(m + W);
  }
  wait_all(c.t, sends, c.deadline);
}

// Rank r holds shard r of `out` (element size e); afterwards every rank holds all shards.
void ring_all_gather(Ctx& c, std::byte* out, const Shards& s, size_t e, size_t C) {
  const int n = c.size, r = c.rank;
  const int left = static_cast<int>(mod(r - 1, n)), right = static_cast<int>(mod(r + 1, n));
  std::vector<Msg> msgs;
  size_t total_sends = num_chunks(s.len[static_cast<size_t>(r)], C);
  for (int st = 0; st + 1 < n; ++st) {
    const size_t q = mod(r - st - 1, n);
    for (size_t ch = 0; ch < num_chunks(s.len[q], C); ++ch) {
      msgs.push_back(Msg{static_cast<size_t>(st), q, ch});
    }
    if (st + 2 < n) total_sends += num_chunks(s.len[q], C);
  }
  std::vector<Request> recvs(msgs.size()), sends(total_sends);
  auto at = [&](const Msg& m) { return out + (s.off[m.shard] + m.chunk * C) * e; };
  auto bytes_of = [&](const Msg& m) { return chunk_len(s.len[m.shard], C, m.chunk) * e; };
  for (size_t m = 0; m < msgs.size(); ++m)
    c.t.irecv(left, at(msgs[m]), bytes_of(msgs[m]), recvs[m]);
  size_t si = 0;
  const size_t own = static_cast<size_t>(r);
  for (size_t ch = 0; ch < num_chunks(s.len[own], C); ++ch) {
    c.t.isend(right, out + (s.off[own] + ch * C) * e, chunk_len(s.len[own], C, ch) * e,
              sends[si++]);
  }
  for (size_t m = 0; m < msgs.size(); ++m) {
    c.t.wait(recvs[m], c.deadline);
    if (msgs[m].step + 2 < static_cast<size_t>(n)) {
      c.t.isend(right, at(msgs[m]), bytes_of(msgs[m]), sends[si++]);
    }
  }
  wait_all(c.t, sends, c.deadline);
}

}  // namespace

void all_reduce_ring(Ctx& c, const void* in, void* out, size_t count, DataType t, ReduceOp op) {
  const Shards s = make_shards(count, static_cast<size_t>(c.size));
  auto* o = static_cast<std::byte*>(out);
  const size_t e = size_of(t);
  ring_reduce_scatter(c, static_cast<const std::byte*>(in), s, o,
                      o + s.off[static_cast<size_t>(c.rank)] * e, t, op);
  ring_all_gather(c, o, s, e, c.chunk_elems(t));
}

void reduce_scatter_ring(Ctx& c, const void* in, void* out, size_t count, DataType t, ReduceOp op) {
  const Shards s = make_shards(count * static_cast<size_t>(c.size), static_cast<size_t>(c.size));
  ring_reduce_scatter(c, static_cast<const std::byte*>(in), s, nullptr,
                      static_cast<std::byte*>(out), t, op);
}

void all_gather_ring(Ctx& c, const void* in, void* out, size_t bytes) {
  const Shards s = make_shards(bytes * static_cast<size_t>(c.size), static_cast<size_t>(c.size));
  auto* o = static_cast<std::byte*>(out);
  std::byte* own = o + s.off[static_cast<size_t>(c.rank)];
  if (own != in && bytes > 0) std::memcpy(own, in, bytes);
  ring_all_gather(c, o, s, 1, std::max<size_t>(1, c.tuning.chunk_bytes));
}

void broadcast_ring(Ctx& c, void* buf, size_t bytes, int root) {
  const int n = c.size, r = c.rank;
  const int left = static_cast<int>(mod(r - 1, n)), right = static_cast<int>(mod(r + 1, n));
  const size_t C = std::max<size_t>(1, c.tuning.chunk_bytes);
  const size_t k = num_chunks(bytes, C);
  auto* b = static_cast<std::byte*>(buf);
  const bool forwards = right != root;
  std::vector<Request> recvs(r == root ? 0 : k), sends(forwards ? k : 0);
  if (r == root) {
    for (size_t ch = 0; ch < k; ++ch)
      c.t.isend(right, b + ch * C, chunk_len(bytes, C, ch), sends[ch]);
  } else {
    for (size_t ch = 0; ch < k; ++ch)
      c.t.irecv(left, b + ch * C, chunk_len(bytes, C, ch), recvs[ch]);
    for (size_t ch = 0; ch < k; ++ch) {
      c.t.wait(recvs[ch], c.deadline);
      if (forwards) c.t.isend(right, b + ch * C, chunk_len(bytes, C, ch), sends[ch]);
    }
  }
  wait_all(c.t, sends, c.deadline);
}

}  // namespace cc::comm
