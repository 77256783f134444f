#include "topology/graph.h"

#include <doctest/doctest.h>

#include "topology/test_states.h"

namespace cc::topology {
namespace {

using testing::lab_mesh;

TEST_CASE("topology graph: a 4-host lab mesh has every pair once and no free port") {
  auto s = lab_mesh(4);
  ClusterGraph g(s);
  REQUIRE(g.size() == 4);
  CHECK(g.edges().size() == 6);
  CHECK(g.missing_pairs().empty());
  for (std::size_t a = 0; a < 4; ++a) {
    CHECK(g.multiplicity(a, a) == 0);
    for (std::size_t b = 0; b < 4; ++b) {
      if (a != b) CHECK(g.multiplicity(a, b) == 1);
    }
    REQUIRE(g.host(a).ports.size() == 3);
    for (const auto& p : g.host(a).ports) {
      CHECK(p.cabled());
      CHECK_FALSE(p.free());
    }
  }
  CHECK(g.host_index("h3") == 2);
  CHECK_FALSE(g.host_index("h9"));
}

TEST_CASE("topology graph: missing pair, doubled pair and free ports of a 5-host lab") {
  auto s = lab_mesh(5, {{2, 4}}, {{1, 3}});
  ClusterGraph g(s);
  REQUIRE(g.missing_pairs() == std::vector<std::pair<std::size_t, std::size_t>>{{1, 3}});
  CHECK(g.multiplicity(0, 2) == 2);
  CHECK(g.multiplicity(2, 0) == 2);
  CHECK(g.cables_between(0, 2).size() == 2);
  CHECK(g.host(0).ports.size() == 5);
  REQUIRE(g.host(1).ports.size() == 4);
  CHECK(g.host(1).ports[3].end.interface == "tb4");
  CHECK(g.host(1).ports[3].free());
  CHECK(g.host(3).ports[3].free());
  CHECK_FALSE(g.host(1).ports[2].free());
  auto m = g.matrix();
  CHECK(m[0] == std::vector<int>{0, 1, 2, 1, 1});
  CHECK(m[1] == std::vector<int>{1, 0, 1, 0, 1});
  CHECK(pair_label(g, 1, 3) == "h2-h4");
}

TEST_CASE("topology graph: a cable end without interface matches by receptacle") {
  discovery::ClusterState s;
  s.hosts = {testing::mac_host("a", 3), testing::mac_host("b", 3)};
  discovery::Cable c;
  c.a = {"a", "", 2, std::nullopt};
  c.b = {"b", "en4", 3, std::nullopt};
  c.sources = {discovery::CableSource::kThunderbolt};
  s.cables = {c};
  ClusterGraph g(s);
  REQUIRE(g.edges().size() == 1);
  CHECK(g.edges()[0].a_port == 1);
  CHECK(g.edges()[0].b_port == 2);
  CHECK(g.host(0).ports[1].cabled());
  CHECK_FALSE(g.host(0).ports[0].cabled());
  CHECK(g.multiplicity(0, 1) == 1);
}

TEST_CASE("topology graph: ends naming an unknown host or port join no pair") {
  auto s = lab_mesh(2);
  discovery::Cable c;
  c.a = {"h1", "tb7", std::nullopt, std::nullopt};
  c.b = {"h9", "tb1", std::nullopt, std::nullopt};
  c.sources = {discovery::CableSource::kNeighbour};
  s.cables.push_back(c);
  ClusterGraph g(s);
  REQUIRE(g.edges().size() == 2);
  CHECK(g.edges()[1].a_host == 0);
  CHECK_FALSE(g.edges()[1].a_port);
  CHECK_FALSE(g.edges()[1].b_host);
  CHECK_FALSE(g.edges()[1].joins_two_hosts());
  CHECK(g.multiplicity(0, 1) == 1);
}

TEST_CASE("topology graph: Mac Studio models and their en2") {
  auto studio = testing::mac_host("s", 4, "Mac16,9");
  auto mini = testing::mac_host("m", 3, "Mac16,11");
  CHECK(is_mac(studio));
  CHECK(is_mac_studio(studio));
  CHECK_FALSE(is_mac_studio(mini));
  for (const char* id : {"Mac13,1", "Mac13,2", "Mac14,13", "Mac14,14", "Mac15,14"}) {
    studio.model = id;
    CHECK(is_mac_studio(studio));
  }
  CHECK(studio.ports[0].interface->name == "en2");
  CHECK(is_studio_en2(studio, studio.ports[0]));
  CHECK_FALSE(is_studio_en2(studio, studio.ports[1]));
  CHECK_FALSE(is_studio_en2(mini, mini.ports[0]));
  CHECK_FALSE(is_mac(testing::lab_host("h1", 1)));
}

}  // namespace
}  // namespace cc::topology
