#include "lab/plan.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "provision/network_plan.h"

using namespace cc::lab;

namespace {

Topology mesh(int n) {
  return Topology{n, "mesh", mesh_cables(n)};
}

// Port names of host `h` in receptacle order, as "tbK>hPEER".
std::vector<std::string> ports_of(const LabPlan& plan, int h) {
  std::vector<std::pair<int, std::string>> ports;
  for (const auto& c : plan.cables) {
    if (c.a.host == h)
      ports.emplace_back(c.a.port,
                         "tb" + std::to_string(c.a.port) + ">h" + std::to_string(c.b.host));
    if (c.b.host == h)
      ports.emplace_back(c.b.port,
                         "tb" + std::to_string(c.b.port) + ">h" + std::to_string(c.a.host));
  }
  std::sort(ports.begin(), ports.end());
  std::vector<std::string> out;
  for (auto& p : ports) out.push_back(p.second);
  return out;
}

}  // namespace

TEST_CASE("plan: lab names") {
  CHECK(validate_lab_name("default").ok());
  CHECK(validate_lab_name("ct8").ok());
  CHECK(validate_lab_name("A_b-9").ok());
  CHECK(validate_lab_name(std::string(32, 'a')).ok());
  for (const std::string& bad : std::vector<std::string>{"", "-x", "_x", "a b", "a/b", "a.b",
                                                         std::string(33, 'a'), "\xc3\xa4"}) {
    CHECK_FALSE(validate_lab_name(bad).ok());
  }
}

TEST_CASE("plan: interface names fit IFNAMSIZ and are recognised") {
  std::string tag = lab_tag("a-rather-long-lab-name-of-32-chr");
  CHECK(tag.size() == 8);
  CHECK(tag.rfind("cc", 0) == 0);
  CHECK(tag == lab_tag("a-rather-long-lab-name-of-32-chr"));  // deterministic
  CHECK(tag != lab_tag("a-rather-long-lab-name-of-32-chs"));
  CHECK(bridge_name(tag).size() <= 15);
  CHECK(mgmt_link_name(tag, 16).size() <= 15);
  CHECK(is_lab_link(tag, bridge_name(tag)));
  CHECK(is_lab_link(tag, mgmt_link_name(tag, 1)));
  CHECK(is_lab_link(tag, mgmt_link_name(tag, 16)));
  CHECK_FALSE(is_lab_link(tag, tag));
  CHECK_FALSE(is_lab_link(tag, tag + "m"));
  CHECK_FALSE(is_lab_link(tag, tag + "m0"));
  CHECK_FALSE(is_lab_link(tag, tag + "m1x"));
  CHECK_FALSE(is_lab_link(tag, "eth0"));
  CHECK(netns_name("ct8", 3) == "cc-ct8-h3");
  CHECK(port_name(2) == "tb2");
}

TEST_CASE("plan: MAC addresses are locally administered, unique and deterministic") {
  CHECK(lab_mac("cc1a2b3c", 3, 2) == "02:1a:2b:3c:03:02");
  CHECK(lab_mac("cc1a2b3c", 16, 0) == "02:1a:2b:3c:10:00");
}

TEST_CASE("plan: IPv4 prefixes") {
  auto p = parse_ipv4_prefix("10.1.2.0/24");
  REQUIRE(p.ok());
  CHECK(format_prefix(*p) == "10.1.2.0/24");
  CHECK(parse_ipv4_prefix("10.1.2.3")->length == 32);
  CHECK_FALSE(parse_ipv4_prefix("10.1.2/24").ok());
  CHECK_FALSE(parse_ipv4_prefix("10.1.2.0/33").ok());
  CHECK_FALSE(parse_ipv4_prefix("fe80::/64").ok());
  CHECK(overlaps(*parse_ipv4_prefix("10.0.0.0/8"), *parse_ipv4_prefix("10.1.2.0/24")));
  CHECK(overlaps(*parse_ipv4_prefix("10.1.2.7"), *parse_ipv4_prefix("10.1.2.0/24")));
  CHECK_FALSE(overlaps(*parse_ipv4_prefix("10.1.3.0/24"), *parse_ipv4_prefix("10.1.2.0/24")));
  CHECK(overlaps(*parse_ipv4_prefix("0.0.0.0/0"), *parse_ipv4_prefix("10.1.2.0/24")));
}

