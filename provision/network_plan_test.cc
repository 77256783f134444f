#include "provision/network_plan.h"

#include <algorithm>
#include <set>
#include <string>

#include <doctest/doctest.h>

using namespace cc::provision;
using cc::discovery::Cable;
using cc::discovery::CableEnd;
using cc::discovery::ClusterState;
using cc::discovery::HostFacts;

namespace {

// n Linux (or Mac) hosts, full mesh over tb ports as the lab numbers them.
ClusterState mesh(int n, const char* os = "Debian GNU/Linux") {
  ClusterState s;
  for (int h = 1; h <= n; ++h) {
    HostFacts f;
    f.host = "h" + std::to_string(h);
    f.os.name = os;
    f.management_address = "10.9.9." + std::to_string(h);
    for (int k = 1; k < n; ++k) {
      cc::discovery::Port p;
      p.interface = cc::discovery::NetInterface{};
      p.interface->name = "tb" + std::to_string(k);
      p.interface->up = true;
      p.interface->running = true;
      f.ports.push_back(p);
    }
    s.hosts.push_back(f);
  }
  for (int i = 1; i <= n; ++i) {
    for (int j = i + 1; j <= n; ++j) {
      Cable c;
      c.a = CableEnd{"h" + std::to_string(i), "tb" + std::to_string(j - 1), {}, {}};
      c.b = CableEnd{"h" + std::to_string(j), "tb" + std::to_string(i), {}, {}};
      s.cables.push_back(c);
    }
  }
  return s;
}

}  // namespace

TEST_CASE("network plan: one distinct subnet per cable, /31 between Linux hosts, deterministic") {
  auto s = mesh(4);
  auto plan = plan_network(s, {});
  REQUIRE(plan.ok());
  REQUIRE(plan->size() == 6);
  std::set<std::string> subnets;
  for (const auto& l : *plan) {
    subnets.insert(l.subnet);
    CHECK(l.prefix_length == 31);
    CHECK(l.subnet.rfind("10.231.", 0) == 0);
    auto a = cc::util::parse_ipv4_prefix(l.a_address), b = cc::util::parse_ipv4_prefix(l.b_address);
    CHECK(b->address == a->address + 1);
    CHECK(l.subnet == cc::util::format_prefix({a->address, 31}));
  }
  CHECK(subnets.size() == 6);
  auto again = plan_network(s, {});
  for (size_t i = 0; i < plan->size(); ++i) CHECK((*again)[i].subnet == (*plan)[i].subnet);
  // Discovery order does not matter.
  std::reverse(s.cables.begin(), s.cables.end());
  auto reversed = plan_network(s, {});
  CHECK((*reversed)[0].subnet == (*plan)[5].subnet);
}

TEST_CASE("network plan: a Mac end gets a /30 with .1 and .2") {
  auto plan = plan_network(mesh(2, "macOS"), {});
  REQUIRE(plan.ok());
  REQUIRE(plan->size() == 1);
  const auto& l = (*plan)[0];
  CHECK(l.prefix_length == 30);
  auto net = cc::util::parse_ipv4_prefix(l.subnet);
  CHECK(cc::util::parse_ipv4_prefix(l.a_address)->address == net->address + 1);
  CHECK(cc::util::parse_ipv4_prefix(l.b_address)->address == net->address + 2);
}

TEST_CASE("network plan: re-plugging one cable changes only that cable's subnet") {
  auto s = mesh(4);
  auto before = plan_network(s, {});
  s.cables[2].b.interface = "tb9";  // h1-h4 moved to another port of h4
  auto after = plan_network(s, {});
  REQUIRE(after.ok());
  int changed = 0;
  for (size_t i = 0; i < before->size(); ++i) changed += (*before)[i].subnet != (*after)[i].subnet;
  CHECK(changed <= 1);
  for (size_t i = 0; i < before->size(); ++i) {
    if (i != 2) CHECK((*before)[i].subnet == (*after)[i].subnet);
  }
}

