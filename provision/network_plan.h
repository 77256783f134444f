// `clusterctl network plan`: one point-to-point IPv4 subnet per cable (pure).
//
// Why: every cabled Thunderbolt port needs an IPv4 address, because the IPv4-mapped GID that
// RDMA connects through exists only while the interface has one
// (docs/platform.md#gid-table-and-addressing), and RDMA cannot route, so each cable is its own
// link.
//
// Rules:
//  - Subnets come from a base prefix (default 10.231.0.0/16; never 192.168.0.0/24, MLX's fixed
//    choice, which collides with home and office LANs). A cable between two Linux hosts gets a
//    /31 (RFC 3021), any cable with a Mac end a /30; both sit in a /30 slot of the base.
//  - Deterministic and stable: a cable's slot is FNV-1a(its two ends, "host:interface", sorted)
//    modulo the number of slots, probing forward past slots that are taken. Cables are placed in
//    a fixed order (sorted by that identity), so the same cluster always gives the same plan,
//    and re-plugging one cable changes only that cable's subnet (unless its new hash collides).
//  - A slot is taken when it overlaps an address any host already has on another interface
//    (management, Wi-Fi, docks; the cable's own ends may hold the planned addresses already:
//    that is what makes a second `apply` a no-op), or a subnet already given to another cable.
//  - The a-end (ClusterState order) gets the first usable address, the b-end the second.
//
// Cost: O(cables x hosts' addresses) plus probing; instant for any cluster of 2-64 hosts.
#pragma once

#include <string>
#include <vector>

#include "discovery/cluster_state.h"
#include "util/ipv4.h"
#include "util/result.h"

namespace cc::provision {

inline constexpr const char* kDefaultNetworkBase = "10.231.0.0/16";

struct NetworkPlanOptions {
  util::Ipv4Prefix base{(10u << 24) | (231u << 16), 16};  // kDefaultNetworkBase
};

/// The plan for every cable of `state`, in the order of state.cables. Errors (kUsage): a base
/// shorter than /8 or longer than /29, or 192.168.0.0/24 itself; a base that overlaps a host's
/// management address; more cables than free slots (the message says how many are needed).
util::Result<std::vector<discovery::LinkAddress>> plan_network(const discovery::ClusterState& state,
                                                               const NetworkPlanOptions& opts);

/// The plan entry for the cable whose ends are `a` and `b` (either order), or nullptr.
const discovery::LinkAddress* find_link(const std::vector<discovery::LinkAddress>& plan,
                                        const discovery::CableEnd& a,
                                        const discovery::CableEnd& b);

/// Why a saved plan entry has no cable in a cluster state (keep_plan).
enum class Unseen {
  kNotProbed,    // a host of it was not probed (state.problems) or is not in the state
  kNoPort,       // a host of it no longer has the port (interface, receptacle)
  kNotSeen,      // both ports are there, but no cable joins them now: a port down, a cable
                 // loose or pulled
  kNoInterface,  // the cable is there, but an end has no IP interface to address: a Mac
                 // receptacle `networksetup -listallhardwareports` names no "Thunderbolt N"
                 // hardware port for (docs/platform.md#discovering-cables-on-macos)
};

struct DroppedLink {
  discovery::LinkAddress link;
  Unseen why = Unseen::kNotSeen;
  std::string reason;  // "h3 was not probed", "h1 has no port tb4 now", "the cable is not seen
                       // now: h2 tb3: administratively down" (topology::cable_link's words),
                       // else "the cable is not seen now (a port down, a cable loose or pulled)"
  std::string fix;     // kNotSeen with an end down now: topology::cable_link's fix ("bring the
                       // port that is down up: on h2 `sudo ip link set dev tb3 up`; ..."); ""
};

/// A saved plan checked against the cables a cluster state sees now: `kept` are the entries
/// whose cable is among now.cables (find_link's rule, either orientation), in plan order;
/// `dropped` the others, each with why. What `discover -o FILE` keeps of FILE's plan, and what
/// `network apply` can apply (the dropped ones are its cables that are down). Pure; O(plan x
/// cables).
struct KeptPlan {
  std::vector<discovery::LinkAddress> kept;
  std::vector<DroppedLink> dropped;
};
KeptPlan keep_plan(const std::vector<discovery::LinkAddress>& plan,
                   const discovery::ClusterState& now);

/// Moves the entries of `plan` with an end whose IP interface is unknown (CableEnd::interface
/// empty: a Mac receptacle without a "Thunderbolt N" hardware port) out of `plan`, and returns
/// them in plan order (Unseen::kNoInterface, the reason naming that end). No command can
/// address such an end: `ifconfig '' inet ...` is what `network apply` used to print for it.
std::vector<DroppedLink> take_links_without_interface(std::vector<discovery::LinkAddress>& plan);

/// The end of `l` without an IP interface (a before b), or nullptr when both have one.
const discovery::CableEnd* end_without_interface(const discovery::LinkAddress& l);

/// The cables of `cables` that have no entry in `plan`, in their order.
std::vector<discovery::Cable> unplanned_cables(const std::vector<discovery::Cable>& cables,
                                               const std::vector<discovery::LinkAddress>& plan);

/// Per-host view of a plan: (interface, address, prefix length) for every cable end on `host`.
struct EndAddress {
  std::string interface;
  std::string address;
  int prefix_length = 30;
  std::string peer;  // "h2 tb1": the other end, for messages
};
std::vector<EndAddress> addresses_of(const std::vector<discovery::LinkAddress>& plan,
                                     const std::string& host);

}  // namespace cc::provision
