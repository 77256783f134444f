// Choosing the transport of a job (CLUSTERCOMM_TRANSPORT, README.md "Transport selection").
// First the ranks that share a host agree on shared memory (transport/shm/shm_setup.h); then
// the transport between hosts is chosen as below.
// All ranks must choose alike, so the choice is agreed: after the TCP mesh is up, every rank
// prepares verbs (verbs_setup.h) if asked to, and sends every peer one small message over
// the data connection {u32 "CCVB", u32 ok, string why-not}. If all ranks said yes, the job
// runs on verbs: between every pair, or, where a host's ranks share a segment (auto), verbs
// between hosts and shared memory inside each (no queue pair between ranks of one host; their
// entries in the device matrix are not used). Otherwise on TCP over the same connections
// (they are at a message boundary), and every rank prints one line to stderr naming the
// first rank that could not and why - or, with CLUSTERCOMM_TRANSPORT=verbs, every rank fails
// with that reason. A world entirely on one host sharing a segment skips verbs (auto).
#pragma once

#include <memory>
#include <vector>

#include "comm/config.h"
#include "comm/transport/tcp/socket.h"
#include "comm/transport/transport.h"

namespace cc::comm {

/// `fallback_line` receives the line printed when auto mode falls back (tests read it).
/// `host_of` receives every rank's host as the lowest rank on it (transport/shm/shm_setup.h),
/// the same on every rank.
std::unique_ptr<Transport> select_transport(const Config& cfg,
                                            std::vector<std::vector<tcp::Fd>> conns,
                                            std::string* fallback_line = nullptr,
                                            std::vector<int>* host_of = nullptr);

}  // namespace cc::comm
