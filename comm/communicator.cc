// Communicator: argument checks, algorithm choice, the broken state. The algorithms are in
// algorithms/, the wire in transport/, world formation in rendezvous/.
#include <cstring>
#include <limits>
#include <utility>

#include "comm/algorithms/algorithm.h"
#include "comm/clustercomm.h"
#include "comm/rendezvous/bootstrap.h"
#include "comm/transport/select.h"
#include "comm/transport/transport.h"
#include "comm/transport/verbs/verbs_transport.h"

namespace cc::comm {

struct Communicator::Impl {
  Config config;
  JobSettings settings;
  std::unique_ptr<Transport> transport;
  std::unique_ptr<std::byte[]> scratch;
  size_t scratch_bytes = 0;
  bool broken = false;
  std::string broken_why;

  bool ring() const { return settings.topology == Topology::kRing && config.size > 3; }

  template <class F>
  void run(const char* name, F&& body) {
    if (broken) {
      throw Error(ErrorKind::kBroken, std::string(name) +
                                          ": the communicator is broken by an earlier error (" +
                                          broken_why + ")");
    }
    if (config.size == 1) return;
    Ctx ctx{*transport,      config.rank, config.size,  deadline_in(config.timeout),
            settings.tuning, scratch,     scratch_bytes};
    try {
      body(ctx);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kInvalidArgument) throw;
      broken = true;
      broken_why = e.message();
      transport->abort(e.ranks().empty() ? -1 : e.ranks().front());
      std::string msg =
          std::string(name) + " on rank " + std::to_string(config.rank) + ": " + e.message();
      if (e.kind() == ErrorKind::kTimeout) {
        msg += " (timeout " + std::to_string(config.timeout.count()) + " ms)";
      }
      throw Error(e.kind(), msg, e.ranks());
    } catch (const std::exception& e) {
      broken = true;
      broken_why = e.what();
      transport->abort(-1);
      throw Error(ErrorKind::kSystem, std::string(name) + ": " + e.what());
    }
  }
};

namespace {

void check_buffer(const void* p, size_t count, DataType t, const char* what) {
  if (count > std::numeric_limits<size_t>::max() / 8 / size_of(t)) {
    throw Error(ErrorKind::kInvalidArgument, std::string(what) + ": count too large");
  }
  if (p == nullptr && count > 0) {
    throw Error(ErrorKind::kInvalidArgument, std::string(what) + ": null buffer");
  }
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
  impl_->settings.tuning = config.tuning;
  if (config.size > 1) {
    impl_->transport = select_transport(config, bootstrap_connections(config, impl_->settings));
    impl_->transport->set_interrupt_check(config.interrupted);
  }
}

Communicator::Communicator(const Config& config, std::unique_ptr<Transport> transport)
    : impl_(std::make_unique<Impl>()) {
  if (!transport || transport->rank() != config.rank || transport->size() != config.size) {
    throw Error(ErrorKind::kInvalidArgument, "the transport does not match the config's world");
  }
  impl_->config = config;
  impl_->settings.topology = config.topology;
  impl_->settings.tuning = config.tuning;
  impl_->transport = std::move(transport);
  impl_->transport->set_interrupt_check(config.interrupted);
}

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
  return impl_->broken;
}
std::string Communicator::transport_name() const {
  if (!impl_->transport) return "none (world size 1)";
  if (dynamic_cast<const verbs::VerbsTransport*>(impl_->transport.get()) == nullptr) return "tcp";
  return impl_->config.ibv_profile == VerbsProfile::kRc ? "verbs (rc profile: RC queue pairs)"
                                                        : "verbs (apple profile: UC queue pairs)";
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
  if (size() == 1 && in != out && count > 0 && !impl_->broken) {
    std::memcpy(out, in, count * size_of(type));
  }
  impl_->run("all_reduce", [&](Ctx& c) {
    if (count == 0) return;
    const size_t bytes = count * size_of(type);
    if (impl_->ring()) {
      all_reduce_ring(c, in, out, count, type, op);
    } else if (bytes <= c.tuning.one_shot_max_bytes) {
      all_reduce_one_shot(c, in, out, count, type, op);
    } else {
      all_reduce_direct(c, in, out, count, type, op);
    }
  });
}

void Communicator::reduce_scatter(const void* in, void* out, size_t count, DataType type,
                                  ReduceOp op) {
  check_buffer(in, count * static_cast<size_t>(size()), type, "reduce_scatter");
  check_buffer(out, count, type, "reduce_scatter");
  if (size() == 1 && in != out && count > 0 && !impl_->broken) {
    std::memcpy(out, in, count * size_of(type));
  }
  impl_->run("reduce_scatter", [&](Ctx& c) {
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
  if (size() == 1 && in != out && count > 0 && !impl_->broken) {
    std::memcpy(out, in, count * size_of(type));
  }
  impl_->run("all_gather", [&](Ctx& c) {
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
  if (rank() == root && in != out && count > 0 && !impl_->broken) {
    std::memcpy(out, in, count * size_of(type));
  }
  impl_->run("broadcast", [&](Ctx& c) {
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
  check_buffer(buf, bytes, DataType::kU8, "send");
  if (peer < 0 || peer >= size() || peer == rank()) {
    throw Error(ErrorKind::kInvalidArgument, "send: bad peer " + std::to_string(peer));
  }
  impl_->run("send", [&](Ctx& c) {
    Request r;
    c.t.isend(peer, buf, bytes, r);
    c.t.wait(r, c.deadline);
  });
}

void Communicator::recv(void* buf, size_t bytes, int peer) {
  check_buffer(buf, bytes, DataType::kU8, "recv");
  if (peer < 0 || peer >= size() || peer == rank()) {
    throw Error(ErrorKind::kInvalidArgument, "recv: bad peer " + std::to_string(peer));
  }
  impl_->run("recv", [&](Ctx& c) {
    Request r;
    c.t.irecv(peer, buf, bytes, r);
    c.t.wait(r, c.deadline);
  });
}

void Communicator::barrier() {
  impl_->run("barrier", [&](Ctx& c) { barrier_all(c); });
}

}  // namespace cc::comm
