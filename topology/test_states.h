// Synthetic cluster states for the topology tests, built in code: lab-like Linux hosts
// (interfaces tb1..tbN, no receptacles, no RDMA, cables seen by neighbour probing) and Macs
// (receptacle r = interface en<r+1> = rdma_en<r+1>, Thunderbolt identities, RDMA enabled,
// 80 Gb/s, IPv4 on every port).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "discovery/cluster_state.h"
#include "topology/finding.h"

namespace cc::topology::testing {

/// A lab host "name" (Debian 12) with `ports` ports tb1..tb<ports>, all up, no addresses.
discovery::HostFacts lab_host(const std::string& name, int ports);

/// n lab hosts h1..hN cabled like `lab up --hosts n --omit ... --extra ...`: the mesh pairs in
/// order minus `omit`, then `extra` (1-based host numbers); each host's cables take its ports
/// in that order (tb1, tb2, ...), and every host has at least `min_ports` ports (default
/// n - 1), the unused ones free.
discovery::ClusterState lab_mesh(int n, const std::vector<std::pair<int, int>>& omit = {},
                                 const std::vector<std::pair<int, int>>& extra = {},
                                 int min_ports = 0);

/// A Mac "name": macOS 26.2 (25C56), model `model`, `ports` Thunderbolt 5 ports, RDMA enabled
/// with one rdma_en<r+1> device per port (PORT_DOWN until cabled), bridge0 inactive.
discovery::HostFacts mac_host(const std::string& name, int ports,
                              const std::string& model = "Mac16,11");

/// Cables receptacle `ra` of Mac `a` to receptacle `rb` of Mac `b`: depth-1 host peers on both
/// ports (advertising RDMA when the other Mac has it enabled), ports PORT_ACTIVE when both
/// have RDMA enabled, and a Cable seen by Thunderbolt from both ends. Keeps cables sorted.
void cable_macs(discovery::ClusterState& s, const std::string& a, int ra, const std::string& b,
                int rb, int speed_gbps = 80, int generation = 5);

/// n Macs m1..mN with `ports` ports each, fully meshed in pair order (host i's cable to host j
/// on its next unused receptacle).
discovery::ClusterState mac_mesh(int n, int ports);

/// Turns RDMA off on Mac `name` as `rdma_ctl disable` and a reboot would: no devices, its
/// peers' items stop advertising RDMA, the other ends' RDMA ports go PORT_DOWN.
void disable_rdma(discovery::ClusterState& s, const std::string& name);

/// Makes receptacle `r` of Mac `name` a port macOS has made no "Thunderbolt N" hardware port
/// for, as discovery records it when networksetup does not list one: no interface and no RDMA
/// device on the port or its cable's end (which names the receptacle only), and the cable seen
/// by Thunderbolt alone (nothing answers over IP), while the other cables were seen by
/// neighbour probing too.
void drop_hardware_port(discovery::ClusterState& s, const std::string& name, int r);

/// Two Macs cabled at 40 Gb/s (Thunderbolt 4), one port each: m1 has Thunderbolt 4 hardware
/// only (a MacBook Air M2: `rdma_ctl` says enabled, ibv_devices lists nothing), m2 is a
/// Thunderbolt 5 Mac.
discovery::ClusterState tb4_only_pair();

/// Puts a dock between the two Macs of cable `i`, as a trial found one: each end sees the
/// dock on its cable (depth 1) and the other Mac behind it (depth 2); only neighbour probing
/// (IP through the dock) saw the cable.
void through_dock(discovery::ClusterState& s, std::size_t i);

/// Sorts cables as ClusterState documents (host index, then port order).
void sort_cables(discovery::ClusterState& s);

/// Host `name`'s port whose interface is `itf` (throws std::out_of_range when none).
discovery::Port& port(discovery::ClusterState& s, const std::string& name, const std::string& itf);
discovery::HostFacts& host(discovery::ClusterState& s, const std::string& name);

/// The findings of one check, in order.
std::vector<Finding> of_check(const std::vector<Finding>& all, const std::string& check);
/// The check ids of `all`, in order.
std::vector<std::string> check_ids(const std::vector<Finding>& all);

}  // namespace cc::topology::testing
