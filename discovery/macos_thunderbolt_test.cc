#include "discovery/macos_thunderbolt.h"

#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "discovery/test_fixtures.h"

using namespace cc::discovery;
using cc::discovery::testing::fixture;
using nlohmann::json;

namespace {
const char* kA = "macos/pair-a.system_profiler-SPThunderboltDataType.json";
const char* kB = "macos/pair-b.system_profiler-SPThunderboltDataType.json";
const char* kUuidA1 = "00000004-0000-4000-8000-000000000004";  // a's bus 1 (receptacle 2)
const char* kUuidB1 = "00000003-0000-4000-8000-000000000003";  // b's bus 1 (receptacle 2)

std::vector<ThunderboltBus> parse_ok(const std::string& text) {
  auto r = parse_system_profiler_thunderbolt(text);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  return *r;
}
}  // namespace

TEST_CASE("system_profiler: pair-a, receptacle 2 cabled to b at 80 Gb/s, b has RDMA on") {
  auto buses = parse_ok(fixture(kA));
  REQUIRE(buses.size() == 3);
  // Sorted by receptacle: bus 0 = receptacle 1, bus 1 = receptacle 2, bus 2 = receptacle 3.
  CHECK(buses[0].bus == "thunderboltusb4_bus_0");
  CHECK(buses[0].receptacle == 1);
  CHECK(buses[0].speed_label == "Up to 120 Gb/s");
  CHECK(buses[0].link_speed_gbps == 0);  // idle label, no link
  CHECK(buses[0].max_speed_gbps == 120);
  CHECK_FALSE(buses[0].connected);
  CHECK(buses[0].peers.empty());
  CHECK(buses[0].generation == 0);

  const ThunderboltBus& b1 = buses[1];
  CHECK(b1.bus == "thunderboltusb4_bus_1");
  CHECK(b1.receptacle == 2);
  CHECK(b1.domain_uuid == kUuidA1);
  CHECK(b1.link_speed_gbps == 80);
  CHECK(b1.generation == 5);
  CHECK(b1.connected);
  const Peer* peer = direct_host_peer(b1);
  REQUIRE(peer != nullptr);
  CHECK(peer->domain_uuid == kUuidB1);  // b's bus 1
  CHECK(peer->name == "MacBook Pro");
  CHECK(peer->model == "Mac17,6");
  CHECK(peer->vendor == "Apple Inc.");
  CHECK(peer->rdma_enabled);  // b advertises protocol_id_key 64087

  const ThunderboltBus& b2 = buses[2];
  CHECK(b2.receptacle == 3);
  CHECK(b2.link_speed_gbps == 80);
  CHECK(b2.generation == 5);  // USB4 v2 dock
  REQUIRE(b2.peers.size() == 1);
  CHECK(b2.peers[0].kind == Peer::Kind::kDevice);  // the Sabrent dock has no domain UUID
  CHECK(b2.peers[0].name == "SB-XTM5");
  CHECK(b2.peers[0].vendor == "Sabrent");
  CHECK_FALSE(b2.peers[0].domain_uuid);
  CHECK(direct_host_peer(b2) == nullptr);
}

TEST_CASE("system_profiler: pair-b, reciprocal UUIDs, a without RDMA, a 40 Gb/s TB3 dock") {
  auto buses = parse_ok(fixture(kB));
  REQUIRE(buses.size() == 3);
  CHECK(buses[1].receptacle == 2);
  CHECK(buses[1].domain_uuid == kUuidB1);
  const Peer* peer = direct_host_peer(buses[1]);
  REQUIRE(peer != nullptr);
  CHECK(peer->domain_uuid == kUuidA1);  // the two bus-1 UUIDs are reciprocal
  CHECK_FALSE(peer->rdma_enabled);      // a offers only service_ip

  CHECK(buses[2].receptacle == 3);
  CHECK(buses[2].speed_label == "40 Gb/s");
  CHECK(buses[2].link_speed_gbps == 40);
  CHECK(buses[2].generation == 3);  // mode_key thunderbolt_three
  REQUIRE(buses[2].peers.size() == 1);
  CHECK(buses[2].peers[0].name == "TBU405Pro");
  CHECK(buses[2].peers[0].kind == Peer::Kind::kDevice);
}

