#include "comm/transport/group_transport.h"

#include <string>
#include <utility>

#include "comm/error.h"

namespace cc::comm {

GroupTransport::GroupTransport(Transport& world, std::vector<int> world_ranks, int rank)
    : world_(world), world_ranks_(std::move(world_ranks)), rank_(rank) {}

int GroupTransport::world_rank(int peer) const {
  if (peer < 0 || peer >= size() || peer == rank_) {
    throw Error(ErrorKind::kInvalidArgument, "bad peer " + std::to_string(peer) +
                                                 " in a communicator of size " +
                                                 std::to_string(size()));
  }
  return world_ranks_[static_cast<size_t>(peer)];
}

void GroupTransport::isend(int peer, const void* data, size_t bytes, Request& req) {
  world_.isend(world_rank(peer), data, bytes, req);
}

void GroupTransport::irecv(int peer, void* data, size_t bytes, Request& req) {
  world_.irecv(world_rank(peer), data, bytes, req);
}

void GroupTransport::abort(int failed_rank) noexcept {
  const bool known = failed_rank >= 0 && failed_rank < size();
  world_.abort(known ? world_ranks_[static_cast<size_t>(failed_rank)] : -1);
}

}  // namespace cc::comm
