// World formation over TCP. Rank 0 runs the coordinator on CLUSTERCOMM_COORDINATOR; every
// other rank opens its listener, connects to the coordinator, proves the token and sends
// JOIN {rank, size, listen addresses}. The coordinator checks that all ranks agree on the size
// and that no rank appears twice (else every joined rank fails with kWorld), waits for all
// ranks until the timeout (else everyone fails with kTimeout naming the missing ranks), then
// sends everyone the address table and rank 0's job-wide settings (topology, tuning,
// connections per pair). Then each pair connects directly: for ranks a < b, a connects to b
// when b == a + 1 (ring order, like MLX's ring hostfile), otherwise b connects to a; each
// connection proves the token again and names its world id, rank and index. A pair that are
// not ring neighbours, where listen addresses reach the neighbours only
// (Config::listen_ring_neighbours_only), connects over the coordinator's network: the join
// carries the address of the joiner's listener there, the reply every rank's.
#pragma once

#include <memory>
#include <vector>

#include "comm/config.h"
#include "comm/transport/tcp/socket.h"
#include "comm/transport/transport.h"

namespace cc::comm {

/// What rank 0 decided for the whole job (every rank must choose algorithms alike).
struct JobSettings {
  Topology topology = Topology::kMesh;
  Tuning tuning;
  int connections_per_peer = 1;
};

/// Forms the world and returns the connected transport (config.size > 1). `settings` receives
/// rank 0's choices. Throws Error: kTimeout (naming ranks that never arrived), kWorld, kAuth,
/// kSystem, kInvalidArgument.
std::unique_ptr<Transport> bootstrap_tcp(const Config& config, JobSettings& settings);

/// The same world formation, returning the connections instead: conns[p] = the data
/// connections to peer p, then its control connection (empty for p == rank).
std::vector<std::vector<tcp::Fd>> bootstrap_connections(const Config& config,
                                                        JobSettings& settings);
/// The TCP transport over bootstrap_connections()'s result.
std::unique_ptr<Transport> make_tcp_transport(const Config& config,
                                              std::vector<std::vector<tcp::Fd>> conns);

}  // namespace cc::comm
