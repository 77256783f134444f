// The mesh checks of `clusterctl verify-mesh`: pure functions of the cluster graph that return
// findings (topology/finding.h). The platform facts behind them are in docs/platform.md
// (#rdma-devices-and-port-states, #thunderbolt-bridge, #link-speeds, #ports-per-mac-model).
//
// Check ids, severity, and what triggers them:
//   cluster (checks.cc)
//     unreachable        fail  a host could not be reached (ClusterState::problems, exit 3)
//     bad-destination    fail  a host's SSH destination was refused before any connection
//                              (a problem with exit code 2, e.g. fe80::1 without its %scope):
//                              the message says how to name it; verify-mesh exits 2
//     probe-failed       fail  a host's probe failed (any other problem)
//     host-count         fail  --expect-hosts differs from the hosts named (probed or not)
//     too-few-ports      fail  a host has fewer ports than n - 1: it can never be in a full
//                              mesh ("an n-host mesh needs n(n-1)/2 cables and n-1 TB5 ports")
//     missing-cable      fail  a host pair with no direct cable ("RDMA cannot route"); beyond
//                              kListedPairs pairs, one more finding (no hosts) counts the rest
//     port-down          fail  a missing pair (listed as missing-cable would be) where a port
//                              without a cable on one or both hosts is administratively down:
//                              a cable plugged into a port that is down is not seen (no
//                              neighbour answers over it), so the cable may be there. Names the
//                              port and the command that brings it up (link_up_command); each
//                              such port explains one pair (down_pairs): the one the state's
//                              network plan records it facing, else, said to be a guess, the
//                              first in pair order
//     self-cable         fail  a cable from a host to itself
//     one-sided-cable    warn  a cable seen from one end only
//     one-source-cable   warn  a cable seen by one source only, where both ports report their
//                              Thunderbolt identity (domain UUID) and the other source was
//                              used for some cable of the state (so it could have seen it);
//                              not for a cable seen by Thunderbolt only with an end that has no
//                              hardware port (no-interface says why nothing answers over IP)
//     foreign-host       warn  a port cabled to a Thunderbolt host outside the cluster (a
//                              depth-1 host peer whose domain UUID is no port of any host)
//     behind-hub         fail  a cable of the cluster through a hub or dock (through_hub): not
//                              a direct link ("hub-mediated links are not supported for
//                              RDMA"); one finding per cable, naming both ends
//                        warn  a host peer at depth >= 2 on a port with no such cable
//     no-rdma            warn  a non-Mac host without RDMA devices: collectives fall back to
//                              TCP (Soft-RoCE can add devices:
//                              docs/platform.md#soft-roce)
//     multi-rail         info  two or more cables between one pair (allowed)
//     mtu-mismatch       fail  the two ends of a cable report different MTUs: frames longer
//                              than the smaller one are dropped one way (NVIDIA/nccl#1524)
//     duplicate-address  fail  one IPv4 address on two interfaces of a host (a cabled port
//                              among them: the host sends to that subnet out of one only, so
//                              the other cable is unused, while a ping naming its interface
//                              still answers), or on cabled ports of two hosts
//     device-port        info  a dock, display or drive on a port (the port is not free)
//   per Mac, os.name "macOS" (mac_checks.cc)
//     rdma-disabled      fail  `rdma_ctl status` says disabled (enable from macOS Recovery)
//     rdma-unsupported   fail  no rdma_ctl: macOS older than 26.2 ("needs macOS 26.2 or later")
//     rdma-unknown       warn  the RDMA state was not probed
//     tb4-only           fail  RDMA enabled, no RDMA device, every link below 80 Gb/s: the Mac
//                              has Thunderbolt 4 hardware only (rdma_port.h,
//                              thunderbolt4_only); it can use TCP over the cables, never RDMA
//     rdma-port-down     fail  a cabled port's RDMA device is PORT_DOWN; when the peer has
//                              RDMA disabled (its own rdma_ctl, or the Thunderbolt peer item
//                              without the "rdma" XDomain service) the message names it ("A
//                              port is PORT_ACTIVE only when the Mac at the other end ...")
//     tb4-link           fail  a cable below 80 Gb/s (or generation 3/4): "TB4 link, RDMA
//                              impossible"; link_speed_gbps 0 is unknown: no finding
//     thunderbolt-bridge fail  a bridge that is up (bridge0, the Thunderbolt Bridge) with cabled
//                              port interfaces as members (frames loop); exactly the ports
//                              `network apply` takes out of it (bridged_cabled_ports)
//     no-ipv4            fail  a cabled port whose interface has no IPv4: no IPv4-mapped GID
//                              (GID[1]), so moving a QP to RTR fails with errno 22
//     no-interface       fail  a cabled receptacle with no IP interface: networksetup lists
//                              no "Thunderbolt N" hardware port for it (instead of no-ipv4,
//                              whose `network apply` cannot address it)
//     studio-en2         warn  a cable on a Mac Studio's en2 (reported by exo, not Apple)
//     macos-build        warn  Macs on different macOS builds
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "discovery/fix_command.h"
#include "topology/finding.h"
#include "topology/graph.h"

