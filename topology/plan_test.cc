#include "topology/plan.h"

#include <set>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "topology/test_states.h"

namespace cc::topology {
namespace {

using Strings = std::vector<std::string>;

Strings texts(const CablingPlan& p) {
  Strings out;
  for (const auto& s : p.steps) out.push_back(s.text);
  return out;
}

TEST_CASE("topology plan: h2-h4 on the two free tb4 ports") {
  auto s = testing::lab_mesh(5, {{2, 4}}, {{1, 3}});
  ClusterGraph g(s);
  CablingPlan p = plan_cabling(g);
  CHECK(texts(p) == Strings{"plug h2 tb4 into h4 tb4"});
  REQUIRE(p.steps.size() == 1);
  CHECK(p.steps[0].action == PlanStep::Action::kPlug);
  CHECK(p.steps[0].a.host == "h2");
  CHECK(p.steps[0].a.interface == "tb4");
  CHECK(p.steps[0].b.host == "h4");
  CHECK(p.steps[0].b.interface == "tb4");
  CHECK(p.unplanned.empty());
  CHECK(p.shortages.empty());
}

TEST_CASE("topology plan: a port that is only down is brought up, never re-plugged") {
  // The trial: h2 tb3 down on a 4-host lab hides the h2-h4 cable; the plan said "plug h2 tb3
  // into h4 tb3", moving a cable that was there all along.
  auto s = testing::lab_mesh(4, {{2, 4}});
  testing::port(s, "h2", "tb3").interface->up = false;
  ClusterGraph g(s);
  CablingPlan p = plan_cabling(g);
  CHECK(texts(p) ==
        Strings{"bring up h2 tb3: on h2 `sudo ip link set dev tb3 up`; it may hold the cable "
                "of h2-h4 (a guess: nothing records the host it faced): do not move that cable"});
  REQUIRE(p.steps.size() == 1);
  CHECK(p.steps[0].action == PlanStep::Action::kBringUp);
  CHECK(p.steps[0].a.interface == "tb3");
  CHECK(p.steps[0].b.host == "h4");
  CHECK(p.unplanned.empty());
  CHECK(nlohmann::json(p.steps[0])["action"] == "bring-up");

  // h2 misses h3 and h4, h2 tb3 down, and the saved plan records it facing h4 tb3: h2-h4 is
  // brought up, and h2-h3 is plugged on h2's other free port, never on tb3.
  auto r = testing::lab_mesh(4, {{2, 3}, {2, 4}});
  testing::port(r, "h2", "tb3").interface->up = false;
  discovery::LinkAddress l;
  l.a = {"h2", "tb3", std::nullopt, std::nullopt};
  l.b = {"h4", "tb3", std::nullopt, std::nullopt};
  r.network.push_back(l);
  ClusterGraph gr(r);
  CHECK(texts(plan_cabling(gr)) ==
        Strings{"bring up h2 tb3: on h2 `sudo ip link set dev tb3 up`; the network plan records "
                "its cable to h4 tb3: do not move that cable",
                "plug h2 tb2 into h3 tb3"});
  // Without the record the guess gives h2 tb3 to h2-h3, and h2-h4 gets h2's other port.
  r.network.clear();
  ClusterGraph gg(r);
  CHECK(texts(plan_cabling(gg)) ==
        Strings{"bring up h2 tb3: on h2 `sudo ip link set dev tb3 up`; it may hold the cable "
                "of h2-h3 (a guess: nothing records the host it faced): do not move that cable",
                "plug h2 tb2 into h4 tb3"});
}

TEST_CASE("topology plan: nothing to do on a full mesh") {
  auto s = testing::lab_mesh(4);
  ClusterGraph g(s);
  CablingPlan p = plan_cabling(g);
  CHECK(p.steps.empty());
  CHECK(p.unplanned.empty());
  CHECK(p.shortages.empty());
}

TEST_CASE("topology plan: every free port is used once") {
  // Four hosts, no cable at all, three ports each: six plugs, twelve distinct ports.
  auto s = testing::lab_mesh(4, {{1, 2}, {1, 3}, {1, 4}, {2, 3}, {2, 4}, {3, 4}});
  ClusterGraph g(s);
  CablingPlan p = plan_cabling(g);
  CHECK(texts(p) == Strings{"plug h1 tb1 into h2 tb1", "plug h1 tb2 into h3 tb1",
                            "plug h1 tb3 into h4 tb1", "plug h2 tb2 into h3 tb2",
                            "plug h2 tb3 into h4 tb2", "plug h3 tb3 into h4 tb3"});
  std::set<std::pair<std::string, std::string>> used;
  for (const auto& step : p.steps) {
    CHECK(used.insert({step.a.host, step.a.interface}).second);
    CHECK(used.insert({step.b.host, step.b.interface}).second);
  }
  CHECK(used.size() == 12);
}

TEST_CASE("topology plan: hosts without free ports get a shortage line") {
  auto s = testing::lab_mesh(5, {{2, 4}}, {{1, 3}}, 3);
  ClusterGraph g(s);
  CablingPlan p = plan_cabling(g);
  CHECK(p.steps.empty());
  REQUIRE(p.unplanned.size() == 1);
  CHECK(p.unplanned[0].a == "h2");
  CHECK(p.unplanned[0].b == "h4");
  CHECK(p.unplanned[0].reason == "no free port left on h2 and h4");
  REQUIRE(p.shortages.size() == 2);
  CHECK(p.shortages[0].host == "h2");
  CHECK(p.shortages[0].needed == 1);
  CHECK(p.shortages[0].text == "h2 needs 1 more free port (1 missing cable, 0 free ports)");
  CHECK(p.shortages[1].text == "h4 needs 1 more free port (1 missing cable, 0 free ports)");
}

TEST_CASE("topology plan: a redundant parallel cable is unplugged to free a port") {
  // h1: tb1-h3, tb2-h4, tb3-h3 (doubled): no free port for the missing h1-h2.
  auto s = testing::lab_mesh(4, {{1, 2}}, {{1, 3}}, 3);
  ClusterGraph g(s);
  CablingPlan p = plan_cabling(g);
  CHECK(texts(p) ==
        Strings{"unplug h1 tb3 - h3 tb4 (h1-h3 keeps 1 cable)", "plug h1 tb3 into h2 tb3"});
  CHECK(p.steps[0].action == PlanStep::Action::kUnplug);
  CHECK(p.unplanned.empty());
  CHECK(p.shortages.empty());
}

TEST_CASE("topology plan: Mac receptacles, a Studio's en2 last, occupied ports not free") {
  // m2 is a Mac Studio with receptacles 1 (en2) and 3 (en4) free; m2-m3 is missing.
  discovery::ClusterState s;
  s.hosts = {testing::mac_host("m1", 3), testing::mac_host("m2", 3, "Mac16,9"),
             testing::mac_host("m3", 3)};
  testing::cable_macs(s, "m1", 1, "m2", 2);
  testing::cable_macs(s, "m1", 2, "m3", 1);
  ClusterGraph g(s);
  CablingPlan p = plan_cabling(g);
  CHECK(texts(p) == Strings{"plug m2 receptacle 3 (en4) into m3 receptacle 2 (en3)"});

  // A dock on m3's two free receptacles: nothing left for m2-m3.
  discovery::Peer dock;
  dock.name = "SB-XTM5";
  s.hosts[2].ports[1].peers = {dock};
  s.hosts[2].ports[2].peers = {dock};
  ClusterGraph g2(s);
  p = plan_cabling(g2);
  CHECK(p.steps.empty());
  REQUIRE(p.shortages.size() == 1);
  CHECK(p.shortages[0].text ==
        "m3 needs 1 more free port (1 missing cable, 0 free ports); unplugging what is on "
        "receptacle 2 (en3), receptacle 3 (en4) would free them");
}

TEST_CASE("topology plan: JSON shape") {
  auto s = testing::lab_mesh(5, {{2, 4}}, {{1, 3}});
  ClusterGraph g(s);
  nlohmann::json j = plan_cabling(g);
  CHECK(j["steps"][0]["action"] == "plug");
  CHECK(j["steps"][0]["a"]["host"] == "h2");
  CHECK(j["steps"][0]["a"]["interface"] == "tb4");
  CHECK(j["steps"][0]["b"]["receptacle"].is_null());
  CHECK(j["steps"][0]["text"] == "plug h2 tb4 into h4 tb4");
  CHECK(j["unplanned"] == nlohmann::json::array());
  CHECK(j["shortages"] == nlohmann::json::array());
}

}  // namespace
}  // namespace cc::topology
