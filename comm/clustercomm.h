// libclustercomm: collective communication for distributed inference and training.
//
//   cc::comm::Communicator comm = cc::comm::Communicator::from_env();
//   comm.all_reduce(grads.data(), grads.data(), grads.size(), DataType::kF32, ReduceOp::kSum);
//
// Shapes and units: buffers are contiguous host memory; counts are in elements, sizes in
// bytes, both size_t (no 2 GiB limit). In-place calls pass the same pointer as input and
// output (reduce_scatter: out == in + rank*count elements; all_gather: in == out +
// rank*count elements). Results are bit-identical on every rank: reductions fold in a fixed
// order and each element's final value is computed once.
//
// Errors: every call throws cc::comm::Error (comm/error.h). kInvalidArgument (bad count, rank
// or pointer) leaves the communicator usable. Anything else - a timeout (Config::timeout,
// default 30 s, CLUSTERCOMM_TIMEOUT_MS), a lost peer, a protocol mismatch - names the rank(s)
// this rank was waiting for in the message and in Error::ranks(), and breaks the
// communicator: later calls throw kBroken at once. A call can be given up from outside:
// Config::interrupted, asked about every 20 ms while it waits, makes it throw kInterrupted
// (the Python bindings' Ctrl-C). Waiting busy-polls for Tuning::spin
// (200 us; on TCP only for messages <= 64 KiB), then blocks in poll() (on verbs: on the completion
// channels and control connections together, woken by the next completion).
//
// Threads: a communicator is used by one thread at a time. Ranks must call collectives in
// the same order with the same counts, types, ops and roots.
//
// Split communicators (split(), like MPI_Comm_split): a communicator split from another
// reuses the connections of the world it came from (the communicator the constructor or
// from_env() built): no rendezvous, no new socket or queue pair (Apple's RDMA stack allows
// about 10 QPs per device: docs/platform.md). Each communicator has its own message space:
// every message carries its communicator's id (a context: the world's is 0, each split takes
// the next one all its members agree on), and a receive that meets a message of another
// communicator fails with kProtocol naming both, so messages of a parent, its children and
// their siblings never mix silently. The space is kept by checking, not by buffering: between
// two ranks, the calls on the communicators both belong to must come in the same order on
// both (the rule MPI has within one communicator, here across the communicators a pair
// shares). A program that runs the same sequence of calls on every rank, each rank skipping
// the communicators it is not in, keeps it.
//
// Lifetime: the world and every communicator split from it (at any depth) share one
// transport by shared ownership; it closes (waiting for the peers, as the destructor says)
// when the last of them is destroyed, in any order. They also share one broken state: an
// error other than kInvalidArgument in any of them aborts the shared connections, and every
// later call on any of them throws kBroken (the peers' calls fail with kPeerLost as after
// any failure). Threads: the world and its split communicators together are used by one
// thread at a time. Error::ranks() are world ranks; a split communicator's messages name each
// rank in its own numbering too ("rank 1 here").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "comm/config.h"
#include "comm/error.h"
#include "comm/export.h"
#include "comm/types.h"

namespace cc::comm {

class Transport;

/// split()'s color for a rank that joins no new communicator (MPI_UNDEFINED): any negative
/// color means the same.
inline constexpr int kNoColor = -1;

class CLUSTERCOMM_API Communicator {
 public:
  /// Forms the world described by the environment (see config_from_env and README.md);
  /// a world of size 1 when no variable is set. Blocks until every rank has joined.
  /// Throws Error: kTimeout naming the ranks that never arrived, kWorld (size disagreement,
  /// duplicate rank), kAuth (wrong token), kInvalidArgument (malformed variable), kSystem.
  static Communicator from_env();
  explicit Communicator(const Config& config);
  /// A communicator over a transport that is already connected (tests run the collectives
  /// over the verbs frame protocol on fake links this way). transport->rank() and size() must
  /// equal config.rank and config.size; config's topology and tuning apply as given.
  Communicator(const Config& config, std::unique_ptr<Transport> transport);
  /// Waits (up to the timeout) for the peers to close too, so nothing in flight is lost.
  ~Communicator();
  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;

  /// This rank and the number of ranks, in this communicator's numbering; -1 and 0 for an
  /// empty communicator (split() with a negative color).
  int rank() const;
  int size() const;
  /// False for an empty communicator (split() with a negative color), whose every call throws
  /// kInvalidArgument.
  bool valid() const;
  /// The world rank (of the communicator whose connections this one uses) of this
  /// communicator's rank `rank`; the identity on a world.
  int world_rank(int rank) const;
  /// This communicator's message-space id: 0 for a world (see "Split communicators" above).
  uint32_t context() const;
  /// True after a call failed; every later call throws kBroken.
  bool broken() const;
  /// What the calls run on: "tcp", "verbs (apple profile: UC queue pairs)", "verbs (rc
  /// profile: RC queue pairs)", "shm (4 ranks on this host)" when every rank is on this host,
  /// "shm (2 ranks on this host) + tcp" or "shm (2 ranks on this host) + verbs (apple profile:
  /// UC queue pairs)" when some are elsewhere, or "none (world size 1)".
  /// After an automatic fallback to TCP (CLUSTERCOMM_TRANSPORT unset), "tcp".
  std::string transport_name() const;
  /// The job-wide settings rank 0 chose (topology and tuning).
  const Tuning& tuning() const;
  Topology topology() const;

