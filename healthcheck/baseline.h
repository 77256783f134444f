// Saved figures (`clusterctl health --save-baseline`) that later runs compare against, and the
// judging of measured figures against thresholds.yaml and the baseline.
//
// Baseline JSON (schema "clusterctl.health-baseline/1"), written atomically:
//   {"schema": "clusterctl.health-baseline/1", "created_at": "2026-11-30T18:00:00Z",
//    "cables": {"h1:tb1-h2:tb1": {"latency_p99_us": 41.5, "bandwidth_gbps": 12.3}},
//    "all_reduce": {"busbw_gbps": 9.1, "size_bytes": 16777216}}     // or null
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "discovery/fix_command.h"
#include "healthcheck/check.h"
#include "healthcheck/link_test.h"
#include "healthcheck/thresholds.h"
#include "util/result.h"

namespace cc::healthcheck {

inline constexpr const char* kBaselineSchema = "clusterctl.health-baseline/1";

struct BaselineLink {
  double latency_p99_us = 0;
  double bandwidth_gbps = 0;
};

struct Baseline {
  std::string created_at;
  std::map<std::string, BaselineLink> cables;  // by cable_label
  std::optional<double> busbw_gbps;
  std::int64_t all_reduce_size_bytes = 0;
};

/// The figures of a report's latency, bandwidth and busbw results (CheckResult::value).
Baseline baseline_from(const Report& r, const std::string& created_at,
                       std::int64_t all_reduce_size_bytes);
std::string baseline_json(const Baseline& b);
/// Errors (kUsage): unreadable file, invalid JSON, another schema; naming the file. A file of
/// another schema says to make one with `save_command`, the health run that writes it there
/// (cli/ gives it the cluster, the --lab in use and --baseline).
util::Result<Baseline> load_baseline(
    const std::string& path,
    std::string_view save_command = "clusterctl health --save-baseline");
util::Status save_baseline(const Baseline& b, const std::string& path);

/// What `health --save-baseline --baseline FILE` replaces without --force
/// (util::check_output_path): a baseline, known by its "schema", kBaselineSchema.
util::OwnOutput baseline_output();

/// The link checks of one cable: "latency" (p99 one way, us) and "bandwidth" (Gb/s, absolute
/// and, when `base` has the cable, as a percentage of it: "cable h1:tb2-h3:tb1 bandwidth 41%
/// below baseline (5.9 Gb/s, baseline 10.0 Gb/s)").
std::vector<CheckResult> judge_link(const std::string& label, const LinkFigures& f,
                                    const Thresholds& t, const Baseline* base,
                                    const discovery::FixCommand& fix = {});
/// The all_reduce checks: "all-reduce-data" (wrong elements: FAIL above 0) and
/// "all-reduce-busbw" (absolute and against the baseline). The fixes' commands name the
/// cluster as `fix` says (both judges).
std::vector<CheckResult> judge_all_reduce(const AllReduceFigures& f, int hosts, const Thresholds& t,
                                          const Baseline* base,
                                          const discovery::FixCommand& fix = {});

}  // namespace cc::healthcheck
