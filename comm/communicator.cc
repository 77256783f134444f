// Communicator: argument checks, algorithm choice, the broken state, split communicators (a
// GroupTransport view of the world's transport and a context id; clustercomm.h, "Split
// communicators"). The algorithms are in algorithms/, the wire in transport/, world formation
// in rendezvous/.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "comm/algorithms/algorithm.h"
#include "comm/clustercomm.h"
#include "comm/reduce.h"
#include "comm/rendezvous/bootstrap.h"
#include "comm/transport/group_transport.h"
#include "comm/transport/select.h"
#include "comm/transport/shm/shm_transport.h"
#include "comm/transport/transport.h"
#include "comm/transport/verbs/verbs_transport.h"

namespace cc::comm {

// What a world and every communicator split from it share: the connections, the broken
// state, and the next message-space id this rank may hand out.
struct SharedWorld {
  std::unique_ptr<Transport> transport;
  bool broken = false;
  std::string broken_why;
  uint32_t next_context = 1;
  /// Hierarchical all_reduce (world communicator only): set when the world spans several
  /// hosts and some host has several ranks, unless the job is TCP only. host: this host's
  /// ranks (context kHostContext); leaders: the lowest rank of every host (kLeadersContext),
  /// present on leaders only.
  std::unique_ptr<GroupTransport> host;
  std::unique_ptr<GroupTransport> leaders;
};

// Message spaces of the hierarchical all_reduce's two views: far above the ids split hands
// out (1, 2, ...), and distinct modulo 2^16 (the verbs frame carries 16 bits of it).
constexpr uint32_t kHostContext = 0xfffffff0u;
constexpr uint32_t kLeadersContext = 0xfffffff1u;
// A crowded shared-memory world takes a small all-reduce one-shot while each rank receives at
// most this many bytes in all ((n - 1) x the message; see all_reduce below).
constexpr size_t kCrowdedOneShotMaxBytes = 4096;

namespace {

// The views SharedWorld::host and ::leaders for this rank, from every rank's host (as the
// lowest rank on it). Leaves both empty when the all_reduce stays flat.
void plan_hierarchy(SharedWorld& w, const Config& cfg, const std::vector<int>& host_of,
                    Topology topology) {
  if (cfg.transport == TransportKind::kTcp || topology != Topology::kMesh) return;
  std::vector<int> mine, leaders;
  size_t biggest = 0;
  for (size_t r = 0; r < host_of.size(); ++r) {
    const int h = host_of[r];
    if (h == static_cast<int>(r)) leaders.push_back(h);
    if (h == host_of[static_cast<size_t>(cfg.rank)]) mine.push_back(static_cast<int>(r));
    biggest = std::max(biggest, static_cast<size_t>(
                                    std::count(host_of.begin(), host_of.end(), h)));
  }
  if (leaders.size() < 2 || biggest < 2) return;
  const auto index_of = [](const std::vector<int>& v, int r) {
    return static_cast<int>(std::find(v.begin(), v.end(), r) - v.begin());
  };
  w.host = std::make_unique<GroupTransport>(*w.transport, mine, index_of(mine, cfg.rank));
  if (mine.front() == cfg.rank) {
    w.leaders =
        std::make_unique<GroupTransport>(*w.transport, leaders, index_of(leaders, cfg.rank));
  }
}

}  // namespace

struct Communicator::Impl {
  Config config;  // rank and size in this communicator's numbering
  JobSettings settings;
  std::shared_ptr<SharedWorld> world = std::make_shared<SharedWorld>();
  std::unique_ptr<Transport> group;  // a split communicator's view of world->transport
  std::vector<int> world_ranks;      // this communicator's ranks in world numbering (split)
  uint32_t context = 0;
  std::unique_ptr<std::byte[]> scratch;
  size_t scratch_bytes = 0;