  /// out[i] = in_0[i] op in_1[i] op ... op in_{n-1}[i], on every rank; count elements.
  void all_reduce(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  /// in: size()*count elements; out: count elements = block rank() of the reduction. On a
  /// ring topology (more than 3 ranks) the partial sums wait in scratch memory of the input's
  /// size (size()*count elements, kept by the communicator for later calls).
  void reduce_scatter(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  /// in: count elements; out: size()*count elements, rank i's block at i*count.
  void all_gather(const void* in, void* out, size_t count, DataType type);
  /// Root's in (count elements) lands in every rank's out; in == out is allowed (in is only
  /// read on the root).
  void broadcast(const void* in, void* out, size_t count, DataType type, int root);
  /// Point to point; every send must meet a recv of the same byte count on `peer`, and
  /// messages between two ranks arrive in the order sent.
  void send(const void* buf, size_t bytes, int peer);
  void recv(void* buf, size_t bytes, int peer);
  /// Returns once every rank has entered it.
  void barrier();

  /// Cached zero-copy's contract (Config::ibv_zero_copy = ZeroCopy::kCached,
  /// CLUSTERCOMM_IBV_ZERO_COPY=1): call this on a buffer (or any byte range) you passed to a
  /// send or collective before you free, unmap or reuse its address range for other memory
  /// (per-message zero-copy, Linux's default, keeps nothing: no call needed). Cached, the verbs
  /// transport keeps
  /// its pages registered (pinned) after the call returns so the next send from it needs no
  /// registration; memory that later appears at the same address is not what that
  /// registration holds, and would be sent stale, silently (nothing here hooks free()). This
  /// drops every cached registration overlapping [data, data + bytes) (one still in use by a
  /// send in flight goes when that send completes). Local: not collective, no communication,
  /// cheap when nothing is cached. Any communicator of the same world does (they share the
  /// transport); a no-op on other transports, without cached zero-copy, on an empty or a broken
  /// communicator. Never throws.
  void release_buffer(const void* data, size_t bytes) noexcept;

  /// in: size()*count elements, the block for rank p at p*count; out: size()*count elements,
  /// rank p's block for this rank at p*count. Every block is count elements (count may be 0).
  /// in == out is allowed (in place: the input is first copied to scratch memory, one extra
  /// copy of size()*count elements); other overlaps of in and out are kInvalidArgument.
  /// Every peer at once (algorithms/all_to_all.cc): on a mesh only; on a ring topology of more
  /// than 3 ranks (where not every pair is cabled) it throws kInvalidArgument.
  void all_to_all(const void* in, void* out, size_t count, DataType type);
  /// Per-peer blocks, like MPI_Alltoallv: the block for rank p is in_counts[p] elements at
  /// element offset in_displs[p] of in; rank p's block lands at element offset out_displs[p]
  /// of out and is out_counts[p] elements, which must equal rank p's in_counts[rank()] (else
  /// kProtocol naming p, which breaks the communicator). Counts may be 0 (a header still
  /// travels, so a disagreement is found at once). Each of the four spans has size() entries.
  /// kInvalidArgument, naming the bad value: a span of another length, in_counts[rank()] !=
  /// out_counts[rank()], an offset + count that overflows, a null buffer that has elements,
  /// two out blocks that overlap, or in and out overlapping (not in place: use two buffers).
  /// In blocks may overlap (they are only read). Mesh only, as all_to_all.
  void all_to_allv(const void* in, std::span<const size_t> in_counts,
                   std::span<const size_t> in_displs, void* out, std::span<const size_t> out_counts,
                   std::span<const size_t> out_displs, DataType type);

  /// Collective over this communicator (MPI_Comm_split): returns a communicator of the ranks
  /// that passed the same color, ranked by (key, this communicator's rank). A negative color
  /// (kNoColor) returns an empty communicator (valid() false) on that rank; every rank still
  /// calls split. The new communicator reuses this one's connections, has its own message
  /// space, the same timeout, tuning and Config::interrupted, and shares the lifetime and the
  /// broken state (see "Split communicators" above). Cost: one all_gather of 24 bytes per
  /// rank. Throws kInvalidArgument on an empty communicator and on a ring topology of more
  /// than 3 ranks (not every pair is cabled there); otherwise as all_gather.
  Communicator split(int color, int key);

 private:
  struct Impl;
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cc::comm
