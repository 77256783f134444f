// Test-only: cluster states for the hostfile tests, built with topology/test_states.h.
#pragma once

#include <utility>
#include <vector>

#include "discovery/cluster_state.h"

namespace cc::provision::testing {

/// n Macs m1..mN (receptacle r = en<r+1> = rdma_en<r+1>), management address 10.0.0.1<i>,
/// port r of host i holding 10.254.<i><r>.<i> (a routable address: never a self-assigned one,
/// which no hostfile takes); no cables.
discovery::ClusterState macs(int n, int ports);

/// The 3-Mac mesh of tests/data/bundles/mac-mesh3 in code, m1-m2 doubled and crossed:
/// m1 en2 - m2 en3, m1 en3 - m2 en2, m1 en4 - m3 en2, m2 en4 - m3 en3 (state order); m3 en4 free.
discovery::ClusterState mesh3();

/// Lab hosts h1..hN as topology::testing::lab_mesh, every port tb<k> of host i holding
/// 192.0.2.<i><k>.
discovery::ClusterState addressed_lab(int n, const std::vector<std::pair<int, int>>& omit = {},
                                      const std::vector<std::pair<int, int>>& extra = {});

}  // namespace cc::provision::testing