  // Zero-copy sends may have registered the scratch memory (all_to_all in place sends from
  // it): the shared transport must forget it before it is freed (it may outlive this
  // communicator).
  ~Impl() {
    if (scratch && world && world->transport) {
      world->transport->release_buffer(scratch.get(), scratch_bytes);
    }
  }
  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  bool ring() const { return settings.topology == Topology::kRing && config.size > 3; }
  Transport& transport() { return group ? *group : *world->transport; }
  int world_rank(int r) const {
    return world_ranks.empty() ? r : world_ranks[static_cast<size_t>(r)];
  }

  // " of communicator 3 (world rank 2)" after this rank's number in a split communicator's
  // messages.
  std::string where() const {
    if (world_ranks.empty()) return "";
    return " of communicator " + std::to_string(context) + " (world rank " +
           std::to_string(world_rank(config.rank)) + ")";
  }
  // A split communicator's translation of the world ranks an error names.
  std::string numbering(const std::vector<int>& ranks) const {
    if (world_ranks.empty() || ranks.empty()) return "";
    std::string s;
    for (int w : ranks) {
      s += s.empty() ? "; here " : ", ";
      size_t i = 0;
      while (i < world_ranks.size() && world_ranks[i] != w) ++i;
      s += "world rank " + std::to_string(w) +
           (i < world_ranks.size() ? " is rank " + std::to_string(i)
                                   : " is not in this communicator");
    }
    return s;
  }

  // Runs one call's body. `sig`: what the call reduces (transport.h, Signature), carried by
  // every message of it and checked by the receiver, so ranks that called different
  // collectives, or reduced with different types or ops, fail with kProtocol naming both.
  template <class F>
  void run(const char* name, Signature sig, F&& body) {
    if (config.size == 0) {
      throw Error(ErrorKind::kInvalidArgument,
                  std::string(name) +
                      ": this communicator is empty (split with a negative color gave it to "
                      "this rank): it has no ranks to talk to");
    }
    if (world->broken) {
      throw Error(ErrorKind::kBroken, std::string(name) +
                                          ": the communicator is broken by an earlier error (" +
                                          world->broken_why + ")");
    }
    if (config.size == 1) return;
    Transport& t = transport();
    world->transport->set_context(context);
    world->transport->set_signature(sig);
    // Collectives post their receives before they wait on a send, so their sends may wait for
    // the receiver (shared memory's single copy); a point-to-point send keeps the rings' buffer.
    world->transport->set_sends_may_wait(std::string_view(name) != "send");
    Ctx ctx{t,       config.rank,  config.size, LazyDeadline(config.timeout), settings.tuning,
            scratch, scratch_bytes};
    try {
      body(ctx);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kInvalidArgument) throw;
      world->broken = true;
      world->broken_why = e.message();
      world->transport->abort(e.ranks().empty() ? -1 : e.ranks().front());
      std::string msg = std::string(name) + " on rank " + std::to_string(config.rank) + where() +
                        ": " + e.message() + numbering(e.ranks());
      if (e.kind() == ErrorKind::kTimeout) {
        msg += " (timeout " + std::to_string(config.timeout.count()) + " ms)";
      }
      throw Error(e.kind(), msg, e.ranks());
    } catch (const std::exception& e) {
      world->broken = true;
      world->broken_why = e.what();
      world->transport->abort(-1);
      throw Error(ErrorKind::kSystem, std::string(name) + ": " + e.what());
    }
  }
};

