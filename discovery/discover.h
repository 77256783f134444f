// Discovery of a whole cluster: every host probed at once (remote::for_each_host), each in two
// round trips: the host probe (probe.h), then the neighbour pings on its ports (cables.h);
// then the cables merged from both sources into a ClusterState.
//
// Cost: wall time is that of the slowest host, about one SSH connection + the probe script
// (system_profiler dominates on a Mac, ~1-2 s) + 1 s of pings (2 s on a Mac), whatever the
// number of hosts up to the fan-out's thread count.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "discovery/cluster_state.h"
#include "discovery/probe.h"
#include "remote/executor.h"
#include "util/term.h"

namespace cc::discovery {

struct DiscoverTarget {
  remote::Executor* executor = nullptr;
  std::string fallback_address;  // management address when the probe reports none
};

struct DiscoverOptions {
  ProbeMode mode = ProbeMode::kScript;
  std::chrono::milliseconds timeout{60'000};  // per round trip and host
  std::optional<std::filesystem::path> collect_dir;  // save every raw output: DIR/HOST/KEY.*
  bool neighbours = true;                            // run the neighbour pings
};

/// Probes every target and merges the cables. Never fails as a whole: a host that cannot be
/// reached or probed becomes a HostProblem (exit_code 3 unreachable, 1 probe failed; the
/// message names the host, the command and what to do) and the others go on. Hosts keep the
/// targets' order. A failure to write the collect bundle is a HostProblem too.
ClusterState discover(std::span<const DiscoverTarget> targets, const DiscoverOptions& opts,
                      const util::OutputStyle& style);

}  // namespace cc::discovery
