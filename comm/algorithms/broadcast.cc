// Broadcast from `root`.
// Direct: the root sends the whole buffer to every rank at once.
//   Cost: a + S/B with a link per peer; a + (n-1)S/B when the root has one shared link.
// Scatter then all-gather (n >= 3, large S): the root sends shard i (S/(n-1)) to each
// non-root rank, which forwards each chunk to the other non-root ranks as soon as it arrives
// (pipelined), so the root's egress drops from (n-1)S to S.
//   Cost: 2a + 2S/((n-1)B) with a link per peer; 2a + S/B + (n-2)S/((n-1)B) on one shared
//   link per rank. Chosen for n >= 3 and S >= 256 KiB.
#include <vector>

#include "comm/algorithms/algorithm.h"
#include "comm/algorithms/shards.h"

namespace cc::comm {

void broadcast_direct(Ctx& c, void* buf, size_t bytes, int root) {
  const int n = c.size;
  if (c.rank == root) {
    std::vector<Request> sends(static_cast<size_t>(n));
    for (int d = 1; d < n; ++d) {
      const int p = (root + d) % n;
      c.t.isend(p, buf, bytes, sends[static_cast<size_t>(p)]);
    }
    wait_all(c.t, sends, c.deadline);
  } else {
    Request req;
    c.t.irecv(root, buf, bytes, req);
    c.t.wait(req, c.deadline);
  }
}

void broadcast_scatter_gather(Ctx& c, void* buf, size_t bytes, int root) {
  const size_t n = static_cast<size_t>(c.size), r = static_cast<size_t>(c.rank);
  const size_t m = n - 1;  // shards, one per non-root rank
  const Shards s = make_shards(bytes, m);
  const size_t C = std::max<size_t>(1, c.tuning.chunk_bytes);
  auto* b = static_cast<std::byte*>(buf);
  auto shard_of = [&](size_t p) { return mod(static_cast<long long>(p) - root - 1, c.size); };
  if (c.rank == root) {
    std::vector<Request> sends;
    size_t total = 0;
    for (size_t i = 0; i < m; ++i) total += num_chunks(s.len[i], C);
    sends.resize(total);
    size_t si = 0;
    for (size_t d = 1; d < n; ++d) {
      const size_t p = (r + d) % n, i = shard_of(p);
      for (size_t ch = 0; ch < num_chunks(s.len[i], C); ++ch) {
        c.t.isend(static_cast<int>(p), b + s.off[i] + ch * C, chunk_len(s.len[i], C, ch),
                  sends[si++]);
      }
    }
    wait_all(c.t, sends, c.deadline);
    return;
  }
  const size_t mine = shard_of(r), km = num_chunks(s.len[mine], C);
  std::vector<Request> own(km), sends(km * (m - 1)), recvs;
  size_t total = 0;
  for (size_t p = 0; p < n; ++p) {
    if (p != r && static_cast<int>(p) != root) total += num_chunks(s.len[shard_of(p)], C);
  }
  recvs.resize(total);
  for (size_t ch = 0; ch < km; ++ch) {
    c.t.irecv(root, b + s.off[mine] + ch * C, chunk_len(s.len[mine], C, ch), own[ch]);
  }
  size_t ri = 0;
  for (size_t p = 0; p < n; ++p) {
    if (p == r || static_cast<int>(p) == root) continue;
    const size_t i = shard_of(p);
    for (size_t ch = 0; ch < num_chunks(s.len[i], C); ++ch) {
      c.t.irecv(static_cast<int>(p), b + s.off[i] + ch * C, chunk_len(s.len[i], C, ch),
                recvs[ri++]);
    }
  }
  size_t si = 0;
  for (size_t ch = 0; ch < km; ++ch) {
    c.t.wait(own[ch], c.deadline);
    for (size_t d = 1; d < n; ++d) {
      const size_t p = (r + d) % n;
      if (static_cast<int>(p) == root) continue;
      c.t.isend(static_cast<int>(p), b + s.off[mine] + ch * C, chunk_len(s.len[mine], C, ch),
                sends[si++]);
    }
  }
  wait_all(c.t, recvs, c.deadline);
  wait_all(c.t, sends, c.deadline);
}

}  // namespace cc::comm