namespace {

// The checks of a byte count (send, recv): no element size to look up or divide by, on the
// latency path of every point-to-point call.
void check_bytes(const void* p, size_t bytes, const char* what) {
  if (bytes > std::numeric_limits<size_t>::max() / 8) {
    throw Error(ErrorKind::kInvalidArgument, std::string(what) + ": count too large");
  }
  if (p == nullptr && bytes > 0) {
    throw Error(ErrorKind::kInvalidArgument, std::string(what) + ": null buffer");
  }
}

void check_buffer(const void* p, size_t count, DataType t, const char* what) {
  if (count > std::numeric_limits<size_t>::max() / 8 / size_of(t)) {
    throw Error(ErrorKind::kInvalidArgument, std::string(what) + ": count too large");
  }
  check_bytes(p, count, what);
}

// Whether the byte ranges [a, a + a_bytes) and [b, b + b_bytes) share a byte.
bool ranges_overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

// The elements a list of (displacement, count) blocks spans: max(displs[p] + counts[p]) over
// the blocks that have elements. Throws kInvalidArgument naming an entry that overflows.
size_t blocks_extent(std::span<const size_t> counts, std::span<const size_t> displs, DataType t,
                     const char* counts_name, const char* displs_name) {
  const size_t limit = std::numeric_limits<size_t>::max() / 8 / size_of(t);
  size_t extent = 0;
  for (size_t p = 0; p < counts.size(); ++p) {
    if (counts[p] == 0) continue;
    if (counts[p] > limit || displs[p] > limit - counts[p]) {
      throw Error(ErrorKind::kInvalidArgument,
                  "all_to_allv: " + std::string(displs_name) + "[" + std::to_string(p) + "] = " +
                      std::to_string(displs[p]) + " + " + counts_name + "[" + std::to_string(p) +
                      "] = " + std::to_string(counts[p]) + " elements is too large");
    }
    extent = std::max(extent, displs[p] + counts[p]);
  }
  return extent;
}

}  // namespace

Communicator Communicator::from_env() {
  return Communicator(config_from_env());
}

Communicator::Communicator(const Config& config) : impl_(std::make_unique<Impl>()) {
  if (config.size < 1 || config.rank < 0 || config.rank >= config.size) {
    throw Error(ErrorKind::kInvalidArgument, "rank " + std::to_string(config.rank) +
                                                 " is not in a world of size " +
                                                 std::to_string(config.size));
  }
  impl_->config = config;
  impl_->settings.topology = config.topology;
  // (A world of size > 1 takes rank 0's in the bootstrap.)
  impl_->settings.tuning = resolved_tuning(config.tuning, config.transport);
  if (config.size > 1) {
    std::vector<int> host_of;
    impl_->world->transport = select_transport(
        config, bootstrap_connections(config, impl_->settings), nullptr, &host_of);
    impl_->world->transport->set_interrupt_check(config.interrupted);
    impl_->world->transport->set_stall_timeout(config.timeout);
    plan_hierarchy(*impl_->world, config, host_of, impl_->settings.topology);
  }
}

Communicator::Communicator(const Config& config, std::unique_ptr<Transport> transport)
    : impl_(std::make_unique<Impl>()) {
  if (!transport || transport->rank() != config.rank || transport->size() != config.size) {
    throw Error(ErrorKind::kInvalidArgument, "the transport does not match the config's world");
  }
  impl_->config = config;
  impl_->settings.topology = config.topology;
  impl_->settings.tuning = resolved_tuning(config.tuning, config.transport);
  impl_->world->transport = std::move(transport);
  impl_->world->transport->set_interrupt_check(config.interrupted);
  impl_->world->transport->set_stall_timeout(config.timeout);
}

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Communicator::~Communicator() = default;
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;

int Communicator::rank() const {
  return impl_->config.rank;
}
int Communicator::size() const {
  return impl_->config.size;
}
bool Communicator::broken() const {
  return impl_->world->broken;
}
bool Communicator::valid() const {
  return impl_->config.size > 0;
}
int Communicator::world_rank(int rank) const {
  if (rank < 0 || rank >= size()) {
    throw Error(ErrorKind::kInvalidArgument, "world_rank: rank " + std::to_string(rank) +
                                                 " is not in a communicator of size " +
                                                 std::to_string(size()));
  }
  return impl_->world_rank(rank);
}
uint32_t Communicator::context() const {
  return impl_->context;
}
std::string Communicator::transport_name() const {
  if (!valid()) return "none (empty communicator)";
  const Transport* t = impl_->world->transport.get();
  if (t == nullptr) return "none (world size 1)";
  std::string shm;
  if (const auto* s = dynamic_cast<const shm::ShmTransport*>(t)) {
    shm = "shm (" + std::to_string(s->local_ranks().size()) + " ranks on this host)";
    t = s->remote();
    if (t == nullptr) return shm;
    shm += " + ";
  }
  if (dynamic_cast<const verbs::VerbsTransport*>(t) == nullptr) return shm + "tcp";
  return shm + (impl_->config.ibv_profile == VerbsProfile::kRc
                    ? "verbs (rc profile: RC queue pairs)"
                    : "verbs (apple profile: UC queue pairs)");
}

