// What every collective algorithm receives, and the list of algorithms. Each algorithm
// lives in its own file that opens with its cost formula, in the notation of
// docs/platform.md#collective-cost-model: n ranks, per-link latency a and bandwidth B each way,
// S bytes per rank, gamma = reduction time per byte.
//
// Conventions shared by all of them: counts in elements, sizes in bytes (size_t, no 2 GiB
// limit); in-place calls pass the same pointer for input and output (reduce_scatter and
// all_gather: the rank's own block of the full buffer); reductions fold contributions in
// rank order 0..n-1, or - for ring algorithms - in a fixed ring order, and one rank computes
// each element's final value, so every rank ends with bit-identical results.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "comm/config.h"
#include "comm/transport/transport.h"
#include "comm/types.h"

namespace cc::comm {

struct Ctx {
  Transport& t;
  int rank;
  int size;
  /// The call's deadline, read from the clock at the first wait (transport.h).
  LazyDeadline deadline;
  const Tuning& tuning;
  /// Scratch memory owned by the communicator; grows, never shrinks.
  std::unique_ptr<std::byte[]>& scratch;
  size_t& scratch_bytes;

  std::byte* get_scratch(size_t bytes);
  /// Elements per pipelining chunk (at least 1).
  size_t chunk_elems(DataType type) const;
};

// all_reduce: in/out hold count elements on every rank.
void all_reduce_one_shot(Ctx& c, const void* in, void* out, size_t count, DataType t, ReduceOp op);
void all_reduce_direct(Ctx& c, const void* in, void* out, size_t count, DataType t, ReduceOp op);
void all_reduce_ring(Ctx& c, const void* in, void* out, size_t count, DataType t, ReduceOp op);
void all_reduce_star(Ctx& c, const void* in, void* out, size_t count, DataType t, ReduceOp op);
void all_reduce_chain(Ctx& c, const void* in, void* out, size_t count, DataType t, ReduceOp op);

// reduce_scatter: in holds size*count elements, out receives this rank's count elements.
void reduce_scatter_direct(Ctx& c, const void* in, void* out, size_t count, DataType t,
                           ReduceOp op);
void reduce_scatter_ring(Ctx& c, const void* in, void* out, size_t count, DataType t, ReduceOp op);

// all_gather: in holds `bytes` on every rank, out receives size*bytes in rank order.
void all_gather_direct(Ctx& c, const void* in, void* out, size_t bytes);
void all_gather_ring(Ctx& c, const void* in, void* out, size_t bytes);

// broadcast: root's buf (bytes) lands in every rank's buf.
void broadcast_direct(Ctx& c, void* buf, size_t bytes, int root);
void broadcast_scatter_gather(Ctx& c, void* buf, size_t bytes, int root);
void broadcast_ring(Ctx& c, void* buf, size_t bytes, int root);

// all_to_all(v): rank r's block for peer p is in_bytes[p] bytes at in + in_off[p]; the block
// from peer p lands at out + out_off[p] (out_bytes[p] bytes, which must equal p's
// in_bytes[r]). Byte offsets and sizes, one per rank; in and out do not overlap.
void all_to_all_direct(Ctx& c, const std::byte* in, std::span<const size_t> in_off,
                       std::span<const size_t> in_bytes, std::byte* out,
                       std::span<const size_t> out_off, std::span<const size_t> out_bytes);

void barrier_all(Ctx& c);

}  // namespace cc::comm