TEST_CASE("network plan: addresses in use elsewhere are avoided, the cable's own are kept") {
  auto s = mesh(2);
  auto first = plan_network(s, {cc::util::Ipv4Prefix{(10u << 24) | (231u << 16), 29}});
  REQUIRE(first.ok());
  // An address from the chosen slot appears on h2's Wi-Fi: the plan moves away from it.
  cc::discovery::NetInterface wifi;
  wifi.name = "wlan0";
  wifi.ipv4 = {(*first)[0].b_address};
  s.hosts[1].interfaces.push_back(wifi);
  auto moved = plan_network(s, {cc::util::Ipv4Prefix{(10u << 24) | (231u << 16), 29}});
  REQUIRE(moved.ok());
  CHECK((*moved)[0].subnet != (*first)[0].subnet);
  // The same address on the cable's own port (a previous apply) keeps the subnet.
  s.hosts[1].interfaces.clear();
  s.hosts[1].ports[0].interface->ipv4 = {(*first)[0].b_address};
  CHECK((*plan_network(s, {cc::util::Ipv4Prefix{(10u << 24) | (231u << 16), 29}}))[0].subnet ==
        (*first)[0].subnet);
}

TEST_CASE("network plan: bad bases are refused with the reason") {
  auto s = mesh(3);
  auto home = plan_network(s, {*cc::util::parse_ipv4_prefix("192.168.0.0/16")});
  REQUIRE_FALSE(home.ok());
  CHECK(home.error().message.find("192.168.0.0/24") != std::string::npos);
  auto tiny = plan_network(s, {*cc::util::parse_ipv4_prefix("10.1.0.0/30")});
  REQUIRE_FALSE(tiny.ok());
  CHECK(tiny.error().message == "--base 10.1.0.0/30: give a prefix between /8 and /29 (each "
                                "cable takes a /30)");
  auto small = plan_network(s, {*cc::util::parse_ipv4_prefix("10.1.0.0/29")});
  REQUIRE_FALSE(small.ok());
  CHECK(small.error().message == "--base 10.1.0.0/29 has 2 /30 subnets but the cluster has 3 "
                                 "cables: give a larger base");
  auto mgmt = plan_network(s, {*cc::util::parse_ipv4_prefix("10.9.0.0/16")});
  REQUIRE_FALSE(mgmt.ok());
  CHECK(mgmt.error().message.find("h1's management address 10.9.9.1") != std::string::npos);
}

TEST_CASE("network plan: per-host view and lookup by ends") {
  auto s = mesh(3);
  auto plan = plan_network(s, {});
  auto ends = addresses_of(*plan, "h2");
  REQUIRE(ends.size() == 2);
  CHECK(ends[0].interface == "tb1");
  CHECK(ends[0].peer == "h1 tb1");
  CHECK(find_link(*plan, s.cables[1].b, s.cables[1].a) == &(*plan)[1]);
  CHECK(find_link(*plan, s.cables[0].a, s.cables[1].b) == nullptr);
}

