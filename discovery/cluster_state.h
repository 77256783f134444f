// The cluster state: what `clusterctl discover` found, written by `discover -o cluster.json`
// and read by every later command (verify-mesh, network, hostfile, launch, health). It holds
// each host's facts (host_facts.h), the cables merged from the two independent sources, and the
// hosts that could not be probed. It is built only from what the hosts report, never from a
// lab's own records.
//
// JSON shape (schema "clusterctl.cluster/1"; field names are stable):
//   {"schema": "clusterctl.cluster/1", "created_at": "2026-11-30T18:00:00Z",
//    "hosts": [HostFacts, ...],                     // in the operator's order
//    "cables": [{"a": {"host": "h1", "interface": "tb1", "receptacle": null,
//                      "rdma_device": null},
//                "b": {"host": "h2", "interface": "tb1", "receptacle": null,
//                      "rdma_device": null},
//                "link_speed_gbps": 0, "generation": 0,
//                "sources": ["neighbour"],           // "thunderbolt", "neighbour"
//                "seen_from_a": true, "seen_from_b": true}, ...],
//    "problems": [{"host": "h3", "exit_code": 3, "message": "h3: ..."}],
//    "network": [{"a": CableEnd, "b": CableEnd, "subnet": "10.231.0.4/30",
//                 "a_address": "10.231.0.5", "b_address": "10.231.0.6",
//                 "prefix_length": 30}, ...],
//    "lab": "t3a"}                                  // only when discovered with --lab NAME
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "discovery/host_facts.h"
#include "util/atomic_file.h"
#include "util/result.h"

namespace cc::discovery {

inline constexpr const char* kClusterSchema = "clusterctl.cluster/1";

/// One end of a cable: a host and one of its ports (HostFacts::ports), named by interface
/// and, on a Mac, by receptacle number.
struct CableEnd {
  std::string host;
  std::string interface;                   // "en6", "tb2", "thunderbolt0"; "" if unknown
  std::optional<int> receptacle;           // Thunderbolt receptacle (macOS); nullopt on Linux
  std::optional<std::string> rdma_device;  // "rdma_en6", "rxe_tb1" when the port has one
  friend bool operator==(const CableEnd&, const CableEnd&) = default;
};

/// How a cable was seen.
enum class CableSource {
  kThunderbolt,  // a port's depth-1 peer names the domain UUID of another host's port
  kNeighbour,    // IPv6 all-nodes multicast on a port answered from another host's port
};

struct Cable {
  CableEnd a;               // a < b: hosts in cluster order, then port order
  CableEnd b;
  int link_speed_gbps = 0;  // per direction; 0 = unknown (a lab veth, Linux without sysfs)
  int generation = 0;       // Thunderbolt generation of the link; 0 = unknown
  std::vector<CableSource> sources;  // sorted, no duplicates, never empty
  bool seen_from_a = false;          // a's own probe reported the cable
  bool seen_from_b = false;
};

/// A host that was not probed: unreachable (exit_code 3), its destination refused before any
/// connection (2: the operator's input is wrong, e.g. a link-local IPv6 address without its
/// %scope), or its probe failed (1).
struct HostProblem {
  std::string host;
  int exit_code = 1;    // util::ExitCode as a number: kUnreachable (3), kUsage (2), kCheckFailed (1)
  std::string message;  // starts with the host, says what to do
  /// Not reached at all (SSH failed, timed out), as opposed to reached with a probe that failed.
  bool unreachable() const { return exit_code == util::to_int(util::ExitCode::kUnreachable); }
  /// Never tried: how the host is named (its SSH destination, the HostName it resolves to) was
  /// refused as the operator's mistake, which the message says how to fix.
  bool bad_destination() const { return exit_code == util::to_int(util::ExitCode::kUsage); }
  /// The exit code the problem stands for: kUnreachable, kUsage or kCheckFailed (any other
  /// number, from a file written by hand, is a failed probe).
  util::ExitCode code() const;
};

/// The problem of `host` whose probe ended with `e`: its exit code kept when it is kUnreachable
/// or kUsage (a destination refused before connecting), else kCheckFailed; the message starts
/// with the host (added when `e`'s does not).
HostProblem host_problem(const std::string& host, const util::Error& e);

/// The addresses `clusterctl network plan` gave one cable: a point-to-point subnet, one address
/// per end. Stored in the cluster state so every later command (hostfile, launch) uses them.
struct LinkAddress {
  CableEnd a;             // the cable's ends, as in Cable
  CableEnd b;
  std::string subnet;     // "10.231.0.4/30"
  std::string a_address;  // "10.231.0.5"
  std::string b_address;  // "10.231.0.6"
  int prefix_length = 30;  // 30, or 31 when both ends run Linux (RFC 3021)
};

struct ClusterState {
  std::string created_at;       // ISO 8601 UTC, second precision
  std::vector<HostFacts> hosts;  // the operator's order (inventory / --hosts / hostfile)
  std::vector<Cable> cables;     // sorted by (a.host index, a port, b.host index, b port)
  std::vector<HostProblem> problems;
  std::vector<LinkAddress> network;  // the saved network plan (empty until `network plan`)
  /// The emulated lab the hosts were discovered on (`--lab NAME`), so later commands given
  /// this state reach its hosts through that lab; "" for real hosts (written only when set).
  std::string lab;