void Communicator::release_buffer(const void* data, size_t bytes) noexcept {
  if (impl_ && impl_->world && impl_->world->transport && data != nullptr) {
    impl_->world->transport->release_buffer(data, bytes);
  }
}

const Tuning& Communicator::tuning() const {
  return impl_->settings.tuning;
}
Topology Communicator::topology() const {
  return impl_->settings.topology;
}

void Communicator::all_reduce(const void* in, void* out, size_t count, DataType type, ReduceOp op) {
  check_buffer(in, count, type, "all_reduce");
  check_buffer(out, count, type, "all_reduce");
  if (size() == 1 && in != out && count > 0 && !impl_->world->broken) {
    std::memcpy(out, in, count * size_of(type));
  }
  impl_->run("all_reduce", reduction_signature(type, op), [&](Ctx& c) {
    if (count == 0) return;
    const size_t bytes = count * size_of(type);
    SharedWorld& w = *impl_->world;
    if (impl_->world_ranks.empty() && w.host) {
      // Across hosts: reduce within the host (all_reduce over shared memory), all_reduce
      // between the hosts' lowest ranks over the cables, broadcast within the host. The fold
      // order is host by host, so results can differ in the last bits from a flat
      // all_reduce's; every rank still gets the same bits (the leader's).
      auto flat = [&](Ctx& x, const void* from) {
        if (bytes <= x.tuning.one_shot_max_bytes) {
          all_reduce_one_shot(x, from, out, count, type, op);
        } else {
          all_reduce_direct(x, from, out, count, type, op);
        }
      };
      Ctx host{*w.host, w.host->rank(), w.host->size(), Deadline(c.deadline), c.tuning, c.scratch,
               c.scratch_bytes};
      const void* from = in;
      if (host.size > 1) {
        w.transport->set_context(kHostContext);
        flat(host, in);
        from = out;
      }
      if (w.leaders) {
        w.transport->set_context(kLeadersContext);
        Ctx leaders{*w.leaders, w.leaders->rank(), w.leaders->size(), Deadline(c.deadline), c.tuning,
                    c.scratch, c.scratch_bytes};
        flat(leaders, from);
      }
      if (host.size > 1) {
        w.transport->set_context(kHostContext);
        broadcast_direct(host, out, bytes, 0);
      }
      w.transport->set_context(impl_->context);
      return;
    }
    if (impl_->ring()) {
      all_reduce_ring(c, in, out, count, type, op);
    } else if (bytes <= c.tuning.one_shot_max_bytes) {
      // More ranks than cores: fewer messages beat fewer latencies (all_reduce_star.cc). At
      // n = 2 both send 2 messages, and one-shot has one latency. Over shared memory with at
      // most 2 ranks a core a message is a copy, and what costs is the turns of the cores:
      // one-shot needs each rank to run once a call, the star twice (sends in, then the result
      // out). n = 4 on 2 cores, medians of 8 interleaved runs: 8-512 B 3.3-4.2 us one-shot
      // against 4.1-5.1 star; from 2 KiB the star's fewer copies win (5.2 against 6.7 us), and
      // at 3 ranks a core (n = 6, 8) the star wins at every size.
      const bool one_phase = c.t.messages_are_copies() && c.t.ranks_per_core() <= 2 &&
                             bytes * static_cast<size_t>(c.size - 1) <= kCrowdedOneShotMaxBytes;
      if (c.size > 2 && c.t.crowded() && !one_phase) {
        all_reduce_star(c, in, out, count, type, op);
      } else {
        all_reduce_one_shot(c, in, out, count, type, op);
      }
    } else if (c.size > 2 && c.t.crowded() && c.t.messages_are_copies() &&
               folds_exactly_in_steps(type)) {
      // More ranks than cores, on shared memory: memory traffic is the cost, and waiting on one
      // neighbour beats waiting on all (all_reduce_chain.cc); the same bits as direct.
      all_reduce_chain(c, in, out, count, type, op);
    } else {
      all_reduce_direct(c, in, out, count, type, op);
    }
  });
}

