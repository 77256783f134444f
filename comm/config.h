// How a communicator finds its world: rank, size, coordinator, token, addresses and tuning.
// Filled by hand or from the environment a launcher sets (config_from_env). See README.md
// for every variable.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "comm/export.h"

namespace cc::comm {

/// Which pairs of ranks have a direct link. kMesh: every pair (n(n-1)/2 cables or one
/// switch); kRing: only ring neighbours r and r+1 mod n (other pairs still connect, over
/// whatever route the addresses give, or the coordinator's network with
/// listen_ring_neighbours_only, but collectives use only the ring).
enum class Topology { kMesh, kRing };

/// How to reach one peer: its address on the cable between us, and our address on that cable
/// (so traffic takes the direct cable, not the management network).
struct PeerRoute {
  std::string remote;  // "ip" or "ip:port" of the peer; empty = the address it advertised
  std::string local;   // local "ip" to bind the connection to; empty = the kernel chooses
};

/// One route as CLUSTERCOMM_PEER_ADDRS writes it: "REMOTE", or "LOCAL>REMOTE".
CLUSTERCOMM_API PeerRoute parse_peer_route(const std::string& entry);

/// Algorithm tuning; the defaults were measured on loopback (bench/compare-tcp).
struct Tuning {
  size_t one_shot_max_bytes = 64 * 1024;  // all_reduce: one-shot up to this many bytes
  /// Pipelining unit of the large algorithms, bytes. 0 (the default): chosen from rank 0's
  /// Config::transport, tuning_chunk_bytes() below; Communicator::tuning() shows the choice.
  size_t chunk_bytes = 0;
  size_t window_chunks = 8;             // chunks in flight per peer (bounds scratch memory)
  std::chrono::microseconds spin{200};  // busy-poll before blocking in poll()
  /// Shared memory on Linux: collective messages of at least this many bytes go by single copy
  /// (the receiver reads the sender's buffer; transport/shm/shm_transport.h); 0 (the default):
  /// never. Off because it measured slower on the 2-core machine we test on: process_vm_readv
  /// moved 10-13 GB/s where memcpy moved 24-56, so its one copy lost to the rings' two (n = 2
  /// all_reduce of 4 MiB: 780 us against 256; n = 4 no better; docs/platform.md). Each rank's
  /// own value applies to what it sends and receives (ranks need not agree).
  size_t shm_single_copy_min = 0;
};

/// Which transport carries the data (CLUSTERCOMM_TRANSPORT); every rank must choose alike.
/// - kAuto: shared memory between the ranks of one host (transport/shm/: when they all can map
///   one segment, else TCP, with one line saying why); between hosts RDMA verbs when a device
///   matrix is given and every rank can load the verbs library and open its devices, else TCP
///   (each rank prints one line saying why).
/// - kShm: shared memory between the ranks of each host or fail; TCP between hosts.
/// - kVerbs: verbs between every pair or fail (a device for every peer: no shared memory).
/// - kTcp: TCP only, also between the ranks of one host (loopback).
enum class TransportKind { kAuto, kTcp, kVerbs, kShm };

/// The chunk a job gets when Tuning::chunk_bytes is 0: 512 KiB for TransportKind::kTcp (all
/// data over TCP), 256 KiB otherwise. Measured with bench/compare-tcp's runs on 2 cores, 3
/// interleaved rounds: 4 ranks over TCP loopback, all_reduce at 2 / 4 / 8 MiB took 1.6-2.2 /
/// 4.7-5.4 / 11.6-12.9 ms with 512 KiB chunks against 2.1-2.3 / 5.2-6.0 / 12.0-14.6 ms with
/// 256 KiB (one message per 512 KiB shard where there were two), the same from 16 MiB up and
/// at 2 ranks; over shared memory 512 KiB was 5-12% slower at 4 ranks from 16 MiB, so shm
/// keeps 256 KiB, and so do verbs and kAuto (not measured at 512 KiB). Rank 0's choice
/// applies job-wide (every rank's chunks must match).
CLUSTERCOMM_API size_t tuning_chunk_bytes(TransportKind kind);

/// `tuning` as a job runs with it: chunk_bytes 0 becomes tuning_chunk_bytes(kind).
CLUSTERCOMM_API Tuning resolved_tuning(Tuning tuning, TransportKind kind);

/// The verbs transport's queue pairs (CLUSTERCOMM_IBV_PROFILE); every rank must use the same.
/// - kApple ("apple", the default): UC queue pairs, SEND/RECV only, <= 10 QPs per device:
///   what RDMA over Thunderbolt on macOS allows (docs/platform.md#transport-profile-and-limits).
///   Also runs on Linux NICs and Soft-RoCE. A dead or stopped peer is silent (UC): found by the
///   call's timeout.
/// - kRc ("rc"): the same frame protocol on RC queue pairs, for Linux RDMA NICs: the NIC
///   retransmits lost packets, and a peer that stops answering gives an error completion
///   ("transport retry counter exceeded") after about 0.5 s instead of silence. macOS has no RC.
enum class VerbsProfile { kApple, kRc };

/// How the verbs transport sends large message parts (Config::ibv_zero_copy).
enum class ZeroCopy {
  kOff,         ///< every byte copied into the send frames
  kPerMessage,  ///< the caller's buffer registered for the send, deregistered at its completion
  kCached,      ///< registered once and cached; the caller calls release_buffer before freeing
};

struct Config {
  int rank = 0;
  int size = 1;
  /// "ip:port" of rank 0's coordinator. Needed when size > 1. Rank 0's coordinator listens
  /// on exactly this address (on every address only when it is 0.0.0.0:port or [::]:port);
  /// its peers connect to its `listen` addresses, as for every rank. Port 0 (rank 0 only,
  /// with on_coordinator_listening set): listen on a port the kernel picks, reported there.
  std::string coordinator;
  /// Where `coordinator` was set, named in the messages that say to change it: "" (in code:
  /// Config::coordinator), or what config_from_env read it from: "CLUSTERCOMM_COORDINATOR",
  /// "MLX_JACCL_COORDINATOR", "MLX_HOSTFILE", or what a launcher that set it says in
  /// CLUSTERCOMM_COORDINATOR_FROM (clusterctl launch: "`coordinator_port:` in JOB.yaml").
  std::string coordinator_from;
  /// Rank 0 only; empty by default. Called once, on the thread constructing the Communicator,
  /// as soon as rank 0's coordinator listens (before it waits for the other ranks), with the
  /// TCP port it listens on (1..65535): the port of `coordinator`, or the one the kernel chose
  /// when that port is 0. With port 0 this is how a caller that starts the ranks itself (tests,
  /// benchmarks) learns the port to give the others ("127.0.0.1:<port>"), with no race for a
  /// port picked in advance. Not called in a world of size 1 (it has no coordinator). An
  /// exception it throws ends start-up: the constructor rethrows it.
  /// Errors (kInvalidArgument, at once): port 0 on a rank other than 0 (it must be given rank
  /// 0's real port), or port 0 on rank 0 without this callback (no one could learn the port).
  std::function<void(int port)> on_coordinator_listening;
  /// Shared secret of the job; every connection proves it (HMAC-SHA-256 challenge). Never
  /// logged. Empty only for a world on one host: then the coordinator, listen and peer
  /// addresses must all be loopback (else start-up throws kInvalidArgument naming
  /// CLUSTERCOMM_TOKEN) and connections from other addresses are closed unanswered.
  std::string token;
  /// Start-up fails after this long; a call fails once this long has passed since it began
  /// waiting and nothing moved on this rank's connections for this long (a transfer that
  /// keeps moving is not cut off; comm/README.md, kTimeout).
  std::chrono::milliseconds timeout{30000};
  /// Local "ip:port" addresses to accept peers on (port 0 = any); default "0.0.0.0:0", or
  /// "127.0.0.1:0" when the coordinator is loopback (the world is on this host).
  std::vector<std::string> listen;
  /// `listen` on every rank are addresses that only its ring neighbours (ranks r - 1 and
  /// r + 1 mod size) reach: an MLX ring hostfile's, each rank's ends of the cables to its left
  /// neighbour (MLX_HOSTFILE sets it). Every pair of ranks still connects: in a world of more
  /// than 3 ranks, a pair that are not ring neighbours connects over the coordinator's network
  /// instead. Each rank but 0 then also listens on every address of the coordinator's family
  /// (loopback when the coordinator is) at a port the kernel picks, where the others reach it
  /// at the address rank 0 saw its join come from; rank 0 is reached at the coordinator.
  bool listen_ring_neighbours_only = false;
  /// Per peer, indexed by rank; empty, or size entries (this rank's own is ignored).
  std::vector<PeerRoute> routes;
  /// TCP connections per pair of ranks; rank 0's value applies to the whole job.
  int connections_per_peer = 1;
  Topology topology = Topology::kMesh;
  Tuning tuning;
  TransportKind transport = TransportKind::kAuto;
  /// This rank's row of the MLX device matrix (MLX_IBV_DEVICES): devices[p] = the RDMA
  /// devices on this host for the cable(s) to rank p, one per cable, the k-th being the same
  /// physical cable on both ends (striped); empty = none. Empty altogether = no RDMA.
  std::vector<std::vector<std::string>> devices;
  /// Verbs frame size in bytes: a power of two from 4096 to 8 MiB
  /// (docs/platform.md#transport-profile-and-limits: a message is at most 16,773,120 bytes); both
  /// ends use the smaller of their values.
  size_t ibv_frame_bytes = 64 * 1024;
  /// Receive frames posted per link, 4..63 (Apple: about 63 posted receives at most).
  uint32_t ibv_recv_frames = 32;
  VerbsProfile ibv_profile = VerbsProfile::kApple;
  /// Which host this rank is on (CLUSTERCOMM_HOST_ID): ranks with equal values use shared
  /// memory between them and count as one host for the hierarchical all_reduce. Empty (the
  /// default): found by each rank (transport/shm/shm_setup.h: boot ID, namespaces and user on
  /// Linux, host name and user on macOS). A wrong claim costs nothing worse than TCP: ranks that
  /// cannot map the same segment fall back (the segment's nonce proves it is shared).
  std::string host_id;
  /// Send every verbs frame at its full posted size (frame + 24-byte header), padding short
  /// ones, as JACCL does on Apple's stack (its sends always fill the posted buffer): unset = on
  /// in the Apple profile on macOS (Apple's provider), off elsewhere - on Linux providers and in
  /// rc it only costs (CLUSTERCOMM_IBV_PAD_FRAMES). A receiver takes either form, so the ranks
  /// need not agree. Cost: docs/platform.md#transport-profile-and-limits.
  std::optional<bool> ibv_pad_frames;
  /// Zero-copy sends on verbs (CLUSTERCOMM_IBV_ZERO_COPY): a message part of at least
  /// 256 KiB (kZeroCopyMinBytes) is sent from the caller's buffer instead of being copied into
  /// the frames, when the device allows 2 scatter/gather entries per send. Where registration
  /// fails (the locked-memory limit, `ulimit -l`), or every registration the device may hold
  /// (64) is in use, that message is copied (one warning per device). The wire format does not
  /// change: ranks need not agree. No effect on other transports.
  /// - kPerMessage ("message"; unset = this on Linux): the buffer is registered for the send
  ///   and deregistered when its last frame's send completion arrives. Nothing is kept, so
  ///   nothing can go stale: no contract for the caller.
  /// - kCached ("1" or "cached"): registered once and kept (at most 64 per device, LRU), which
  ///   saves the registration on a buffer sent from again. THE CALLER'S CONTRACT: call
  ///   Communicator::release_buffer on a buffer (or any range of it) before freeing or
  ///   unmapping it; a registration pins the pages that were there, and memory later placed at
  ///   the same address would otherwise be sent stale, silently. (The communicator's own
  ///   scratch memory is handled.)
  /// - kOff ("0"; unset = this on macOS, where zero-copy is unmeasured on Apple's provider).
  std::optional<ZeroCopy> ibv_zero_copy;  /// Asked by a call that waits, on the calling thread, about every 20 ms
  /// (kInterruptCheckEvery in transport/transport.h): returning true gives up at once, and the
  /// call throws kInterrupted (the communicator is then broken, its peers told, as after any
  /// failure). The constructor asks it too while it waits for the other ranks to join (the TCP
  /// rendezvous: comm/rendezvous/bootstrap.h), not during the RDMA setup that follows. Empty:
  /// never asked. The Python bindings check for Ctrl-C here (PyErr_CheckSignals).
  std::function<bool()> interrupted;
};

using GetEnv = std::function<const char*(const char*)>;

/// Reads CLUSTERCOMM_* (or, without CLUSTERCOMM_RANK, MLX_RANK with MLX_HOSTFILE or
/// MLX_IBV_DEVICES + MLX_JACCL_COORDINATOR). With none of them: a world of size 1.
/// MLX_IBV_DEVICES also gives the device row with CLUSTERCOMM_RANK (its size must match).
/// Throws Error(kInvalidArgument) naming the variable that is malformed.
CLUSTERCOMM_API Config config_from_env(const GetEnv& getenv = nullptr);

}  // namespace cc::comm
