// Cables, from two independent sources, merged (docs/platform.md#discovering-cables-on-macos
// and docs/platform.md#thunderbolt-and-rdma-on-linux):
//
//  1. Thunderbolt identity: host A's port P has a depth-1 host peer whose domain UUID (macOS
//     `_items[].domain_uuid_key`, Linux XDomain `unique_id`) is the domain UUID of host B's
//     port Q: cable A:P - B:Q, seen from A. Both ends usually see it, so it is seen from both.
//  2. Neighbour probing: from each host, an IPv6 ping to the all-nodes group ff02::1 on each
//     port that is up with carrier. Every answer comes from a link-local address; an answer
//     from port Q of another host B (its interface holds that address) is the cable A:P - B:Q,
//     seen from A. An interface answered from two or more other hosts is a shared segment
//     (a switch), not a cable: no cable is recorded from it. Answers from A itself are ignored.
//
// A cable is one pair of ports; observations of the same pair merge into one Cable recording
// every source and which ends saw it. Hosts never learn cables from a lab's own records.
#pragma once

#include <string>
#include <vector>

#include "discovery/cluster_state.h"
#include "discovery/probe.h"

namespace cc::discovery {

/// The ping that asks who is on the other end of `interface`:
///   Linux: ping -6 -n -w 1 -i 0.2 ff02::1%IF   (1 s, five requests)
///   macOS: ping6 -c 2 ff02::1%IF                (about 2 s)
ProbeCommand neighbour_ping(bool macos, const std::string& interface);

/// One ping per port of `host` whose interface is up with carrier.
std::vector<ProbeCommand> neighbour_commands(const HostFacts& host);

/// The link-local addresses that answered on one of a host's ports.
struct NeighbourAnswers {
  std::string interface;
  std::vector<std::string> addresses;
};

/// The answers in a host's neighbour probe outputs (ports whose ping has no section, or
/// whose output is unusable, are left out). Errors (kCheckFailed, naming the host and the
/// command): an output the ping parser rejects.
util::Result<std::vector<NeighbourAnswers>> neighbour_answers(const HostFacts& host,
                                                              const ProbeOutputs& outputs);

/// Every cable, merged and sorted as ClusterState::cables documents. `answers[i]` belongs to
/// `hosts[i]` (empty when host i's neighbour probe did not run). Link speed and generation
/// come from the ports (the lower of the two ends when both know it).
std::vector<Cable> merge_cables(const std::vector<HostFacts>& hosts,
                                const std::vector<std::vector<NeighbourAnswers>>& answers);

}  // namespace cc::discovery