TEST_CASE("keep_plan: entries of cables seen now are kept, the others dropped, each with why") {
  const ClusterState planned = mesh(4);
  auto plan = plan_network(planned, {});
  REQUIRE(plan.ok());
  REQUIRE(plan->size() == 6);
  ClusterState now = mesh(4);
  // h1 tb1 - h2 tb1 is down; h3 is not probed; h4 lost its port tb3 (h4 tb3 - h3 tb3 too).
  now.cables.erase(now.cables.begin());  // h1 tb1 - h2 tb1
  now.hosts[3].ports.pop_back();         // h4 tb3
  now.problems.push_back({"h3", 3, "h3: unreachable"});
  now.hosts.erase(now.hosts.begin() + 2);
  std::erase_if(now.cables, [](const Cable& c) {
    return c.a.host == "h3" || c.b.host == "h3" || (c.b.host == "h4" && c.b.interface == "tb3");
  });
  const KeptPlan k = keep_plan(*plan, now);
  REQUIRE(k.kept.size() == 2);  // h1-h4, h2-h4
  CHECK(k.kept[0].a.host == "h1");
  CHECK(k.kept[0].b.host == "h4");
  CHECK(k.kept[0].subnet == (*plan)[2].subnet);
  CHECK(k.kept[1].a.host == "h2");
  CHECK(k.kept[1].b.host == "h4");
  REQUIRE(k.dropped.size() == 4);
  CHECK(k.dropped[0].link.subnet == (*plan)[0].subnet);  // h1-h2
  CHECK(k.dropped[0].why == Unseen::kNotSeen);
  CHECK(k.dropped[0].reason == "the cable is not seen now (a port down, a cable loose or pulled)");
  CHECK(k.dropped[1].why == Unseen::kNotProbed);  // h1-h3
  CHECK(k.dropped[1].reason == "h3 was not probed");
  CHECK(k.dropped[2].why == Unseen::kNotProbed);  // h2-h3
  CHECK(k.dropped[3].why == Unseen::kNotProbed);  // h3-h4: h3's end is named first
  // h4's port alone gone: the end without the port is named.
  ClusterState lost = mesh(4);
  lost.hosts[3].ports.pop_back();  // h4 tb3, the end of h3 tb3 - h4 tb3
  lost.cables.pop_back();
  const KeptPlan l = keep_plan(*plan, lost);
  REQUIRE(l.dropped.size() == 1);
  CHECK(l.dropped[0].why == Unseen::kNoPort);
  CHECK(l.dropped[0].reason == "h4 has no port tb3 now");
  CHECK(l.kept.size() == 5);
  // Nothing changed: everything kept, nothing dropped; a new cable is unplanned.
  CHECK(keep_plan(*plan, planned).dropped.empty());
  CHECK(unplanned_cables(planned.cables, *plan).empty());
  std::vector<cc::discovery::LinkAddress> five(plan->begin() + 1, plan->end());
  const auto unplanned = unplanned_cables(planned.cables, five);
  REQUIRE(unplanned.size() == 1);
  CHECK(unplanned[0].a.host == "h1");
  CHECK(unplanned[0].b.host == "h2");
}

TEST_CASE("keep_plan: a cable not seen because a port is down says so as health does") {
  const ClusterState planned = mesh(4);
  auto plan = plan_network(planned, {});
  REQUIRE(plan.ok());
  ClusterState now = mesh(4);
  now.cables.erase(now.cables.begin());         // h1 tb1 - h2 tb1 not seen
  now.hosts[1].ports[0].interface->up = false;  // h2 tb1: `ip link set dev tb1 down`
  now.hosts[1].ports[0].interface->running = false;
  now.hosts[0].ports[0].interface->running = false;  // h1 tb1: no carrier (its peer is down)
  const KeptPlan k = keep_plan(*plan, now);
  REQUIRE(k.dropped.size() == 1);
  CHECK(k.dropped[0].why == Unseen::kNotSeen);
  CHECK(k.dropped[0].reason ==
        "the cable is not seen now: h1 tb1: no carrier; h2 tb1: administratively down");
  CHECK(k.dropped[0].fix ==
        "bring the port that is down up: on h2 `sudo ip link set dev tb1 up`; if the cable still "
        "has no carrier then, reseat the cable between h1 tb1 and h2 tb1");
}

TEST_CASE("take_links_without_interface: an end with no IP interface is taken out, named") {
  ClusterState s = mesh(3, "macOS");
  // h1's second port: a receptacle networksetup names no "Thunderbolt 2" port for.
  s.cables[1].a = CableEnd{"h1", "", 2, {}};
  auto plan = plan_network(s, {});
  REQUIRE(plan.ok());
  REQUIRE(plan->size() == 3);
  const std::string subnet = (*plan)[1].subnet;
  auto taken = take_links_without_interface(*plan);
  REQUIRE(plan->size() == 2);  // h1-h2 and h2-h3 are left to apply
  CHECK((*plan)[0].b.host == "h2");
  CHECK((*plan)[1].a.host == "h2");
  REQUIRE(taken.size() == 1);
  CHECK(taken[0].why == Unseen::kNoInterface);
  CHECK(taken[0].link.subnet == subnet);
  CHECK(taken[0].reason ==
        "h1 receptacle 2 has no network interface: `networksetup -listallhardwareports` on h1 "
        "lists no \"Thunderbolt 2\" hardware port");
  REQUIRE(end_without_interface(taken[0].link) != nullptr);
  CHECK(end_without_interface(taken[0].link)->host == "h1");
  CHECK(end_without_interface((*plan)[0]) == nullptr);
}
