#include "discovery/macos_system.h"

#include <string>

#include <doctest/doctest.h>

using namespace cc::discovery;

TEST_CASE("rdma_ctl status: enabled or disabled") {
  CHECK(*parse_rdma_ctl_status("enabled\n") == RdmaState::kEnabled);
  CHECK(*parse_rdma_ctl_status("  Disabled \n") == RdmaState::kDisabled);
  for (const std::string text : {"", "\n", "maybe\n", "enabled disabled"}) {
    CAPTURE(text);
    auto r = parse_rdma_ctl_status(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("`rdma_ctl status` output: ") == 0);
  }
}

TEST_CASE("sw_vers: current and older releases") {
  auto os =
      parse_sw_vers("ProductName:\t\tmacOS\nProductVersion:\t\t26.2\nBuildVersion:\t\t25C56\n");
  REQUIRE(os.ok());
  CHECK(os->name == "macOS");
  CHECK(os->version == "26.2");
  CHECK(os->build == "25C56");
  auto old = parse_sw_vers("ProductName:\tMac OS X\nProductVersion:\t10.15.7\n");
  REQUIRE(old.ok());
  CHECK(old->name == "Mac OS X");
  CHECK(old->build.empty());
  for (const std::string text : {"", "ProductName: macOS\n", "garbage"}) {
    CAPTURE(text);
    auto r = parse_sw_vers(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("`sw_vers` output: ") == 0);
  }
}

TEST_CASE("sysctl: model, memory in bytes, optional CPU") {
  auto hw = parse_sysctl_hw("Mac16,9\n274877906944\nApple M3 Ultra\n");
  REQUIRE(hw.ok());
  CHECK(hw->model == "Mac16,9");
  CHECK(hw->memory_bytes == 274877906944ULL);
  CHECK(hw->cpu == "Apple M3 Ultra");
  auto two = parse_sysctl_hw("Mac17,6\n137438953472\n");
  REQUIRE(two.ok());
  CHECK(two->cpu.empty());
  for (const std::string text :
       {"", "Mac16,9\n", "Mac16,9\n-5\n", "Mac16,9\n0\n", "Mac16,9\n99999999999999999999999\n"}) {
    CAPTURE(text);
    auto r = parse_sysctl_hw(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("`sysctl -n hw.model hw.memsize") == 0);
  }
}
