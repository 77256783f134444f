#include "provision/hostfile_test_states.h"

#include <fmt/format.h>

#include "topology/test_states.h"

namespace cc::provision::testing {

using discovery::ClusterState;

ClusterState macs(int n, int ports) {
  ClusterState s;
  for (int i = 1; i <= n; ++i) {
    auto h = topology::testing::mac_host(fmt::format("m{}", i), ports);
    h.management_address = fmt::format("10.0.0.1{}", i);
    for (int r = 1; r <= ports; ++r) {
      h.ports[static_cast<std::size_t>(r - 1)].interface->ipv4 = {
          fmt::format("10.254.{}{}.{}", i, r, i)};
    }
    s.hosts.push_back(h);
  }
  return s;
}

ClusterState mesh3() {
  ClusterState s = macs(3, 3);
  topology::testing::cable_macs(s, "m1", 1, "m2", 2);
  topology::testing::cable_macs(s, "m1", 2, "m2", 1);
  topology::testing::cable_macs(s, "m1", 3, "m3", 1);
  topology::testing::cable_macs(s, "m2", 3, "m3", 2);
  return s;
}

ClusterState addressed_lab(int n, const std::vector<std::pair<int, int>>& omit,
                           const std::vector<std::pair<int, int>>& extra) {
  ClusterState s = topology::testing::lab_mesh(n, omit, extra);
  for (std::size_t i = 0; i < s.hosts.size(); ++i) {
    for (std::size_t k = 0; k < s.hosts[i].ports.size(); ++k) {
      s.hosts[i].ports[k].interface->ipv4 = {fmt::format("192.0.2.{}{}", i + 1, k + 1)};
    }
  }
  return s;
}

}  // namespace cc::provision::testing
