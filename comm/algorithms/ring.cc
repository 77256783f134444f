// Pipelined ring algorithms, for when only a ring is cabled (Topology::kRing): each rank
// talks to its left (r-1) and right (r+1) neighbours only.
//
// Reduce-scatter: n-1 steps; at step s rank r passes the partial sum of shard r-s-1 to the
// right and folds its own contribution into shard r-s-2 from the left. A chunk is forwarded as
// soon as it is folded, so consecutive steps overlap (pipelining); shard q accumulates in
// ring order x_{q+1}, x_{q+2}, ..., x_q and ends on rank q. All-gather: n-1 steps passing
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

// partial_full: where intermediate partial sums go (the all-reduce output), or nullptr to
// fold them inside the receive slots (reduce_scatter: the output holds only shard r).
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
  std::byte* scratch = c.get_scratch(W * C * e);
  auto slot = [&](size_t m) { return scratch + (m % W) * C * e; };
  auto bytes_of = [&](const Msg& m) { return chunk_len(s.len[m.shard], C, m.chunk) * e; };
  std::vector<Request> recvs(W), sends(total_sends);
  std::vector<size_t> send_of(M, SIZE_MAX);  // message -> index of its forwarding send
  for (size_t m = 0; m < W && m < M; ++m) c.t.irecv(left, slot(m), bytes_of(msgs[m]), recvs[m]);
  size_t si = 0;
  {
    const size_t q = mod(r - 1, n);
    for (size_t ch = 0; ch < num_chunks(s.len[q], C); ++ch) {
      c.t.isend(right, in + (s.off[q] + ch * C) * e, chunk_len(s.len[q], C, ch) * e, sends[si++]);
    }
  }
  const size_t last_step = static_cast<size_t>(n - 2);
  for (size_t m = 0; m < M; ++m) {
    const Msg& g = msgs[m];
    c.t.wait(recvs[m % W], c.deadline);
    const size_t elems = chunk_len(s.len[g.shard], C, g.chunk);
    std::byte* dst;
    if (g.step == last_step) {
      dst = out_r + g.chunk * C * e;
    } else if (partial_full != nullptr) {
      dst = partial_full + (s.off[g.shard] + g.chunk * C) * e;
    } else {
      dst = slot(m);
    }
    const void* srcs[2] = {slot(m), in + (s.off[g.shard] + g.chunk * C) * e};
    reduce(t, op, dst, srcs, 2, elems);
    if (g.step != last_step) {
      send_of[m] = si;
      c.t.isend(right, dst, elems * e, sends[si++]);
    }
    const size_t next = m + W;
    if (next < M) {
      if (partial_full == nullptr && send_of[m] != SIZE_MAX)
        c.t.wait(sends[send_of[m]], c.deadline);
      c.t.irecv(left, slot(next), bytes_of(msgs[next]), recvs[next % W]);
    }
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