void Communicator::reduce_scatter(const void* in, void* out, size_t count, DataType type,
                                  ReduceOp op) {
  check_buffer(in, count * static_cast<size_t>(size()), type, "reduce_scatter");
  check_buffer(out, count, type, "reduce_scatter");
  if (size() == 1 && in != out && count > 0 && !impl_->world->broken) {
    std::memcpy(out, in, count * size_of(type));
  }
  impl_->run("reduce_scatter", reduction_signature(type, op), [&](Ctx& c) {
    if (count == 0) return;
    if (impl_->ring()) {
      reduce_scatter_ring(c, in, out, count, type, op);
    } else {
      reduce_scatter_direct(c, in, out, count, type, op);
    }
  });
}

void Communicator::all_gather(const void* in, void* out, size_t count, DataType type) {
  check_buffer(in, count, type, "all_gather");
  check_buffer(out, count * static_cast<size_t>(size()), type, "all_gather");
  if (size() == 1 && in != out && count > 0 && !impl_->world->broken) {
    std::memcpy(out, in, count * size_of(type));
  }
  impl_->run("all_gather", kReducesNothing, [&](Ctx& c) {
    if (count == 0) return;
    const size_t bytes = count * size_of(type);
    if (impl_->ring()) {
      all_gather_ring(c, in, out, bytes);
    } else {
      all_gather_direct(c, in, out, bytes);
    }
  });
}

void Communicator::broadcast(const void* in, void* out, size_t count, DataType type, int root) {
  if (root < 0 || root >= size()) {
    throw Error(ErrorKind::kInvalidArgument, "broadcast: root " + std::to_string(root) +
                                                 " is not in a world of size " +
                                                 std::to_string(size()));
  }
  if (rank() == root) check_buffer(in, count, type, "broadcast");
  check_buffer(out, count, type, "broadcast");
  if (rank() == root && in != out && count > 0 && !impl_->world->broken) {
    std::memcpy(out, in, count * size_of(type));
  }
  impl_->run("broadcast", kReducesNothing, [&](Ctx& c) {
    if (count == 0) return;
    const size_t bytes = count * size_of(type);
    if (impl_->ring()) {
      broadcast_ring(c, out, bytes, root);
    } else if (c.size >= 3 && bytes >= 256 * 1024) {
      broadcast_scatter_gather(c, out, bytes, root);
    } else {
      broadcast_direct(c, out, bytes, root);
    }
  });
}

void Communicator::send(const void* buf, size_t bytes, int peer) {
  check_bytes(buf, bytes, "send");
  if (peer < 0 || peer >= size() || peer == rank()) {
    throw Error(ErrorKind::kInvalidArgument, "send: bad peer " + std::to_string(peer));
  }
  impl_->run("send", kReducesNothing, [&](Ctx& c) {
    Request r;
    c.t.isend(peer, buf, bytes, r);
    // A small send is done once posted (copied into a frame): no wait, no clock read.
    if (!r.done()) c.t.wait(r, c.deadline);
  });
}

void Communicator::recv(void* buf, size_t bytes, int peer) {
  check_bytes(buf, bytes, "recv");
  if (peer < 0 || peer >= size() || peer == rank()) {
    throw Error(ErrorKind::kInvalidArgument, "recv: bad peer " + std::to_string(peer));
  }
  impl_->run("recv", kReducesNothing, [&](Ctx& c) {
    Request r;
    c.t.irecv(peer, buf, bytes, r);
    c.t.wait(r, c.deadline);
  });
}

void Communicator::barrier() {
  impl_->run("barrier", kReducesNothing, [&](Ctx& c) { barrier_all(c); });
}

