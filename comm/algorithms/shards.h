// Splitting a buffer of `count` elements into n balanced shards (the first count % n shards
// one element longer) and shards into pipelining chunks. Every rank computes the same split
// from the same arguments, which is what lets messages go without headers describing them.
#pragma once

#include <cstddef>
#include <vector>

namespace cc::comm {

struct Shards {
  std::vector<size_t> off;  // first element of each shard
  std::vector<size_t> len;  // elements in each shard
};

Shards make_shards(size_t count, size_t n);

/// Number of chunks of `chunk` elements covering `len` elements (0 for len 0).
inline size_t num_chunks(size_t len, size_t chunk) {
  return (len + chunk - 1) / chunk;
}
/// Length of chunk `c` of a shard of `len` elements.
inline size_t chunk_len(size_t len, size_t chunk, size_t c) {
  const size_t start = c * chunk;
  return len - start < chunk ? len - start : chunk;
}

inline size_t mod(long long x, int n) {
  const long long m = x % n;
  return static_cast<size_t>(m < 0 ? m + n : m);
}

}  // namespace cc::comm
