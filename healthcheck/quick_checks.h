// The checks of `clusterctl health --quick` (and the first part of every level): pure
// functions of the expected cluster (a saved cluster state: its hosts, cables and network
// plan) and of what each host's probe returned now (host_sample.h). No I/O.
//
// Host checks (subject: the host), in this order:
//   reachable           PASS probed (round trip in s) | FAIL: the probe failed (exit 1) or the
//                       host is unreachable (Report::unreachable, exit 3)
//   os-version          PASS same OS name, version and build as most hosts | FAIL otherwise
//                       (keep one macOS build on every node:
//                       docs/platform.md#failure-modes-of-the-apple-provider)
//   clusterctl-version  PASS same as this clusterctl | WARN missing on the host (not on its
//                       PATH: --remote-clusterctl) | FAIL another version
//   identity            only when the cluster state recorded the host's machine ID or SSH host
//                       key and the host reports it now: PASS the same | FAIL another machine
//                       answers under the host's name (replaced, reinstalled, or the name
//                       points elsewhere), naming what changed
//   macos-version       Macs: PASS >= host.macos_min_version | FAIL (RDMA needs 26.2)
//   rdma                PASS ready (provision/rdma_status.h), or a Linux host with no RDMA
//                       device (collectives use TCP) | WARN any other state, naming it and its
//                       fix | FAIL whenever not ready with host.rdma_required
//   thunderbolt-bridge  Macs: PASS bridge0 inactive or without cabled ports | FAIL (topology's
//                       thunderbolt-bridge finding: frames loop)
//   sleep               Macs: PASS sleep 0 | FAIL | WARN unreadable (provision/mac_hygiene.h)
//   clock-skew          PASS |offset from the hosts' median| + uncertainty <= clock_skew_max_s
//                       | FAIL when even offset - uncertainty exceeds it | WARN otherwise
//   free-memory         PASS available >= free_memory_min_gib | FAIL | WARN not readable
//   disk-space          PASS free >= free_disk_min_gib | FAIL | WARN not readable
// Cable checks (subject: cable_label, "h1:tb2-h3:tb1"), for every cable of the expected state:
//   link-up             PASS both ends' interfaces exist with carrier | FAIL naming each end
//                       that is missing or down | FAIL "not checked" when an end's host was not
//                       probed (then the cable's other checks are left out)
//   addresses           PASS each end holds its planned address | FAIL naming the end and the
//                       address | WARN no plan for this cable (`clusterctl network plan`)
//   link-speed          only when an end reports a Thunderbolt speed: PASS >= min_speed_gbps |
//                       FAIL ("TB4 link, RDMA impossible")
//   rdma                PASS both ports ready (or no device, as above) | WARN or FAIL as above
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "discovery/cluster_state.h"
#include "discovery/fix_command.h"
#include "healthcheck/check.h"
#include "healthcheck/host_sample.h"
#include "healthcheck/thresholds.h"

namespace cc::healthcheck {

/// One expected host and what its probe gave: a sample, or the problem (exit_code 3 =
/// unreachable, 1 = probe failed).
struct HostOutcome {
  std::string host;
  std::optional<HostSample> sample;
  std::optional<discovery::HostProblem> problem;
};

/// The hosts of the expected state in order: its probed hosts, then its problem hosts.
std::vector<std::string> expected_hosts(const discovery::ClusterState& expected);

/// The live cluster state: the samples' facts (host order kept) with the expected cables
/// between sampled hosts, the expected network plan, and the problems.
discovery::ClusterState live_state(const discovery::ClusterState& expected,
                                   const std::vector<HostOutcome>& outcomes);

/// Appends the host and cable checks above to `report` (and fills its version matrix and
/// unreachable list). `local_version` is this clusterctl's version; the fixes' commands name
/// the cluster as `fix` says (discovery/fix_command.h), so they run as printed.
void quick_checks(const discovery::ClusterState& expected, const std::vector<HostOutcome>& outcomes,
                  const Thresholds& t, const std::string& local_version, Report& report,
                  const discovery::FixCommand& fix = {});

}  // namespace cc::healthcheck