  /// The host's facts, or nullptr.
  const HostFacts* find_host(const std::string& name) const;
};

const char* to_string(CableSource s);  // "thunderbolt", "neighbour"

/// "receptacle 2 (en6)" on a Mac, "tb4" on Linux, "receptacle 3" when no interface is known.
std::string port_label(const CableEnd& end);
/// "h2 receptacle 2 (en6)".
std::string end_label(const CableEnd& end);
/// The end for `port` of `host` (interface, receptacle and RDMA device copied).
CableEnd end_of(const HostFacts& host, const Port& port);

/// Two host entries that are one machine under two names ("studio1" and "studio1.local").
struct SameMachine {
  std::size_t first = 0, second = 0;  // indices into the host list, first < second
  /// Every piece of evidence, "; " between them: "both have Thunderbolt domain UUID
  /// 0000...0001 (receptacle 1 on studio1, receptacle 1 on studio1.local)", "both have machine
  /// ID 3d12... (/etc/machine-id)", "both have hardware UUID 5E0F... (IOPlatformUUID)", "both
  /// have SSH host key SHA256:...", "both have the management address 10.0.0.11".
  std::string why;
  /// When the only evidence is what a cloned disk image carries along (a Linux machine ID, an
  /// SSH host key), they may be two machines cloned from one image: how to give one of them
  /// its own ("if they are two machines cloned from one image, ..."). "" otherwise.
  std::string advice;
};

/// Pairs of hosts that are the same machine, by any of:
///  - a shared Thunderbolt domain UUID (each port has its own, unique to the machine);
///  - the same machine ID (HostFacts::machine_id: the Mac's hardware UUID, Linux's
///    /etc/machine-id);
///  - the same SSH host key fingerprint (HostFacts::ssh_host_key);
///  - the same management address, when nothing tells them apart: the same Thunderbolt domain
///    UUIDs (or none on both), and no machine IDs or host keys known on both that differ. Two
///    machines behind different NATs that report the same private address but own different
///    domain UUIDs, machine IDs or host keys are not flagged.
/// Each pair once, in host order, with all its evidence. Cost: O((hosts + ports) log hosts).
std::vector<SameMachine> same_machines(const std::vector<HostFacts>& hosts);

void to_json(nlohmann::json& j, const CableEnd& v);
void to_json(nlohmann::json& j, const Cable& v);
void to_json(nlohmann::json& j, const HostProblem& v);
void to_json(nlohmann::json& j, const LinkAddress& v);
void to_json(nlohmann::json& j, const ClusterState& v);

/// The state back from its JSON. Errors (kUsage): another schema, a wrong field type, an
/// unknown source; and the references between its parts: a host without a name or named
/// twice, two hosts that are one machine (same_machines), a cable or network entry whose end
/// names no host or no port of that host (an interface it does not have, a receptacle < 1 or
/// not its own), a cable from a host to itself, the same cable twice (either way round), a
/// cable without sources, a problem without a host. The message starts "cluster state: ",
/// names each bad value by its JSON path ("cables[3].b.host: \"ghost\" is not a host of this
/// state (its hosts: a, b)") and lists every such problem of the file ("N problems:" and one
/// per line) when there are several.
/// `plan_again` is the command a problem of the network plan suggests ("plan again with ...").
util::Result<ClusterState> cluster_state_from_json(
    const nlohmann::json& j, const std::string& plan_again = "clusterctl network plan");

/// Reads a cluster state file. Errors (kUsage): unreadable file, invalid JSON (with line and
/// column), the errors above; every message starts with the path and says how to make one,
/// runnable as printed: `clusterctl GLOBAL discover -o 'FILE'` (the path shell-quoted), where
/// GLOBAL is `global`, the quoted global options of the command that reads it that select the
/// hosts ("--lab t3a", "--inventory 'my inv.yaml'"), else "--lab NAME" when the file, though
/// bad, still says which lab it was discovered on ("lab": "NAME"), else nothing.
/// A problem of the network plan says to plan again with `clusterctl network plan GLOBAL
/// 'FILE'`; `replan` (network plan itself) reads the file without its plan, which it replaces.
util::Result<ClusterState> load_cluster_state(const std::string& path,
                                              std::string_view global = "", bool replan = false);

/// Writes the state atomically (util::write_file_atomic), pretty-printed, with a final newline.
util::Status save_cluster_state(const ClusterState& state, const std::string& path);

/// What `discover -o FILE` and `network plan -o FILE` replace without --force
/// (util::check_output_path): a cluster state, known by its look, a JSON object whose "schema"
/// is kClusterSchema (one load_cluster_state would refuse for its content is still one).
util::OwnOutput cluster_state_output();

}  // namespace cc::discovery