TEST_CASE("plan: used prefixes come from ip -j route and addr, without the default route") {
  const char* routes = R"([{"dst":"default","gateway":"192.0.2.1","dev":"eth0"},
    {"dst":"192.0.2.0/24","dev":"eth0"},{"type":"local","dst":"10.9.9.9","dev":"lo"},
    {"dst":"fe80::/64"}])";
  const char* addrs = R"([{"ifname":"eth0","addr_info":[{"family":"inet","local":"172.16.5.2",
    "prefixlen":16},{"family":"inet6","local":"fe80::1","prefixlen":64}]},{"ifname":"x"}])";
  auto used = used_prefixes_from_ip_json(routes, addrs);
  REQUIRE(used.ok());
  std::set<std::string> got;
  for (const auto& p : *used) got.insert(format_prefix(p));
  CHECK(got == std::set<std::string>{"192.0.2.0/24", "10.9.9.9/32", "172.16.5.2/16"});
  CHECK_FALSE(used_prefixes_from_ip_json("not json", "[]").ok());
  CHECK_FALSE(used_prefixes_from_ip_json("[]", "{}").ok());
}

TEST_CASE("plan: the subnet is a deterministic 10.X.Y.0/24 that avoids used prefixes") {
  auto first = choose_subnet("ct8", {});
  REQUIRE(first.ok());
  CHECK(first->length == 24);
  CHECK((first->address >> 24) == 10u);
  CHECK(*choose_subnet("ct8", {}) == *first);
  // Taken: the next candidate of the same sequence, also deterministic.
  auto second = choose_subnet("ct8", {*first});
  REQUIRE(second.ok());
  CHECK_FALSE(*second == *first);
  CHECK(*choose_subnet("ct8", {*first}) == *second);
  CHECK_FALSE(overlaps(*second, *first));
  // A route covering all of 10/8 leaves nothing.
  auto none = choose_subnet("ct8", {*parse_ipv4_prefix("10.0.0.0/8")});
  CHECK_FALSE(none.ok());
}

TEST_CASE("plan: the subnet never overlaps the default cable plan base 10.231.0.0/16") {
  const auto base = *parse_ipv4_prefix(cc::provision::kDefaultNetworkBase);
  REQUIRE(std::size(kReservedPrefixes) == 1);
  CHECK(kReservedPrefixes[0] == base);  // lab/ cannot use provision/: the two must agree
  // A name whose first candidate falls inside the base (about 1 name in 256): the chooser
  // moves on to the next candidate of the sequence.
  std::string inside;
  for (int i = 0; i < 100000 && inside.empty(); ++i) {
    const std::string name = fmt::format("ct8{:04x}", i);  // test labs' names (tests/CMakeLists)
    if (overlaps(subnet_candidate(name, 0), base)) inside = name;
  }
  REQUIRE(!inside.empty());
  auto chosen = choose_subnet(inside, {});
  REQUIRE(chosen.ok());
  CHECK_FALSE(overlaps(*chosen, base));
  int k = 1;
  while (overlaps(subnet_candidate(inside, k), base)) ++k;
  CHECK(*chosen == subnet_candidate(inside, k));
  // Every test lab name (ct8 + 4 hex digits of the build tree's hash) and a sweep of others,
  // with and without used prefixes.
  for (int i = 0; i < 0x10000; ++i) {
    const std::string name = fmt::format("ct8{:04x}", i);
    auto s = choose_subnet(name, {});
    REQUIRE(s.ok());
    if (overlaps(*s, base)) FAIL_CHECK(name << " gets " << format_prefix(*s));
  }
  for (int i = 0; i < 2000; ++i) {
    const std::string name = fmt::format("lab{}", i);
    auto s = choose_subnet(name, {subnet_candidate(name, 0)});
    REQUIRE(s.ok());
    if (overlaps(*s, base)) FAIL_CHECK(name << " gets " << format_prefix(*s));
  }
}

TEST_CASE("plan: mesh ports go to peers in ascending order") {
  auto plan = make_plan("t", mesh(4), {});
  REQUIRE(plan.ok());
  CHECK(ports_of(*plan, 1) == std::vector<std::string>{"tb1>h2", "tb2>h3", "tb3>h4"});
  CHECK(ports_of(*plan, 3) == std::vector<std::string>{"tb1>h1", "tb2>h2", "tb3>h4"});
  CHECK(ports_of(*plan, 4) == std::vector<std::string>{"tb1>h1", "tb2>h2", "tb3>h3"});
  for (const auto& h : plan->hosts) CHECK(h.ports == 3);
}

TEST_CASE("plan: ring ports, and parallel cables keep listing order") {
  auto ring = make_plan("t", Topology{4, "ring", ring_cables(4)}, {});
  REQUIRE(ring.ok());
  for (const auto& h : ring->hosts) CHECK(h.ports == 2);
  CHECK(ports_of(*ring, 4) == std::vector<std::string>{"tb1>h1", "tb2>h3"});

  auto cables = mesh_cables(3);
  cables.push_back({2, 1});  // --extra h2-h1: h1 gets a second port to h2, before h3's
  auto par = make_plan("t", Topology{3, "mesh", cables}, {});
  REQUIRE(par.ok());
  CHECK(ports_of(*par, 1) == std::vector<std::string>{"tb1>h2", "tb2>h2", "tb3>h3"});
  CHECK(par->cables.back().a == PortEnd{2, 2, lab_mac(par->tag, 2, 2)});
  CHECK(par->cables.back().b == PortEnd{1, 2, lab_mac(par->tag, 1, 2)});
}

