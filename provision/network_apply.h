// `clusterctl network apply` and `network verify`: carrying out a network plan on live hosts
// and checking every cable end to end.
//
// Apply, per host (all hosts at once):
//  1. privileges: root, else passwordless sudo (`sudo -n true`), else none: the commands are
//     printed for the operator (`--manual`), never typed through a password prompt;
//  2. the changes, computed from the host's live facts against the plan, so applying twice
//     changes nothing:
//       Linux: `ip addr add A/LEN dev IF` for a missing address, `ip addr del OLD dev IF` for
//              another address from the plan's base on that port, `ip link set IF up`;
//       macOS: `ifconfig bridge0 deletem enX` for every cabled port still in an active bridge,
//              planned or not (topology::bridged_cabled_ports: exactly what verify-mesh's
//              thunderbolt-bridge check fails on; the bridge must be inactive when
//              Macs form loops: docs/platform.md#thunderbolt-bridge), `ifconfig enX inet A
//              netmask M alias`, `ifconfig enX inet OLD -alias`; with --persist, one network
//              service per port (`networksetup -createnetworkservice`, `-setmanual`) and the
//              Thunderbolt Bridge service disabled, which survive a reboot; without it nothing
//              survives a reboot, and the output says so;
//  3. the commands run one by one (10 s each); when one fails, the ones already run on that host
//     are undone in reverse order and the host's error names the failed command and its stderr.
//
// Verify: from each end of each planned cable, one ping to the other end's address bound to the
// cable's own interface (Linux `ping -I IF`, macOS `ping -b IF`), so a reply proves that cable and
// not a detour; and on RDMA ports, an IPv4-mapped GID (::ffff:A) for the planned address.
#pragma once

#include <string>
#include <vector>

#include "discovery/cluster_state.h"
#include "discovery/fix_command.h"
#include "discovery/probe.h"
#include "remote/executor.h"
#include "util/ipv4.h"
#include "util/term.h"

namespace cc::provision {

/// One command of a host's change set, with the command that undoes it (empty: none).
struct HostCommand {
  std::vector<std::string> argv;
  std::vector<std::string> undo;
  std::string why;  // "tb1: address 10.231.0.5/30 for the cable to h2 tb1"
};

struct HostChanges {
  std::string host;
  bool macos = false;
  std::vector<HostCommand> commands;  // empty: nothing to change
};

/// The change set of every host in `live` (its current facts) for `plan`. `base` is the plan's
/// base prefix: other addresses from it on a planned port are stale and removed. Pure.
std::vector<HostChanges> network_changes(const discovery::ClusterState& live,
                                         const std::vector<discovery::LinkAddress>& plan,
                                         const util::Ipv4Prefix& base, bool persist);

/// How commands reach privileges on a host.
enum class Privilege { kRoot, kSudo, kNone };

/// `id -u`, then `sudo -n true`. Errors: the executor's (unreachable).
util::Result<Privilege> detect_privilege(remote::Executor& ex);

/// argv as it runs with `p` ("sudo -n" prepended for kSudo).
std::vector<std::string> with_privilege(Privilege p, const std::vector<std::string>& argv);

/// What apply did on one host.
struct ApplyResult {
  std::string host;
  int applied = 0;         // commands run (0: no change)
  bool failed = false;     // a command failed: the host was rolled back
  bool interrupted = false;  // Ctrl-C stopped it (not a failure of a command): rolled back too
  std::string message;       // the failure or interruption, or "" when it went through
};

/// Runs `changes` on its host with privilege `p`, rolling back on failure (header comment). On
/// Ctrl-C it starts no further command and rolls back what it did (the undo commands run to
/// their 10 s timeout whatever Ctrl-C says: a half-applied host is worse than a slower exit);
/// `interrupted` is then set, not `failed`.
ApplyResult apply_host(remote::Executor& ex, const HostChanges& changes, Privilege p);

/// One cable's verification.
struct LinkCheck {
  discovery::LinkAddress link;
  bool a_to_b = false;  // a's ping over its interface reached b's address
  bool b_to_a = false;
  std::string a_problem;  // why a_to_b failed, or an RDMA GID problem at a's end
  std::string b_problem;
  bool ok() const { return a_to_b && b_to_a && a_problem.empty() && b_problem.empty(); }
};

/// The ping from `end` (on a host running macOS or not) to `address`.
discovery::ProbeCommand link_ping(bool macos, const std::string& interface,
                                  const std::string& address);

/// Checks every planned cable. `live` holds fresh facts (for the GID check); `pings[i]` are the
/// outputs of host i's link pings (run_commands over link_ping for each of its ends). An end
/// without its planned address says to run `fix.command("network apply")`.
std::vector<LinkCheck> check_links(const discovery::ClusterState& live,
                                   const std::vector<discovery::LinkAddress>& plan,
                                   const std::vector<discovery::ProbeOutputs>& pings,
                                   const discovery::FixCommand& fix = {"", "CLUSTER.json", ""});

/// Every link_ping a host runs for the plan.
std::vector<discovery::ProbeCommand> link_pings_of(const discovery::ClusterState& live,
                                                   const std::vector<discovery::LinkAddress>& plan,
                                                   const std::string& host);

}  // namespace cc::provision
