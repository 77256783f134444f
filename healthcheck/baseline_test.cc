#include "healthcheck/baseline.h"

#include <filesystem>

#include <doctest/doctest.h>

#include "util/atomic_file.h"

namespace cc::healthcheck {
namespace {

const CheckResult& of(const std::vector<CheckResult>& v, const std::string& check) {
  for (const auto& c : v) {
    if (c.check == check) return c;
  }
  throw std::out_of_range(check);
}

TEST_CASE("baseline: link figures against absolute limits") {
  Thresholds t;
  t.bandwidth_gbps = {20, 10};
  t.latency_p99_us = {500, 2000};
  auto ok = judge_link("h1:tb1-h2:tb1", {30, 60, 25.0, 0}, t, nullptr);
  CHECK(of(ok, "latency").status == Status::kPass);
  CHECK(of(ok, "bandwidth").status == Status::kPass);
  CHECK(of(ok, "data").status == Status::kPass);
  auto slow = judge_link("h1:tb1-h2:tb1", {30, 900, 12.0, 2}, t, nullptr);
  CHECK(of(slow, "latency").status == Status::kWarn);
  CHECK(of(slow, "bandwidth").status == Status::kWarn);
  CHECK(of(slow, "bandwidth").detail == "cable h1:tb1-h2:tb1 bandwidth 12.00 Gb/s is below 20 Gb/s");
  CHECK(of(slow, "data").status == Status::kFail);
  CHECK(of(judge_link("x", {30, 3000, 5.0, 0}, t, nullptr), "latency").status == Status::kFail);
  CHECK(of(judge_link("x", {30, 3000, 5.0, 0}, t, nullptr), "bandwidth").status == Status::kFail);
}

TEST_CASE("baseline: a cable well below its baseline FAILs and says by how much") {
  Thresholds t;
  t.bandwidth_gbps = {2, 1};
  t.bandwidth_baseline_percent = {90, 70};
  Baseline b;
  b.cables["h1:tb2-h3:tb1"] = {40.0, 10.0};
  auto r = judge_link("h1:tb2-h3:tb1", {20, 45, 5.9, 0}, t, &b);
  const auto& bw = of(r, "bandwidth");
  CHECK(bw.status == Status::kFail);
  CHECK(bw.detail ==
        "cable h1:tb2-h3:tb1 bandwidth 41% below baseline (5.90 Gb/s, baseline 10.00 Gb/s)");
  CHECK(of(judge_link("h1:tb2-h3:tb1", {20, 45, 8.5, 0}, t, &b), "bandwidth").status ==
        Status::kWarn);
  CHECK(of(judge_link("h1:tb2-h3:tb1", {20, 45, 9.5, 0}, t, &b), "bandwidth").status ==
        Status::kPass);
  // A cable the baseline does not know is judged by the absolute limit only.
  CHECK(of(judge_link("h1:tb1-h2:tb1", {20, 45, 5.9, 0}, t, &b), "bandwidth").status ==
        Status::kPass);
}

TEST_CASE("baseline: saved from a report, read back, compared for the all_reduce") {
  Report rep;
  rep.add({Scope::kCable, "h1:tb1-h2:tb1", "latency", Status::kPass, "", "", "", "", 42.0, "us"});
  rep.add({Scope::kCable, "h1:tb1-h2:tb1", "bandwidth", Status::kPass, "", "", "", "", 11.0, "Gb/s"});
  rep.add({Scope::kCluster, "cluster", "all-reduce-busbw", Status::kPass, "", "", "", "", 8.0,
           "Gb/s"});
  const Baseline b = baseline_from(rep, "2026-11-30T18:00:00Z", 1 << 20);
  const auto dir = std::filesystem::temp_directory_path() / "cc-health-baseline-test";
  std::filesystem::remove_all(dir);
  const std::string path = (dir / "baseline.json").string();
  REQUIRE(save_baseline(b, path).ok());
  auto back = load_baseline(path);
  REQUIRE_MESSAGE(back.ok(), (back.ok() ? "" : back.error().message));
  CHECK(back->cables.at("h1:tb1-h2:tb1").latency_p99_us == 42.0);
  CHECK(back->cables.at("h1:tb1-h2:tb1").bandwidth_gbps == 11.0);
  CHECK(back->busbw_gbps == 8.0);
  CHECK(back->all_reduce_size_bytes == 1 << 20);
  Thresholds t;
  t.busbw_gbps = {1, 0.5};
  auto ar = judge_all_reduce({4.0, 100, 0, 1}, 4, t, &*back);
  CHECK(of(ar, "all-reduce-busbw").status == Status::kFail);
  CHECK(of(ar, "all-reduce-busbw").detail ==
        "cluster all_reduce busbw 50% below baseline (4.00 Gb/s, baseline 8.00 Gb/s)");
  CHECK(of(ar, "all-reduce-data").status == Status::kPass);
  // Not a baseline: named, with what to do.
  REQUIRE(util::write_file_atomic(dir / "other.json", "{\"schema\": \"x\"}").ok());
  auto bad = load_baseline((dir / "other.json").string());
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("other.json: not a health baseline") != std::string::npos);
  // The run that makes one is the caller's, runnable as printed (cli/: cluster, lab, path).
  auto named = load_baseline((dir / "other.json").string(),
                             "clusterctl health --lab t3a 'my c.json' --save-baseline");
  REQUIRE_FALSE(named.ok());
  CHECK(named.error().message.ends_with(
      "make one with `clusterctl health --lab t3a 'my c.json' --save-baseline`"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("baseline_output: a baseline is replaced without --force, other JSON is not") {
  const auto own = baseline_output();
  CHECK(own.is_one(R"({"schema": "clusterctl.health-baseline/1", "cables": {}})"));
  CHECK_FALSE(own.is_one(R"({"schema": "clusterctl.cluster/1"})"));
  CHECK_FALSE(own.is_one("name: job\n"));
}

}  // namespace
}  // namespace cc::healthcheck
