#include "discovery/linux_ip.h"

#include <string>

#include <doctest/doctest.h>

#include "discovery/test_fixtures.h"

using namespace cc::discovery;
using cc::discovery::testing::fixture;

TEST_CASE("ip -j addr: the recorded Debian host") {
  auto r = parse_ip_addr(fixture("linux/ip-j-addr.json"));
  REQUIRE(r.ok());
  REQUIRE(r->size() == 4);
  const NetInterface& lo = (*r)[0];
  CHECK(lo.name == "lo");
  CHECK(lo.mac.empty());  // link_type loopback
  CHECK(lo.ipv4 == std::vector<std::string>{"127.0.0.1"});
  CHECK(lo.ipv6 == std::vector<std::string>{"::1"});
  const NetInterface& ifb0 = (*r)[1];
  CHECK_FALSE(ifb0.up);
  CHECK(ifb0.ipv4.empty());
  const NetInterface& eth0 = (*r)[3];
  CHECK(eth0.name == "eth0");
  CHECK(eth0.up);
  CHECK(eth0.running);
  CHECK(eth0.mtu == 1400);
  CHECK(eth0.mac == "02:fc:00:00:00:01");
  CHECK(eth0.ipv4 == std::vector<std::string>{"192.0.2.2"});
  REQUIRE_FALSE(eth0.ipv6.empty());
  CHECK(eth0.ipv6[0] == "fd00::2");
  CHECK_FALSE(eth0.bridge);
}

TEST_CASE("ip -j link: the recorded Debian host, no addresses") {
  auto r = parse_ip_link(fixture("linux/ip-j-link.json"));
  REQUIRE(r.ok());
  REQUIRE(r->size() == 4);
  CHECK((*r)[3].name == "eth0");
  CHECK((*r)[3].mtu == 1400);
  CHECK((*r)[3].ipv4.empty());
}

TEST_CASE("ip -j addr: lab-like cable ports, a bridge, carrier down, odd entries") {
  auto r = parse_ip_addr(R"([
    {"ifname": "tb10", "flags": ["BROADCAST","UP"], "mtu": 9000, "link_type": "ether",
     "address": "02:00:00:00:01:10", "master": "br0",
     "addr_info": [{"family": "inet", "local": "10.0.12.1", "prefixlen": 30},
                   {"family": "inet6", "local": "fe80::1", "prefixlen": 64}]},
    {"ifname": "tb2", "flags": ["UP","LOWER_UP"], "mtu": "1500", "master": "br0"},
    {"ifname": "br0", "flags": "UP", "mtu": -1, "addr_info": [{"family": "inet"}, 7]},
    {"ifindex": 9},
    "not an object"
  ])");
  REQUIRE(r.ok());
  REQUIRE(r->size() == 3);
  CHECK((*r)[0].name == "tb10");
  CHECK((*r)[0].up);
  CHECK_FALSE((*r)[0].running);  // no LOWER_UP: no carrier
  CHECK((*r)[0].bridge == "br0");
  CHECK((*r)[0].ipv4 == std::vector<std::string>{"10.0.12.1"});
  CHECK((*r)[1].mtu == 1500);  // a number in a string is accepted
  CHECK((*r)[1].running);
  CHECK((*r)[2].members == std::vector<std::string>{"tb2", "tb10"});
  CHECK((*r)[2].mtu == 0);  // unusable: left unknown
  CHECK_FALSE((*r)[2].up);  // "flags" not an array
}

TEST_CASE("ip -j: empty, malformed and non-array outputs are errors naming the command") {
  for (const std::string text : {"", "[{\"ifname\": ", "{}", "Object \"-j\" is unknown"}) {
    CAPTURE(text);
    auto a = parse_ip_addr(text);
    REQUIRE_FALSE(a.ok());
    CHECK(a.error().message.find("`ip -j addr` output: ") == 0);
    auto l = parse_ip_link(text);
    REQUIRE_FALSE(l.ok());
    CHECK(l.error().message.find("`ip -j link` output: ") == 0);
  }
  auto none = parse_ip_addr("[]");
  REQUIRE(none.ok());
  CHECK(none->empty());
}