TEST_CASE("system_profiler: a 40 Gb/s link to another Mac is generation 4, no RDMA possible") {
  json j = json::parse(fixture(kA));
  j["SPThunderboltDataType"][1]["receptacle_1_tag"]["current_speed_key"] = "40 Gb/s";
  auto buses = parse_ok(j.dump());
  CHECK(buses[1].link_speed_gbps == 40);
  CHECK(buses[1].generation == 4);
  CHECK(direct_host_peer(buses[1]) != nullptr);
}

TEST_CASE("system_profiler: a Mac behind a hub is one _items level deeper, not direct") {
  json j = json::parse(fixture(kA));
  json& dock = j["SPThunderboltDataType"][0]["_items"][0];  // a's dock on bus 2
  dock["_items"] = json::array({json{{"_name", "Mac Studio"},
                                     {"device_name_key", "Mac16,9"},
                                     {"domain_uuid_key", "0000000a-0000-4000-8000-00000000000a"},
                                     {"_items", json::array({json{{"_name", "SSD"}}})}}});
  auto buses = parse_ok(j.dump());
  const ThunderboltBus& b = buses[2];
  REQUIRE(b.peers.size() == 3);
  CHECK(b.peers[0].name == "SB-XTM5");
  CHECK(b.peers[0].depth == 1);
  CHECK(b.peers[1].name == "Mac Studio");
  CHECK(b.peers[1].kind == Peer::Kind::kHost);
  CHECK(b.peers[1].depth == 2);
  CHECK(b.peers[2].depth == 3);
  CHECK(direct_host_peer(b) == nullptr);  // hub-mediated: never a direct cable
}

TEST_CASE("system_profiler: missing and mistyped keys leave fields empty") {
  json j = json::parse(fixture(kB));
  auto& arr = j["SPThunderboltDataType"];
  arr[0].erase("receptacle_1_tag");
  arr[1].erase("domain_uuid_key");
  arr[1]["_items"][0].erase("services_title");
  arr[2]["receptacle_1_tag"]["receptacle_id_key"] = 7;       // a number, not a string
  arr[2]["receptacle_1_tag"]["current_speed_key"] = "fast";  // unreadable
  arr[2]["_items"] = "not an array";
  arr.push_back(json::object());
  auto buses = parse_ok(j.dump());
  REQUIRE(buses.size() == 4);
  CHECK(buses[0].receptacle == 2);
  CHECK(buses[0].domain_uuid.empty());
  const Peer* p0 = direct_host_peer(buses[0]);
  REQUIRE(p0 != nullptr);
  CHECK_FALSE(p0->rdma_enabled);
  CHECK(buses[1].receptacle == 7);
  CHECK(buses[1].link_speed_gbps == 0);
  CHECK(buses[1].speed_label == "fast");
  CHECK(buses[1].peers.empty());
  CHECK_FALSE(buses[2].receptacle);  // buses without a receptacle come last
  CHECK_FALSE(buses[3].receptacle);
  CHECK(buses[3].bus.empty());
}

TEST_CASE("system_profiler: empty, malformed and unexpected outputs are errors naming it") {
  for (const std::string text :
       {"", "   \n", "{\"SPThunderboltDataType\": [", "[]", "{}", "{\"SPThunderboltDataType\": {}}",
        "{\"SPThunderboltDataType\": [1]}"}) {
    CAPTURE(text);
    auto r = parse_system_profiler_thunderbolt(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("`system_profiler SPThunderboltDataType -json` output: ") == 0);
  }
  auto no_tb = parse_system_profiler_thunderbolt("{\"SPThunderboltDataType\": []}");
  REQUIRE(no_tb.ok());  // a Mac without Thunderbolt buses
  CHECK(no_tb->empty());
}

TEST_CASE("system_profiler: speed labels") {
  int max = 0;
  CHECK(parse_thunderbolt_speed("80 Gb/s", &max) == 80);
  CHECK(max == 80);
  CHECK(parse_thunderbolt_speed("Up to 120 Gb/s", &max) == 0);
  CHECK(max == 120);
  CHECK(parse_thunderbolt_speed("Up to 40 Gb/s", &max) == 0);
  CHECK(max == 40);
  CHECK(parse_thunderbolt_speed("40.0 Gb/s") == 40);
  CHECK_FALSE(parse_thunderbolt_speed("80 Gb/s extra"));
  CHECK_FALSE(parse_thunderbolt_speed("Gb/s"));
  CHECK_FALSE(parse_thunderbolt_speed("-1 Gb/s"));
  CHECK_FALSE(parse_thunderbolt_speed(""));
}