TEST_CASE("plan: hosts, addresses, bridge") {
  auto plan = make_plan("ct8", mesh(8), {});
  REQUIRE(plan.ok());
  CHECK(plan->name == "ct8");
  CHECK(plan->bridge == plan->tag + "br");
  CHECK(plan->hosts.size() == 8);
  CHECK(plan->cables.size() == 28);
  std::string net = format_ipv4(plan->subnet.address);
  std::string base = net.substr(0, net.size() - 1);  // "10.X.Y."
  CHECK(plan->bridge_address == base + "254");
  CHECK(plan->hosts[0].address == base + "1");
  CHECK(plan->hosts[7].address == base + "8");
  CHECK(plan->hosts[7].netns == "cc-ct8-h8");
  CHECK(plan->hosts[7].mgmt_link == plan->tag + "m8");
  std::set<std::string> macs;
  for (const auto& c : plan->cables) {
    macs.insert(c.a.mac);
    macs.insert(c.b.mac);
  }
  for (const auto& h : plan->hosts) macs.insert(h.mgmt_mac);
  CHECK(macs.size() == 2 * 28 + 8);
  CHECK_FALSE(make_plan("bad name", mesh(2), {}).ok());
}

TEST_CASE("plan: ip batch scripts") {
  auto plan = make_plan("t", mesh(2), {});
  REQUIRE(plan.ok());
  const std::string& tag = plan->tag;
  std::string root = root_batch(*plan);
  CHECK(root.find("netns add cc-t-h1\nnetns add cc-t-h2\n") == 0);
  CHECK(root.find("link add " + tag + "br type bridge\n") != std::string::npos);
  CHECK(root.find("link set " + tag + "br alias clusterctl-lab:t\n") != std::string::npos);
  CHECK(root.find("link add " + tag + "m2 type veth peer name en0 address " + lab_mac(tag, 2, 0) +
                  " netns cc-t-h2\n") != std::string::npos);
  CHECK(root.find("link add tb1 address " + lab_mac(tag, 1, 1) +
                  " netns cc-t-h1 type veth peer name tb1 address " + lab_mac(tag, 2, 1) +
                  " netns cc-t-h2\n") != std::string::npos);
  CHECK(host_batch(*plan, plan->hosts[1]) == "link set lo up\naddr add " + plan->hosts[1].address +
                                                 "/24 dev en0\nlink set en0 up\nlink set tb1 up\n");
}

TEST_CASE("plan: free receptacles make every host mesh-capable unless --receptacles says less") {
  auto cables = mesh_cables(5);
  cables.erase(std::find(cables.begin(), cables.end(), CablePair{2, 4}));  // --omit h2-h4
  auto plan = make_plan("t", Topology{5, "mesh", cables}, {});
  REQUIRE(plan.ok());
  CHECK(plan->hosts[0].ports == 4);
  CHECK(plan->hosts[0].receptacles == 4);
  CHECK(plan->hosts[1].ports == 3);  // h2: tb1>h1 tb2>h3 tb3>h5, tb4 free
  CHECK(plan->hosts[1].receptacles == 4);
  CHECK(ports_of(*plan, 2) == std::vector<std::string>{"tb1>h1", "tb2>h3", "tb3>h5"});
  std::string root = root_batch(*plan);
  const std::string& tag = plan->tag;
  CHECK(root.find("link add tb4 address " + lab_mac(tag, 2, 4) +
                  " netns cc-t-h2 type veth peer name " + tag + "s2p4\n") != std::string::npos);
  CHECK(root.find(tag + "s1p") == std::string::npos);  // h1 has no free port
  CHECK(host_batch(*plan, plan->hosts[1]).find("link set tb4 up\n") != std::string::npos);
  CHECK(is_lab_link(tag, tag + "s2p4"));
  CHECK(is_lab_link(tag, tag + "s12p10"));
  CHECK_FALSE(is_lab_link(tag, tag + "s2"));
  CHECK_FALSE(is_lab_link(tag, tag + "s0p1"));
  CHECK_FALSE(is_lab_link(tag, tag + "sp1"));

  auto ring = make_plan("t", Topology{4, "ring", ring_cables(4), 2}, {});
  REQUIRE(ring.ok());
  for (const auto& h : ring->hosts) CHECK(h.receptacles == 2);
  auto too_few = make_plan("t", Topology{4, "mesh", mesh_cables(4), 2}, {});
  REQUIRE_FALSE(too_few.ok());
  CHECK(too_few.error().message == "--receptacles 2: h1 has 3 cables; give at least 3");
}
