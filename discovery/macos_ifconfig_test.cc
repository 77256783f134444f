#include "discovery/macos_ifconfig.h"

#include <string>

#include <doctest/doctest.h>

#include "discovery/test_fixtures.h"

using namespace cc::discovery;
using cc::discovery::testing::fixture;

TEST_CASE("ifconfig: en2 with a self-assigned IPv4 address (TN3205)") {
  auto r = parse_ifconfig(fixture("macos/ifconfig-en2.txt"));  // first line is the prompt
  REQUIRE(r.ok());
  REQUIRE(r->size() == 1);
  const NetInterface& en2 = (*r)[0];
  CHECK(en2.name == "en2");
  CHECK(en2.up);
  CHECK(en2.running);
  CHECK(en2.mtu == 1500);
  CHECK(en2.mac == "36:4d:04:ea:4e:40");
  CHECK(en2.ipv4 == std::vector<std::string>{"169.254.205.255"});
  CHECK(en2.ipv6 == std::vector<std::string>{"fe80::1021:1bac:fe1:b5e3"});  // no %en2
  CHECK_FALSE(en2.bridge);
}

TEST_CASE("ifconfig: bridge0 active with Thunderbolt ports as members (TN3205 default)") {
  auto r = parse_ifconfig(fixture("macos/ifconfig-bridge0-default.txt"));
  REQUIRE(r.ok());
  REQUIRE(r->size() == 1);
  const NetInterface& br = (*r)[0];
  CHECK(br.name == "bridge0");
  CHECK(br.up);
  CHECK(br.running);
  CHECK(br.members == std::vector<std::string>{"en2", "en3", "en4"});
}

TEST_CASE("ifconfig -a: several interfaces, membership both ways, en10, down and inactive") {
  std::string text = fixture("macos/ifconfig-en2.txt") +
                     "en10: flags=8822<BROADCAST,SMART,SIMPLEX,MULTICAST> mtu 9000\n"
                     "\tether 36:4d:04:ea:4e:41\n"
                     "\tstatus: inactive\n"
                     "en11: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n"
                     "\tstatus: inactive\n"
                     "bridge0: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n"
                     "\tmember: en10 flags=3<LEARNING,DISCOVER>\n"
                     "\tmember: en2 flags=3<LEARNING,DISCOVER>\n"
                     "\tstatus: active\n";
  auto r = parse_ifconfig(text);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 4);
  const auto& v = *r;
  CHECK(v[0].bridge == "bridge0");
  CHECK(v[1].name == "en10");
  CHECK_FALSE(v[1].up);
  CHECK_FALSE(v[1].running);
  CHECK(v[1].mtu == 9000);
  CHECK(v[1].bridge == "bridge0");
  CHECK(v[1].ipv4.empty());
  CHECK(v[2].up);
  CHECK_FALSE(v[2].running);  // RUNNING flag but status: inactive (no cable)
  CHECK(v[3].members == std::vector<std::string>{"en2", "en10"});  // natural order
}

TEST_CASE("ifconfig: empty output, no interface, a bad mtu are errors naming the command") {
  for (const std::string text : {"", " \n", "ifconfig: command not found\n", "  inet 10.0.0.1\n",
                                 "en2: flags=8863<UP> mtu lots\n"}) {
    CAPTURE(text);
    auto r = parse_ifconfig(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("`ifconfig -a` output: ") == 0);
  }
  auto bad_mtu = parse_ifconfig("en2: flags=8863<UP> mtu lots\n");
  CHECK(bad_mtu.error().message ==
        "`ifconfig -a` output: line 1: interface en2: mtu \"lots\" is not a number");
}
