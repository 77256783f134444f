#include "discovery/macos_networksetup.h"

#include <string>

#include <doctest/doctest.h>

#include "discovery/test_fixtures.h"

using namespace cc::discovery;
using cc::discovery::testing::fixture;
using Kind = HardwarePort::Kind;

TEST_CASE("networksetup: the pair's table maps receptacle N to enX (N is not X)") {
  auto r = parse_networksetup_hardware_ports(
      fixture("macos/pair.networksetup-listallhardwareports.txt"));
  REQUIRE(r.ok());
  const auto& ports = *r;
  REQUIRE(ports.size() == 6);
  CHECK(ports[0].name == "Ethernet Adapter (en3)");
  CHECK(ports[0].kind == Kind::kOther);
  CHECK(ports[1].name == "Thunderbolt Bridge");
  CHECK(ports[1].device == "bridge0");
  CHECK(ports[1].kind == Kind::kThunderboltBridge);
  CHECK_FALSE(ports[1].receptacle);
  CHECK(ports[2].device == "en0");
  CHECK(ports[4].name == "Thunderbolt 2");
  CHECK(ports[4].mac == "02:00:00:00:00:02");
  CHECK(interface_for_receptacle(ports, 1) == "en1");
  CHECK(interface_for_receptacle(ports, 2) == "en6");
  CHECK(interface_for_receptacle(ports, 3) == "en2");
  CHECK_FALSE(interface_for_receptacle(ports, 4));
}

TEST_CASE("networksetup: dock NICs are not peer ports, en10 and above, missing Device") {
  auto r = parse_networksetup_hardware_ports(
      "Hardware Port: Thunderbolt Ethernet Slot 0\n"
      "Device: en12\n"
      "Ethernet Address: 64:4b:f0:00:00:01\n"
      "\n"
      "Hardware Port: Thunderbolt 5\n"
      "Device: en10\n"
      "Ethernet Address: N/A\n"
      "\n"
      "Hardware Port: Thunderbolt 6\n"
      "\n"
      "Hardware Port: Thunderbolt 12\n"
      "Device: en11\n");
  REQUIRE(r.ok());
  REQUIRE(r->size() == 3);  // Thunderbolt 6 has no Device: skipped
  CHECK((*r)[0].kind == Kind::kOther);
  CHECK_FALSE((*r)[0].receptacle);
  CHECK((*r)[1].receptacle == 5);
  CHECK((*r)[1].mac.empty());
  CHECK(interface_for_receptacle(*r, 5) == "en10");
  CHECK(interface_for_receptacle(*r, 12) == "en11");
  CHECK_FALSE(interface_for_receptacle(*r, 0));
}

TEST_CASE("networksetup: empty and foreign outputs are errors naming the command") {
  for (const std::string text : {"", "\n\n", "networksetup: command not found\n",
                                 "Hardware Port: Thunderbolt 99999999999\nDevice: en1\n"}) {
    CAPTURE(text);
    auto r = parse_networksetup_hardware_ports(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("`networksetup -listallhardwareports` output: ") == 0);
  }
}
