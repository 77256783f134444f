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
#pragma once

#include <cstddef>
#include <memory>

#include "comm/config.h"
#include "comm/error.h"
#include "comm/export.h"
#include "comm/types.h"

namespace cc::comm {

class Transport;

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

  int rank() const;
  int size() const;
  /// True after a call failed; every later call throws kBroken.
  bool broken() const;
  /// What the calls run on: "tcp", "verbs (apple profile: UC queue pairs)", "verbs (rc
  /// profile: RC queue pairs)", or "none (world size 1)". After an automatic fallback to TCP
  /// (CLUSTERCOMM_TRANSPORT unset), "tcp".
  std::string transport_name() const;
  /// The job-wide settings rank 0 chose (topology and tuning).
  const Tuning& tuning() const;
  Topology topology() const;

  /// out[i] = in_0[i] op in_1[i] op ... op in_{n-1}[i], on every rank; count elements.
  void all_reduce(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  /// in: size()*count elements; out: count elements = block rank() of the reduction.
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

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cc::comm
