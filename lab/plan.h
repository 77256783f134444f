// The pure half of `lab up`: names, the management subnet and receptacle numbering, computed
// from the lab name, the topology and the machine's existing IPv4 prefixes. Nothing here has a
// side effect, so every decision is unit-tested (plan_test.cc); lab_up.cc carries it out.
//
// Names. A lab NAME is 1-32 characters [A-Za-z0-9_-], starting with a letter or digit. Its tag,
// "cc" + 6 hex digits of FNV-1a(NAME), prefixes every interface in the root namespace, where
// names are limited to 15 bytes (IFNAMSIZ - 1): the bridge TAGbr and the root ends TAGm1..TAGm16
// of the management veths. Host hN is the network namespace cc-NAME-hN; inside it, en0 is the
// management interface (the role of a Mac's en0) and tb1, tb2, ... are its cable ports.
//
// Receptacle order. Each host numbers its cable ends by ascending peer host number; parallel
// cables to the same peer keep the order of the cable list (the topology's cables, then --extra
// in command-line order). So in a mesh, host i's tbK goes to the K-th other host in ascending
// order; in a ring, hN's tb1 goes to h1 and tb2 to h(N-1).
//
// MAC addresses are locally administered and deterministic: 02:T1:T2:T3:HH:PP where T1..T3 are
// the tag's bytes, HH the host number and PP the port number (00 for en0).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lab/topology.h"
#include "remote/inventory.h"
#include "util/ipv4.h"
#include "util/result.h"

namespace cc::lab {

using util::format_ipv4;
using util::format_prefix;
using util::Ipv4Prefix;
using util::overlaps;
using util::parse_ipv4_prefix;

/// The IPv4 prefixes in use on this machine, from `ip -j -4 route show table all` and
/// `ip -j -4 addr show` output. Default routes are skipped (they overlap everything by design).
/// Errors (kUsage) when either text is not the JSON `ip` prints.
util::Result<std::vector<Ipv4Prefix>> used_prefixes_from_ip_json(std::string_view route_json,
                                                                 std::string_view addr_json);

/// Checks a lab name (see the header comment). Errors (kUsage) say what is allowed. In remote/
/// (beside lab_dir) so that job records and --lab are checked the same way on every platform.
using remote::validate_lab_name;

/// "cc" + 6 hex digits: the prefix of the lab's interfaces in the root namespace.
std::string lab_tag(std::string_view name);
/// "cc-NAME-hN".
std::string netns_name(std::string_view name, int host);
/// "TAGbr".
std::string bridge_name(std::string_view tag);
/// "TAGmN": the root-namespace end of host N's management veth.
std::string mgmt_link_name(std::string_view tag, int host);
/// "TAGsHpP": the root-namespace end, never up, of host H's free port P (what makes tbP an
/// unplugged receptacle: up, no carrier).
std::string free_port_link_name(std::string_view tag, int host, int port);
/// True for the names bridge_name(tag), mgmt_link_name(tag, N) and free_port_link_name(tag, H,
/// P): how `lab down` recognises
/// the lab's root-namespace interfaces when its records are gone.
bool is_lab_link(std::string_view tag, std::string_view ifname);
/// "tbK" for receptacle K (1-based).
std::string port_name(int receptacle);
/// 02:T1:T2:T3:HH:PP (see the header comment); port 0 is en0.
std::string lab_mac(std::string_view tag, int host, int port);

/// The management interface's name inside every host.
inline constexpr std::string_view kMgmtInterface = "en0";

/// The prefixes a lab's management subnet never overlaps, whatever the machine's routes say:
/// the default base of `clusterctl network plan` (provision/network_plan.h,
/// kDefaultNetworkBase; a unit test keeps the two equal). A lab managed from inside it makes
/// `network apply` refuse the plan (a cable subnet would overlap the management network).
inline constexpr Ipv4Prefix kReservedPrefixes[] = {
    {(10u << 24) | (231u << 16), 16},  // 10.231.0.0/16
};

/// Candidate k (0, 1, ...) of lab `name`'s management subnet: 10.X.Y.0/24, X and Y from a
/// hash of the name and k. choose_subnet takes the first one that is free.
Ipv4Prefix subnet_candidate(std::string_view name, int k);

/// Chooses the lab's management /24: 10.X.Y.0/24 with X, Y from a hash of the name, so a lab
/// gets the same subnet every time unless that one is taken; on a collision with any `used`
/// prefix or with kReservedPrefixes, the next candidate of the same deterministic sequence is
/// tried. The bridge takes .254 and hosts .1 .. .N. Errors (kUsage) when 1000 candidates all
/// collide.
util::Result<Ipv4Prefix> choose_subnet(std::string_view name, const std::vector<Ipv4Prefix>& used);

/// One end of a cable.
struct PortEnd {
  int host = 0;     // 1-based host number
  int port = 0;     // receptacle number: the end is interface tb<port>
  std::string mac;  // lab_mac(tag, host, port)
  friend bool operator==(const PortEnd&, const PortEnd&) = default;
};

struct Cable {
  PortEnd a;
  PortEnd b;
  friend bool operator==(const Cable&, const Cable&) = default;
};

/// Numbers every host's cable ends in receptacle order (header comment). Cables come back in
/// the order given, each end with its port and MAC.
std::vector<Cable> number_ports(std::string_view tag, int hosts,
                                const std::vector<CablePair>& cables);

struct HostPlan {
  std::string name;       // "h1"
  std::string netns;      // "cc-NAME-h1"
  std::string address;    // management IPv4 address, e.g. "10.7.9.1"
  std::string mgmt_link;  // root-namespace end of the management veth, "TAGm1"
  std::string mgmt_mac;   // MAC of en0
  int ports = 0;          // number of cabled ports: tb1 .. tb<ports>
  int receptacles = 0;    // every port: tb<ports+1> .. tb<receptacles> are free (no cable)
};

/// Everything `lab up` is going to create.
struct LabPlan {
  std::string name;
  std::string tag;
  std::string topology;        // Topology::kind
  Ipv4Prefix subnet;           // a /24
  std::string bridge;          // "TAGbr"
  std::string bridge_address;  // .254 of the subnet
  std::vector<HostPlan> hosts;
  std::vector<Cable> cables;
};

/// Builds the plan. The name must be valid (validate_lab_name); `topology.hosts` in 1..16.
/// Receptacles: each host gets topology.receptacles ports (default: hosts - 1, like a Mac with
/// enough Thunderbolt 5 ports for a full mesh), and never fewer than its cables; the free ones
/// are unplugged ports: up, without carrier. Errors (kUsage): receptacles fewer than a host's
/// cables (the message names the host).
util::Result<LabPlan> make_plan(std::string_view name, const Topology& topology,
                                const std::vector<Ipv4Prefix>& used);

/// The `ip -batch` script, run in the root namespace, that creates the namespaces, the bridge
/// (with its address, up, its alias naming the lab), the management veths (root end on the
/// bridge, up) and one veth per cable, each end created directly in its host's namespace.
std::string root_batch(const LabPlan& plan);

/// `ip netns exec NETNS sysctl -q -w ...accept_dad=0` for all, default, en0 and every port of
/// `host`: run before the links come up, so IPv6 link-local addresses are never tentative.
std::vector<std::string> dad_off_command(const LabPlan& plan, const HostPlan& host);

/// The `ip -n NETNS -batch` script for one host: lo up, en0's address, en0 and every tbK up.
std::string host_batch(const LabPlan& plan, const HostPlan& host);

}  // namespace cc::lab
