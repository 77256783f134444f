#include "discovery/ping.h"

#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "discovery/test_fixtures.h"

using namespace cc::discovery;
using cc::discovery::testing::fixture;
using Addresses = std::vector<std::string>;

TEST_CASE("ping replies: Linux iputils, recorded (only the host itself answers)") {
  auto r = parse_ping_replies(fixture("linux/ping-6-ff02-1.txt"));
  REQUIRE(r.ok());
  CHECK(*r == Addresses{"fe80::fc:ff:fe00:1"});
}

TEST_CASE("ping replies: Linux iputils on a cable, the peer's answers marked (DUP!)") {
  auto r = parse_ping_replies(
      "PING ff02::1%tb1(ff02::1%tb1) 56 data bytes\n"
      "64 bytes from fe80::2:3ff:fe04:501%tb1: icmp_seq=1 ttl=64 time=0.045 ms\n"
      "64 bytes from fe80::4:5ff:fe06:701%tb1: icmp_seq=1 ttl=64 time=0.095 ms (DUP!)\n"
      "64 bytes from fe80::2:3ff:fe04:501%tb1: icmp_seq=2 ttl=64 time=0.041 ms\n"
      "64 bytes from fe80::4:5ff:fe06:701%tb1: icmp_seq=2 ttl=64 time=0.088 ms (DUP!)\n"
      "\n"
      "--- ff02::1%tb1 ping statistics ---\n"
      "2 packets transmitted, 2 received, +2 duplicates, 0% packet loss, time 201ms\n"
      "rtt min/avg/max/mdev = 0.041/0.067/0.095/0.024 ms\n");
  REQUIRE(r.ok());
  CHECK(*r == Addresses{"fe80::2:3ff:fe04:501", "fe80::4:5ff:fe06:701"});
}

TEST_CASE("ping replies: macOS ping6 (hand-written from ping6's reply format)") {
  auto r = parse_ping_replies(fixture("macos/ping6-ff02-1.txt"));
  REQUIRE(r.ok());
  CHECK(*r == Addresses{"fe80::1021:1bac:fe1:b5e3", "fe80::8c4:3aff:fe1b:2c5d"});
}

TEST_CASE("ping replies: other reply forms") {
  // iputils without -n, when the address resolves to a name.
  CHECK(*parse_ping_replies(
            "64 bytes from peer.example (fe80::1%tb1): icmp_seq=1 ttl=64 time=0.045 ms\n") ==
        Addresses{"fe80::1"});
  // BusyBox, and a global address without scope.
  CHECK(*parse_ping_replies("64 bytes from fe80::1%tb1: seq=0 ttl=64 time=0.123 ms\n"
                            "64 bytes from 2001:db8::7: seq=0 ttl=64 time=0.2 ms\n") ==
        Addresses{"fe80::1", "2001:db8::7"});
  // Upper case and uncompressed forms come back canonical; "fe80::" keeps its last colon.
  CHECK(*parse_ping_replies("64 bytes from FE80::ABCD%tb1: icmp_seq=1 ttl=64 time=1 ms\n"
                            "64 bytes from fe80:0:0:0:0:0:0:abcd%tb1: icmp_seq=2 ttl=64\n"
                            "64 bytes from fe80::: icmp_seq=1 ttl=64 time=1 ms\r\n") ==
        Addresses{"fe80::abcd", "fe80::"});
}

TEST_CASE("ping replies: no answers, errors and garbage give what can be read") {
  CHECK(parse_ping_replies("")->empty());
  CHECK(parse_ping_replies("PING ff02::1%lo(ff02::1%lo) 56 data bytes\n\n"
                           "--- ff02::1%lo ping statistics ---\n"
                           "5 packets transmitted, 0 received, 100% packet loss, time 819ms\n")
            ->empty());
  auto r = parse_ping_replies(
      "From fe80::9%tb1 icmp_seq=1 Destination unreachable: Address unreachable\n"
      "64 bytes from not-an-address: icmp_seq=1 ttl=64 time=0.1 ms\n"
      "64 bytes from 10.0.0.1: icmp_seq=1 ttl=64 time=0.1 ms\n"  // not IPv6
      "64 bytes from : icmp_seq=1\n"
      "64 bytes from\n"
      "bytes from fe80::5%tb1: icmp_seq=1\n"              // no byte count
      "x64 bytes from fe80::6%tb1: icmp_seq=1\n"          // not a reply line
      "64 bytes from name (fe80::7%tb1\n"                 // unclosed parenthesis
      "64 bytes from fe80::8%tb1%x: icmp_seq=1 ttl=64\n"  // scope cut at the first %
      "   64 bytes from fe80::3%tb1: icmp_seq=1 ttl=64 time=0.1 ms   \n");
  REQUIRE(r.ok());
  CHECK(*r == Addresses{"fe80::8", "fe80::3"});
}
