// The cluster graph: the hosts of a discovery::ClusterState, each host's ports marked cabled or
// free, and the cables grouped per unordered host pair (parallel cables between one pair are
// multi-rail). Pure: built from the state alone, no I/O. Everything topology/ computes (checks,
// ring, cabling plan, report) starts here.
//
// Shapes:
//   - host index = position in ClusterState::hosts (the operator's order);
//   - port index = position in HostFacts::ports (receptacle order);
//   - cable index = position in ClusterState::cables.
// A port is cabled when some Cable end names it: same host and same interface, or, when the
// end's interface is "", same host and same receptacle (discovery/cluster_state.h, CableEnd).
// A cable end that names no host of the state, or no port of its host, is kept with an empty
// host / port index and counted nowhere (it cannot join a pair).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "discovery/cluster_state.h"
#include "discovery/host_facts.h"

namespace cc::topology {

/// One port of a host, as the graph sees it.
struct PortNode {
  discovery::CableEnd end;          // names the port (discovery::end_of)
  const discovery::Port* port;      // into the state; never null
  std::vector<std::size_t> cables;  // cable indices naming this port (normally 0 or 1)
  bool cabled() const { return !cables.empty(); }
  /// The depth-1 peer of kind kHost on this port's cable, or nullptr.
  const discovery::Peer* host_peer() const;
  /// Not cabled and nothing at all on the cable (no peer at depth 1): usable by a plan.
  bool free() const;
  /// Not cabled and its interface administratively down: a cable plugged into it is not seen
  /// (no neighbour answers over a port that is down), so it may hold one (checks.h, port-down).
  bool down() const;
};

struct HostNode {
  const discovery::HostFacts* facts;  // into the state; never null
  std::vector<PortNode> ports;        // same order as facts->ports
  const std::string& name() const { return facts->host; }
};

/// One cable of the state with its ends resolved.
struct CableEdge {
  std::optional<std::size_t> a_host, b_host;  // nullopt: the end names no host of the state
  std::optional<std::size_t> a_port, b_port;  // nullopt: no port of that host matches the end
  /// Both ends on hosts of the state, and on two different hosts.
  bool joins_two_hosts() const { return a_host && b_host && *a_host != *b_host; }
};

class ClusterGraph {
 public:
  /// Keeps a reference to `state`, which must outlive the graph. Cost: O(hosts + ports +
  /// cables) (hash indices of host names and of each host's interfaces and receptacles).
  explicit ClusterGraph(const discovery::ClusterState& state);
  ClusterGraph(discovery::ClusterState&&) = delete;

  const discovery::ClusterState& state() const { return *state_; }
  std::size_t size() const { return hosts_.size(); }
  const std::vector<HostNode>& hosts() const { return hosts_; }
  const HostNode& host(std::size_t i) const { return hosts_.at(i); }
  /// Same order as ClusterState::cables.
  const std::vector<CableEdge>& edges() const { return edges_; }
  const discovery::Cable& cable(std::size_t i) const { return state_->cables.at(i); }

  std::optional<std::size_t> host_index(std::string_view name) const;
  /// The port of host `h` that `end` names (see the file comment), or nullopt.
  std::optional<std::size_t> port_index(std::size_t h, const discovery::CableEnd& end) const;

  /// Indices of the cables between hosts a and b (a != b; either order), in cable order.
  const std::vector<std::size_t>& cables_between(std::size_t a, std::size_t b) const;
  /// Number of cables between hosts a and b: 0 = missing, 2+ = multi-rail. 0 when a == b.
  int multiplicity(std::size_t a, std::size_t b) const;
  /// n x n cable counts, 0 on the diagonal.
  std::vector<std::vector<int>> matrix() const;
  /// Every pair (i, j), i < j, with no cable, in lexicographic order.
  std::vector<std::pair<std::size_t, std::size_t>> missing_pairs() const;

 private:
  const discovery::ClusterState* state_;
  std::vector<HostNode> hosts_;
  std::vector<CableEdge> edges_;
  struct PortIndex {
    std::unordered_map<std::string, std::size_t> by_interface;  // first port with the name
    std::unordered_map<int, std::size_t> by_receptacle;         // first port with the number
  };
  std::unordered_map<std::string, std::size_t> host_at_;  // first host with the name
  std::vector<PortIndex> port_at_;                        // per host
  // Cabled pairs only (sparse: a cluster of n hosts has n^2 pairs but few cables), keyed
  // a * n + b; both (a,b) and (b,a).
  std::unordered_map<std::size_t, std::vector<std::size_t>> pairs_;
};

/// os.name is "macOS".
bool is_mac(const discovery::HostFacts& h);

/// A Mac Studio: model id Mac13,1 Mac13,2 (M1), Mac14,13 Mac14,14 (M2), Mac15,14 (M3 Ultra),
/// Mac16,9 (M4 Max), or a model / CPU string that says "Studio".
bool is_mac_studio(const discovery::HostFacts& h);

/// The Mac Studio port that does not carry RDMA: the TB5 port next to the Ethernet port (en2),
/// as reported by exo, not by Apple (docs/platform.md#ports-per-mac-model).
bool is_studio_en2(const discovery::HostFacts& h, const discovery::Port& p);

/// "h1-h2".
std::string pair_label(const ClusterGraph& g, std::size_t a, std::size_t b);

}  // namespace cc::topology
