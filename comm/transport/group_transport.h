// GroupTransport: the transport of a communicator split from another (Communicator::split): a
// view of some of the world's ranks over the world's transport. It opens no connection and
// no queue pair; it renumbers peers (the group's rank i is world rank world_ranks[i]) and
// forwards every call to the shared transport. The message space is kept apart by the
// communicator, which sets the shared transport's context (Transport::set_context) before
// each call.
//
// Requests are the shared transport's: Request::peer, and the ranks a wait() error names,
// are world ranks.
#pragma once

#include <vector>

#include "comm/transport/transport.h"

namespace cc::comm {

class GroupTransport final : public Transport {
 public:
  /// `world` must outlive this view. world_ranks: the group's ranks in world numbering, in
  /// group order; `rank` is this rank's index in it.
  GroupTransport(Transport& world, std::vector<int> world_ranks, int rank);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(world_ranks_.size()); }
  void isend(int peer, const void* data, size_t bytes, Request& req) override;
  void irecv(int peer, void* data, size_t bytes, Request& req) override;
  bool irecv_reduce(int peer, void* dst, size_t bytes, const Fold& fold, Request& req) override {
    return world_.irecv_reduce(world_rank(peer), dst, bytes, fold, req);
  }
  void wait(Request& req, Deadline deadline) override { world_.wait(req, deadline); }
  void poll() override { world_.poll(); }
  /// The world's: the group's ranks share the cores with the rest of the world.
  bool crowded() const override { return world_.crowded(); }
  bool messages_are_copies() const override { return world_.messages_are_copies(); }
  unsigned ranks_per_core() const override { return world_.ranks_per_core(); }
  void release_buffer(const void* data, size_t bytes) noexcept override {
    world_.release_buffer(data, bytes);
  }
  /// Aborts the shared transport: every communicator over it breaks. failed_rank is a group
  /// rank (or -1).
  void abort(int failed_rank) noexcept override;

 private:
  int world_rank(int peer) const;

  Transport& world_;
  std::vector<int> world_ranks_;
  int rank_;
};

}  // namespace cc::comm
