// Forming the shared-memory part of a world (transport/select.cc calls it right after the TCP
// mesh is up, before the verbs agreement):
// 1. Every rank sends every peer, on the pair's first data connection, one hello
//    {u32 "CCSH", u32 wants shm, string host identity} (host_identity(): same kernel, same
//    mount and network namespace, same user) and reads theirs. The ranks with this rank's
//    identity, in rank order, are its host's local ranks; they use shared memory when every
//    one of them wants it (CLUSTERCOMM_TRANSPORT auto or shm).
// 2. The host's lowest rank creates the segment (shm_segment.h) and sends each other local
//    rank {u32 "CCSG", u32 ok, string name or why not, 16-byte nonce, u64 ring bytes}; each
//    opens and maps it, checks the nonce (proof that it is the same memory, not a same-named
//    segment of another machine) and answers {u32 ok, string why not}. The creator then
//    unlinks the name (nothing is left in /dev/shm from here on, even after kill -9; a rank
//    that was told the name and then loses the creator unlinks it itself) and sends
//    everyone the decision {u32 go, string why not}: all of the host's ranks use the segment,
//    or none does.
// All reads and writes have the config's timeout (kTimeout naming the silent rank).
#pragma once

#include <string>
#include <vector>

#include "comm/config.h"
#include "comm/transport/shm/shm_segment.h"
#include "comm/transport/tcp/socket.h"

namespace cc::comm::shm {

/// "Same host" for shared memory. Linux: the boot ID (/proc/sys/kernel/random/boot_id), the
/// mount and network namespaces (/proc/self/ns/mnt, net: two network namespaces of one machine
/// are two hosts of the lab, and containers with their own /dev/shm are apart) and the uid
/// (segments are mode 0600). Elsewhere (macOS): the host name and the uid. A false match is
/// caught by the nonce (step 2), and only costs shared memory, never correctness.
std::string host_identity();

/// Ring bytes per direction for k local ranks: 1 MiB up to 4 ranks, 256 KiB beyond (k(k-1)
/// rings: 12 MiB at k = 4, 14 MiB at k = 8).
size_t ring_bytes_for(int ranks);

struct LocalGroup {
  std::vector<int> ranks;  // this host's world ranks, ascending (this rank among them)
  bool wanted = false;     // every one of them wants shared memory
  /// Every world rank's host, as the lowest rank on that host (the same on every rank).
  std::vector<int> host_of;
};

/// Step 1. conns as bootstrap_connections() returns them (all valid). The identity sent is
/// cfg.host_id, or host_identity() when that is empty.
LocalGroup exchange_host_identities(const Config& cfg,
                                    const std::vector<std::vector<tcp::Fd>>& conns);

/// Step 2, for a group of >= 2 that wants it. Returns the mapped segment, or an unmapped one
/// with `why_not` set (naming the rank and the call that failed) when the host's ranks fall
/// back to TCP. Throws Error (kTimeout, kPeerLost, kProtocol) when a rank is silent or lies.
Segment form_segment(const Config& cfg, const LocalGroup& group,
                     const std::vector<std::vector<tcp::Fd>>& conns, std::string& why_not);

}  // namespace cc::comm::shm
