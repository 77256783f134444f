// Direct all-reduce: a reduce-scatter then an all-gather, both over all links at once.
// Rank r owns shard r (S/n bytes). Phase 1: every rank sends shard q of its input straight to
// rank q; rank r folds the n contributions to shard r in rank order. Phase 2: rank r sends its
// reduced shard straight to every rank. Both phases are chunked (Tuning::chunk_bytes): a chunk
// is reduced as soon as all its contributions arrived and is sent on at once, so reduction
// and transfer overlap; receives are posted a window of chunks ahead (bounded scratch:
// (n-1) * window * chunk bytes). At n = 2 over verbs or shared memory the peer's chunks are
// folded straight out of the receive frames or rings (Transport::irecv_reduce) instead.
//
// Cost: 2a + 2(n-1)S/(nB) on one shared link, or 2a + 2S/(nB) with a link per peer (full
// mesh) - the lower bound of docs/platform.md#collective-cost-model - plus (n-1)S/n gamma of
// reduction, overlapped.
// A ring needs 2(n-1)a for the same bytes, so on a mesh this is strictly better.
#include "comm/algorithms/direct.h"

#include <vector>

#include "comm/reduce.h"

namespace cc::comm {

void direct_reduce_scatter(Ctx& c, const std::byte* in, const Shards& s, std::byte* out_r,
                           DataType t, ReduceOp op, std::byte* gather_out) {
  const size_t n = static_cast<size_t>(c.size), r = static_cast<size_t>(c.rank);
  const size_t e = size_of(t), C = c.chunk_elems(t);
  std::vector<size_t> k(n);  // chunks per shard
  size_t total_send = 0, total_gather = 0;
  for (size_t q = 0; q < n; ++q) {
    k[q] = num_chunks(s.len[q], C);
    if (q != r) {
      total_send += k[q];
      total_gather += k[q];
    }
  }
  const size_t kr = k[r];
  const size_t W = std::max<size_t>(1, std::min(c.tuning.window_chunks, kr));
  std::byte* scratch = c.get_scratch(n * W * C * e);
  auto slot = [&](size_t p, size_t chunk) { return scratch + ((p * W) + chunk % W) * C * e; };
  auto bytes_of = [&](size_t q, size_t chunk) { return chunk_len(s.len[q], C, chunk) * e; };

  std::vector<Request> recv1(n * W), send1(total_send);
  std::vector<Request> send2(gather_out ? kr * (n - 1) : 0), recv2(gather_out ? total_gather : 0);
  bool gather_posted = false;
  auto post_gather_recvs = [&] {
    if (!gather_out || gather_posted) return;
    gather_posted = true;
    size_t i = 0;
    for (size_t p = 0; p < n; ++p) {
      if (p == r) continue;
      for (size_t ch = 0; ch < k[p]; ++ch) {
        c.t.irecv(static_cast<int>(p), gather_out + (s.off[p] + ch * C) * e, bytes_of(p, ch),
                  recv2[i++]);
      }
    }
  };

  // n = 2: the peer's chunk is folded into dst as its pieces arrive where the transport can
  // (Transport::irecv_reduce: verbs from its receive frames, shared memory from its rings),
  // rank 0's contribution first as reduce() below would take it; no scratch slot, no copy.
  // 1: folding, 0: not, -1: not asked.
  int folding = n == 2 ? -1 : 0;
  auto post_recv1 = [&](size_t p, size_t ch) {
    Request& q = recv1[p * W + ch % W];
    if (folding != 0) {
      const Fold f{t, op, in + (s.off[r] + ch * C) * e, p < r};
      if (c.t.irecv_reduce(static_cast<int>(p), out_r + ch * C * e, bytes_of(r, ch), f, q)) {
        folding = 1;
        return;
      }
      folding = 0;
    }
    c.t.irecv(static_cast<int>(p), slot(p, ch), bytes_of(r, ch), q);
  };
  for (size_t p = 0; p < n; ++p) {
    if (p == r) continue;
    for (size_t ch = 0; ch < W && ch < kr; ++ch) post_recv1(p, ch);
  }
  if (kr <= W) post_gather_recvs();
  {
    size_t i = 0;
    for (size_t d = 1; d < n; ++d) {  // rank r+1 first, so ranks do not all queue on rank 0
      const size_t p = (r + d) % n;
      for (size_t ch = 0; ch < k[p]; ++ch) {
        c.t.isend(static_cast<int>(p), in + (s.off[p] + ch * C) * e, bytes_of(p, ch), send1[i++]);
      }
    }
  }
  std::vector<const void*> srcs(n);
  for (size_t ch = 0; ch < kr; ++ch) {
    for (size_t p = 0; p < n; ++p) {
      if (p != r) c.t.wait(recv1[p * W + ch % W], c.deadline);
    }
    std::byte* dst = out_r + ch * C * e;
    if (folding != 1) {
      for (size_t q = 0; q < n; ++q) {
        srcs[q] = q == r ? static_cast<const void*>(in + (s.off[r] + ch * C) * e) : slot(q, ch);
      }
      reduce(t, op, dst, srcs.data(), n, chunk_len(s.len[r], C, ch));
    }
    if (gather_out) {
      for (size_t d = 1; d < n; ++d) {
        const size_t p = (r + d) % n;
        c.t.isend(static_cast<int>(p), dst, bytes_of(r, ch), send2[ch * (n - 1) + d - 1]);
      }
    }
    const size_t next = ch + W;
    if (next < kr) {
      for (size_t p = 0; p < n; ++p) {
        if (p != r) post_recv1(p, next);
      }
      if (next + 1 == kr) post_gather_recvs();
    }
  }
  post_gather_recvs();
  wait_all(c.t, send1, c.deadline);
  wait_all(c.t, recv2, c.deadline);
  wait_all(c.t, send2, c.deadline);
}

void all_reduce_direct(Ctx& c, const void* in, void* out, size_t count, DataType t, ReduceOp op) {
  const Shards s = make_shards(count, static_cast<size_t>(c.size));
  auto* o = static_cast<std::byte*>(out);
  direct_reduce_scatter(c, static_cast<const std::byte*>(in), s,
                        o + s.off[static_cast<size_t>(c.rank)] * size_of(t), t, op, o);
}

}  // namespace cc::comm
