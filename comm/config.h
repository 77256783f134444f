// How a communicator finds its world: rank, size, coordinator, token, addresses and tuning.
// Filled by hand or from the environment a launcher sets (config_from_env). See README.md
// for every variable.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace cc::comm {

/// Which pairs of ranks have a direct link. kMesh: every pair (n(n-1)/2 cables or one
/// switch); kRing: only ring neighbours r and r+1 mod n (other pairs still connect, over
/// whatever route the addresses give, but collectives use only the ring).
enum class Topology { kMesh, kRing };

/// How to reach one peer: its address on the cable between us, and our address on that cable
/// (so traffic takes the direct cable, not the management network).
struct PeerRoute {
  std::string remote;  // "ip" or "ip:port" of the peer; empty = the address it advertised
  std::string local;   // local "ip" to bind the connection to; empty = the kernel chooses
};

/// Algorithm tuning; the defaults were measured on loopback (bench/compare-tcp).
struct Tuning {
  size_t one_shot_max_bytes = 64 * 1024;  // all_reduce: one-shot up to this many bytes
  size_t chunk_bytes = 256 * 1024;        // pipelining unit of the large algorithms
  size_t window_chunks = 8;               // chunks in flight per peer (bounds scratch memory)
  std::chrono::microseconds spin{200};    // busy-poll before blocking in poll()
};

struct Config {
  int rank = 0;
  int size = 1;
  /// "ip:port" of rank 0's coordinator (rank 0 listens there). Needed when size > 1.
  std::string coordinator;
  /// Shared secret of the job; every connection proves it (HMAC-SHA-256 challenge). Never
  /// logged. Empty is allowed but then anyone who can connect can join.
  std::string token;
  /// Every call (and start-up) fails after this long without completing.
  std::chrono::milliseconds timeout{30000};
  /// Local "ip:port" addresses to accept peers on (port 0 = any); default "0.0.0.0:0".
  std::vector<std::string> listen;
  /// Per peer, indexed by rank; empty, or size entries (this rank's own is ignored).
  std::vector<PeerRoute> routes;
  /// TCP connections per pair of ranks; rank 0's value applies to the whole job.
  int connections_per_peer = 1;
  Topology topology = Topology::kMesh;
  Tuning tuning;
};

using GetEnv = std::function<const char*(const char*)>;

/// Reads CLUSTERCOMM_* (or, without CLUSTERCOMM_RANK, MLX_RANK with MLX_HOSTFILE or
/// MLX_IBV_DEVICES + MLX_JACCL_COORDINATOR). With none of them: a world of size 1.
/// Throws Error(kInvalidArgument) naming the variable that is malformed.
Config config_from_env(const GetEnv& getenv = nullptr);

}  // namespace cc::comm