namespace cc::topology {

/// At most this many missing pairs get a finding (and a plan entry, and a DOT edge) each; the
/// rest are counted in one more. A 1,000-host state without cables has ~500,000 missing pairs:
/// listing each would make the report hundreds of megabytes and take minutes.
inline constexpr std::size_t kListedPairs = 256;

struct CheckOptions {
  std::optional<int> expect_hosts;  // --expect-hosts N
  /// How the findings' fixes name the cluster, so each `clusterctl ...` they suggest runs as
  /// printed (cli/ fills it: the state file, --lab NAME). Default: bare commands.
  discovery::FixCommand fix{};
};

/// Every finding, in a deterministic order: the cluster checks, then the per-Mac checks; hosts
/// and ports in cluster order. Never throws for any state (missing facts give fewer findings,
/// not errors). The report (topology/report.h) orders them by severity.
std::vector<Finding> run_checks(const ClusterGraph& g, const CheckOptions& opts = {});

/// The per-Mac checks alone (mac_checks.cc), appended to `out`; their fixes name the cluster as
/// `fix` says.
void run_mac_checks(const ClusterGraph& g, const discovery::FixCommand& fix,
                    std::vector<Finding>& out);

/// True when cable `i` joins two hosts through a hub or dock: the port at one of its ends has
/// no host on the cable itself (depth 1) but a host behind a hub or dock (depth >= 2). Such a
/// cable is no direct link: it carries no RDMA, and verify-mesh and the hostfiles do not count
/// it as cabling its pair.
bool through_hub(const ClusterGraph& g, std::size_t i);

/// A cabled port of a Mac that is a member of a bridge that is up (on macOS the Thunderbolt
/// Bridge, bridge0): frames loop between the Macs of a mesh. What the thunderbolt-bridge check
/// fails on, and exactly what `clusterctl network apply` takes out of the bridge, so that the
/// check passes after it. A port without a cable may stay in the bridge (nothing loops there).
struct BridgedPort {
  std::string bridge;     // "bridge0"
  std::string interface;  // "en6"
  discovery::CableEnd end;
};
/// Host `h`'s bridged cabled ports, in port order; empty for a host that is not a Mac.
std::vector<BridgedPort> bridged_cabled_ports(const ClusterGraph& g, std::size_t h);

/// The missing-cable and port-down findings alone: every pair of the full mesh (n(n-1)/2) that
/// has no cable, as run_checks reports them. What `clusterctl network verify` without a state
/// file judges the live cables against.
std::vector<Finding> pair_checks(const ClusterGraph& g);

/// A port that is down (PortNode::down) taken to explain a missing pair.
struct DownEnd {
  std::size_t host = 0;  // graph indices
  std::size_t port = 0;
  /// The end the state's network plan (ClusterState::network) joins this port to, on the
  /// pair's other host: evidence that the pair's cable is in this port. nullopt: a guess.
  std::optional<discovery::CableEnd> recorded_peer;
};

/// A missing pair and the down ports that may hide its cable (one per host at most when
/// guessed; the recorded ones when the plan says).
struct DownPair {
  std::size_t a = 0, b = 0;  // host indices, a < b
  std::vector<DownEnd> ends;
  /// True when some end is recorded (the plan's evidence), false when the pair is a guess.
  bool recorded() const;
};

/// Which missing pair each down port explains, each port at most one pair; keyed a * n + b.
/// First the evidence: a network plan entry of the state (`network plan`, kept by `network
/// apply` and `discover -o` for a cable that is down) whose cable is not seen now, with an end
/// on a down port: that port faced that entry's other end (when the pair has a cable anyway,
/// the port is taken and explains nothing). Then the guess, for the ports left: missing pairs
/// in pair order, each taking the first down port left on each of its two hosts. The
/// port-down findings and the cabling plan (plan.h: "bring up", never "plug") both read it.
/// Cost: O(plan entries + ports + missing pairs), stopping once no down port is left.
std::unordered_map<std::size_t, DownPair> down_pairs(const ClusterGraph& g);

/// The command that brings interface `itf` of host `h` up, shell-quoted (remote::shell_quote):
/// Linux `sudo ip link set dev tb3 up`, macOS `sudo ifconfig en2 up`.
std::string link_up_command(const discovery::HostFacts& h, const std::string& itf);

/// The one judgement of whether a cable's link is up now, from its two hosts' live facts:
/// health's link-up check, `network verify|apply`'s cable down, and launch's check of the
/// cables it routes over all say it in these words. Per end: its port missing (no interface),
/// administratively down (the fix is a command: link_up_command), or up without carrier.
struct CableLink {
  bool up = true;
  /// "h2 tb3: administratively down", "h3 tb1: no carrier", "h4 tb2: port missing", one per
  /// end that is not up ("" ends left out).
  std::vector<std::string> bad;
  /// "on h2 `sudo ip link set dev tb3 up`", one per end that is administratively down.
  std::vector<std::string> bring_up;
  /// What to do, in order: the bring_up commands first (a far end without carrier is what a
  /// port down at this end looks like), then reseating the cable. "" when up.
  std::string fix;
};
/// `ha` / `hb` are the live facts of the hosts of `a` / `b`; nullptr: not probed (the end is
/// then left out of the judgement).
CableLink cable_link(const discovery::CableEnd& a, const discovery::CableEnd& b,
                     const discovery::HostFacts* ha, const discovery::HostFacts* hb);

/// The one line that says a cable is down, with its fix: "cable h1 tb1 - h2 tb1 is down: h2
/// tb1: administratively down; fix: bring the port that is down up: ..." (launch's check of the
/// cables it routes over and of an MLX hostfile's cables both say it so). `link` is
/// cable_link(a, b, ...) and not up. An end with no interface and no receptacle (a far end not
/// known) is named by its host alone.
std::string cable_down_line(const discovery::CableEnd& a, const discovery::CableEnd& b,
                            const CableLink& link);

/// "h1 tb1 - h2 tb1": both ends of cable `i` (discovery::end_label).
std::string cable_label(const ClusterGraph& g, std::size_t i);

/// The host at the other end of cable `i` from host `h`, or nullopt when the cable does not
/// join `h` to another host of the cluster.
std::optional<std::size_t> other_host(const ClusterGraph& g, std::size_t i, std::size_t h);

}  // namespace cc::topology
