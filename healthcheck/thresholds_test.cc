#include "healthcheck/thresholds.h"

#include <doctest/doctest.h>

namespace cc::healthcheck {
namespace {

std::string error_of(const std::string& yaml) {
  auto t = parse_thresholds(yaml, "t.yaml");
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().code == util::ExitCode::kUsage);
  return t.error().message;
}

TEST_CASE("thresholds: an empty file gives the defaults") {
  auto t = parse_thresholds("", "t.yaml");
  REQUIRE(t.ok());
  CHECK(t->clock_skew_max_s == 1.0);
  CHECK(t->macos_min_version == "26.2");
  CHECK(t->bandwidth_gbps.fail == 10);
  CHECK(t->latency_p99_us.warn == 500);
}

TEST_CASE("thresholds: the shipped template holds exactly the built-in defaults") {
  auto t = load_thresholds(std::string(CLUSTERCTL_TEMPLATES) + "/health-thresholds.yaml");
  REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.error().message));
  const Thresholds d;
  CHECK(t->clock_skew_max_s == d.clock_skew_max_s);
  CHECK(t->free_memory_min_gib == d.free_memory_min_gib);
  CHECK(t->free_disk_min_gib == d.free_disk_min_gib);
  CHECK(t->macos_min_version == d.macos_min_version);
  CHECK(t->rdma_required == d.rdma_required);
  CHECK(t->link_min_speed_gbps == d.link_min_speed_gbps);
  CHECK(t->latency_p99_us.warn == d.latency_p99_us.warn);
  CHECK(t->latency_p99_us.fail == d.latency_p99_us.fail);
  CHECK(t->bandwidth_gbps.warn == d.bandwidth_gbps.warn);
  CHECK(t->bandwidth_gbps.fail == d.bandwidth_gbps.fail);
  CHECK(t->bandwidth_baseline_percent.fail == d.bandwidth_baseline_percent.fail);
  CHECK(t->all_reduce_size_bytes == d.all_reduce_size_bytes);
  CHECK(t->busbw_gbps.fail == d.busbw_gbps.fail);
  CHECK(t->busbw_baseline_percent.warn == d.busbw_baseline_percent.warn);
}

TEST_CASE("thresholds: the shipped lab template holds exactly lab_thresholds()") {
  auto t = load_thresholds(std::string(CLUSTERCTL_TEMPLATES) + "/health-thresholds-lab.yaml");
  REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.error().message));
  const Thresholds lab = lab_thresholds();
  CHECK(lab.latency_p99_us.fail == 200000);
  CHECK(t->latency_p99_us.warn == lab.latency_p99_us.warn);
  CHECK(t->latency_p99_us.fail == lab.latency_p99_us.fail);
  CHECK(t->bandwidth_gbps.warn == lab.bandwidth_gbps.warn);
  CHECK(t->bandwidth_gbps.fail == lab.bandwidth_gbps.fail);
  CHECK(t->bandwidth_baseline_percent.warn == lab.bandwidth_baseline_percent.warn);
  CHECK(t->bandwidth_baseline_percent.fail == lab.bandwidth_baseline_percent.fail);
  CHECK(t->all_reduce_size_bytes == lab.all_reduce_size_bytes);
  CHECK(t->busbw_gbps.warn == lab.busbw_gbps.warn);
  CHECK(t->busbw_gbps.fail == lab.busbw_gbps.fail);
  CHECK(t->link_min_speed_gbps == lab.link_min_speed_gbps);
}

TEST_CASE("thresholds: values are read") {
  auto t = parse_thresholds(
      "host:\n  clock_skew_max_s: 0.25\n  rdma_required: true\n"
      "link:\n  latency_p99_us: {warn: 50, fail: 80}\n  bandwidth_gbps: {fail: 0.5, warn: 1}\n"
      "all_reduce:\n  size_bytes: 1048576\n",
      "t.yaml");
  REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.error().message));
  CHECK(t->clock_skew_max_s == 0.25);
  CHECK(t->rdma_required);
  CHECK(t->latency_p99_us.warn == 50);
  CHECK(t->latency_p99_us.fail == 80);
  CHECK(t->bandwidth_gbps.fail == 0.5);
  CHECK(t->all_reduce_size_bytes == 1048576);
}

TEST_CASE("thresholds: errors name file:line:column") {
  CHECK(error_of("link:\n  bandwith_gbps: {warn: 5, fail: 1}\n") ==
        "t.yaml:2:3: unknown key 'bandwith_gbps' in 'link' (did you mean 'bandwidth_gbps'?)");
  CHECK(error_of("link:\n  speed: 1\n") ==
        "t.yaml:2:3: unknown key 'speed' in 'link'; known keys: min_speed_gbps, latency_p99_us, "
        "bandwidth_gbps, bandwidth_baseline_percent");
  CHECK(error_of("host:\n  clock_skew_max_s: soon\n") ==
        "t.yaml:2:21: 'host.clock_skew_max_s': expected a number, got 'soon'");
  CHECK(error_of("host:\n  rdma_required: maybe\n") ==
        "t.yaml:2:18: 'host.rdma_required': expected true or false, got 'maybe'");
  CHECK(error_of("link:\n  latency_p99_us: {warn: 900, fail: 100}\n") ==
        "t.yaml:2:19: 'link.latency_p99_us': warn (900) must be lower than fail (100)");
  CHECK(error_of("link:\n  bandwidth_gbps: {warn: 1, fail: 5}\n") ==
        "t.yaml:2:19: 'link.bandwidth_gbps': warn (1) must be higher than fail (5)");
  CHECK(error_of("host:\n  free_disk_min_gib: -3\n") ==
        "t.yaml:2:22: 'host.free_disk_min_gib': -3 is out of range (0 to 1048576)");
  const std::string syntax = error_of("link: {latency_p99_us: [1, 2}\n");
  CHECK(syntax.starts_with("t.yaml:1:"));
  CHECK(error_of("- 1\n- 2\n") ==
        "t.yaml:1:1: the thresholds: expected a mapping (key: value lines), got a list");
  // Every mistake at once, in file order.
  CHECK(error_of("link:\n  min_speed_gbps: fast\nhost:\n  rdma_required: 1\n"
                 "  free_disk_min_gb: 1\n") ==
        "t.yaml:2:19: 'link.min_speed_gbps': expected a whole number from 0 to 1000, got 'fast'\n"
        "t.yaml:4:18: 'host.rdma_required': expected true or false, got '1'\n"
        "t.yaml:5:3: unknown key 'free_disk_min_gb' in 'host' (did you mean 'free_disk_min_gib'?)");
}

}  // namespace
}  // namespace cc::healthcheck
