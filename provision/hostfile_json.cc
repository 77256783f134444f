// The clusterctl.hostfile/1 document (schema in hostfile.h).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "provision/hostfile.h"
#include "topology/ring.h"
#include "util/address.h"
#include "util/json_text.h"

namespace cc::provision {
namespace {

using nlohmann::ordered_json;
using topology::ClusterGraph;

template <class T>
ordered_json or_null(const std::optional<T>& v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}

ordered_json or_null(const std::string& s) {
  return s.empty() ? ordered_json(nullptr) : ordered_json(s);
}

ordered_json cable_json(const ClusterGraph& g, std::size_t c, std::size_t h, std::size_t peer) {
  const auto& cable = g.cable(c);
  const bool a = g.edges()[c].a_host == h;
  const auto& mine = a ? cable.a : cable.b;
  const auto& theirs = a ? cable.b : cable.a;
  return {{"interface", or_null(mine.interface)},
          {"receptacle", or_null(mine.receptacle)},
          {"rdma_device", or_null(cable_end_device(g, c, h))},
          {"address", or_null(cable_end_address(g, c, h))},
          {"peer_interface", or_null(theirs.interface)},
          {"peer_receptacle", or_null(theirs.receptacle)},
          {"peer_rdma_device", or_null(cable_end_device(g, c, peer))},
          {"peer_address", or_null(cable_end_address(g, c, peer))},
          {"link_speed_gbps", cable.link_speed_gbps}};
}

}  // namespace

util::Result<std::string> render_clusterctl_hostfile(const discovery::ClusterState& state,
                                                     const std::vector<std::string>& envs,
                                                     const discovery::FixCommand& fix) {
  if (auto st = check_complete(state, fix); !st) return st.error();
  if (auto st = check_direct(state, HostfileFormat::kClusterctl, fix); !st) return st.error();
  if (auto st = check_envs(envs); !st) return st.error();
  const ClusterGraph g(state);
  const std::size_t n = g.size();
  // The coordinator is where every other rank connects: never one they cannot reach there
  // (util::rank_address_problem, as the MLX formats and every hostfile reader hold).
  const std::string& coordinator = g.host(0).facts->management_address;
  if (auto why = n >= 2 && !coordinator.empty() ? util::rank_address_problem(coordinator)
                                                : std::nullopt) {
    return util::error(
        util::ExitCode::kCheckFailed,
        fmt::format("no clusterctl hostfile: rank 0 ({}) was reached over SSH on {}, which {}; "
                    "its management address is the coordinator, where every other rank "
                    "connects: reach it by an address the other hosts reach it on (an "
                    "inventory `address:` or a HostName in the SSH config) and discover it "
                    "again (`{}`)",
                    g.host(0).name(), coordinator, *why, fix.rediscover()));
  }
  const topology::Ring ring = topology::find_ring(g);
  ordered_json ranks = ordered_json::array();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& f = *g.host(i).facts;
    ordered_json peers = ordered_json::array();
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i || g.multiplicity(i, j) == 0) continue;
      ordered_json cables = ordered_json::array();
      for (std::size_t c : g.cables_between(i, j)) cables.push_back(cable_json(g, c, i, j));
      peers.push_back({{"rank", j}, {"host", g.host(j).name()}, {"cables", cables}});
    }
    ranks.push_back({{"rank", i},
                     {"host", f.host},
                     {"ssh", f.host},
                     {"management_address", or_null(f.management_address)},
                     {"peers", peers}});
  }
  ordered_json doc = {
      {"schema", kHostfileSchema},
      {"world_size", n},
      {"coordinator", or_null(coordinator)},
      {"ring", ring.status == topology::RingStatus::kFound ? ordered_json(ring.order)
                                                           : ordered_json(nullptr)},
      {"envs", envs},
      {"ranks", ranks}};
  return util::json_text(doc, 2) + "\n";
}

}  // namespace cc::provision
