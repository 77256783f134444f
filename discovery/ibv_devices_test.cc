#include "discovery/ibv_devices.h"

#include <string>

#include <doctest/doctest.h>

#include "discovery/test_fixtures.h"

using namespace cc::discovery;
using cc::discovery::testing::fixture;

namespace {
std::vector<std::string> names(const std::vector<IbvDevice>& v) {
  std::vector<std::string> out;
  for (const auto& d : v) out.push_back(d.name);
  return out;
}
}  // namespace

TEST_CASE("ibv_devices: RDMA disabled prints the header only") {
  auto r = parse_ibv_devices(fixture("macos/pair-a.ibv_devices.txt"));
  REQUIRE(r.ok());
  CHECK(r->empty());
}

TEST_CASE("ibv_devices: pair-b, one rdma_enX per Thunderbolt port, natural order") {
  auto r = parse_ibv_devices(fixture("macos/pair-b.ibv_devices.txt"));
  REQUIRE(r.ok());
  CHECK(names(*r) == std::vector<std::string>{"rdma_en1", "rdma_en2", "rdma_en6"});
  CHECK((*r)[2].node_guid == "0000000000000002");
}

TEST_CASE("ibv_devices: M3 Ultra, tab-separated and unsorted, after a prompt line") {
  auto r = parse_ibv_devices(fixture("macos/ibv_devices-m3-ultra.txt"));
  REQUIRE(r.ok());
  CHECK(names(*r) == std::vector<std::string>{"rdma_en2", "rdma_en3", "rdma_en4", "rdma_en5",
                                              "rdma_en6", "rdma_en7"});
  CHECK((*r)[3].node_guid == "8396a9d9edbaac05");  // rdma_en5
}

TEST_CASE("ibv_devices: rdma-core layouts with a type column, en10 and above") {
  auto r = parse_ibv_devices(fixture("linux/ibv_devices.txt"));  // two tables
  REQUIRE(r.ok());
  CHECK(names(*r) == std::vector<std::string>{"mlx4_0", "mlx4_0", "mlx4_1", "mlx4_2"});
  auto ten = parse_ibv_devices(
      "    device          \t   node GUID\n    ------          \t----------------\n"
      "    rdma_en10\t0a\n    rdma_en9\t09\n    rdma_en11\t0b\n");
  REQUIRE(ten.ok());
  CHECK(names(*ten) == std::vector<std::string>{"rdma_en9", "rdma_en10", "rdma_en11"});
}

TEST_CASE("ibv_devices: empty output, no header, a row without GUID are errors") {
  for (const std::string text : {"", "\n", "zsh: command not found: ibv_devices\n",
                                 "device node GUID\n------ ----\nrdma_en2\n"}) {
    CAPTURE(text);
    auto r = parse_ibv_devices(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("`ibv_devices` output: ") == 0);
  }
}