void Communicator::all_to_all(const void* in, void* out, size_t count, DataType type) {
  const size_t n = static_cast<size_t>(size());
  check_buffer(in, count * n, type, "all_to_all");
  check_buffer(out, count * n, type, "all_to_all");
  const size_t block = count * size_of(type);
  if (in != out && ranges_overlap(in, block * n, out, block * n)) {
    throw Error(ErrorKind::kInvalidArgument,
                "all_to_all: in and out overlap without being equal (in place is in == out)");
  }
  if (impl_->ring()) {
    throw Error(ErrorKind::kInvalidArgument,
                "all_to_all needs a mesh: on a ring of " + std::to_string(size()) +
                    " ranks not every pair is cabled (set CLUSTERCOMM_TOPOLOGY=mesh)");
  }
  if (size() == 1 && in != out && count > 0 && !impl_->world->broken) {
    std::memcpy(out, in, block);
  }
  impl_->run("all_to_all", kReducesNothing, [&](Ctx& c) {
    if (count == 0) return;
    const auto* src = static_cast<const std::byte*>(in);
    if (in == out) {
      std::byte* copy = c.get_scratch(block * n);
      std::memcpy(copy, in, block * n);
      src = copy;
    }
    std::vector<size_t> offs(n), bytes(n, block);
    for (size_t p = 0; p < n; ++p) offs[p] = p * block;
    all_to_all_direct(c, src, offs, bytes, static_cast<std::byte*>(out), offs, bytes);
  });
}

void Communicator::all_to_allv(const void* in, std::span<const size_t> in_counts,
                               std::span<const size_t> in_displs, void* out,
                               std::span<const size_t> out_counts,
                               std::span<const size_t> out_displs, DataType type) {
  const size_t n = static_cast<size_t>(size());
  const std::pair<std::span<const size_t>, const char*> lists[] = {{in_counts, "in_counts"},
                                                                   {in_displs, "in_displs"},
                                                                   {out_counts, "out_counts"},
                                                                   {out_displs, "out_displs"}};
  for (const auto& [list, name] : lists) {
    if (list.size() != n) {
      throw Error(ErrorKind::kInvalidArgument,
                  "all_to_allv: " + std::string(name) + " has " + std::to_string(list.size()) +
                      " entries; it needs one per rank, " + std::to_string(n));
    }
  }
  const size_t me = static_cast<size_t>(std::max(rank(), 0));
  if (n > 0 && in_counts[me] != out_counts[me]) {
    throw Error(ErrorKind::kInvalidArgument,
                "all_to_allv: in_counts[" + std::to_string(me) +
                    "] = " + std::to_string(in_counts[me]) + " but out_counts[" +
                    std::to_string(me) + "] = " + std::to_string(out_counts[me]) +
                    ": the block rank " + std::to_string(me) + " sends itself has one size");
  }
  const size_t in_extent = blocks_extent(in_counts, in_displs, type, "in_counts", "in_displs");
  const size_t out_extent = blocks_extent(out_counts, out_displs, type, "out_counts", "out_displs");
  check_buffer(in, in_extent, type, "all_to_allv: in");
  check_buffer(out, out_extent, type, "all_to_allv: out");
  const size_t e = size_of(type);
  if (ranges_overlap(in, in_extent * e, out, out_extent * e)) {
    throw Error(ErrorKind::kInvalidArgument,
                "all_to_allv: in and out overlap (it does not run in place: use two buffers)");
  }
  std::vector<size_t> order;  // the out blocks that have elements, by displacement
  for (size_t p = 0; p < n; ++p) {
    if (out_counts[p] > 0) order.push_back(p);
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return out_displs[a] < out_displs[b]; });
  for (size_t i = 1; i < order.size(); ++i) {
    const size_t a = order[i - 1], b = order[i];
    if (out_displs[a] + out_counts[a] > out_displs[b]) {
      throw Error(ErrorKind::kInvalidArgument,
                  "all_to_allv: the out blocks of ranks " + std::to_string(a) + " and " +
                      std::to_string(b) + " overlap (out_displs[" + std::to_string(a) +
                      "] = " + std::to_string(out_displs[a]) + ", out_counts[" + std::to_string(a) +
                      "] = " + std::to_string(out_counts[a]) + ", out_displs[" + std::to_string(b) +
                      "] = " + std::to_string(out_displs[b]) + "): each needs its own place");
    }
  }
  if (impl_->ring()) {
    throw Error(ErrorKind::kInvalidArgument,
                "all_to_allv needs a mesh: on a ring of " + std::to_string(size()) +
                    " ranks not every pair is cabled (set CLUSTERCOMM_TOPOLOGY=mesh)");
  }
  if (size() == 1 && in_counts[0] > 0 && !impl_->world->broken) {
    std::memcpy(static_cast<std::byte*>(out) + out_displs[0] * e,
                static_cast<const std::byte*>(in) + in_displs[0] * e, in_counts[0] * e);
  }
  impl_->run("all_to_allv", kReducesNothing, [&](Ctx& c) {
    std::vector<size_t> in_off(n), in_bytes(n), out_off(n), out_bytes(n);
    for (size_t p = 0; p < n; ++p) {
      in_off[p] = in_displs[p] * e;
      in_bytes[p] = in_counts[p] * e;
      out_off[p] = out_displs[p] * e;
      out_bytes[p] = out_counts[p] * e;
    }
    all_to_all_direct(c, static_cast<const std::byte*>(in), in_off, in_bytes,
                      static_cast<std::byte*>(out), out_off, out_bytes);
  });
}

