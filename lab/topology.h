// Which cables a lab has: a named topology (mesh, ring) or a YAML file, edited by --omit and
// --extra. Pure: no side effects except reading the topology file in resolve_topology().
//
// A topology file lists cables by host name; hosts are h1..hN:
//
//   hosts: 4                 # optional; must agree with --hosts when both are given
//   cables:
//     - [h1, h2]
//     - [h2, h3]
//     - [h2, h3]             # a second, parallel cable
//
// Errors name the file and line ("ring4.yaml:3: ...") and exit with ExitCode::kUsage.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace cc::lab {

/// Host count limits of a lab: 1..16 hosts (h1..h16).
inline constexpr int kMinHosts = 1;
inline constexpr int kMaxHosts = 16;

/// One cable between hosts h<a> and h<b> (1-based host numbers, a != b). The order of the two
/// ends is kept as written ("h3-h1" stays a=3, b=1).
struct CablePair {
  int a = 0;
  int b = 0;
  friend bool operator==(const CablePair&, const CablePair&) = default;
};

/// What the command line asked for.
struct TopologyRequest {
  int hosts = 4;
  bool hosts_given = false;        // --hosts was on the command line
  std::string topology = "mesh";   // "mesh", "ring" or the path of a YAML file
  std::vector<std::string> omit;   // "hA-hB": remove one such cable (either direction)
  std::vector<std::string> extra;  // "hA-hB": add one cable (parallel cables allowed)
  int receptacles = 0;             // ports per host; 0: enough for a full mesh (hosts - 1)
};

/// The resolved cable list of a lab.
struct Topology {
  int hosts = 0;
  std::string kind;  // "mesh", "ring" or "file:PATH", then " without hA-hB" / " plus hA-hB"
  std::vector<CablePair> cables;
  int receptacles = 0;  // ports per host (TopologyRequest::receptacles); 0 = hosts - 1
};

/// "h7" -> 7 when 1 <= 7 <= hosts. Errors (kUsage) say which names are valid.
util::Result<int> parse_host_name(std::string_view name, int hosts);

/// "h1-h2" -> {1, 2}. Errors (kUsage): malformed text, unknown host, a cable from a host to
/// itself.
util::Result<CablePair> parse_cable_pair(std::string_view text, int hosts);

/// Every pair (i, j), i < j, in lexicographic order: n(n-1)/2 cables.
std::vector<CablePair> mesh_cables(int hosts);

/// h1-h2, h2-h3, ..., hN-h1 (N cables). Two hosts: two parallel cables; one host: none.
std::vector<CablePair> ring_cables(int hosts);

/// The named topologies, "mesh" and "ring" (TopologyRequest::topology is one or a file).
std::vector<std::string> topology_names();

/// Parses a topology file's text. `source` names the file in errors. `hosts` is the --hosts
/// value; when `hosts_given` is false and the file has `hosts:`, the file's value is used.
util::Result<Topology> parse_topology_file(std::string_view text, std::string_view source,
                                           int hosts, bool hosts_given);

/// Checks the host count, builds the base topology (reading the file if it is one), then
/// applies --omit (each removes one matching cable; a missing cable is an error) and --extra
/// (each appends one cable).
util::Result<Topology> resolve_topology(const TopologyRequest& request);

}  // namespace cc::lab
