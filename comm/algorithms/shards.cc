#include "comm/algorithms/shards.h"

#include <algorithm>

#include "comm/algorithms/algorithm.h"

namespace cc::comm {

Shards make_shards(size_t count, size_t n) {
  Shards s;
  s.off.resize(n);
  s.len.resize(n);
  const size_t base = count / n, extra = count % n;
  size_t off = 0;
  for (size_t i = 0; i < n; ++i) {
    s.off[i] = off;
    s.len[i] = base + (i < extra ? 1 : 0);
    off += s.len[i];
  }
  return s;
}

std::byte* Ctx::get_scratch(size_t bytes) {
  if (bytes > scratch_bytes) {
    // Zero-copy sends may have registered the old scratch: forget it before it is freed.
    if (scratch) t.release_buffer(scratch.get(), scratch_bytes);
    scratch.reset(new std::byte[bytes]);
    scratch_bytes = bytes;
  }
  return scratch.get();
}

size_t Ctx::chunk_elems(DataType type) const {
  return std::max<size_t>(1, tuning.chunk_bytes / size_of(type));
}

}  // namespace cc::comm