Communicator Communicator::split(int color, int key) {
  if (impl_->ring()) {
    throw Error(ErrorKind::kInvalidArgument,
                "split needs a mesh: on a ring of " + std::to_string(size()) +
                    " ranks not every pair is cabled (set CLUSTERCOMM_TOPOLOGY=mesh)");
  }
  const size_t n = static_cast<size_t>(size());
  SharedWorld& world = *impl_->world;
  // Every member's (color, key, next context); the new communicators take the largest next
  // context of the members, so the id is new on every pair of ranks it will connect.
  const int64_t mine[3] = {color < 0 ? -1 : color, key, world.next_context};
  std::vector<int64_t> all(3 * n);
  if (size() == 1 && !world.broken) std::memcpy(all.data(), mine, sizeof mine);
  impl_->run("split", kReducesNothing,
             [&](Ctx& c) { all_gather_direct(c, mine, all.data(), sizeof mine); });
  int64_t agreed = 0;
  std::vector<size_t> members;
  for (size_t q = 0; q < n; ++q) {
    agreed = std::max(agreed, all[3 * q + 2]);
    if (color >= 0 && all[3 * q] == color) members.push_back(q);
  }
  if (agreed >= int64_t{std::numeric_limits<uint32_t>::max()}) {
    throw Error(ErrorKind::kInvalidArgument, "split: no communicator ids are left (2^32 - 1)");
  }
  const auto context = static_cast<uint32_t>(agreed);
  world.next_context = context + 1;
  auto child = std::make_unique<Impl>();
  child->config = impl_->config;
  child->settings = impl_->settings;
  child->settings.topology = Topology::kMesh;
  child->world = impl_->world;
  child->context = context;
  if (color < 0) {
    child->config.rank = -1;
    child->config.size = 0;
    return Communicator(std::move(child));
  }
  std::stable_sort(members.begin(), members.end(),
                   [&](size_t a, size_t b) { return all[3 * a + 1] < all[3 * b + 1]; });
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] == static_cast<size_t>(rank())) child->config.rank = static_cast<int>(i);
    child->world_ranks.push_back(impl_->world_rank(static_cast<int>(members[i])));
  }
  child->config.size = static_cast<int>(members.size());
  if (members.size() > 1) {
    child->group = std::make_unique<GroupTransport>(*impl_->world->transport, child->world_ranks,
                                                    child->config.rank);
  }
  return Communicator(std::move(child));
}

}  // namespace cc::comm
