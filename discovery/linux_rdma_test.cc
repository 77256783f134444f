#include "discovery/linux_rdma.h"

#include <string>

#include <doctest/doctest.h>

#include "discovery/test_fixtures.h"

using namespace cc::discovery;
using cc::discovery::testing::fixture;

TEST_CASE("rdma -j link: ConnectX host (JSON form of rdma-link-show.txt)") {
  auto r = parse_rdma_link(fixture("linux/rdma-j-link.json"), "", 0);
  REQUIRE(r.ok());
  CHECK(r->subsystem);
  REQUIRE(r->devices.size() == 2);
  CHECK(r->devices[0].name == "mlx5_0");
  CHECK(r->devices[0].netdev == "p1p1");
  REQUIRE(r->devices[0].ports.size() == 1);
  CHECK(r->devices[0].ports[0].port == 1);
  CHECK(r->devices[0].ports[0].state == "ACTIVE");
  CHECK(r->devices[0].ports[0].active);
  CHECK(r->devices[1].netdev == "p1p2");
}

TEST_CASE("rdma -j link: no RDMA subsystem is a fact, not a failure") {
  // The recorded stderr of `rdma -j link show` on a kernel without RDMA (exit status 1).
  std::string rec = fixture("linux/rdma-no-rdma-subsystem.txt");
  CHECK(is_no_rdma_subsystem(rec));
  auto r = parse_rdma_link("", "Failed to open NETLINK_RDMA socket\n", 1);
  REQUIRE(r.ok());
  CHECK_FALSE(r->subsystem);
  CHECK(r->devices.empty());
}

TEST_CASE("rdma -j link: Soft-RoCE, multi-port devices merged, natural order") {
  auto r = parse_rdma_link(
      R"([{"ifname":"rxe_10","port":1,"state":"ACTIVE","netdev":"tb10"},
          {"ifname":"mlx5_0","port":1,"state":"DOWN","netdev":"p1p1"},
          {"ifname":"mlx5_0","port":2,"state":"ACTIVE","netdev":"p1p2"},
          {"ifname":"rxe_2","port":1,"state":"ACTIVE","netdev":"tb2"}])",
      "", 0);
  REQUIRE(r.ok());
  REQUIRE(r->devices.size() == 3);
  CHECK(r->devices[0].name == "mlx5_0");
  REQUIRE(r->devices[0].ports.size() == 2);
  CHECK_FALSE(r->devices[0].ports[0].active);
  CHECK(r->devices[0].ports[1].port == 2);
  CHECK(r->devices[1].name == "rxe_2");
  CHECK(r->devices[2].name == "rxe_10");
  auto empty = parse_rdma_link("", "", 0);
  REQUIRE(empty.ok());
  CHECK(empty->devices.empty());
  CHECK(parse_rdma_link("[]", "", 0)->devices.empty());
}

TEST_CASE("rdma -j link: other failures and bad JSON are errors naming the command") {
  auto failed = parse_rdma_link("", "Permission denied\n", 2);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().message == "`rdma -j link` output: exit status 2: \"Permission denied\"");
  for (const std::string text : {"[", "{}", "[{\"port\": 1}]", "[1]"}) {
    CAPTURE(text);
    auto r = parse_rdma_link(text, "", 0);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("`rdma -j link` output: ") == 0);
  }
}
